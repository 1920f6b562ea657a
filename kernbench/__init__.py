"""KernBench: configuration-driven sweeps around a SimPy accelerator simulator.

The simulator's hot modules may be installed compiled by mypyc (setup.py), with their
``.py`` sources beside them. ``KERNBENCH_PURE=1`` in the environment makes every
``kernbench.*`` module load from its source instead (a finder put first on
``sys.meta_path`` here, before any submodule is imported), e.g. to profile the model
with py-spy or cProfile, which cannot see inside compiled code. :func:`build` says
which of the two was imported. A compiled module whose ``.py`` has changed since it was
compiled (an editable install edited and not rebuilt) would run its old code, so then
every module runs from source, as under ``KERNBENCH_PURE=1``, with one line saying so.
This file itself always runs as Python.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

try:
    __version__ = version("kernbench")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"

PURE_ENV = "KERNBENCH_PURE"
# setup.py's record of the sources it compiled (sha256 by path from the package's parent)
MANIFEST = "_compiled.json"
COMPILED = "compiled"
PURE = "pure"


class _SourceFinder:
    """Finds ``kernbench.*`` modules as their ``.py`` files (a package as its
    ``__init__.py``), so a compiled module beside its source is passed over. What has
    no ``.py`` file here (``kernbench.conf``, a data folder) is left to the next
    finder."""

    @classmethod
    def find_spec(
        cls, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(__name__ + ".") or not path:
            return None
        name = fullname.rpartition(".")[2]
        for entry in path:
            package = os.path.join(entry, name)
            init = os.path.join(package, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    fullname, init, submodule_search_locations=[package]
                )
            source = os.path.join(entry, name + ".py")
            if os.path.isfile(source):
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def pure_requested() -> bool:
    """True if ``KERNBENCH_PURE`` asks for the pure-Python modules ("1"); unset, empty
    or "0" leaves the install's own. Any other value is a ValueError naming it."""
    value = os.environ.get(PURE_ENV, "")
    if value not in ("", "0", "1"):
        raise ValueError(
            f"{PURE_ENV}={value}: must be 1 (run the pure-Python modules) or 0 / unset"
        )
    return value == "1"


def stale_sources(package: str | None = None) -> list[str]:
    """The compiled modules' sources (paths such as ``kernbench/sim/fabric.py``) that
    differ from what setup.py compiled, by content; none without a compiled build. A
    record that cannot be read vouches for nothing: then it is the one named.
    ``package``: the package directory to look in (this one unless given)."""
    if package is None:
        package = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(package, MANIFEST)) as f:
            built = json.load(f)
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        built = None
    if not isinstance(built, dict):
        return [f"{__name__}/{MANIFEST}"]
    root = os.path.dirname(package)
    stale = []
    for path, digest in sorted(built.items()):
        try:
            with open(os.path.join(root, path), "rb") as f:
                now = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            now = ""
        if now != digest:
            stale.append(path)
    return stale


def stale_notice(stale: Sequence[str]) -> str:
    """The line a process prints on stderr as it starts when ``stale`` (what
    :func:`stale_sources` found) is not empty: the first path and how many more."""
    others = len(stale) - 1
    more = f" and {others} more compiled module{'s' * (others > 1)}" if others else ""
    return (
        f"kernbench: {stale[0]}{more} changed after the compiled build; running the"
        f" .py sources ({PURE_ENV}=1) until it is rebuilt (pip install -e .)"
    )


def _install_source_finder() -> None:
    try:
        wanted = pure_requested()
    except ValueError:  # reported by the command line (kernbench.cli.entry)
        return
    if not wanted:
        stale = stale_sources()
        if stale:
            print(stale_notice(stale), file=sys.stderr)
            # The processes this one starts (a sweep's workers) run the same modules,
            # and say nothing.
            os.environ[PURE_ENV] = "1"
            wanted = True
    if wanted and _SourceFinder not in sys.meta_path:
        sys.meta_path.insert(0, _SourceFinder)


_install_source_finder()


def build() -> str:
    """``"compiled"`` if the simulator's modules were imported compiled (mypyc),
    ``"pure"`` if they run as Python: what was imported, not what was asked for."""
    from kernbench.sim import events  # a hot module (setup.py's HOT): imported compiled

    return COMPILED if is_compiled(events) else PURE


def is_compiled(module: ModuleType) -> bool:
    """True if ``module`` was loaded from a compiled extension, not from source."""
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)
