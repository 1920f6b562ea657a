"""Claims: one checked statement each, and how a stated figure is compared with ours.

Each study's ``check`` returns :class:`Claim` objects: what is claimed (as its source
words it), whether it holds on this sweep, and the figures behind the verdict, ours
beside the ADR's, so the report says plainly where they differ (DESIGN §5). The
bandwidth-equivalence checks live here until they move to their study module.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

import pandas as pd

# Study 1: aligned accesses see equal bandwidth under both mappings, within this.
BW_EQUAL_TOL = 0.01


def matches_stated(ours: float, stated: str) -> bool:
    """Whether ``ours`` is the figure a source states as "≈ <stated>": it rounds to it
    at the precision written ("2.4": one decimal, so 2.35 <= ours < 2.45; "232": whole
    units). The written precision is the claim's own tolerance; a looser one could
    pass a figure the source would not have written."""
    decimals = len(stated.partition(".")[2])
    half = 0.5 * 10.0**-decimals
    return float(stated) - half <= ours < float(stated) + half


@dataclass(frozen=True)
class Claim:
    """One checked statement. ``holds`` is None when the sweep has no point to test."""

    text: str
    holds: bool | None
    detail: str

    def verdict(self) -> str:
        return {True: "HOLDS", False: "DOES NOT HOLD", None: "NOT TESTED"}[self.holds]

    def line(self) -> str:
        """The verdict and the claim, then the figures wrapped to 100 columns."""
        detail = textwrap.fill(self.detail, 100, initial_indent="    ", subsequent_indent="    ")
        return f"[{self.verdict()}] {self.text}\n{detail}"


def check_bw_equivalence(table: pd.DataFrame) -> list[Claim]:
    """Aligned points equal within 1%; 1:1 never beats n:1; where they part."""
    ratio = table["ratio_1to1_n1"]
    aligned = ratio[table["aligned"]]
    worst = (aligned - 1).abs().max() if len(aligned) else math.nan
    equal = Claim(
        f"aligned accesses (size and offset multiples of N*g): |1:1 / n:1 - 1| <= "
        f"{BW_EQUAL_TOL:.0%}",
        bool(worst <= BW_EQUAL_TOL) if len(aligned) else None,
        f"{len(aligned)} aligned configurations; largest deviation {worst:.2%}",
    )
    bound = Claim(
        f"n:1 (one aggregate link) is an upper bound: 1:1 / n:1 <= 1 + {BW_EQUAL_TOL:.0%}",
        bool((ratio <= 1 + BW_EQUAL_TOL).all()),
        f"largest ratio {ratio.max():.4f} over {len(ratio)} configurations",
    )
    parted = table[~table["aligned"] & ((ratio - 1).abs() > BW_EQUAL_TOL)]
    where = "none" if parted.empty else _worst_row(parted)
    part = Claim(
        f"the grid shows where they part: some unaligned (small or misaligned) access "
        f"differs by more than {BW_EQUAL_TOL:.0%}",
        not parted.empty,
        f"{len(parted)} of {int((~table['aligned']).sum())} unaligned configurations do; "
        f"lowest ratio: {where}",
    )
    return [equal, bound, part]


def _worst_row(table: pd.DataFrame) -> str:
    row = table.loc[table["ratio_1to1_n1"].idxmin()]
    keys = [c for c in table.columns if "." in c]
    where = ", ".join(f"{c.rsplit('.', 1)[-1]}={row[c]}" for c in keys)
    return f"{row['ratio_1to1_n1']:.4f} at {where}"
