"""Study 1, bandwidth equivalence (DESIGN §5, ADR-0011): its table, claims and plots.

Data path: a sweep's stream rows under both channel mappings -> :func:`table` (one row
per configuration: n:1 and 1:1 per-PE bandwidth side by side, their ratio, whether the
access is aligned to N·g, the busiest link under each mapping and, when the rows have
it, the lower of the two mappings' ``bw_fairness``) -> :func:`check` (ADR-0011's claim
on uncontended aligned accesses, then per traffic pattern whether the mappings agree
for aligned and for misaligned accesses, by how much at worst, where, and the
bottleneck link) -> :func:`plot` (PNG files).

The fabric model (``sim.fabric``) is an axis of the study: ``fair`` (links shared
max-min fairly between PEs, the default) is the product's answer; ``reservation``
(every link of a path booked from one start, first come first served) shows how much
of a 1:1/n:1 difference the booking order adds. A configuration pairs n:1 with 1:1
within one model, never across. When the table holds both models the claims above are
judged on the ``fair`` rows, and one more claim per pattern says how far the
reservation model moves 1:1/n:1; the plots draw the ``fair`` rows. Rows written before
the column existed came from the reservation model: a missing value reads
``reservation`` (a table without the column keeps none and reports as it did).

Any other key that varies is a facet (:mod:`~kernbench.report.facets`): the address
model (``address=pa,va,la``; ADR-0011 asks its question of each), or a key swept by
hand (``workload.outstanding``). The claims above are checked per facet value, each
naming it (``LA: ADR-0011: local aligned accesses: ...``), and the plots drawn per
value (``bw_equivalence_ratio_la.png``); then one claim per facet key says whether its
values agree on 1:1/n:1 within the tolerance, with the worst case and every
configuration where they part. One address model is named once, above the claims and
in the plots' titles. The heat map places the PE count, N, pattern and access size; a
key it cannot place (the alignment offset, the granule) gets a plot of its own per
value too.

Claims count *distinct* configurations: rows that differ only in a key that changes
no figure (e.g. 4 or 8 PEs each reading its own N = 8 channels) are one configuration.
A claim with no row to test is NOT TESTED, never DOES NOT HOLD.
"""

from __future__ import annotations

import itertools
import textwrap
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from kernbench.config.unread import SEED  # noqa: E402
from kernbench.errors import KernBenchError  # noqa: E402
from kernbench.report import rerun  # noqa: E402
from kernbench.report.claims import Claim, judged  # noqa: E402
from kernbench.report.facets import (  # noqa: E402
    NAMED,
    and_list,
    constant_names,
    facet_keys,
    named_once,
    ordered,
    sort_key,
    split,
    value_name,
)
from kernbench.report.formatting import format_value  # noqa: E402
from kernbench.report.plots import grid_of, save_figure, wrapped  # noqa: E402
from kernbench.report.tables import (  # noqa: E402
    ACCESS,
    ALIGN,
    CHANNELS_PER_PE,
    GRANULE,
    MAPPING,
    WORKLOAD,
    speed_sweep,
    varying_config,
)
from kernbench.results import STATUS_OK  # noqa: E402

PATTERN = "workload.pattern"
ACTIVE = "workload.active_pes"
PES = "topology.pes_per_cube"
# The mappings agree when their per-PE bandwidths differ by at most this.
BW_EQUAL_TOL = 0.01
N1, ONE = "bw_n_to_one_gbs", "bw_one_to_one_gbs"
RATIO = "ratio_1to1_n1"
# Over a configuration's seeds (the uniform patterns): the lowest and highest 1:1/n:1
# and how many seeds; RATIO is then the mean of the seeds' ratios.
RATIO_LO, RATIO_HI, SEEDS = "ratio_lo", "ratio_hi", "seeds"
BOTTLENECK = "bottleneck"
PSEUDO = "topology.cube.memory_map.hbm_pseudo_channels"
FABRIC = "sim.fabric"
OP = "workload.op"  # folded into the pattern in the table: "neighbor copy"
FAIR, RESERVATION = "fair", "reservation"
# Jain's index of the active PEs' bandwidths in a row (1.0: every PE served alike);
# the table keeps the lower of the two mappings' per configuration.
FAIRNESS = "bw_fairness"
FAIRNESS_MIN = "bw_fairness_min"
# Where a configuration is, in the order the table is sorted and claims name it.
LOCATION = (PES, CHANNELS_PER_PE, PATTERN, ACTIVE, ACCESS, ALIGN)
# The keys the claims understand; any other key that varies is a facet.
KNOWN = (MAPPING, *LOCATION, PSEUDO, GRANULE, OP, FABRIC, SEED)
# The keys the plots place (a panel or marker, a heat-map row or column, the fair rows
# of two fabric models); any other key that varies gets its own plots per value.
PLACED = (MAPPING, PES, CHANNELS_PER_PE, PSEUDO, PATTERN, ACTIVE, ACCESS, OP, FABRIC)


