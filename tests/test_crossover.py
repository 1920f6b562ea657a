"""Where opt3 stops beating opt2 in latency (issue 55): the dispatch-ratio report's
crossover claim and map, and the comparison as an Optuna objective.

The report tests run on a 4 x 3 grid (FIXED {0, 8, 16, 32} x R {0, 0.25, 0.5}) with
latencies chosen so the boundary is known exactly. opt3 dispatches 10 commands and 348
logical bytes per KV tile, so its dispatch per command is FIXED + 34.8·R (:func:`D`).
opt2 takes 4000 ns everywhere; opt3 3960 ns while D <= 16, then 25 ns more per cycle of
D, so the two are equal at D = 16 + 40 / 25 = 17.6 and opt3 is faster below it:

    D      R = 0    R = 0.25   R = 0.5
    FIXED 0    0       8.7        17.4    (opt3 wins at 17.4 < 17.6)
    FIXED 8    8      16.7        25.4
    FIXED 16  16      24.7        33.4
    FIXED 32  32      40.7        49.4

opt3 wins at 6 cells, the largest D among them 17.4; opt2's smallest D is 24.7 (FIXED
16, R 0.25); per R, opt3 up to FIXED 16, 8 and 0, opt2 from 32, 16 and 8. At the default
calibration (32, 0.25) opt3 takes 3960 + 25 x 24.7 = 4577.5 ns: 1.144x opt2's.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from kernbench.report import dispatch_ratio, load_results
from kernbench.report.cli import main
from kernbench.report.dispatch_ratio_plots import Crossing
from kernbench.results import make_row, write_rows
from kernbench.sweep import MERGED_FILE
from kernbench.workloads.gqa_pair import pair_row
from tests.test_docs import blocks

COST = "topology.pe.attrs.pe_cost_model."
FIXED, RECIP = COST + "fixed_per_cmd_cycles", COST + "byte_cycles_recip"
GRID = list(itertools.product((0.0, 8.0, 16.0, 32.0), (0.0, 0.25, 0.5)))
COMMANDS, BYTES = {"opt2": 2, "opt3": 10}, {"opt2": 332, "opt3": 348}
RATIO, WINNER = "opt3_over_opt2_latency", "latency_winner"
DETAIL = (
    "opt3 is faster at FIXED + 34.8·R (opt3's dispatch per command) up to 17.4, opt2 from"
    " 24.7, so one line FIXED + 34.8·R = c, 17.4 < c <= 24.7, divides them. Per R: R = 0:"
    " opt3 up to FIXED = 16, opt2 from 32; R = 0.25: opt3 up to FIXED = 8, opt2 from 16;"
    " R = 0.5: opt3 up to FIXED = 0, opt2 from 8. At the default calibration (FIXED = 32,"
    " R = 0.25) opt2 is 1.14x faster (opt3 / opt2 latency 1.144); opt3 is faster at 6 of"
    " 12 calibrations, all 6 of them with both kernels DMA-bound"
)


def D(fixed: float, recip: float) -> float:
    """opt3's dispatch cycles per command: FIXED + (348 / 10)·R."""
    return fixed + BYTES["opt3"] / COMMANDS["opt3"] * recip


def figures(fixed: float, recip: float, opt3_ns: float | None = None) -> dict[str, dict]:
    """Both variants' rows at one calibration (the module docstring's latencies unless
    ``opt3_ns`` says otherwise); opt3 is CPU-bound where it is slower than opt2."""
    l3 = 3960 + 25 * max(0.0, D(fixed, recip) - 16) if opt3_ns is None else opt3_ns
    rows = {}
    for variant, latency in (("opt2", 4000.0), ("opt3", l3)):
        rows[variant] = {
            "commands_per_tile": COMMANDS[variant],
            "logical_bytes_per_tile": BYTES[variant],
            "dispatch_cycles_per_tile": COMMANDS[variant] * fixed + BYTES[variant] * recip,
            "kernel_latency_ns": latency,
            "sim_time_ns": latency,
            "bottleneck": "cpu" if latency > 4000 else "dma",
            "n_tiles": 16,
            "active_pe_count": 2,
            "hbm_channels_used": 16,
        }
    return rows


