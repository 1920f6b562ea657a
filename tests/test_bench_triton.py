"""Benchmark (``pytest -m benchmark -s tests/test_bench_triton.py``): a warm Triton launch
on the simulated accelerator against the bare Triton interpreter on the same kernel.

The ``vector_add`` of docs/how-to/triton.md (98432 fp32, ``BLOCK_SIZE=1024``, 97 programs, VA, 1:1
channels): once with ``TRITON_INTERPRET=1`` on plain torch CPU tensors, once through
``Accelerator.run`` (interpreter + hook + functional memory + lowering + simulation).
Both are launched once first (warm), then alternately ``ROUNDS`` times in this one
process; the figure is the median of the per-round ratios of CPU time
(``time.process_time``), so other load on the machine cancels out. Issue-23 target:
<= 2x.

Measured here (issue 23): under ``sim.fabric=reservation`` 3.2-3.5x before the speed
work (functional memory's per-access ``np.unique``/``np.stack`` of pages, chunk
translations cleared every launch, ``np.unique`` in run building), 1.7-1.8x after
(1.4-1.6x with the compiled build); under the fair fabric (the default) 7.4x before,
5.8x after, 4.6-5.3x compiled, the rest being the simulation itself (progressive
filling was 64% of its instructions); 3.75x compiled once the fill scans per-link keys
instead of popping a heap (about 2,340 recomputations a launch, 67 queues each);
2.03-2.06x (medians of four runs; rounds 1.71-2.28) once the compiled build fills in C
(``kernbench/sim/fairshare.c``), orders a recomputation's queues by their heads instead
of sorting them by an attribute, searches components without boxed link ids and
looks up known rates only for components found before: the warm launch's simulation
went from 1,048M to 322M instructions (callgrind: 3 launches minus 2), of which
recomputing rates is still 190M. On an Intel Xeon machine 1.95-1.99x (fair) and
1.47-1.50x (reservation); 1.79x and 1.32x once a whole block over two shards (16 of
the 97 per tensor: a shard is 24,608 B) is read by PA pieces too, not element by
element, and a block's pieces are kept with its chunks' translations.
"""

from __future__ import annotations

import statistics
import time

import pytest

pytest.importorskip("triton")

import torch  # noqa: E402
import triton  # noqa: E402

from kernbench.triton import Accelerator, kernels  # noqa: E402

pytestmark = pytest.mark.benchmark
N, BLOCK, ROUNDS, REPEAT = 98432, 1024, 7, 3
TARGET = 2.0


def _cpu(fn) -> float:
    t0 = time.process_time()
    for _ in range(REPEAT):
        fn()
    return (time.process_time() - t0) / REPEAT


def _ratio(overrides: list[str]) -> float:
    """Median kernbench / bare CPU-time ratio of the warm launch of docs/how-to/triton.md
    under ``overrides``."""
    grid = (triton.cdiv(N, BLOCK),)
    xs, ys = torch.randn(N), torch.randn(N)
    bare_out = torch.empty_like(xs)

    def bare() -> None:
        kernels.vector_add[grid](xs, ys, bare_out, N, BLOCK_SIZE=BLOCK)

    acc = Accelerator(["address=va", "channel_mapping=one_to_one", *overrides])
    x, y = acc.tensor(xs), acc.tensor(ys)
    out = acc.empty_like(x)

    def ours() -> None:
        acc.run(kernels.vector_add, grid, x, y, out, N, BLOCK_SIZE=BLOCK)

    bare(), ours()  # warm: rewritten kernels, imports, caches
    assert torch.equal(bare_out, xs + ys)
    assert torch.equal(acc.to_torch(out), xs + ys)
    ratios, bares, ourss = [], [], []
    for _ in range(ROUNDS):
        b, o = _cpu(bare), _cpu(ours)
        bares.append(b), ourss.append(o), ratios.append(o / b)
    ratio = statistics.median(ratios)
    print(
        f"\nwarm vector_add ({N} fp32, {grid[0]} programs, {' '.join(overrides) or 'defaults'}):"
        f" bare interpreter {statistics.median(bares) * 1e3:.1f} ms CPU, kernbench "
        f"{statistics.median(ourss) * 1e3:.1f} ms CPU; ratio median {ratio:.2f} "
        f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    return ratio


def test_warm_vector_add_within_2x_of_bare_interpreter():
    """The issue's figure (3.1-3.8x when it was written) was the reservation fabric's
    (5384.75 ns then; docs/how-to/triton.md gives 5519.0 under it now); the fair fabric
    is the default since, and both are held to the target."""
    fair = _ratio(["sim.fabric=fair"])
    reservation = _ratio(["sim.fabric=reservation"])
    assert fair <= TARGET
    assert reservation <= TARGET
