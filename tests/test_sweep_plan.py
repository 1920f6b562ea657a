"""Config identity: the fast path's per-point config is Hydra's own (kernbench.sweep.plan).

For every study preset's grid and for random points mixing group overrides, ``+``
additions, ``++`` and plain value overrides, the config the fast path builds (one Hydra
composition per shape, then the point's value overrides on a copy) must equal what
Hydra's ``load_sweep_config`` composes from scratch for the stock launchers: the whole
config, ``hydra`` node included, compared as unresolved containers. Where a point takes
the typed path (kernbench.sweep.typed: the shape's typed object with the point's leaves
set), that object must equal ``OmegaConf.to_object`` of Hydra's config, attributes
outside the schema included.
"""

from __future__ import annotations

import random

import pytest
from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

from kernbench.cli.precheck import preset_plugins
from kernbench.config.store import conf_dir, experiment_files, register_configs
from kernbench.sweep import typed
from kernbench.sweep.plan import Planner, apply_values, resolve_fixed, screen, without_hydra
from kernbench.sweep.run import save_config, write_records

# Presets run by kernbench's sweeper (design_search runs under Optuna's:
# tests/test_objective.py).
GRID_PRESETS = [p.stem for p in experiment_files() if not preset_plugins(p.stem)]


@pytest.fixture
def loader():
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        yield GlobalHydra.instance().hydra.config_loader


def load_master(loader, overrides: list[str]):
    """The multirun's master config with its sweep directory resolved, as Hydra's
    launchers resolve it first: that fixes ${now:...} and ${pid:} in the resolver cache
    every point's copy inherits (else each copy would read the clock on its own)."""
    master = loader.load_configuration("config", overrides, RunMode.MULTIRUN)
    str(master.hydra.sweep.dir)
    return master


def master_and_points(loader, overrides: list[str]):
    """The multirun's master config and its points, as Hydra's basic sweeper lists them."""
    master = load_master(loader, overrides)
    params = [f"{k}={v}" for k, v in (master.hydra.sweeper.get("params") or {}).items()]
    lines = params + list(master.hydra.overrides.task)
    parsed = OverridesParser.create().parse_overrides(lines)
    return master, BasicSweeper.split_arguments(parsed, None)[0]


