"""The app end to end (subprocess) and its row plumbing (in-process), plus the writer."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

import kernbench
from kernbench import simulate
from kernbench.config import flatten, validate
from kernbench.errors import AllocationError
from kernbench.job import error_message, run_job
from kernbench.results import (
    config_columns,
    config_hash,
    git_commit,
    make_row,
    rows_to_table,
    write_rows,
)

STREAM_METRICS = [
    "sim_time_ns",
    "bytes_moved",
    "mean_pe_bw_gbs",
    "aggregate_bw_gbs",
    "peak_bw_per_pe_gbs",
    "peak_aggregate_bw_gbs",
    "peak_pattern_bw_gbs",
    "bw_efficiency",
]
SMALL_RUN = ("topology=small", "workload.bytes_per_pe=1048576")


# --- end to end: needs the simulator core -------------------------------------------


def test_default_stream_run_writes_ok_row(run_app):
    run = run_app(*SMALL_RUN)
    assert run.returncode == 0, run.stderr
    [row] = run.rows()
    assert row["status"] == "ok"
    assert row["error"] is None
    assert [m for m in STREAM_METRICS if m not in row] == []
    assert row["sim_time_ns"] > 0
    assert row["topology.cube.memory_map.hbm_channels_per_pe"] == 8
    assert "sim_time_ns" in run.stdout


def test_console_script_runs(run_app):
    script = Path(sys.executable).parent / "kernbench"
    run = run_app(*SMALL_RUN, command=[str(script)])
    assert run.returncode == 0, run.stderr
    assert [row["status"] for row in run.rows()] == ["ok"]


def test_console_script_rejects_bad_input(run_app):
    script = Path(sys.executable).parent / "kernbench"
    run = run_app("topology.pes_per_cube=3", command=[str(script)])
    assert run.returncode == 1
    assert "topology.pes_per_cube = 3" in run.stderr
    assert run.ok_rows() == []


def test_multirun_keeps_every_bad_point(run_app, tmp_path):
    """One bad point does not stop the sweep: each job leaves its own error row."""
    sweep = tmp_path / "sweep"
    run_app("-m", "topology.pes_per_cube=3,5", f"hydra.sweep.dir={sweep}")
    rows = pq.read_table(sweep / "results.parquet").to_pylist()  # the merged table
    assert [(r["topology.pes_per_cube"], r["status"]) for r in rows] == [(3, "error"), (5, "error")]


# --- in-process: the row the app writes, with the simulator stubbed -------------------


def _stub_metrics(cfg, trace_path=None, observer=None):
    return simulate.RunResult(
        metrics={"sim_time_ns": 10.0, "bytes_moved": cfg.workload.bytes_per_pe}
    )


def test_ok_row_columns_and_identity(compose_cfg, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(simulate, "run_validated", _stub_metrics)
    cfg = compose_cfg(*SMALL_RUN)
    assert run_job(cfg, tmp_path) == "ok"
    table = pq.read_table(tmp_path / "result.parquet")
    [row] = table.to_pylist()
    flat = config_columns(flatten(validate(OmegaConf.to_object(cfg))))
    assert not [k for k in flat if k.startswith("paths.")]
    tail = ["sweep_id", "job_num", "config_hash", "kernbench_version", "git_commit", "build"]
    tail += ["status", "error"]
    assert table.column_names == [*flat, *tail, "sim_time_ns", "bytes_moved", "cached", "wall_s"]
    assert {k: row[k] for k in flat} == flat
    assert row["config_hash"] == config_hash(flat)
    assert row["kernbench_version"] == kernbench.__version__
    assert row["git_commit"] == git_commit()
    assert row["build"] == kernbench.build()  # compiled or pure: tests/test_build.py
    assert (row["status"], row["error"], row["bytes_moved"]) == ("ok", None, 1048576)
    assert row["cached"] is False  # run_job without a cache never serves one
    assert row["wall_s"] >= 0
    assert "bytes_moved" in capsys.readouterr().out


def test_a_point_is_validated_once_and_simulated_as_validated(compose_cfg, monkeypatch, tmp_path):
    """run_job validates (it needs the derived columns for the cache key) and hands
    that config to the simulator, which does not validate it again. Counted by a rule
    added to the table every validation runs. The real simulation still sees the derived
    hbm_channels_per_pe: 16 pseudo-channels over 2 PEs per cube = 8, at 32 GB/s each,
    a peak of 256 GB/s per PE; 4 PEs (1 SIP x 2 cubes x 2) stream 1 MiB each."""
    rules = sys.modules["kernbench.config.validate"]  # the package exports the function

    calls = []
    monkeypatch.setattr(rules, "RULES", [calls.append, *rules.RULES])
    assert run_job(compose_cfg(*SMALL_RUN), tmp_path) == "ok"
    [row] = pq.read_table(tmp_path / "result.parquet").to_pylist()
    assert len(calls) == 1
    assert row["topology.cube.memory_map.hbm_channels_per_pe"] == 16 // 2
    assert row["peak_bw_per_pe_gbs"] == 8 * 32.0
    assert row["bytes_moved"] == 4 * 1048576


def test_simulator_error_becomes_one_line_and_error_row(compose_cfg, monkeypatch, tmp_path, capsys):
    def fail(cfg, trace_path=None, observer=None):
        raise AllocationError("sip0.cube0.pe0 HBM: 4096 bytes requested, 1024 free")

    monkeypatch.setattr(simulate, "run_validated", fail)
    assert run_job(compose_cfg(*SMALL_RUN), tmp_path) == "error"
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "kernbench: error: sip0.cube0.pe0 HBM: 4096 bytes requested, 1024 free"
    ]
    [row] = pq.read_table(tmp_path / "result.parquet").to_pylist()
    assert (row["status"], row["error"]) == (
        "error",
        "sip0.cube0.pe0 HBM: 4096 bytes requested, 1024 free",
    )
    assert "sim_time_ns" not in row


def test_unexpected_error_keeps_its_traceback(compose_cfg, monkeypatch, tmp_path, capsys):
    def crash(cfg, trace_path=None, observer=None):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(simulate, "run_validated", crash)
    assert run_job(compose_cfg(*SMALL_RUN), tmp_path) == "error"
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().endswith("kernbench: error: ZeroDivisionError: bug")
    [row] = pq.read_table(tmp_path / "result.parquet").to_pylist()
    assert row["status"] == "error"


def test_missing_value_is_an_error_row(compose_cfg, tmp_path, capsys):
    assert run_job(compose_cfg("workload.name=???"), tmp_path) == "error"
    assert capsys.readouterr().err.splitlines() == [
        "kernbench: error: workload.name: Structured config of type `StreamWorkloadConfig`"
        " has missing mandatory value: name"
    ]
    [row] = pq.read_table(tmp_path / "result.parquet").to_pylist()
    assert row["status"] == "error"


def test_omegaconf_error_message_is_one_line(compose_cfg):
    with pytest.raises(Exception) as info:
        OmegaConf.to_object(compose_cfg("workload.name=???"))
    message = error_message(info.value)
    assert "\n" not in message and message.startswith("workload.name: ")


# --- the results writer --------------------------------------------------------------


def test_config_hash_ignores_key_order():
    assert config_hash({"a": 1, "b": "x"}) == config_hash({"b": "x", "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert len(config_hash({"a": 1})) == 16


def test_rows_to_table_unifies_types_across_rows():
    rows = [
        make_row({"workload.active_pes": 1, "x": 1}, status="ok", metrics={"m": 1}, wall_s=0.1),
        make_row({"workload.active_pes": "all", "x": 2.5}, status="error", error="boom"),
    ]
    table = rows_to_table(rows)
    assert table.schema.field("workload.active_pes").type == pa.string()
    assert table.schema.field("x").type == pa.float64()
    assert table.schema.field("m").type == pa.int64()
    assert table.column("workload.active_pes").to_pylist() == ["1", "all"]
    assert table.column("m").to_pylist() == [1, None]
    assert table.column_names[-1] == "wall_s"


def test_make_row_rejects_unknown_status():
    with pytest.raises(ValueError):
        make_row({}, status="done")


def test_write_rows_is_atomic(tmp_path):
    path = write_rows([make_row({"a": 1}, status="ok")], tmp_path / "out" / "result.parquet")
    assert [p.name for p in path.parent.iterdir()] == ["result.parquet"]
    assert pq.read_table(path).column("status").to_pylist() == ["ok"]


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    def broken(table, where):
        Path(where).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError):
        write_rows([make_row({"a": 1}, status="ok")], tmp_path / "result.parquet")
    assert list(tmp_path.iterdir()) == []
