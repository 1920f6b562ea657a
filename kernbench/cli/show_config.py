"""``kernbench --cfg job``: the config a run would use, validated, derived values filled.

Hydra's own ``--cfg job`` prints the composed config before kernbench sees it: an
impossible topology (``topology.pes_per_cube=7``) exits 0 and derived values
(``hbm_channels_per_pe``) show as null. This composes the same config with Hydra's
compose API, converts and validates it exactly as a run does, and prints the result,
or the one error line a run would print (exit 1).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from kernbench.config.store import conf_dir, register_configs
from kernbench.config.validate import validate
from kernbench.errors import KernBenchError
from kernbench.job import error_message


def job_config_yaml(overrides: Sequence[str]) -> str:
    """The validated config as YAML (raises what a run would)."""
    register_configs()  # the console script answers --cfg job before importing the app
    where = str(conf_dir())
    with initialize_config_dir(version_base="1.3", config_dir=where, job_name="kernbench"):
        cfg = compose(config_name="config", overrides=list(overrides))
    typed = validate(OmegaConf.to_object(cfg))
    return OmegaConf.to_yaml(OmegaConf.structured(typed))


def show_job_config(overrides: Sequence[str]) -> int:
    """Print the config or one error line; return the exit status."""
    try:
        text = job_config_yaml(overrides)
    except (KernBenchError, OmegaConfBaseException, HydraException) as exc:
        print(f"kernbench: error: {one_line(exc)}", file=sys.stderr)
        return 1
    print(text, end="")
    return 0


def one_line(exc: BaseException) -> str:
    """The first line of an error, with its cause's first line when Hydra wrapped one."""

    cause = exc.__cause__
    if isinstance(exc, HydraException) and cause is not None:
        return f"{str(exc).splitlines()[0]}: {error_message(cause)}"
    return error_message(exc)
