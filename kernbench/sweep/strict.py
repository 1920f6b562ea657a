"""What a sweep's value override must be, beyond what OmegaConf's types take, checked
before the first point runs (by :func:`kernbench.sweep.plan.screen`; a dry run lists
the points it refuses).

- A boolean key takes ``true`` or ``false`` only. OmegaConf turns any integer into a
  boolean (``sim.trace=2`` and ``-1`` ran as true) and so the words ``yes``, ``no``,
  ``on``, ``off``, ``y``, ``n`` and the strings ``"1"``, ``"0"``; the override
  pre-check refuses them on the command line (:mod:`kernbench.cli.precheck`), this
  refuses them in a preset's grid (``hydra.sweeper.params``).
- An interpolation (``${...}``) resolves. Applying one only stores its text, so
  ``workload.access_bytes=4096,${nowhere}`` ran the first point and made the second an
  error row; it is resolved here, on the config the override was applied to.

Each check returns the message's text (the key is the caller's to name), or None.
Values in YAML files are OmegaConf's to convert: they are merged before any of this.
"""

from __future__ import annotations

from typing import Any

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from omegaconf.nodes import BooleanNode

BOOLEANS = "true or false"


def not_boolean(task: DictConfig, override: Override) -> str | None:
    """``2 is not true or false`` when ``override`` sets a boolean key of ``task`` to
    anything but a boolean (a null, or an interpolation, is OmegaConf's to judge)."""
    if override.is_delete() or override.is_sweep_override():
        return None
    value = override.value()
    if value is None or isinstance(value, bool) or _interpolates(override):
        return None
    if not isinstance(_node(task, override.key_or_group), BooleanNode):
        return None
    return f"{value} is not {BOOLEANS}"


def unresolved(applied: DictConfig, override: Override) -> str | None:
    """``${nowhere} does not resolve: Interpolation key 'nowhere' not found`` (OmegaConf's
    first line) when the interpolation ``override`` set in ``applied`` does not resolve;
    None if it resolves, or sets none."""
    if override.is_delete() or not _interpolates(override):
        return None
    try:
        value = OmegaConf.select(applied, override.key_or_group, throw_on_missing=False)
        if isinstance(value, DictConfig | ListConfig):
            OmegaConf.to_container(value, resolve=True)
    except OmegaConfBaseException as exc:
        text = str(exc).splitlines()
        reason = text[0] if text else type(exc).__name__
        return f"{_shown(override.value())} does not resolve: {reason}"
    return None


def _shown(value: Any) -> str:
    """A value as typed (``${nowhere}``, ``{pcie_bw_gbs: ${nowhere}}``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


def _interpolates(override: Override) -> bool:
    """Whether the value holds ``${``: in the parsed value, since a sweep's point lines
    come escaped (``$\\{nowhere\\}``, Hydra's ``sweep_string_iterator``)."""
    return "${" in str(override.value())


def _node(cfg: DictConfig, key: str) -> Any:
    """The node at the dotted ``key`` of ``cfg`` (not its value), or None."""
    node: Any = cfg
    for name in key.split("."):
        if not isinstance(node, DictConfig) or node._is_none():
            return None
        try:
            node = node._get_node(name, throw_on_missing_key=False)
        except OmegaConfBaseException:  # not a key of a typed node
            return None
    return node
