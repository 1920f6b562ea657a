"""What ``kernbench`` does with its arguments before Hydra: the one hook ``app.main``
calls. ``--help``/``-h`` and ``--keys`` print generated help, ``--version`` the version
and the build (``compiled`` or ``pure``), ``--cfg job`` shows the validated config, and
any override (or ``KERNBENCH_PURE`` value) that cannot be right exits with one line;
a preset's grid entry set on the command line is handed to Hydra in a form it takes."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hydra._internal.utils import get_args_parser  # the parser hydra.main itself uses

import kernbench
from kernbench.cli.grid import entry_line, grid_argv
from kernbench.cli.help import help_text, key_table
from kernbench.cli.precheck import UsageError, check_overrides
from kernbench.errors import one_line
from kernbench.sweep.outputs import say


def before_hydra(argv: Sequence[str]) -> list[str]:
    """Handle what kernbench answers itself (exiting), or return the arguments Hydra is
    to run with: ``argv``, with a sweep's ``hydra.sweeper.params.<key>=...`` given as
    the line the sweeper is to read (:mod:`kernbench.cli.grid`)."""
    try:
        kernbench.pure_requested()
    except ValueError as exc:
        _fail(str(exc))
    if "--version" in argv:  # before Hydra's parser, whose --version prints Hydra's
        _page(version_text())
    args, rest = get_args_parser().parse_known_args(list(argv))
    if "--keys" in rest:
        _page("\n".join(key_table()))
    if args.help:
        _page(help_text(args.overrides))
    if args.cfg == "job" and not args.multirun and args.package is None:
        from kernbench.cli.show_config import show_job_config  # the simulator's validation

        raise SystemExit(show_job_config(args.overrides))
    overrides = list(args.overrides)
    if args.multirun:  # a preset's grid entry as the line the sweeper is to read
        argv, overrides = grid_argv(argv, overrides), [entry_line(o) or o for o in overrides]
    try:
        check_overrides(overrides, multirun=args.multirun)
    except UsageError as exc:
        _fail(str(exc))
    if not args.multirun:
        _note_preset_without_m(overrides)
    return list(argv)


def _note_preset_without_m(overrides: list[str]) -> None:
    """A study preset is a grid; without -m Hydra runs its defaults once, exit 0, which
    read as the study having run (issue 56). Said in one line before the run."""
    for line in overrides:
        if line.startswith("+experiment="):
            print(
                f"kernbench: note: {line} is a sweep preset; without -m this runs one point"
                f" (the preset's defaults, not its grid): kernbench -m {line} sweeps it",
                file=sys.stderr,
            )


def version_text() -> str:
    """``kernbench 0.1.0 (compiled)``: the version and which simulator modules run."""
    return f"kernbench {kernbench.__version__} ({kernbench.build()})"


def _fail(message: str) -> None:
    """One line, whatever the message quotes (a value holding a newline)."""
    print(f"kernbench: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(1)


def _page(text: str) -> None:
    """Print and exit 0, quietly when the reader stops early (``kernbench --keys | head``)."""
    say(text)
    raise SystemExit(0)
