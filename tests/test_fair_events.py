"""What the fair fabric's flows cost in events (DESIGN §3.2), on the PEs of one cube under
1:1 (8 channels of 32 GB/s each): the times by hand, and the events that carry them.

PE 0 reads its own memory (route latency 6 ns: DMA->router 2 + router->HBM 4), PEs 1-3
read PE 0's (12 ns: PE->NOC 5 + NOC->router 3 + router->HBM 4), each through its 128 GB/s
link to the NOC; every request then drains at the rate the links give it and completes 40 ns
(the HBM access) after its last byte.
"""

from __future__ import annotations

import pytest

from kernbench.sim.events import LocalQueue, SimEnv
from kernbench.sim.fair_fabric import FairFabric
from kernbench.topology.routes import MemoryRoutes, Router
from tests.support import Outcome, Stages, make_cfg
from tests.test_fair_properties import topology

_CFG = make_cfg(one_to_one=True).topology
ACCESS = _CFG.cube.memory_map.hbm_access_latency_ns  # 40 ns
CHANNEL_BW = _CFG.cube.memory_map.hbm_channel_bw_gbs  # 32 GB/s = bytes/ns
PE_NOC_BW = _CFG.links.pe_noc_bw_gbs  # 128 GB/s: PE 1's 8 flows at 16 GB/s fill it


def run(
    issues: list[tuple[int, list[int], int]],
    at: list[float] | None = None,
    solved: list[float] | None = None,
    whole: bool = False,
) -> tuple[list[Outcome], list[float], float, float]:
    """Issue every ``(PE, channels of PE 0, bytes per channel)`` as one transfer, at 0 ns
    or at its time in ``at``, as flows (no arithmetic booking), on 4 PEs of one cube;
    return the transfers, the time of every event the queue ran, and the latencies of
    PE 0's and PE 1's routes to PE 0's channel 0. The time of every recomputation goes
    to ``solved``; ``whole``: every recomputation is the definition's."""
    graph = topology(4, 1, 8, True)
    env = SimEnv()
    events = LocalQueue(env)
    observe = None if solved is None else lambda now, queues, rates: solved.append(now)
    fabric = FairFabric(graph, ACCESS, events, fast=False, on_solve=observe, whole=whole)
    router = Router(graph)
    routes = [MemoryRoutes(router, pe.node("dma")) for pe in graph.pes]
    channels = graph.routers(graph.pes[0])
    ran: list[float] = []
    events.set_report(lambda: ran.append(events.now), 1)
    stages = Stages(events)
    transfers = [stages.new() for _ in issues]

    def issue(k: int) -> None:
        pe, picks, nbytes = issues[k]
        requests = [(channels[c], 0, nbytes, c) for c in picks]
        end = fabric.start(requests, routes[pe], events.now, transfers[k], stages.finish)
        assert end is None  # every request is a flow

    for k in range(len(issues)):
        events.schedule(at[k] if at else 0.0, issue, k)
    events.run()
    lat = [routes[pe][channels[0]].latency_ns for pe in (0, 1)]
    return [stages.outcome(t) for t in transfers], ran, lat[0], lat[1]


def test_channel_flows_that_drain_together_drain_in_one_event():
    """PE 0 alone reads 256 B on each of the 8 channels, as flows: each joins at 6 and
    drains at the channel's 32 GB/s, all 8 at 6 + 256 / 32 = 14; the access completes
    40 ns later, at 54. Their rates were set one after another (consecutive keys) to
    one time, so their 8 drains run in one event; with the recomputation that finds
    their queues gone, 2 events at 14 (9 when each drain was an event of its own)."""
    (mine,), ran, local, _ = run([(0, list(range(8)), 256)])
    drained = local + 256 / CHANNEL_BW
    assert drained == 14.0
    assert mine == (drained + ACCESS, 1, 0, 0)
    assert ran.count(drained) == 2
    assert ran[-1] == 54.0


