"""Files written whole or not at all, and never through a link planted in their place.

Every record a run or a sweep writes (a table, ``points.yaml``, a cache entry, a done
mark) goes to a temporary file beside its place, named ``.<name>.<random>.tmp``, and is
renamed into place: a reader, or a sweep resumed after a SIGKILL or a full disk, finds
the previous version or the new one, never half of one. A writer killed before its
rename leaves its temporary behind; the next sweep into that directory removes them
(:func:`remove_temporaries`) once it holds the directory's lock, so none can belong to
a writer still running.

A sweep directory may be one other users can write into (a shared cluster directory,
one made under umask 002), so a write never goes through a symbolic link: one planted
where a record goes is refused (:class:`UnsafePath`, naming it), not followed into
whatever it points to nor silently replaced; the temporary is made exclusively (never
through a link) and must still be the file made when it is renamed into place. What a
sweep's own processes write for each other to read back (its chunks, its done marks)
goes into a directory only its user can write (:func:`private_dir`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_SUFFIX = ".tmp"
PRIVATE_MODE = 0o700
A_LINK = "is a symbolic link (kernbench writes no file through one)"


class UnsafePath(OSError):
    """A path kernbench will not write through nor trust what it holds: a symbolic
    link, or a directory another user owns. An OSError naming the path (``filename``)
    whose ``strerror`` says why, so a write inside
    :func:`kernbench.sweep.outputs.reported` is the one line every write error is."""

    def __init__(self, path: str | os.PathLike[str], reason: str, code: int = errno.ELOOP):
        super().__init__(code, f"it {reason}", os.fspath(path))
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.filename} {self.reason}"


@contextlib.contextmanager
def replaced(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; once the block has written it, give it
    the mode ``open()`` would and rename it to ``path``. Removed if the block fails.
    A symbolic link at ``path`` is refused (:class:`UnsafePath`), before and again
    just before the rename; so is a temporary that is no longer the file made here."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_link(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    tmp = Path(name)
    try:
        yield tmp
        _same_file(tmp, fd, path)
        os.fchmod(fd, default_file_mode())  # mkstemp's 0600 would hide it from the group
        refuse_link(path)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None or exc.filename == str(tmp):  # name the record, not its temporary
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole, by rename (:func:`replaced`)."""
    with replaced(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "wb") as file:
            file.write(data.encode() if isinstance(data, str) else data)
    return Path(path)


def refuse_link(path: str | os.PathLike[str]) -> None:
    """Raise :class:`UnsafePath` if ``path`` is a symbolic link. A rename would replace
    the link rather than follow it, but a link where a record goes was put there by
    someone, and the user is told rather than the link silently dropped."""
    if os.path.islink(path):
        raise UnsafePath(path, A_LINK)


def _same_file(tmp: Path, fd: int, path: Path) -> None:
    """Raise :class:`UnsafePath` unless ``tmp`` is still the file ``fd`` was made as:
    in a directory others can write into, it could have been swapped for another."""
    made, now = os.fstat(fd), os.lstat(tmp)
    if (now.st_dev, now.st_ino) != (made.st_dev, made.st_ino) or not stat.S_ISREG(now.st_mode):
        raise UnsafePath(path, "had its temporary file swapped for another while it was written")


def open_appending(path: str | os.PathLike[str]) -> int:
    """A descriptor appending to ``path`` (made if missing, with the mode ``open()``
    would give it), opened without following a symbolic link: :class:`UnsafePath` if
    one is there. For a log a sweep appends to (``points.log``)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(path, A_LINK) from None
        raise


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a directory only this user can use (mode 0700), made if missing:
    where a sweep keeps what its own processes read back and trust (its chunks, its
    done marks). Refused (:class:`UnsafePath`) if it is a symbolic link, not a
    directory, or another user's: someone else made it, maybe holding files planted for
    this sweep to read, and it is not this sweep's to take over or delete. One of this
    user's that others could write into (an older kernbench's, or made under umask
    002) is made private; what it holds is the caller's to clear or check."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, PRIVATE_MODE)
    _check_private(path, os.lstat(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (NotADirectoryError, FileNotFoundError):  # replaced since the lstat
        raise UnsafePath(path, "was replaced while it was checked") from None
    try:
        info = os.fstat(fd)
        _check_private(path, info)
        if stat.S_IMODE(info.st_mode) != PRIVATE_MODE:
            os.fchmod(fd, PRIVATE_MODE)
    finally:
        os.close(fd)
    return path


def _check_private(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(path, "is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(path, "is not a directory", errno.ENOTDIR)
    if info.st_uid != os.geteuid():
        raise UnsafePath(path, f"belongs to another user (uid {info.st_uid})", errno.EPERM)


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
