"""The point cache: exact round trips, a stable key, and bad entries recomputed.

Unit tests drive :class:`kernbench.sweep.cache.PointCache` directly; the run_job tests
use a real (tiny) simulation in-process with the cache in ``tmp_path``, counting how
often the simulator really ran; the last tests run the ``kernbench`` command itself.
"""

from __future__ import annotations

import json
import logging
import math
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

import kernbench
from kernbench import simulate
from kernbench.config import flatten
from kernbench.job import must_simulate, run_job
from kernbench.results import config_columns
from kernbench.sweep import cache as cache_mod
from kernbench.sweep.cache import PointCache, point_key

METRICS = {"sim_time_ns": 62.0, "bytes_moved": 4096, "bw": 4096 / 62, "name": "x", "ok": True}
SMALL = (
    "topology=small",
    "pe_cost_model=zero",
    "workload.bytes_per_pe=4096",
    "workload.access_bytes=4096",
)


def entry_files(root):
    return sorted(p for p in root.rglob("*.json"))


def test_round_trip_is_exact_and_keeps_column_order(tmp_path):
    store = PointCache(tmp_path)
    assert store.load("ab" * 32) is None
    metrics = {**METRICS, "nan": math.nan, "inf": math.inf, "none": None}
    assert store.store("ab" * 32, metrics)
    back = store.load("ab" * 32).metrics
    assert list(back) == list(metrics)
    assert back["bw"] == 4096 / 62 and back["bytes_moved"] == 4096
    assert type(back["bytes_moved"]) is int and back["ok"] is True
    assert math.isnan(back["nan"]) and back["inf"] == math.inf and back["none"] is None
    assert [p.relative_to(tmp_path).as_posix() for p in entry_files(tmp_path)] == [
        f"ab/{'ab' * 32}.json"
    ]


@pytest.mark.parametrize("cut", [0, 1, 40, -2])
def test_truncated_entry_is_discarded(tmp_path, caplog, cut):
    store, key = PointCache(tmp_path), "cd" * 32
    store.store(key, METRICS)
    path = store.path(key)
    text = path.read_text()
    path.write_text(text[:cut] if cut >= 0 else text[:cut])
    with caplog.at_level(logging.WARNING):
        assert store.load(key) is None
    assert "discarding bad entry" in caplog.text
    assert not path.exists()  # removed, so the recomputed point is stored afresh
    assert store.store(key, METRICS) and store.load(key).metrics == METRICS


def test_damaged_value_fails_the_checksum(tmp_path):
    store, key = PointCache(tmp_path), "ef" * 32
    store.store(key, METRICS)
    entry = json.loads(store.path(key).read_text())
    entry["metrics"]["sim_time_ns"] = 63.0  # still valid JSON, wrong number
    store.path(key).write_text(json.dumps(entry))
    assert store.load(key) is None


def test_entry_under_another_key_is_not_served(tmp_path):
    store = PointCache(tmp_path)
    store.store("01" * 32, METRICS)
    other = store.path("02" * 32)
    other.parent.mkdir(parents=True)
    other.write_text(store.path("01" * 32).read_text())
    assert store.load("02" * 32) is None


def test_non_scalar_metrics_are_not_stored(tmp_path):
    store = PointCache(tmp_path)
    assert not store.store("aa" * 32, {"per_pe": [1.0, 2.0]})
    assert entry_files(tmp_path) == []


def test_key_is_order_free_and_changes_with_config_version_and_code(monkeypatch):
    cols = {"a": 1, "b": "x", "c": 0.5}
    key = point_key(cols)
    assert key == point_key(dict(reversed(cols.items())))
    assert key != point_key({**cols, "c": 0.25})
    monkeypatch.setattr(kernbench, "__version__", "9.9.9")
    assert point_key(cols) != key
    monkeypatch.undo()
    monkeypatch.setattr(cache_mod, "source_fingerprint", lambda: "edited")
    assert point_key(cols) != key


