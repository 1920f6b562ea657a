"""A cube's PE endpoints served in bulk keep each PE's own queue (kernbench.sim.endpoints).

One event serves every PE of a cube that takes a message at the same instant; a PE
still busy with an earlier message queues the next one and takes it when it is done,
as a process per PE did. Times are computed here from the hops: the default topology,
its control processing times but the MMU's, set longer than the M_CPU's so that a
second message reaches the endpoints while the first is still processed there.
"""

from __future__ import annotations

import dataclasses

from kernbench.config.validate import validate
from kernbench.sim.control import ControlMsg
from tests.address_support import model_cfg, one_message_ns
from tests.support import make_system

MMU_NS = 500.0  # > the M_CPU's 100 and the IO_CPU's 200


def system_and_log():
    cfg = model_cfg("va")
    cfg.topology.control = dataclasses.replace(cfg.topology.control, mmu_processing_ns=MMU_NS)
    system, _ = make_system(validate(cfg))
    landed: list[tuple[str, int, float]] = []

    def recorder(name: str):
        return lambda pe: landed.append((name, pe.index, system.env.now))

    return system, recorder, landed


def test_a_pe_busy_with_an_earlier_message_takes_the_next_when_done():
    """A goes to PEs 0 and 1, B to all 16, sent together. The IO_CPU (200 ns a
    message) puts B 200 ns behind A at every later hop, so B reaches cube 0's
    endpoints while PEs 0 and 1 still process A (500 ns): there it waits for them,
    everywhere else it is processed at once."""
    system, recorder, landed = system_and_log()
    a = ControlMsg((0,), recorder("a"), target_pes=frozenset({0, 1}))
    b = ControlMsg((0,), recorder("b"))
    done = system.env.all_of([system.control.send(a), system.control.send(b)])
    system.env.run(until=done)
    first = one_message_ns(system.cfg, "mmu", 0)  # A alone: arrival + 500
    arrival = first - MMU_NS
    want = [("a", 0, first), ("a", 1, first)]
    want += [("b", pe, arrival + 200 + MMU_NS) for pe in range(2, 16)]
    want += [("b", 0, first + MMU_NS), ("b", 1, first + MMU_NS)]
    assert sorted(landed, key=lambda x: (x[2], x[0], x[1])) == sorted(
        want, key=lambda x: (x[2], x[0], x[1])
    )
    assert (a.latency_ns, b.latency_ns) == (first, first + MMU_NS)
    assert [system.control.landed(pe) for pe in range(16)] == [2, 2] + [1] * 14
    # the IO_CPU and both M_CPUs handled both (A's cube 1 copy reached no PE there)
    nodes = ["sip0.io_cpu", "sip0.cube0.m_cpu", "sip0.cube1.m_cpu"]
    assert [system.control.handled(node) for node in nodes] == [2, 2, 2]
    for cube in system.control._cubes.values():  # nothing left waiting or in service
        assert not cube._busy and not cube._waiting


def test_three_messages_queue_in_arrival_order_on_one_pe():
    """Three messages to PE 3 only, sent together: each behind the one before at the
    IO_CPU (200 ns apart), each waiting at the MMU for the previous (500 ns): they
    land 500 ns apart, in the order sent."""
    system, recorder, landed = system_and_log()
    msgs = [ControlMsg((0,), recorder(n), target_pes=frozenset({3})) for n in "xyz"]
    system.env.run(until=system.env.all_of([system.control.send(m) for m in msgs]))
    first = one_message_ns(system.cfg, "mmu", 0)
    assert landed == [("x", 3, first), ("y", 3, first + MMU_NS), ("z", 3, first + 2 * MMU_NS)]
    assert system.control.landed(3) == 3 and system.control.landed(2) == 0
