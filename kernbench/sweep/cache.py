"""The point cache: a point already simulated is served from disk, not simulated again.

Rerunning an interrupted or extended sweep should only simulate what is new (issue 6).
This module owns the on-disk entries and their key; it must not touch Hydra or the
simulator (:func:`kernbench.app.run_job` decides when to look up and when to store).

**Key.** sha256 over the canonical JSON of four things: the row's config columns (the
resolved, validated config flattened to dotted keys, without output locations and run
options: :func:`kernbench.results.config_columns`), the package version, a
fingerprint of the package's own code (its Python sources and its compiled modules,
setup.py) and the build that runs (``compiled`` or ``pure``, :func:`kernbench.build`:
a row's ``build`` column says which made it, so an entry of one build is never served
to the other). The fingerprint, rather than the git commit, is what keeps an edited
checkout (uncommitted simulator changes, or changes without a version bump, or a
rebuild) from ever being served results of the code it replaced; it also works for an
install that is not a git checkout.

**Entry.** One JSON file per point, ``<root>/<key[:2]>/<key>.json``, holding the key, the
deterministic metrics, the point's launch rows (``kernels.parquet``'s, for a workload
that launches several kernels; none otherwise) and a sha256 checksum of the canonical
JSON of both. JSON keeps
floats exactly (``repr`` round-trips) and, unlike a pickle, loading it runs no code: the
cache may sit on a filesystem shared by a cluster. An entry is written to a temporary
file in the same directory and renamed, so a reader sees a whole entry or none. A file
that does not parse (or nests deeper than Python parses), names another key, fails its
checksum (truncated, or damaged) or holds what no ok row holds (something other than
scalars; a time, bandwidth or size that is text, NaN or infinite; and, given the
workload's declared metric and launch columns, :mod:`kernbench.config.columns`, a column
missing or unknown, text where a number is declared or the reverse, a negative time) is logged,
removed and treated as a miss: it is recomputed, never returned. Kinds are exact where a
table's column type depends on them (issue 56): a count or size
(:data:`~kernbench.config.columns.INTEGERS`) is an int, not ``256.5`` (which turns the
column double for every row), and any int is within |x| < 2^63 (past it the column
turns text); a decoder point's launch rows are one per launch, numbered 0 to n-1, n
its ``kernels``; a point of a workload without launch rows has none. A checksum only
says the file is whole: an entry written by hand, or by a bug, can pass it.

joblib.Memory was the first candidate; it recomputes a truncated pickle (after printing
a traceback) but returns a damaged pickle that still loads, and keys on the function's
code rather than the package's. Hence this small store.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kernbench
from kernbench.config.columns import INTEGERS, LAUNCH_COUNT, LAUNCH_INDEX, TEXT
from kernbench.files import replaced
from kernbench.results.identity import canonical_json
from kernbench.units import unit_of

log = logging.getLogger(__name__)

_PACKAGE_DIR = Path(kernbench.__file__).resolve().parent
FORMAT = 2  # bump when the entry layout changes; old entries then miss
INT64_LIMIT = 1 << 63  # an int metric is within (-2^63, 2^63): an Arrow int64 holds it


# The package's code: its sources and the modules mypyc compiled from them (setup.py).
CODE_SUFFIXES = (".py", *importlib.machinery.EXTENSION_SUFFIXES)


@functools.cache
def source_fingerprint() -> str:
    """:func:`code_fingerprint` of the installed kernbench package, computed once per
    process."""
    return code_fingerprint(_PACKAGE_DIR)


def code_fingerprint(package_dir: Path) -> str:
    """sha256 over every ``*.py`` file and every compiled module (``*.so``, with the
    compiled build's shared runtime library) under ``package_dir`` (path and bytes, in
    sorted order)."""
    digest = hashlib.sha256()
    files = {p for suffix in CODE_SUFFIXES for p in package_dir.rglob(f"*{suffix}")}
    for path in sorted(files):
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def point_key(columns: Mapping[str, Any]) -> str:
    """The cache key of one point: its config columns, the version and the code."""
    ident = {
        "format": FORMAT,
        "config": dict(columns),
        "kernbench_version": kernbench.__version__,
        "source": source_fingerprint(),
        "build": kernbench.build(),
    }
    return hashlib.sha256(canonical_json(ident).encode()).hexdigest()


def _checksum(metrics: Mapping[str, Any], launches: Sequence[Mapping[str, Any]]) -> str:
    held = {"metrics": dict(metrics), "launches": [dict(row) for row in launches]}
    return hashlib.sha256(canonical_json(held).encode()).hexdigest()


@dataclass
class Hit:
    """What an entry gives back: the point's metrics and its launch rows (in launch
    order, without the point's identity columns: the serving job adds its own)."""

    metrics: dict[str, Any]
    launches: list[dict[str, Any]] = field(default_factory=list)


