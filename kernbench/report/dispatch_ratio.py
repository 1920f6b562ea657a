"""Study 2, dispatch ratio (DESIGN §5, ADR-0064): ``table``, ``check``, ``plot``.

One row per calibration (FIXED, R) and any other swept key: per GQA variant its
dispatch cycles per KV tile (``cycles_opt2``, ``cycles_opt3``), their ratio
(``ratio_opt3_opt2``), kernel latency (``latency_ns_*``), opt3's latency over opt2's
and the faster one (``opt3_over_opt2_latency``, ``latency_winner``: gqa_pair's columns,
by the same rule), bottleneck (``bound_*``), commands and logical bytes per tile
(``commands_*``, ``bytes_*``). The rows are a sweep's ``gqa_pair`` points (each holds
both variants) or, when it has none, its ``gqa_opt2`` and ``gqa_opt3`` points paired by
configuration. The claims are ADR-0064's, as it words them, each with our figure beside
the ADR's ("ours 2.77 (ADR ≈ 2.4)"); a figure the ADR gives as "≈ 2.4" holds when ours
rounds to it at the ADR's precision (:func:`~kernbench.report.claims.matches_stated`),
never within a looser tolerance that could pass the opposite.

Then where opt3 stops beating opt2 in latency (issue 55), from the grid alone: the claim
that opt3 is faster only while both kernels are DMA-bound, and in words where the winner
changes: in ``FIXED + k·R`` (``k`` opt3's logical bytes per command, so opt3's dispatch
per KV tile is its commands x this), the largest value opt3 wins at and the smallest
opt2 wins at (when the first is below the second, one line of that slope divides them),
per R the last FIXED opt3 wins at and the first opt2 wins at, and the ratio at the
default calibration. ``dispatch_ratio_crossover.png`` maps it.

Any other key that varies (the address model, a key swept by hand) is a facet
(:mod:`~kernbench.report.facets`): the claims are checked, and the plots drawn, per
value, each naming it (``VA: opt3 / opt2 dispatch ...``,
``dispatch_ratio_latency_va.png``), never averaged into one cell or one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kernbench.report.claims import Claim, matches_stated
from kernbench.report.dispatch_ratio_plots import Crossing, draw
from kernbench.report.facets import facet_keys, split
from kernbench.report.tables import FIXED, OPT2, OPT3, RECIP, WORKLOAD, varying_config
from kernbench.results import STATUS_OK

__all__ = ["check", "plot", "table"]

# Result column -> its short name in this table, which is per KV tile throughout
# (``cycles_opt3``: opt3's dispatch cycles per tile), in the order printed.
METRICS = {
    "dispatch_cycles_per_tile": "cycles",
    "kernel_latency_ns": "latency_ns",
    "bottleneck": "bound",
    "commands_per_tile": "commands",
    "logical_bytes_per_tile": "bytes",
}
RATIO = "ratio_opt3_opt2"
# gqa_pair's workload name and its comparison columns (kernbench.workloads.gqa_pair),
# which the table holds under the same names for either kind of row.
PAIR = "gqa_pair"
LATENCY_RATIO = "opt3_over_opt2_latency"
WINNER = "latency_winner"
# ADR-0064 (Alternatives A2, Test requirement 2), as written there.
ADR_COMMANDS = {"opt3": 10, "opt2": 2}  # ADR-0065: hybrid 10 commands, Option Y 2
ADR_BYTES = {"opt3": "232", "opt2": "380"}  # "opt3 ≈ 232, opt2 ≈ 380"
ADR_RATIO = "2.4"  # "opt3 / opt2 ≈ 2.4× at default calibration"
DEFAULT_FIXED, DEFAULT_RECIP = 32.0, 0.25
VARIANTS = ("opt2", "opt3")


def table(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per calibration: both variants' per-tile figures side by side, and the ratios.

    None when the rows hold neither ok gqa_pair points nor paired ok gqa_opt2 and
    gqa_opt3 points.
    """
    if WORKLOAD not in df or FIXED not in df or RECIP not in df:
        return None
    ok = df[df["status"] == STATUS_OK]
    out = _from_pairs(ok[ok[WORKLOAD] == PAIR])
    if out is None:
        out = _from_variants(ok[ok[WORKLOAD].isin([OPT2, OPT3])])
    return None if out is None else _compared(out)


