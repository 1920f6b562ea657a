"""Every option of every config group composes, lands where DESIGN §2 says, and validates."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from kernbench.cli.precheck import preset_plugins
from kernbench.config import flatten, limits, validate
from kernbench.config.schema import (
    ControlConfig,
    KernBenchConfig,
    LinksConfig,
    StreamWorkloadConfig,
    TopologyConfig,
    WorkloadConfig,
)
from kernbench.config.store import conf_dir, experiment_files, package_of

GROUPS = ("topology", "address", "channel_mapping", "pe_cost_model", "workload", "paths")


def options(group: str) -> list[str]:
    """The options a user can pick for ``group``: the YAML files in its folder."""
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


def test_every_group_has_the_design_options():
    assert {"default", "small"} <= set(options("topology"))
    assert options("address") == ["la", "pa", "va"]
    assert options("channel_mapping") == ["n_to_one", "one_to_one"]
    assert options("pe_cost_model") == ["default", "zero"]
    assert "stream" in options("workload")


@pytest.mark.parametrize(
    "choice",
    list(itertools.product(*(options(g) for g in GROUPS))),
    ids=lambda choice: "-".join(choice),
)
def test_every_combination_composes_and_validates(compose_cfg, choice):
    overrides = [f"{group}={option}" for group, option in zip(GROUPS, choice, strict=True)]
    cfg = validate(OmegaConf.to_object(compose_cfg(*overrides)))
    assert isinstance(cfg, KernBenchConfig)
    assert cfg.topology.name == choice[0]
    assert cfg.address.model.value == choice[1]
    assert cfg.topology.cube.memory_map.hbm_mapping_mode.value == choice[2]
    assert cfg.workload.name == choice[4]


def test_default_choices(compose_cfg):
    cfg = validate(OmegaConf.to_object(compose_cfg()))
    assert cfg.topology.name == "default"
    assert cfg.address.model.value == "va"  # ADR-0011's default
    assert cfg.topology.cube.memory_map.hbm_mapping_mode.value == "n_to_one"
    assert cfg.workload.name == "stream"


def test_channel_mapping_lands_in_memory_map(compose_cfg):
    cfg = compose_cfg("channel_mapping=one_to_one")
    assert cfg.topology.cube.memory_map.hbm_mapping_mode.value == "one_to_one"
    assert "channel_mapping" not in cfg
    assert "hbm_mapping_mode" not in cfg.topology


@pytest.mark.parametrize(
    ("option", "expected"),
    [("default", (32.0, 0.25, 1.0)), ("zero", (0.0, 0.0, 1.0))],
)
def test_pe_cost_model_lands_in_pe_attrs(compose_cfg, option, expected):
    cfg = compose_cfg(f"pe_cost_model={option}")
    model = cfg.topology.pe.attrs.pe_cost_model
    assert (model.fixed_per_cmd_cycles, model.byte_cycles_recip, model.clock_freq_ghz) == expected
    assert "pe_cost_model" not in cfg


@pytest.mark.parametrize("model", ["pa", "va", "la"])
def test_address_option_sets_model(compose_cfg, model):
    assert compose_cfg(f"address={model}").address.model.value == model


def test_default_topology_is_design_section_2(compose_cfg):
    cfg = validate(OmegaConf.to_object(compose_cfg()))
    topo, mm = cfg.topology, cfg.topology.cube.memory_map
    assert (topo.n_sips, topo.cubes_per_sip, topo.pes_per_cube) == (1, 2, 8)
    assert (mm.hbm_pseudo_channels, mm.hbm_channel_bw_gbs) == (64, 32.0)
    assert mm.hbm_channels_per_pe == 8
    assert mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs == 256.0
    assert topo.pe.clock_ghz == 1.0


def test_default_topology_yaml_equals_schema_defaults(compose_cfg):
    """The YAML writes the schema's defaults out, so neither can drift from the other."""
    assert OmegaConf.to_object(compose_cfg()).topology == TopologyConfig()


def test_default_topology_yaml_writes_every_link_and_control_value():
    written = OmegaConf.load(conf_dir() / "topology" / "default.yaml")
    for section, schema in (("links", LinksConfig), ("control", ControlConfig)):
        expected = [f.name for f in dataclasses.fields(schema)]
        assert list(written[section].keys()) == expected


def test_small_topology_keeps_cross_cube_paths(compose_cfg):
    cfg = validate(OmegaConf.to_object(compose_cfg("topology=small")))
    topo = cfg.topology
    assert (topo.n_sips, topo.cubes_per_sip, topo.pes_per_cube) == (1, 2, 2)
    assert topo.cube.memory_map.hbm_pseudo_channels == 16
    assert topo.cube.memory_map.hbm_channels_per_pe == 8
    assert topo.links == LinksConfig()