def tree(obj):
    """A typed config as nested dicts of *every* attribute: dataclass ``==`` compares
    schema fields only, and would miss a key added with ``+``."""
    if hasattr(obj, "__dataclass_fields__"):
        return {type(obj).__name__: {k: tree(v) for k, v in vars(obj).items()}}
    if isinstance(obj, dict):
        return {k: tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [tree(v) for v in obj]
    return (type(obj), obj)  # 3 and "3", or an enum and its name, differ


def assert_same_as_hydra(loader, master, jobs) -> tuple[int, int]:
    """(number of shapes, points that took the typed path)."""
    plan = Planner(loader, master).plan(jobs)
    screen(plan)  # fills in each point's typed assignments
    bases = {n: plan.typed_base(n) for n in range(len(plan.shapes))}
    n_typed = 0
    for point in plan.points:
        expected = loader.load_sweep_config(master, list(point.overrides))
        with open_dict(expected.hydra):
            expected.hydra.job.id = point.num
            expected.hydra.job.num = point.num
        ours = plan.job_config(point)
        assert OmegaConf.to_container(ours) == OmegaConf.to_container(expected), point
        task = OmegaConf.to_container(plan.task_config(point))
        expected_task = OmegaConf.to_container(expected)
        del expected_task["hydra"]
        assert task == expected_task, point
        # What a worker runs: the shape's fixed interpolations resolved once, then the
        # point's values; resolved, it reads exactly as Hydra's config does.
        run = apply_values(plan.run_task(point.shape), point.values)
        resolved = OmegaConf.to_container(without_hydra(expected), resolve=True)
        assert OmegaConf.to_container(run, resolve=True) == resolved, point
        if bases[point.shape] is not None and point.assigned is not None:
            ours = typed.build(bases[point.shape], point.assigned)
            assert tree(ours) == tree(OmegaConf.to_object(without_hydra(expected))), point
            n_typed += 1
    return len(plan.shapes), n_typed


@pytest.mark.parametrize("preset", GRID_PRESETS)
def test_every_preset_point_matches_hydra(loader, preset):
    master, jobs = master_and_points(loader, [f"+experiment={preset}"])
    rng = random.Random(preset)
    sample = jobs if len(jobs) <= 24 else rng.sample(jobs, 24)
    shapes, n_typed = assert_same_as_hydra(loader, master, sample)
    assert shapes < len(sample)  # points did share compositions
    assert n_typed == len(sample)  # a preset's grid only sets leaves: all typed


GROUPS = {
    "topology": ["small", "default"],
    "address": ["pa", "va", "la"],
    "channel_mapping": ["n_to_one", "one_to_one"],
    "pe_cost_model": ["zero", "default"],
}
VALUES = [
    "workload.outstanding=3",
    "workload.access_bytes=4352",
    "++workload.bytes_per_pe=8192",
    "topology.pes_per_cube=4",
    "+extra_note=hello",
    "+extra.nested=1",  # a new node: never a leaf to set on the typed object
    "workload.bytes_per_pe=${workload.access_bytes}",
    "topology.pe_mmu.page_size=8192",
    "paths.root=elsewhere",  # changes the interpolated paths.run_dir, sweep_dir, cache_dir
    "paths.sweep_name=${workload.name}_study",
    "workload.outstanding='5'",  # a string for an int: OmegaConf stores 5
    "topology.pe_mmu.tlb_charge=per_page",  # a name for an enum: its member
    "sim.trace=true",
]


def random_point(rng: random.Random) -> list[str]:
    groups = [f"{g}={rng.choice(opts)}" for g, opts in GROUPS.items() if rng.random() < 0.6]
    values = rng.sample(VALUES, rng.randint(0, 4))
    if rng.random() < 0.3:
        groups.append("+experiment=bw_equivalence")
    point = groups + values
    rng.shuffle(point)  # group and value overrides interleaved in any order
    return point


def test_random_points_match_hydra(loader):
    rng = random.Random(11)
    jobs = [random_point(rng) for _ in range(30)]
    master = load_master(loader, [])
    shapes, n_typed = assert_same_as_hydra(loader, master, jobs)
    assert shapes > 1
    assert 0 < n_typed < len(jobs)  # both paths were compared


def test_a_bad_value_refuses_the_sweep_up_front(loader):
    master = loader.load_configuration("config", [], RunMode.MULTIRUN)
    plan = Planner(loader, master).plan(
        [["workload.outstanding=2"], ["topology=small", "workload.outstanding=two"]]
    )
    with pytest.raises(ConfigCompositionException) as info:
        screen(plan)
    message = str(info.value)
    assert message.startswith("sweep point #1 (topology=small workload.outstanding=two)")
    assert "two" in message and "int" in message.lower()


def test_resolve_fixed_keeps_every_interpolation_a_point_can_change():
    cfg = OmegaConf.create(
        {
            "a": "${b.x}",  # b.x reads c.y, which the points override: a chain
            "b": {"x": "${c.y}", "rel": "${.x}"},
            "c": {"y": 1},
            "d": {"free": "${e.z}/out", "z2": "${oc.select:e.z}"},
            "e": {"z": "root"},
            "f": {"dir": "${e.z}/c"},
            "g": {"nested": "${oc.select:${e.z},c}"},
        }
    )
    fixed = resolve_fixed(cfg, {"c.y"})
    assert OmegaConf.is_interpolation(fixed, "a")
    assert OmegaConf.is_interpolation(fixed.b, "x")
    assert OmegaConf.is_interpolation(fixed.b, "rel")
    assert not OmegaConf.is_interpolation(fixed.d, "free")  # nothing it reads can change
    assert (fixed.d.free, fixed.d.z2) == ("root/out", "root")
    # "c" outside a ${...} is text, not the key c (paths.cache_dir is ${paths.root}/cache
    # while points override cache=false); inside one, even nested, it is a key.
    assert not OmegaConf.is_interpolation(fixed.f, "dir")
    assert OmegaConf.is_interpolation(fixed.g, "nested")
    assert OmegaConf.is_interpolation(cfg.d, "free")  # the original is left alone
    fixed.c.y = 2  # what a point's override does: the chain follows it
    assert (fixed.a, fixed.b.rel) == (2, 2)


@pytest.mark.parametrize("preset", GRID_PRESETS)
def test_shape_records_load_back_as_composed(loader, preset, tmp_path):
    """``.hydra/shapes/<n>.yaml`` is each shape's composed config: ``OmegaConf.load``
    reads back exactly what Hydra composed (unresolved, ``hydra`` node included); and
    ``overrides.yaml`` the command line's overrides."""
    master, jobs = master_and_points(loader, [f"+experiment={preset}"])
    plan = Planner(loader, master).plan(jobs)
    write_records(plan, master, tmp_path)
    overrides = OmegaConf.load(tmp_path / ".hydra" / "overrides.yaml")
    assert list(overrides) == list(master.hydra.overrides.task)
    for n, shape in enumerate(plan.shapes):
        loaded = OmegaConf.load(tmp_path / ".hydra" / "shapes" / f"{n}.yaml")
        assert OmegaConf.to_container(loaded) == OmegaConf.to_container(
            shape.config, enum_to_str=True
        )


def test_saved_configs_keep_strings_that_look_like_other_types(tmp_path):
    """Strings OmegaConf's loader would read as a float, bool, null or int stay strings;
    interpolations and missing values stay as written."""
    cfg = OmegaConf.create(
        {
            "as_float": "1e3",
            "as_bool": "true",
            "as_null": "null",
            "as_int": "42",
            "inf": ".inf",
            "interp": "${as_int}/x",
            "missing": "???",
            "nested": {"list": ["1_000", 2.5, None, "off"]},
        }
    )
    save_config(cfg, tmp_path / "c.yaml")
    loaded = OmegaConf.load(tmp_path / "c.yaml")
    assert OmegaConf.to_container(loaded) == OmegaConf.to_container(cfg)
    assert OmegaConf.is_missing(loaded, "missing")
