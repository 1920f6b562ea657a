"""Functional memory: values travel through the address translation, so a wrong mapping
is a wrong value; bad pointers, unsupported ops and a missing extra fail clearly."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("triton")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernbench.errors import AddressFault  # noqa: E402
from kernbench.runtime import DPPolicy  # noqa: E402
from kernbench.sim.system import System  # noqa: E402
from kernbench.triton import INSTALL_HINT, Accelerator, UnsupportedOp, kernels  # noqa: E402
from kernbench.triton.accelerator import compose_config  # noqa: E402

ONE_PE = DPPolicy("column_wise", 1)
N = 2048  # fp32: 8 KiB = 2 pages of 4 KiB = 4 interleave stripes of 8 x 256 B


def add_on_pe0(acc: Accelerator, corrupt=None):
    """x + y on PE 0 with ``corrupt(acc, x)`` applied to x's mapping after deploy."""
    xs, ys = torch.randn(N), torch.randn(N)
    x, y = acc.tensor(xs, ONE_PE), acc.tensor(ys, ONE_PE)
    out = acc.empty_like(x)
    if corrupt is not None:
        corrupt(acc, x)
    acc.run(kernels.vector_add, (2,), x, y, out, N, BLOCK_SIZE=1024)
    return xs, ys, acc.to_torch(out)


def swap_va_pages(acc: Accelerator, x) -> None:
    """PE 0's MMU maps x's two pages to each other's frames."""
    mmu = acc.system.address.mmus[0]
    va = x.runtime.shard_ptr(0)
    pa0, pa1 = mmu.translate(va), mmu.translate(va + 4096)
    mmu.unmap(va, 8192)
    mmu.map(va, pa1, 4096)
    mmu.map(va + 4096, pa0, 4096)


def swap_la_channels(acc: Accelerator, x) -> None:
    """x's BAAW segment on PE 0 with the PA bases of channels 0 and 1 exchanged."""
    baaw = acc.system.address.baaws[0]
    la = x.runtime.shard_ptr(0)
    seg = baaw.lookup(la)
    bases = list(seg.pa_bases)
    bases[0], bases[1] = bases[1], bases[0]
    baaw.uninstall(la)
    baaw.install(dataclasses.replace(seg, pa_bases=tuple(bases)))


def rerun_after_corrupting(overrides: list[str], corrupt):
    """x + y on PE 0 once through the right mapping, then again after ``corrupt``: a
    translation cached by the first launch must not survive the mapping change."""
    acc = Accelerator(["topology=small", *overrides], pes=1)
    xs, ys = torch.randn(N), torch.randn(N)
    x, y = acc.tensor(xs, ONE_PE), acc.tensor(ys, ONE_PE)
    out = acc.empty_like(x)
    acc.run(kernels.vector_add, (2,), x, y, out, N, BLOCK_SIZE=1024)
    assert torch.equal(acc.to_torch(out), xs + ys)
    corrupt(acc, x)
    acc.run(kernels.vector_add, (2,), x, y, out, N, BLOCK_SIZE=1024)
    return xs, ys, acc.to_torch(out)


def test_a_page_mapping_changed_between_launches_is_seen_by_the_next():
    xs, ys, out = rerun_after_corrupting(["address=va"], swap_va_pages)
    assert torch.equal(out, torch.cat([xs[1024:], xs[:1024]]) + ys)


def test_a_segment_changed_between_launches_is_seen_by_the_next():
    overrides = ["address=la", "channel_mapping=one_to_one"]
    xs, ys, out = rerun_after_corrupting(overrides, swap_la_channels)
    order = [1, 0, 2, 3, 4, 5, 6, 7]
    assert torch.equal(out, xs.view(-1, 8, 64)[:, order].reshape(-1) + ys)


def test_pages_unmapped_after_a_launch_are_not_read_through_a_stale_translation():
    acc = Accelerator(["topology=small", "address=va"], pes=1)
    x = acc.tensor(torch.randn(N), ONE_PE)
    out = acc.empty_like(x)
    acc.run(kernels.vector_add, (2,), x, x, out, N, BLOCK_SIZE=1024)
    acc.system.address.mmus[0].unmap(x.runtime.shard_ptr(0), 8192)
    with pytest.raises(AddressFault, match="mmu"):
        acc.to_torch(x)  # no launch in between: the translator alone must notice


