"""``objective`` (issue 22): a run returns a result column to Hydra's optimizing sweepers.

- an Optuna sweep (a subprocess, 4 trials) completes, its best value is the minimum of
  the rows' objective column in ``results.parquet``, every trial is a row, and a point
  that breaks a validation rule is a failed trial while the study goes on;
- the ``design_search`` preset (NSGA-II, two objectives) on 4 trials: Optuna's Pareto
  solutions are the front :mod:`kernbench.report.pareto` finds in the rows, and
  ``kernbench-report`` shows it;
- a single run prints its objective, and the task's return value is the row's;
- an unknown or text objective is one line, exit 1, nothing written;
- the Pareto front of hand-made rows (figures by hand);
- the metric columns declared for the check are those the workloads make.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from kernbench.app import objective_of_run, run_job
from kernbench.config import objective, validate
from kernbench.config.columns import NUMBER, TEXT, metric_columns
from kernbench.errors import ConfigError
from kernbench.report import pareto
from kernbench.results import RESULT_FILE
from kernbench.sweep import MERGED_FILE

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason="needs the optuna extra")

LATENCY = "kernel_latency_ns"
CHANNELS = "hbm_channels_used"
FIXED = "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles"
REPORT = "from kernbench.report.cli import entry; entry()"  # kernbench-report


def sweep(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    sweep_dir = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "kernbench.app", "-m", *overrides, f"hydra.sweep.dir={sweep_dir}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    return proc, sweep_dir


# --- the Optuna sweep -----------------------------------------------------------------


@pytest.mark.slow
def test_optuna_best_value_is_the_rows_minimum_and_a_failed_point_is_a_failed_trial(
    tmp_path,
):
    """4 trials of a GQA kernel, fixed dispatch cost searched in [0, 64] and PEs per cube
    in {2, 3}: 16 pseudo-channels are not divisible by 3, so those points are error
    rows (failed trials). Sampler seed 1 draws both kinds in the 4 trials (checked)."""
    proc, sweep_dir = sweep(
        tmp_path,
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.n_jobs=2",
        "hydra.sweeper.sampler.seed=1",
        "workload=gqa_opt3",
        "topology=small",
        "objective=kernel_latency_ns",
        f"{FIXED}=interval(0,64)",
        "topology.pes_per_cube=choice(2,3)",
        "cache=false",
    )
    rows = pd.read_parquet(sweep_dir / MERGED_FILE)
    assert len(rows) == 4, proc.stderr  # every trial is a row
    errors, ok = rows[rows["status"] == "error"], rows[rows["status"] == "ok"]
    assert len(errors) >= 1 and len(ok) >= 1, rows[["status", "topology.pes_per_cube"]]
    assert errors["error"].str.contains("not divisible by topology.pes_per_cube = 3").all()
    # Optuna's lines and each trial's block are in points.log, not on the terminal
    said = proc.stdout + proc.stderr
    logged = (sweep_dir / "points.log").read_text()
    assert "Failed experiment: Return value must be float-castable. Got 'None'." in logged
    assert "Failed experiment" not in said and "kernel_latency_ns  " not in said
    assert logged.count("kernel_latency_ns  ") == len(ok)  # each ok trial's metrics block
    assert "\x1b[" not in said + logged
    # The study went on to the end and wrote its result; the sweep exits 1 (a point failed).
    result = OmegaConf.load(sweep_dir / "optimization_results.yaml")
    assert result.best_value == ok[LATENCY].min()
    best = ok.loc[ok[LATENCY].idxmin()]
    assert result.best_params[FIXED] == pytest.approx(best[FIXED], rel=1e-12)
    assert result.best_params["topology.pes_per_cube"] == best["topology.pes_per_cube"] == 2
    assert proc.returncode == 1
    assert f"{len(errors)} of 4 sweep points failed" in proc.stderr


@pytest.mark.slow
def test_design_search_front_is_optunas_and_the_report_shows_it(tmp_path):
    """The preset on 4 trials (one NSGA-II generation of 4): the solutions Optuna writes
    are exactly the front of the rows, and kernbench-report prints that front."""
    proc, sweep_dir = sweep(
        tmp_path,
        "hydra/sweeper=optuna",
        "+experiment=design_search",
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.n_jobs=4",
        "hydra.sweeper.sampler.population_size=4",
        "cache=false",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the terminal: a line per batch, the sweep's line and the front's, nothing else
    lines = proc.stdout.splitlines() + proc.stderr.splitlines()
    assert len(lines) == 3, lines
    rows = pd.read_parquet(sweep_dir / MERGED_FILE)
    assert len(rows) == 4 and (rows["status"] == "ok").all()
    assert (rows[CHANNELS] == 2 * rows["topology.cube.memory_map.hbm_channels_per_pe"]).all()
    solutions = OmegaConf.load(sweep_dir / "optimization_results.yaml").solutions
    theirs = sorted(tuple(s["values"]) for s in solutions)
    ours = pareto.front(rows, [LATENCY, CHANNELS])
    assert sorted(set(map(tuple, ours[[LATENCY, CHANNELS]].to_numpy()))) == sorted(set(theirs))
    assert pareto.recorded_objective(sweep_dir) == [LATENCY, CHANNELS]

    report = subprocess.run(
        [sys.executable, "-c", REPORT, str(sweep_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert report.returncode == 0, report.stderr
    written = (sweep_dir / "report.txt").read_text()  # the terminal has the summaries alone
    rows.attrs[pareto.ATTR] = [LATENCY, CHANNELS]
    table = pareto.table(rows)
    assert f"== Pareto front ({len(table)} configurations) ==" in written
    assert (sweep_dir / "report_pareto.png").is_file()
    # One front: the sweep's last line, the report and the plot say the same counts,
    # and its rows are Optuna's solutions (the trials no trial dominates)
    said = table.attrs["describe"]
    assert f"Pareto front: {said} (kernbench-report lists them)" in proc.stdout
    assert f"front: {said}" in written
    assert f"in {len(solutions)} of 4 rows" in said
    points = len(set(theirs))
    assert said.startswith(f"{points} point{'s' * (points != 1)}, reached by {len(table)} ")


def test_an_optimizing_sweeper_without_an_objective_is_one_line(run_app):
    """It used to end in Optuna's "No trials are completed yet" traceback."""
    run = run_app("-m", "hydra/sweeper=optuna", "topology=small")
    assert run.returncode == 1
    assert run.stderr.strip() == (
        "kernbench: error: hydra/sweeper=optuna minimises what each run returns: name a"
        " number column with objective=<column> (e.g. objective=kernel_latency_ns), or use"
        " +experiment=design_search"
    )
    assert run.stdout == ""


