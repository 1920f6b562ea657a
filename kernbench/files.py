"""Files written whole or not at all.

Every record a run or a sweep writes (a table, ``points.yaml``, a cache entry, a done
mark) goes to a temporary file beside its place, named ``.<name>.<random>.tmp``, and is
renamed into place: a reader, or a sweep resumed after a SIGKILL or a full disk, finds
the previous version or the new one, never half of one. A writer killed before its
rename leaves its temporary behind; the next sweep into that directory removes them
(:func:`remove_temporaries`) once it holds the directory's lock, so none can belong to
a writer still running.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_SUFFIX = ".tmp"


@contextlib.contextmanager
def replaced(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; once the block has written it, give it
    the mode ``open()`` would and rename it to ``path``. Removed if the block fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, default_file_mode())  # mkstemp's 0600 would hide it from the group
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None or exc.filename == str(tmp):  # name the record, not its temporary
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole, by rename."""
    with replaced(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    return Path(path)


def is_temporary(path: Path) -> bool:
    """A file :func:`replaced` names: ``.<name>.<random>.tmp``."""
    return path.name.startswith(".") and path.name.endswith(TMP_SUFFIX)


def remove_temporaries(directory: Path) -> int:
    """Remove every temporary left under ``directory`` by a writer that died before
    its rename; the number removed. Call it only while no writer of that directory
    can be running (a sweep holding its lock)."""
    removed = 0
    for path in directory.rglob(f".*{TMP_SUFFIX}"):
        if path.is_file() and is_temporary(path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed


@functools.cache
def default_file_mode() -> int:
    """The mode ``open()`` would give a new file (0666 less the umask), so results on a
    shared filesystem are as readable as any other file the user writes there. Read
    once per process: the umask can only be read by setting it."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
