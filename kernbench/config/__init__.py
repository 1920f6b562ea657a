"""Configuration: schema (shape), ConfigStore registration, validation, flattening.

The data path through this package is: Hydra composes ``conf/`` against the schemas
registered by :func:`kernbench.config.store.register_configs`; the app converts the
result once with ``OmegaConf.to_object``; :func:`validate` checks cross-field rules and
derives values; :func:`flatten` names every value for the result table.

``store`` is not imported here, so the simulator core can import the schema without
loading Hydra.
"""

from kernbench.config.flatten import flatten
from kernbench.config.schema import KernBenchConfig
from kernbench.config.validate import validate

__all__ = ["KernBenchConfig", "flatten", "validate"]
