"""Benchmark: simulated DMA accesses per wall second against SimPy's bare event rate.

Not a timed test: it records ratios measured within one process (``sim.measure_speed``:
SimPy's bare ``yield env.timeout(1)`` rate just before each run; the flatness check and
the fast-path table in CPU time, ``time.process_time``, which other processes on the
machine do not move), so a loaded machine moves both numbers together. It asserts what
must hold on any machine — cost per access flat in the amount of work, peak memory
bounded — and prints the speed ratios beside the issue's targets. Run with
``pytest -m benchmark -s tests/test_bench_sim_speed.py``.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import subprocess
import sys
import time

import pytest

from kernbench import simulate
from kernbench.config.schema import (
    AddressModel,
    GqaWorkloadConfig,
    KernBenchConfig,
    StreamPattern,
)
from kernbench.config.validate import validate
from kernbench.sim.speed import bare_timeout_rate
from tests.support import make_cfg

ACCESS = 2048  # N*g: under 1:1 one request on each of the 8 channels
TARGETS = {"n:1 pa": 0.5, "n:1 la": 0.5, "1:1 la": 0.25, "1:1 pa": 0.25}
LINEAR_TOL = 0.20
PEAK_MB = 150  # the issue-23 target for a 10^6-access run


def stream_cfg(
    label: str, accesses: int, pes: int = 1, pattern: str = "local", fast_dma: bool = True
) -> KernBenchConfig:
    """``pes`` PEs streaming ``accesses`` reads in all at the default dispatch cost."""
    mapping, model = label.split()
    cfg = make_cfg(
        one_to_one=mapping == "1:1",
        zero_cost=False,
        access_bytes=ACCESS,
        bytes_per_pe=ACCESS * accesses // pes,
        active_pes=pes,
        outstanding=4,
        pattern=StreamPattern(pattern),
    )
    cfg.address.model = AddressModel(model)
    cfg.sim = dataclasses.replace(cfg.sim, measure_speed=True, fast_dma=fast_dma)
    return validate(cfg)


def bare_cpu_s_per_event(events: int = 200_000) -> float:
    """CPU seconds per event of SimPy's bare ``yield env.timeout(1)`` loop."""
    return 1 / bare_timeout_rate(events, time.process_time)


def cpu_s_per_access(cfg: KernBenchConfig, accesses: int) -> float:
    """CPU seconds per access of one run of ``accesses`` accesses, without the bare-rate
    measurement ``sim.measure_speed`` adds (setup included: small beside 10^4 accesses).
    The collector runs first, untimed: a full collection that earlier runs' objects
    made due would otherwise land in this run's time (one run in two, 1.5 us per
    access of a 2.2 us ``local`` one)."""
    cfg = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, measure_speed=False))
    gc.collect()
    start = time.process_time()
    simulate.run(cfg)
    return (time.process_time() - start) / accesses


def gqa_cfg(name: str) -> KernBenchConfig:
    cfg = KernBenchConfig(workload=GqaWorkloadConfig(name=name, seq_tokens=128 * 1024))
    cfg.sim = dataclasses.replace(cfg.sim, measure_speed=True)
    return validate(cfg)


def row(label: str, timings: dict[str, float]) -> str:
    target = TARGETS.get(label)
    verdict = (
        ""
        if target is None
        else f"  target {target:g}: " + ("met" if timings["speed_ratio"] >= target else "NOT met")
    )
    bare = timings["bare_simpy_events_per_s"]
    return (
        f"{label:<11}{timings['sim_accesses']:>9,.0f} acc {timings['sim_wall_s']:7.2f} s "
        f"{timings['accesses_per_s']:>10,.0f}/s  bare {bare:>10,.0f}/s"
        f"  ratio {timings['speed_ratio']:.3f}{verdict}"
    )