class PointCache:
    """The entries under one directory (``paths.cache_dir``, ``outputs/cache``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives (two-character fan-out keeps folders small)."""
        return self.root / key[:2] / f"{key}.json"

    def load(
        self,
        key: str,
        declared: Mapping[str, str] | None = None,
        launch_columns: Mapping[str, str] | None = None,
    ) -> Hit | None:
        """What is stored under ``key``, or None on a miss or a bad entry.

        A bad entry (unparsable, another key, wrong checksum, or not what the
        ``declared`` metric columns, and the ``launch_columns`` of each launch row, and
        their kinds say an ok point holds) is removed, so the point is simulated again
        and stored afresh.
        """
        path = self.path(key)
        try:
            text = path.read_text()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnicodeDecodeError) as exc:  # unreadable: simulate, don't fail
            log.warning("point cache: cannot read %s (%s); recomputing", path, exc)
            return None
        try:
            metrics, launches = _checked(json.loads(text), key, declared, launch_columns)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # JSONDecodeError
            # is a ValueError; RecursionError: JSON nested deeper than Python parses
            log.warning("point cache: discarding bad entry %s (%s); recomputing", path, exc)
            path.unlink(missing_ok=True)
            return None
        return Hit(dict(metrics), [dict(row) for row in launches])

    def store(
        self, key: str, metrics: Mapping[str, Any], launches: Sequence[Mapping[str, Any]] = ()
    ) -> bool:
        """Write ``metrics`` and ``launches`` under ``key`` atomically; False (and
        nothing written) if a value is not a JSON scalar, so only what reads back
        identical is ever stored, or if the cache cannot be written (logged: a full disk
        must not fail the point)."""
        values = [*metrics.values(), *(v for row in launches for v in row.values())]
        if not all(_storable(v) for v in values):
            log.warning("point cache: metrics of %s are not plain scalars; not cached", key)
            return False
        entry = {
            "key": key,
            "checksum": _checksum(metrics, launches),
            "metrics": dict(metrics),
            "launches": [dict(row) for row in launches],
        }
        try:
            _write_atomic(self.path(key), entry)
        except OSError as exc:
            log.warning("point cache: cannot store %s (%s)", key, exc)
            return False
        return True


def _write_atomic(path: Path, entry: dict[str, Any]) -> None:
    """Write ``entry`` as JSON beside ``path``, then rename it into place."""
    with replaced(path) as tmp, tmp.open("w") as f:
        json.dump(entry, f, separators=(",", ":"))  # metrics keep their column order


