"""Run the build-identity matrix in this process and write what it gave to a file.

``tests/test_build.py`` starts this twice as a fresh subprocess, once as installed and
once with ``KERNBENCH_PURE=1``, and compares the two files: every metric, op log entry
and trace row of each case as ``repr`` text, so ``3`` and ``3.0`` (an int the compiled
build took as a float) differ. Usage: ``python -m tests.build_identity_driver OUT
[CASE...]`` (no case: all of :func:`cases`); OUT gets JSON ``{"build": ..., "cases":
{name: {"metrics": ..., "oplog": ..., "trace": ...}}}``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

import kernbench
from kernbench import simulate
from kernbench.config.schema import KernBenchConfig, StreamPattern
from tests.support import make_cfg
from tests.test_cost_model import gqa_cfg

MODELS = ("pa", "va", "la")
MAPPINGS = ("n_to_one", "one_to_one")
FABRICS = ("fair", "reservation")
PATTERNS = ("local", "hotspot", "uniform")


def _stream(model: str, mapping: str, fabric: str, pattern: str) -> KernBenchConfig:
    # Dispatch cost on (its float cycles reach the op log), 4 PEs but under local.
    return make_cfg(
        one_to_one=mapping == "one_to_one",
        zero_cost=False,
        model=model,
        fabric=fabric,
        op="copy" if pattern == "uniform" else "read",
        access_bytes=2048,
        bytes_per_pe=2048 * 16 + 700,  # a short tail access
        outstanding=4,
        pattern=StreamPattern(pattern),
        active_pes=1 if pattern == "local" else 4,
    )


def _triton() -> KernBenchConfig:
    from kernbench.triton.accelerator import compose_config

    return compose_config(
        ["topology=small", "workload.kernel=softmax", "workload.rows=6", "workload.cols=300"]
    )


def cases() -> dict[str, Callable[[], KernBenchConfig]]:
    """Every address model x channel mapping x fabric x pattern, a GQA kernel (the
    greenlet path) and a Triton kernel."""
    out: dict[str, Callable[[], KernBenchConfig]] = {}
    for model, mapping, fabric, pattern in itertools.product(MODELS, MAPPINGS, FABRICS, PATTERNS):
        out[f"stream-{model}-{mapping}-{fabric}-{pattern}"] = (
            lambda a=(model, mapping, fabric, pattern): _stream(*a)
        )
    out["gqa_opt3-greenlet"] = lambda: gqa_cfg("gqa_opt3", seq_tokens=512, exec_path="greenlet")
    out["triton-softmax"] = _triton
    return out


def run_case(cfg: KernBenchConfig, tmp: Path) -> dict[str, str]:
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True, trace=True)
    path = tmp / "trace.parquet"
    result = simulate.run(cfg, path)
    trace = pq.read_table(path).to_pylist()
    path.unlink()
    return {"metrics": repr(result.metrics), "oplog": repr(result.oplog), "trace": repr(trace)}


def main(argv: list[str]) -> None:
    out, wanted = Path(argv[0]), argv[1:]
    table = cases()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in wanted or list(table):
            results[name] = run_case(table[name](), Path(tmp))
    out.write_text(json.dumps({"build": kernbench.build(), "cases": results}))


if __name__ == "__main__":
    main(sys.argv[1:])