@pytest.mark.parametrize("whole", [False, True])
def test_new_heads_that_keep_their_requesters_order_take_over_without_a_recomputation(whole):
    """PE 0 alone issues two accesses at 0, 256 B on each of the 8 channels: the
    first's flows join at 6 and drain at 32 GB/s, all at 14; the second's, queued
    behind them, then drain at 32 GB/s too, at 22: completions at 54 and 62. As the
    first's channel-0 flow drains, its queue's new head (the second access's) is
    younger than the 7 heads still to go; once they have gone too, the requester's
    queues are in the order they were: the new heads take over the rates, with no
    recomputation at 14 (the definition, ``whole``, recomputes there and agrees)."""
    solved: list[float] = []
    (first, second), _, local, _ = run([(0, list(range(8)), 256)] * 2, solved=solved, whole=whole)
    drained = local + 256 / CHANNEL_BW
    assert (first.end, second.end) == (drained + ACCESS, drained + 256 / CHANNEL_BW + ACCESS)
    assert (first.end, second.end) == (54.0, 62.0)
    assert solved == ([6.0, 14.0] if whole else [6.0])


@pytest.mark.parametrize("whole", [False, True])
def test_new_heads_take_over_each_its_own_rate(whole):
    """PE 1 reads 4096 B on PE 0's channel 0 from 0 ns (joining at 12); at 6 PE 0 issues
    X1 (128 B on channel 0), Y1 (256 B on channels 1-7), X2 and Y2 the same again, all
    joining at 12. Channel 0 is shared: X1 and PE 1's flow drain at 16 GB/s each, X1
    done at 12 + 128 / 16 = 20; Y1's channels are PE 0's alone, 32 GB/s, done at 12 +
    256 / 32 = 20 too. At 20 X2 and Y2 take over, the order kept: X2 at 16 and Y2 at
    32, both done at 28; PE 1's flow, 16 GB/s from 12 to 28 (256 B), then alone at 32:
    3840 B more, done at 148. Completions 40 ns after: 60, 60, 68, 68, 188, with
    recomputations at 12 and 28 only (the definition also recomputes at 20)."""
    solved: list[float] = []
    x, y = (0, [0], 128), (0, list(range(1, 8)), 256)
    outcomes, _, local, remote = run(
        [x, y, x, y, (1, [0], 4096)], at=[6.0] * 4 + [0.0], solved=solved, whole=whole
    )
    joined = 6.0 + local
    assert joined == remote == 12.0
    first = joined + 128 / (CHANNEL_BW / 2)
    assert first == joined + 256 / CHANNEL_BW == 20.0
    second = first + 128 / (CHANNEL_BW / 2)
    theirs = second + (4096 - (second - joined) * CHANNEL_BW / 2) / CHANNEL_BW
    ends = [first, first, second, second, theirs]
    assert [o.end for o in outcomes] == [end + ACCESS for end in ends]
    assert [o.end for o in outcomes] == [60.0, 60.0, 68.0, 68.0, 188.0]
    assert solved == ([12.0, 20.0, 28.0] if whole else [12.0, 28.0])


def test_a_transfers_channel_flows_complete_with_one_event():
    """Both PEs read 256 B on each of the 8 channels. PE 0's flows join at 6 and drain
    alone at 32 GB/s: 192 B each by 12, when PE 1's join; then each channel is shared,
    16 GB/s each, so PE 0's last 64 B take 4 ns (drained at 16). PE 1's flows drain 64 B
    by 16, and their last 192 B at 16 GB/s still, not 32: the 8 of them fill PE 1's 128
    GB/s link to the NOC, so they drain at 16 + 12 = 28. Completions at 16 + 40 = 56 and
    28 + 40 = 68, each with one call: the flows of a transfer that drain before its
    last one are counted down at their drain (8 calls each before)."""
    (mine, theirs), ran, local, remote = run([(0, list(range(8)), 256), (1, list(range(8)), 256)])
    assert (local, remote) == (6.0, 12.0)
    alone = (remote - local) * CHANNEL_BW  # bytes PE 0's flows drain before PE 1's join
    mine_drained = remote + (256 - alone) / (CHANNEL_BW / 2)
    assert mine.end == mine_drained + ACCESS == 56.0
    theirs_drained = mine_drained + (256 - (256 - alone)) / (PE_NOC_BW / 8)
    assert theirs.end == theirs_drained + ACCESS == 68.0
    assert (mine.calls, theirs.calls) == (1, 1)
    assert (mine.parts, theirs.parts, mine.flowing, theirs.flowing) == (0, 0, 0, 0)
    assert ran[-1] == theirs.end


