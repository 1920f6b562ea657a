"""``kernbench --help`` and ``kernbench --keys``: generated from the schema and ``conf/``.

The groups and their options are read from ``conf/`` and the ConfigStore (hidden
``base_*`` schema nodes left out, ``+experiment=`` with its plus); the keys from
:mod:`.keys`; each key's default from the config ``kernbench`` composes with no
overrides (a workload's own keys from that workload's option); after them, the
settings that are not config keys (the sweeper's and launcher's, Optuna's
``n_trials``, ``KERNBENCH_PURE``: :func:`~kernbench.cli.keys.setting_keys`). Nothing
here is written by hand twice.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from functools import cache

from omegaconf import DictConfig, OmegaConf

from kernbench.cli.keys import Key, default_of, schema_keys, setting_keys
from kernbench.cli.precheck import (
    group_options,
    schema_of_option,
    searched_options,
    workloads_with,
)
from kernbench.config.flatten import flatten
from kernbench.config.store import (
    EXPERIMENT_GROUP,
    WORKLOAD_SCHEMAS,
    AppConfig,
    conf_dir,
    package_of,
)
from kernbench.config.validate import DERIVED

USAGE = """\
kernbench: simulate one configuration, or sweep many with -m (a Hydra app).

usage:
  kernbench [group=option ...] [key=value ...]   one run -> outputs/<date>/<time>/
  kernbench -m key=v1,v2 [key=v3,v4 ...]         a sweep of every combination
  kernbench -m +experiment=<preset> [...]        a study preset and its grid
  kernbench --cfg job [overrides]                validate, print the config (derived filled)
  kernbench --keys                               only the key list below
  kernbench --hydra-help                         Hydra's own flags
  kernbench-report [DIR]                         report on DIR, or the newest sweep/run with ok rows
"""


def group_defaults() -> dict[str, str]:
    """Each group's default option, from ``conf/config.yaml``'s defaults list."""
    found: dict[str, str] = {}
    listed = OmegaConf.to_container(OmegaConf.load(conf_dir() / "config.yaml").defaults)
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict):  # {group: option}; plain names are schema nodes
            found |= {str(group): str(option) for group, option in entry.items()}
    return found


def groups_text(searched: dict[str, list[str]] | None = None) -> list[str]:
    """One line per group; ``searched``: the options a ``hydra.searchpath`` adds,
    listed with their group and marked ``(searchpath)``."""
    defaults = group_defaults()
    lines = ["groups (pick one option; * marks the default):"]
    groups = {group: list(options) for group, options in group_options().items()}
    for group, options in (searched or {}).items():
        own = groups.setdefault(group, [])
        own.extend(f"{o} (searchpath)" for o in sorted(options) if o not in own)
    for group, options in groups.items():
        marked = [f"{o}*" if defaults.get(group) == o else o for o in options]
        plus = "+" if group == EXPERIMENT_GROUP else ""
        lines.append(f"  {plus}{group}={' | '.join(marked)}")
    return lines


def composed_defaults() -> dict[str, str]:
    """Every key's value as ``kernbench`` composes it with no overrides, and each
    workload's keys as that workload option gives them.

    Composed here from ``conf/`` as Hydra's defaults lists say (each option's file at
    its ``# @package``, its own defaults list first, then ``_self_``), not by Hydra's
    ``compose``: that scans every installed Hydra plugin first, and kernbench's own
    import the simulator, pyarrow and pandas, which made ``--help`` take over a second
    (tests/test_cli.py holds this composition equal to Hydra's)."""
    values: dict[str, str] = {}
    for option in reversed(group_options()["workload"]):
        values |= workload_defaults(option)
    return values | _flat(primary_config())


def workload_defaults(option: str) -> dict[str, str]:
    """The ``workload.*`` keys' values as workload ``option`` gives them ({} for an
    option that is not a workload schema's)."""
    if schema_of_option(option) is None:
        return {}
    return {f"workload.{k}": v for k, v in _flat(_option_node("workload", option)).items()}


def primary_config() -> DictConfig:
    """``conf/config.yaml`` composed with its default options, without ``hydra``:
    the schema, each group's default option at its package, then the file itself."""
    own = OmegaConf.load(conf_dir() / "config.yaml")
    cfg = OmegaConf.structured(AppConfig)
    for group, option in group_defaults().items():
        if option != "None" and not group.startswith(("override ", "hydra/")):
            package = package_of(conf_dir() / group / f"{option}.yaml") or group
            node = _option_node(group, option)
            cfg = OmegaConf.merge(cfg, node if package == "_global_" else _at(package, node))
    own.pop("defaults", None)
    own.pop("hydra", None)
    return OmegaConf.merge(cfg, own)


@cache
def _option_node(group: str, option: str) -> DictConfig:
    """A group option's values: its defaults list (options of the same group, or a
    schema node such as ``base_stream``) merged in order, its own values at ``_self_``."""
    own = OmegaConf.load(conf_dir() / group / f"{option}.yaml")
    listed = own.pop("defaults", None) or ["_self_"]
    node = OmegaConf.create({})
    for entry in listed:
        name = str(entry)
        if name == "_self_":
            part = own
        elif name in WORKLOAD_SCHEMAS:
            part = OmegaConf.structured(WORKLOAD_SCHEMAS[name])
        else:
            part = _option_node(group, name)
        node = OmegaConf.merge(node, part)
    return node


def _at(package: str, node: DictConfig) -> DictConfig:
    """``node`` placed under the dotted ``package`` (``topology.cube.memory_map``)."""
    nested: object = node
    for part in reversed(package.split(".")):
        nested = {part: nested}
    return OmegaConf.create(nested)


def _flat(cfg: DictConfig) -> dict[str, str]:
    """Every value as written (``${paths.root}/...`` unresolved), as text."""
    return {k: default_of(v) for k, v in flatten(OmegaConf.to_container(cfg)).items()}


def key_table(defaults: dict[str, str] | None = None) -> list[str]:
    """What ``--keys`` prints: one aligned line per key: name, type, unit, default,
    limit; under it, indented further, what the key means (from the schema). Then,
    under :data:`SETTINGS_HEADING`, the same for :func:`settings_table`."""
    return [*_table(key_rows(defaults)), *settings_table()]


SETTINGS_HEADING = (
    "  not config keys: the sweeper's and launcher's (hydra.sweeper.<key>=... with -m),"
    " and the environment's:"
)


def settings_table() -> list[str]:
    """:func:`~kernbench.cli.keys.setting_keys` (the sweeper's and launcher's keys,
    ``KERNBENCH_PURE``) laid out as the config keys are, under :data:`SETTINGS_HEADING`."""
    return [SETTINGS_HEADING, *_table([(k, d, k.limit) for k, d in setting_keys()])]


def _table(found: list[tuple[Key, str, str]]) -> list[str]:
    keys = [key for key, _, _ in found]
    rows = [("key", "type", "unit", "default", "limit")]
    rows += [(k.name, k.type, k.unit or "-", d, limit) for k, d, limit in found]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    padded = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) for r in rows]
    lines = [f"  {padded[0]}  {rows[0][4]}".rstrip()]
    for line, row, key in zip(padded[1:], rows[1:], keys, strict=True):
        lines.append(f"  {line}  {row[4]}".rstrip())
        lines += [f"{MEANING_INDENT}{part}" for part in textwrap.wrap(key.meaning, 88)]
    return lines


