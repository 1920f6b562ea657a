"""Issue 36, bad input: each case is one line naming the key, a non-zero exit, no
traceback and nothing that looks like a success (DESIGN §7).

Where the answer comes before Hydra runs (the override pre-check) the test calls it in
this process; where it is the run's or the sweep's own, one ``kernbench`` subprocess
per case, on the small topology with a few KB per PE.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import OmegaConf

from kernbench.cli.entry import before_hydra
from kernbench.cli.grid import grid_argv
from kernbench.config.store import conf_dir, experiments_dir, register_configs
from kernbench.errors import ConfigError
from kernbench.sweep import MERGED_FILE
from kernbench.sweep.outputs import location_key
from kernbench.sweep.plan import Planner, screen
from kernbench.sweep.sweeper import FastSweeper, check_point, count_points
from tests.test_launchers import environment, run_cli

register_configs()  # as importing kernbench.app does: the pre-check lists the presets

TINY = ("topology=small", "pe_cost_model=zero", "address=pa", "workload.bytes_per_pe=8192",
        "workload.access_bytes=4096", "cache=false")  # fmt: skip


@pytest.fixture
def plan_of():
    """``plan_of(jobs)``: the fast sweep's plan of ``jobs`` (lists of overrides), made
    in this process on the real conf/ as the sweeper makes it."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        loader = GlobalHydra.instance().hydra.config_loader
        master = loader.load_configuration("config", [], RunMode.MULTIRUN)
        yield lambda jobs: Planner(loader, master).plan(jobs)


def kernbench(tmp_path: Path, *args: str):
    """``kernbench ARGS`` run from ``tmp_path`` (relative outputs land there)."""
    return run_cli(tmp_path, [sys.executable, "-m", "kernbench.app", *args])


def only_line(stderr: str) -> str:
    """The one line a bad input prints: no traceback, no second line."""
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize(
    ("args", "where"),
    [([], "/proc/self/20"), (["-m", "workload.seed=0,1"], "/proc/self/multirun")],
    ids=["run", "sweep"],
)
def test_an_output_root_where_nothing_can_be_made_is_one_line(tmp_path, args, where):
    """/proc/self is a directory in which mkdir says ENOENT, not one of the errors a
    full or read-only disk gives: it was a 21-line traceback (exit 1, Hydra's)."""
    proc = kernbench(tmp_path, *args, *TINY, "paths.root=/proc/self")
    assert proc.returncode == 1
    line = only_line(proc.stderr)
    assert line.startswith(f"kernbench: error: paths.root: cannot write {where}"), line
    assert line.endswith(": No such file or directory")
    assert not list(tmp_path.rglob("*.parquet"))


@pytest.mark.parametrize(
    ("kind", "task", "hydra", "key"),
    [
        ("run", [], [], "paths.root"),  # nothing set: where outputs go by default
        ("run", ["paths.root=/x"], ["hydra.run.dir=/y"], "hydra.run.dir"),
        ("sweep", ["paths.root=/x", "paths.sweep_name=s"], [], "paths.root"),
        ("sweep", ["+paths.sweep_dir=/x"], [], "paths.sweep_dir"),
        # the lines are read as typed: ${nowhere} would raise if resolved
        ("sweep", ["workload.seed=${nowhere}", "paths.root=/x"], [], "paths.root"),
    ],
)
def test_the_line_names_the_most_specific_location_key_set(kind, task, hydra, key):
    config = OmegaConf.create({"hydra": {"overrides": {"task": task, "hydra": hydra}}})
    assert location_key(config, kind) == key


def refused_before_hydra(capsys, *argv: str) -> str:
    """The one line ``kernbench ARGV`` prints before Hydra runs (exit 1)."""
    with pytest.raises(SystemExit) as info:
        before_hydra(list(argv))
    assert info.value.code == 1
    return only_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (  # Hydra's lexer stops at the newline; the line quotes the override
            "workload.access_bytes=40\n96",
            "workload.access_bytes=40\\n96: LexerNoViableAltException: workload.access_bytes=40",
        ),
        ("workload.op='re\nad'", "workload.op=re\\nad: not one of read, write, copy"),
        ("+experiment='bw\r\n'", "experiment=bw\\r\\n: no such option; experiment options:"),
    ],
    ids=["unquoted", "quoted", "crlf"],
)
def test_a_value_with_a_newline_is_one_line(capsys, override, line):
    """The line quotes the value with the newline escaped (it was printed as is: two
    lines, the second a fragment of the value and the message)."""
    assert refused_before_hydra(capsys, "-m", override).startswith(f"kernbench: error: {line}")


