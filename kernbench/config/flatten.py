"""Flatten a resolved configuration into ``{dotted.key: scalar}`` for result columns.

DESIGN §6/§8: every resolved config value is a result column under its dotted key.
This module owns that naming: enums become their string value, ``None`` stays
``None``, Hydra's ``defaults`` list is dropped, a list becomes JSON text (so every
column stays a scalar), and keys keep the schema's field order.

It also owns the walk that names them (:func:`walk`), which validation reads too (the
leaf limits, the unknown-key check): every sweep point is validated and flattened, and
with one walk for all three instead of three, validating and flattening a
``dispatch_ratio`` point (``kernbench.app.prepare``) takes 70 us instead of 101.

It accepts the typed object (the normal case) or a DictConfig (when a config could not
be converted to objects, so its error row still records what was asked for).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf

Scalar = str | int | float | bool | None

_DROPPED = frozenset({"defaults"})
# The types most config values have: never a dataclass or a mapping, stored as they are.
PLAIN_TYPES = frozenset({int, float, str, bool, type(None)})


@dataclass
class Tree:
    """One walk of a config (:func:`walk`): every leaf as (dotted key, value as stored),
    in schema order, and every dataclass node as (dotted key, node), the root's key
    being ``""``. Mappings are walked into but are not nodes (their keys are free)."""

    leaves: list[tuple[str, Any]] = field(default_factory=list)
    nodes: list[tuple[str, Any]] = field(default_factory=list)


def walk(cfg: Any) -> Tree:
    """The leaves and dataclass nodes of a typed config object or a plain dict (top-level
    ``defaults`` dropped)."""
    tree = Tree()
    _walk(cfg, "", tree.leaves, tree.nodes)
    return tree


def flatten(cfg: Any) -> dict[str, Scalar]:
    """Every config value under its dotted key, in schema order."""
    return scalars(walk(_as_tree(cfg)).leaves)


def scalars(leaves: list[tuple[str, Any]]) -> dict[str, Scalar]:
    """``{dotted key: column value}`` of :attr:`Tree.leaves` (:func:`column_value`
    inlined: every sweep point's ~150 leaves pass here)."""
    return {k: v if type(v) in PLAIN_TYPES else _scalar(v) for k, v in leaves}


def column_value(value: Any) -> Scalar:
    """One config value as its column holds it."""
    return value if type(value) in PLAIN_TYPES else _scalar(value)


def _as_tree(cfg: Any) -> Any:
    """A dataclass instance as-is, or a DictConfig as a plain (resolved if possible) dict."""
    if isinstance(cfg, DictConfig):
        try:
            return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        except Exception:  # an unresolvable interpolation: record it unresolved
            return OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    return cfg


def _walk(node: Any, prefix: str, leaves: list[tuple[str, Any]], nodes: list) -> None:
    # Every sweep point is walked, so this is a plain recursion filling two lists (a
    # chain of generators took twice as long), and the dataclass test is
    # dataclasses.is_dataclass's own, on the value's type, without its call.
    if isinstance(node, Mapping):
        items = node.items()  # a mapping is not a node: its keys are free
    else:
        items = vars(node).items()
        nodes.append((prefix[:-1], node))
    for name, value in items:
        if name in _DROPPED and not prefix:
            continue
        kind = type(value)
        if kind in PLAIN_TYPES:  # most values: a leaf, no call
            leaves.append((f"{prefix}{name}", value))
        elif hasattr(kind, "__dataclass_fields__") or isinstance(value, Mapping):
            _walk(value, f"{prefix}{name}.", leaves, nodes)
        else:
            leaves.append((f"{prefix}{name}", value))


def _scalar(value: Any) -> Scalar:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return json.dumps([_scalar(v) for v in value])
    return value
