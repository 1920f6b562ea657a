"""``kernbench-report`` on small synthetic sweep tables with known answers."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kernbench.report import check_dispatch_ratio, dispatch_ratio_table, load_results
from kernbench.report.cli import latest_sweep, main
from kernbench.results import make_row, write_rows

MM = "topology.cube.memory_map."
COST = "topology.pe.attrs.pe_cost_model."


def bw_rows() -> list[dict]:
    """N = 8 channels x g = 256 B: 65536 B accesses are aligned; 4352 B ones part."""
    rows = []
    for mapping, access, active in itertools.product(
        ("n_to_one", "one_to_one"), (4352, 65536), (1, "all")
    ):
        bw = 250.0 if mapping == "n_to_one" or access == 65536 else 225.0
        flat = {
            MM + "hbm_mapping_mode": mapping,
            MM + "hbm_channels_per_pe": 8,
            MM + "interleave_bytes": 256,
            "workload.name": "stream",
            "workload.access_bytes": access,
            "workload.align_offset_bytes": 0,
            "workload.active_pes": active,
        }
        rows.append(make_row(flat, status="ok", metrics={"effective_bw_gbs": bw}))
    rows.append(make_row({**flat, "workload.access_bytes": 3}, status="error", error="boom"))
    return rows


def gqa_rows(bytes_per_tile: dict[str, float]) -> list[dict]:
    """Dispatch cycles per tile from ADR-0064's formula with the given bytes per tile."""
    rows = []
    commands = {"gqa_opt2": 2, "gqa_opt3": 10}
    for fixed, recip, name in itertools.product((0.0, 32.0), (0.0, 0.25), commands):
        nbytes = bytes_per_tile[name]
        flat = {COST + "fixed_per_cmd_cycles": fixed, COST + "byte_cycles_recip": recip}
        metrics = {
            "commands_per_tile": commands[name],
            "logical_bytes_per_tile": nbytes,
            "dispatch_cycles_per_tile": fixed * commands[name] + recip * nbytes,
            "kernel_latency_ns": 1000.0,
        }
        rows.append(make_row({**flat, "workload.name": name}, status="ok", metrics=metrics))
    return rows


ADR_BYTES = {"gqa_opt2": 380.0, "gqa_opt3": 232.0}


def _table(tmp_path: Path, rows: list[dict]):
    write_rows(rows, tmp_path / "results.parquet")
    return load_results(tmp_path / "results.parquet")


def test_dispatch_ratio_at_adr_figures_holds(tmp_path):
    table = dispatch_ratio_table(_table(tmp_path, gqa_rows(ADR_BYTES)))
    assert len(table) == 4
    default = table[
        (table[COST + "fixed_per_cmd_cycles"] == 32) & (table[COST + "byte_cycles_recip"] == 0.25)
    ]
    # (10 x 32 + 232 / 4) / (2 x 32 + 380 / 4) = 378 / 159
    assert default["dispatch_ratio_opt3_opt2"].item() == pytest.approx(378 / 159)
    assert [c.holds for c in check_dispatch_ratio(table)] == [True, True, True, True]


def test_dispatch_ratio_says_where_ours_differ(tmp_path):
    table = dispatch_ratio_table(_table(tmp_path, gqa_rows({"gqa_opt2": 332, "gqa_opt3": 348})))
    opt3, opt2, ratio, zero = check_dispatch_ratio(table)
    assert (opt3.holds, opt2.holds, ratio.holds, zero.holds) == (False, False, False, True)
    assert "348 B (+50.0%)" in opt3.detail
    assert "2.769x" in ratio.detail


def test_cli_prints_tables_and_writes_plots(tmp_path, capsys):
    sweep = tmp_path / "outputs" / "bw_equivalence" / "x"
    write_rows(bw_rows() + gqa_rows(ADR_BYTES), sweep / "results.parquet")
    assert main([str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "== bandwidth equivalence (4 configurations) ==" in out
    assert "== dispatch ratio (4 configurations) ==" in out
    # the only verdict against is the finding that misaligned local reads part by 10%
    assert out.count("[DOES NOT HOLD]") == 1
    assert "[DOES NOT HOLD] local, misaligned or small" in out
    written = sorted(p.name for p in sweep.iterdir())
    assert written == [
        "bw_equivalence_bandwidth.png",
        "bw_equivalence_ratio.png",
        "dispatch_ratio_cycles.png",
        "dispatch_ratio_heatmap.png",
        "report.txt",
        "results.parquet",
    ]
    assert (sweep / "bw_equivalence_ratio.png").read_bytes()[:4] == b"\x89PNG"
    assert latest_sweep(tmp_path / "outputs") == sweep


def test_cli_without_a_table_is_one_error(tmp_path, capsys):
    assert main([str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("kernbench-report: error: no results.parquet")