def test_a_preset_for_another_sweeper_asks_for_it_on_the_command_line(run_app):
    run = run_app("-m", "+experiment=design_search")
    assert run.returncode == 1
    assert run.stderr.strip() == (
        "kernbench: error: +experiment=design_search runs under hydra/sweeper=optuna: add"
        " hydra/sweeper=optuna to the command line (a preset cannot replace the sweeper"
        " conf/config.yaml chooses)"
    )


def test_every_design_search_value_composes_and_validates(compose_cfg):
    """Each value of the preset's search space, on top of the preset, validates."""
    base = ["hydra/sweeper=optuna", "+experiment=design_search"]
    space = {
        "topology.cube.memory_map.hbm_pseudo_channels": [16, 32, 64, 128],
        "topology.pes_per_cube": [2, 4, 8, 16],
        "channel_mapping": ["n_to_one", "one_to_one"],
        "address": ["pa", "va", "la"],
    }
    for key, values in space.items():
        for value in values:
            cfg = validate(OmegaConf.to_object(compose_cfg(*base, f"{key}={value}")))
            assert cfg.objective == [LATENCY, CHANNELS]
            assert cfg.workload.name == "gqa_opt2"


# --- a single run -----------------------------------------------------------------------


def test_a_single_run_prints_its_objective(run_app):
    run = run_app("workload=gqa_opt2", "topology=small", "objective=[kernel_latency_ns,n_tiles]")
    assert run.returncode == 0, run.stderr
    [row] = run.rows()
    line = f"objective: kernel_latency_ns = {float(row[LATENCY])!r}, n_tiles = 16.0"
    assert line in run.stdout.splitlines()