@pytest.mark.parametrize(
    "override",
    ["sim.trace=2", "sim.trace=-1", "sim.oplog=yes", "sim.fast_dma=0", "cache=on",
     "hydra.sweeper.resume=1", "hydra.sweeper.dry_run=n"],
)  # fmt: skip
def test_a_boolean_key_takes_only_true_or_false(capsys, override):
    """OmegaConf takes any integer, and yes/no/on/off/y/n/"1"/"0", as a boolean:
    sim.trace=2 and -1 ran as true, while cache=maybe was refused."""
    key, _, value = override.partition("=")
    line = refused_before_hydra(capsys, "-m", override)
    assert line == f"kernbench: error: {key}={value}: not true or false"


def test_true_and_false_in_any_case_are_booleans():
    from kernbench.cli.precheck import check_overrides

    check_overrides(["sim.trace=true", "sim.oplog=False", "cache=TRUE", "sim.trace=true,false"])


def test_a_boolean_in_a_presets_grid_is_refused_before_any_point(plan_of):
    """A preset's ``hydra.sweeper.params`` reach the sweep as lines the pre-check never
    sees: the sweep's screen refuses the point (a dry run lists it invalid)."""
    plan = plan_of([["sim.trace=false"], ["topology=small", "sim.trace=2"]])
    with pytest.raises(ConfigError) as info:
        screen(plan)
    assert info.value.key == "sim.trace"
    assert str(info.value) == (
        "sim.trace: 2 is not true or false (sweep point #1: topology=small sim.trace=2)"
    )
    assert check_point(plan, plan.points[0], kernbench=True) is None  # as a dry run checks
    assert check_point(plan, plan.points[1], kernbench=True) == "sim.trace: 2 is not true or false"


def test_an_interpolation_that_does_not_resolve_is_refused_before_any_point(tmp_path):
    """``-m workload.access_bytes=4096,${nowhere}`` ran the valid point and made the
    other an error row, exit 1 with a results.parquet; now nothing runs or is written."""
    sweep = tmp_path / "sweep"
    proc = kernbench(tmp_path, "-m", *TINY, "workload.access_bytes=4096,${nowhere}",
                     f"hydra.sweep.dir={sweep}")  # fmt: skip
    assert proc.returncode == 1
    assert only_line(proc.stderr).startswith(
        "kernbench: error: workload.access_bytes: ${nowhere} does not resolve: Interpolation"
        " key 'nowhere' not found (sweep point #1: "
    )
    assert not sweep.exists()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("workload.access_bytes=${paths.root}", "Value 'outputs' of type 'str' could not be"),
        ("workload.access_bytes=${oops:x}", "Unsupported interpolation type oops"),
        ("topology.links={pcie_bw_gbs: ${nowhere}}", "Interpolation key 'nowhere' not found"),
    ],
    ids=["wrong type", "no such resolver", "inside a node"],
)
def test_each_kind_of_unresolvable_interpolation_names_its_key(plan_of, line, reason):
    key, _, value = line.partition("=")
    plan = plan_of([["workload.seed=0"], [line]])
    with pytest.raises(ConfigError) as info:
        screen(plan)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: {value} does not resolve: ")
    assert reason in str(info.value)


def test_an_interpolation_that_reads_a_value_the_point_sets_is_not_refused(plan_of):
    """On its own ``${workload.active_pes}`` reads 'all', not an integer; the point
    sets it to 4 (the stock sweeper composes the whole point: it runs there)."""
    plan = plan_of([["workload.active_pes=4", "workload.access_bytes=${workload.active_pes}"]])
    screen(plan)
    assert plan.task_config(plan.points[0]).workload.access_bytes == 4


def test_a_key_in_the_presets_grid_and_on_the_command_line_is_one_axis(capsys):
    """The command line's value wins, as in Hydra's basic sweeper; the dry run's count
    and the 1,000,000-point limit counted both axes (here 2,000,000 x 2 x 2: refused,
    though the sweep is 2 x 2 points)."""
    grid = {"workload.seed": "range(0,2000000)", "workload.access_bytes": "512,4096"}
    sweeper = FastSweeper(params=grid, dry_run=True)
    sweeper.hydra_context = SimpleNamespace(config_loader=None)
    [batch] = sweeper.batches(["workload.seed=0,1"])
    assert batch == [
        [f"workload.seed={seed}", f"workload.access_bytes={size}"]
        for seed in (0, 1)
        for size in (512, 4096)
    ]
    assert capsys.readouterr().out == "dry run: 4 points; composing and checking each\n"


def test_the_readme_presets_count_with_a_grid_changed_on_the_command_line():
    """bw_equivalence: a grid of 1,008 points (3 seeds; 624 run, each deterministic
    pattern once), 3 access sizes; two on the command line make 672."""
    params = OmegaConf.load(experiments_dir() / "bw_equivalence.yaml").hydra.sweeper.params
    lines = [f"{key}={value}" for key, value in params.items()]
    parse = OverridesParser.create().parse_overrides
    assert count_points(parse(lines), 10**6) == 1008
    assert count_points(parse([*lines, "workload.access_bytes=4352,65536"]), 10**6) == 672
    assert count_points(parse([*lines, "workload.access_bytes=4096"]), 10**6) == 336


