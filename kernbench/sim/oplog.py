"""The op log: an ordered record of what each PE did and when, for determinism checks.

It is off unless asked for (``sim.oplog=true``), so the hot path pays one ``is None``
test per event when it is off.
"""

from __future__ import annotations

OpLogEntry = tuple[float, int, str, int, str]  # (time_ns, pe index, event, job id, detail)


class OpLog:
    def __init__(self) -> None:
        self.entries: list[OpLogEntry] = []

    def add(self, time_ns: float, pe: int, event: str, job_id: int, detail: str) -> None:
        self.entries.append((time_ns, pe, event, job_id, detail))