def test_the_task_returns_the_rows_value(compose_cfg, tmp_path):
    """What the task hands the sweeper: a float for one name, a tuple for more, None
    for an error row; read back from the row as results.parquet holds it."""
    cfg = compose_cfg("workload=gqa_opt2", "topology=small")
    assert run_job(cfg, tmp_path, cache=None) == "ok"
    row = pd.read_parquet(tmp_path / RESULT_FILE).iloc[0]
    assert objective_of_run(tmp_path, LATENCY) == row[LATENCY]
    assert isinstance(objective_of_run(tmp_path, LATENCY), float)
    both = objective_of_run(tmp_path, [LATENCY, CHANNELS])
    assert both == (row[LATENCY], 16.0)  # topology=small: 8 channels per PE, 2 PEs
    bad = tmp_path / "bad"
    assert run_job(compose_cfg("workload=gqa_opt2", "topology.pes_per_cube=7"), bad) == "error"
    assert objective_of_run(bad, LATENCY) is None


def test_objective_value_of_a_row():
    row = {"status": "ok", "a": 3, "b": 2.5, "c": None, "d": float("nan"), "t": "cpu"}
    assert objective.value(row, "a") == 3.0 and isinstance(objective.value(row, "a"), float)
    assert objective.value(row, ["a"]) == 3.0  # one name in a list: a float too
    assert objective.value(row, ["b", "a"]) == (2.5, 3.0)
    assert objective.value(row, ["a", "c"]) is None
    assert objective.value(row, "d") is None
    assert objective.value({**row, "status": "error"}, "a") is None
    assert objective.value(row, None) is None
    assert objective.describe(["b", "a"], (2.5, 3.0)) == "objective: b = 2.5, a = 3.0"


# --- bad objectives: one line ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "kernel_latncy_ns",
            "objective: kernel_latncy_ns is not a column of workload gqa_opt2's rows (its"
            " number columns: n_tiles, active_pe_count, hbm_channels_used,",
        ),
        ("bottleneck", "objective: bottleneck is a text column of workload gqa_opt2's rows"),
        ("address.model", "objective: address.model is a text column"),
        ("[kernel_latency_ns,kernel_latency_ns]", "objective: kernel_latency_ns is named twice"),
        ("[]", "objective: an empty list"),
    ],
)
def test_a_bad_objective_is_one_line_and_nothing_runs(run_app, value, message):
    run = run_app("workload=gqa_opt2", f"objective={value}")
    assert run.returncode == 1
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stderr.startswith(f"kernbench: error: {message}"), run.stderr
    assert not run.run_dir.exists()


def test_an_unknown_objective_lists_the_columns_and_suggests_one(run_app):
    run = run_app("workload=gqa_opt2", "objective=kernel_latncy_ns")
    assert "kernel_latency_ns, sim_time_ns" in run.stderr
    assert run.stderr.rstrip().endswith("; did you mean kernel_latency_ns?")


def test_validation_checks_the_objective_of_the_composed_config(compose_cfg):
    """A preset's objective is not on the command line: validation checks it."""
    cfg = OmegaConf.to_object(compose_cfg("workload=gqa_opt2", "objective=kernel_latncy_ns"))
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert err.value.key == "objective"
    stream = OmegaConf.to_object(compose_cfg("objective=kernel_latency_ns"))
    with pytest.raises(ConfigError, match="not a column of workload stream's rows"):
        validate(stream)
    fine = compose_cfg("workload=gqa_opt2", "objective=[kernel_latency_ns,topology.pes_per_cube]")
    assert validate(OmegaConf.to_object(fine)).objective == [LATENCY, "topology.pes_per_cube"]


def test_the_objective_is_no_column_and_no_part_of_the_cache_key(run_app):
    first = run_app("workload=gqa_opt2", "topology=small", "objective=kernel_latency_ns")
    [row] = first.rows()
    assert "objective" not in row
    again = run_app("workload=gqa_opt2", "topology=small")  # same point: from the cache
    assert again.rows()[0]["cached"] is True