def table(df: pd.DataFrame) -> pd.DataFrame | None:
    """n:1 and 1:1 per-PE bandwidth per configuration, their ratio, the access class
    (``aligned``: size and offset multiples of N·g; ``< stripe``; ``misaligned``), the
    busiest link as a link class (:func:`link_class`; ``n:1 | 1:1`` where they differ)
    and, when the rows carry it, ``bw_fairness_min``. ``sim.fabric`` is a key like any
    other swept one, so n:1 pairs with 1:1 within one fabric model; rows are sorted by
    it last, putting a configuration's two models side by side. A :data:`~kernbench.
    report.facets.NAMED` key (the address model) is kept even when constant, so the
    report can name it. None unless the table holds stream rows under both mappings."""
    if WORKLOAD not in df or MAPPING not in df or speed_sweep(df):
        return None
    ok = df[(df["status"] == STATUS_OK) & (df[WORKLOAD] == "stream")].copy()
    if ok.empty or set(ok[MAPPING]) != {"n_to_one", "one_to_one"}:
        return None
    for col, default in ((PATTERN, "local"), (ACTIVE, "all"), ("busiest_link", "")):
        ok[col] = ok[col].astype(str) if col in ok else default  # older rows: no patterns
    if FABRIC in ok:  # rows from before the column: the reservation model made them
        ok[FABRIC] = ok[FABRIC].fillna(RESERVATION).astype(str)
    as_run = ok.copy()
    if OP in ok:  # a copy or write is a case of its own: "neighbor copy" (reads: "neighbor")
        op = ok[OP].astype(str)
        ok[PATTERN] = ok[PATTERN].where(op == "read", ok[PATTERN] + " " + op)
    keys = varying_config(ok, exclude=(MAPPING,)) or [ACCESS]
    keys += [k for k in NAMED if k in ok and k not in keys]
    out = _with_fairness(_classify(_paired(ok, keys)), ok, keys)
    if SEED in keys:  # each seed paired within itself, then one row per configuration
        keys = [k for k in keys if k != SEED] or [ACCESS]
        out = _over_seeds(out, keys)
    # pseudo-channels = PEs x N; the op is in the pattern
    hidden = (PATTERN, ACTIVE, CHANNELS_PER_PE, PSEUDO, OP)
    shown = [k for k in keys if k not in hidden]
    spread = [RATIO_LO, RATIO_HI, SEEDS] if SEEDS in out else []
    cols = [*shown, CHANNELS_PER_PE, PATTERN, ACTIVE, "access_class", N1, ONE, RATIO, *spread]
    cols.append(BOTTLENECK)
    cols += [FAIRNESS_MIN] if FAIRNESS_MIN in out else []
    # the fabric model last, so a configuration's two models sit side by side
    others = [k for k in shown if k not in (*LOCATION, FABRIC)]
    order = [c for c in (*LOCATION, *others, FABRIC) if c in cols]
    shaped = out[cols].sort_values(order, kind="stable", key=sort_key).reset_index(drop=True)
    shaped.attrs[SOURCE] = Source(as_run.assign(**{TABLE_PATTERN: ok[PATTERN]}))
    return shaped


# The table's attrs key of its rows as run (:class:`Source`), and their column that
# holds each row's pattern as the table names it ("neighbor copy").
SOURCE, TABLE_PATTERN = "bw_equivalence_rows", "table_pattern"
# How many times the sweep's bytes_per_pe a failing claim's worst configuration is
# rerun with, to tell a gap the stream's last accesses make from the mapping's.
LONGER = 8
BYTES_PER_PE = "workload.bytes_per_pe"
# Rerun only a stream of at most this many accesses per PE: there the accesses in
# flight at the end (4 of 8 for the preset's 64 KiB) are a large part of it; at 1,024
# (512 B) they are 0.4%, and a rerun at 8x would cost the report minutes.
SHORT_STREAM = 64


@dataclass(frozen=True)
class Source:
    """The ok stream rows the table was made from, as they ran (each seed apart), for
    :func:`_longer_stream`. pandas deep-copies a frame's attrs on every operation; these
    rows are only read, so a copy is this same object."""

    rows: pd.DataFrame

    def __deepcopy__(self, memo: dict) -> Source:
        return self


