"""Typed points: a point's config built on its shape's typed object, not on OmegaConf.

Building a point's config the OmegaConf way (a copy of the shape's DictConfig, the
point's overrides applied with Hydra's function, ``OmegaConf.to_object``) costs about
2 ms of Python per point: a third of a ``dispatch_ratio`` simulation, so two workers
spent a quarter of their time on it. Most sweep points only set a few leaves to
plain values (``topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles=16``). For such a
point the same object is the shape's typed object (converted once per shape, sent
pickled: unpickling it takes ~0.03 ms) with each leaf set to the value OmegaConf
itself stored when the override was applied to the shape (:func:`leaf_value`, done
once per distinct override while the sweep is screened).

That is exact only when nothing else can read the leaf, so the typed path is taken
only when all of these hold, and the OmegaConf path otherwise:

- no interpolation in the shape's task config can read a key its points override
  (``plan.changeable_interpolations`` finds none), so converting the config once
  resolves every interpolation to the value each point would read;
- every value override of the point is a plain ``key=value`` (no ``+``, ``++``, ``~``)
  that sets a leaf reached through dict nodes only, to a value that is neither an
  interpolation nor missing (``???``).

tests/test_sweep_plan.py checks the result equals ``OmegaConf.to_object`` of Hydra's own
composition on every preset's points and on random ones.
"""

from __future__ import annotations

import pickle
from typing import Any

from hydra.core.override_parser.types import Override, OverrideType
from omegaconf import DictConfig, OmegaConf
from omegaconf.nodes import ValueNode

Assignment = tuple[tuple[str, ...], Any]  # a leaf's path from the root, and its value
NOT_A_LEAF = object()  # what leaf_value returns for an override the typed path can't take


def pickled_object(run_task: DictConfig) -> bytes | None:
    """The shape's typed object, pickled; None if the config does not convert. The
    caller (``Plan.typed_base``) has checked no point can change an interpolation."""
    try:
        return pickle.dumps(OmegaConf.to_object(run_task))
    except Exception:  # e.g. a missing value: each point reports it on the OmegaConf path
        return None


def leaf_value(applied: DictConfig, override: Override) -> Any:
    """The value OmegaConf stored for ``override`` in ``applied`` (the shape's config
    with that override applied), converted as its node's type converts it (``"16"`` to
    an int, a name to an enum member); :data:`NOT_A_LEAF` when the override is not a
    plain leaf set."""
    if override.type != OverrideType.CHANGE or override.package is not None:
        return NOT_A_LEAF
    *parents, leaf = override.key_or_group.split(".")
    node: Any = applied
    for name in parents:
        node = node._get_node(name) if isinstance(node, DictConfig) else None
        if not isinstance(node, DictConfig) or node._is_none() or node._is_interpolation():
            return NOT_A_LEAF
    value = node._get_node(leaf)
    if not isinstance(value, ValueNode) or value._is_interpolation() or value._is_missing():
        return NOT_A_LEAF
    return value._value()


def assignments(leaves: list[Any], values: list[Override]) -> list[Assignment] | None:
    """A point's assignments, given :func:`leaf_value` of each of its overrides; None
    if any of them cannot take the typed path."""
    if any(leaf is NOT_A_LEAF for leaf in leaves):
        return None
    return [
        (tuple(v.key_or_group.split(".")), leaf) for v, leaf in zip(values, leaves, strict=True)
    ]


def build(base: bytes, assigned: list[Assignment]) -> Any:
    """A fresh copy of the shape's typed object with the point's leaves set, in order."""
    obj = pickle.loads(base)
    for path, value in assigned:
        node = obj
        for name in path[:-1]:
            node = node[name] if isinstance(node, dict) else getattr(node, name)
        if isinstance(node, dict):
            node[path[-1]] = value
        else:
            setattr(node, path[-1], value)
    return obj
