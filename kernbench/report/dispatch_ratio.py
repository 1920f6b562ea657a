"""Study 2, dispatch ratio (DESIGN §5, ADR-0064): ``table``, ``check``, ``plot``.

One row per calibration (FIXED, R) and any other swept key: per GQA variant its
dispatch cycles per KV tile (``cycles_opt2``, ``cycles_opt3``), their ratio
(``ratio_opt3_opt2``), kernel latency (``latency_ns_*``), bottleneck (``bound_*``),
commands and logical bytes per tile (``commands_*``, ``bytes_*``). The claims are
ADR-0064's, as it words them, each with our figure beside the ADR's ("ours 2.77
(ADR ≈ 2.4)"); a figure the ADR gives as "≈ 2.4" holds when ours rounds to it at the ADR's precision
(:func:`~kernbench.report.claims.matches_stated`), never within a looser tolerance
that could pass the opposite.

Any other key that varies (the address model, a key swept by hand) is a facet
(:mod:`~kernbench.report.facets`): the claims are checked, and the plots drawn, per
value, each naming it (``VA: opt3 / opt2 dispatch ...``,
``dispatch_ratio_latency_va.png``), never averaged into one cell or one line.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernbench.report.claims import Claim, matches_stated
from kernbench.report.dispatch_ratio_plots import draw
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
# ADR-0064 (Alternatives A2, Test requirement 2), as written there.
ADR_COMMANDS = {"opt3": 10, "opt2": 2}  # ADR-0065: hybrid 10 commands, Option Y 2
ADR_BYTES = {"opt3": "232", "opt2": "380"}  # "opt3 ≈ 232, opt2 ≈ 380"
ADR_RATIO = "2.4"  # "opt3 / opt2 ≈ 2.4× at default calibration"
DEFAULT_FIXED, DEFAULT_RECIP = 32.0, 0.25
VARIANTS = ("opt2", "opt3")


def table(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per calibration: both variants' per-tile figures side by side, and the ratio.

    None when the rows do not pair ok gqa_opt2 and gqa_opt3 points.
    """
    if WORKLOAD not in df or FIXED not in df or RECIP not in df:
        return None
    ok = df[(df["status"] == STATUS_OK) & df[WORKLOAD].isin([OPT2, OPT3])]
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
        if metric == "dispatch_cycles_per_tile":
            # 0 / 0 at FIXED = R = 0: both dispatch free, so no ratio (NaN, blank).
            out[RATIO] = (out["cycles_opt3"] / out["cycles_opt2"]).where(out["cycles_opt2"] > 0)
    return out


def facets(table: pd.DataFrame) -> list[str]:
    """The keys the claims and plots are per value of: every varying key but the
    calibration (FIXED, R)."""
    return facet_keys(table, (FIXED, RECIP))


def plot(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The heat map (the ADR's ratio as a contour, the default calibration boxed), the
    cycles per tile and the latency / bottleneck plot; per facet value, the value in
    the file names and titles."""
    paths = []
    for facet in split(table, facets(table)):
        paths += draw(facet.rows, out_dir, float(ADR_RATIO), (DEFAULT_FIXED, DEFAULT_RECIP), facet)
    return paths


def check(t: pd.DataFrame) -> list[Claim]:
    """Commands and bytes per tile, the ratio at the default calibration, FIXED = 0;
    per facet value, each claim naming it."""
    return [
        facet.named(claim)
        for facet in split(t, facets(t))
        for claim in (
            _commands(facet.rows),
            _bytes(facet.rows),
            _default_ratio(facet.rows),
            _no_win_at_zero_fixed(facet.rows),
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


def _list(values: list) -> str:
    return ", ".join(f"{v:g}" for v in values)