def test_key_ignores_locations_and_the_cache_flag(compose_cfg):
    def key(*overrides):
        cfg = OmegaConf.to_object(compose_cfg(*SMALL, *overrides))
        return point_key(config_columns(flatten(cfg)))

    assert key() == key("cache=false") == key("paths.root=/elsewhere")
    assert key() != key("workload.access_bytes=1024")


@pytest.fixture
def counted(monkeypatch):
    """Count real simulations."""
    calls = []
    real = simulate.run_validated

    def run(cfg, *args, **kwargs):
        calls.append(cfg)
        return real(cfg, *args, **kwargs)

    monkeypatch.setattr(simulate, "run_validated", run)
    return calls


def row(out_dir):
    [r] = pq.read_table(out_dir / "result.parquet").to_pylist()
    return r


def test_run_job_serves_the_second_run_and_recomputes_a_truncated_entry(
    compose_cfg, counted, tmp_path
):
    cfg, store = compose_cfg(*SMALL), PointCache(tmp_path / "cache")
    assert run_job(cfg, tmp_path / "1", cache=store) == "ok"
    assert run_job(cfg, tmp_path / "2", cache=store) == "ok"
    assert len(counted) == 1
    first, second = row(tmp_path / "1"), row(tmp_path / "2")
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["sim_wall_s"] is None and first["sim_wall_s"] > 0
    volatile = {"cached", "sim_wall_s", "wall_s"}
    assert {k: v for k, v in first.items() if k not in volatile} == {
        k: v for k, v in second.items() if k not in volatile
    }

    [entry] = entry_files(tmp_path / "cache")
    entry.write_bytes(entry.read_bytes()[:-10])  # a partial write
    assert run_job(cfg, tmp_path / "3", cache=store) == "ok"
    assert len(counted) == 2 and row(tmp_path / "3")["cached"] is False
    assert row(tmp_path / "3")["sim_time_ns"] == first["sim_time_ns"]
    assert run_job(cfg, tmp_path / "4", cache=store) == "ok"  # stored afresh
    assert len(counted) == 2 and row(tmp_path / "4")["cached"] is True


def test_errors_and_traced_runs_are_not_cached(compose_cfg, counted, tmp_path):
    store = PointCache(tmp_path / "cache")
    bad = compose_cfg(*SMALL, "topology.pes_per_cube=3")  # 16 channels over 3 PEs
    assert run_job(bad, tmp_path / "bad", cache=store) == "error"
    assert not (tmp_path / "cache").exists()
    traced = compose_cfg(*SMALL, "sim.trace=true")
    for name in ("t1", "t2"):
        (tmp_path / name).mkdir()  # Hydra makes the job directory before the job
        assert run_job(traced, tmp_path / name, cache=store) == "ok"
        assert (tmp_path / name / "trace.parquet").is_file()
    assert len(counted) == 2 and not (tmp_path / "cache").exists()


def test_command_caches_under_outputs_and_cache_false_turns_it_off(run_app, tmp_path):
    first = run_app(*SMALL)
    second = run_app(*SMALL)
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    # run_app reuses one run directory, so each run's row is read right after it.
    assert "(from the point cache)" in second.stdout
    [row_] = second.rows()
    assert row_["cached"] is True
    assert len(entry_files(tmp_path / "outputs" / "cache")) == 1

    off = run_app(*SMALL, "cache=false")
    assert off.returncode == 0, off.stderr
    [row_] = off.rows()
    assert row_["cached"] is False and row_["sim_wall_s"] > 0
    assert "cache" not in row_  # a run option, not a result column


