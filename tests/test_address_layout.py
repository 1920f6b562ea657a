"""A tensor's shards in its VA / LA range (issue 12, defect 4; ADR-0011 D-VA1, D-LA1).

Shards sit back to back wherever the model's layout unit allows (VA: a page; LA: a
byte, segments being byte-granular), so ``base + k`` is byte ``k`` of the tensor, as
kernel pointer arithmetic expects. Under VA, shards that are not whole pages start a
page-rounded stride apart; an access into the hole after a shard is a fault naming
the tensor, the PE and the address, never a PageFault -> PA fallback.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.config.validate import validate
from kernbench.errors import AddressFault
from kernbench.runtime import DPPolicy
from tests.address_support import launch_reads, model_cfg
from tests.support import make_system

PAGE = 256  # a small page keeps every k of a several-page tensor cheap to check


def small_system(model: str, one_to_one: bool, page_size: int = PAGE):
    cfg = model_cfg(model, one_to_one)
    cfg.topology.pes_per_cube, cfg.topology.cube.memory_map.hbm_pseudo_channels = 2, 16
    cfg.topology.cube.memory_map.hbm_channels_per_pe = None
    cfg.topology.pe_mmu.page_size = page_size
    return make_system(validate(cfg))


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["va", "la"]),
    one_to_one=st.booleans(),
    shards=st.integers(1, 4),
    units=st.integers(1, 5),
    reader=st.integers(0, 3),
    data=st.data(),
)
def test_base_plus_k_is_byte_k_of_the_tensor(model, one_to_one, shards, units, reader, data):
    """For a shard size that is a multiple of the layout unit (VA: a page; LA: any
    size), ``base + k`` resolves to shard ``k // shard_bytes`` at ``k % shard_bytes``."""
    system, ctx = small_system(model, one_to_one)
    unit = system.address.layout_unit
    assert unit == (PAGE if model == "va" else 1)
    shard_bytes = units * PAGE if model == "va" else data.draw(st.integers(1, 3 * PAGE))
    t = ctx.deploy(shards * shard_bytes, DPPolicy("column_wise", shards))
    assert [s.offset_bytes for s in t.shards] == [i * shard_bytes for i in range(shards)]
    pe = system.graph.pes[reader]
    for k in range(shards * shard_bytes):
        shard = t.shards[k // shard_bytes]
        got, _ = system.address.resolve(pe, t.base + k, 1)
        assert got == system.physical.resolve(shard.pa + k % shard_bytes, 1), k
    # one access over the whole tensor carries every byte exactly once
    reqs, _ = system.address.resolve(pe, t.base, shards * shard_bytes)
    assert sum(r[2] for r in reqs) == shards * shard_bytes


def test_sixteen_shards_of_1000_bytes():
    """The issue's case: under LA ``base + 1000`` is shard 1's first byte; under VA the
    shards are a page apart and ``base + 1000`` is a hole of the tensor."""
    system, ctx = make_system(model_cfg("la"))
    t = ctx.deploy(16 * 1000, DPPolicy("column_wise", "all"), "src")
    pe0 = system.graph.pes[0]
    assert system.address.resolve(pe0, t.base + 1000, 8)[0] == [
        ("sip0.cube0.pe1.agg_router", t.shards[1].pa, 8, -1)
    ]
    system, ctx = make_system(model_cfg("va"))
    t = ctx.deploy(16 * 1000, DPPolicy("column_wise", "all"), "src")
    page = system.cfg.topology.pe_mmu.page_size
    assert t.shard_ptr(1) == t.base + page
    hole = t.base + 1000
    with pytest.raises(
        AddressFault, match=rf"^sip0.cube0.pe0.mmu: VA {hole:#x} is in a hole of tensor 'src'"
    ):
        system.address.resolve(pe0, hole, 8)
    # the shard's own last byte is fine; an access running from it into the hole is not
    assert system.address.resolve(pe0, t.base + 999, 1)[0][0][1] == t.shards[0].pa + 999
    with pytest.raises(AddressFault, match="in a hole of tensor 'src'"):
        system.address.resolve(pe0, t.base + 992, 16)
    # and the hole is a fault in a launched kernel too, not a read of pe0's PA 0x3e8
    with pytest.raises(AddressFault, match=rf"pe3.mmu: VA {hole:#x} is in a hole"):
        launch_reads(system, ctx, [3], {3: [hole]}, 8)


def test_a_hole_of_unmapped_pages_is_a_fault_not_a_page_fault():
    """Shards of 4096 and 4097 bytes: the stride is two pages, so after each 4096 B
    shard a whole page is unmapped; inside the tensor that page is a hole, never a PA."""
    system, ctx = make_system(model_cfg("va"))
    page = system.cfg.topology.pe_mmu.page_size
    t = ctx.deploy(16 * page + 1, DPPolicy("column_wise", "all"), "w")
    assert [s.nbytes for s in t.shards] == [page] * 15 + [page + 1]
    assert t.shard_ptr(1) == t.base + 2 * page
    with pytest.raises(AddressFault, match=rf"pe0.mmu: VA {t.base + page:#x} is in a hole"):
        system.address.resolve(system.graph.pes[0], t.base + page, 64)
    # past the tensor's end (outside every tensor) the fallback still applies
    end = t.base + 15 * 2 * page + page + 1
    with pytest.raises(AddressFault, match="has no mapping, and as a PA"):
        system.address.resolve(system.graph.pes[0], end + 2 * page, 64)


def test_uneven_shards_sit_back_to_back_under_la():
    """16 shards of 1000 and 1001 bytes: under LA (byte-granular segments) each starts
    where the previous one ends, so ``base + k`` stays byte k of the tensor."""
    system, ctx = make_system(model_cfg("la", one_to_one=True))
    nbytes = 16 * 1000 + 8
    t = ctx.deploy(nbytes, DPPolicy("column_wise", "all"), "odd")
    sizes = [s.nbytes for s in t.shards]
    assert sorted(set(sizes)) == [1000, 1001] and sum(sizes) == nbytes
    starts = [sum(sizes[:i]) for i in range(16)]
    assert [s.offset_bytes for s in t.shards] == starts
    pe = system.graph.pes[5]
    for i, shard in enumerate(t.shards):
        for k in (starts[i], starts[i] + shard.nbytes - 1):
            got, _ = system.address.resolve(pe, t.base + k, 1)
            assert got == system.physical.resolve(shard.pa + k - starts[i], 1)
    with pytest.raises(AddressFault, match="outside every BAAW segment"):
        system.address.resolve(pe, t.base + nbytes, 1)
