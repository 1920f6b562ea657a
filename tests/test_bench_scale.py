"""Benchmark: the simulator at the address space's scale (issue 39).

ADR-0011's PA names up to 16 SIPs x 16 cubes x 64 PEs (16,384 PEs). Measured here,
in CPU time (``time.process_time``: other processes on the machine do not move it):

- 1,024 PEs (4 SIPs x 4 cubes x 64 PEs), ``hotspot`` and ``uniform``, 1:1 and n:1,
  256 B per PE, under VA (the default): target under 5 s a point;
- the largest topology, the same workload, each point in a fresh process as a user's
  run meets it: target under 60 s and 4 GB; its peak RSS per PE, and the run-time
  estimate's figure beside it (kernbench.cli.estimate, which must not fall short);
- cost per access from 16 to 1,024 PEs, every PE streaming 64 accesses of 256 B,
  ``local`` and ``neighbor``: target flat within 2x (not met in the compiled build on
  the 2-core development machine: 2.2-3.9x, memory stalls, see the test);
- 16 PEs' traffic on 16,384 PEs against the same on 16 PEs: what idle PEs cost.

It asserts what holds on any machine (a ratio within one process, a peak below the
limit, an estimate above the peak) and prints the times beside their targets. Every
topology has 8 HBM channels per PE. Run with
``pytest -m benchmark -s tests/test_bench_scale.py`` (compiled build:
``python -c 'import kernbench; print(kernbench.build())'``).
"""

from __future__ import annotations

import statistics
import time

import pytest

import kernbench
from kernbench.cli import estimate
from kernbench.config.schema import AddressModel, KernBenchConfig, StreamPattern
from kernbench.config.validate import validate
from kernbench.sim.system import System
from kernbench.workloads import stream
from tests.support import make_cfg
from tests.test_bench_sim_speed import run_for_json

pytestmark = pytest.mark.benchmark

SHAPES = {16: (1, 1, 16), 64: (1, 1, 64), 256: (1, 4, 64), 1024: (4, 4, 64), 16384: (16, 16, 64)}
CHANNELS = 8  # per PE: 512 pseudo-channels over 64 PEs
GB = 1 << 30


def scaled(pes: int, pattern: str, mapping: str, per_pe: int = 256, **kw: object):
    """``pes`` PEs (SHAPES), ``pattern`` reads of 256 B, ``per_pe`` bytes each, VA, the
    default dispatch cost; ``kw``: more stream keys (set once the topology is), or
    ``model`` (an address model)."""
    model = str(kw.pop("model", "va"))
    cfg = make_cfg(one_to_one=mapping == "1:1", zero_cost=False, access_bytes=256,
                   bytes_per_pe=per_pe, pattern=StreamPattern(pattern))  # fmt: skip
    for key, value in kw.items():
        setattr(cfg.workload, key, value)
    topo = cfg.topology
    topo.n_sips, topo.cubes_per_sip, topo.pes_per_cube = SHAPES[pes]
    topo.cube.memory_map.hbm_pseudo_channels = CHANNELS * topo.pes_per_cube
    topo.cube.memory_map.hbm_channels_per_pe = None
    cfg.address.model = AddressModel(model)
    return validate(cfg)


def cpu_s(cfg: KernBenchConfig) -> tuple[float, dict]:
    """CPU seconds to build the system and run the stream, and its row."""
    start = time.process_time()
    row = stream.run(System(cfg), cfg.workload)
    return time.process_time() - start, row


def in_fresh_process(pes: int, pattern: str, mapping: str) -> dict:
    """One point in a new interpreter: its CPU seconds, its process's peak RSS, and the
    peak RSS of the interpreter before it simulates (imports and a 16-PE point)."""
    code = (
        "import json\n"
        "from tests.test_bench_scale import cpu_s, scaled\n"
        "from tests.test_bench_sim_speed import peak_rss_mb\n"
        "cpu_s(scaled(16, 'local', '1:1'))\n"
        "before = peak_rss_mb()\n"
        f"seconds, row = cpu_s(scaled({pes}, {pattern!r}, {mapping!r}))\n"
        "print(json.dumps({'cpu_s': seconds, 'before_mb': before, 'peak_mb': peak_rss_mb(),"
        " 'accesses': row['accesses']}))\n"
    )
    return run_for_json(code)


