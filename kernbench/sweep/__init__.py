"""Sweeps: merging every job's rows into one table when a Hydra multirun ends."""

from kernbench.sweep.merge import MERGED_FILE, MergeOutcome, merge_sweep

__all__ = ["MERGED_FILE", "MergeOutcome", "merge_sweep"]