@pytest.mark.benchmark
def test_speed_ratios():
    lines = []
    for label in TARGETS:
        lines.append(row(label, simulate.run(stream_cfg(label, 100_000)).timings))
    # 16 PEs in lockstep: the same accesses, spread over every PE of the topology
    lines.append(row("n:1 pa x16", simulate.run(stream_cfg("n:1 pa", 100_000, 16)).timings))
    for name in ("gqa_opt2", "gqa_opt3"):  # accesses: the composites' DMA stages
        lines.append(row(name, simulate.run(gqa_cfg(name)).timings))
    print("\n" + "\n".join(lines))


@pytest.mark.benchmark
def test_cost_per_access_is_flat_from_1e4_to_1e6_and_memory_is_bounded():
    """Bare SimPy events' worth of CPU time per access, in CPU time
    (``time.process_time``: other processes do not move it), every run in a fresh
    process, as a user's run meets it. In this one, after the other benchmarks, each
    10^4 run paid for a full garbage collection of the objects they had left (5-9
    bare events per access instead of 1.5), and a 10^5 run after a 10^4 run in one
    process cost up to 27% more than either: that is the process's history, not the
    simulator. 10^4 and 10^5: the best of 3, interleaved (frequency drifts); the 10^6
    run's process also gives its peak RSS.

    Asserted: an access costs the same from 10^5 to 10^6 as from 10^4 to 10^5, the
    slopes between the runs (set-up excluded), within 20%. Each run's whole time over
    its accesses charged the 10^4 run its 3-4 ms of set-up, some 15-25% of it once
    the event heap was in C: 10^5 against 10^4 read -9% to -31% in six runs of the
    same code (2026-12-04); the slopes read +8.0%, -5.1% and -12.2%."""
    runs: dict[int, list[dict[str, float]]] = {10**4: [], 10**5: []}
    for _ in range(3):
        for n, measured in runs.items():
            measured.append(measure_in_subprocess("n:1 pa", n))
    big = measure_in_subprocess("n:1 pa", 10**6)
    runs[10**6] = [big]
    # Each run's CPU time in its own process's bare events (a process that met a slow
    # machine met it in both), the best of each size's runs
    total = {
        n: min(m["cpu_s_per_access"] * n / m["bare_cpu_s_per_event"] for m in measured)
        for n, measured in runs.items()
    }
    print()
    for n, events in total.items():
        print(f"n:1 pa {n:>9,} accesses: {events / n:6.2f} bare events per access")
    low = (total[10**5] - total[10**4]) / (10**5 - 10**4)
    high = (total[10**6] - total[10**5]) / (10**6 - 10**5)
    print(
        f"slopes: {low:.2f} bare events per access from 10^4 to 10^5, {high:.2f} from 10^5"
        f" to 10^6 ({high / low - 1:+.1%}, limit {LINEAR_TOL:.0%})"
    )
    print(f"peak RSS of the 10^6-access run: {big['max_rss_mb']:.0f} MB (limit {PEAK_MB})")
    assert abs(high / low - 1) <= LINEAR_TOL
    assert big["max_rss_mb"] < PEAK_MB


@pytest.mark.benchmark
@pytest.mark.parametrize("label", ["n:1 va", "n:1 la", "1:1 la"])
def test_memory_of_a_1e6_access_run_is_bounded_under_every_address_model(label):
    """What an address model holds per mapped byte (a VA page table, BAAW segments)
    must not grow with the tensor: 10^6 accesses of 2 KiB map 2 GB."""
    big = measure_in_subprocess(label, 10**6)
    print(f"\n{label}: peak RSS of the 10^6-access run {big['max_rss_mb']:.0f} MB")
    assert big["max_rss_mb"] < PEAK_MB


