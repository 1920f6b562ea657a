"""The stream workload end to end through ``simulate.run``."""

from __future__ import annotations

import dataclasses
import json

from kernbench import simulate
from kernbench.config.schema import ExecPath
from tests.support import make_cfg, run_python

MIB = 1 << 20


def test_large_aligned_stream_reaches_85_percent_of_peak():
    cfg = make_cfg(
        zero_cost=False, access_bytes=MIB, bytes_per_pe=32 * MIB, active_pes=1, outstanding=4
    )
    m = simulate.run(cfg).metrics
    assert m["peak_bw_per_pe_gbs"] == 8 * 32 == 256
    assert m["peak_aggregate_bw_gbs"] == 256  # one active PE on its own memory
    assert m["bw_efficiency"] >= 0.85
    assert m["bytes_moved"] == 32 * MIB


def test_same_config_twice_gives_identical_rows_and_op_log():
    cfg = make_cfg(zero_cost=False, access_bytes=8192, bytes_per_pe=256 * 1024, outstanding=3)
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True)
    a, b = simulate.run(cfg), simulate.run(cfg)
    assert a.oplog and a.oplog == b.oplog
    assert a.metrics == b.metrics


def test_replay_and_greenlet_paths_give_the_same_op_log():
    cfg = make_cfg(zero_cost=False, access_bytes=8192, bytes_per_pe=64 * 1024, op="copy")
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True, exec_path=ExecPath.replay)
    replay = simulate.run(cfg)
    cfg.sim = dataclasses.replace(cfg.sim, exec_path=ExecPath.greenlet)
    green = simulate.run(cfg)
    assert replay.oplog == green.oplog
    assert replay.metrics == green.metrics


def test_copy_moves_read_plus_write_bytes_through_the_same_channels():
    cfg = make_cfg(access_bytes=65536, bytes_per_pe=MIB, active_pes=1, op="copy")
    m = simulate.run(cfg).metrics
    assert m["bytes_moved"] == 2 * MIB
    assert m["accesses"] == 2 * 16
    # reads and writes share the PE's 256 GB/s path, so together they cannot beat it
    assert m["mean_pe_bw_gbs"] <= 256


def test_misaligned_stream_moves_the_same_bytes():
    cfg = make_cfg(
        one_to_one=True,
        access_bytes=4096,
        bytes_per_pe=64 * 1024,
        active_pes=2,
        align_offset_bytes=100,
    )
    m = simulate.run(cfg).metrics
    assert m["bytes_moved"] == 2 * 64 * 1024


# More buffers in flight than the stream has accesses: every access (the tail too)
# already has a buffer of its own, so the run is the one with ``outstanding`` = its
# accesses. It built all of them (2^20 buffers here, about 150 MB; 2^24, drawn by the
# override fuzz test, took 2.3 GB and 90 s). The DMA takes 2^20 at once here (a deeper
# ``outstanding`` than the DMA's is refused: test_bad_input.py), in both runs. In a
# fresh process, for its peak memory alone.
HUGE_OUTSTANDING = """
import dataclasses, json, tracemalloc
from kernbench import simulate
from tests.support import make_cfg

rows = {}
for outstanding in (4, 1 << 20):  # 4 accesses: 3 of 4 KiB and a 1 KiB tail
    cfg = make_cfg(zero_cost=False, access_bytes=4096, bytes_per_pe=3 * 4096 + 1024,
                   op="copy")
    cfg.topology.pe.dma_max_outstanding = 1 << 20  # simulate.run validates it again
    cfg.workload.outstanding = outstanding
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True)
    tracemalloc.start()
    result = simulate.run(cfg)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    metrics = {k: v for k, v in result.metrics.items() if k != "outstanding"}
    rows[outstanding] = (metrics, result.oplog, peak)
(a, log_a, _), (b, log_b, peak) = rows.values()
print(json.dumps({"same": a == b and log_a == log_b, "peak_mib": peak / 2**20}))
"""


def test_more_buffers_than_accesses_cost_nothing_more():
    proc = run_python(HUGE_OUTSTANDING, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["same"]
    assert out["peak_mib"] < 16  # 2^20 buffers would be over 100 MiB
