"""Claims: one checked statement each, and how a stated figure is compared with ours.

Each study's ``check`` returns :class:`Claim` objects: what is claimed (as its source
words it), whether it holds on this sweep, and the figures behind the verdict, ours
beside the ADR's, so the report says plainly where they differ (DESIGN §5).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


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