def test_a_segment_uninstalled_after_a_launch_is_not_read_through_a_stale_translation():
    acc = Accelerator(["topology=small", "address=la"], pes=1)
    x = acc.tensor(torch.randn(N), ONE_PE)
    out = acc.empty_like(x)
    acc.run(kernels.vector_add, (2,), x, x, out, N, BLOCK_SIZE=1024)
    acc.system.address.baaws[0].uninstall(x.runtime.shard_ptr(0))
    with pytest.raises(AddressFault, match="outside every BAAW segment"):
        acc.to_torch(x)


def test_values_are_right_through_a_correct_mapping():
    for model in ("pa", "va", "la"):
        acc = Accelerator(["topology=small", f"address={model}", "channel_mapping=one_to_one"])
        xs, ys, out = add_on_pe0(acc)
        assert torch.equal(out, xs + ys)


def test_a_corrupted_page_mapping_gives_wrong_values():
    acc = Accelerator(["topology=small", "address=va"], pes=1)
    xs, ys, out = add_on_pe0(acc, swap_va_pages)
    assert not torch.allclose(out, xs + ys)
    # exactly what the swapped pages hold: x's second page first
    assert torch.equal(out, torch.cat([xs[1024:], xs[:1024]]) + ys)


def test_a_corrupted_channel_interleave_gives_wrong_values():
    acc = Accelerator(["topology=small", "address=la", "channel_mapping=one_to_one"], pes=1)
    xs, ys, out = add_on_pe0(acc, swap_la_channels)
    assert not torch.allclose(out, xs + ys)
    # granules (64 fp32) 0 and 1 of every 8-granule stripe trade places
    order = [1, 0, 2, 3, 4, 5, 6, 7]
    assert torch.equal(out, xs.view(-1, 8, 64)[:, order].reshape(-1) + ys)


