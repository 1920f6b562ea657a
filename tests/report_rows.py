"""Stream result rows for the report's tests (tests/test_report_general.py,
test_report_plot.py, test_report_legible.py): one builder, so a column's name and
place are written once."""

from __future__ import annotations

from kernbench.results import make_row

MM = "topology.cube.memory_map."  # the memory map's columns in a result table


def stream_columns(
    mapping: str,
    access: int,
    *,
    pes: int = 8,
    pseudo: int = 64,
    topology: str | None = "default",
    interleave: int | None = None,
    align: int | None = None,
    active: int | str | None = None,
    pattern: str | None = None,
    op: str | None = None,
    fabric: str | None = None,
    address: str | None = None,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    """A stream point's config columns, in the order a run writes them; a key given
    None is no column (a table from before it, or one a test leaves out). Channels per
    PE follow from the pseudo-channels and PEs, as the config derives them. ``address``
    is the address model (``address.model``: pa, va, la); ``extra`` adds columns a
    test sweeps by hand (``{"workload.outstanding": 2}``), after the others."""
    columns = {
        "topology.name": topology,
        "topology.pes_per_cube": pes,
        MM + "hbm_mapping_mode": mapping,
        MM + "hbm_pseudo_channels": pseudo,
        MM + "hbm_channels_per_pe": pseudo // pes,
        MM + "interleave_bytes": interleave,
        "address.model": address,
        "workload.name": "stream",
        "workload.access_bytes": access,
        "workload.align_offset_bytes": align,
        "workload.active_pes": active,
        "workload.pattern": pattern,
        "workload.op": op,
        "sim.fabric": fabric,
        **(extra or {}),
    }
    return {key: value for key, value in columns.items() if value is not None}


def stream_row(
    mapping: str, access: int, metrics: dict[str, object], **columns: object
) -> dict[str, object]:
    """An ok result row of a stream point: :func:`stream_columns` and ``metrics``."""
    return make_row(
        stream_columns(mapping, access, **columns),  # type: ignore[arg-type]
        status="ok",
        metrics=metrics,
    )