@pytest.mark.parametrize("workload", options("workload"))
def test_every_workload_node_is_typed(compose_cfg, workload):
    """The root ``workload`` field is ``Any``; each option must bring its own schema."""
    cfg = compose_cfg(f"workload={workload}")
    schema = OmegaConf.get_type(cfg.workload)
    assert dataclasses.is_dataclass(schema) and issubclass(schema, WorkloadConfig)
    assert isinstance(OmegaConf.to_object(cfg).workload, schema)


def test_stream_workload_is_stream_schema(compose_cfg):
    assert OmegaConf.get_type(compose_cfg().workload) is StreamWorkloadConfig


def test_validate_derives_channels_per_pe_on_a_copy(compose_cfg):
    cfg = OmegaConf.to_object(compose_cfg("topology.cube.memory_map.hbm_pseudo_channels=32"))
    checked = validate(cfg)
    assert checked.topology.cube.memory_map.hbm_channels_per_pe == 4
    assert cfg.topology.cube.memory_map.hbm_channels_per_pe is None


def test_validate_accepts_a_matching_given_channels_per_pe(compose_cfg):
    cfg = compose_cfg("topology.cube.memory_map.hbm_channels_per_pe=8")
    assert validate(OmegaConf.to_object(cfg)).topology.cube.memory_map.hbm_channels_per_pe == 8


def test_rule_tables_name_real_keys(compose_cfg):
    cfg = OmegaConf.to_object(compose_cfg())
    keys = [
        *limits.AT_LEAST_ONE,
        *limits.NON_NEGATIVE,
        *limits.POWER_OF_TWO,
        *limits.PA_FIELD_LIMITS,
        *limits.AT_MOST,
    ]
    missing = [k for k in keys if limits.get_key(cfg, k) is limits.ABSENT]
    assert missing == []


DESIGN_KEYS = [
    "topology.n_sips",
    "topology.cubes_per_sip",
    "topology.pes_per_cube",
    "topology.cube.memory_map.hbm_mapping_mode",
    "topology.cube.memory_map.hbm_pseudo_channels",
    "topology.cube.memory_map.hbm_channels_per_pe",
    "topology.cube.memory_map.hbm_channel_bw_gbs",
    "topology.cube.memory_map.interleave_bytes",
    "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles",
    "topology.pe.attrs.pe_cost_model.byte_cycles_recip",
    "topology.pe.attrs.pe_cost_model.clock_freq_ghz",
    "topology.pe_mmu.page_size",
    "topology.pe_mmu.tlb_overhead_ns",
    "address.model",
    "workload.name",
    "workload.op",
    "workload.access_bytes",
    "workload.bytes_per_pe",
    "workload.align_offset_bytes",
    "workload.active_pes",
    "workload.outstanding",
]


def test_flatten_names_every_design_key(compose_cfg):
    flat = flatten(validate(OmegaConf.to_object(compose_cfg("channel_mapping=one_to_one"))))
    assert [k for k in DESIGN_KEYS if k not in flat] == []
    assert flat["topology.cube.memory_map.hbm_mapping_mode"] == "one_to_one"
    assert flat["address.model"] == "va"
    assert flat["workload.op"] == "read"
    assert flat["topology.cube.memory_map.hbm_channels_per_pe"] == 8
    assert next(iter(flat)) == "topology.name"


def test_flatten_of_dictconfig_matches_flatten_of_object(compose_cfg):
    cfg = compose_cfg("topology=small", "address=va")
    assert flatten(cfg) == flatten(OmegaConf.to_object(cfg))


def test_flatten_keeps_none_and_drops_defaults():
    flat = flatten({"defaults": ["x"], "a": {"b": None, "c": [1, 2]}, "d": "e"})
    assert flat == {"a.b": None, "a.c": "[1, 2]", "d": "e"}


# --- study presets (experiments/) -----------------------------------------------------

# The grid presets (kernbench's sweeper); design_search runs under Optuna's and is
# tested in tests/test_objective.py.
EXPERIMENTS = [p.stem for p in experiment_files() if not preset_plugins(p.stem)]


def test_the_design_presets_exist_and_are_global():
    assert EXPERIMENTS == [
        "bw_equivalence",
        "bw_equivalence_models",
        "decoder_8b",
        "decoder_layer",
        "dispatch_ratio",
        "sim_speed",
    ]
    assert [p.stem for p in experiment_files() if preset_plugins(p.stem)] == ["design_search"]
    for path in experiment_files():
        assert path.read_text().startswith("# @package _global_\n")
        assert package_of(path) == "_global_"


def test_paths_are_one_place_for_output_locations(compose_cfg):
    cfg = compose_cfg()
    assert cfg.paths.root == "outputs"
    assert cfg.paths.sweep_dir.startswith("outputs/multirun/")


