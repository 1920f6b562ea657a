"""YAML records are read in bounded time (issue 56, kernbench.records).

A 320-byte ``multirun.yaml`` of nested aliases (the "billion laughs": nine lists of
nine aliases to the list before, 9^9 strings) hung ``kernbench-report`` past 180 s:
``OmegaConf.load`` expands every alias into a node. Every reader of a sweep's records
(the report's recorded objective, resume's ``points.yaml``, the stock merge's job
records) now refuses it in milliseconds, in one line naming the file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from kernbench import records
from kernbench.job import run_job
from kernbench.records import RecordError, read_record
from kernbench.report import pareto
from kernbench.results import write_rows
from kernbench.sweep import MERGED_FILE
from kernbench.sweep.merge import merge_sweep
from tests.test_launchers import command, run_cli

REPORT = "from kernbench.report.cli import entry; entry()"  # kernbench-report
SMALL = ("topology=small", "pe_cost_model=zero", "address=pa", "workload.access_bytes=4096")


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """``a: &a [x, ...]``, ``b: &b [*a, ...]``, ...: ``width ** levels`` strings."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    lines = [f"{names[0]}: &{names[0]} [" + ",".join(['"x"'] * width) + "]"]
    for before, name in zip(names, names[1:], strict=False):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{before}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_the_bomb_is_about_320_bytes():
    assert 300 < len(alias_bomb()) < 340


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (alias_bomb(), "YAML aliases: they would add more than 10,000 nodes"),
        # two aliases a level, 40 levels: 2^40 nodes from 40 short lines
        (
            "l0: &l0 [x, x]\n"
            + "".join(f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]\n" for i in range(1, 40)),
            "YAML aliases: they would add more than 10,000 nodes",
        ),
        ("a: &a [1, *a]\n", "YAML aliases: an alias inside its own anchor"),
        ("a: *nowhere\n", "not YAML at line 1"),
    ],
    ids=["billion-laughs", "doubling", "recursive", "undefined"],
)
def test_a_record_whose_aliases_expand_is_refused_in_milliseconds(tmp_path, text, why):
    path = tmp_path / "multirun.yaml"
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(RecordError) as refused:
        read_record(path)
    assert time.perf_counter() - start < 1.0
    assert str(refused.value).startswith(f"{path}: not read ({why}")
    assert refused.value.path == path


def test_a_few_aliases_and_a_star_in_text_still_read(tmp_path):
    """A hand-written record may share a small list; a ``*`` inside a string is no alias."""
    path = tmp_path / "r.yaml"
    path.write_text('base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\nl: &l [1, 2]\nm: *l\ns: "a*b"\n')
    assert read_record(path) == {
        "base": {"x": 1}, "d": {"x": 1, "y": 2}, "l": [1, 2], "m": [1, 2], "s": "a*b",
    }  # fmt: skip


def test_a_record_past_its_size_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("a: 1\n" * 100)
    with pytest.raises(RecordError, match=r"500 bytes, more than the 100 it may hold"):
        read_record(path, max_bytes=100)
    assert read_record(path, max_bytes=500) == {"a": 1}
    assert records.MAX_BYTES >= 1024 * 1024  # a composed config is ~6 KB


