"""Every config key a user can set, with its meaning, type, unit, default and limit.

One source: the keys, their types and meanings come from the schema dataclasses
(:mod:`kernbench.config.schema`, the workload schemas of
:data:`~kernbench.config.store.WORKLOAD_SCHEMAS`), units from the names
(:func:`kernbench.units.unit_of`), limits from the rule tables of
:mod:`kernbench.config.validate`, and defaults from the config ``kernbench`` composes
with no overrides (each workload's own keys from its option). ``kernbench --keys``
prints :func:`key_table`, and the documentation's key reference is made from the same
:func:`schema_keys`; the typo check (:mod:`.precheck`) matches against
:func:`schema_keys`.

Besides the config keys, :func:`setting_keys`: what users set that is not one, the
sweeper's and launcher's own keys (``hydra.sweeper.point_timeout_s``, from the fields of
:mod:`kernbench.sweep.settings`: meaning, default and limit), Optuna's ``n_trials``
(its default from the installed plugin), and the ``KERNBENCH_PURE`` environment
variable.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import types
import typing
from dataclasses import MISSING, dataclass
from enum import Enum
from functools import cache
from typing import Any

from kernbench import PURE_ENV
from kernbench.config.decoder_rules import LIMITS as DECODER_LIMITS
from kernbench.config.limits import (
    AT_LEAST_ONE,
    AT_MOST,
    NON_NEGATIVE,
    PA_FIELD_LIMITS,
    POWER_OF_TWO,
    SUFFIX_RULES,
)
from kernbench.config.schema import MEANING
from kernbench.config.store import WORKLOAD_SCHEMAS, AppConfig
from kernbench.config.validate import GQA_AT_LEAST_ONE, TRITON_SIZES
from kernbench.sweep.settings import LIMIT, KernbenchLauncherConf, KernbenchSweeperConf
from kernbench.units import unit_of

# Limits a single key's rule table cannot state (cross-field rules of validate.py).
CROSS_FIELD_LIMITS: dict[str, str] = {
    "topology.cube.memory_map.hbm_pseudo_channels": "divisible by pes_per_cube",
    "topology.cube.memory_map.hbm_channels_per_pe": "derived: pseudo_channels / pes_per_cube",
    "topology.cube.memory_map.hbm_channel_bytes": "a multiple of interleave_bytes",
    "workload.active_pes": "'all' or 1..total PEs",
    "workload.bytes_per_pe": "<= one PE's HBM",
    "workload.outstanding": "<= topology.pe.dma_max_outstanding",
    "workload.seq_tokens": "divisible by tile_tokens",
    "workload.query_heads": "divisible by kv_heads",
    "workload.kv_heads": "<= total PEs",
    "workload.sub_tiles": "<= tile_tokens",
    "workload.size": "a shipped kernel's tensors <= the HBM of their PEs",
    "workload.block_size": "<= 2^20 elements (Triton's largest block)",
    "workload.kernel": "a shipped kernel, or pkg.module:fn naming a @triton.jit function",
    "objective": "a number result column, or a list of them",
}


@dataclass(frozen=True)
class Key:
    """One settable key: ``workload.access_bytes`` int, B, 65536, >= 1."""

    name: str
    type: str
    unit: str
    limit: str
    field_type: Any  # the schema's annotation, for the type check
    meaning: str = ""  # the schema field's own (kernbench.config.schema.key)

    @property
    def choices(self) -> list[str]:
        """An enum's allowed values, else []."""
        if isinstance(self.field_type, type) and issubclass(self.field_type, Enum):
            return [m.value for m in self.field_type]
        return []


def _leaves(schema: type, prefix: str) -> list[Key]:
    hints = typing.get_type_hints(schema)
    keys: list[Key] = []
    for f in dataclasses.fields(schema):
        hint, name = hints[f.name], f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hint):
            keys += _leaves(hint, name + ".")
        elif not (name == "workload" and prefix == ""):  # the workload node: per schema
            meaning = str(f.metadata.get(MEANING, ""))
            keys.append(Key(name, type_name(hint), unit_of(name), limit_of(name), hint, meaning))
    return keys


@cache
def schema_keys() -> dict[str, Key]:
    """Every leaf key of the app's schema and of every workload schema, by name. A
    ``workload.*`` key that several workloads have, meaning different things
    (``workload.block_n``), says what it means in each (``... (triton); ...
    (decoder_layer)``)."""
    keys = {k.name: k for k in _leaves(AppConfig, "")}
    meanings: dict[str, dict[str, str]] = {}
    for schema_name, schema in WORKLOAD_SCHEMAS.items():
        for k in _leaves(schema, "workload."):
            keys[k.name] = k
            meanings.setdefault(k.name, {}).setdefault(k.meaning, schema_name)
    for name, by_meaning in meanings.items():
        if len(by_meaning) > 1:
            text = "; ".join(f"{m} ({s.removeprefix('base_')})" for m, s in by_meaning.items())
            keys[name] = dataclasses.replace(keys[name], meaning=text)
    return keys


@cache
def workload_keys(schema_name: str) -> frozenset[str]:
    """The ``workload.*`` keys of one workload schema (``base_stream``); none for an
    unknown name. Cached: ``--help`` asks for every key's workloads (525 calls)."""
    return frozenset(own_keys(schema_name))