# --- the Pareto front ---------------------------------------------------------------------


def test_dominance_by_hand():
    assert pareto.dominates((1, 2), (1, 3))  # equal in one, better in the other
    assert pareto.dominates((1, 2), (2, 3))
    assert not pareto.dominates((1, 3), (1, 3))  # equal: neither dominates
    assert not pareto.dominates((1, 3), (2, 2))  # better in one, worse in the other
    assert not pareto.dominates((2, 3), (1, 3))


def test_front_of_hand_made_rows():
    """Both minimised. Front: (1, 5), (2, 3) twice (a tie: both stay), (4, 1).
    (2, 4) and (3, 3) are dominated by (2, 3) through one equal objective, (5, 5) by
    all; the error row (0, 0) and the row with a null objective are not candidates."""
    values = [(1, 5), (2, 3), (2, 4), (3, 3), (4, 1), (2, 3), (5, 5), (0, 0), (0, None)]
    df = pd.DataFrame(values, columns=["a", "b"])
    df["status"] = ["ok"] * 7 + ["error", "ok"]
    df["x.name"] = [f"c{i}" for i in range(len(df))]
    got = pareto.front(df, ["a", "b"])
    assert list(got["x.name"]) == ["c0", "c1", "c5", "c4"]
    df.attrs[pareto.ATTR] = ["a", "b"]
    table = pareto.table(df)
    assert table[["a", "b", "x.name"]].values.tolist() == [
        [1, 5, "c0"],
        [2, 3, "c1"],
        [2, 3, "c5"],
        [4, 1, "c4"],
    ]
    # 3 points reached by 4 configurations in 4 of the 8 ok rows
    assert table.attrs["describe"] == "3 points, reached by 4 configurations in 4 of 8 rows"
    single = df.copy()
    single.attrs[pareto.ATTR] = ["a"]  # one objective: a best value, not a front
    assert pareto.table(single) is None


def test_a_maximised_objective_turns_the_front():
    """``b`` maximised (``hydra.sweeper.direction: [minimize, maximize]``): from the same
    rows the front is (1, 5) alone: nothing has a lower a, and every other row's b is
    lower. Minimising a and maximising b of (1, 5), (2, 6), (3, 1): (1, 5) and (2, 6)."""
    df = pd.DataFrame([(1, 5), (2, 3), (4, 1), (5, 5)], columns=["a", "b"])
    df["status"] = "ok"
    both = [pareto.MINIMIZE, pareto.MAXIMIZE]
    assert pareto.front(df, ["a", "b"], both)[["a", "b"]].values.tolist() == [[1, 5]]
    df = pd.DataFrame([(1, 5), (2, 6), (3, 1)], columns=["a", "b"])
    df["status"] = "ok"
    assert pareto.front(df, ["a", "b"], both)[["a", "b"]].values.tolist() == [[1, 5], [2, 6]]
    assert pareto.dominates((2, 6), (3, 1), both) and not pareto.dominates((1, 5), (2, 6), both)
    assert pareto.directions_of("maximize", 2) == [pareto.MAXIMIZE] * 2
    assert pareto.directions_of(None, 2) == [pareto.MINIMIZE] * 2


def test_the_directions_are_read_from_the_sweeps_records(tmp_path):
    assert pareto.recorded_directions(tmp_path, 2) == ["minimize", "minimize"]
    job = tmp_path / "0" / ".hydra"
    job.mkdir(parents=True)
    (job / "hydra.yaml").write_text("hydra:\n  sweeper:\n    direction: [minimize, maximize]\n")
    assert pareto.recorded_directions(tmp_path, 2) == ["minimize", "maximize"]


def test_the_objective_is_read_from_the_sweeps_records(tmp_path):
    assert pareto.recorded_objective(tmp_path) is None
    job = tmp_path / "0" / ".hydra"
    job.mkdir(parents=True)
    (job / "config.yaml").write_text("objective: [a, b]\ncache: true\n")
    assert pareto.recorded_objective(tmp_path) == ["a", "b"]  # the optuna sweeper's jobs
    (tmp_path / "multirun.yaml").write_text("objective: c\n")
    assert pareto.recorded_objective(tmp_path) == ["c"]


