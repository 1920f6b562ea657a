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

    with pytest.raises(ConfigError) as err:  # by validation (sizes), or by the run
        simulate.run(compose_config(["topology=small", override]))
    assert str(err.value).startswith(message)


NOT_A_KERNEL = """
def scale(x):
    return x


def scale_case(acc, w):
    raise AssertionError("never called: scale is not a kernel")
"""

JIT_NO_CASE = "import triton\n@triton.jit\ndef k(x):\n    pass\nk_case = 3\n"


@pytest.mark.parametrize(
    ("source", "kernel", "message"),
    [
        (NOT_A_KERNEL, "notkernel:scale", "notkernel:scale: 'scale' is a function, not a"),
        ("raise RuntimeError('boom')", "boomkernel:k", "importing 'boomkernel' failed: Runtime"),
        ("def k(:\n", "synkernel:k", "importing 'synkernel' failed: SyntaxError"),
        (JIT_NO_CASE, "nocase:k", "nocase.k_case is not a function"),
        ("x = 1", "plain:k", "plain must define both 'k' and its case function k_case"),
    ],
)
def test_a_kernel_that_is_not_a_triton_jit_function_is_one_error(
    tmp_path, monkeypatch, source, kernel, message
):
    """``workload.kernel=module:fn`` must name a @triton.jit function with its case
    beside it; a module that fails to import, a plain function or a case that is not a
    function each name workload.kernel (some were tracebacks)."""
    from kernbench.errors import ConfigError
    from kernbench.triton.workload import case_function

    (tmp_path / f"{kernel.split(':')[0]}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as err:
        case_function(kernel)
    assert str(err.value).startswith(f"workload.kernel: {message}"), str(err.value)


def test_a_plain_function_as_kernel_is_one_line_through_the_app(tmp_path, run_app):
    (tmp_path / "notkernel.py").write_text(NOT_A_KERNEL)
    run = run_app("topology=small", "workload=triton", "workload.kernel=notkernel:scale")
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "kernbench: error: workload.kernel: notkernel:scale: 'scale' is a function,"
        " not a @triton.jit function"
    ]
    assert [r["status"] for r in run.rows()] == ["error"]