def _paired(ok: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per configuration (``keys``) with each mapping's bandwidth and busiest
    link side by side, and the inputs the classes need; configurations that lack a
    mapping (it failed) are dropped."""
    values = ["mean_pe_bw_gbs", "busiest_link"]
    wide = ok.pivot_table(index=keys, columns=MAPPING, values=values, aggfunc="first")
    wide.columns = [f"{v}_{m}" for v, m in wide.columns]
    wide = wide.dropna().reset_index()
    needed = (CHANNELS_PER_PE, GRANULE, ACCESS, ALIGN, PATTERN, ACTIVE)
    inputs = [c for c in needed if c not in keys]
    return wide.merge(ok.drop_duplicates(keys)[[*keys, *inputs]], on=keys, how="left")


def _over_seeds(out: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per configuration from its seeds' rows (each seed's n:1 and 1:1 paired
    first, so a ratio never mixes two seeds): the mean bandwidths, the mean, lowest
    and highest 1:1/n:1, the number of seeds, the lowest fairness, and the first seed's
    busiest links. A configuration whose pattern draws nothing has one seed
    (:mod:`kernbench.sweep.repeats` runs it once)."""
    grouped = out.groupby(keys, dropna=False, sort=False)
    figures = grouped.agg(
        **{N1: (N1, "mean"), ONE: (ONE, "mean"), RATIO: (RATIO, "mean")},
        **{RATIO_LO: (RATIO, "min"), RATIO_HI: (RATIO, "max"), SEEDS: (RATIO, "size")},
    )
    if FAIRNESS_MIN in out:
        figures[FAIRNESS_MIN] = grouped[FAIRNESS_MIN].min()
    rest = grouped.first().drop(columns=[SEED, *figures.columns], errors="ignore")
    return figures.join(rest).reset_index()


def _with_fairness(out: pd.DataFrame, ok: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Add the lower of the two mappings' ``bw_fairness`` per configuration (the worse
    served of them bounds how alike the PEs were); tables from before the column are
    left without it."""
    if FAIRNESS not in ok:
        return out
    worst = ok.groupby(keys, dropna=False)[FAIRNESS].min().rename(FAIRNESS_MIN)
    return out.merge(worst.reset_index(), on=keys, how="left")


def _classify(out: pd.DataFrame) -> pd.DataFrame:
    """Add the access class, both bandwidths, their ratio and the bottleneck."""
    stripe = out[CHANNELS_PER_PE] * out[GRANULE]
    aligned = (out[ACCESS] % stripe == 0) & (out[ALIGN] % stripe == 0)
    small = np.where(out[ACCESS] < stripe, "< stripe", "misaligned")
    out["access_class"] = np.where(aligned, "aligned", small)
    out[N1] = out["mean_pe_bw_gbs_n_to_one"].astype(float)
    out[ONE] = out["mean_pe_bw_gbs_one_to_one"].astype(float)
    out[RATIO] = out[ONE] / out[N1]
    links = zip(out["busiest_link_n_to_one"], out["busiest_link_one_to_one"], strict=True)
    out[BOTTLENECK] = [_bottleneck(a, b) for a, b in links]
    return out


def link_class(name: str) -> str:
    """A busiest-link name (``src->dst``, or ``router<->hbm_ctrl`` for an HBM resource,
    both ways) as the kind of link it is, e.g. ``HBM pe0`` (a PE's HBM: the aggregate,
    or a channel under 1:1), ``PE->NOC``, ``NOC->PE``, ``NOC->NOC``, ``PCIe``."""
    if not isinstance(name, str) or "->" not in name:
        return "n/a"  # rows from before the busiest link was measured
    src, dst = name.replace("<->", "->").split("->")
    if dst.endswith("hbm_ctrl"):
        return f"HBM {src.split('.')[2]}"
    kinds = {"dma": "PE", "noc": "NOC", "pcie_ep": "PCIe", "host": "PCIe"}
    a, b = (kinds.get(n.rsplit(".", 1)[-1], "router") for n in (src, dst))
    return "PCIe" if "PCIe" in (a, b) else f"{a}->{b}"


def _bottleneck(n_to_one: str, one_to_one: str) -> str:
    """The busiest link's class: one name when both mappings agree, else ``n:1 | 1:1``."""
    a, b = link_class(n_to_one), link_class(one_to_one)
    return a if a == b else f"{a} | {b}"


# What sets a configuration's figures, and the figures: rows equal in all are one.
DISTINCT = (CHANNELS_PER_PE, PATTERN, ACTIVE, ACCESS, ALIGN, N1, ONE)


def distinct(rows: pd.DataFrame) -> int:
    """Configurations that differ in a figure-setting input or in a figure."""
    return len(rows.drop_duplicates([c for c in DISTINCT if c in rows]))


def check(table: pd.DataFrame) -> list[Claim]:
    """Per facet value (:func:`facets`; the whole table when there is none), each claim
    naming it: ADR-0011 on local aligned accesses, the n:1 bound, then per pattern:
    aligned and misaligned agreement, worst difference and where, bottleneck links,
    and with both fabric models how far the reservation model moves 1:1/n:1. Then,
    per facet key, whether its values agree on 1:1/n:1 (:func:`_values_agree`)."""
    claims = [f.named(c) for f in split(table, facets(table)) for c in _facet_claims(f.rows)]
    return claims + [_values_agree(table, key) for key in facets(table)]


def facets(table: pd.DataFrame) -> list[str]:
    """The keys the claims are checked per value of: every varying key they do not
    know (:data:`KNOWN`), e.g. the address model."""
    return facet_keys(table, KNOWN)


# Why the tolerance is what it is, and why the claims are judged on ``fair``: said
# before the claims, so a verdict is read with its yardstick.
TOLERANCE_WHY = (
    f"agree: per-PE bandwidths within {BW_EQUAL_TOL:.0%}; a smaller difference is not"
    " evidence about the mapping: a stream's last access, its seed, or the rounding of"
    " a chaotic point (uniform 512 B: up to 0.7% between runs that differ only there)"
    " move a figure that much"
)
SEEDS_WHY = (
    "seeds: a uniform pattern ran {n} seeds per configuration (the others draw nothing and"
    " ran once); a claim HOLDS at every seed, DOES NOT HOLD where a configuration fails at"
    " every seed, and is WITHIN NOISE where a configuration's seeds fall on both sides of"
    " the tolerance; a figure is the seeds' mean, with their lowest and highest 1:1/n:1"
)
LONGER_WHY = (
    f"stream length: a failing claim's worst configuration of at most {SHORT_STREAM}"
    f" accesses per PE is rerun at {LONGER}x bytes_per_pe; where its gap closes there,"
    " the claim says it depends on the stream's length (its last accesses, where some PEs"
    " have finished and the rest have the links to themselves), not on the mapping"
)
FAIR_WHY = (
    "judged on the fair model: it shares each link max-min between PEs and never idles"
    " a link a PE could use, as the hardware's arbiters do, and it equals an independent"
    " max-min reference; reservation books every link of a request from one start, first"
    " come first served, which idles links where two bottlenecks meet and favours short"
    " paths, so its 1:1/n:1 differences measure that booking order, not the mapping:"
    " it is run to show how much of a difference the arbitration model adds"
)


def lines(table: pd.DataFrame) -> list[str]:
    """What the section says before its claims: the address model (its one value, or
    that each has its own claims and plots), any other key with claims or plots per
    value (:func:`facets`, :data:`PLACED`), with its values; the tolerance and, with
    both fabric models, why the claims are judged on ``fair``."""
    said = named_once(table)
    claimed = facets(table)
    for key in facet_keys(table, PLACED):
        if key not in NAMED:
            values = ", ".join(value_name(key, v) for v in ordered(table[key]))
            what = "claims and plots" if key in claimed else "plots"
            said.append(f"{key} varies: {what} per value ({values})")
    said.append(textwrap.fill(TOLERANCE_WHY, 100, subsequent_indent="    "))
    if SEEDS in table and table[SEEDS].max() > 1:
        said.append(
            textwrap.fill(SEEDS_WHY.format(n=table[SEEDS].max()), 100, subsequent_indent="    ")
        )
    said.append(textwrap.fill(LONGER_WHY, 100, subsequent_indent="    "))
    if both_models(table):
        said.append(textwrap.fill(FAIR_WHY, 100, subsequent_indent="    "))
    return said


def _facet_claims(table: pd.DataFrame) -> list[Claim]:
    """The claims on the rows of one facet value. With both fabric models the mapping
    claims are judged on the fair rows (the product's answer; mixing in reservation
    rows would let the booking order decide them), and per pattern one more claim says
    how far the reservation model moves 1:1/n:1."""
    if not both_models(table):
        return _mapping_claims(table)
    fair = table[table[FABRIC] == FAIR]
    claims = [_on_fair(c) for c in _mapping_claims(fair)]
    patterns = sorted(set(table[PATTERN]))
    return claims + [_booking_order(table[table[PATTERN] == p], p) for p in patterns]


def both_models(table: pd.DataFrame) -> bool:
    """Whether the table holds rows of both fabric models (``sim.fabric`` varies)."""
    return FABRIC in table and {FAIR, RESERVATION} <= set(table[FABRIC])


def _on_fair(claim: Claim) -> Claim:
    """The claim with its figures marked as the fair model's, so a reader of the claims
    alone knows which rows the verdict stands on."""
    return claim.renamed(claim.text, f"fair model: {claim.detail}")


def _mapping_claims(table: pd.DataFrame) -> list[Claim]:
    """The 1:1 against n:1 claims on rows of one fabric model (or of tables that
    predate the axis)."""
    aligned = table["access_class"] == "aligned"
    local = table[aligned & (table[PATTERN] == "local")]
    claims = [_agree(local, "ADR-0011: local aligned accesses")]
    claims.append(_upper_bound(table))
    for pattern in sorted(set(table[PATTERN])):
        this = table[PATTERN] == pattern
        claims.append(_agree(table[this & aligned], f"{pattern}, aligned"))
        claims.append(_agree(table[this & ~aligned], f"{pattern}, misaligned or small"))
    return claims


def _upper_bound(table: pd.DataFrame) -> Claim:
    """Whether 1:1 never beats n:1 by more than the tolerance, at any seed."""
    text = f"n:1 (one aggregate link) is an upper bound: 1:1 / n:1 <= 1 + {BW_EQUAL_TOL:.0%}"
    if table.empty:
        return Claim(text, None, "no configuration in the sweep")
    lo, hi = _bounds(table)
    at = hi.idxmax()
    detail = (
        f"largest ratio {hi[at]:.4f} over {distinct(table)} configurations; {_where(table, at)}"
    )
    return judged(
        text, bool((hi <= 1 + BW_EQUAL_TOL).all()), bool((lo > 1 + BW_EQUAL_TOL).any()), detail
    )


def _bounds(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Each configuration's lowest and highest 1:1/n:1 over its seeds (its one ratio
    twice when the rows ran one seed each)."""
    if RATIO_LO in rows:
        return rows[RATIO_LO], rows[RATIO_HI]
    return rows[RATIO], rows[RATIO]


# A configuration's figures; under both models they gain a _fair / _res suffix.
FIGURES = (N1, ONE, RATIO, RATIO_LO, RATIO_HI, SEEDS, BOTTLENECK, FAIRNESS_MIN)
# Configurations where a facet's values part that a claim names, before "and N more".
NAMED_PARTINGS = 6


def _values_agree(table: pd.DataFrame, key: str) -> Claim:
    """Whether every value of facet ``key`` gives every configuration the same 1:1/n:1
    within the tolerance (on the fair rows under both fabric models, as the mapping
    claims), with the worst case: the configuration and the two values whose ratios
    differ most (the first in named order on a tie); then where they part."""
    rows = table[table[FABRIC] == FAIR] if both_models(table) else table
    names = [value_name(key, v) for v in ordered(table[key])]
    text = f"{and_list(names)} agree on the 1:1/n:1 ratio within {BW_EQUAL_TOL:.0%}"
    wide = _across(rows, key, names)
    if wide.empty:
        return Claim(text, None, "no configuration under more than one of them, all else equal")
    config = wide.drop(columns=names)
    spread = wide[names].max(axis=1) - wide[names].min(axis=1)
    at = spread.idxmax()
    ratios = wide.loc[at, names]
    pair = sorted({ratios.idxmax(), ratios.idxmin()}, key=names.index)
    parted = config[spread > BW_EQUAL_TOL]
    figures = [
        f"{_distinct_across(wide, names)} distinct configurations under more than one of them",
        f"largest difference of 1:1/n:1: {spread[at]:.4f}, "
        + " against ".join(f"{n} {ratios[n]:.4f}" for n in pair)
        + f" at {_location(config, at)}",
        _partings(parted),
    ]
    if key in NAMED and NAMED[key].why:
        figures.append(f"why they differ: {NAMED[key].why}")
    claim = Claim(text, bool(parted.empty), "; ".join(figures))
    return _on_fair(claim) if both_models(table) else claim


def _across(rows: pd.DataFrame, key: str, names: list[str]) -> pd.DataFrame:
    """One row per configuration present under more than one value of ``key`` (every
    other column but the figures equal): its config columns, and 1:1/n:1 under each
    value in a column named as the value is (``names``: ``PA``, ``outstanding=4``; a
    value absent from these rows is a column of NaN). In the table's order, so claims
    name configurations as the table lists them."""
    config = [c for c in rows.columns if c not in (key, *FIGURES)]
    named = rows.assign(**{key: [value_name(key, v) for v in rows[key]]})
    wide = named.pivot_table(index=config, columns=key, values=RATIO, aggfunc="first", sort=False)
    wide = wide.reindex(columns=names)
    wide = wide[wide.count(axis=1) > 1]
    wide.columns = list(wide.columns)
    return wide.reset_index()


def _distinct_across(wide: pd.DataFrame, names: list[str]) -> int:
    """As :func:`distinct`, with each value's 1:1/n:1 as the figures and the other
    facet keys (a PA and an LA row are two configurations) as inputs."""
    inputs = [c for c in DISTINCT if c in wide] + facets(wide.drop(columns=names))
    return len(wide.drop_duplicates([*inputs, *names]))


def _partings(parted: pd.DataFrame) -> str:
    """Where a facet's values part by more than the tolerance: every configuration (the
    first :data:`NAMED_PARTINGS`, then how many more), or that they never do."""
    if parted.empty:
        return f"no configuration where they differ by more than {BW_EQUAL_TOL:.0%}"
    where = [_location(parted, i) for i in parted.index[:NAMED_PARTINGS]]
    more = len(parted) - len(where)
    tail = f"; and {more} more" if more else ""
    return (
        f"they differ by more than {BW_EQUAL_TOL:.0%} at {len(parted)} configurations: "
        + "; ".join(where)
        + tail
    )


SUFFIX = {FAIR: "_fair", RESERVATION: "_res"}


def by_model(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration present under both fabric models, each figure twice
    (``ratio_1to1_n1_fair``, ``ratio_1to1_n1_res``, ...). The configuration is every
    other column, so a reservation row only ever meets the fair row of its own
    configuration."""
    config = [c for c in rows.columns if c not in (FABRIC, *FIGURES)]
    fair, res = (rows[rows[FABRIC] == m].drop(columns=FABRIC) for m in (FAIR, RESERVATION))
    return fair.merge(res, on=config, suffixes=(SUFFIX[FAIR], SUFFIX[RESERVATION]))


