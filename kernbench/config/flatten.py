"""Flatten a resolved configuration into ``{dotted.key: scalar}`` for result columns.

DESIGN §6/§8: every resolved config value is a result column under its dotted key.
This module owns that naming and nothing else: enums become their string value,
``None`` stays ``None``, Hydra's ``defaults`` list is dropped, a list becomes JSON text
(so every column stays a scalar), and keys keep the schema's field order.

It accepts the typed object (the normal case) or a DictConfig (when a config could not
be converted to objects, so its error row still records what was asked for).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf

Scalar = str | int | float | bool | None

_DROPPED = frozenset({"defaults"})
# The types most config values have: never a dataclass or a mapping, stored as they are.
PLAIN_TYPES = frozenset({int, float, str, bool, type(None)})


def flatten(cfg: Any) -> dict[str, Scalar]:
    """Every config value under its dotted key, in schema order."""
    out: dict[str, Scalar] = {}
    _walk(_as_tree(cfg), "", out)
    return out


def _as_tree(cfg: Any) -> Any:
    """A dataclass instance as-is, or a DictConfig as a plain (resolved if possible) dict."""
    if isinstance(cfg, DictConfig):
        try:
            return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        except Exception:  # an unresolvable interpolation: record it unresolved
            return OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    return cfg


def _walk(node: Any, prefix: str, out: dict[str, Scalar]) -> None:
    # Every sweep point is flattened (its row's columns), so this is a plain recursion
    # filling one dict (a chain of generators took twice as long), and the dataclass
    # test is dataclasses.is_dataclass's own, on the value's type, without its call.
    items = node.items() if isinstance(node, Mapping) else vars(node).items()
    for name, value in items:
        if name in _DROPPED and not prefix:
            continue
        kind = type(value)
        if kind in PLAIN_TYPES:  # most values: stored as they are, no call
            out[f"{prefix}{name}"] = value
        elif hasattr(kind, "__dataclass_fields__") or isinstance(value, Mapping):
            _walk(value, f"{prefix}{name}.", out)
        else:
            out[f"{prefix}{name}"] = _scalar(value)


def _scalar(value: Any) -> Scalar:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return json.dumps([_scalar(v) for v in value])
    return value
