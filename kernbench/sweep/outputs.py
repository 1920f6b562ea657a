"""Writing outputs may fail for reasons outside KernBench: a full disk, a read-only or
foreign directory. Those are one line naming the path and the system's reason, and
exit 1 — not chained tracebacks, and not a table that looks complete.

:func:`check_writable` runs before Hydra writes a run's or a sweep's first file (the
``OutputsWritable`` callback, :mod:`kernbench.sweep.callbacks`) and its line also names
the key that placed the directory (``paths.root: cannot write ...``); :func:`reported`
wraps the writing itself, since a disk can fill at any moment.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from kernbench.errors import printable
from kernbench.files import UnsafePath

# What the system says when a file cannot be written where it was asked to be.
WRITE_ERRORS = frozenset(
    {
        errno.ENOSPC,  # no space left on the device
        errno.EDQUOT,  # disk quota exceeded
        errno.EROFS,  # read-only file system
        errno.EACCES,  # permission denied
        errno.EPERM,  # operation not permitted
        errno.EFBIG,  # file too large (a file size limit)
        errno.ENOTDIR,  # a path component is a file
        errno.EEXIST,  # a directory wanted where a file is
        errno.ELOOP,  # a symbolic link where a file goes (kernbench.files.UnsafePath)
    }
)
# Free space a run needs before it starts: its records and one row are a few KB; a
# sweep's table ~1 KB a point. Below this, the first write would fail part way.
MIN_FREE_BYTES = 1 << 20
# The keys that place a run's (a sweep's) directory, the most specific first: the one
# the command line set is the one to change when the directory cannot be written.
LOCATION_KEYS = {
    "run": ("hydra.run.dir", "paths.run_dir", "paths.root"),
    "sweep": ("hydra.sweep.dir", "paths.sweep_dir", "paths.root", "paths.sweep_name"),
}


def message(exc: OSError, where: Path | str | None = None) -> str:
    """``cannot write <path>: <the reason>``: the system's, or why kernbench refused
    (:class:`kernbench.files.UnsafePath`: a symbolic link where the file goes)."""
    path = exc.filename if exc.filename is not None else where
    shown = printable(os.path.abspath(os.fsdecode(path))) if path is not None else "the outputs"
    why = exc.strerror if isinstance(exc, UnsafePath) else os.strerror(exc.errno)
    return f"cannot write {shown}: {why}"


@contextlib.contextmanager
def reported(where: Path | str | None = None) -> Iterator[None]:
    """A write error inside becomes one line on stderr and exit 1 (``where``: the path
    to name when the system does not say which file it was)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS:
            raise
        print(f"kernbench: error: {message(exc, where)}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def check_writable(directory: Path | str, key: str | None = None) -> None:
    """Make ``directory`` (and its parents), write and remove a file in it, and see
    that its file system has :data:`MIN_FREE_BYTES` free; else one line naming ``key``
    (the setting that put it there) and exit 1. Any error of the system counts, not
    only :data:`WRITE_ERRORS`: under ``/proc`` making a directory says "No such file or
    directory", and nothing has been written yet that a traceback would explain."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
        stat = os.statvfs(directory)
        if stat.f_bavail * stat.f_frsize < MIN_FREE_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(directory))
    except OSError as exc:
        text = message(exc, directory)
        print(f"kernbench: error: {f'{key}: ' if key else ''}{text}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def location_key(config: DictConfig, kind: str) -> str:
    """The key that placed the ``kind`` ("run" or "sweep") directory: the most specific
    of :data:`LOCATION_KEYS` the command line set, else ``paths.root``."""
    lists = OmegaConf.to_container(config.hydra.overrides, resolve=False)  # as typed
    given = {str(line).lstrip("+~").partition("=")[0] for lines in lists.values() for line in lines}
    return next((key for key in LOCATION_KEYS[kind] if key in given), "paths.root")


def say(text: str) -> None:
    """Print ``text`` to standard output; if its reader has gone (``kernbench -m ...
    dry_run=true | head``), drop this and every later line instead of failing with a
    BrokenPipeError traceback: the command goes on to its own exit status. Standard
    output is pointed at ``/dev/null``, as Python's documentation advises, so that the
    interpreter's last flush does not fail again on the way out."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
