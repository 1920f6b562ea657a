"""Sweeps: the fast multirun (DESIGN §9) and merging every point's row into one table."""

from kernbench.sweep.merge import MERGED_FILE, MergeOutcome, merge_sweep

__all__ = ["MERGED_FILE", "MergeOutcome", "merge_sweep"]
