"""The per-request trace: one Parquet row per physical request, beside result.parquet."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest

from kernbench import simulate
from kernbench.config.schema import StreamPattern
from kernbench.results.trace import TraceWriter
from tests.address_support import model_cfg


def _traced(tmp_path, model, one_to_one, **stream):
    cfg = model_cfg(model, one_to_one, **stream)
    cfg.sim = dataclasses.replace(cfg.sim, trace=True)
    path = tmp_path / "trace.parquet"
    metrics = simulate.run(cfg, path).metrics
    return metrics, pq.read_table(path).to_pandas()


def test_one_to_one_trace_has_one_row_per_channel_request(tmp_path):
    m, rows = _traced(tmp_path, "la", True, access_bytes=4096, bytes_per_pe=16384, active_pes=2)
    # 2 PEs x 4 accesses x 8 channels of 512 B
    assert len(rows) == 2 * 4 * 8 and set(rows["nbytes"]) == {512}
    assert rows["nbytes"].sum() == m["bytes_moved"]
    assert sorted(set(rows["channel"])) == list(range(16))
    assert set(rows["address_model"]) == {"la"}
    assert (rows["logical_addr"] >= 0x1_0000_0000).all()  # LAs, not PAs
    assert (rows["end_ns"] > rows["start_ns"]).all() and (
        rows["start_ns"] >= rows["issue_ns"]
    ).all()
    pe0 = rows[rows["pe"] == "sip0.cube0.pe0"]
    assert set(pe0["node"]) == {f"sip0.cube0.pe0.ch_r{c}" for c in range(8)}


def test_n_to_one_trace_has_one_row_per_access(tmp_path):
    m, rows = _traced(tmp_path, "va", False, access_bytes=4096, bytes_per_pe=16384, active_pes=1)
    assert len(rows) == 4 and set(rows["channel"]) == {-1}
    assert set(rows["node"]) == {"sip0.cube0.pe0.agg_router"}
    assert list(rows["command_id"]) == sorted(rows["command_id"])


def test_no_trace_file_without_the_trace_switch(tmp_path):
    cfg = model_cfg("pa", access_bytes=4096, bytes_per_pe=16384, active_pes=1)
    simulate.run(cfg, tmp_path / "trace.parquet")
    assert not (tmp_path / "trace.parquet").exists()


def test_trace_rows_stream_to_parquet_in_batches(tmp_path, monkeypatch):
    """Rows leave memory a batch at a time: 100 accesses under 1:1 are 800 requests,
    written as 800 / 64 = 12.5 -> 13 row groups while the run goes on."""
    flushed: list[int] = []
    flush = TraceWriter._flush

    def spy(self: TraceWriter) -> None:
        flushed.append(len(self._cols["pe"]))
        flush(self)

    monkeypatch.setattr(TraceWriter, "_flush", spy)
    monkeypatch.setattr(TraceWriter, "batch_rows", 64)
    _, rows = _traced(
        tmp_path, "pa", True, access_bytes=2048, bytes_per_pe=2048 * 100, active_pes=1
    )
    assert len(rows) == 800
    meta = pq.ParquetFile(tmp_path / "trace.parquet").metadata
    assert (meta.num_rows, meta.num_row_groups) == (800, 13)
    assert flushed == [64] * 12 + [32]  # never more than one batch held


@pytest.mark.parametrize("pattern", ["local", "neighbor", "hotspot", "uniform"])
@pytest.mark.parametrize("one_to_one", [False, True])
def test_a_trace_changes_no_figure(tmp_path, pattern, one_to_one):
    """Tracing sends every request through the fair solver (no arithmetic fast path,
    so each request's own times are known): the figures are the same to the bit."""
    kw = dict(pattern=StreamPattern(pattern), access_bytes=4096, bytes_per_pe=16 * 4096,
              active_pes="all", outstanding=4)  # fmt: skip
    plain = simulate.run(model_cfg("la", one_to_one, **kw)).metrics
    traced, rows = _traced(tmp_path, "la", one_to_one, **kw)
    assert traced == plain
    assert len(rows) == (8 if one_to_one else 1) * 16 * 16  # requests per access x accesses
    assert (rows["start_ns"] >= rows["issue_ns"]).all()
    assert (rows["end_ns"] > rows["start_ns"]).all()
