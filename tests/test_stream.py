"""The stream workload end to end through ``simulate.run``."""

from __future__ import annotations

import dataclasses

from kernbench import simulate
from kernbench.config.schema import ExecPath
from tests.support import make_cfg

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
    assert m["effective_bw_gbs"] <= 256


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