def _from_variants(ok: pd.DataFrame) -> pd.DataFrame | None:
    """gqa_opt2 and gqa_opt3 rows, one of each per configuration, side by side."""
    if ok.empty or set(ok[WORKLOAD]) != {OPT2, OPT3}:
        return None
    keys = [FIXED, RECIP, *varying_config(ok, exclude=(WORKLOAD, FIXED, RECIP))]
    metrics = [m for m in METRICS if m in ok.columns]
    wide = ok.pivot_table(index=keys, columns=WORKLOAD, values=metrics, aggfunc="first")
    wide = wide.dropna().reset_index()  # a calibration with one variant failed
    if wide.empty:
        return None
    out = pd.DataFrame({k: wide[k] for k in keys})
    for metric in metrics:
        for variant in VARIANTS:
            out[f"{METRICS[metric]}_{variant}"] = wide[(metric, f"gqa_{variant}")].to_numpy()
    return out


def _from_pairs(pairs: pd.DataFrame) -> pd.DataFrame | None:
    """gqa_pair rows: each holds both variants' figures (``opt3_kernel_latency_ns``)."""
    if pairs.empty:
        return None
    keys = [FIXED, RECIP, *varying_config(pairs, exclude=(WORKLOAD, FIXED, RECIP))]
    pairs = pairs.drop_duplicates(keys).sort_values(keys)
    out = pd.DataFrame({k: pairs[k].to_numpy() for k in keys})
    for metric, short in METRICS.items():
        for variant in VARIANTS:
            if f"{variant}_{metric}" in pairs:
                out[f"{short}_{variant}"] = pairs[f"{variant}_{metric}"].to_numpy()
    return out


def _compared(out: pd.DataFrame) -> pd.DataFrame:
    """The ratios beside what they divide: dispatch after the cycles, latency (and the
    faster variant, gqa_pair's rule: tie only when equal) after the latencies."""
    if "cycles_opt3" in out:
        # 0 / 0 at FIXED = R = 0: both dispatch free, so no ratio (NaN, blank).
        ratio = (out["cycles_opt3"] / out["cycles_opt2"]).where(out["cycles_opt2"] > 0)
        out.insert(out.columns.get_loc("cycles_opt3") + 1, RATIO, ratio)
    if "latency_ns_opt3" in out:
        l2, l3 = out["latency_ns_opt2"], out["latency_ns_opt3"]
        at = out.columns.get_loc("latency_ns_opt3") + 1
        out.insert(at, LATENCY_RATIO, l3 / l2)
        out.insert(at + 1, WINNER, np.select([l3 < l2, l2 < l3], ["opt3", "opt2"], "tie"))
    return out


def facets(table: pd.DataFrame) -> list[str]:
    """The keys the claims and plots are per value of: every varying key but the
    calibration (FIXED, R)."""
    return facet_keys(table, (FIXED, RECIP))