def _booking_order(rows: pd.DataFrame, pattern: str) -> Claim:
    """Whether the reservation model changes 1:1/n:1 by at most the tolerance on every
    configuration of ``pattern`` run under both models; the figures behind it."""
    text = (
        f"{pattern}: the booking-order model ({RESERVATION}) changes 1:1/n:1"
        f" by at most {BW_EQUAL_TOL:.0%}"
    )
    pairs = by_model(rows)
    if pairs.empty:
        return Claim(text, None, "no configuration of this pattern under both models")
    change = (pairs[RATIO + "_res"] - pairs[RATIO + "_fair"]).abs()
    return Claim(text, bool((change <= BW_EQUAL_TOL).all()), _booking_detail(pairs, change))


def _booking_detail(pairs: pd.DataFrame, change: pd.Series) -> str:
    """Distinct configurations, the worst 1:1/n:1 gap under each model, the largest
    change of the ratio and where, each mapping's largest bandwidth change, and the
    least fair row under each model when the rows say."""
    worst = {m: (pairs[RATIO + s] - 1).abs().max() for m, s in SUFFIX.items()}
    at = change.idxmax()
    row = pairs.loc[at]
    figures = [
        f"{_distinct_pairs(pairs)} distinct configurations under both models",
        f"worst |1:1/n:1 - 1|: fair {worst[FAIR]:.2%}, reservation {worst[RESERVATION]:.2%}",
        f"largest change of 1:1/n:1: {change[at]:.4f}, from {row[RATIO + '_fair']:.4f} (fair)"
        f" to {row[RATIO + '_res']:.4f} (reservation) at {_location(pairs, at)}",
        "largest change of per-PE bandwidth, reservation vs fair: "
        + ", ".join(f"{name} {_largest_change(pairs, col):+.2%}" for name, col in _MAPPINGS),
    ]
    if FAIRNESS_MIN + "_fair" in pairs:
        lowest = {m: pairs[FAIRNESS_MIN + s].min() for m, s in SUFFIX.items()}
        shown = [f"{m} {v:.3f}" for m, v in lowest.items() if pd.notna(v)]
        figures += [f"lowest bw_fairness: {', '.join(shown)}"] if shown else []
    return "; ".join(figures)


