"""Facets: the keys a study does not compare across, split out instead of pooled.

A study table's configuration keys are read off the data (:func:`~kernbench.report.
tables.varying_config`), so a sweep may hold keys the study does not know: the address
model (``address=pa,va,la``), or ``workload.outstanding`` swept by hand. Pooled into
the study's claims, rows of different values would decide one verdict together, and
two rows would meet in one heat-map cell. So every varying key the study does not
know is a *facet*: the study's claims are checked, and its plots drawn, once per
combination of facet values (:func:`split`), each naming its combination
(:attr:`Facet.label`: ``LA``, ``outstanding=4``). The study then says whether the
values agree (its own cross-facet claim).

Some keys a reader must always know, even when they do not vary (:data:`NAMED`: the
address model, which ADR-0011 asks about per model): such a key is kept in the table
and named once (:func:`named_once`) when it is constant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from kernbench.report.claims import Claim
from kernbench.report.formatting import format_value, natural_order, short_name

ADDRESS = "address.model"


@dataclass(frozen=True)
class Named:
    """How a key a reader must always know is written: its title, a value's name, the
    order its values are named in (others after them, in natural order), and what
    makes its values differ (said where a claim compares them)."""

    title: str
    value: Callable[[object], str]
    order: tuple[str, ...] = ()
    why: str = ""


# Keys kept in a study table and named even when constant. The address models in the
# order ADR-0011 names them; what they differ by (docs/explanation/fabric.md, "One
# descriptor per route").
NAMED: dict[str, Named] = {
    ADDRESS: Named(
        "address model",
        lambda v: str(v).upper(),
        ("pa", "va", "la"),
        "with the same placement the models move the same bytes at the same times; VA"
        " adds topology.pe_mmu.tlb_overhead_ns per access (or page), which shows on short"
        " accesses, and VA and LA install their mappings before the launch",
    )
}


def facet_keys(table: pd.DataFrame, known: tuple[str, ...]) -> list[str]:
    """The config columns (dotted keys) of ``table`` that vary and are not in ``known``
    (the keys the study places itself), in table order."""
    keys = [c for c in table.columns if "." in c and c not in known]
    return [c for c in keys if table[c].nunique(dropna=False) > 1]


def ordered(values: pd.Series) -> list[object]:
    """The distinct values of a column in the order they are named: a :data:`NAMED`
    key's own order first, then natural order (numbers as numbers)."""
    distinct = pd.Series(values.drop_duplicates().tolist(), dtype=object)
    first = [v for v in _named_order(values.name) if v in set(distinct)]
    rest = distinct[~distinct.isin(first)].sort_values(key=natural_order, kind="stable")
    return [*first, *rest]


def _named_order(key: object) -> tuple[str, ...]:
    return NAMED[key].order if key in NAMED else ()


def _ranks(values: pd.Series) -> dict[object, int]:
    """Each distinct value's place in :func:`ordered`."""
    return {v: i for i, v in enumerate(ordered(values))}


def sort_key(column: pd.Series) -> pd.Series:
    """A ``sort_values`` key putting a :data:`NAMED` key's values in their order; any
    other column sorts as it is."""
    return column.map(_ranks(column)) if column.name in NAMED else column


def value_name(key: str, value: object) -> str:
    """One facet value as a reader sees it: a :data:`NAMED` key's name for it (``LA``),
    else ``short=value`` (``outstanding=4``)."""
    if key in NAMED:
        return NAMED[key].value(value)
    return f"{short_name(key)}={format_value(value)}"


def and_list(names: list[str]) -> str:
    """``PA, VA and LA``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


@dataclass(frozen=True)
class Facet:
    """The rows of one combination of facet values, and their names (none: the table
    has no facet, and its claims and plots read as they always did)."""

    names: tuple[str, ...]
    rows: pd.DataFrame

    @property
    def label(self) -> str:
        """``LA``, ``LA, outstanding=4``; empty without facets."""
        return ", ".join(self.names)

    @property
    def slug(self) -> str:
        """The label as a file-name part: ``la``, ``la_outstanding_4``."""
        return re.sub(r"[^a-z0-9]+", "_", self.label.lower()).strip("_")

    def named(self, claim: Claim) -> Claim:
        """``claim`` with the facet's label leading its text, so a verdict read alone
        still says which rows it stands on."""
        if not self.label:
            return claim
        return claim.renamed(f"{self.label}: {claim.text}")


def split(table: pd.DataFrame, keys: list[str]) -> list[Facet]:
    """One :class:`Facet` per combination of ``keys``' values present in ``table``, in
    their named order (the whole table, unnamed, when ``keys`` is empty)."""
    if not keys:
        return [Facet((), table)]
    groups = dict(iter(table.groupby(keys, sort=False, dropna=False)))
    ranks = [_ranks(table[k]) for k in keys]
    combos = sorted(
        groups, key=lambda c: tuple(r.get(v, len(r)) for r, v in zip(ranks, c, strict=True))
    )
    return [
        Facet(tuple(value_name(k, v) for k, v in zip(keys, combo, strict=True)), groups[combo])
        for combo in combos
    ]


def named_once(table: pd.DataFrame) -> list[str]:
    """One line per :data:`NAMED` key of ``table``: its one value (``address model:
    LA, in every row``) or its values, each with claims and plots of its own."""
    lines = []
    for key, named in NAMED.items():
        if key not in table:
            continue
        names = [named.value(v) for v in ordered(table[key])]
        if len(names) == 1:
            lines.append(f"{named.title}: {names[0]}, in every row")
        else:
            lines.append(f"{named.title}: {', '.join(names)}; claims and plots per {named.title}")
    return lines


def constant_names(table: pd.DataFrame) -> list[str]:
    """The names of the :data:`NAMED` keys' values that are the same in every row
    (``["LA"]``): what a plot of the whole table says in its title."""
    return [
        NAMED[k].value(table[k].iloc[0])
        for k in NAMED
        if k in table and len(table) and table[k].nunique(dropna=False) == 1
    ]
