"""Check the command line before Hydra sees it: one line per mistake, with a suggestion.

Hydra answers a mistyped key (``workload.acess_bytes=4096``) with advice to add it
with ``+`` and 4-11 lines; an internal schema node (``workload=base_stream``) it
accepts. :func:`precheck` reads the overrides with Hydra's own parser and, for each:

- a group option (``workload=``, ``topology=`` ...) must be one of the group's options
  (``conf/`` and any ``hydra.searchpath`` directory), not a hidden ``base_*`` schema
  node; a study preset needs ``+experiment=``;
- a key must be a schema key (of the chosen workload, for ``workload.*``), else
  "did you mean" the closest ones;
- each value (every value of a sweep) must fit the key's type: an enum's choices, an
  int, a float, a boolean (``true`` or ``false`` only, not the ``2``, ``yes`` or ``0``
  OmegaConf would also take); ``paths.root`` must not be empty and
  ``paths.sweep_name`` must stay under it.

A syntax error is Hydra's message on one line. ``+key=`` additions (checked by
validation), ``~key`` deletions, ``hydra.*`` keys and range/interval sweeps are left
to Hydra.
"""

from __future__ import annotations

import importlib.util
import re
import typing
from collections.abc import Iterable, Sequence
from dataclasses import make_dataclass
from functools import cache
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Override
from hydra.errors import OverrideParseException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from kernbench.cli.keys import Key, schema_keys, workload_keys
from kernbench.cli.suggest import did_you_mean
from kernbench.config import objective
from kernbench.config.columns import NUMBER, TEXT, metric_columns
from kernbench.config.store import (
    EXPERIMENT_GROUP,
    WORKLOAD_SCHEMAS,
    conf_dir,
    experiment_files,
    experiments_dir,
)
from kernbench.errors import ConfigError, printable
from kernbench.units import unit_of

HIDDEN_PREFIX = "base_"  # schema nodes the workload YAMLs build on, not options
DEFAULT_WORKLOAD = "stream"
KINDS = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "text"}


class UsageError(Exception):
    """One line naming what was typed, what is allowed and, if close, what was meant."""


def check_overrides(overrides: Sequence[str], multirun: bool = True) -> None:
    """Raise :class:`UsageError` for the first override that cannot be right. Without
    ``multirun`` (a single run) an override may not sweep."""
    for line in overrides:
        _check_text(line)
    parsed = _parse(list(overrides))
    if not multirun:
        for override in parsed:
            if override.is_sweep_override():
                raise UsageError(
                    f"{override.input_line}: a sweep of values needs -m (--multirun); one"
                    f" value holding a comma is quoted: {override.key_or_group}='a,b'"
                )
    workloads = _chosen_workloads(parsed)
    searched = _searched_options(parsed)
    _check_plugins_installed(parsed)
    _check_preset_plugins(parsed)
    if multirun:
        _check_optimizer_objective(parsed)
    plugins = _our_plugins(parsed)
    for override in parsed:
        name = override.key_or_group
        if name.split(".")[:2] in (["hydra", "sweeper"], ["hydra", "launcher"]):
            if name.split(".")[1] in plugins and not override.is_delete():
                _check_plugin_key(override)
            continue
        if name.startswith("hydra") or override.is_delete() or override.package:
            continue
        if searched is None and "." not in name:
            continue  # a pkg:// search path: its groups are Hydra's to check
        if name in group_options() or name in (searched or {}):
            _check_group(override, (searched or {}).get(name, []))
            _check_group_keys(override, workloads)
        elif not override.is_add() and not override.is_force_add():
            _check_key(override, workloads)
        else:
            _check_added(override, workloads)


