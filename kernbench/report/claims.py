"""The studies' claims, checked against their tables with tolerances stated up front.

Each check returns :class:`Claim` objects: what is claimed (with the tolerance in
the words), whether it holds on this sweep, and the figures behind the verdict, so
the report says plainly where our numbers and the ADRs' differ (DESIGN §5).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kernbench.report.tables import FIXED, LINEAR_FROM, MAPPING, RECIP

# ADR-0064 / ADR-0065 reference figures for study 2.
ADR_BYTES_PER_TILE = {"opt3": 232.0, "opt2": 380.0}
ADR_COMMANDS_PER_TILE = {"opt3": 10, "opt2": 2}
ADR_RATIO, ADR_RATIO_TOL = 2.4, 0.05  # "≈ 2.4×": one decimal, so ± half a unit
ADR_BYTES_TOL = 0.10  # "≈ 232 / ≈ 380 B": within 10%
# "With FIXED = 0 opt2 does not win": bytes per tile are similar, so without the fixed
# per-command cost opt2 gains nothing real: opt3/opt2 stays within 10% of 1 or below.
NO_WIN_TOL = 0.10
DEFAULT_FIXED, DEFAULT_RECIP = 32.0, 0.25
# Simulator speed (issue 7): accesses/s over SimPy's bare timeout rate, per mapping
# (1:1 does N sub-requests of work per access), and how flat the cost per access is.
SPEED_TARGETS = {"n_to_one": 0.5, "one_to_one": 0.25}
LINEAR_TOL = 0.20


@dataclass(frozen=True)
class Claim:
    """One checked statement. ``holds`` is None when the sweep has no point to test."""

    text: str
    holds: bool | None
    detail: str

    def line(self) -> str:
        verdict = {True: "HOLDS", False: "DOES NOT HOLD", None: "NOT TESTED"}[self.holds]
        return f"[{verdict}] {self.text}\n    {self.detail}"


def check_dispatch_ratio(table: pd.DataFrame) -> list[Claim]:
    """Commands and bytes per tile, the ratio at the default calibration, FIXED = 0."""
    claims = [_per_tile_claim(table, v) for v in ("opt3", "opt2")]
    at_default = table[(table[FIXED] == DEFAULT_FIXED) & (table[RECIP] == DEFAULT_RECIP)]
    ratio = at_default["dispatch_ratio_opt3_opt2"]
    claims.append(
        Claim(
            f"opt3/opt2 dispatch at FIXED={DEFAULT_FIXED:g}, R={DEFAULT_RECIP:g} is "
            f"{ADR_RATIO}x (ADR-0064), within +-{ADR_RATIO_TOL}",
            bool(((ratio - ADR_RATIO).abs() <= ADR_RATIO_TOL).all()) if len(ratio) else None,
            f"ours: {', '.join(f'{r:.3f}x' for r in ratio) or 'no such point'}",
        )
    )
    zero = table[table[FIXED] == 0]
    d2, d3 = zero["dispatch_cycles_per_tile_opt2"], zero["dispatch_cycles_per_tile_opt3"]
    claims.append(
        Claim(
            f"with FIXED = 0, opt2 does not win: opt3 dispatch <= opt2's x {1 + NO_WIN_TOL:g} "
            "at every R (ADR-0064 A2)",
            bool((d3 <= d2 * (1 + NO_WIN_TOL)).all()) if len(zero) else None,
            "; ".join(
                f"R={r:g}: opt3 {a:g} vs opt2 {b:g}"
                for r, a, b in zip(zero[RECIP], d3, d2, strict=True)
            )
            or "no FIXED = 0 point",
        )
    )
    return claims


def _per_tile_claim(table: pd.DataFrame, variant: str) -> Claim:
    """Commands per tile exact, logical bytes per tile within 10% of the ADR."""
    commands = sorted(set(table[f"commands_per_tile_{variant}"]))
    nbytes = sorted(set(table[f"logical_bytes_per_tile_{variant}"]))
    ref_cmds, ref_bytes = ADR_COMMANDS_PER_TILE[variant], ADR_BYTES_PER_TILE[variant]
    diff = [b / ref_bytes - 1 for b in nbytes]
    holds = commands == [ref_cmds] and all(abs(d) <= ADR_BYTES_TOL for d in diff)
    return Claim(
        f"{variant}: {ref_cmds} commands and ~{ref_bytes:g} logical bytes per tile "
        f"(ADR, bytes within {ADR_BYTES_TOL:.0%})",
        holds,
        f"ours: {', '.join(f'{c:g}' for c in commands)} commands, "
        + ", ".join(f"{b:g} B ({d:+.1%})" for b, d in zip(nbytes, diff, strict=True)),
    )


def check_sim_speed(table: pd.DataFrame) -> list[Claim]:
    """The speed targets per mapping and linear cost, from 10^4 accesses up."""
    big = table[table["sim_accesses"] >= LINEAR_FROM]
    claims = []
    for mapping, target in SPEED_TARGETS.items():
        rows = big[big[MAPPING] == mapping] if MAPPING in big else big.iloc[:0]
        ratio = rows["speed_ratio"]
        claims.append(
            Claim(
                f"{mapping}: accesses/s >= {target:g} x SimPy's bare timeout rate "
                f"(issue 7), from {LINEAR_FROM:,} accesses",
                bool((ratio >= target).all()) if len(ratio) else None,
                f"ratio {ratio.min():.3f} ... {ratio.max():.3f} over {len(ratio)} points"
                if len(ratio)
                else "no such point (channel mapping not swept)",
            )
        )
    dev = (big["cost_vs_1e4"] - 1).abs()
    keys = [c for c in big.columns if "." in c]
    grown = len(big) > (big.groupby(keys).ngroups if keys else 1)  # some config has 2+ points
    claims.append(
        Claim(
            f"wall time is linear in work: cost per access within +-{LINEAR_TOL:.0%} of "
            f"each configuration's first point from {LINEAR_FROM:,} accesses",
            bool((dev <= LINEAR_TOL).all()) if grown else None,
            f"largest deviation {dev.max():.1%} over {len(dev)} points",
        )
    )
    return claims