# --- the declared columns are the rows' ----------------------------------------------------


WORKLOADS = [
    ("stream", ["topology=small", "workload.bytes_per_pe=65536"]),
    ("gqa_opt2", ["topology=small"]),
    ("gqa_opt3", ["channel_mapping=one_to_one"]),
    ("triton", ["topology=small", "workload.size=1024"]),
    ("decoder_layer", ["topology=small", "workload.hidden=64", "workload.ffn=96"]),
]


@pytest.mark.parametrize(("workload", "overrides"), WORKLOADS)
def test_declared_metric_columns_are_the_rows(compose_cfg, tmp_path, workload, overrides):
    if workload in ("triton", "decoder_layer"):
        pytest.importorskip("triton", reason="needs the triton extra")
    cfg = compose_cfg(f"workload={workload}", *overrides)
    assert run_job(cfg, tmp_path, cache=None) == "ok"
    row = pd.read_parquet(tmp_path / RESULT_FILE).iloc[0].to_dict()
    declared = metric_columns(OmegaConf.to_object(cfg).workload)
    start = list(row).index("error") + 1
    made = list(row)[start : list(row).index("cached")]
    assert made == [c for c in declared if c not in ("sim_wall_s", "wall_s")]
    for name in made:
        kind = TEXT if isinstance(row[name], str) else NUMBER
        assert declared[name] == kind, name
    if workload.startswith("gqa"):  # 2 PEs x 8 channels each (16 / 2, 64 / 8)
        assert row[CHANNELS] == 16
        assert not math.isnan(row[LATENCY])


def test_a_grid_sweep_maximises_what_its_direction_says(tmp_path):
    """kernbench's own sweeper takes ``hydra.sweeper.direction`` as Optuna's does. Three
    points stream 4, 8 and 16 KiB a PE in 4 KiB reads (dispatch free): more bytes take
    strictly more time. Minimising both sim_time_ns and bytes_moved, the front is the
    smallest point alone; maximising bytes_moved, each point trades time for bytes and
    all three are on it. The sweep's last line and the report read the same record."""
    grid = ("topology=small", "pe_cost_model=zero", "address=pa",
            "workload.access_bytes=4096", "workload.bytes_per_pe=4096,8192,16384",
            "objective=[sim_time_ns,bytes_moved]", "cache=false")  # fmt: skip
    said = {}
    for i, direction in enumerate(("minimize", "[minimize,maximize]")):
        (tmp_path / str(i)).mkdir()
        proc, sweep_dir = sweep(tmp_path / str(i), *grid, f"hydra.sweeper.direction={direction}")
        assert proc.returncode == 0, proc.stderr[-2000:]
        said[direction] = [line for line in proc.stdout.splitlines() if "Pareto" in line]
        rows = pd.read_parquet(sweep_dir / MERGED_FILE).sort_values("bytes_moved")
        assert rows["sim_time_ns"].is_monotonic_increasing
        recorded = pareto.recorded_directions(sweep_dir, 2)
        assert recorded == (
            ["minimize"] * 2 if direction == "minimize" else [pareto.MINIMIZE, pareto.MAXIMIZE]
        )
    listed = " (kernbench-report lists them)"
    assert said == {
        "minimize": ["Pareto front: 1 point, reached by 1 configuration in 1 of 3 rows" + listed],
        "[minimize,maximize]": [
            "Pareto front: 3 points, reached by 3 configurations in 3 of 3 rows" + listed
        ],
    }


def test_a_direction_that_is_not_one_is_one_line(tmp_path):
    proc, _ = sweep(tmp_path, "topology=small", "hydra.sweeper.direction=[minimize,max]",
                    "objective=[sim_time_ns,bytes_moved]")  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "kernbench: error: hydra.sweeper.direction: max is not minimize or maximize (one word"
        " for every objective, or a list of one per objective)"
    ]