def sweep_params(compose_cfg, experiment: str) -> dict[str, list[str]]:
    """The preset's grid: swept key -> its values, as Hydra's basic sweeper reads them."""
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        cfg = compose(
            config_name="config",
            overrides=[f"+experiment={experiment}"],
            return_hydra_config=True,
        )
    return {k: str(v).split(",") for k, v in cfg.hydra.sweeper.params.items()}


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_preset_value_composes_and_validates(compose_cfg, experiment):
    """Each value of each swept key, on top of the preset, gives a valid config."""
    params = sweep_params(compose_cfg, experiment)
    for key, values in params.items():
        for value in values:
            cfg = compose_cfg(f"+experiment={experiment}", f"{key}={value}")
            checked = validate(OmegaConf.to_object(cfg))
            assert checked.paths.sweep_name == experiment, (key, value)


def test_bw_equivalence_models_is_its_grid_under_every_address_model(compose_cfg):
    """The companion preset composes bw_equivalence (one grid, kept in one place) and
    sweeps the address model instead of the fabric model: a grid of 504 x 3 = 1,512
    points (the 3 seeds included), of which 936 run (kernbench.sweep.repeats: 312 per
    model, each deterministic pattern once)."""
    base = sweep_params(compose_cfg, "bw_equivalence")
    models = sweep_params(compose_cfg, "bw_equivalence_models")
    assert models == base | {"address": ["pa", "va", "la"], "sim.fabric": ["fair"]}
    points = 1
    for values in models.values():
        points *= len(values)
    assert points == 1512
    cfg = compose_cfg("+experiment=bw_equivalence_models")
    base_cfg = compose_cfg("+experiment=bw_equivalence")
    assert cfg.workload == base_cfg.workload and cfg.paths.sweep_name == "bw_equivalence_models"


def test_bw_equivalence_grid_is_design_section_5(compose_cfg):
    """Every axis changes something: N = 4, 8, 16 (pseudo-channels with 8 PEs fixed,
    PEs with 64 channels fixed), traffic cases with active PEs where they differ, and
    access sizes aligned to every stripe N*g, one granule off, and below every stripe;
    copies where reads and writes mix directions (neighbor, uniform), reads elsewhere."""
    params = sweep_params(compose_cfg, "bw_equivalence")
    assert params["channel_mapping"] == ["n_to_one", "one_to_one"]
    pes = [int(v) for v in params["topology.pes_per_cube"]]
    pseudo = [int(v) for v in params["topology.cube.memory_map.hbm_pseudo_channels"]]
    assert {c // p for c in pseudo for p in pes} == {4, 8, 16}
    assert params["traffic"] == [
        "local", "neighbor", "hotspot", "uniform_one", "uniform", "neighbor_copy", "uniform_copy"
    ]  # fmt: skip
    cfg = compose_cfg("+experiment=bw_equivalence")
    g = cfg.topology.cube.memory_map.interleave_bytes
    stripes = {g * c // p for c in pseudo for p in pes}
    sizes = [int(v) for v in params["workload.access_bytes"]]
    assert [s for s in sizes if all(s % st == 0 for st in stripes)]  # aligned to all
    assert [s for s in sizes if all(s % st == g for st in stripes)]  # one granule off all
    assert [s for s in sizes if s < min(stripes)]  # smaller than every stripe
    assert cfg.topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles == 0
    assert cfg.address.model.value == "la"
    for case in params["traffic"]:
        traffic = compose_cfg("+experiment=bw_equivalence", f"traffic={case}").workload
        assert (traffic.pattern.value, str(traffic.active_pes), traffic.op.value) == {
            "local": ("local", "all", "read"),
            "neighbor": ("neighbor", "all", "read"),
            "hotspot": ("hotspot", "all", "read"),
            "uniform_one": ("uniform", "1", "read"),
            "uniform": ("uniform", "all", "read"),
            "neighbor_copy": ("neighbor", "all", "copy"),
            "uniform_copy": ("uniform", "all", "copy"),
        }[case]


def test_a_traffic_case_is_chosen_without_plus(compose_cfg):
    """``traffic`` is an optional group of the primary config (none by default): a plain
    run picks a case with ``traffic=``, and it sets what the two keys would."""
    assert compose_cfg().workload.pattern.value == "local"
    case = compose_cfg("traffic=uniform_one").workload
    keys = compose_cfg("workload.pattern=uniform", "workload.active_pes=1").workload
    assert (case.pattern, str(case.active_pes)) == (keys.pattern, str(keys.active_pes))


def test_dispatch_ratio_grid_is_design_section_5(compose_cfg):
    params = sweep_params(compose_cfg, "dispatch_ratio")
    model = "topology.pe.attrs.pe_cost_model."
    assert params[model + "fixed_per_cmd_cycles"] == ["0", "8", "16", "32", "64"]
    assert params[model + "byte_cycles_recip"] == ["0", "0.125", "0.25", "0.5", "1.0"]
    assert params["workload"] == ["gqa_opt2", "gqa_opt3"]