def _checked(
    entry: Any,
    key: str,
    declared: Mapping[str, str] | None,
    launch_columns: Mapping[str, str] | None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The metrics and launch rows of a parsed entry; ValueError (or KeyError,
    TypeError) unless it is whole (its key and checksum) and holds what an ok point of
    the workload holds (:func:`check_declared`, :func:`check_launches`)."""
    metrics, launches = entry["metrics"], entry["launches"]
    _check_metrics(metrics)
    if not isinstance(launches, list):
        raise ValueError(f"launches are a {type(launches).__name__}, not a list")
    for row in launches:
        _check_metrics(row)
    if entry["key"] != key or entry["checksum"] != _checksum(metrics, launches):
        raise ValueError("key or checksum does not match")
    if declared is not None:
        check_declared(metrics, declared)
    check_launches(metrics, launches, launch_columns)
    return metrics, launches


def _check_metrics(metrics: Any) -> None:
    """Raise ValueError unless ``metrics`` could be an ok row's: a mapping of names to
    plain scalars, every int one a table's int64 column holds (|x| < 2^63: past it the
    column turns to text), and every value named with a unit (a time, a bandwidth,
    bytes) a finite number. The checksum only says the file is whole; this says what
    it holds is a result (a bad one is discarded, never served)."""
    if not isinstance(metrics, dict):
        raise ValueError(f"metrics are a {type(metrics).__name__}, not a mapping")
    for name, value in metrics.items():
        if not _storable(value):
            raise ValueError(f"metric {name} is {value!r}")
        if _integer(value) and not _int64(value):
            raise ValueError(f"metric {name} is {value}, not within 64 bits (|x| < 2^63)")
        if unit_of(name) and not _finite_number(value):
            raise ValueError(f"metric {name} ({unit_of(name)}) is {value!r}, not a number")


def check_declared(metrics: Mapping[str, Any], declared: Mapping[str, str]) -> None:
    """Raise ValueError unless ``metrics`` has exactly the ``declared`` metric columns,
    each of its kind: text; an int within 64 bits where
    :data:`~kernbench.config.columns.INTEGERS` says (a float there turns the column
    double); else a finite number; and no negative time. Resume holds a kept row's
    metrics to the same (:mod:`kernbench.sweep.claim`)."""
    missing = [name for name in declared if name not in metrics]
    unknown = [name for name in metrics if name not in declared]
    if missing or unknown:
        raise ValueError(f"metrics missing {missing}, unknown {unknown}")
    for name, kind in declared.items():
        value = metrics[name]
        if kind == TEXT:
            if not isinstance(value, str):
                raise ValueError(f"metric {name} is {value!r}, not text")
            continue
        if name in INTEGERS:
            if not (_integer(value) and _int64(value)):
                raise ValueError(f"metric {name} is {value!r}, not an int within 64 bits")
        elif not _finite_number(value):
            raise ValueError(f"metric {name} is {value!r}, not a finite number")
        if unit_of(name) == "ns" and value < 0:
            raise ValueError(f"metric {name} is {value!r}, a negative time")


def check_launches(
    metrics: Mapping[str, Any],
    launches: Sequence[Mapping[str, Any]],
    launch_columns: Mapping[str, str] | None,
) -> None:
    """Raise ValueError unless ``launches`` are the launch rows of a point whose
    workload declares ``launch_columns`` (None: it writes none): at least one, each
    with those columns (:func:`check_declared`), numbered 0 to n-1 in order, n the
    point's :data:`~kernbench.config.columns.LAUNCH_COUNT`. A point of 14 launches
    served with none, or with two numbered 0, would lose or double a kernel's row."""
    if launch_columns is None:
        if launches:
            raise ValueError(f"{len(launches)} launch rows for a point that has none")
        return
    for row in launches:
        check_declared(row, launch_columns)
    indices = [row[LAUNCH_INDEX] for row in launches]
    if not indices or indices != list(range(len(indices))):
        shown = indices if len(indices) <= 8 else [*indices[:8], "..."]
        raise ValueError(f"launch rows numbered {shown}, not 0 to n-1 with n >= 1")
    count = metrics.get(LAUNCH_COUNT)
    if count != len(launches):
        raise ValueError(f"{len(launches)} launch rows where {LAUNCH_COUNT} is {count!r}")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int64(value: int) -> bool:
    """|x| < 2^63, as the docs promise (docs/reference/errors.md)."""
    return -INT64_LIMIT < value < INT64_LIMIT


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _storable(value: Any) -> bool:
    """A scalar that JSON gives back unchanged (floats via ``repr``, NaN and infinities
    as JSON's ``NaN``/``Infinity`` extensions)."""
    return value is None or isinstance(value, bool | str | int | float)
