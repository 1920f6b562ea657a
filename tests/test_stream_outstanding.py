"""``workload.outstanding`` bounds a stream's accesses in flight, its tail included.

The tail (``bytes_per_pe % access_bytes`` bytes) once took a fresh buffer that no
earlier access held, so ``outstanding + 1`` accesses could be in flight: with one in
flight, the 100 B tail of 3 x 64 KiB + 100 B was issued beside access 2. It is now one
more access of the buffer rotation, held like the others (stream_kernel). Read from
the per-request trace: an access is a DMA command, from its first request's issue to
its last request's end.
"""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest

from kernbench import simulate
from kernbench.config.schema import ExecPath
from tests.support import make_cfg

KIB64 = 65536
TAIL = 100


def traced(tmp_path, model: str = "pa", zero_cost: bool = True, **stream: object):
    """The run's metrics and its accesses as (issue, end, bytes) in command order."""
    cfg = make_cfg(model=model, zero_cost=zero_cost, **stream)
    cfg.sim = dataclasses.replace(cfg.sim, trace=True)
    path = tmp_path / "trace.parquet"
    metrics = simulate.run(cfg, path).metrics
    rows = pq.read_table(path).to_pandas()
    by_cmd = rows.groupby(["pe_index", "command_id"]).agg(
        issue=("issue_ns", "min"), end=("end_ns", "max"), nbytes=("nbytes", "sum")
    )
    return metrics, by_cmd


def most_in_flight(by_cmd) -> int:
    """The most accesses of one PE in flight at once: an access issued at the instant
    another ends does not overlap it (ends count first at a tie)."""
    most = 0
    for _, pe in by_cmd.groupby(level="pe_index"):
        events = sorted([(t, 1) for t in pe["issue"]] + [(t, -1) for t in pe["end"]])
        now = 0
        for _, step in events:
            now += step
            most = max(most, now)
    return most


def test_with_one_in_flight_the_tail_waits_for_access_2(tmp_path):
    """PA, no dispatch cost, one PE reading 3 x 64 KiB + 100 B of its own HBM, one in
    flight. An access alone is a round trip (DESIGN §13.1): dma->router 2 + router->HBM
    4 out, HBM 40, 6 back, then 65536 / 256 GB/s = 308 ns, so access k runs
    [308 k, 308 (k+1)]. The tail waits for access 2's buffer: [924, 924 + 52 + 100 /
    256] = [924, 976.390625] (it was issued beside access 2)."""
    m, acc = traced(
        tmp_path, access_bytes=KIB64, bytes_per_pe=3 * KIB64 + TAIL, active_pes=1, outstanding=1
    )
    trip = 6 + 40 + 6  # out, access, back
    access = trip + KIB64 / 256
    assert list(acc["nbytes"]) == [KIB64] * 3 + [TAIL]
    assert list(acc["issue"]) == [0, access, 2 * access, 3 * access] == [0, 308, 616, 924]
    assert list(acc["end"]) == [308, 616, 924, 3 * access + trip + TAIL / 256]
    assert m["sim_time_ns"] == 976.390625
    assert m["bytes_moved"] == 3 * KIB64 + TAIL


def test_the_issue_repro_under_va_with_dispatch_cost(tmp_path):
    """The issue's command line (VA, the default cost model): the tail is issued at or
    after access 2's completion."""
    m, acc = traced(
        tmp_path,
        model="va",
        zero_cost=False,
        access_bytes=KIB64,
        bytes_per_pe=3 * KIB64 + TAIL,
        active_pes=1,
        outstanding=1,
    )
    assert list(acc["nbytes"]) == [KIB64] * 3 + [TAIL]
    access2, tail = acc.iloc[2], acc.iloc[3]
    assert tail["issue"] >= access2["end"]
    assert most_in_flight(acc) == 1


@pytest.mark.parametrize("op", ["read", "write", "copy"])
@pytest.mark.parametrize("outstanding", [1, 2, 3])
def test_at_most_outstanding_accesses_overlap_tail_included(tmp_path, op, outstanding):
    """7 accesses of 4 KiB and a 1 KiB tail on two PEs: the depth is never passed, and
    reached by reads and writes. A copy's read and write of one access share its
    buffer, so they count as one at a time too; a copy need not reach the depth: PE_DMA
    issues in order, and each write waits at the queue's head for its read, so no more
    than a write and the next read run at once (2 of 3)."""
    m, acc = traced(
        tmp_path,
        op=op,
        access_bytes=4096,
        bytes_per_pe=7 * 4096 + 1024,
        active_pes=2,
        outstanding=outstanding,
    )
    commands = 8 * (2 if op == "copy" else 1)
    assert [len(pe) for _, pe in acc.groupby(level="pe_index")] == [commands, commands]
    most = most_in_flight(acc)
    assert most == (min(outstanding, 2) if op == "copy" else outstanding)


def test_as_many_in_flight_as_accesses_runs_them_all_at_once(tmp_path):
    """3 accesses and a tail, 4 in flight: nothing waits for a buffer, all 4 overlap."""
    m, acc = traced(
        tmp_path, access_bytes=4096, bytes_per_pe=3 * 4096 + 1024, active_pes=1, outstanding=4
    )
    assert most_in_flight(acc) == 4
    assert list(acc["issue"]) == [0, 0, 0, 0]


def test_the_tail_is_the_same_command_on_both_execution_paths():
    """The tail's commands are built in the kernel (tl.emit): replayed or run in a
    greenlet, the same op log and row."""
    runs = []
    for path in (ExecPath.replay, ExecPath.greenlet):
        cfg = make_cfg(
            zero_cost=False, op="copy", access_bytes=4096, bytes_per_pe=5 * 4096 + 7, outstanding=2
        )
        cfg.sim = dataclasses.replace(cfg.sim, oplog=True, exec_path=path)
        runs.append(simulate.run(cfg))
    replay, green = runs
    assert replay.oplog and replay.oplog == green.oplog
    assert replay.metrics == green.metrics