_MAPPINGS = (("n:1", N1), ("1:1", ONE))


def _largest_change(pairs: pd.DataFrame, col: str) -> float:
    """The relative change (reservation / fair - 1) of largest size, with its sign."""
    rel = pairs[col + "_res"] / pairs[col + "_fair"] - 1
    return float(rel[rel.abs().idxmax()])


def _distinct_pairs(pairs: pd.DataFrame) -> int:
    """As :func:`distinct`, with both models' bandwidths as the figures."""
    inputs = [c for c in DISTINCT if c in pairs]
    figures = [c + s for c in (N1, ONE) for s in SUFFIX.values()]
    return len(pairs.drop_duplicates([*inputs, *figures]))


def _agree(rows: pd.DataFrame, what: str) -> Claim:
    """Whether 1:1 and n:1 agree within the tolerance on ``rows``; the worst case,
    where it is, and the busiest links."""
    text = f"{what}: 1:1 and n:1 per-PE bandwidth agree within {BW_EQUAL_TOL:.0%}"
    if rows.empty:
        return Claim(text, None, "no configuration of this kind in the sweep")
    lo, hi = _bounds(rows)
    farthest = np.maximum((lo - 1).abs(), (hi - 1).abs())
    # the seed nearest agreement (none apart when the seeds straddle 1)
    nearest = np.minimum((lo - 1).abs(), (hi - 1).abs()).where((lo > 1) | (hi < 1), 0.0)
    holds, fails = bool(farthest.max() <= BW_EQUAL_TOL), bool(nearest.max() > BW_EQUAL_TOL)
    # a failure names a configuration that fails at every seed, the largest such gap
    dev = nearest if fails else farthest
    worst = dev.idxmax()
    detail = (
        f"{distinct(rows)} distinct configurations; worst |1:1/n:1 - 1| ="
        f" {dev[worst]:.2%}{' at every seed' * (fails and SEEDS in rows)}"
        f" ({_where(rows, worst)}); bottleneck: {_bottlenecks(rows)}"
    )
    if fails:
        detail = _longer_stream(rows, worst, detail)
    return judged(text, holds, fails, detail)