def peak_rss_mb() -> float:
    """This process's peak resident memory. Linux: the high-water mark of its own
    address space (``VmHWM``), not ``getrusage``'s ``ru_maxrss``, which a process
    started by ``subprocess`` inherits from its parent's at the fork (a pytest process
    that had grown to 476 MB made a 95 MB run report 476 MB). Elsewhere ``ru_maxrss``,
    whose unit is the platform's (KiB on Linux, bytes on macOS)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def measure_in_subprocess(label: str, accesses: int) -> dict[str, float]:
    code = (
        "import json\n"
        "from tests.test_bench_sim_speed import bare_cpu_s_per_event, cpu_s_per_access\n"
        "from tests.test_bench_sim_speed import peak_rss_mb, stream_cfg\n"
        "t = {'bare_cpu_s_per_event': bare_cpu_s_per_event()}\n"
        f"t['cpu_s_per_access'] = cpu_s_per_access(stream_cfg({label!r}, {accesses}), {accesses})\n"
        "t['max_rss_mb'] = peak_rss_mb()\n"
        "print(json.dumps(t))\n"
    )
    return run_for_json(code)


def run_for_json(code: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter (as a user's process meets the simulator);
    the JSON its last line of output prints."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


FAST_CASES = [  # (label, PEs, pattern)
    ("n:1 pa", 1, "local"),
    ("1:1 pa", 1, "local"),
    ("n:1 pa", 16, "local"),
    ("n:1 pa", 16, "hotspot"),
    ("1:1 pa", 16, "local"),
    ("1:1 pa", 16, "hotspot"),
]


@pytest.mark.benchmark
def test_fast_dma_against_the_general_path():
    """CPU time per access with ``sim.fast_dma`` on and off, alternating in this process
    (best of 3), in microseconds and as a multiple of SimPy's bare event rate; and each
    16-PE hotspot run's cost per access over the same mapping's 16-PE local run."""
    accesses, best = 20_000, {}
    for _ in range(3):
        bare = bare_cpu_s_per_event()
        for label, pes, pattern in FAST_CASES:
            n = accesses // 10 if (label, pattern) == ("1:1 pa", "hotspot") else accesses
            for fast in (True, False):
                cost = cpu_s_per_access(stream_cfg(label, n, pes, pattern, fast), n)
                key = (label, pes, pattern, fast)
                best[key] = min(best.get(key, (float("inf"), 0.0)), (cost, bare))
    print()
    for (label, pes, pattern, fast), (cost, bare) in best.items():
        local = best[(label, pes, "local", fast)][0]
        print(
            f"{label} {pes:>2} PE {pattern:<8} fast_dma={fast!s:<5} {cost * 1e6:7.2f} us"
            f"  {bare / cost:.3f} x bare SimPy  {cost / local:5.2f} x local"
        )


# The table (issue 23): (label, PEs, pattern), each with its target ratio to
# bare SimPy per build (None: no target). 2 KiB reads, 4 in flight.
BUILD_CASES = [
    ("n:1 pa", 1, "local"),
    ("n:1 la", 1, "local"),
    ("n:1 va", 1, "local"),
    ("1:1 la", 1, "local"),
    ("n:1 pa", 16, "local"),
    ("n:1 pa", 16, "hotspot"),
    ("1:1 pa", 16, "local"),  # not in the table: what 1:1 hotspot is held to
    ("1:1 pa", 16, "hotspot"),
]
BUILD_TARGETS = {"compiled": {"n:1": 0.5, "1:1": 0.25}, "pure": {"n:1": 0.3, "1:1": 0.15}}


def build_table(accesses: int = 20_000, rounds: int = 3) -> dict[str, object]:
    """This process's build and, per case of :data:`BUILD_CASES`, the best of ``rounds``
    (CPU seconds per access, CPU seconds per bare SimPy event measured just before), and
    the kernel trace's cost per command (:func:`trace_cpu_s_per_command`)."""
    import kernbench

    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for label, pes, pattern in BUILD_CASES:
            n = accesses // 10 if (label, pes, pattern) == ("1:1 pa", 16, "hotspot") else accesses
            bare = bare_cpu_s_per_event()
            cost = cpu_s_per_access(stream_cfg(label, n, pes, pattern), n)
            key = f"{label}|{pes}|{pattern}"
            if key not in best or cost / bare < best[key][0] / best[key][1]:
                best[key] = (cost, bare)
    bare = bare_cpu_s_per_event()
    trace = min(trace_cpu_s_per_command(accesses) for _ in range(rounds))
    return {"build": kernbench.build(), "cases": best, "trace": (trace, bare)}


