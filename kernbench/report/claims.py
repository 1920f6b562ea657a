"""Claims: one checked statement each, and how a stated figure is compared with ours.

Each study's ``check`` returns :class:`Claim` objects: what is claimed (as its source
words it), whether it holds on this sweep, and the figures behind the verdict, ours
beside the ADR's, so the report says plainly where they differ (DESIGN §5).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace


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
    """One checked statement. ``holds`` is None when the sweep has no point to test, or
    when ``noise``: its figures moved across the tolerance between runs that differ only
    in noise (a seed), so the sweep cannot say either way (:func:`judged`)."""

    text: str
    holds: bool | None
    detail: str
    noise: bool = False

    def verdict(self) -> str:
        if self.noise:
            return "WITHIN NOISE"
        return {True: "HOLDS", False: "DOES NOT HOLD", None: "NOT TESTED"}[self.holds]

    def line(self) -> str:
        """The verdict and the claim, then the figures wrapped to 100 columns."""
        detail = textwrap.fill(self.detail, 100, initial_indent="    ", subsequent_indent="    ")
        return f"[{self.verdict()}] {self.text}\n{detail}"

    def renamed(self, text: str, detail: str | None = None) -> Claim:
        """The same verdict under another text (and detail): a facet's or a model's."""
        return replace(self, text=text, detail=self.detail if detail is None else detail)


def judged(text: str, holds: bool, fails: bool, detail: str) -> Claim:
    """A claim checked on figures with a spread over seeds: ``holds`` when it holds at
    every seed of every configuration, ``fails`` when some configuration fails at every
    one of its seeds. Neither: some configuration's seeds fall on both sides of the
    tolerance, and the verdict is WITHIN NOISE. With one seed per configuration exactly
    one of the two is true and this is the plain verdict."""
    if holds:
        return Claim(text, True, detail)
    if fails:
        return Claim(text, False, detail)
    return Claim(text, None, detail, noise=True)