def _longer_stream(rows: pd.DataFrame, at: int, detail: str) -> str:
    """``detail`` with the configuration at ``at`` rerun at :data:`LONGER` times its
    bytes_per_pe (its first seed, both mappings): when 1:1/n:1 comes within the
    tolerance there, the gap is the stream's length (its last accesses, where some
    PEs have finished and the rest have the links to themselves), and the claim says
    so first. Rows without their source (a table built by hand) say nothing more."""
    source = rows.attrs.get(SOURCE)
    if source is None:
        return detail
    pair = _as_run(source.rows, rows.loc[at])
    if set(pair[MAPPING]) != {"n_to_one", "one_to_one"} or BYTES_PER_PE not in pair:
        return detail  # a mapping failed, or rows written by hand: no whole config
    first = pair.iloc[0]
    accesses = -(-int(first[BYTES_PER_PE]) // int(first[ACCESS]))
    if accesses > SHORT_STREAM:
        return f"{detail}; {_long_enough(accesses, first)}"
    longer = int(first[BYTES_PER_PE]) * LONGER
    try:
        bw = {
            row[MAPPING]: rerun.stream_metrics(row, {BYTES_PER_PE: longer})
            for _, row in pair.iterrows()
        }
    except KernBenchError as exc:
        return f"{detail}; not rerun at {LONGER}x bytes_per_pe: {exc}"
    ratio = bw["one_to_one"]["mean_pe_bw_gbs"] / bw["n_to_one"]["mean_pe_bw_gbs"]
    seed = f", seed {pair[SEED].iloc[0]}" if SEEDS in rows and SEED in pair else ""
    rerun_at = f"at {LONGER}x bytes_per_pe ({longer} B per PE{seed}) 1:1/n:1 is {ratio:.4f}"
    if abs(ratio - 1) <= BW_EQUAL_TOL:
        return f"depends on the stream's length: {rerun_at}, within {BW_EQUAL_TOL:.0%}; {detail}"
    return f"{detail}; {rerun_at}: the gap does not close with a longer stream"


def _long_enough(accesses: int, row: pd.Series) -> str:
    """Why a configuration with many accesses per PE is not rerun: its tail, the
    accesses still in flight when the others are done, is a small part of it (and a
    rerun at 8x would cost 8x a long point)."""
    tail = int(row.get("workload.outstanding", 1))
    return (
        f"not rerun at {LONGER}x bytes_per_pe: {accesses} accesses per PE, the last {tail}"
        f" in flight are {tail / accesses:.1%} of the stream"
    )


def _as_run(source: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
    """The source rows of the table's configuration ``row``, under both mappings, at
    its first seed."""
    match = pd.Series(True, index=source.index)
    for key in (k for k in row.index if "." in k and k in source):
        column = source[TABLE_PATTERN] if key == PATTERN else source[key]
        match &= column.astype(str) == str(row[key])
    found = source[match]
    return found[found[SEED] == found[SEED].min()] if SEED in found else found


def _where(rows: pd.DataFrame, index: int) -> str:
    """The configuration at ``index``: its ratio (with its seeds' spread) and its
    bandwidths (their means over the seeds)."""
    row = rows.loc[index]
    where = _location(rows, index)
    seeds = int(row[SEEDS]) if SEEDS in rows else 1
    spread = f", {row[RATIO_LO]:.4f} to {row[RATIO_HI]:.4f} over {seeds} seeds" if seeds > 1 else ""
    return (
        f"ratio {row[RATIO]:.4f}{spread} at {where}: n:1 {row[N1]:.4g}, 1:1 {row[ONE]:.4g} GB/s"
        + " (means)" * (seeds > 1)
    )


def _location(rows: pd.DataFrame, index: int) -> str:
    """Where row ``index`` is: its location keys (short names, values as typed), then
    the value of each facet key that varies among ``rows`` (``LA``, ``outstanding=4``)."""
    row = rows.loc[index]
    where = [f"{k.rsplit('.', 1)[-1]}={_fmt(row[k])}" for k in LOCATION if k in rows]
    return ", ".join(where + [value_name(k, row[k]) for k in facets(rows)])


def _fmt(value: object) -> str:
    """A config value as typed: ``8``, not ``8.0`` (NaN-padded columns are floats)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bottlenecks(rows: pd.DataFrame) -> str:
    """The busiest link classes (``n:1 | 1:1`` where the mappings differ) and how many
    distinct configurations each bounds."""
    counts = rows.drop_duplicates([c for c in DISTINCT if c in rows])[BOTTLENECK].value_counts()
    return ", ".join(f"{k} ({v})" for k, v in counts.items())


SIZE_COLOURS = {"aligned": "tab:blue", "misaligned": "tab:orange", "< stripe": "tab:green"}
# A marker type per shape (PE count and N), boxy ones first: a square's corners show
# round the circle drawn inside it, a circle's round the diamond, and so on.
MARKERS = "soD^v<>p*h"
# Marker diameter (points). A marker drawn within NEAR of the axes' span (on both axes)
# of k markers drawn before it is NEST^k as wide, so configurations with equal figures
# (4 and 8 PEs each reading its own N = 8 channels; on hotspot, 512 B as fast as 64 KiB)
# nest, each a ring round the next, none moved from its figures. Below 2/3, a square
# inside a square still leaves a ring a fifth of the outer's width on every side.
MARKER_PT = 13.0
NEAR = 0.02
NEST = 0.6


def _case(row: pd.Series) -> str:
    active = f", {row[ACTIVE]} PE" if str(row[ACTIVE]) != "all" else ""
    return f"{row[PATTERN]}{active}"


def _shape(row: pd.Series, keys: list[str]) -> str:
    """The row's PE count and N, of those that vary (``all`` when neither does)."""
    parts = [f"{row[PES]} PEs" if k == PES else f"N={row[k]}" for k in keys]
    return ", ".join(parts) or "all"


def plot(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``bw_equivalence_bandwidth.png`` (per traffic case, 1:1 / n:1 against n:1
    per-PE bandwidth: on the line at 1 they agree) and ``bw_equivalence_ratio.png``
    (heat map of 1:1 / n:1, traffic case and access size across, PE count and N down,
    of those that vary). With both fabric models they draw the fair rows, and their
    titles say so: a point or cell never mixes the models (the table and the
    booking-order claims hold the reservation figures). Per value of a key the plots
    do not place (:data:`PLACED`: the address model, a key swept by hand, the alignment
    offset) the two are drawn again, the value in the file name
    (``bw_equivalence_ratio_la.png``) and the title."""
    paths = []
    span = _span(plotted(table)[RATIO])  # one colour scale: the facets' maps compare
    for facet in split(table, facet_keys(table, PLACED)):
        t = plotted(facet.rows)
        said = [facet.label, *constant_names(table)]
        said += ["fair fabric model"] if both_models(facet.rows) else []
        note = f" ({', '.join(s for s in said if s)})" if any(said) else ""
        suffix = f"_{facet.slug}" if facet.slug else ""
        scatter = out_dir / f"bw_equivalence_bandwidth{suffix}.png"
        heat = out_dir / f"bw_equivalence_ratio{suffix}.png"
        paths += [_scatter(t, scatter, note), save_figure(heat_figure(t, note, span), heat)]
    return paths


def plotted(table: pd.DataFrame) -> pd.DataFrame:
    """The rows the plots draw (the fair ones under both models), with their traffic
    case, access class and shape (the PE count and N, of those that vary)."""
    t = table[table[FABRIC] == FAIR].copy() if both_models(table) else table.copy()
    shape_keys = [k for k in (PES, CHANNELS_PER_PE) if k in t and t[k].nunique() > 1]
    t["size"] = t["access_class"]
    t["case"] = t.apply(_case, axis=1)
    t["shape"] = t.apply(_shape, axis=1, keys=shape_keys)
    return t


def _scatter(t: pd.DataFrame, path: Path, note: str = "") -> Path:
    """One panel per traffic case: 1:1 / n:1 (y) against n:1 per-PE bandwidth (x), so
    the quantity the claims judge is a position, read to the tolerance (a scatter of
    1:1 against n:1 showed a 1% gap as a hair's breadth off its diagonal). Colour =
    access class, marker = shape, equal points nested (:data:`NEST`); every marker at
    its figures. One y scale for every panel, so a gap reads the same in each; one
    legend, below."""
    cases = list(dict.fromkeys(t["case"]))
    rows, cols = grid_of(len(cases))
    fig, axes = plt.subplots(rows, cols, figsize=(3.9 * cols + 0.6, 3.6 * rows + 1.6),
                             sharey=True, squeeze=False, layout="constrained")  # fmt: skip
    markers = dict(zip(dict.fromkeys(t["shape"]), itertools.cycle(MARKERS)))
    ylim = _ratio_limits(t[RATIO])
    for n, (ax, case) in enumerate(zip(axes.flat, cases, strict=False)):
        _panel(ax, t[t["case"] == case], markers, ylim, n)
        ax.set_title(case, fontsize=10)
    for ax in list(axes.flat)[len(cases) :]:
        ax.axis("off")
    handles = _legend(t, markers)
    fig.legend(handles=handles, loc="outside lower center", ncol=min(3, len(handles)), fontsize=8,
               frameon=False, title="colour: access class; marker: PEs and N; equal points"
               " nested, the later inside", title_fontsize=8)  # fmt: skip
    title = (
        f"1:1 / n:1 per-PE bandwidth against n:1's, per traffic case{note}: on the dashed"
        f" line the mappings agree, in the grey band within {BW_EQUAL_TOL:.0%}"
    )
    fig.suptitle(wrapped(title, fig.get_figwidth(), 11), fontsize=11)
    return save_figure(fig, path)


def _label(size: str, shape: str) -> str:
    return size if shape == "all" else f"{size}, {shape}"


def _panel(
    ax: plt.Axes, part: pd.DataFrame, markers: dict[str, str], ylim: tuple[float, float], n: int
) -> None:
    """One traffic case: each (shape, access class) a series ``series-<panel>-<i>`` at
    (n:1 GB/s, 1:1 / n:1), sized by :func:`_depths`; the line at 1, the tolerance band."""
    ax.set(xlim=(0, part[N1].max() * 1.1), ylim=ylim)
    groups = _groups(part, markers)
    depths = iter(_depths(pd.concat([g for _, g in groups]), ax))
    for i, ((shape, size), g) in enumerate(groups):
        widths = [MARKER_PT * NEST ** next(depths) for _ in range(len(g))]
        ax.scatter(g[N1], g[RATIO], c=SIZE_COLOURS[size], marker=markers[shape],
                   s=np.square(widths), edgecolors="white", linewidths=0.4,
                   gid=f"series-{n}-{i}")  # fmt: skip
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.axhspan(1 - BW_EQUAL_TOL, 1 + BW_EQUAL_TOL, color="0.9", lw=0, zorder=0)
    ax.tick_params(labelsize=8)
    ax.set_xlabel("n:1 per-PE bandwidth (GB/s)", fontsize=9)
    ax.set_ylabel("1:1 / n:1", fontsize=9)


def _depths(points: pd.DataFrame, ax: plt.Axes) -> list[int]:
    """For each point in drawing order, how many drawn before it lie within
    :data:`NEAR` of the axes' span of it on both axes (where its marker would cover
    theirs)."""
    spans = [np.subtract(*reversed(lim)) for lim in (ax.get_xlim(), ax.get_ylim())]
    at = points[[N1, RATIO]].to_numpy() / spans
    return [int((np.abs(at[:k] - at[k]) < NEAR).all(axis=1).sum()) for k in range(len(at))]


def _ratio_limits(ratios: pd.Series) -> tuple[float, float]:
    """The shared y range: every ratio and the tolerance band, with a margin that
    keeps the outermost markers whole."""
    low = min(float(ratios.min()), 1 - BW_EQUAL_TOL)
    high = max(float(ratios.max()), 1 + BW_EQUAL_TOL)
    margin = 0.08 * (high - low)
    return low - margin, high + margin


def _groups(t: pd.DataFrame, markers: dict[str, str]) -> list:
    """``((shape, access class), rows)`` of ``t`` in drawing order: by shape, then class."""
    groups = t.groupby(["shape", "size"], sort=False)
    order = (list(markers), list(SIZE_COLOURS))
    return sorted(groups, key=lambda g: (order[0].index(g[0][0]), order[1].index(g[0][1])))


def _legend(t: pd.DataFrame, markers: dict[str, str]) -> list[Line2D]:
    """One entry per (shape, access class) drawn, with its marker and colour."""
    return [Line2D([], [], linestyle="none", marker=markers[shape], markersize=MARKER_PT * 0.8,
                   color=SIZE_COLOURS[size], markeredgecolor="white", label=_label(size, shape))
            for (shape, size), _ in _groups(t, markers)]  # fmt: skip


def _span(ratios: pd.Series) -> tuple[float, float]:
    """The heat map's colour range: the ratios', never narrower than the claims'
    tolerance, so a cell within it stays pale however small the spread."""
    low, high = float(np.nanmin(ratios)), float(np.nanmax(ratios))
    return min(low, 1 - BW_EQUAL_TOL), max(high, 1 + BW_EQUAL_TOL)


def heat_figure(
    t: pd.DataFrame, note: str = "", span: tuple[float, float] | None = None
) -> plt.Figure:
    """1:1 / n:1 per configuration: one row per traffic case and access size, one
    column per PE count and N of those that vary; nothing folded (a cell is one
    configuration), the colours fitted to the figures and the tolerance (1 white: the
    mappings agree), or spanning ``span`` (the maps of several facets on one scale).
    Cases run down the page, so their labels read across, at full size."""
    sizes = ACCESS in t and t[ACCESS].nunique() > 1
    access = t[ACCESS] if sizes else t["size"]
    cells = zip(t["case"], access, t["size"], strict=True)
    t = t.assign(line=[f"{c}, {format_value(a)} B ({s})" if sizes else f"{c}, {s}"
                       for c, a, s in cells])  # fmt: skip
    by = ["case", ACCESS] if sizes else ["case", "line"]
    order = list(dict.fromkeys(t.sort_values(by, kind="stable")["line"]))
    grid = t.pivot_table(index="line", columns="shape", values=RATIO, aggfunc=_one).loc[order]
    values = grid.to_numpy(dtype=float)
    low, high = span or _span(t[RATIO])
    norm = TwoSlopeNorm(1.0, vmin=low, vmax=high)
    width = 1.1 * values.shape[1] + 5.2
    fig, ax = plt.subplots(figsize=(width, 0.3 * values.shape[0] + 1.8), layout="constrained")
    image = ax.imshow(values, cmap="RdBu", norm=norm, aspect="auto")
    ax.set_xticks(range(values.shape[1]), list(grid.columns), fontsize=9)
    ax.set_yticks(range(values.shape[0]), list(grid.index), fontsize=9)
    ax.xaxis.tick_top()
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            dark = abs(norm(v) - 0.5) > 0.3
            ax.text(j, i, f"{v:.4f}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")  # fmt: skip
    title = f"1:1 / n:1 per-PE bandwidth{note}; 1 = the mappings agree"
    fig.suptitle(wrapped(title, width, 11), fontsize=11)
    ax.set_ylabel("traffic case, access size", fontsize=9)
    ax.set_xlabel("PEs per cube, channels per PE (N)", fontsize=9)
    bar = fig.colorbar(image, ax=ax, format="%.3f")
    bar.set_label("1:1 / n:1 per-PE bandwidth", fontsize=9)
    return fig


def _one(values: pd.Series) -> float:
    """A cell's one configuration (the heat map's rows and columns hold every varying
    key): two would be a fold, which the table never makes."""
    if len(values) != 1:
        raise ValueError(f"{len(values)} configurations in one heat-map cell")
    return float(values.iloc[0])