MEANING_INDENT = " " * 6  # a key's meaning, under its line (key lines are indented 2)


def key_lines(table: list[str]) -> list[str]:
    """The config key lines of :func:`key_table` (its header first), without the
    meanings and without the settings after :data:`SETTINGS_HEADING`."""
    keys = table[: table.index(SETTINGS_HEADING)] if SETTINGS_HEADING in table else table
    return [line for line in keys if not line.startswith(MEANING_INDENT)]


def key_rows(defaults: dict[str, str] | None = None, width: int = 24) -> list[tuple[Key, str, str]]:
    """Every key with its default (from ``defaults``, else as ``kernbench`` composes
    it; cut to ``width`` characters) and its limit: what ``--keys`` and the
    documentation's key reference print."""
    defaults = composed_defaults() if defaults is None else defaults
    return [(k, _default(k, defaults, width), _limit(k)) for k in schema_keys().values()]


def _limit(key: Key) -> str:
    """The key's limit, and for a workload key the workloads that have it."""
    owners = workloads_with(key.name)
    where = f"[{', '.join(owners)}]" if key.name.startswith("workload.") and owners else ""
    return ", ".join(p for p in (key.limit, where) if p)


def _default(key: Key, defaults: dict[str, str], width: int) -> str:
    value = defaults.get(key.name, "")
    if value == "(derived)" and key.name not in DERIVED:
        value = "null"  # unset by default (objective), not filled in by validation
    return value if len(value) <= width else value[: width - 3] + "..."


def help_text(overrides: Sequence[str] = ()) -> str:
    """The whole ``--help`` page; with the command line's ``overrides``, a
    ``hydra.searchpath`` there adds its presets and group options."""
    keys = [
        "keys (set with key=value; units are in the names; each key's meaning under it):",
        *key_table(),
    ]
    return "\n".join([USAGE, *groups_text(searched_options(overrides)), "", *keys])
