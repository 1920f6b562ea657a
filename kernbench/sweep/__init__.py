"""Sweeps: the fast multirun (DESIGN §9) and merging every point's row into one table.

The merge's names are loaded on first use (PEP 562): the merge imports pyarrow, which
``kernbench --help`` (through :mod:`kernbench.sweep.outputs`) has no use for.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MERGED_FILE", "MergeOutcome", "merge_sweep"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kernbench.sweep import merge

        return getattr(merge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