def plot(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The heat map (the ADR's ratio as a contour, the default calibration boxed), the
    cycles per tile, the latency / bottleneck plot and the crossover map (the winner and
    the latency ratio, a bar per R where the winner changes); per facet value, the value
    in the file names and titles."""
    paths = []
    for facet in split(table, facets(table)):
        rows, default = facet.rows, (DEFAULT_FIXED, DEFAULT_RECIP)
        paths += draw(rows, out_dir, float(ADR_RATIO), default, facet, crossings(rows))
    return paths


def check(t: pd.DataFrame) -> list[Claim]:
    """Commands and bytes per tile, the ratio at the default calibration, FIXED = 0,
    then where opt3 stops beating opt2; per facet value, each claim naming it."""
    return [
        facet.named(claim)
        for facet in split(t, facets(t))
        for claim in (
            _commands(facet.rows),
            _bytes(facet.rows),
            _default_ratio(facet.rows),
            _no_win_at_zero_fixed(facet.rows),
            _crossover(facet.rows),
        )
    ]


def _commands(t: pd.DataFrame) -> Claim:
    ours = {v: sorted(set(t[f"commands_{v}"])) for v in ADR_COMMANDS}
    holds = all(ours[v] == [n] for v, n in ADR_COMMANDS.items())
    detail = "; ".join(f"{v}: ours {_list(ours[v])} (ADR {ADR_COMMANDS[v]})" for v in ADR_COMMANDS)
    return Claim("commands per KV tile: opt3 10, opt2 2 (ADR-0065)", holds, detail)


def _bytes(t: pd.DataFrame) -> Claim:
    ours = {v: sorted(set(t[f"bytes_{v}"])) for v in ADR_BYTES}
    holds = all(matches_stated(b, ADR_BYTES[v]) for v in ADR_BYTES for b in ours[v])
    detail = "; ".join(f"{v}: ours {_list(ours[v])} (ADR ≈ {ADR_BYTES[v]})" for v in ADR_BYTES)
    text = "logical bytes dispatched per KV tile: opt3 ≈ 232, opt2 ≈ 380 (ADR-0064 A2)"
    why = " (why they differ: docs/explanation/studies.md, Dispatch ratio)"
    return Claim(text, holds, detail + why)


def _default_ratio(t: pd.DataFrame) -> Claim:
    at = t[(t[FIXED] == DEFAULT_FIXED) & (t[RECIP] == DEFAULT_RECIP)]
    ratio = at[RATIO]
    text = (
        f"opt3 / opt2 dispatch ≈ {ADR_RATIO}x at the default calibration"
        f" (FIXED = {DEFAULT_FIXED:g}, R = {DEFAULT_RECIP:g}; ADR-0064 test 2)"
    )
    if ratio.empty:
        return Claim(text, None, "no point at the default calibration")
    detail = f"ours {_list([round(r, 2) for r in ratio])} (ADR ≈ {ADR_RATIO})"
    return Claim(text, all(matches_stated(r, ADR_RATIO) for r in ratio), detail)


def _no_win_at_zero_fixed(t: pd.DataFrame) -> Claim:
    """ "With FIXED = 0, opt2 does not win over opt3": opt2 dispatches no fewer cycles
    per tile than opt3, at every R. The ADR's own bytes make opt3 39% cheaper there."""
    zero = t[t[FIXED] == 0].sort_values(RECIP)
    text = "with FIXED = 0, opt2 does not win over opt3: opt2 dispatch >= opt3's at every R"
    if zero.empty:
        return Claim(text, None, "no FIXED = 0 point")
    d2, d3 = zero["cycles_opt2"], zero["cycles_opt3"]
    parts = [
        f"R={r:g}: {a:g} vs {b:g}" + (f" (opt2 {1 - a / b:.1%} fewer)" if a < b else "")
        for r, a, b in zip(zero[RECIP], d2, d3, strict=True)
    ]
    adr = 1 - float(ADR_BYTES["opt3"]) / float(ADR_BYTES["opt2"])
    detail = "opt2 vs opt3 cycles/tile: " + "; ".join(parts)
    detail += f" (ADR: opt3 {adr:.0%} fewer at every R > 0)"
    return Claim(text, bool((d2 >= d3).all()), detail)


# --- where opt3 stops beating opt2 in latency (issue 55) ------------------------------


def crossings(t: pd.DataFrame) -> list[Crossing]:
    """Per R where the winner changes along FIXED, as far as the grid says
    (:func:`_crossing`); an R without one is left out (:func:`_along_fixed` words it)."""
    found = (_crossing(float(r), part) for r, part in t.groupby(RECIP, sort=True))
    return [c for c in found if c is not None]


def _crossing(recip: float, part: pd.DataFrame) -> Crossing | None:
    """The largest FIXED opt3 is faster at and the smallest opt2 is, at one R, when
    every opt3 win lies below every opt2 win; else None."""
    f3 = part.loc[part[WINNER] == "opt3", FIXED]
    f2 = part.loc[part[WINNER] == "opt2", FIXED]
    if len(f3) and len(f2) and f3.max() < f2.min():
        return Crossing(recip, float(f3.max()), float(f2.min()))
    return None


def _crossover(t: pd.DataFrame) -> Claim:
    """Issue 55's finding as a claim (opt3 wins only while both kernels are DMA-bound),
    and where the winner changes in words: in opt3's dispatch per command, per R, and
    at the default calibration."""
    text = (
        "where opt3 stops beating opt2 in latency: opt3 is faster only while both kernels"
        " are DMA-bound (issue 55)"
    )
    wins = t[t[WINNER] == "opt3"]
    both = wins[(wins["bound_opt2"] == "dma") & (wins["bound_opt3"] == "dma")]
    holds = None if wins.empty else len(both) == len(wins)
    share = "all" if len(both) == len(wins) else "only"
    said = f"opt3 is faster at {len(wins)} of {len(t)} calibrations, {share} {len(both)}"
    said += " of them with both kernels DMA-bound"
    parts = [_in_dispatch(t), "Per R: " + "; ".join(_by_recip(t)), _at_default(t) + f"; {said}"]
    return Claim(text, holds, ". ".join(p for p in parts if p))


def _in_dispatch(t: pd.DataFrame) -> str:
    """The winners in ``FIXED + k·R`` (k: opt3's logical bytes per command, so opt3's
    dispatch per KV tile is its commands x this), and whether one line divides them."""
    ks = set(t["bytes_opt3"] / t["commands_opt3"]) if "bytes_opt3" in t else set()
    if len(ks) != 1:
        return ""
    k = ks.pop()
    at = t[FIXED] + k * t[RECIP]
    opt3, opt2 = at[t[WINNER] == "opt3"], at[t[WINNER] == "opt2"]
    if opt3.empty or opt2.empty:
        return ""
    last, first = opt3.max(), opt2.min()
    said = f"opt3 is faster at FIXED + {k:g}·R (opt3's dispatch per command) up to {last:g},"
    said += f" opt2 from {first:g}"
    if last < first:
        return f"{said}, so one line FIXED + {k:g}·R = c, {last:g} < c <= {first:g}, divides them"
    return f"{said}: no line of that slope divides them, the boundary moves with R"


def _by_recip(t: pd.DataFrame) -> list[str]:
    """``R = 0.25: opt3 up to FIXED = 8, opt2 from 16`` per R, in order."""
    return [f"R = {r:g}: {_along_fixed(float(r), part)}" for r, part in t.groupby(RECIP)]


def _along_fixed(recip: float, part: pd.DataFrame) -> str:
    """Which variant is faster along FIXED at one R, in as few words as the data allow."""
    fixed = {v: sorted(part.loc[part[WINNER] == v, FIXED]) for v in (*VARIANTS, "tie")}
    f2, f3, ties = fixed["opt2"], fixed["opt3"], fixed["tie"]
    crossing = _crossing(recip, part)
    if crossing is not None:
        said = f"opt3 up to FIXED = {crossing.last_opt3:g}, opt2 from {crossing.first_opt2:g}"
    elif f2 and f3:
        said = f"opt3 at FIXED = {_list(f3)}, opt2 at {_list(f2)}"
    else:
        said = f"{'opt3' if f3 else 'opt2'} at every FIXED" if f2 or f3 else "no winner"
    return said + (f", a tie at FIXED = {_list(ties)}" if ties else "")


def _at_default(t: pd.DataFrame) -> str:
    """How much faster the winner is at the ADR's default calibration."""
    at = t[(t[FIXED] == DEFAULT_FIXED) & (t[RECIP] == DEFAULT_RECIP)]
    where = f"At the default calibration (FIXED = {DEFAULT_FIXED:g}, R = {DEFAULT_RECIP:g})"
    if at.empty:
        return f"No point at the default calibration ({DEFAULT_FIXED:g}, {DEFAULT_RECIP:g})"
    ratio = float(at[LATENCY_RATIO].iloc[0])
    if ratio == 1:
        return f"{where} the two take the same time"
    faster, times = ("opt2", ratio) if ratio > 1 else ("opt3", 1 / ratio)
    return f"{where} {faster} is {times:.2f}x faster (opt3 / opt2 latency {ratio:.3f})"


def _list(values: list) -> str:
    return ", ".join(f"{v:g}" for v in values)