def _check_text(line: str) -> None:
    """Bytes the locale could not decode reach Python as lone surrogates, which no
    record (YAML, Parquet) can hold: refused here, naming the key, before anything is
    written."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        key, _, value = printable(line).partition("=")
        raise UsageError(f"{key}: the value {value} is not UTF-8 text") from None


def _parse(overrides: list[str]) -> list[Override]:
    """Hydra's parse of the overrides; a syntax error is Hydra's words on one line,
    after the override it is in (Hydra's message does not say which)."""
    parser = OverridesParser.create()
    try:
        return parser.parse_overrides(overrides)
    except OverrideParseException as exc:
        _check_split_list(overrides)
        text = " ".join(str(exc).split())
        for line in overrides:
            try:
                parser.parse_overrides([line])
            except OverrideParseException as one:
                text = " ".join(str(one).split())
                text = text if line in text else f"{line}: {text}"
                break
        raise UsageError(text) from None


def _check_split_list(overrides: list[str]) -> None:
    """A word with no ``=`` after a ``key=value`` is most likely the rest of a list the
    shell split at a space (``topology.pes_per_cube=4 8``): say how to write it."""
    for i, line in enumerate(overrides):
        if "=" in line or line.startswith("~"):
            continue
        before = next((o for o in reversed(overrides[:i]) if "=" in o), None)
        if before is None:
            raise UsageError(f"{line}: not an override: write key=value")
        rest = []  # every word of the split list, not only this one
        for word in overrides[i:]:
            if "=" in word or word.startswith("~"):
                break
            rest += [v for v in word.strip().split(",") if v]
        joined = ",".join([before.rstrip(","), *rest])
        raise UsageError(
            f"{line}: not an override (a list written with spaces?);"
            f" write a list with commas: {joined}"
        )


@cache
def group_options() -> dict[str, list[str]]:
    """Each config group and the options a user may pick (hidden nodes left out)."""
    groups = {
        d.name: sorted(p.stem for p in d.glob("*.yaml"))
        for d in sorted(Path(conf_dir()).iterdir())
        if d.is_dir()
    }
    groups[EXPERIMENT_GROUP] = [p.stem for p in experiment_files()]  # stored or not yet
    for group in ("workload", EXPERIMENT_GROUP):
        names = {s.removesuffix(".yaml") for s in _stored(group)} | set(groups.get(group, []))
        groups[group] = sorted(n for n in names if not n.startswith(HIDDEN_PREFIX))
    return groups


def _stored(group: str) -> list[str]:
    """The ConfigStore's entries of ``group`` (``experiment/`` presets, schema nodes)."""
    try:
        return ConfigStore.instance().list(group)
    except OSError:  # the ConfigStore's "Path not found": nothing stored there
        return []


def _values(override: Override) -> list[Any]:
    """The values an override sets (every one of a choice sweep), else []."""
    value = override.value()
    if isinstance(value, ChoiceSweep):
        return list(value.list)
    return [] if override.is_sweep_override() else [value]


def searched_options(overrides: Sequence[str]) -> dict[str, list[str]]:
    """The group options a command line's ``hydra.searchpath`` adds (``--help`` lists
    them); {} if it names none, or none this process can read, or does not parse."""
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except OverrideParseException:
        return {}
    return _searched_options(parsed) or {}


def _searched_options(parsed: list[Override]) -> dict[str, list[str]] | None:
    """Group options in the directories of ``hydra.searchpath=[...]`` (a user's own
    presets, as Hydra users add them), by group; None when a search path is not a
    directory this process can read (``pkg://``): then group options are not checked."""
    found: dict[str, list[str]] = {}
    for override in parsed:
        if override.key_or_group != "hydra.searchpath":
            continue
        value = override.value()
        for entry in value if isinstance(value, list) else [value]:
            text = str(entry)
            if text.startswith("pkg://"):
                return None
            root = Path(text.removeprefix("file://"))
            for group in (d for d in root.glob("*") if d.is_dir()):
                found.setdefault(group.name, []).extend(p.stem for p in group.glob("*.yaml"))
    return found


def _check_group(override: Override, searched: list[str]) -> None:
    group = override.key_or_group
    options = sorted({*group_options().get(group, []), *searched})
    if group == EXPERIMENT_GROUP and not (override.is_add() or override.is_force_add()):
        raise UsageError(
            f"experiment={override.value()}: a study preset is added, not chosen: write"
            f" +experiment=<name> (presets: {', '.join(options)})"
        )
    for value in _values(override):
        if str(value) not in options:
            hint = did_you_mean(str(value), options)
            raise UsageError(
                f"{group}={value}: no such option; {group} options: {', '.join(options)}{hint}"
            )


def _check_group_keys(override: Override, workloads: list[str] | None) -> None:
    """An option that sets workload keys (``traffic=hotspot``: ``# @package workload``)
    fits only workloads that have those keys."""
    group = override.key_or_group
    if not workloads or group == "workload":
        return
    for value in _values(override):
        for name in _workload_keys_set_by(group, str(value)):
            try:
                _check_workload_key(name, workloads)
            except UsageError as exc:
                raise UsageError(f"{group}={value} sets {exc}") from None


@cache
def _workload_keys_set_by(group: str, option: str) -> tuple[str, ...]:
    """The ``workload.*`` keys a group option's YAML sets (none unless it is
    ``# @package workload``)."""
    path = Path(conf_dir()) / group / f"{option}.yaml"
    if not path.is_file() or "# @package workload" not in path.read_text().splitlines()[0]:
        return ()
    return tuple(f"workload.{k}" for k in OmegaConf.load(path) if k != "defaults")


def _chosen_workloads(parsed: list[Override]) -> list[str] | None:
    """The workload options this command runs, or None when a study preset may set it."""
    chosen = [DEFAULT_WORKLOAD]
    for override in parsed:
        if override.key_or_group == EXPERIMENT_GROUP:
            return None
        if override.key_or_group == "workload" and not override.is_delete():
            chosen = [str(v) for v in _values(override)] or chosen
    return chosen


@cache
def schema_of_option(option: str) -> str | None:
    """The schema node (``base_stream``) a workload option's YAML builds on."""
    path = Path(conf_dir()) / "workload" / f"{option}.yaml"
    if not path.is_file():
        return None
    defaults = OmegaConf.load(path).get("defaults", [])
    return next((str(d) for d in defaults if str(d) in WORKLOAD_SCHEMAS), None)


def _check_key(override: Override, workloads: list[str] | None) -> None:
    name, keys = override.key_or_group, schema_keys()
    if name not in keys:
        if any(k.startswith(name + ".") for k in keys):
            return  # a whole node (``topology.links={...}``): OmegaConf checks inside
        raise UsageError(no_such_key(name, _near_keys(name, workloads)))
    if name.startswith("workload.") and workloads:
        _check_workload_key(name, workloads)
    for value in _values(override):
        _check_type(keys[name], value)
        _check_location(name, value)
        if name == objective.KEY:
            _check_objective(value, workloads)


def _our_plugins(parsed: list[Override]) -> set[str]:
    """``sweeper`` and ``launcher`` where kernbench's own is chosen (the default)."""
    chosen = _chosen_plugins(parsed)
    return {kind for kind, option in chosen.items() if option == "kernbench"}


def _chosen_plugins(parsed: list[Override]) -> dict[str, str]:
    """The sweeper and launcher the command line chooses (kernbench's by default)."""
    chosen = {"sweeper": "kernbench", "launcher": "kernbench"}
    for override in parsed:
        kind = override.key_or_group.removeprefix("hydra/")
        if override.key_or_group.startswith("hydra/") and kind in chosen:
            chosen[kind] = str(override.value())
    return chosen


# The Hydra plugins an extra of pyproject.toml installs: (kind, option) -> (extra, module).
EXTRA_PLUGINS = {
    ("sweeper", "optuna"): ("optuna", "hydra_plugins.hydra_optuna_sweeper"),
    ("launcher", "ray"): ("ray", "hydra_plugins.hydra_ray_launcher"),
    ("launcher", "submitit_local"): ("slurm", "hydra_plugins.hydra_submitit_launcher"),
    ("launcher", "submitit_slurm"): ("slurm", "hydra_plugins.hydra_submitit_launcher"),
}


def _check_plugins_installed(parsed: list[Override]) -> None:
    """A sweeper or launcher from an extra that is not installed: the install that
    adds it, instead of Hydra's "Could not find 'hydra/sweeper/optuna'"."""
    for kind, option in _chosen_plugins(parsed).items():
        extra, module = EXTRA_PLUGINS.get((kind, option), (None, ""))
        if extra is None:
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            raise UsageError(
                f"hydra/{kind}={option} needs the {extra} extra, which is not installed:"
                f" pip install -e '.[{extra}]' in the kernbench clone"
            )


def _check_preset_plugins(parsed: list[Override]) -> None:
    """A preset written for another sweeper (``design_search``: optuna) needs it on the
    command line: Hydra keeps the first override of a group it meets, and
    ``conf/config.yaml``'s ``override hydra/sweeper: kernbench`` comes before any
    preset's, so the preset's own is not applied (Hydra would then refuse the other
    sweeper's keys in several lines)."""
    chosen = _chosen_plugins(parsed)
    for override in parsed:
        if override.key_or_group != EXPERIMENT_GROUP or override.is_delete():
            continue
        for value in _values(override):
            for kind, option in preset_plugins(str(value)).items():
                if chosen[kind] != option:
                    raise UsageError(
                        f"+experiment={value} runs under hydra/{kind}={option}: add"
                        f" hydra/{kind}={option} to the command line (a preset cannot"
                        f" replace the {kind} conf/config.yaml chooses)"
                    )


# Sweepers that minimise what the task returns: they need an objective column.
OPTIMIZERS = ("optuna", "nevergrad")


def _check_optimizer_objective(parsed: list[Override]) -> None:
    """An optimizing sweeper with no ``objective`` (on the command line or from a preset):
    every trial would return its status, which no sweeper can minimise, and Optuna ends
    with "No trials are completed yet" in a traceback; one line instead."""
    sweeper = _chosen_plugins(parsed)["sweeper"]
    if sweeper not in OPTIMIZERS:
        return
    for override in parsed:
        if override.key_or_group.lstrip("+~") == objective.KEY and not override.is_delete():
            return
        preset = override.key_or_group == EXPERIMENT_GROUP and not override.is_delete()
        if preset and any(preset_sets_objective(str(v)) for v in _values(override)):
            return
    raise UsageError(
        f"hydra/sweeper={sweeper} minimises what each run returns: name a number column with"
        " objective=<column> (e.g. objective=kernel_latency_ns), or use"
        " +experiment=design_search"
    )


@cache
def preset_sets_objective(name: str) -> bool:
    """Whether a study preset (``experiments/<name>.yaml``) sets ``objective``."""
    path = experiments_dir() / f"{name}.yaml"
    return path.is_file() and OmegaConf.load(path).get(objective.KEY) is not None


@cache
def preset_plugins(name: str) -> dict[str, str]:
    """The sweeper or launcher a study preset's defaults list chooses
    (``- override /hydra/sweeper: optuna``), by kind."""
    path = experiments_dir() / f"{name}.yaml"
    if not path.is_file():
        return {}
    chosen = {}
    for entry in OmegaConf.load(path).get("defaults", []):
        for key, option in entry.items() if hasattr(entry, "items") else []:
            kind = str(key).removeprefix("override").strip().removeprefix("/")
            if kind in ("hydra/sweeper", "hydra/launcher"):
                chosen[kind.removeprefix("hydra/")] = str(option)
    return chosen


def _check_objective(value: Any, workloads: list[str] | None) -> None:
    """``objective=``: each name a number column of every chosen workload's rows; with
    a study preset (which may choose the workload), of some workload's (validation
    checks the composed run). One line, as validation would say it."""
    try:
        wanted = objective.names(value)
        options = workloads or group_options()["workload"]
        tables = [_row_columns(option) for option in options]
        if workloads:
            for option, (columns, metrics) in zip(options, tables, strict=True):
                objective.check_names(wanted, columns, metrics, f"workload {option}")
            return
        columns = {k: v for c, _ in reversed(tables) for k, v in c.items()}
        metrics = {k: v for _, m in tables for k, v in m.items()}
        objective.check_names(wanted, columns, metrics, "any workload")
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


@cache
def _row_columns(option: str) -> tuple[dict[str, str], dict[str, str]]:
    """A workload option's row columns by kind, and its metric columns: config keys
    (a number if the schema types them int or float) and the metrics it makes."""
    schema = schema_of_option(option)
    own = workload_keys(schema or "")
    columns: dict[str, str] = {}
    for name, key in schema_keys().items():
        if name.startswith("workload.") and name not in own:
            continue
        if name.startswith(("paths.", "cache", objective.KEY)):
            continue
        number = key.type in ("int", "float")
        columns[name] = NUMBER if number else TEXT
    metrics = metric_columns(WORKLOAD_SCHEMAS.get(schema or "", object))
    return columns | metrics, metrics


def _check_plugin_key(override: Override) -> None:
    """``hydra.sweeper.chunk_size=abc``: one line naming the key and the type wanted
    (Hydra's own answer is five lines). Bounds are the sweeper's to check."""
    from kernbench.sweep.settings import KernbenchLauncherConf, KernbenchSweeperConf

    name = override.key_or_group
    kind, _, field = name.removeprefix("hydra.").partition(".")
    schema = KernbenchSweeperConf if kind == "sweeper" else KernbenchLauncherConf
    hints = {k: v for k, v in typing.get_type_hints(schema).items() if not k.startswith("_")}
    if field.partition(".")[0] == "params":
        return  # the grid: any keys
    if field not in hints:
        keys = [f"hydra.{kind}.{k}" for k in hints]
        raise UsageError(f"{name}: no such key{did_you_mean(name, keys)}")
    wanted = [t for t in typing.get_args(hints[field]) if t is not type(None)] or [hints[field]]
    key = Key(name, getattr(wanted[0], "__name__", ""), "", "", wanted[0])
    for value in _values(override):
        _check_type(key, value)


def _check_location(name: str, value: Any) -> None:
    """Output locations stay where they say: ``paths.root`` is a directory (empty would
    put runs and the cache at the filesystem's root), ``paths.sweep_name`` a name
    under it (``..`` or an absolute path would write outside it)."""
    if name == "paths.root" and (value is None or not str(value).strip()):
        raise UsageError("paths.root: empty; give the directory outputs go to (default: outputs)")
    if name == "paths.sweep_name" and isinstance(value, str) and "${" not in value:
        parts = Path(value).parts
        if not value.strip() or Path(value).is_absolute() or ".." in parts:
            raise UsageError(
                f"paths.sweep_name={value}: not a directory name under paths.root"
                " (no '..', not absolute, not empty)"
            )


def _check_added(override: Override, workloads: list[str] | None) -> None:
    """``+key=value`` adds a key, which kernbench's schemas do not take (the run would
    refuse it later, naming the workload's keys): said here, before anything runs."""
    name, keys = override.key_or_group, schema_keys()
    parent = name.rpartition(".")[0]
    if name not in keys and any(k.startswith(parent + ".") for k in keys):
        near = _near_keys(name, workloads)
        raise UsageError(no_such_key(name, near, "; '+' adds a key, and the config takes none"))


def _near_keys(name: str, workloads: list[str] | None) -> list[str]:
    """The keys a mistyped ``name`` is offered from: a workload key from the keys of
    the workloads this command runs (not every workload's), any other from all."""
    if not name.startswith("workload.") or not workloads:
        return list(schema_keys())
    schemas = [schema_of_option(o) for o in workloads]
    return [k for schema in schemas if schema for k in sorted(workload_keys(schema))]


def workloads_with(name: str) -> list[str]:
    """The workload options whose schema has the key ``name``."""
    options = group_options()["workload"]
    return [o for o in options if name in workload_keys(schema_of_option(o) or "")]


def _check_workload_key(name: str, workloads: list[str]) -> None:
    for option in workloads:
        schema = schema_of_option(option)
        if schema is not None and name not in workload_keys(schema):
            own = sorted(workload_keys(schema))
            raise UsageError(
                f"{name}: not a key of workload {option}{did_you_mean(name, own)}"
                f" (its keys: {', '.join(k.removeprefix('workload.') for k in own)})"
            )


def _check_type(key: Key, value: Any) -> None:
    """Assign ``value`` to a typed node as OmegaConf would; say what was expected."""
    if isinstance(value, str) and "${" in value:
        return
    if key.field_type is Any:
        return
    if key.field_type is bool and value is not None and not isinstance(value, bool):
        # OmegaConf takes 2, -1, yes, off or "0" as a boolean: kernbench only a boolean
        raise UsageError(f"{key.name}={value}: not {KINDS['bool']}")
    if value is None:
        if type(None) not in typing.get_args(key.field_type):  # only Optional keys take null
            allowed = f"one of {', '.join(key.choices)}" if key.choices else KINDS.get(key.type)
            raise UsageError(f"{key.name}=null: not {allowed or key.type} (it cannot be unset)")
        return
    try:
        typed = OmegaConf.structured(_holder(key.field_type))
        typed.v = value
    except OmegaConfBaseException:
        allowed = f"one of {', '.join(key.choices)}" if key.choices else KINDS.get(key.type)
        hint = _type_hint(key, value)
        raise UsageError(f"{key.name}={value}: not {allowed or key.type}{hint}") from None


# A size written with a unit: 64KiB, 1.5 MB, 2g. Binary prefixes with an i, decimal without.
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt])(i?)b?", re.IGNORECASE)


