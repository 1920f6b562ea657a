"""The PE-side event queue runs its events exactly where SimPy would have.

Chains of events, each scheduling the next when it runs (as a PE's dispatch ends and
stage ends do), are run twice: once all as SimPy timeouts, once with some chains on
a :class:`LocalQueue`. Every event must run at the same time and in the same order,
ties included, and SimPy must see far fewer events when a local chain runs alone.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.sim.events import LocalQueue, SimEnv

SIMPY, SCHEDULE, INLINE = 0, 1, 2  # how a chain's events are scheduled
Chain = tuple[int, list[int]]  # (SIMPY, SCHEDULE or INLINE; delays between its events)


def run_chains(chains: list[Chain], use_local: bool) -> tuple[list[tuple[float, int, int]], int]:
    """Run every chain from time 0 (with ``use_local`` off, all as SimPy timeouts);
    return (time, chain, step) in execution order and the SimPy events popped."""
    env = SimEnv()
    local = LocalQueue(env)
    seen: list[tuple[float, int, int]] = []

    def start(c: int, how: int, delays: list[int]) -> None:
        def fire(step: int, now: float) -> None:
            while True:
                seen.append((now, c, step))
                if step == len(delays):
                    return
                at, step = now + delays[step], step + 1
                if how == SIMPY:
                    ev = env.timeout(at - env.now)
                    ev.callbacks.append(lambda _ev, s=step: fire(s, env.now))
                    return

                def later(_arg: object, s: int = step) -> None:
                    fire(s, local.now)

                if how == SCHEDULE:
                    local.schedule(at, later, None)
                    return
                if not local.run_inline(at, later, None):  # as PE_CPU pays dispatch
                    return
                now = at

        fire(0, env.now)

    for c, (how, delays) in enumerate(chains):
        start(c, how if use_local else SIMPY, delays)
    local.park()
    steps = 0
    while env.peek() != float("inf"):
        env.step()
        steps += 1
    return seen, steps


chains = st.lists(
    st.tuples(
        st.sampled_from([SIMPY, SCHEDULE, INLINE]),
        st.lists(st.integers(0, 5), min_size=1, max_size=12),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(chains=chains)
def test_local_events_run_in_simpy_order(chains):
    reference, _ = run_chains(chains, use_local=False)
    mixed, _ = run_chains(chains, use_local=True)
    assert mixed == reference


def test_a_local_chain_alone_costs_one_simpy_event():
    delays = [3, 0, 1, 4] * 50
    for how in (SCHEDULE, INLINE):
        seen, steps = run_chains([(how, delays)], use_local=True)
        assert seen[-1] == (sum(delays), 0, 200)
        assert steps == 1  # the proxy that starts the queue; 200 events run locally
    _, steps = run_chains([(SIMPY, delays)], use_local=True)
    assert steps == len(delays)
