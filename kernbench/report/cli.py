"""``kernbench-report [DIR]``: report on any sweep or single run.

Reads ``results.parquet`` of a sweep directory or ``result.parquet`` of a single run
(by default the newest under ``./outputs`` that has an ok row, named on the first
line: a newer failed run is passed over). The report opens with a summary of each
section, then says the swept keys, the constant values once, and a compact table of the
swept keys against the main metrics, and plots a metric (``--metric``, a default per
workload) against the swept keys (``--x``, ``--hue``, one panel per value of the rest).
For the studies it finds (bandwidth equivalence, dispatch ratio, simulator speed, the
Pareto front of a sweep run with a list ``objective``, the decoder layer) it adds their
tables, claim verdicts and plots. It writes all of that to ``report.txt`` and
``report.html`` (self-contained), the PNG plots beside the table, and prints only the
summaries, a line per claim and where the two files are, in at most 40 lines. Exit
status: 0 when the report was made (a claim that does not hold is a finding;
``--strict`` makes it exit 2), 1 when there is nothing to report on (no table, no rows,
every point failed) or an option names no column.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from kernbench.files import write_atomic
from kernbench.report import decoder_layer, pareto
from kernbench.report.document import (
    TERMINAL_LINES,
    PlotChoice,
    ReportError,
    build,
    render_terminal,
    render_text,
)
from kernbench.report.html import write_html
from kernbench.report.tables import read, status_counts
from kernbench.results import RESULT_FILE, STATUS_OK
from kernbench.results.kernels import KERNELS_FILE
from kernbench.sweep import MERGED_FILE

DEFAULT_ROOT = Path("outputs")


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        where = Path(args.dir) if args.dir else _newest(DEFAULT_ROOT)
        df = load_any(where)
        out_dir = where if where.is_dir() else where.parent
        df.attrs[pareto.ATTR] = pareto.recorded_objective(out_dir)  # a list: the front
        wanted = df.attrs[pareto.ATTR] or []
        df.attrs[pareto.DIRECTIONS] = pareto.recorded_directions(out_dir, len(wanted))
        df.attrs[decoder_layer.KERNELS_PATH] = str(out_dir / KERNELS_FILE)  # launch rows
        choice = PlotChoice(args.metric, args.x, args.hue)
        sections = build(df, out_dir, choice)
    except (FileNotFoundError, ReportError) as exc:
        print(f"kernbench-report: error: {exc}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(df).items())
    header = f"{out_dir}: {len(df)} row{'s' * (len(df) != 1)} ({counts})"
    try:  # never through a planted link, never half written (kernbench.files)
        write_atomic(out_dir / "report.txt", render_text(header, sections) + "\n")
        write_html(out_dir / "report.html", header, sections)
    except OSError as exc:
        print(f"kernbench-report: error: {exc}", file=sys.stderr)
        return 1
    said = 0 if args.dir else 1  # the line naming the directory a bare report chose
    print(render_terminal(header, sections, out_dir, TERMINAL_LINES - said))
    verdicts = [c.holds for s in sections for c in s.claims]
    return 2 if args.strict and False in verdicts else 0


def _newest(root: Path) -> Path:
    """The directory a bare ``kernbench-report`` reports on, said on its first line."""
    where, skipped = newest_with_ok(root)
    passed = f"; passed over {len(skipped)} newer with no ok row: {skipped[0]}" if skipped else ""
    more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
    print(f"kernbench-report: the newest sweep or run with ok rows: {where}{passed}{more}")
    return where


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernbench-report", description=__doc__.split("\n")[0])
    parser.add_argument(
        "dir",
        nargs="?",
        metavar="DIR",
        help=f"a sweep or run directory, or a Parquet file (default: the newest under"
        f" {DEFAULT_ROOT}/ with an ok row)",
    )
    parser.add_argument("--metric", help="the metric to plot (default: one per workload)")
    parser.add_argument("--x", help="the swept key along the x axis (short names work)")
    parser.add_argument("--hue", help="the swept key that colours the lines")
    parser.add_argument("--strict", action="store_true", help="exit 2 if a claim does not hold")
    return parser


def load_any(where: Path) -> pd.DataFrame:
    """The rows of a sweep directory, a single run's directory, or a Parquet file."""
    if not where.exists():  # not the message of an empty directory: the path is wrong
        raise FileNotFoundError(f"{where}: no such file or directory")
    for path in (where / MERGED_FILE, where / RESULT_FILE) if where.is_dir() else (where,):
        if path.is_file():
            return read(path)
    raise FileNotFoundError(
        f"no {MERGED_FILE} or {RESULT_FILE} at {where} (a sweep or run directory?)"
    )


def latest_result(root: Path) -> Path:
    """The sweep or single-run directory under ``root`` written last that has an ok
    row (a failed run, e.g. a mistyped one, is skipped; a sweep job's own
    ``result.parquet`` is part of its sweep, not a run of its own)."""
    return newest_with_ok(root)[0]


def newest_with_ok(root: Path) -> tuple[Path, list[Path]]:
    """``(directory, skipped)``: the newest sweep or run directory under ``root`` with
    an ok row, and the newer ones passed over because none of their rows is ok."""
    found = [*root.rglob(MERGED_FILE), *(p for p in root.rglob(RESULT_FILE) if _single(p))]
    if not found:
        raise FileNotFoundError(f"no {MERGED_FILE} or {RESULT_FILE} under {root.resolve()}")
    skipped = []
    for path in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True):
        if _has_ok_row(path):
            return path.parent, skipped
        skipped.append(path.parent)
    raise FileNotFoundError(
        f"no sweep or run under {root.resolve()} has an ok row (the newest: {skipped[0]})"
    )


def _has_ok_row(path: Path) -> bool:
    try:
        status = pd.read_parquet(path, columns=["status"])["status"]
    except Exception:  # unreadable, or no status column: not a table to report on
        return False
    return bool((status == STATUS_OK).any())


def _single(path: Path) -> bool:
    sweep = path.parent.parent
    return not (sweep / MERGED_FILE).exists() and not (sweep / "multirun.yaml").exists()


latest_sweep = latest_result  # the name earlier scripts used


def entry() -> None:
    """``kernbench-report`` console script; quiet when the reader stops early
    (``kernbench-report | head``), as ``kernbench --keys`` is."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own recipe
        code = 0
    raise SystemExit(code)