def _type_hint(key: Key, value: Any) -> str:
    """What to type instead, for the values a user meant as one: a list in brackets
    (a sweep is written with commas), a size with a unit (keys take bytes), a whole
    number Hydra read as a float (``1e3``)."""
    name = key.name
    if isinstance(value, list) and key.type in KINDS:
        values = ",".join(str(v) for v in value)
        return f"; [...] is one value, a list: to sweep over them write {name}={values} (with -m)"
    if isinstance(value, float) and value.is_integer() and key.type == "int":
        return f" (Hydra reads it as the number {value!r}): write {int(value)}"
    match = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is not None and unit_of(name) == "B" and key.type == "int":
        number, prefix, binary = match.groups()
        base = 1024 if binary else 1000
        count = float(number) * base ** ("kmgt".index(prefix.lower()) + 1)
        if count.is_integer():
            return f"; sizes are in bytes, with no unit: write {int(count)}"
    return ""


def no_such_key(name: str, keys: Iterable[str], note: str = "") -> str:
    """``name: no such key``, then the keys closest to it, or else its siblings (the
    keys under the same parent), ``note``, and where every key is listed."""
    keys = list(keys)
    near = did_you_mean(name, keys)
    if not near:
        parent = name.rpartition(".")[0]
        siblings = [k.rpartition(".")[2] for k in keys if k.rpartition(".")[0] == parent]
        if parent and siblings:
            near = f"; {parent} has {', '.join(siblings)}"
    return f"{name}: no such key{near}{note} (kernbench --help lists every key)"


@cache
def _holder(field_type: Any) -> type:
    """A one-field dataclass of ``field_type``, to let OmegaConf judge a value."""
    return make_dataclass("Holder", [("v", Optional[field_type], None)])  # noqa: UP045
