"""``kernels.parquet``: a decoder-layer sweep writes one row per kernel launch beside
its results, joined to them by the point's identity, and no launch beats its roofline."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from kernbench.job import JobId, run_job
from kernbench.report import cli as report
from kernbench.results.kernels import KERNELS_FILE
from kernbench.sweep.merge import merge_sweep
from tests.test_decoder_layer import STEPS, TINY
from tests.test_sweep import merged, run_sweep


def kernel_rows(directory) -> list[dict]:
    return pq.read_table(directory / KERNELS_FILE).to_pylist()


@pytest.mark.slow
def test_a_sweep_writes_launch_rows_joined_to_its_points(tmp_path):
    # one worker: its imports (torch, Triton) are most of the test's time
    proc, sweep = run_sweep(tmp_path, *TINY, "address=pa,la", "pe_cost_model=zero", jobs=1)
    assert proc.returncode == 0, proc.stderr
    points = {(r["job_num"], r["config_hash"]): r for r in merged(sweep)}
    launches = kernel_rows(sweep)
    assert len(points) == 2 and len(launches) == 2 * len(STEPS)
    for key, point in points.items():
        mine = [r for r in launches if (r["job_num"], r["config_hash"]) == key]
        assert [r["kernel"] for r in mine] == STEPS
        assert point["kernel_latency_ns"] == pytest.approx(
            sum(r["kernel_latency_ns"] for r in mine), rel=1e-12
        )
        # pe_cost_model=zero: no dispatch cost, so the CPU is never the busiest unit
        assert point["cpu_utilization"] == 0 and point["cpu_bound_kernels"] == 0
        assert all(r["bottleneck"] != "cpu" for r in mine)
    for r in launches:  # a property: no launch beats its roofline, even dispatching free
        assert r["kernel_latency_ns"] >= r["roofline_bound_ns"] > 0, r
        assert 0 < r["roofline_efficiency"] <= 1
    # the report's study section reads both tables
    assert report.main([str(sweep)]) == 0
    text = (sweep / "report.txt").read_text()
    assert "== decoder layer (2 configurations) ==" in text
    # every claim names the layer's shape (the tiny one is no preset's: its dimensions)
    shape = "hidden 64, heads 4, kv_heads 2, head_dim 16, ffn 96, context_tokens 5"
    for verdict, claim in [
        ("NOT TESTED", "1:1 and n:1 give the same decode-step latency"),  # n:1 only
        ("HOLDS", "VA and LA issue no more DMA descriptors than PA"),
        ("HOLDS", "with FIXED = R = 0 no kernel is CPU-bound"),
        ("HOLDS", "no kernel beats its roofline"),
    ]:
        assert f"[{verdict}] {shape}: {claim}" in text
    for plot in ("kernels", "roofline"):  # and "dispatch" when FIXED is swept
        assert (sweep / f"decoder_layer_{plot}.png").is_file()


def test_the_stock_merge_keeps_only_launch_rows_of_its_ok_points(tmp_path, compose_cfg):
    for num, model in enumerate(("pa", "va")):
        cfg = compose_cfg(*TINY, f"address={model}")
        assert run_job(cfg, tmp_path / str(num), JobId(str(tmp_path), num)) == "ok"
    stale = kernel_rows(tmp_path / "1")
    for r in stale:
        r["config_hash"] = "another grid's"
    (tmp_path / "2").mkdir()
    pq.write_table(
        pq.read_table(tmp_path / "1" / KERNELS_FILE).from_pylist(stale),
        tmp_path / "2" / KERNELS_FILE,
    )
    outcome = merge_sweep(tmp_path)
    assert outcome.n_rows == 2  # a directory with launch rows alone is not a job
    rows = kernel_rows(tmp_path)
    assert [(r["job_num"], r["launch"]) for r in rows] == [
        (num, i) for num in (0, 1) for i in range(len(STEPS))
    ]
    assert all(r["sweep_id"] == str(tmp_path) for r in rows)
