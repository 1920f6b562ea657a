"""A study preset's grid changed from the command line, as the README writes it:
``hydra.sweeper.params.workload.access_bytes=4352,65536``.

A preset's grid is the dict ``hydra.sweeper.params``, whose keys hold dots
(``workload.access_bytes``). Hydra reads every dot of an override's key as nesting, so
that override names no entry (``Key 'workload' is not in struct``), and, being a sweep
of a ``hydra.*`` key, is refused before that ("Sweeping over Hydra's configuration is
not supported"), with Hydra's basic sweeper as with ours.

What it asks for has a form every sweeper takes: the entry's own line,
``workload.access_bytes=4352,65536``. A sweeper (kernbench's, Hydra's basic, Optuna's)
reads its grid's entries as such lines, before the command line's, and a key given twice
is one axis, in its first place, with its last values: so the points are the preset's,
in its order, with that axis's values replaced, and a key the grid lacks is a new axis.
In a sweep (``-m``), :func:`grid_argv` hands each such override to Hydra as that line.
(A merge into the dict, ``++hydra.sweeper.params={workload.access_bytes:'4352,65536'}``,
says the same only where a preset set a grid: OmegaConf cannot merge into the stock
sweeper's null one.)

The line's value is the text after ``=``, as a preset's YAML holds it; a value that is
one quoted string gives its content (``...access_bytes='4352,65536'``, quoted as Hydra
users quote a value for a dict entry, means the same). A single run reads no grid, and
``~`` deletes no axis: both are left to Hydra.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException

GRID = "hydra.sweeper.params"
_ENTRY = re.compile(rf"\+{{0,2}}{re.escape(GRID)}\.([^=]+)=(.*)", re.DOTALL)


def grid_argv(argv: Sequence[str], overrides: Sequence[str]) -> list[str]:
    """``argv`` with each of its ``overrides`` that sets a grid entry replaced by the
    entry's line (:func:`entry_line`); every other argument as it was."""
    wanted = set(overrides)
    return [(entry_line(arg) or arg) if arg in wanted else arg for arg in argv]


def entry_line(override: str) -> str | None:
    """``workload.access_bytes=4352,65536`` for an override that sets that grid entry
    and that Hydra can parse; else None."""
    match = _ENTRY.fullmatch(override)
    if match is None:
        return None
    key, text = match.groups()
    try:
        [parsed] = OverridesParser.create().parse_overrides([override])
    except OverrideParseException:
        return None  # the pre-check names the override and Hydra's reason
    value = parsed.value()
    if not parsed.is_sweep_override() and isinstance(value, str) and text[:1] in ("'", '"'):
        text = value  # one quoted string: its content
    return f"{key}={text}"
