"""Result columns from a config (kernbench.config.flatten): every value a scalar under
its dotted key, in the config's order; enums by value, lists as JSON text, Hydra's
``defaults`` dropped, nested mappings and dataclasses walked."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf

from kernbench.config import flatten, validate
from kernbench.config.flatten import walk
from kernbench.config.schema import TlbCharge
from kernbench.config.validate import validate_and_flatten


@dataclass
class Inner:
    charge: TlbCharge = TlbCharge.per_page
    sizes: list = field(default_factory=lambda: [4096, 65536])


@dataclass
class Outer:
    defaults: list = field(default_factory=lambda: ["base"])
    name: str = "x"
    count: int = 3
    ratio: float = 0.25
    flag: bool = True
    nothing: Any = None
    inner: Inner = field(default_factory=Inner)
    table: dict = field(default_factory=lambda: {"a": {"b": (1, "two")}})


EXPECTED = {
    "name": "x",
    "count": 3,
    "ratio": 0.25,
    "flag": True,
    "nothing": None,
    "inner.charge": "per_page",
    "inner.sizes": "[4096, 65536]",
    "table.a.b": '[1, "two"]',
}


def test_a_typed_config_flattens_to_scalars_in_order():
    flat = flatten(Outer())
    assert flat == EXPECTED
    assert list(flat) == list(EXPECTED)


def test_a_dictconfig_flattens_the_same():
    assert flatten(OmegaConf.structured(Outer())) == EXPECTED


def test_one_walk_gives_the_leaves_and_the_dataclass_nodes():
    """walk(): what flatten, the leaf limits and the unknown-key check read; mappings
    are walked into but only dataclasses are nodes (a mapping's keys are free)."""
    tree = walk(Outer())
    assert [key for key, _ in tree.leaves] == list(EXPECTED)
    assert [(key, type(node)) for key, node in tree.nodes] == [("", Outer), ("inner", Inner)]


def test_validate_and_flatten_reads_the_derived_keys_again(compose_cfg):
    """One walk serves validation and the columns, but the walk holds the values as
    given: the keys validation derives must be read again. Default topology: 64
    pseudo-channels over 8 PEs -> hbm_channels_per_pe = 8; active_pes given as the
    number 3 (a test or a user's code may build the object so) -> the text "3"."""
    cfg = OmegaConf.to_object(compose_cfg())
    cfg.workload.active_pes = 3
    assert cfg.topology.cube.memory_map.hbm_channels_per_pe is None
    mm = cfg.topology.cube.memory_map
    per_pe = mm.hbm_pseudo_channels // cfg.topology.pes_per_cube
    assert (mm.hbm_pseudo_channels, cfg.topology.pes_per_cube, per_pe) == (64, 8, 8)
    typed, flat = validate_and_flatten(copy.deepcopy(cfg))
    assert flat["topology.cube.memory_map.hbm_channels_per_pe"] == per_pe
    assert flat["workload.active_pes"] == "3"
    assert flat == flatten(validate(cfg))
