"""PA, VA and LA differ only by what each model adds (issue 54, DESIGN §3.2).

With the same physical placement and traffic, the three models' data planes move the
same bytes over the same routes: VA's pages and LA's segments are translations, not
requests to arbitrate. The fair fabric serves one access's requests on one route as
one descriptor (VA splits a 64 KiB 1:1 access into 16 pages x 8 channels: 128
requests, 8 descriptors, as PA's and LA's 8 requests), so:

- with VA's TLB time at 0, every figure but the install columns is the same under the
  three models, and so is the number of recomputations the fair solver made (before:
  92 per VA access against 6 under PA, 16 PEs, ``uniform``, 1:1);
- VA's TLB time adds its closed form: a PE issuing one access at a time pays
  ``tlb_overhead_ns`` once per access (``per_access``, ADR-0011 D-VA2) or once per
  page (``per_page``) on top of PA's time, nothing else.
"""

from __future__ import annotations

import pytest

from kernbench.config.schema import KernBenchConfig, StreamPattern, TlbCharge
from kernbench.config.validate import validate
from kernbench.sim.system import System
from kernbench.workloads import stream
from tests.support import make_cfg

INSTALLS = ("install_latency_ns", "install_bytes")


def point(model: str, pattern: str, one_to_one: bool, op: str = "read", access: int = 65536,
          tlb_ns: float = 0.0, outstanding: int = 4) -> KernBenchConfig:  # fmt: skip
    """8 PEs per cube, 64 channels each cube, 8 accesses per PE, fair, free dispatch."""
    cfg = make_cfg(
        one_to_one=one_to_one, model=model, op=op, access_bytes=access,
        bytes_per_pe=8 * access, outstanding=outstanding, pattern=StreamPattern(pattern),
    )  # fmt: skip
    cfg.topology.pe_mmu.tlb_overhead_ns = tlb_ns
    return validate(cfg)


def run(cfg: KernBenchConfig) -> tuple[dict, int]:
    """The stream's row, and how many times the fair solver recomputed rates."""
    system = System(cfg)
    row = stream.run(system, cfg.workload)
    return row, system.fabric.solves


CASES = [
    (pattern, op, one_to_one)
    for pattern, op in (("uniform", "read"), ("hotspot", "read"), ("neighbor", "copy"))
    for one_to_one in (False, True)
]


@pytest.mark.parametrize(("pattern", "op", "one_to_one"), CASES)
def test_with_no_tlb_time_pa_va_and_la_move_the_same_bytes_at_the_same_times(
    pattern, op, one_to_one
):
    rows = {m: run(point(m, pattern, one_to_one, op)) for m in ("pa", "va", "la")}
    pa_row, pa_solves = rows["pa"]
    figures = {c: v for c, v in pa_row.items() if c not in INSTALLS}
    for model in ("va", "la"):
        row, solves = rows[model]
        assert {c: row[c] for c in figures} == figures, model
        assert solves == pa_solves, model
    # Contended where the study says so (the solver ran), and installs where a model has them.
    assert pa_solves > 0 or pattern == "neighbor"
    assert rows["va"][0]["install_bytes"] > 0 and rows["la"][0]["install_bytes"] > 0


@pytest.mark.parametrize("charge", [TlbCharge.per_access, TlbCharge.per_page])
@pytest.mark.parametrize("one_to_one", [False, True])
def test_va_adds_its_tlb_time_once_per_access_or_page_and_nothing_else(charge, one_to_one):
    """One PE reading its own memory one 64 KiB access at a time (8 accesses): each
    access waits for the last, so VA's time is PA's plus 8 x 2 ns per access, or 8 x 16
    pages x 2 ns per page (4 KiB pages)."""
    pa, _ = run(point("pa", "local", one_to_one, outstanding=1))
    cfg = point("va", "local", one_to_one, tlb_ns=2.0, outstanding=1)
    cfg.topology.pe_mmu.tlb_charge = charge
    va, _ = run(validate(cfg))
    pages = 65536 // cfg.topology.pe_mmu.page_size if charge is TlbCharge.per_page else 1
    assert cfg.topology.pe_mmu.page_size == 4096
    assert va["sim_time_ns"] == pa["sim_time_ns"] + 8 * pages * 2.0
