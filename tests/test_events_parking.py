"""LocalQueue parking: one proxy per key in SimPy's queue (a regression test)."""

from __future__ import annotations

from kernbench.sim.events import LocalQueue, SimEnv


def test_a_key_parked_twice_runs_once_and_never_ties_in_simpys_queue():
    """e1 is parked at 10; an earlier e0 is scheduled from outside and parked at 5; a
    SimPy timeout at 7 stops the queue after e0, so e1 is parked again. Two proxies
    under e1's key used to tie in SimPy's heap, which then compared them: TypeError."""
    env = SimEnv()
    queue = LocalQueue(env)
    ran: list[tuple[str, float]] = []

    def note(name: str) -> None:
        ran.append((name, queue.now))

    queue.schedule(10, note, "e1")
    queue.park()
    queue.schedule(5, note, "e0")
    queue.park()
    env.timeout(7).callbacks.append(lambda _: ran.append(("simpy", env.now)))
    env.run()
    assert ran == [("e0", 5), ("simpy", 7), ("e1", 10)]