def own_keys(schema_name: str) -> dict[str, Key]:
    """The ``workload.*`` keys of one workload schema with that workload's own meanings
    (:func:`schema_keys` joins the meanings of a key several workloads have)."""
    if schema_name not in WORKLOAD_SCHEMAS:
        return {}
    return {k.name: k for k in _leaves(WORKLOAD_SCHEMAS[schema_name], "workload.")}


def type_name(hint: Any) -> str:
    if isinstance(hint, type) and issubclass(hint, Enum):
        return " | ".join(m.value for m in hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:  # Optional[int] and the like
        return type_name(args[0])
    return getattr(hint, "__name__", str(hint))


def limit_of(name: str) -> str:
    """The limit the validation rules put on ``name``, in words ('' when none)."""
    found = [text for key, text in CROSS_FIELD_LIMITS.items() if key == name]
    if name in DECODER_LIMITS:
        found.append(DECODER_LIMITS[name])
    if name in AT_LEAST_ONE or name in GQA_AT_LEAST_ONE or name in TRITON_SIZES:
        found.append(">= 1")
    if name in NON_NEGATIVE:
        found.append(">= 0")
    if name in POWER_OF_TWO:
        found.append("a power of two")
    if name in PA_FIELD_LIMITS:
        found.append(f"<= {PA_FIELD_LIMITS[name][0]}")
    if name in AT_MOST:
        found.append(f"<= {AT_MOST[name][0]:g}")
    for suffix, _, text in SUFFIX_RULES:  # "is not > 0 (a bandwidth in GB/s)" -> "> 0"
        if name.endswith(suffix):
            words = text.split(" (")[0].removeprefix("is not ")
            # "exceeds 1e+06 GB/s" -> "<= 1e+06 GB/s"; "is below 0.001 GB/s" -> ">= ..."
            found.append(words.replace("exceeds ", "<= ").replace("is below ", ">= "))
    if "> 0" in found and any(f.startswith(">= ") for f in found):
        found.remove("> 0")  # a lower limit above zero says it
    return ", ".join(found)


def default_of(field_default: Any) -> str:
    if field_default is MISSING or field_default == "???":
        return "(required)"
    if field_default is None:
        return "(derived)"
    if isinstance(field_default, Enum):
        return field_default.value
    return str(field_default)


# --- settings that are not config keys ----------------------------------------------

OPTUNA_CONF = "hydra_plugins.hydra_optuna_sweeper.config"  # the optuna extra's schema
# Optuna's sweeper keys a kernbench study sets (design_search), with what they mean here.
OPTUNA_KEYS = {
    "n_trials": "with hydra/sweeper=optuna: how many trials (points) the search runs,"
    " Optuna's hydra.sweeper.n_jobs of them a batch (the launcher's n_jobs run each batch)",
}
PURE = Key(
    PURE_ENV,
    "environment",
    "",
    "1, or 0 / unset (any other value is refused)",
    str,
    "1 when running kernbench: every kernbench module runs from its .py source, not the"
    " compiled build (a profiler such as py-spy or cProfile sees into it); 1 when"
    " installing (pip install): nothing is compiled, the install is pure Python",
)


def setting_keys() -> list[tuple[Key, str]]:
    """Each setting users give that is not a config key, with its default: the kernbench
    sweeper's and launcher's keys (``hydra.sweeper.*``, ``hydra.launcher.*``; their
    meanings, defaults and limits are their fields' in :mod:`kernbench.sweep.settings`),
    Optuna's :data:`OPTUNA_KEYS` (defaults from the plugin, when the optuna extra is
    installed) and :data:`PURE`."""
    found = _fields(KernbenchSweeperConf, "hydra.sweeper.")
    found += _fields(KernbenchLauncherConf, "hydra.launcher.")
    return [*found, *_optuna_keys(), (PURE, "unset")]


def _fields(schema: type, prefix: str) -> list[tuple[Key, str]]:
    hints = typing.get_type_hints(schema)
    keys = []
    for f in dataclasses.fields(schema):
        if f.name.startswith("_"):
            continue
        name, meaning = prefix + f.name, str(f.metadata.get(MEANING, ""))
        limit = str(f.metadata.get(LIMIT, ""))
        key = Key(name, _setting_type(hints[f.name]), unit_of(name), limit, hints[f.name], meaning)
        keys.append((key, "null" if f.default is None else str(f.default)))
    return keys


def _setting_type(hint: Any) -> str:
    """A sweeper field's type as a user writes it: ``int`` for ``int | None``, ``dict``
    for the grid, ``any`` for a word or a list (the limit says which)."""
    if hint is Any:
        return "any"
    inner = [a for a in typing.get_args(hint) if a is not type(None)]
    if inner and typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = inner[0]
    return getattr(typing.get_origin(hint), "__name__", None) or type_name(hint)


def _optuna_keys() -> list[tuple[Key, str]]:
    """Optuna's keys of :data:`OPTUNA_KEYS`, each with the plugin's default, or "(optuna
    extra)" when it is not installed."""
    defaults: dict[str, str] = {}
    if importlib.util.find_spec(OPTUNA_CONF.rsplit(".", 1)[0]) is not None:
        schema = importlib.import_module(OPTUNA_CONF).OptunaSweeperConf
        defaults = {f.name: str(f.default) for f in dataclasses.fields(schema)}
    return [
        (Key(f"hydra.sweeper.{name}", "int", "", "", int, meaning),
         defaults.get(name, "(optuna extra)"))
        for name, meaning in OPTUNA_KEYS.items()
    ]  # fmt: skip
