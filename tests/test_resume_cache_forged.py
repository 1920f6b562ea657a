"""What a resumed or cached sweep keeps is a result of its point (issue 56).

Resume kept a row whose config columns were edited (``access_bytes`` 4096 -> 999) as
long as its stored ``config_hash`` was untouched, and kept two rows' metrics swapped;
the point cache served ``accesses: 256.5`` (the column turned double), an int of 2^70
(the column turned text), and a decoder entry with no launch rows, duplicate launch
indices or ``launch: -7.5``. Each forgery here is made as a careless or hostile edit
would make it, with whatever checksum the record carries fixed up where noted, so only
the content check can catch it; each is dropped (logged) and its point run again, and
the result equals a run that never met it.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from kernbench.config.columns import INTEGERS, KERNEL_COLUMNS, METRICS, TEXT
from kernbench.config.schema import StreamWorkloadConfig
from kernbench.config.store import conf_dir, register_configs
from kernbench.job import run_job
from kernbench.results import rows_to_table, write_table_atomic
from kernbench.results.kernels import KERNELS_FILE
from kernbench.sweep import MERGED_FILE
from kernbench.sweep import cache as cache_mod
from kernbench.sweep.cache import PointCache
from tests.test_decoder_layer import TINY
from tests.test_launchers import command, run_cli

SMALL = ("topology=small", "pe_cost_model=zero", "address=pa", "workload.access_bytes=4096")
GRID = (*SMALL, "workload.bytes_per_pe=4096,8192", "workload.outstanding=1,2", "cache=false")
# What differs between two runs of one point (and the sweep's own directory).
VOLATILE = {"cached", "sim_wall_s", "wall_s", "sweep_id"}


def compose_now(*overrides: str) -> DictConfig:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        return compose(config_name="config", overrides=list(overrides))


def steady(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in VOLATILE} for row in rows]


def types(path: Path) -> dict[str, pa.DataType]:
    return {field.name: field.type for field in pq.read_schema(path)}


# --- the point cache ---------------------------------------------------------------------


def forge_entry(store: PointCache, key: str, metrics: dict, launches: list) -> None:
    """An entry under ``key`` holding ``metrics`` and ``launches``, with the checksum
    the cache computes (cache._checksum), so only the content check can tell."""
    entry = {
        "key": key,
        "checksum": cache_mod._checksum(metrics, launches),
        "metrics": metrics,
        "launches": launches,
    }
    path = store.path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry))


class Reference:
    """One uncached run of a point: its row, its launch rows and its cache entry."""

    def __init__(self, overrides: tuple[str, ...], where: Path) -> None:
        self.overrides = overrides
        store = PointCache(where / "cache")
        assert run_job(compose_now(*overrides), where / "run", cache=store) == "ok"
        [self.row] = pq.read_table(where / "run" / "result.parquet").to_pylist()
        self.types = types(where / "run" / "result.parquet")
        launches = where / "run" / KERNELS_FILE
        self.launch_rows = pq.read_table(launches).to_pylist() if launches.exists() else []
        [entry] = sorted((where / "cache").rglob("*.json"))
        self.entry = json.loads(entry.read_text())

    def served_forged(self, tmp_path: Path, caplog, metrics: dict, launches: list) -> Path:
        """Run the point again over a cache holding only the forged entry; check the
        entry was discarded, the point simulated, and its row (and launch rows) are
        the reference's, of the same column types. The run's directory."""
        store = PointCache(tmp_path / "cache")
        forge_entry(store, self.entry["key"], metrics, launches)
        out = tmp_path / "again"
        with caplog.at_level(logging.WARNING, logger="kernbench.sweep.cache"):
            assert run_job(compose_now(*self.overrides), out, cache=store) == "ok"
        assert "discarding bad entry" in caplog.text
        [row] = pq.read_table(out / "result.parquet").to_pylist()
        assert row["cached"] is False  # simulated, not served
        assert steady([row]) == steady([self.row])
        assert types(out / "result.parquet") == self.types
        stored = json.loads(store.path(self.entry["key"]).read_text())
        assert stored["metrics"] == self.entry["metrics"]  # stored afresh
        return out


@pytest.fixture(scope="module")
def stream_point(tmp_path_factory) -> Reference:
    return Reference((*SMALL, "workload.bytes_per_pe=4096"), tmp_path_factory.mktemp("stream"))


@pytest.fixture(scope="module")
def decoder_point(tmp_path_factory) -> Reference:
    pytest.importorskip("triton", reason="needs the triton extra")
    return Reference((*TINY, "pe_cost_model=zero"), tmp_path_factory.mktemp("decoder"))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("accesses", 256.5),  # the column turned double for every row
        ("accesses", 256.0),  # a float where an int is declared, however whole
        ("install_bytes", 2**70),  # the column turned text for every row
        ("accesses", 2**63),  # just past int64: |x| < 2^63 is the promise
        ("accesses", -(2**63)),  # ... both ways
        ("bw_efficiency", 2**63),  # an int past 64 bits in a float column turns it text
    ],
    ids=["half", "whole-float", "2^70", "2^63", "-2^63", "2^63-in-float-column"],
)
def test_a_stream_entry_of_the_wrong_type_or_range_is_recomputed(
    stream_point, tmp_path, caplog, name, value
):
    forged = {**stream_point.entry["metrics"], name: value}
    stream_point.served_forged(tmp_path, caplog, forged, [])


def test_launch_rows_for_a_stream_point_are_recomputed(stream_point, tmp_path, caplog):
    """A workload that declares no launch rows is served none (this held before)."""
    launch = {"launch": 0, "kernel": "x"}
    stream_point.served_forged(tmp_path, caplog, stream_point.entry["metrics"], [launch])
    assert "launch rows for a point that has none" in caplog.text


def _renumbered(rows: list[dict], index: int, launch: Any) -> list[dict]:
    return [{**row, "launch": launch} if i == index else row for i, row in enumerate(rows)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "forge",
    [
        lambda m, rows: (m, []),  # 14 launches served as none: kernels.parquet lost them
        lambda m, rows: ({**m, "kernels": 0}, []),  # ... and saying so: a decoder launches
        lambda m, rows: (m, _renumbered(rows, 1, 0)),  # two launches numbered 0
        lambda m, rows: (m, _renumbered(rows, 0, -7.5)),
        lambda m, rows: (m, rows[:-1]),  # numbered 0..12, where the point says 14 launches
        lambda m, rows: (m, [rows[1], rows[0], *rows[2:]]),  # out of launch order
    ],
    ids=["no-launches", "kernels=0", "duplicate-index", "launch=-7.5", "one-short", "order"],
)
def test_a_decoder_entry_whose_launch_rows_are_not_its_launches_is_recomputed(
    decoder_point, tmp_path, caplog, forge
):
    entry = decoder_point.entry
    assert len(entry["launches"]) == entry["metrics"]["kernels"] > 2
    metrics, launches = forge(entry["metrics"], entry["launches"])
    out = decoder_point.served_forged(tmp_path, caplog, metrics, launches)
    again = pq.read_table(out / KERNELS_FILE).to_pylist()
    assert steady(again) == steady(decoder_point.launch_rows)


@pytest.mark.parametrize(
    ("workload", "overrides"),
    [
        ("stream", ["topology=small", "workload.bytes_per_pe=65536", "address=la"]),
        ("gqa_opt2", ["topology=small"]),
        ("gqa_pair", ["topology=small"]),
        ("triton", ["topology=small", "workload.size=1024"]),
        ("decoder_layer", TINY[:1] + TINY[2:]),
    ],
)
def test_the_declared_integer_columns_are_the_rows_ints(tmp_path, workload, overrides):
    """INTEGERS (kernbench.config.columns) is what the cache and resume hold a count to:
    every declared number column of each workload's row, and of its launch rows, is an
    int exactly when INTEGERS names it."""
    if workload in ("triton", "decoder_layer"):
        pytest.importorskip("triton", reason="needs the triton extra")
    cfg = compose_now(f"workload={workload}", *overrides)
    assert run_job(cfg, tmp_path, cache=None) == "ok"
    [row] = pq.read_table(tmp_path / "result.parquet").to_pylist()
    schema = type(OmegaConf.to_object(cfg).workload)
    tables = [(METRICS[schema], [row])]
    if schema in KERNEL_COLUMNS:
        tables.append((KERNEL_COLUMNS[schema], pq.read_table(tmp_path / KERNELS_FILE).to_pylist()))
    for declared, rows in tables:
        for name, kind in declared.items():
            if kind != TEXT:
                assert {type(r[name]) is int for r in rows} == {name in INTEGERS}, name


# --- resume ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_sweep(tmp_path_factory) -> Path:
    """A four-point stream sweep, run once: the table every resume must end with."""
    where = tmp_path_factory.mktemp("fresh")
    out = where / "sweep"
    proc = run_cli(where, command(out, *GRID))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def read_rows(out: Path) -> list[dict[str, Any]]:
    return pq.read_table(out / MERGED_FILE).to_pylist()


def rewrite(out: Path, rows: list[dict], digests: bool) -> None:
    """Write ``rows`` over the table, its column types as the values make them (256.5
    turns a column double; pyarrow given the old schema would truncate it to 256).
    Without ``digests`` the table keeps the metadata it had, row digests included, as
    an edit that keeps the schema does; with them the digests are made afresh for the
    edited rows, as a forger who knows the format would: then only the content checks
    can tell."""
    edited = rows_to_table(rows)  # kernbench's own builder: fresh digests
    if not digests:
        edited = edited.replace_schema_metadata(pq.read_schema(out / MERGED_FILE).metadata)
    write_table_atomic(edited, out / MERGED_FILE)


METRIC_COLUMNS = list(METRICS[StreamWorkloadConfig])


def edit_access_bytes(rows: list[dict]) -> list[dict]:
    rows[1] = {**rows[1], "workload.access_bytes": 999}  # config_hash left as it was
    return rows


def swap_metrics(rows: list[dict]) -> list[dict]:
    first, last = rows[0], rows[3]
    rows[0] = {**first, **{m: last[m] for m in METRIC_COLUMNS}}
    rows[3] = {**last, **{m: first[m] for m in METRIC_COLUMNS}}
    return rows


def negative_time(rows: list[dict]) -> list[dict]:
    rows[2] = {**rows[2], "sim_time_ns": -rows[2]["sim_time_ns"]}
    return rows


def stray_config(rows: list[dict]) -> list[dict]:
    rows[1] = {**rows[1], "workload.kv_heads": 2}  # a gqa key, null in every stream row
    return rows


def stray_metric(rows: list[dict]) -> list[dict]:
    rows[1] = {**rows[1], "made_up_gbs": 1.0}  # no stream row has it
    return rows


def half_access(rows: list[dict]) -> list[dict]:
    rows[2] = {**rows[2], "accesses": 256.5}  # the whole column becomes double
    return rows


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "digests", "dropped"),
    [
        # the config columns are not in the digest (config_hash stands for them): the
        # row's own config columns are compared with its point's
        (edit_access_bytes, False, "1 whose configuration is not their point's"),
        (swap_metrics, False, "2 changed since the sweep wrote them"),
        (stray_config, True, "1 whose configuration is not their point's"),
        (negative_time, True, "1 whose metrics are no result"),
        (stray_metric, True, "1 whose metrics are no result"),
        # every row's accesses is a double now, 4.0 no less than 256.5: all run again
        (half_access, True, "4 whose metrics are no result"),
    ],
    ids=["access-bytes", "swapped", "stray-config", "negative-time", "stray-metric", "256.5"],
)
def test_resume_runs_again_a_row_that_is_not_its_points_result(
    fresh_sweep, tmp_path, edit, digests, dropped
):
    out = tmp_path / "sweep"
    shutil.copytree(fresh_sweep, out)
    before = read_rows(out)
    rewrite(out, edit([dict(r) for r in before]), digests)
    resumed = run_cli(tmp_path, command(out, *GRID, "hydra.sweeper.resume=true"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = resumed.stdout + resumed.stderr
    total = int(dropped.split()[0])
    plural = "s" if total != 1 else ""
    assert f"; {total} row{plural} dropped ({dropped})" in said, said[-2000:]
    assert f"Resuming: {4 - total} of 4 points kept from {out}" in said, said[-2000:]
    after = read_rows(out)
    assert steady(after) == steady(read_rows(fresh_sweep))
    assert types(out / MERGED_FILE) == types(fresh_sweep / MERGED_FILE)
    kept = [a for a, b in zip(after, before, strict=True) if a["wall_s"] == b["wall_s"]]
    assert len(kept) == 4 - total  # the others ran again


def test_resume_keeps_every_row_of_an_untouched_table(fresh_sweep, tmp_path):
    """The digests hold for a table as the sweep wrote it: nothing runs again."""
    out = tmp_path / "sweep"
    shutil.copytree(fresh_sweep, out)
    resumed = run_cli(tmp_path, command(out, *GRID, "hydra.sweeper.resume=true"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = resumed.stdout + resumed.stderr
    assert "Resuming: 4 of 4 points kept from " in said and "dropped" not in said
    assert read_rows(out) == read_rows(fresh_sweep)