def test_a_flow_whose_rate_falls_and_rises_completes_with_no_late_event():
    """PE 0 reads 3200 B on channel 0, PE 1 320 B on it. PE 0's flow joins at 6 alone at
    32 GB/s (its end then: 6 + 100 = 106); at 12 PE 1's joins and each drains at 16
    (PE 0's end moves to 12 + 3008 / 16 = 200); PE 1's drains its 320 B by 32 and PE 0's
    is alone again at 32 GB/s: 2688 B left, drained at 116, the channel busy from 6 to
    6 + 3520 / 32 = 116 without a gap. Completions at 32 + 40 = 72 and 116 + 40 = 156.
    The flow's completion was re-keyed twice (to 200, then 116): the event queued for
    106 finds it moved and queues 116; no event is left for 200, so nothing runs after
    the last completion (an eager re-keying ran a stale event at 200)."""
    (mine, theirs), ran, local, remote = run([(0, [0], 3200), (1, [0], 320)])
    first_end = local + 3200 / CHANNEL_BW
    left = 3200 - (remote - local) * CHANNEL_BW
    assert (first_end, remote + left / (CHANNEL_BW / 2)) == (106.0, 200.0)
    theirs_drained = remote + 320 / (CHANNEL_BW / 2)
    assert theirs.end == theirs_drained + ACCESS == 72.0
    drained = theirs_drained + (left - 320) / CHANNEL_BW
    assert drained == local + (3200 + 320) / CHANNEL_BW == 116.0
    assert mine.end == drained + ACCESS == 156.0
    assert first_end in ran  # the early event ran, and queued the real one
    assert max(ran) == mine.end


def test_a_flow_sped_up_then_slowed_completes_from_one_queued_event():
    """PE 1 reads 3200 B and PE 2 320 B on channel 0, both joining at 12: 16 GB/s each,
    so PE 1's end is 12 + 3200 / 16 = 212. PE 2's drains by 32, and PE 1's, alone at 32
    GB/s with 2880 B left, would end at 32 + 2880 / 32 = 122: queued, the event for 212
    superseded. At 50 PE 2 and PE 3 (3200 B each, issued at 38) join: a third each, so
    PE 1's 2304 B left end at 50 + 2304 x 3 / 32 = 266, later than queued. The event
    for 122 queues 266; the superseded one for 212 finds it queued already and queues
    nothing, so PE 1's flow drains once, at 266, with no second event there."""
    issues = [(1, [0], 3200), (2, [0], 320), (2, [0], 3200), (3, [0], 3200)]
    (mine, short, *late), ran, _, remote = run(issues, at=[0.0, 0.0, 38.0, 38.0])
    assert short.end == remote + 320 / (CHANNEL_BW / 2) + ACCESS == 72.0
    left = 3200 - 320 - (50 - 32) * CHANNEL_BW
    drained = 50 + left / (CHANNEL_BW / 3)
    assert drained == pytest.approx(266.0, abs=1e-9)
    assert mine.end == drained + ACCESS
    # each of the two late ones drained 2304 B by then, and 896 B at 16 GB/s after
    assert [t.end for t in late] == pytest.approx([drained + 896 / 16 + ACCESS] * 2)
    assert 122.0 in ran and 212.0 in ran  # the queued event, and the superseded one
    # at PE 1's drain: the drain itself and the recomputation its queue's leaving asks
    # for; a second event queued for it by the superseded one would be a third
    assert ran.count(drained) == 2