def test_1024_pes_hotspot_and_uniform_a_point():
    print(f"\n1,024 PEs (4x4x64), 256 B per PE, VA, {kernbench.build()} build; target < 5 s")
    for pattern in ("hotspot", "uniform"):
        for mapping in ("1:1", "n:1"):
            best = min(cpu_s(scaled(1024, pattern, mapping))[0] for _ in range(2))
            verdict = "met" if best < 5 else "NOT met"
            print(f"  {pattern:<8} {mapping}  {best:6.2f} s CPU  ({verdict})")


@pytest.mark.parametrize("pattern", ["hotspot", "uniform"])
def test_the_largest_topology_in_a_fresh_process(pattern):
    got = in_fresh_process(16384, pattern, "1:1")
    need = sum(n for n, _, _ in estimate.memory_terms(scaled(16384, pattern, "1:1")))
    per_pe = (got["peak_mb"] - got["before_mb"]) * 1024 / 16384
    print(
        f"\n16,384 PEs (16x16x64) {pattern} 1:1, 256 B per PE, VA: {got['cpu_s']:.1f} s CPU"
        f" (target < 60 s: {'met' if got['cpu_s'] < 60 else 'NOT met'}), peak"
        f" {got['peak_mb']:.0f} MB (target < 4 GB; {got['before_mb']:.0f} MB before it"
        f" simulated: {per_pe:.1f} KB per PE), the estimate {need / 2**20:.0f} MB"
    )
    assert got["accesses"] == 16384
    assert got["peak_mb"] < 4096
    assert need / 2**20 >= got["peak_mb"]  # the estimate is a bound, not a guess


@pytest.mark.parametrize("mapping", ["n:1", "1:1"])
def test_cost_per_access_from_16_to_1024_pes(mapping):
    """Every PE streams 64 accesses; CPU time per access at 16, 64, 256 and 1,024 PEs,
    the best of 3 interleaved (frequency drifts), set-up included. The work per access
    is flat (cachegrind, n:1 PA: 28.5k instructions per access at 256 PEs, 31k at
    1,024, set-up included); the time is not quite: with 1,024 PEs' state live at once
    the accesses wait on memory (L2 and a shared L3) and on the garbage collector's
    walks, and 1:1 ``neighbor`` moves flows whose simultaneous recomputations are
    filled together (the fair solver's part of the issue). Asserted: no term grows
    with the PEs per access (it would show as x64 here)."""
    sizes = [16, 64, 256, 1024]
    print(f"\ncost per access, {mapping}, 64 accesses of 256 B per PE, VA, {kernbench.build()}:")
    for pattern in ("local", "neighbor"):
        best = dict.fromkeys(sizes, float("inf"))
        for _ in range(3):
            for pes in sizes:
                seconds, row = cpu_s(scaled(pes, pattern, mapping, per_pe=64 * 256))
                best[pes] = min(best[pes], seconds / row["accesses"])
        spread = max(best.values()) / min(best.values())
        figures = "  ".join(f"{pes}: {us * 1e6:5.1f} us" for pes, us in best.items())
        verdict = "met" if spread <= 2 else "NOT met"
        print(f"  {pattern:<8} {figures}  max/min {spread:.2f} (target <= 2: {verdict})")
        assert spread < 8


@pytest.mark.parametrize("model", ["pa", "va", "la"])
def test_16_pes_of_16384_cost_about_what_16_pes_cost(model):
    """The same 16 PEs' ``local`` traffic, 256 accesses each, on the 16,384-PE topology
    (its other 16,368 PEs idle) and on a 16-PE one: the ratio of their CPU times, the
    median of 7 pairs. Under VA and LA the install reaches the 1,024 PEs of the SIP
    holding the shards (D-VA3), each landing O(1)."""
    big = scaled(16384, "local", "1:1", per_pe=256 * 256, active_pes=16, model=model)
    small = scaled(16, "local", "1:1", per_pe=256 * 256, model=model)
    ratios = []
    for _ in range(7):
        (b, rb), (s, rs) = cpu_s(big), cpu_s(small)
        ratios.append(b / s)
    assert rb == rs  # the same row: idle PEs change nothing
    ratio = statistics.median(ratios)
    print(f"\n{model}: 16 PEs on 16,384 / on 16: x{ratio:.2f} CPU ({s * 1e3:.0f} ms on 16)")
    assert ratio < 3
