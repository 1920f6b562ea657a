"""Address models by name (``address.model``): one registry, one builder.

Each model is a small policy behind :class:`kernbench.address.models.AddressModelPolicy`;
the system builds the configured one here and nothing else names a model class.
"""

from __future__ import annotations

from collections.abc import Callable

from kernbench.address.la import LaModel
from kernbench.address.models import AddressModelPolicy
from kernbench.address.pa_model import PaModel, PhysicalLayer
from kernbench.address.va import VaModel
from kernbench.config.schema import AddressModel
from kernbench.topology.graph import TopologyGraph

MODELS: dict[AddressModel, Callable[[TopologyGraph, PhysicalLayer], AddressModelPolicy]] = {
    AddressModel.pa: PaModel,
    AddressModel.va: VaModel,
    AddressModel.la: LaModel,
}

# The PE part install messages land on (DESIGN §3.3); PA installs nothing.
ENDPOINTS: dict[AddressModel, str] = {AddressModel.va: "mmu", AddressModel.la: "dma"}


def build_model(
    model: AddressModel, graph: TopologyGraph, physical: PhysicalLayer
) -> AddressModelPolicy:
    """The configured model, resolving into the system's physical layer."""
    return MODELS[model](graph, physical)