def test_an_unwritable_cache_does_not_fail_the_point(compose_cfg, tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    store = PointCache(blocker)
    assert run_job(compose_cfg(*SMALL), tmp_path / "run", cache=store) == "ok"
    assert row(tmp_path / "run")["cached"] is False


def test_points_that_want_more_than_metrics_are_always_simulated():
    def cfg(**sim):
        return SimpleNamespace(sim=SimpleNamespace(**{"trace": False, **sim}))

    assert not must_simulate(cfg())
    assert must_simulate(cfg(trace=True))
    assert must_simulate(cfg(measure_speed=True))
    assert not must_simulate(cfg(measure_speed=False))


def _forged(store, key, metrics):
    """An entry whose checksum matches ``metrics``, whatever they hold (a list has no
    checksum of the cache's kind: any will do)."""
    checksum = cache_mod._checksum(metrics, []) if isinstance(metrics, dict) else "0" * 64
    entry = {"key": key, "checksum": checksum, "metrics": metrics, "launches": []}
    path = store.path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry))


@pytest.mark.parametrize(
    "metrics",
    [
        {**METRICS, "sim_time_ns": "62"},  # text for a time
        {**METRICS, "mean_pe_bw_gbs": math.nan},  # NaN bandwidth
        {**METRICS, "bytes_moved": math.inf},
        {**METRICS, "bytes_moved": True},  # a bool is not a size
        {**METRICS, "per_pe": [1.0, 2.0]},  # not a scalar
        [1, 2, 3],  # not a mapping
    ],
    ids=["text time", "nan bw", "inf bytes", "bool bytes", "list", "not a mapping"],
)
def test_an_entry_whose_checksum_matches_but_holds_no_result_is_recomputed(
    tmp_path, caplog, metrics
):
    store, key = PointCache(tmp_path), "ab" * 32
    _forged(store, key, metrics)
    with caplog.at_level(logging.WARNING):
        assert store.load(key) is None
    assert "discarding bad entry" in caplog.text
    assert not store.path(key).exists()


def test_an_entry_nested_deeper_than_python_parses_is_recomputed(tmp_path):
    """Deeply nested JSON raised RecursionError on every rerun."""
    store, key = PointCache(tmp_path), "cd" * 32
    path = store.path(key)
    path.parent.mkdir(parents=True)
    path.write_text('{"key": "x", "metrics": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert store.load(key) is None
    assert not path.exists()


@pytest.mark.parametrize(
    "forge",
    [
        lambda m: {},  # empty: was served as an ok row without metrics, then an error row
        lambda m: {**m, "accesses": "64"},  # text in a number column: the column turned text
        lambda m: {**m, "sim_time_ns": -m["sim_time_ns"]},  # a negative time was served
        lambda m: {**m, "made_up_gbs": 1.0},  # an unknown metric became a column
        lambda m: {k: v for k, v in m.items() if k != "bw_fairness"},  # one missing
        lambda m: {**m, "busiest_link": 3},  # a number where text is declared
    ],
    ids=["empty", "text number", "negative time", "unknown", "missing", "number text"],
)
def test_a_forged_entry_is_checked_against_the_declared_columns_and_recomputed(
    compose_cfg, tmp_path, caplog, forge
):
    """Issue 36: an entry that passes its checksum was trusted whatever it held. Each
    forgery here has a matching checksum and plain scalars; against the stream's
    declared metric columns (kernbench.config.columns) it is discarded with a warning
    and the point simulated again: one ok row, the same metrics as the first run."""
    cfg, store = compose_cfg(*SMALL), PointCache(tmp_path / "cache")
    assert run_job(cfg, tmp_path / "1", cache=store) == "ok"
    first = row(tmp_path / "1")
    [entry] = entry_files(tmp_path / "cache")
    stored = json.loads(entry.read_text())
    key = stored["key"]
    _forged(store, key, forge(stored["metrics"]))
    with caplog.at_level(logging.WARNING):
        assert run_job(cfg, tmp_path / "2", cache=store) == "ok"
    assert "discarding bad entry" in caplog.text
    again = row(tmp_path / "2")
    assert again["cached"] is False  # simulated, not served
    volatile = {"cached", "sim_wall_s", "wall_s"}
    assert {k: v for k, v in again.items() if k not in volatile} == {
        k: v for k, v in first.items() if k not in volatile
    }
    assert json.loads(entry.read_text())["metrics"] == stored["metrics"]  # stored afresh
