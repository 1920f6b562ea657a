"""Identity columns of a result row: which config, which code.

DESIGN §6: every row says what produced it, so rows from different sweeps, machines
or commits can be told apart and joined. This module owns how that is computed; it
must not touch the simulator or Hydra.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kernbench

# The package's source root: the git checkout's top level when run from source.
_SOURCE_ROOT = Path(kernbench.__file__).resolve().parent.parent


# The identity columns, in table order (identity() makes them; the report leaves them
# out of what was swept).
IDENTITY_COLUMNS = (
    "sweep_id",
    "job_num",
    "config_hash",
    "kernbench_version",
    "git_commit",
    "build",
)


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace: the same value always gives the same text, whatever
    order it was composed in (config hashes and cache keys are taken over it)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(flat_config: Mapping[str, Any]) -> str:
    """First 16 hex digits of sha256 over the canonical JSON of the flattened config."""
    return hashlib.sha256(canonical_json(dict(flat_config)).encode()).hexdigest()[:16]


@functools.cache
def git_commit() -> str | None:
    """HEAD's commit if the package is imported from a git checkout, else None.

    A package installed into a virtualenv that happens to sit inside some repository
    is not a checkout of *this* source, so the repository's top level must be the
    package's parent directory.
    """
    try:
        top = _git("rev-parse", "--show-toplevel")
        if top is None or Path(top).resolve() != _SOURCE_ROOT:
            return None
        return _git("rev-parse", "HEAD")
    except OSError:  # git not installed
        return None


def _git(*args: str) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(_SOURCE_ROOT), *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def identity(
    flat_config: Mapping[str, Any],
    *,
    sweep_id: str | None = None,
    job_num: int | None = None,
) -> dict[str, Any]:
    """The identity columns, in table order.

    ``sweep_id`` names the sweep a row came from (its directory) and ``job_num`` its
    point in it; both are null for a single run. ``build`` is ``compiled`` or ``pure``:
    which simulator modules this process imported (:func:`kernbench.build`).
    """
    return {
        "sweep_id": sweep_id,
        "job_num": job_num,
        "config_hash": config_hash(flat_config),
        "kernbench_version": kernbench.__version__,
        "git_commit": git_commit(),
        "build": kernbench.build(),
    }
