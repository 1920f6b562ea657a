"""The ``kernbench`` command: compose a config with Hydra, run it, write ``result.parquet``.

This module is the thin entry point of DESIGN §1: Hydra composes ``conf/`` (and
rejects unknown keys, wrong types and unknown group options itself, exiting 1); the
composed config is converted once into typed objects, validated, and handed to
:func:`kernbench.simulate.run`. Every job writes exactly one row to ``result.parquet``
in its Hydra output directory, ``status="ok"`` with the metrics or ``status="error"``
with the message, so a failure never looks like a success (DESIGN §7).

Bad input prints one line to stderr (``kernbench: error: <key>: <value and limit>``)
and no traceback. An unexpected exception (a bug) prints its traceback. Either way a
single run exits 1; inside a multirun the job returns its status instead, so one bad
point does not stop the sweep.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from kernbench import simulate
from kernbench.config import flatten, validate
from kernbench.config.store import conf_dir, register_configs
from kernbench.errors import KernBenchError
from kernbench.results import RESULT_FILE, STATUS_ERROR, STATUS_OK, make_row, write_rows

register_configs()


def run_job(cfg: DictConfig, out_dir: Path) -> str:
    """Run one composed config, write its row to ``out_dir``, return the status.

    Kept free of Hydra state so tests can call it on a config from ``compose``.
    """
    start = time.perf_counter()
    typed: Any = cfg
    try:
        typed = OmegaConf.to_object(cfg)
        typed = validate(typed)
        result = simulate.run(typed)
    except Exception as exc:  # every failure becomes an error row, never a lost job
        message = error_message(exc)
        _write(out_dir, typed, STATUS_ERROR, message, None, time.perf_counter() - start)
        if not isinstance(exc, KernBenchError | OmegaConfBaseException):
            traceback.print_exc()
        print(f"kernbench: error: {message}", file=sys.stderr)
        return STATUS_ERROR
    path = _write(out_dir, typed, STATUS_OK, None, result.metrics, time.perf_counter() - start)
    print(result.summary())
    print(f"result: {path}")
    return STATUS_OK


def error_message(exc: BaseException) -> str:
    """One line naming the key and the limit (OmegaConf's own messages span lines)."""
    if isinstance(exc, OmegaConfBaseException):
        key = getattr(exc, "full_key", None)
        text = (str(exc).splitlines() or [type(exc).__name__])[0]  # the rest repeats the key
        text = f"{key}: {text}" if key else text
    elif isinstance(exc, KernBenchError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def _write(
    out_dir: Path,
    cfg: Any,
    status: str,
    error: str | None,
    metrics: dict[str, Any] | None,
    wall_s: float,
) -> Path:
    row = make_row(flatten(cfg), status=status, error=error, metrics=metrics, wall_s=wall_s)
    return write_rows([row], out_dir / RESULT_FILE)


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def _hydra_task(cfg: DictConfig) -> str:
    hydra_cfg = HydraConfig.get()
    status = run_job(cfg, Path(hydra_cfg.runtime.output_dir))
    if status != STATUS_OK and hydra_cfg.mode == RunMode.RUN:
        raise SystemExit(1)
    return status


def main() -> None:
    """Console-script entry point (``kernbench``); Hydra reads ``sys.argv``."""
    _hydra_task()


if __name__ == "__main__":
    main()
