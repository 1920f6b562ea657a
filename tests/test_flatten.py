"""Result columns from a config (kernbench.config.flatten): every value a scalar under
its dotted key, in the config's order; enums by value, lists as JSON text, Hydra's
``defaults`` dropped, nested mappings and dataclasses walked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf

from kernbench.config import flatten
from kernbench.config.schema import TlbCharge


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
