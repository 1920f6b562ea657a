"""The optional per-request trace (DESIGN §6, ``sim.trace=true``): ``trace.parquet``.

One row per physical request PE_DMA moves on the fabric: when the access was
issued (after any translation delay), when its bytes set out on their path
(``start_ns``: from the DMA for a write; from the memory for a read, whose request went
out and was served first, DESIGN §13.1: the reservation model's booked start; under
fair sharing, when its bytes began to drain less their path's latency, the same instant
for a request alone on its links) and when it completed; the PE, the command id, the
address model, the logical address of the access (PA, VA or LA), the request's PA,
channel (-1 for an aggregate request), router node and bytes. Rows are buffered in
columns and written in batches with ``pyarrow.parquet.ParquetWriter``, so a long run
never holds every row in memory.
The file is written beside the final name and renamed on close, so a crashed run
leaves no trace that looks complete.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kernbench.sim.engines import Stage
from kernbench.sim.fabric import PhysicalRequest
from kernbench.sim.scheduler import DmaOp
from kernbench.topology.names import PeId

SCHEMA = pa.schema(
    [
        ("issue_ns", pa.float64()),
        ("start_ns", pa.float64()),
        ("end_ns", pa.float64()),
        ("pe", pa.string()),
        ("pe_index", pa.int32()),
        ("command_id", pa.int64()),
        ("direction", pa.string()),
        ("address_model", pa.string()),
        ("logical_addr", pa.uint64()),
        ("pa", pa.uint64()),
        ("channel", pa.int32()),
        ("node", pa.string()),
        ("nbytes", pa.int64()),
    ]
)


class TraceWriter:
    """A :data:`kernbench.sim.dma.TraceSink` that streams rows to a Parquet file."""

    batch_rows = 65536  # rows held in memory before they are written (one row group)

    def __init__(self, path: Path, address_model: str) -> None:
        self.path = Path(path)
        self.model = address_model
        self.rows = 0
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self._writer = pq.ParquetWriter(self._tmp, SCHEMA)
        self._cols: dict[str, list[object]] = {f.name: [] for f in SCHEMA}

    def __call__(
        self,
        pe: PeId,
        stage: Stage,
        issue: float,
        req: PhysicalRequest,
        begin: float,
        done: float,
    ) -> None:
        node, pa_addr, nbytes, channel = req
        c = self._cols
        for key, value in (
            ("issue_ns", issue),
            ("start_ns", begin),
            ("end_ns", done),
            ("pe", pe.prefix),
            ("pe_index", pe.index),
            ("command_id", stage.id if isinstance(stage, DmaOp) else stage.job.id),
            ("direction", stage.direction),
            ("address_model", self.model),
            ("logical_addr", stage.addr),
            ("pa", pa_addr),
            ("channel", channel),
            ("node", node),
            ("nbytes", nbytes),
        ):
            c[key].append(value)
        self.rows += 1
        if len(c["pe"]) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if self._cols["pe"]:
            self._writer.write_table(pa.table(self._cols, schema=SCHEMA))
            self._cols = {f.name: [] for f in SCHEMA}

    def close(self, keep: bool = True) -> None:
        """Write the last batch and move the file into place (or drop it)."""
        self._flush()
        self._writer.close()
        if keep:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)
