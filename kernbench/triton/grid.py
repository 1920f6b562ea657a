"""Grid -> PEs: which PE runs which program instance (DESIGN §10).

Programs are numbered as Triton's interpreter walks a grid (axis 0 outermost, then
1, then 2), ``l = (x * gy + y) * gz + z``. They are spread over the first ``n`` PEs
(global order sip, cube, pe) by a mapping:

- ``cyclic`` (default): program ``l`` runs on PE ``l mod n`` — neighbouring blocks on
  neighbouring PEs, like a GPU's round-robin over SMs;
- ``block``: PE ``i`` runs the contiguous programs ``[i·P/n, (i+1)·P/n)``.

A PE runs its programs one after another, in program order; PEs run concurrently.
With fewer programs than PEs, only the first ``P`` PEs are used.
"""

from __future__ import annotations

import itertools

MAPPINGS = ("cyclic", "block")

Grid3 = tuple[int, int, int]


def grid3(grid: tuple[int, ...]) -> Grid3:
    """A grid of 1 to 3 positive sizes, padded with 1s."""
    if not 1 <= len(grid) <= 3 or any(int(g) < 1 for g in grid):
        raise ValueError(f"grid {grid} must have 1 to 3 sizes, each >= 1")
    padded = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    return padded  # type: ignore[return-value]


def programs(grid: Grid3) -> list[Grid3]:
    """Every program id of ``grid`` in the interpreter's order."""
    return list(itertools.product(range(grid[0]), range(grid[1]), range(grid[2])))


def assign(n_programs: int, n_pes: int, mapping: str) -> list[list[int]]:
    """Program numbers per PE slot (only slots that get programs)."""
    if mapping not in MAPPINGS:
        raise ValueError(f"mapping {mapping!r} is not one of {MAPPINGS}")
    used = min(n_pes, n_programs)
    if mapping == "cyclic":
        return [list(range(i, n_programs, used)) for i in range(used)]
    return [list(range(i * n_programs // used, (i + 1) * n_programs // used)) for i in range(used)]
