"""``workload=triton`` sweeps like any workload: a multirun into ``results.parquet``."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("triton")

from tests.test_sweep import merged, run_sweep  # noqa: E402

SIZES = ("workload.m=128", "workload.n=64", "workload.k=64", "workload.block_n=64")


@pytest.mark.slow
def test_matmul_block_sizes_by_address_model_sweep_into_one_table(tmp_path):
    proc, sweep = run_sweep(
        tmp_path,
        "topology=small",
        "workload=triton",
        "workload.kernel=matmul,nosuch.module:kernel",
        *SIZES,
        "workload.block_m=32,64",
        "address=pa,va,la",
    )
    assert proc.returncode == 1  # the bad kernel's points failed; the others did not
    rows = merged(sweep)
    assert len(rows) == 2 * 2 * 3
    bad = [r for r in rows if r["workload.kernel"] != "matmul"]
    assert {r["status"] for r in bad} == {"error"}
    assert "workload.kernel: cannot import 'nosuch.module'" in bad[0]["error"]
    good = [r for r in rows if r["workload.kernel"] == "matmul"]
    assert {r["status"] for r in good} == {"ok"}
    assert {(r["address.model"], r["workload.block_m"]) for r in good} == {
        (a, b) for a in ("pa", "va", "la") for b in (32, 64)
    }
    for r in good:
        assert r["programs"] == math.ceil(128 / r["workload.block_m"]) * math.ceil(64 / 64)
        assert r["gemm_commands"] == r["programs"] * math.ceil(64 / r["workload.block_k"])
        assert 0.0 <= r["max_abs_error"] < 1e-4  # fp32, K = 64
        assert r["kernel_latency_ns"] > 0


USER_MODULE = """
import torch
import triton
import triton.language as tl

from kernbench.triton.cases import Case


@triton.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def scale_case(acc, w):
    xs = torch.arange(w.size, dtype=torch.float32)
    x = acc.tensor(xs)
    out = acc.empty_like(x)
    grid = (triton.cdiv(w.size, w.block_size),)
    return Case(scale, grid, (x, out, w.size, 3.0), {"BLOCK": w.block_size}, [(out, xs * 3)])
"""


def test_a_users_kernel_runs_by_import_path(tmp_path, run_app):
    (tmp_path / "mykernels.py").write_text(USER_MODULE)  # in the user's own environment
    run_args = (
        "topology=small",
        "workload=triton",
        "workload.kernel=mykernels:scale",
        "workload.size=1000",
        "workload.block_size=256",
    )
    run = run_app(*run_args)
    assert run.returncode == 0, run.stderr
    [row] = run.ok_rows()
    assert row["max_abs_error"] == 0.0
    assert row["programs"] == 4  # ceil(1000 / 256)
    assert row["bytes_moved"] == 2 * 1000 * 4  # masked tail: only the live elements
    # the user edits the kernel: the point runs again (their code is not in the cache key)
    (tmp_path / "mykernels.py").write_text(USER_MODULE.replace("* factor", "* factor + 1.0"))
    again = run_app(*run_args)
    [row] = again.ok_rows()
    assert row["cached"] is False
    assert row["max_abs_error"] == 1.0  # the reference still says x * 3
    missing = run_app("topology=small", "workload=triton", "workload.kernel=mykernels:nope")
    assert missing.returncode == 1
    assert "workload.kernel: mykernels must define both 'nope' and its case function" in (
        missing.stderr
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("workload.block_m=48", "workload.block_m: 48 is not a power of two"),
        ("workload.pes=5", "workload.pes: 5 is not 'all' nor a count in [1, 4]"),
        ("workload.mapping=spiral", "workload.mapping: 'spiral' is not one of"),
        ("workload.placement=diagonal", "workload.placement: 'diagonal' is not one of"),
        ("workload.kernel=nosuch", "workload.kernel: 'nosuch' is not one of"),
        ("workload.dtype=int32", "workload.dtype: 'int32' is not a torch floating dtype"),
        # sizes and a kernel that is a path gave torch or importlib tracebacks
        ("workload.size=-1", "workload.size: -1 is not >= 1 (a tensor size)"),
        ("workload.size=0", "workload.size: 0 is not >= 1 (a tensor size)"),
        ("workload.m=-64", "workload.m: -64 is not >= 1 (a tensor size)"),
        ("workload.kernel=../../etc/passwd:x", "workload.kernel: '../../etc/passwd:x' is not one"),
        ("workload.kernel=os.path:1x", "workload.kernel: 'os.path:1x' is not one of"),
    ],
)
def test_bad_triton_keys_are_one_error_naming_the_key(override, message):
    from kernbench import simulate
    from kernbench.errors import ConfigError
    from kernbench.triton.accelerator import compose_config

    cfg = compose_config(["topology=small", override])
    with pytest.raises(ConfigError) as err:
        simulate.run(cfg)
    assert str(err.value).startswith(message)