def test_a_sweeps_own_records_read_as_omegaconf_reads_them(tmp_path):
    """The records kernbench and Hydra write hold no alias, and read the same as
    through ``OmegaConf.load`` (its resolvers: ``1e3`` is a float, not text)."""
    out = tmp_path / "sweep"
    proc = run_cli(tmp_path, [*command(out, *SMALL, "workload.bytes_per_pe=4096,8192")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = [out / "multirun.yaml", *sorted((out / ".hydra").rglob("*.yaml"))]
    assert len(found) >= 3
    for path in found:
        assert "*" not in path.read_text() and "&" not in path.read_text(), path
        assert read_record(path) == OmegaConf.to_container(OmegaConf.load(path)), path
    floats = tmp_path / "f.yaml"
    floats.write_text("a: 1e3\nb: '1e3'\n")
    assert read_record(floats) == OmegaConf.to_container(OmegaConf.load(floats))


def _sweep_with_rows(compose_cfg, where: Path) -> None:
    """``where/results.parquet`` of two real stream points."""
    rows: list[dict] = []
    for size in (4096, 8192):
        cfg = compose_cfg(*SMALL, f"workload.bytes_per_pe={size}")
        assert run_job(cfg, where, rows=rows) == "ok"
    write_rows(rows, where / MERGED_FILE)


def test_the_report_notes_an_alias_bomb_in_one_line_and_goes_on(compose_cfg, tmp_path):
    """The acceptance check: the bomb as a sweep's multirun.yaml beside a valid table.
    The recorded objective is optional, so the report says in one line that it did not
    read the file and why, and reports the table (exit 0) within seconds."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    _sweep_with_rows(compose_cfg, sweep)
    (sweep / "multirun.yaml").write_text(alias_bomb())
    argv = [sys.executable, "-c", REPORT, str(sweep)]  # kernbench-report DIR
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.splitlines() == [
        f"kernbench-report: note: {sweep / 'multirun.yaml'}: not read (YAML aliases: they"
        " would add more than 10,000 nodes, where kernbench's own records hold none); the"
        " report has no Pareto front"
    ]
    assert (sweep / "report.txt").is_file()


def test_the_recorded_objective_and_directions_fall_back_on_a_bomb(tmp_path, capsys):
    (tmp_path / "multirun.yaml").write_text(alias_bomb())
    assert pareto.recorded_objective(tmp_path) is None
    assert pareto.recorded_directions(tmp_path, 2) == ["minimize", "minimize"]
    assert pareto.recorded_directions(tmp_path, 0) == []  # nothing to read, nothing said
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 2 and all("YAML aliases" in line for line in said)
    assert said[1].endswith("; every objective is taken as minimised")


def test_resume_refuses_a_points_yaml_bomb_in_one_line(tmp_path):
    """``.hydra/points.yaml`` is read through the same reader: the bomb is a damaged
    record (one line, exit 1); with resume=true a warning, and every point runs."""
    out = tmp_path / "sweep"
    (out / ".hydra").mkdir(parents=True)
    (out / ".hydra" / "points.yaml").write_text(alias_bomb() + "# 9 points\n")
    grid = (*SMALL, "workload.bytes_per_pe=4096,8192", "cache=false")
    refused = run_cli(tmp_path, command(out, *grid))
    assert refused.returncode == 1
    lines = [line for line in refused.stderr.splitlines() if line.startswith("kernbench:")]
    assert lines == [
        f"kernbench: error: hydra.sweep.dir: {out / '.hydra' / 'points.yaml'} is damaged"
        " (YAML aliases: they would add more than 10,000 nodes, where kernbench's own"
        " records hold none); rerun with hydra.sweeper.resume=true to keep the rows that"
        f" are this grid's and run the rest, or delete {out} to start over"
    ]
    resumed = run_cli(tmp_path, command(out, *grid, "hydra.sweeper.resume=true"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "points.yaml is damaged (YAML aliases:" in resumed.stdout + resumed.stderr
    assert "sweep: 2 points, 2 ok, 0 error" in resumed.stdout + resumed.stderr


@pytest.mark.timeout(30)
def test_the_stock_merge_reads_a_jobs_bomb_without_expanding_it(tmp_path):
    """A job that wrote no result gets an error row built from its saved config: a bomb
    there is left out and said in the row's error, instead of hanging the merge."""
    job = tmp_path / "0" / ".hydra"
    job.mkdir(parents=True)
    (job / "config.yaml").write_text(alias_bomb())
    (job / "hydra.yaml").write_text("hydra:\n  job:\n    num: 0\n")
    outcome = merge_sweep(tmp_path)
    assert (outcome.n_rows, outcome.n_errors) == (1, 1)
    [row] = pq.read_table(outcome.path).to_pylist()
    assert "job wrote no result.parquet" in row["error"]
    assert "config.yaml: not read (YAML aliases:" in row["error"]
