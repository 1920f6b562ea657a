"""Register the structured-config schemas with Hydra's ConfigStore, and find ``conf/``.

This module owns the link between the dataclasses of :mod:`kernbench.config.schema`
and the YAML files under ``conf/`` (DESIGN §2): the root schema is the first entry of
``conf/config.yaml``'s defaults list, and each workload YAML starts from its schema
node (``defaults: [base_<name>, _self_]``), so a typo or a wrong type anywhere is an
error that names the key. It must not hold values: those live in the YAML files.

To add a workload ``foo``: write ``FooWorkloadConfig`` in ``schema.py``, add
``"base_foo": FooWorkloadConfig`` to :data:`WORKLOAD_SCHEMAS`, and write
``conf/workload/foo.yaml`` starting with ``defaults: [base_foo, _self_]``.

Study presets live in the top-level ``experiments/`` folder (DESIGN §1) but Hydra
finds a group by its folder name, and the group is ``experiment``; so each preset
file is stored in the ConfigStore as ``experiment/<file stem>`` in the package its
``# @package`` header names (the ConfigStore is on Hydra's search path as
``structured://``). A user's own presets can still come from a search path folder
holding ``experiment/<name>.yaml`` (``hydra.searchpath=[file:///my/dir]``).

Where ``conf/`` and ``experiments/`` are: beside the package in a source checkout
(editable install), inside it (``kernbench/conf``, ``kernbench/experiments``) in a
regular install, where pyproject.toml's package-dir mapping puts them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from kernbench.config.schema import (
    DecoderLayerWorkloadConfig,
    GqaPairWorkloadConfig,
    GqaWorkloadConfig,
    KernBenchConfig,
    StreamWorkloadConfig,
    TritonWorkloadConfig,
    key,
)

ROOT_SCHEMA = "kernbench_schema"
EXPERIMENT_GROUP = "experiment"

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the kernbench package
_HEADER = re.compile(r"^#\s*@package\s+(\S+)")

# Schema node name (as written in a workload YAML's defaults list) -> dataclass.
WORKLOAD_SCHEMAS: dict[str, type] = {
    "base_stream": StreamWorkloadConfig,
    "base_gqa": GqaWorkloadConfig,
    "base_gqa_pair": GqaPairWorkloadConfig,
    "base_triton": TritonWorkloadConfig,
    "base_decoder_layer": DecoderLayerWorkloadConfig,
}


@dataclass
class PathsConfig:
    """Where runs and sweeps write (``conf/paths/``); ``hydra.run.dir`` and
    ``hydra.sweep.dir`` interpolate these, and the point cache lives in ``cache_dir``.
    Relative paths are relative to the directory ``kernbench`` was started in.
    Locations, not model inputs: they are not result columns.
    """

    root: str = key(
        MISSING,
        "where runs, sweeps and the cache go (relative to the directory kernbench starts in)",
    )
    run_dir: str = key(MISSING, "a single run's directory")
    sweep_name: str = key(MISSING, "a sweep's folder under root (a preset sets its study's name)")
    sweep_dir: str = key(MISSING, "a sweep's directory")
    cache_dir: str = key(MISSING, "the point cache: one JSON file per point simulated")


@dataclass
class AppConfig(KernBenchConfig):
    """The root node the app composes: the simulator's config, output locations, and
    how the app runs (neither of the last two is a result column)."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    cache: bool = key(
        True,
        "serve points already simulated (same config, same code) from cache_dir",
    )
    # A number result column, or a list of them, that a run returns to an optimizing
    # sweeper (hydra/sweeper=optuna) instead of its status (kernbench.config.objective).
    objective: Any = key(
        None,
        "a number result column, or a list of them, that a run returns to an optimizing sweeper "
        "instead of its status",
    )


def register_configs() -> None:
    """Store every schema node and every study preset and register the ``pid``
    resolver: every way of composing a kernbench config
    (the app, a notebook, ``kernbench.triton``) calls this first, and ``conf/config.yaml``
    names ``hydra/sweeper: kernbench``. Idempotent: storing a name again replaces it."""
    register_pid_resolver()
    cs = ConfigStore.instance()
    cs.store(name=ROOT_SCHEMA, node=AppConfig)
    for name, schema in WORKLOAD_SCHEMAS.items():
        cs.store(group="workload", name=name, node=schema)
    for path in experiment_files():
        node = OmegaConf.load(path)
        cs.store(group=EXPERIMENT_GROUP, name=path.stem, node=node, package=package_of(path))


def register_pid_resolver() -> None:
    """``${pid:}``: the id of the process that first resolves it, for unique run and
    sweep directory names (``conf/paths/default.yaml``). Cached like Hydra's ``now``,
    so a sweep's workers, which receive the parent's resolver cache with its config,
    resolve the sweep directory to the same name as the parent did."""
    OmegaConf.register_new_resolver("pid", os.getpid, use_cache=True, replace=True)


def experiment_files() -> list[Path]:
    """The study presets (``experiments/*.yaml``), sorted by name."""
    return sorted(experiments_dir().glob("*.yaml"))


def package_of(path: Path) -> str | None:
    """The package a config file's ``# @package`` header names (Hydra's own rule:
    only comment lines before the first other line count), or None."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        match = _HEADER.match(line)
        if match:
            return match.group(1)
    return None


def conf_dir() -> Path:
    """The absolute path of the ``conf/`` directory Hydra composes from."""
    return _data_dir("conf")


def experiments_dir() -> Path:
    """The absolute path of the ``experiments/`` directory holding the study presets."""
    return _data_dir("experiments")


def _data_dir(name: str) -> Path:
    """``kernbench/<name>`` in a regular install, else ``<checkout>/<name>``."""
    inside = _PACKAGE_ROOT / name
    return inside if inside.is_dir() else _PACKAGE_ROOT.parent / name