# The README's way to change a preset's grid ("Study presets"), as written there.
README_GRID = "hydra.sweeper.params.workload.access_bytes=4352,65536"


def test_the_readmes_preset_grid_override_runs(tmp_path):
    """It was refused by Hydra ("Sweeping over Hydra's configuration is not supported";
    quoted: "Key 'workload' is not in struct"). The other axes are narrowed the same
    way, to one value each, so the run is 2 points."""
    sweep = tmp_path / "sweep"
    narrowed = {"channel_mapping": "n_to_one", "topology.pes_per_cube": "4",
                "topology.cube.memory_map.hbm_pseudo_channels": "32", "traffic": "local",
                "sim.fabric": "fair"}  # fmt: skip
    proc = kernbench(tmp_path, "-m", "+experiment=bw_equivalence", README_GRID,
                     *(f"hydra.sweeper.params.{k}={v}" for k, v in narrowed.items()),
                     "workload.bytes_per_pe=65536", "cache=false",
                     f"hydra.sweep.dir={sweep}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pq.read_table(sweep / MERGED_FILE).to_pylist()
    assert [(r["workload.access_bytes"], r["status"]) for r in rows] == [
        (4352, "ok"),
        (65536, "ok"),
    ]
    assert {r["topology.cube.memory_map.hbm_mapping_mode"] for r in rows} == {"n_to_one"}


def test_a_grid_entry_set_on_the_command_line_replaces_the_presets_axis_in_place():
    """Hydra is handed the entry's own line (a quoted value: its content), which the
    sweeper takes in place of the preset's entry: the same points, in the preset's
    order, as if the preset's YAML said 4352,65536; a key it lacks is a new axis."""
    argv = ["-m", "+experiment=bw_equivalence", README_GRID,
            "hydra.sweeper.params.workload.seed='0,1'", "workload.outstanding=2"]  # fmt: skip
    rewritten = grid_argv(argv, argv[1:])
    assert rewritten == ["-m", "+experiment=bw_equivalence", "workload.access_bytes=4352,65536",
                         "workload.seed=0,1", "workload.outstanding=2"]  # fmt: skip
    preset = OmegaConf.load(experiments_dir() / "bw_equivalence.yaml").hydra.sweeper.params
    edited = {**preset, "workload.access_bytes": "4352,65536", "workload.seed": "0,1"}
    sweeper = FastSweeper(params=dict(preset))
    sweeper.hydra_context = SimpleNamespace(config_loader=None)
    [points] = sweeper.batches(rewritten[2:])
    assert len(points) == 224 * 2
    assert points == [[*p, "workload.outstanding=2"] for p in grid_points(edited)]
    single = ["+experiment=bw_equivalence", "hydra.sweeper.params.traffic=local"]
    assert before_hydra(single) == single  # a single run reads no grid: left to Hydra
    assert before_hydra(argv) == rewritten


def grid_points(params: dict) -> list[list[str]]:
    """The points a grid alone gives, in order (Hydra's basic sweeper's product)."""
    axes = [[f"{k}={v}" for v in str(values).split(",")] for k, values in params.items()]
    return [list(p) for p in itertools.product(*axes)]


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "hydra.sweeper.params.workload.acess_bytes=512,4096",
            "workload.acess_bytes: no such key; did you mean workload.access_bytes?"
            " (kernbench --help lists every key)",
        ),
        ("hydra.sweeper.params.sim.trace=true,2", "sim.trace=2: not true or false"),
    ],
    ids=["typo", "boolean"],
)
def test_a_grid_entry_on_the_command_line_is_checked_as_any_override(capsys, override, line):
    line_printed = refused_before_hydra(capsys, "-m", "+experiment=bw_equivalence", override)
    assert line_printed == f"kernbench: error: {line}"


DRY = "hydra.sweeper.dry_run=true"


@pytest.mark.parametrize(
    ("grid", "status"),
    [("workload.outstanding=1,2", 0), ("workload.outstanding=1,99", 1)],
    ids=["valid", "invalid"],
)
def test_a_dry_run_into_a_closed_pipe_stops_quietly(tmp_path, grid, status):
    """``kernbench -m ... dry_run=true | head`` where head has gone: no BrokenPipeError
    traceback, and the dry run's own status (1: a point is invalid), as kernbench
    --keys and kernbench-report do. The pipe's reader is closed before the run starts,
    so the first line written meets it, whatever the timing."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kernbench.app", "-m", *TINY, grid, DRY],
            cwd=tmp_path, env=environment(), stdout=write, stderr=subprocess.PIPE, text=True,
            timeout=300,
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.returncode == status, proc.stderr[-2000:]
    expected = "kernbench: error: 1 of 2 sweep points are invalid\n" if status else ""
    assert proc.stderr == expected