def rows(form: str, changed: dict | None = None) -> list[dict]:
    """The grid as a sweep writes it: gqa_opt2 and gqa_opt3 points (``variants``) or
    gqa_pair points (``pair``); ``changed`` maps (FIXED, R) to opt3's latency there."""
    out = []
    for fixed, recip in GRID:
        both = figures(fixed, recip, (changed or {}).get((fixed, recip)))
        config = {FIXED: fixed, RECIP: recip}
        if form == "pair":
            metrics = pair_row(both["opt2"], both["opt3"])
            out.append(
                make_row({**config, "workload.name": "gqa_pair"}, status="ok", metrics=metrics)
            )
        else:
            for variant, metrics in both.items():
                flat = {**config, "workload.name": f"gqa_{variant}"}
                out.append(make_row(flat, status="ok", metrics=metrics))
    return out


def table(tmp_path: Path, form: str, changed: dict | None = None) -> pd.DataFrame:
    write_rows(rows(form, changed), tmp_path / "results.parquet")
    return dispatch_ratio.table(load_results(tmp_path / "results.parquet"))


def crossover_claim(t: pd.DataFrame):
    *_, claim = dispatch_ratio.check(t)
    assert claim.text.startswith("where opt3 stops beating opt2 in latency")
    return claim


@pytest.mark.parametrize("form", ["variants", "pair"])
def test_the_boundary_is_stated_from_the_grid(tmp_path, form):
    t = table(tmp_path, form)
    opt3 = {(f, r) for f, r in GRID if D(f, r) < 17.6}
    assert set(zip(t[FIXED], t[RECIP], strict=True)) == set(GRID)
    assert {(f, r) for f, r, w in zip(t[FIXED], t[RECIP], t[WINNER], strict=True)
            if w == "opt3"} == opt3  # fmt: skip
    assert set(t[WINNER]) == {"opt2", "opt3"}
    default = t[(t[FIXED] == 32) & (t[RECIP] == 0.25)]
    assert default[RATIO].item() == 4577.5 / 4000
    claim = crossover_claim(t)
    assert (claim.holds, claim.detail) == (True, DETAIL)
    assert 17.4 < 17.6 <= 24.7  # the true crossing lies where the claim says
    assert dispatch_ratio.crossings(t) == [
        Crossing(0.0, 16.0, 32.0),
        Crossing(0.25, 8.0, 16.0),
        Crossing(0.5, 0.0, 8.0),
    ]


