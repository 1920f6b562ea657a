"""A sweep directory holds one grid's results and is written by one sweep at a time.

Hydra's default ``hydra.sweep.dir`` is new for every sweep (``paths.sweep_dir`` holds
the time and the process id); one a user names may already hold a sweep. Before a
sweep writes anything there, :func:`claimed`

- takes the directory's lock (``.hydra/sweep.lock``, an ``flock``: released by the
  kernel however the sweep ends, SIGKILL included), so a second sweep into the same
  directory while the first runs is refused instead of interleaving ``points.log`` and
  replacing the first's table;
- compares the grid with the one the directory's records hold
  (``.hydra/points.yaml``, every point's overrides by job number): another grid is
  refused; the same grid reruns (the point cache serves what is done), or with
  ``hydra.sweeper.resume=true`` keeps the rows ``results.parquet`` already holds
  (:func:`kept_rows`) that are as the sweep wrote them (their digest), whose
  configuration is their point's (every config column, and the hash) and whose metrics
  are a result, and runs only the other points.

Holding the lock, it also removes the temporaries of writes a sweep killed earlier
never renamed (:func:`kernbench.files.remove_temporaries`).

Each refusal is one line naming ``hydra.sweep.dir`` and exit 1, before anything is
written. A damaged record (``points.yaml`` cut short by a full disk or an older
version's kill, or past what it is read at: :mod:`kernbench.records`; ``results.parquet``
that does not read) is one line naming the file and
what to do: with ``hydra.sweeper.resume=true`` the sweep runs again whatever the record
cannot vouch for (a row is kept only if its configuration is its point's, so nothing
of another grid is kept); deleting the directory starts over.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

import kernbench
from kernbench.config.columns import SPEED_TIMINGS, TIMINGS, group_names
from kernbench.errors import ConfigError, printable
from kernbench.files import remove_temporaries, write_atomic
from kernbench.records import MAX_BYTES, RecordError, parse_record, read_text
from kernbench.results import STATUS_OK, config_hash, git_commit
from kernbench.results.identity import IDENTITY_COLUMNS
from kernbench.results.table import row_digests, stored_digests, stored_value
from kernbench.sweep.cache import check_declared
from kernbench.sweep.merge import MERGED_FILE, check_merged_path

if TYPE_CHECKING:  # for annotations only: points imports the simulator
    from kernbench.sweep.points import PointRow

log = logging.getLogger(__name__)

RECORDS_DIR = ".hydra"
POINTS_FILE = "points.yaml"  # every point's shape and overrides, by job number
LOCK_FILE = "sweep.lock"  # flock'ed, never renamed: a rename would give a second inode to lock
HOLDER_FILE = "sweep.holder"  # who holds the lock, for the refusal's message
KEY = "hydra.sweep.dir"


@contextlib.contextmanager
def claimed(sweep_dir: Path, jobs: Sequence[Sequence[str]], resume: bool = False) -> Iterator[None]:
    """Hold ``sweep_dir`` for this sweep of ``jobs`` (see the module's docstring);
    raise :class:`ConfigError` if another sweep holds it, it holds another grid, a
    record is damaged (unless ``resume``), or ``results.parquet`` cannot be written."""
    records = sweep_dir / RECORDS_DIR
    records.mkdir(parents=True, exist_ok=True)
    fd = os.open(records / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                KEY,
                f"{sweep_dir} is being written by another sweep ({_holder(records)}); wait"
                " for it to end or choose another directory",
            ) from None
        _check_grid(sweep_dir, jobs, resume)
        check_merged_path(sweep_dir, KEY)
        remove_temporaries(sweep_dir)
        write_atomic(records / HOLDER_FILE, f"pid {os.getpid()} on {socket.gethostname()}\n")
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(records: Path) -> str:
    try:
        return (records / HOLDER_FILE).read_text(errors="replace").strip() or "another process"
    except OSError:
        return "another process"


def _check_grid(sweep_dir: Path, jobs: Sequence[Sequence[str]], resume: bool) -> None:
    """Refuse a directory whose records hold a grid other than ``jobs``, or records
    too damaged to say (unless ``resume``: its rows are checked one by one)."""
    try:
        stored = stored_grid(sweep_dir, records_bytes(jobs))
    except DamagedRecord as damaged:
        if not resume:
            raise ConfigError(KEY, damaged.advice(sweep_dir)) from None
        log.warning(
            f"{damaged}: its grid is not compared with this one; rows are kept only"
            " where their configuration is their point's"
        )
        return
    if stored is None or stored == [list(job) for job in jobs]:
        return
    differ = next(
        (n for n, (a, b) in enumerate(zip(stored, jobs, strict=False)) if a != list(b)),
        min(len(stored), len(jobs)),
    )
    if differ < min(len(stored), len(jobs)):
        there, here = " ".join(stored[differ]), " ".join(jobs[differ])
        where = f"point #{differ} there is '{there}', here '{here}'"
    else:
        where = f"it has {len(stored)} points, this sweep {len(jobs)}"
    raise ConfigError(
        KEY,
        f"{sweep_dir} holds another grid's sweep ({where}); choose another directory"
        " (hydra.sweep.dir=...), or delete that one",
    )


def records_bytes(jobs: Sequence[Sequence[str]]) -> int:
    """The most bytes ``points.yaml`` is read at: :data:`~kernbench.records.MAX_BYTES`
    beyond what this grid's records could take (a point's line, and ten bytes a
    character of its overrides: YAML's longest escape, ``\\U0001F600``). A larger file
    is another grid's, or no record, and is not parsed."""
    return MAX_BYTES + sum(32 + sum(10 * len(o) + 8 for o in job) for job in jobs)


class DamagedRecord(Exception):
    """A record of the sweep directory that does not read as what it should hold."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{printable(str(path))} is damaged ({why})")
        self.path = path

    def advice(self, sweep_dir: Path) -> str:
        return (
            f"{self}; rerun with hydra.sweeper.resume=true to keep the rows that are this"
            f" grid's and run the rest, or delete {printable(str(sweep_dir))} to start over"
        )


def end_line(n_points: int) -> str:
    """The last line of ``points.yaml`` (a YAML comment): a file cut short that still
    parses, its last points lost, lacks it."""
    return f"# {n_points} points\n"


def stored_grid(sweep_dir: Path, max_bytes: int = MAX_BYTES) -> list[list[str]] | None:
    """The overrides of every point the directory's records hold, in job order, or
    None if it holds no sweep's records; :class:`DamagedRecord` if they do not read
    as job numbers 0..n-1, each with a list of override strings, or do not read in
    bounded time (more than ``max_bytes``, or YAML aliases: :mod:`kernbench.records`)."""
    path = sweep_dir / RECORDS_DIR / POINTS_FILE
    try:
        text = read_text(path, max_bytes)
        points = parse_record(text, path)
    except FileNotFoundError:
        return None
    except RecordError as exc:
        raise DamagedRecord(path, exc.why) from None
    except OSError as exc:
        raise DamagedRecord(path, f"unreadable: {exc}") from None
    if not isinstance(points, dict) or not points:
        raise DamagedRecord(path, "empty" if not points else "not a mapping of points")
    if not text.endswith(end_line(len(points))):  # YAML cut short may still parse
        raise DamagedRecord(path, f"cut short: it does not end with '{end_line(len(points))[:-1]}'")
    if set(points) != set(range(len(points))):
        raise DamagedRecord(path, f"its keys are not the job numbers 0 to {len(points) - 1}")
    grid = []
    for num in range(len(points)):
        entry = points[num]
        overrides = entry.get("overrides") if isinstance(entry, dict) else None
        if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
            raise DamagedRecord(path, f"point {num} has no list of overrides")
        grid.append(overrides)
    return grid


class Resumed:
    """What ``resume=true`` keeps of a directory's ``results.parquet``: the rows by job
    number, and how many it dropped, by reason (the summary line says them)."""

    def __init__(self) -> None:
        self.rows: dict[int, dict[str, Any]] = {}
        self.dropped: dict[str, int] = {}

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def summary(self) -> str:
        """``; 4 rows dropped (4 whose configuration is not their point's)``, or ``""``."""
        if not self.dropped:
            return ""
        total = sum(self.dropped.values())
        reasons = ", ".join(f"{n} {why}" for why, n in self.dropped.items())
        return f"; {total} row{'s' if total != 1 else ''} dropped ({reasons})"


# Why a row is not kept (Resumed.dropped): each runs its point again.
OTHER_CODE = "made by other code"
NOT_OK = "not ok"
NO_POINT = "for no point of this sweep"
CHANGED = "changed since the sweep wrote them"
OTHER_CONFIG = "whose configuration is not their point's"
NO_RESULT = "whose metrics are no result"


def kept_rows(sweep_dir: Path, points: Callable[[int], PointRow | None]) -> Resumed:
    """The ok rows of the directory's ``results.parquet`` that ``resume=true`` keeps, by
    job number: made by this code (same version and commit), for a point of this sweep,
    as the sweep wrote them (their digest, :func:`kernbench.results.table.row_digests`,
    is one the table was written with: a row edited or two rows' metrics swapped since
    is not), holding that point's configuration (``points(num)``, None if the point
    does not build; asked only for candidates, as building a point's config costs
    milliseconds: each config column and the config hash are the point's) and metrics
    an ok row of its workload holds (:func:`kernbench.sweep.cache.check_declared`, as
    the point cache checks an entry). A row from other code or another grid (a table
    copied in, records deleted), an error row (a stop, a timeout, a fault since fixed),
    a row changed by hand and a point with no row run again."""
    resumed = Resumed()
    path = sweep_dir / MERGED_FILE
    if not path.exists():
        return resumed
    try:
        table = pq.read_table(path)
        rows = table.to_pylist()
    except Exception as exc:  # cut short, or not Parquet: Arrow's errors have no common base
        why = " ".join(f"{type(exc).__name__}: {exc}".split())
        log.warning(f"{printable(str(path))} is damaged ({why}): no row of it is kept")
        return resumed
    written = stored_digests(table)
    types = {field.name: field.type for field in table.schema}
    version, commit = kernbench.__version__, git_commit()
    for row, digest in zip(rows, row_digests(table), strict=True):
        num = row.get("job_num")
        if row.get("status") != STATUS_OK:
            resumed.drop(NOT_OK)
        elif row.get("kernbench_version") != version or row.get("git_commit") != commit:
            resumed.drop(OTHER_CODE)
        elif num is None or num in resumed.rows:
            resumed.drop(NO_POINT)
        elif digest not in written:
            resumed.drop(CHANGED)
        else:
            point = points(num)
            why = _not_kept(row, point, types)
            if why is not None:
                resumed.drop(why)
            elif point is not None:
                resumed.rows[num] = _own_columns(row, point)
    return resumed


def _not_kept(row: dict[str, Any], point: PointRow | None, types: dict[str, Any]) -> str | None:
    """Why a row the table vouches for is still not ``point``'s result, or None."""
    if point is None:
        return NO_POINT
    if row.get("config_hash") != config_hash(point.columns) or not _same_config(
        row, point.columns, types
    ):
        return OTHER_CONFIG
    if point.metrics is not None:
        try:
            check_declared(_metrics(row, point.metrics), point.metrics)
        except ValueError:
            return NO_RESULT
    return None


def _same_config(row: dict[str, Any], columns: Mapping[str, Any], types: dict[str, Any]) -> bool:
    """Whether the row's config columns (dotted names) are ``columns``, as its table
    holds them (a count in a column that also holds ``all`` is text: stored_value), and
    no other config column of the row holds a value (a column of another workload of
    the sweep is null in it). The row's config_hash, stored beside them, cannot say
    this: an edit that leaves the hash leaves a row that ran one config and names
    another."""
    for name, value in columns.items():
        if name not in types or not _identical(row.get(name), stored_value(value, types[name])):
            return False
    return all(row[name] is None for name in row if "." in name and name not in columns)


def _identical(a: Any, b: Any) -> bool:
    """Equal and of one type: ``True == 1`` and ``4096.0 == 4096`` are not a config."""
    return type(a) is type(b) and a == b


def _metrics(row: dict[str, Any], declared: Mapping[str, str]) -> dict[str, Any]:
    """The row's ``declared`` metric columns; ValueError if a column that is none of a
    row's own (config, groups, identity, status, the declared metrics, timings) holds
    a value: a metric no ok row of the workload has."""
    own = {*declared, *_ROW_FIELDS, *group_names()}
    stray = [k for k, v in row.items() if v is not None and "." not in k and k not in own]
    if stray:
        raise ValueError(f"columns {stray} hold values no row of its workload has")
    return {name: row.get(name) for name in declared}


def _own_columns(row: dict[str, Any], point: PointRow) -> dict[str, Any]:
    """The row without the null columns that are none of its own (another workload's
    config or metrics, or a column an edited row brought in): merged again, the table
    has the columns a fresh sweep's has."""
    if point.metrics is None:  # no metrics declared: any column may be one of them
        return row
    own = {*point.columns, *point.metrics, *_ROW_FIELDS, *group_names()}
    return {name: value for name, value in row.items() if value is not None or name in own}


# A row's columns that are neither config nor metrics (kernbench.results.make_row).
_ROW_FIELDS = (*IDENTITY_COLUMNS, "status", "error", "cached", *TIMINGS, *SPEED_TIMINGS)
