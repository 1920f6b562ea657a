"""Register the structured-config schemas with Hydra's ConfigStore, and find ``conf/``.

This module owns the link between the dataclasses of :mod:`kernbench.config.schema`
and the YAML files under ``conf/`` (DESIGN §2): the root schema is the first entry of
``conf/config.yaml``'s defaults list, and each workload YAML starts from its schema
node (``defaults: [base_<name>, _self_]``), so a typo or a wrong type anywhere is an
error that names the key. It must not hold values: those live in the YAML files.

To add a workload ``foo``: write ``FooWorkloadConfig`` in ``schema.py``, add
``"base_foo": FooWorkloadConfig`` to :data:`WORKLOAD_SCHEMAS`, and write
``conf/workload/foo.yaml`` starting with ``defaults: [base_foo, _self_]``.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_store import ConfigStore

from kernbench.config.schema import KernBenchConfig, StreamWorkloadConfig

ROOT_SCHEMA = "kernbench_schema"

# Schema node name (as written in a workload YAML's defaults list) -> dataclass.
WORKLOAD_SCHEMAS: dict[str, type] = {
    "base_stream": StreamWorkloadConfig,
}


def register_configs() -> None:
    """Store every schema node. Idempotent: storing a name again replaces it."""
    cs = ConfigStore.instance()
    cs.store(name=ROOT_SCHEMA, node=KernBenchConfig)
    for name, schema in WORKLOAD_SCHEMAS.items():
        cs.store(group="workload", name=name, node=schema)


def conf_dir() -> Path:
    """The absolute path of the ``conf/`` directory Hydra composes from.

    Works for a source checkout (editable install), where ``conf/`` sits beside the
    ``kernbench`` package. Installing without the source tree is not handled yet.
    """
    return Path(__file__).resolve().parents[2] / "conf"
