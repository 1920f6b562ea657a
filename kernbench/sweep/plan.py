"""A sweep's plan: its points, grouped by *shape*, each shape composed by Hydra once.

Hydra's stock multirun composes every point's config from scratch (about 90 ms each,
twice). Composition has two phases (``hydra._internal.config_loader_impl``): the
overrides that pick config-group options build the defaults list and are merged file by
file (the slow part); the others (``key=value``, ``+key=value``, ``++key=value``,
``~key``) are then applied to the merged config, in order, by
``ConfigLoaderImpl._apply_overrides_to_config``. Points that pick the same group options
(the same *shape*) differ only in the second phase, so this module composes each shape
once with Hydra's own loader and builds a point's config by applying the point's value
overrides to a copy, with Hydra's own function. The result equals what
``load_sweep_config`` gives the stock launchers (tests/test_sweep_plan.py checks it on
every preset and on random points).

What this relies on in Hydra 1.3 (pinned ``<1.4``), named here and nowhere else:
``ConfigLoaderImpl._apply_overrides_to_config`` (phase two),
``ConfigLoaderImpl._parse_overrides_and_create_caching_repo`` (the repository that
says whether a key is a config group, honouring ``hydra.searchpath``), and
``config_loader_impl.get_overrides_dirname`` (``hydra.job.override_dirname``).
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from kernbench.errors import ConfigError
from kernbench.sweep import strict, typed

_NAME = re.compile(r"[A-Za-z_]\w*")  # the names an interpolation's text can refer to


@dataclass
class Point:
    """One point of the sweep: its job number, overrides, and the shape it belongs to.
    ``values`` are the parsed value overrides, applied in order after composition;
    ``assigned`` the same as typed leaf values when they can take the typed path
    (:mod:`kernbench.sweep.typed`; filled in by :func:`screen`), else None."""

    num: int
    overrides: list[str]
    shape: int
    values: list[Override] = field(default_factory=list)
    assigned: list[typed.Assignment] | None = None


@dataclass
class Shape:
    """The config-group choices some points share, and their composed config."""

    groups: tuple[str, ...]
    config: DictConfig  # the full config (with ``hydra``) as Hydra composes it
    task: DictConfig = field(init=False)  # the same without ``hydra``: what a task sees

    def __post_init__(self) -> None:
        self.task = without_hydra(self.config)

    def describe(self) -> str:
        """``channel_mapping=one_to_one topology=small``, or ``(defaults)``."""
        return " ".join(self.groups) or "(defaults)"


@dataclass
class Plan:
    """Every point of a sweep and the shapes they fall into, in job order."""

    points: list[Point]
    shapes: list[Shape]
    _typed: dict[int, bytes | None] = field(default_factory=dict, repr=False)
    _overridden: dict[int, set[str]] = field(default_factory=dict, repr=False)

    def task_config(self, point: Point) -> DictConfig:
        """The config the task function sees for ``point`` (no ``hydra`` node)."""
        return apply_values(self.shapes[point.shape].task, point.values)

    def job_config(self, point: Point) -> DictConfig:
        """The full config of ``point``, as ``load_sweep_config`` gives stock launchers."""
        return point_config(self.shapes[point.shape].config, point)

    def overridden(self, shape: int) -> set[str]:
        """Every key a point of ``shape`` overrides."""
        if not self._overridden:  # one pass over the points for every shape
            for p in self.points:
                self._overridden.setdefault(p.shape, set()).update(v.key_or_group for v in p.values)
        return self._overridden.get(shape, set())

    def run_task(self, shape: int) -> DictConfig:
        """The shape's task config with every interpolation its points cannot change
        resolved once (see :func:`resolve_fixed`): what the workers start each point from."""
        return resolve_fixed(self.shapes[shape].task, self.overridden(shape))

    def typed_base(self, shape: int) -> bytes | None:
        """The shape's typed object, pickled, for the typed path; None if a point's
        value could change what an interpolation reads, or the config does not convert.
        (With no such interpolation, converting the task config resolves each one to
        the value :meth:`run_task` would fix.) Made once per shape (~3.5 ms, most of it
        OmegaConf parsing the ``paths`` interpolations) and kept."""
        if shape not in self._typed:
            task = self.shapes[shape].task
            changeable = changeable_interpolations(task, self.overridden(shape))
            self._typed[shape] = None if changeable else typed.pickled_object(task)
        return self._typed[shape]


class Planner:
    """Splits points into shapes and composes each shape once (main process)."""

    def __init__(self, config_loader: Any, master: DictConfig) -> None:
        self.loader = config_loader
        self.master = master
        self.hydra_overrides = list(OmegaConf.to_container(master.hydra.overrides.hydra))
        name = master.hydra.job.config_name
        _, self.repo = config_loader._parse_overrides_and_create_caching_repo(
            name, self.hydra_overrides
        )
        self.parser = OverridesParser.create()
        self._parsed: dict[str, Override] = {}
        self._groups: dict[str, bool] = {}

    def plan(self, jobs: Sequence[Sequence[str]], initial_num: int = 0) -> Plan:
        """Compose one config per shape and parse every point's value overrides.
        A grid repeats each override line across many points: each distinct line is
        parsed, and each key looked up in the repository, once."""
        shapes: dict[tuple[str, ...], int] = {}
        composed: list[Shape] = []
        points = []
        for i, lines in enumerate(jobs):
            parsed = [self.parse(line) for line in lines]
            groups = tuple(o.input_line for o in parsed if self.is_group(o))
            if groups not in shapes:
                shapes[groups] = len(composed)
                composed.append(Shape(groups, self.compose(list(groups))))
            values = [o for o in parsed if not self.is_group(o)]
            points.append(Point(initial_num + i, list(lines), shapes[groups], values))
        return Plan(points, composed)

    def parse(self, line: str) -> Override:
        if line not in self._parsed:
            [self._parsed[line]] = self.parser.parse_overrides([line])
        return self._parsed[line]

    def is_group(self, override: Override) -> bool:
        """Hydra's own test (``defaults_list.Overrides``): the key names a config group
        and the value is not a dict."""
        key = override.key_or_group
        if key not in self._groups:
            self._groups[key] = self.repo.group_exists(key)
        return self._groups[key] and not isinstance(override.value(), dict)

    def compose(self, group_overrides: list[str]) -> DictConfig:
        """Compose a shape exactly as ``load_sweep_config`` composes a point."""
        cfg = self.loader.load_configuration(
            config_name=self.master.hydra.job.config_name,
            overrides=self.hydra_overrides + group_overrides,
            run_mode=RunMode.RUN,
        )
        OmegaConf.copy_cache(from_config=self.master, to_config=cfg)
        return cfg


def without_hydra(cfg: DictConfig) -> DictConfig:
    """A copy of ``cfg`` without its ``hydra`` node (what Hydra hands a task)."""
    task = copy.deepcopy(cfg)
    with read_write(task), open_dict(task):
        task.pop("hydra", None)
    return task


def apply_values(base: DictConfig | bytes, values: list[Override]) -> DictConfig:
    """A copy of ``base`` with the value overrides applied, with Hydra's function and
    Hydra's error (a ``ConfigCompositionException`` naming the override). ``base`` may
    be a pickled config: unpickling copies a config about 2.5x faster than deepcopy."""
    cfg = pickle.loads(base) if isinstance(base, bytes) else copy.deepcopy(base)
    try:
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    except OmegaConfBaseException as exc:
        raise ConfigCompositionException().with_traceback(sys.exc_info()[2]) from exc
    return cfg


def resolve_fixed(task: DictConfig, overridden: set[str]) -> DictConfig:
    """A copy of ``task`` with each interpolation resolved whose value no overridden key
    can change. OmegaConf parses an interpolation every time it is read (~1 ms each
    with ANTLR), so the locations (``paths.*``: ``${paths.root}/${now:...}``) would
    otherwise cost every point several ms. Conservative by construction: a top-level
    key is *tainted* if a point overrides anything under it, or if it holds an
    interpolation that names a tainted key (any name inside its ``${...}``: ``${a.b}``,
    ``${oc.select:a.b}``; :func:`_referenced_names`) or is relative (``${.x}``); taint
    spreads until nothing changes, and only untainted interpolations are resolved.
    The resolved values are those every point would have read (same resolver cache)."""
    cfg = copy.deepcopy(task)
    found = list(_interpolations(cfg, ""))
    changeable = set(_changeable(found, overridden))
    for key, _ in found:
        if key not in changeable:
            _resolve_in_place(cfg, key)
    return cfg


def changeable_interpolations(task: DictConfig, overridden: set[str]) -> list[str]:
    """The dotted keys of the interpolations in ``task`` whose value a point overriding
    ``overridden`` could change: those under a tainted top-level key (see
    :func:`resolve_fixed`)."""
    return _changeable(list(_interpolations(task, "")), overridden)


def _changeable(interpolations: list[tuple[str, str]], overridden: set[str]) -> list[str]:
    found = [(key, text, _referenced_names(text)) for key, text in interpolations]
    tainted = {key.split(".")[0] for key in overridden}
    grew = True
    while grew:
        grew = False
        for key, text, names in found:
            top = key.split(".")[0]
            if top not in tainted and ("${." in text or names & tainted):
                tainted.add(top)
                grew = True
    return [key for key, _, _ in found if key.split(".")[0] in tainted]


def _referenced_names(text: str) -> set[str]:
    """Every name inside the ``${...}`` parts of ``text``, nested ones included: the
    literal text around them refers to nothing (``cache`` in ``${paths.root}/cache``
    is not the top-level key ``cache``). Text with quotes or backslashes, where a brace
    may be quoted or escaped, counts all its names."""
    if any(mark in text for mark in "'\"\\"):
        return set(_NAME.findall(text))
    inside, depth = [], 0
    for i, char in enumerate(text):
        if text.startswith("${", i):
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        inside.append(char if depth else " ")
    return set(_NAME.findall("".join(inside)))


def _interpolations(node: DictConfig, prefix: str):
    """(dotted key, text) of every interpolation under ``node``; a list holding one
    counts as an interpolation of the list itself (never resolved piecemeal)."""
    for key in node:
        path = f"{prefix}{key}"
        if OmegaConf.is_interpolation(node, str(key)):
            yield path, str(node._get_node(key)._value())
        else:
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_none():
                yield from _interpolations(child, path + ".")
            elif isinstance(child, ListConfig) and "${" in str(OmegaConf.to_container(child)):
                yield path, str(OmegaConf.to_container(child))


def _resolve_in_place(cfg: DictConfig, key: str) -> None:
    try:
        value = OmegaConf.select(cfg, key, throw_on_missing=True)
    except OmegaConfBaseException:
        return  # left as it is: the point reports it, as Hydra's own config would
    if isinstance(value, DictConfig | ListConfig):
        return
    OmegaConf.update(cfg, key, value, merge=False)


def point_config(shape_config: DictConfig, point: Point) -> DictConfig:
    """The shape's full config with the point's values and its ``hydra.overrides.task``,
    ``hydra.job.override_dirname``, ``num`` and ``id`` set as the stock path sets them."""
    cfg = apply_values(shape_config, point.values)
    parsed = OverridesParser.create().parse_overrides(point.overrides)
    job = cfg.hydra.job
    with read_write(cfg.hydra), open_dict(cfg.hydra):
        cfg.hydra.overrides.task = [o.input_line for o in parsed]
        job.override_dirname = get_overrides_dirname(
            overrides=parsed,
            kv_sep=job.config.override_dirname.kv_sep,
            item_sep=job.config.override_dirname.item_sep,
            exclude_keys=job.config.override_dirname.exclude_keys,
        )
        job.id = point.num
        job.num = point.num
    OmegaConf.copy_cache(from_config=shape_config, to_config=cfg)
    return cfg


def screen(plan: Plan) -> None:
    """Refuse the sweep up front if any value override is wrong for its shape (an
    unknown key, a wrong type): each distinct override is applied once per shape, on
    its own, so this costs a few ms per distinct value rather than per point. Raises
    Hydra's ``ConfigCompositionException`` naming the override, as the stock sweeper's
    ``validate_batch_is_legal`` does. A clash only a whole point shows (``~a`` with
    ``a=1``) is caught when the point is composed, and becomes its error row.

    Each applied override also gives the typed leaf value OmegaConf stored, so each
    point gets its ``assigned`` values for the typed path where they allow it.

    A value OmegaConf takes but kernbench does not (:mod:`kernbench.sweep.strict`: a
    boolean key set to ``2``, an interpolation that does not resolve) raises
    :class:`~kernbench.errors.ConfigError` naming the key and the point."""
    leaves: dict[tuple[int, str], Any] = {}
    for point in plan.points:
        for value in point.values:
            key = (point.shape, value.input_line)
            if key not in leaves:
                leaves[key] = _screened_leaf(plan, point, value)
        point_leaves = [leaves[(point.shape, v.input_line)] for v in point.values]
        point.assigned = typed.assignments(point_leaves, point.values)


def _screened_leaf(plan: Plan, point: Point, value: Override) -> Any:
    """``value`` applied on its own to ``point``'s shape, refused if it is wrong there;
    else the leaf value it stores (:func:`kernbench.sweep.typed.leaf_value`)."""
    task = plan.shapes[point.shape].task
    _refuse_value(point, value, strict.not_boolean(task, value))
    try:
        applied = apply_values(task, [value])
    except ConfigCompositionException as exc:
        raise ConfigCompositionException(
            f"sweep point #{point.num} ({' '.join(point.overrides)}): {_first_line(exc)}"
        ) from exc
    alone = strict.unresolved(applied, value)
    if alone is not None:  # it may read a key another value of the point sets
        # (if the point does not compose either, the interpolation is the reason given)
        with contextlib.suppress(ConfigCompositionException):
            alone = strict.unresolved(apply_values(task, point.values), value)
        _refuse_value(point, value, alone)
    return typed.leaf_value(applied, value)


def value_errors(plan: Plan, point: Point) -> str | None:
    """The first of ``point``'s values that is not a boolean where one is wanted
    (:func:`kernbench.sweep.strict.not_boolean`), as its one-line error, or None: a dry
    run lists the point invalid, as the real sweep refuses it. (An interpolation that
    does not resolve fails the point's own composition, which a dry run reports.)"""
    for value in point.values:
        text = strict.not_boolean(plan.shapes[point.shape].task, value)
        if text is not None:
            return f"{value.key_or_group}: {text}"
    return None


def _refuse_value(point: Point, value: Override, text: str | None) -> None:
    if text is not None:
        where = f"sweep point #{point.num}: {' '.join(point.overrides)}"
        raise ConfigError(value.key_or_group, f"{text} ({where})")


def _first_line(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    text = str(cause) or str(exc) or type(cause).__name__
    return " ".join(text.split())