def trace_cpu_s_per_command(commands: int) -> float:
    """CPU seconds per command of tracing a stream-like kernel (one ``tl.load`` of
    2 KiB into one of 4 buffers per access, as the stream kernel's hot loop) and
    replaying its commands with nothing simulated: the floor under every access's
    cost that the simulator does not own."""
    from kernbench import tl
    from kernbench.runtime.exec_paths import ReplaySource

    def kernel(n: int) -> None:
        bufs = [tl.zeros((ACCESS,), dtype_bytes=1) for _ in range(4)]
        shape = (ACCESS,)
        for i in range(n):
            tl.load(i * ACCESS, shape, 1, bufs[i % 4])

    start = time.process_time()
    source = ReplaySource(kernel, (commands,), (0,), (1,))
    while source.next() is not None:
        pass
    return (time.process_time() - start) / commands


def build_table_in_subprocess(pure: bool) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "KERNBENCH_PURE"}
    if pure:
        env["KERNBENCH_PURE"] = "1"
    code = (
        "import json\n"
        "from tests.test_bench_sim_speed import build_table\n"
        "print(json.dumps(build_table()))\n"
    )
    return run_for_json(code, env)


@pytest.mark.benchmark
def test_both_builds_against_bare_simpy():
    """The issue's table for the compiled and the pure build, each in a fresh process
    (one after the other: two at once would share the cores), in CPU time: us per
    access, the ratio to SimPy's bare event rate in that process with the build's
    target beside it, and each 16-PE hotspot run's cost over the same mapping's 16-PE
    local run (the issue's target for the pure build: within 3x)."""
    tables = [build_table_in_subprocess(pure) for pure in (False, True)]
    print()
    for table in tables:
        build, cases = table["build"], table["cases"]
        targets = BUILD_TARGETS[build]
        for key, (cost, bare) in cases.items():
            label, pes, pattern = key.split("|")
            ratio, target = bare / cost, targets.get(label[:3]) if pes == "1" else None
            verdict = (
                ""
                if target is None
                else f"  target {target:g}: " + ("met" if ratio >= target else "NOT met")
            )
            extra = ""
            if pattern == "hotspot":
                extra = f"  {cost / cases[f'{label}|16|local'][0]:4.1f} x its 16-PE local"
            print(
                f"{build:<8} {label} {pes:>2} PE {pattern:<8} {cost * 1e6:7.2f} us/access"
                f"  {ratio:.3f} x bare SimPy{verdict}{extra}"
            )
    for table in tables:
        (trace, bare), target = table["trace"], BUILD_TARGETS[table["build"]]["n:1"]
        print(
            f"{table['build']:<8} kernel trace and replay alone: {trace * 1e6:.2f} us a command"
            f" = {trace / bare:.2f} bare SimPy events; n:1's target of {target:g} leaves"
            f" {1 / target - trace / bare:.2f} for the rest of an access"
        )
    # The speed-up as the ratio of the two builds' ratios to bare SimPy: each measured
    # against its own process's bare rate, so a clock that drifts between them cancels.
    compiled, pure = (dict(t["cases"]) for t in tables)
    for key, (cost, bare) in compiled.items():
        speedup = (bare / cost) / (pure[key][1] / pure[key][0])
        print(f"compiled / pure {key.replace('|', ' ')}: {speedup:.2f}x")


def test_a_child_process_peak_memory_is_its_own_not_its_parents():
    """The memory benchmarks run the 10^6-access point in a child process; the child's
    peak must not include what the parent holds at the fork (Linux's ``ru_maxrss``
    carries it over). The parent holds 300 MB; a bare child peaks at about 10 MB."""
    held = b"\x01" * (300 * 2**20)  # resident (every page written) until the test returns
    code = "import json\nfrom tests.test_bench_sim_speed import peak_rss_mb\n"
    code += "print(json.dumps({'mb': peak_rss_mb()}))"
    assert len(held) == 300 * 2**20
    assert run_for_json(code)["mb"] < 100