@triton.jit
def pick_middle(x_ptr, y_ptr, out_ptr, LO: tl.constexpr, HI: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    middle = (offs >= LO) & (offs < HI)
    tl.store(out_ptr + offs, tl.load(tl.where(middle, y_ptr + offs, x_ptr + offs)))


def test_a_pointer_block_over_two_tensors_reads_each():
    # first and last pointers in x, the middle ones in y (deployed after x)
    acc = Accelerator(["topology=small", "address=va"], pes=1)
    xs, ys = torch.randn(1024), torch.randn(1024)
    x, y = acc.tensor(xs, ONE_PE), acc.tensor(ys, ONE_PE)
    out = acc.empty_like(x)
    acc.run(pick_middle, (1,), x, y, out, LO=256, HI=768, BLOCK=1024)
    assert torch.equal(acc.to_torch(out), torch.cat([xs[:256], ys[256:768], xs[768:]]))


def test_a_warm_launch_reads_non_contiguous_chunks_as_the_first():
    """The first launch resolves the chunks element by element; the second reads whole
    blocks by PA pieces. With channels 0 and 1 swapped the pieces are not contiguous."""
    acc = Accelerator(["topology=small", "address=la", "channel_mapping=one_to_one"], pes=1)
    xs, ys = torch.randn(N), torch.randn(N)
    x, y = acc.tensor(xs, ONE_PE), acc.tensor(ys, ONE_PE)
    out = acc.empty_like(x)
    swap_la_channels(acc, x)
    order = [1, 0, 2, 3, 4, 5, 6, 7]
    for _ in range(2):
        acc.run(kernels.vector_add, (2,), x, y, out, N, BLOCK_SIZE=1024)
        assert torch.equal(acc.to_torch(out), xs.view(-1, 8, 64)[:, order].reshape(-1) + ys)


@triton.jit
def swap_pairs_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inner = (offs > 0) & (offs < BLOCK - 1)
    src = tl.where(inner, offs + 1 - 2 * ((offs + 1) % 2), offs)  # 0, 2, 1, 4, 3, ..., last
    tl.store(out_ptr + offs, tl.load(x_ptr + src))


def test_a_permuted_block_with_a_runs_ends_is_read_in_its_order():
    acc = Accelerator(["topology=small", "address=va"], pes=1)
    xs = torch.randn(1024)
    x = acc.tensor(xs, ONE_PE)
    out = acc.empty_like(x)
    src = list(range(1024))
    for i in range(1, 1022, 2):
        src[i], src[i + 1] = src[i + 1], src[i]
    for _ in range(2):  # cold, then warm
        acc.run(swap_pairs_copy, (1,), x, out, BLOCK=1024)
        assert torch.equal(acc.to_torch(out), xs[src])


@pytest.mark.parametrize("swapped", [False, True])
def test_a_block_over_two_shards_is_the_element_wise_runs_and_pas(swapped):
    """Translator.run_pieces (a warm launch's whole blocks) against the element-wise
    path on a block over two shards: an 8 KiB tensor's shard cut in two halves, the
    block its bytes 2048..6144. In place, the halves' device bytes are contiguous: one
    run of 4096 B. Swapped (the second half's bytes first on the device), two runs of
    2048 B, in address order: the second half's first. Either way the pieces are the
    elements' PAs in tensor order."""
    from kernbench.triton.memory import ShardView
    from kernbench.triton.runs import contiguous_runs

    acc = Accelerator(["topology=small", "address=va"], pes=1)
    x = acc.tensor(torch.randn(N), ONE_PE)
    (whole,) = x.views[0]
    half = whole.nbytes // 2
    assert half == 4096
    low, high = whole.ptr, whole.ptr + half
    first, second = (high, low) if swapped else (low, high)
    views = [[ShardView(0, half, first, whole.pe), ShardView(half, half, second, whole.pe)]]
    pe, tr = whole.pe, acc.translator
    offsets = np.arange(2048, 6144, 4, dtype=np.int64)
    dev = tr.device_addrs(views, pe, offsets)
    pas = tr.pas(pe, dev)  # resolves the chunks, as a first launch does
    assert tr.run_pieces(views, pe, 2048, 4096) is not None  # all resolved
    runs, pieces = tr.run_pieces(views, pe, 2048, 4096)  # warm: from what it kept
    assert runs == contiguous_runs(dev, 4)
    assert runs == ([(low + 2048, 4096)] if not swapped else
                    [(low, 2048), (high + 2048, 2048)])  # fmt: skip
    by_element = np.concatenate([np.arange(pa, pa + n, 4) for pa, n in pieces])
    assert by_element.tolist() == pas.tolist()


def test_warm_blocks_at_unaligned_shard_starts_are_the_element_wise_pas():
    """LA, 1:1, 5000 fp32 over 4 PEs: shards of 5000 B, each right after the last in
    the LA space, so shards 1-3 start 136, 16 and 152 B into a 256 B translation chunk
    (min(4 KiB page, 256 B interleave)). ``vector_add`` launched twice (x + x: its
    second load of each block, and the whole second launch, take the warm path) gives
    x + x each time, and every PE's pieces of each program's block, and of blocks that
    start off a chunk in the tensor too, are the element-wise PAs in tensor order: a
    piece from an unaligned start ends at its chunk's end, where the next chunk may
    map anywhere."""
    from kernbench.triton.runs import contiguous_runs

    acc = Accelerator(["topology=small", "address=la", "channel_mapping=one_to_one"])
    xs = torch.randn(5000)
    x = acc.tensor(xs)
    out = acc.empty_like(x)
    chunk = acc.translator.chunk
    assert chunk == 256
    assert [v.ptr % chunk for v in x.views[0]] == [0, 5000 % 256, 10000 % 256, 15000 % 256]
    for _ in range(2):  # cold, then warm
        acc.run(kernels.vector_add, (5,), x, x, out, 5000, BLOCK_SIZE=1024)
        assert int((acc.to_torch(out) != xs + xs).sum()) == 0  # elements wrong
    tr = acc.translator
    blocks = [(o, 4096) for o in range(0, 16384, 4096)] + [(16384, 3616), (4100, 8000)]
    for pe in (v.pe for v in x.views[0]):
        for offset, nbytes in blocks:
            dev = tr.device_addrs(x.views, pe, np.arange(offset, offset + nbytes, 4))
            pas = tr.pas(pe, dev)  # resolves the chunks, as a first launch does
            runs, pieces = tr.run_pieces(x.views, pe, offset, nbytes)
            assert runs == contiguous_runs(dev, 4)
            by_element = np.concatenate([np.arange(pa, pa + n, 4) for pa, n in pieces])
            assert by_element.tolist() == pas.tolist(), (pe, offset)


def test_a_pointer_past_its_tensor_is_a_fault():
    acc = Accelerator(["topology=small", "address=va"], pes=1)
    x = acc.tensor(torch.randn(1000), ONE_PE)
    out = acc.empty_like(x)
    # n = 1001: one element past the end (the guard page after the tensor is unmapped
    # in the host window, so it would otherwise read silently)
    with pytest.raises(AddressFault, match=r"reads past the end of its device tensor \(4000"):
        acc.run(kernels.vector_add, (1,), x, x, out, 1001, BLOCK_SIZE=1024)


OOB_MODULE = """
import triton
import triton.language as tl


@triton.jit
def shifted_copy(src, dst, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs + SHIFT, mask=mask), mask=mask)
"""


def test_a_fault_names_the_kernel_line_the_argument_and_the_offset(tmp_path, monkeypatch):
    """Issue 22: the fault said only the pointer and the tensor's size. A user's kernel
    (its own file) reads 1000 fp32 from ``src + 8``: elements 992..999 run past the
    4000 bytes; the fault names the furthest, element 999 + 8 = 1007 at byte 4028 of
    ``src``, and line 10 of the user's file."""
    (tmp_path / "oob_kernels.py").write_text(OOB_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    from oob_kernels import shifted_copy

    acc = Accelerator(["topology=small", "address=va"], pes=1)
    other = acc.tensor(torch.randn(64), ONE_PE)  # src is not the first tensor deployed
    src = acc.tensor(torch.randn(1000), ONE_PE)
    dst = acc.empty((1024,), torch.float32, ONE_PE)
    with pytest.raises(AddressFault) as info:
        acc.run(shifted_copy, (1,), src, dst, 1000, SHIFT=8, BLOCK=1024)
    line = "tl.store(dst + offs, tl.load(src + offs + SHIFT, mask=mask), mask=mask)"
    assert str(info.value) == (
        f"pointer {src.data_ptr() + 4028:#x} reads past the end of its device tensor"
        f" (4000 bytes): byte 4028 of argument 'src';"
        f" kernel shifted_copy, {tmp_path / 'oob_kernels.py'}:10: {line}"
    )
    assert other.data_ptr() != src.data_ptr()


def test_shards_padded_to_whole_elements_round_trip():
    acc = Accelerator(["topology=small", "address=la"])  # 4 PEs
    xs = torch.randn(1001)  # 4004 B: shards of 1001 B would cut elements
    x = acc.tensor(xs)
    assert torch.equal(acc.to_torch(x), xs)
    out = acc.empty_like(x)
    acc.run(kernels.vector_add, (1,), x, x, out, 1001, BLOCK_SIZE=1024)
    assert torch.equal(acc.to_torch(out), xs + xs)


@pytest.mark.parametrize("model", ["pa", "va"])  # PA: our copy choice; VA: the MMU's
def test_replicated_inputs_are_read_from_the_own_sip_and_cube(model):
    """2 SIPs x 2 cubes x 2 PEs: a replicated input has a copy in each of the 4 cubes,
    and each of the 8 programs reads its x and y blocks from the copy in its own SIP
    *and* cube (cube numbers repeat across SIPs: by cube alone, half of the reads went
    to the other SIP's copy, with the right values, only slower)."""
    seen = []  # (executing PE, device address, owner PE of each request)

    def trace(pe, stage, issue, request, begin, done) -> None:  # every physical request
        seen.append((pe, stage.addr, acc.system.physical.owner(request[1])))

    cfg = compose_config(["topology=small", "topology.n_sips=2", f"address={model}"])
    acc = Accelerator(system=System(cfg, trace=trace))
    acc.policy = DPPolicy("replicate")
    xs, ys = torch.randn(4096), torch.randn(4096)
    x, y = acc.tensor(xs), acc.tensor(ys)
    assert len(x.views) == 4  # one copy per cube
    out = acc.empty_like(x)  # an output is split, not replicated
    assert out.runtime.policy == DPPolicy("column_wise", "all")
    acc.run(kernels.vector_add, (8,), x, y, out, 4096, BLOCK_SIZE=512)
    assert torch.equal(acc.to_torch(out), xs + ys)
    stores = [(v.ptr, v.nbytes) for v in out.views[0]]  # every other access reads x or y
    reads = [(pe, o) for pe, a, o in seen if not any(b <= a < b + n for b, n in stores)]
    assert len(reads) == 8 * 2  # each program reads its x and y block (n:1: 1 request)
    assert {(pe.sip, pe.cube) for pe, _ in reads} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    away = sum((o.sip, o.cube) != (pe.sip, pe.cube) for pe, o in reads)
    assert away == 0  # reads from another SIP's or cube's copy


@triton.jit
def histogram_kernel(x_ptr, counts_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.atomic_add(counts_ptr + x, 1)


def test_an_unsupported_op_names_the_op_and_the_kernel_line():
    acc = Accelerator(["topology=small"], pes=1)
    x = acc.tensor(torch.zeros(16, dtype=torch.int32))
    counts = acc.tensor(torch.zeros(16, dtype=torch.int32))
    with pytest.raises(UnsupportedOp) as err:
        acc.run(histogram_kernel, (1,), x, counts, BLOCK=16)
    msg = str(err.value)
    assert msg.startswith("atomic_rmw is not supported by kernbench.triton")
    assert "kernel histogram_kernel" in msg and "tl.atomic_add(counts_ptr + x, 1)" in msg
    line = histogram_kernel.fn.__code__.co_firstlineno + 4  # the atomic_add line
    assert f"test_triton_memory.py:{line}:" in msg


def test_a_host_tensor_argument_says_to_deploy_it():
    acc = Accelerator(["topology=small"])
    x = acc.tensor(torch.randn(8))
    with pytest.raises(TypeError, match="argument 'y_ptr' is a host torch tensor"):
        acc.run(kernels.vector_add, (1,), x, torch.randn(8), x, 8, BLOCK_SIZE=8)


BLOCKED = "raise ImportError('No module named triton (blocked for this test)')\n"


def test_without_the_extra_the_rest_works_and_the_import_says_what_to_install(tmp_path, run_app):
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text(BLOCKED)  # shadows the real triton
    probe = "import kernbench.triton"
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert f"ImportError: {INSTALL_HINT}" in proc.stderr
    assert "pip install -e '.[triton]'" in INSTALL_HINT  # what works from a checkout
    ok = run_app("topology=small", "workload.bytes_per_pe=65536")
    assert ok.returncode == 0, ok.stderr
    assert ok.ok_rows()[0]["bytes_moved"] == 4 * 65536
    bad = run_app("topology=small", "workload=triton")
    assert bad.returncode == 1
    assert (
        bad.stderr.strip()
        .splitlines()[-1]
        .startswith(f"kernbench: error: workload: {INSTALL_HINT}")
    )
    assert bad.rows()[0]["status"] == "error"


def test_leaving_the_accelerator_frees_its_tensors():
    with Accelerator(["topology=small", "address=la"]) as acc:
        x = acc.tensor(torch.randn(4096))
        out = acc.empty_like(x)
        acc.run(kernels.vector_add, (4,), x, x, out, 4096, BLOCK_SIZE=1024)
        assert not x.runtime.freed
    assert x.runtime.freed and out.runtime.freed
    hbm = acc.system.memory[0].hbm
    assert hbm.free_blocks == [(0, hbm.size)]  # every shard's HBM is back


@pytest.mark.parametrize("elem", [1, 2, 3, 4, 8])
def test_functional_memory_matches_a_byte_dictionary(elem):
    """Reads and writes at random PAs (aligned or not, repeated, over many pages, some
    never written) hold exactly what a byte-by-byte model holds; the last write wins."""
    from kernbench.triton.memory import PAGE_BYTES, FunctionalMemory

    rng = np.random.default_rng(elem)
    mem, model = FunctionalMemory(), {}
    for _ in range(20):
        pages = rng.integers(0, 40, 64) * 7919  # scattered page ids
        offs = rng.integers(0, PAGE_BYTES - elem + 1, 64)
        if rng.random() < 0.5:
            offs -= offs % elem  # aligned elements
        pas = (pages * PAGE_BYTES + offs).astype(np.int64)
        data = rng.integers(0, 256, (64, elem), dtype=np.uint8)
        mem.write(pas, data)
        for pa, row in zip(pas.tolist(), data, strict=True):
            for i, b in enumerate(row.tolist()):
                model[pa + i] = b
        probe = np.concatenate([pas, pas + PAGE_BYTES * 3])  # some never-written pages
        probe = probe[probe % PAGE_BYTES <= PAGE_BYTES - elem]
        want = [[model.get(pa + i, 0) for i in range(elem)] for pa in probe.tolist()]
        assert mem.read(probe, elem).tolist() == want
