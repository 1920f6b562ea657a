"""``kernbench-report [SWEEP_DIR]``: print the study tables, check the claims, plot.

Reads ``results.parquet`` of a sweep directory (by default the newest one under
``./outputs``), finds which studies it holds (bandwidth equivalence: stream rows under
both channel mappings; dispatch ratio: gqa_opt2 and gqa_opt3 rows; simulator speed:
rows with ``sim.measure_speed`` timings), and for each prints
its table and claim verdicts and writes its PNG plots beside the table. The printed
text is also saved as ``report.txt`` there. Exit status: 0 when the report was made
(a claim that does not hold is a finding, not a failure; ``--strict`` makes it one),
1 when there is nothing to report on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from kernbench.report import bw_equivalence, claims, plots, tables
from kernbench.sweep import MERGED_FILE

DEFAULT_ROOT = Path("outputs")


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        sweep_dir = Path(args.sweep_dir) if args.sweep_dir else latest_sweep(DEFAULT_ROOT)
        df = tables.load_results(sweep_dir)
    except FileNotFoundError as exc:
        print(f"kernbench-report: error: {exc}", file=sys.stderr)
        return 1
    out_dir = sweep_dir if sweep_dir.is_dir() else sweep_dir.parent
    text, verdicts = report(df, out_dir)
    (out_dir / "report.txt").write_text(text + "\n")
    print(text)
    if not verdicts:
        print("kernbench-report: error: no study found in this table", file=sys.stderr)
        return 1
    return 2 if args.strict and False in verdicts else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernbench-report", description=__doc__.split("\n")[0])
    parser.add_argument(
        "sweep_dir", nargs="?", help=f"a sweep directory or its {MERGED_FILE} (default: newest)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 2 if a claim does not hold")
    return parser


def latest_sweep(root: Path) -> Path:
    """The sweep directory under ``root`` whose merged table was written last."""
    found = sorted(root.rglob(MERGED_FILE), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no {MERGED_FILE} under {root.resolve()}; run a sweep first")
    return found[-1].parent


def report(df: pd.DataFrame, out_dir: Path) -> tuple[str, list[bool | None]]:
    """The report text for every study in ``df``, the claims' verdicts, plots written."""
    counts = tables.status_counts(df)
    lines = [f"{out_dir}: {len(df)} rows ({', '.join(f'{n} {s}' for s, n in counts.items())})"]
    verdicts: list[bool | None] = []
    studies = (
        ("bandwidth equivalence", bw_equivalence.table, bw_equivalence.check,
         bw_equivalence.plot),
        ("dispatch ratio", tables.dispatch_ratio_table, claims.check_dispatch_ratio,
         plots.plot_dispatch_ratio),
        ("simulator speed", tables.sim_speed_table, claims.check_sim_speed,
         plots.plot_sim_speed),
    )  # fmt: skip
    for title, build, check, plot in studies:
        table = build(df)
        if table is None:
            continue
        checked = check(table)
        verdicts += [c.holds for c in checked]
        paths = plot(table, out_dir)
        lines += ["", f"== {title} ({len(table)} configurations) ==", _format(table), ""]
        lines += [c.line() for c in checked]
        lines += ["plots: " + ", ".join(p.name for p in paths)]
    return "\n".join(lines), verdicts


def _format(table: pd.DataFrame) -> str:
    return tables.short_names(table).to_string(index=False, float_format=lambda v: f"{v:.4g}")


def entry() -> None:
    """``kernbench-report`` console script."""
    raise SystemExit(main())
