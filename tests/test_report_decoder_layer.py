"""The decoder-layer study's claims on hand-made rows (no simulation): each verdict
follows from the figures as the claim words them."""

from __future__ import annotations

import pandas as pd

from kernbench.report import decoder_layer as study
from kernbench.report.tables import FIXED, RECIP

BATCH = "workload.batch"


def rows(bound: dict[tuple[int, float], list[str]]) -> pd.DataFrame:
    """A study table: per (batch, FIXED) at R 0.25, the configurations' bottlenecks."""
    out = [
        {BATCH: batch, FIXED: fixed, RECIP: 0.25, "bottleneck": b}
        for (batch, fixed), bottlenecks in bound.items()
        for b in bottlenecks
    ]
    table = pd.DataFrame(out)
    table.attrs["keys"] = [BATCH, FIXED, RECIP]
    return table


def test_a_larger_batch_needs_a_larger_fixed_to_be_cpu_bound():
    claim = study._dispatch_bound(
        rows(
            {
                (1, 0): ["dma", "dma"],
                (1, 32): ["cpu", "cpu"],
                (8, 0): ["dma", "dma"],
                (8, 32): ["cpu", "dma"],  # half: later than batch 1
            }
        )
    )
    assert claim.holds is True
    assert "batch 1: CPU-bound in 0/2 at 0, 2/2 at 32; all from FIXED 32" in claim.detail
    assert "batch 8: CPU-bound in 0/2 at 0, 1/2 at 32; all not within the grid" in claim.detail


def test_a_larger_batch_cpu_bound_sooner_breaks_the_claim():
    claim = study._dispatch_bound(
        rows({(1, 32): ["dma", "dma"], (8, 32): ["cpu", "dma"]})  # batch 8 sooner
    )
    assert claim.holds is False