def test_pair_rows_and_variant_rows_make_the_same_table(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    variants, pairs = table(tmp_path / "a", "variants"), table(tmp_path / "b", "pair")
    pd.testing.assert_frame_equal(variants, pairs, check_dtype=False)


def test_a_cpu_bound_win_breaks_the_claim(tmp_path):
    """opt3 faster at (0, 0.5) but there CPU-bound: not "only while DMA-bound"."""
    raw = rows("variants")
    for row in raw:
        if (row[FIXED], row[RECIP], row["workload.name"]) == (0.0, 0.5, "gqa_opt3"):
            row["bottleneck"] = "cpu"
    write_rows(raw, tmp_path / "results.parquet")
    claim = crossover_claim(dispatch_ratio.table(load_results(tmp_path / "results.parquet")))
    assert claim.holds is False
    assert claim.detail.endswith("opt3 is faster at 6 of 12 calibrations, only 5 of them with"
                                 " both kernels DMA-bound")  # fmt: skip


def test_a_boundary_no_line_divides_is_given_per_r(tmp_path):
    """opt3 also faster at (8, 0.5), D = 25.4, and slower at (8, 0), D = 8: no line of
    slope 34.8 divides them. At R = 0 opt3 is then faster at FIXED 16 only, with a tie
    at 0: the words list them, and that R gets no crossing bar."""
    changed = {(8.0, 0.5): 3990.0, (8.0, 0.0): 4010.0, (0.0, 0.0): 4000.0}
    t = table(tmp_path, "variants", changed)
    claim = crossover_claim(t)
    assert claim.detail.startswith(
        "opt3 is faster at FIXED + 34.8·R (opt3's dispatch per command) up to 25.4, opt2"
        " from 8: no line of that slope divides them, the boundary moves with R. Per R:"
        " R = 0: opt3 at FIXED = 16, opt2 at 8, 32, a tie at FIXED = 0; R = 0.25: opt3 up"
        " to FIXED = 8, opt2 from 16; R = 0.5: opt3 up to FIXED = 8, opt2 from 16."
    )
    assert dispatch_ratio.crossings(t) == [Crossing(0.25, 8.0, 16.0), Crossing(0.5, 8.0, 16.0)]


def test_the_crossover_map_draws_the_data(tmp_path, monkeypatch):
    """What the map draws (captured before saving): each calibration's marker at its
    (R, FIXED), in the series of the variant that is faster there; the bars where the
    winner changes; the default calibration ringed; its ratio written."""
    import matplotlib.figure

    drawn = {}
    monkeypatch.setattr(
        matplotlib.figure.Figure, "savefig", lambda fig, path, **kw: drawn.update({path: fig})
    )
    dispatch_ratio.plot(table(tmp_path, "pair"), tmp_path)
    fig = drawn[tmp_path / "dispatch_ratio_crossover.png"]
    ax, colorbar = fig.axes
    series = {c.get_label(): {tuple(p) for p in c.get_offsets()} for c in ax.collections}
    opt3 = {(r, f) for f, r in GRID if D(f, r) < 17.6}
    assert series["opt3 faster"] == opt3
    assert series["opt2 faster"] == {(r, f) for f, r in GRID} - opt3
    assert series["default calibration (ADR-0064)"] == {(0.25, 32.0)}
    bars = [(tuple(line.get_xdata()), tuple(line.get_ydata())) for line in ax.lines]
    assert bars == [((0.0, 0.0), (16.0, 32.0)), ((0.25, 0.25), (8.0, 16.0)),
                    ((0.5, 0.5), (0.0, 8.0))]  # fmt: skip
    assert "1.144" in {t.get_text() for t in ax.texts}
    assert colorbar.get_ylabel().startswith("opt3 / opt2 kernel latency")


def test_the_report_of_pair_rows_says_it_and_writes_the_map(tmp_path):
    write_rows(rows("pair"), tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    out = (tmp_path / "report.txt").read_text()
    assert "[HOLDS] where opt3 stops beating opt2 in latency" in out
    assert "== dispatch ratio (12 configurations) ==" in out
    assert (tmp_path / "dispatch_ratio_crossover.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "dispatch_ratio_crossover.svg").is_file()


# --- the comparison as an objective (Optuna, in a subprocess) ---------------------------


def search(tmp_path: Path, *overrides: str) -> tuple[pd.DataFrame, float, str]:
    """An Optuna sweep of ``kernbench``: its rows, its best value, its stderr."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason="needs the optuna extra")
    sweep_dir = tmp_path / "sweep"
    argv = [sys.executable, "-m", "kernbench.app", "-m", *overrides]
    proc = subprocess.run([*argv, f"hydra.sweep.dir={sweep_dir}", "cache=false"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    best = OmegaConf.load(sweep_dir / "optimization_results.yaml").best_value
    return pd.read_parquet(sweep_dir / MERGED_FILE), best, proc.stderr


def test_optuna_minimises_opt3_over_opt2_latency(tmp_path):
    """4 trials over FIXED in [0, 64] on 2 KV tiles: every trial a row whose ratio is
    its two latencies' quotient, and Optuna's best value the least of them."""
    found, best, _ = search(
        tmp_path,
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.sampler.seed=0",
        "workload=gqa_pair",
        "workload.seq_tokens=256",
        "address=pa",
        "objective=opt3_over_opt2_latency",
        f"{FIXED}=interval(0,64)",
    )
    assert len(found) == 4 and (found["status"] == "ok").all()
    quotient = found["opt3_kernel_latency_ns"] / found["opt2_kernel_latency_ns"]
    assert (found[RATIO] == quotient).all()
    assert best == found[RATIO].min()


def test_the_how_to_search_finds_where_the_winner_changes(tmp_path):
    """docs/how-to/search.md's search (read from the page), at 12 trials on 2 KV tiles:
    the ratio rises with FIXED, so the best |ratio - 1| is one of the two trials next
    to where the winner changes among the trials (the last opt3 win or the first
    opt2 win), and the report states that bracket."""
    command = next(
        c for b in blocks() for c in b.commands if "objective=opt3_opt2_latency_gap" in c
    )
    small = [w for w in command[2:] if not w.startswith("hydra.sweeper.n_trials=")]
    found, best, _ = search(tmp_path, *small, "hydra.sweeper.n_trials=12",
                            "workload.seq_tokens=256")  # fmt: skip
    found = found.sort_values(FIXED)
    assert (found[RATIO].diff().dropna() > 0).all()  # rises with FIXED
    last3 = found[found[WINNER] == "opt3"].iloc[-1]
    first2 = found[found[WINNER] == "opt2"].iloc[0]
    assert best == min(last3["opt3_opt2_latency_gap"], first2["opt3_opt2_latency_gap"])
    assert best == found["opt3_opt2_latency_gap"].min()
    report = dispatch_ratio.check(dispatch_ratio.table(found))[-1].detail
    assert f"R = 0.25: opt3 up to FIXED = {last3[FIXED]:g}, opt2 from {first2[FIXED]:g}." in report
