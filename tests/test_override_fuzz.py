"""Issue 21, "no input loses a table": random override values on schema keys.

Every value of every kind (integers beyond 64 bits, negative, zero, NaN, inf, -inf,
1e-300, 1e308, text, lists, empty) on keys drawn from the schema
(:func:`kernbench.cli.keys.schema_keys`) must give either a valid run (exit 0, its
row ``ok`` with every number finite and within 64 bits) or exit 1 with exactly one
line on stderr, ``kernbench: error: ...`` naming a key the example set: never a
traceback, a hang, Hydra's multi-line report, or an ``ok`` row with ``inf``.

Single runs go through ``tests/fuzz_driver.py``: one subprocess per test that runs each
example as ``kernbench <overrides>`` does (the pre-Hydra check, Hydra's composition,
``run_job``), so Hydra's global state is initialised there once and never reset here.
The sweep test runs the real ``kernbench -m`` on a few drawn values.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kernbench.cli.keys import schema_keys, workload_keys
from kernbench.config.unread import READ_BY_PATTERN
from tests.test_sweep import merged, run_sweep

DRIVER = Path(__file__).with_name("fuzz_driver.py")
ROOT = DRIVER.parent.parent
EXAMPLE_TIMEOUT_S = 60.0  # one example: a hang if the driver has not answered by then
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# A small valid base each example's overrides follow (the last value of a key wins):
# 4 PEs, 4 accesses each, so a valid run is milliseconds.
STREAM_BASE = [
    "topology=small",
    "workload.bytes_per_pe=4096",
    "workload.access_bytes=1024",
]
GQA_BASE = [
    "topology=small",
    "workload=gqa_opt2",
    "workload.seq_tokens=256",
    "workload.tile_tokens=128",
    "workload.head_dim=16",
]
# Keys not fuzzed: output locations (precheck has its own tests, and a run here writes
# where the driver says) and the cache switch (the driver never uses the cache).
SKIPPED = ("paths.", "cache")


def _keys(workload_schema: str) -> list[str]:
    own = workload_keys(workload_schema)
    return sorted(
        name
        for name in schema_keys()
        if not name.startswith(SKIPPED) and (not name.startswith("workload.") or name in own)
    )


STREAM_KEYS = _keys("base_stream")
GQA_KEYS = _keys("base_gqa")

SPECIAL_INTS = [0, -1, 1, 2, 3, 7, 2**31, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**30]
SPECIAL_FLOATS = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    1e-300,
    5e-324,
    1e308,
    1.7976931348623157e308,
    -1e308,
    1e-3,
    0.5,
]


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


_TEXT = st.text(
    alphabet=st.characters(codec="ascii", categories=("L", "N", "P", "S", "Zs")), max_size=12
)
VALUE_TEXT = st.one_of(
    st.sampled_from(SPECIAL_INTS).map(str),
    st.integers().map(str),
    st.sampled_from(SPECIAL_FLOATS).map(_float_text),
    st.floats().map(_float_text),
    st.sampled_from(
        ["", "null", "true", "false", "[]", "{}", "''", "all", "abc", "1e400", "1,2", "a b"]
    ),
    _TEXT,
    _TEXT.map(lambda s: "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"),
    st.lists(st.integers(-3, 3), max_size=3).map(lambda v: "[" + ",".join(map(str, v)) + "]"),
)


def plausible(key: str) -> st.SearchStrategy[str]:
    """Values of the key's own type in a range a user might try, so that valid runs
    (and the limits' edges) are drawn as often as the wild values."""
    spec = schema_keys()[key]
    if spec.choices:
        return st.sampled_from(spec.choices)
    if spec.type == "int":
        small = st.integers(0, 64) | st.sampled_from([2**k for k in range(4, 31, 2)])
        return small.map(str)
    if spec.type == "float":
        return st.floats(1e-4, 2e3).map(_float_text) | st.sampled_from(["0", "1e-3", "1e3"])
    if spec.type == "bool":
        return st.sampled_from(["true", "false"])
    return st.sampled_from(["all", "1", "2", "4", "5", "x"])


@st.composite
def overrides(draw, keys: list[str]) -> list[tuple[str, str]]:
    chosen = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3, unique=True))
    return [(key, draw(plausible(key) | VALUE_TEXT)) for key in chosen]


class Driver:
    """The fuzz driver subprocess: one example in, its outcome out."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log.open("ab"),
            text=True,
            cwd=ROOT,
            env=env,
        )

    def run(self, argv: list[str], max_work: int = 20_000) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        proc = self.proc
        proc.stdin.write(json.dumps({"argv": argv, "max_work": max_work}) + "\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(EXAMPLE_TIMEOUT_S)
        if not ready:
            self.stop()
            pytest.fail(f"kernbench {' '.join(argv)}: no answer in {EXAMPLE_TIMEOUT_S} s (hang)")
        line = proc.stdout.readline()
        if not line:
            self.stop()
            tail = self.log.read_text(errors="replace")[-3000:]
            pytest.fail(f"kernbench {' '.join(argv)}: the driver died\n{tail}")
        return json.loads(line)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    d = Driver(tmp_path_factory.mktemp("fuzz") / "driver.log")
    yield d
    d.stop()


def _finite(value) -> bool:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    if isinstance(value, float):
        return math.isfinite(value)
    return True


def check_outcome(argv: list[str], keys: list[str], out: dict) -> None:
    """A valid run, or one error line naming a key the example set."""
    where = f"kernbench {' '.join(argv)}"
    lines = out["stderr"].splitlines()
    if out["exit"] == 0:
        assert not [x for x in lines if not x.startswith("kernbench: warning:")], (where, lines)
        if out["ran"]:
            [row] = out["rows"]
            assert row["status"] == "ok", (where, row["error"])
            bad = {k: v for k, v in row.items() if not _finite(v)}
            assert not bad, (where, bad)
        return
    assert out["exit"] == 1, (where, out["exit"], lines)
    assert len(lines) == 1, (where, lines)
    [line] = lines
    assert line.startswith("kernbench: error: "), (where, line)
    assert any(k in line for k in keys), (where, line)
    assert all(r["status"] == "error" for r in out["rows"]), (where, out["rows"])


def _fuzz(driver: Driver, base: list[str], pairs: list[tuple[str, str]]) -> None:
    argv = [*base, *(f"{k}={v}" for k, v in pairs)]
    out = driver.run(argv)
    event("ran ok" if out["exit"] == 0 and out["ran"] else f"exit {out['exit']}")
    check_outcome(argv, [k for k, _ in pairs], out)


FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(pairs=overrides(STREAM_KEYS))
def test_stream_overrides_never_lose_a_table(driver, pairs):
    _fuzz(driver, STREAM_BASE, pairs)


@settings(FUZZ, max_examples=60)
@given(pairs=overrides(GQA_KEYS))
def test_gqa_overrides_never_lose_a_table(driver, pairs):
    _fuzz(driver, GQA_BASE, pairs)


TRITON_BASE = [
    "topology=small",
    "workload=triton",
    *(
        f"workload.{k}={v}"
        for k, v in dict(
            size=64, block_size=16, rows=4, cols=8, m=16, n=16, k=16, block_m=16, block_n=16,
            block_k=16, num_heads=2, num_kv_heads=1, seq_len=16, head_dim=16,
        ).items()
    ),
]  # fmt: skip
TRITON_KEYS = [k for k in _keys("base_triton") if k.startswith("workload.")] + [
    "topology.pes_per_cube",
    "topology.cube.memory_map.hbm_channel_bytes",
    "address.model",
]
KERNELS = [
    "vector_add",
    "softmax",
    "matmul",
    "layer_norm",
    "decode_attention",
    "os:path",  # not a @triton.jit function, no case function
    "json:loads",
    "kernbench.triton.kernels:vector_add",  # a kernel without its case beside it
    "kernbench.triton.cases:vector_add",  # a case function, not a kernel
    "nosuch.module:fn",
    "kernbench.triton.kernels:nosuch",
    "../x:y",
]


@pytest.mark.slow
@settings(FUZZ, max_examples=40)
@given(data=st.data(), pairs=overrides(TRITON_KEYS))
def test_triton_overrides_never_lose_a_table(driver, data, pairs):
    pytest.importorskip("triton")
    kernel = data.draw(st.sampled_from(KERNELS), label="kernel")
    pairs = [("workload.kernel", kernel), *[p for p in pairs if p[0] != "workload.kernel"]]
    _fuzz(driver, TRITON_BASE, pairs)


SWEEP_BASE = ("topology=small", "workload.bytes_per_pe=4096", "workload.access_bytes=1024")
# Not the keys local traffic leaves unread (the seed, the hotspot PE): a sweep runs
# their points once (tests/test_seed_spread.py), not once per value.
SWEEP_KEYS = [k for k in STREAM_KEYS if not k.startswith("sim.") and k not in READ_BY_PATTERN]
SWEEP_VALUES = st.one_of(
    st.sampled_from(SPECIAL_INTS).map(str),
    st.sampled_from(SPECIAL_FLOATS).map(_float_text),
    st.sampled_from(["abc", "''", "null", "true"]),
)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), key=st.sampled_from(SWEEP_KEYS))
def test_a_sweep_of_drawn_values_keeps_a_row_per_point(tmp_path_factory, data, key):
    values = data.draw(st.lists(plausible(key) | SWEEP_VALUES, min_size=2, max_size=3, unique=True))
    tmp_path = tmp_path_factory.mktemp("sweep")
    proc, sweep = run_sweep(tmp_path, *SWEEP_BASE, f"{key}={','.join(values)}", "cache=false")
    lines = proc.stderr.splitlines()
    errors = [x for x in lines if x.startswith("kernbench: error:")]
    assert "Traceback" not in proc.stderr, proc.stderr
    if not (sweep / "results.parquet").exists():  # refused before anything ran
        event("refused")
        assert proc.returncode == 1, proc.stderr
        assert lines == errors and len(errors) == 1, lines
        assert key in errors[0], errors
        assert not sweep.exists()
        return
    rows = merged(sweep)
    event("swept")
    assert sorted(r["job_num"] for r in rows) == list(range(len(values)))
    for row in rows:
        if row["status"] == "ok":
            assert all(_finite(v) for v in row.values()), row
        else:
            assert row["error"].startswith(key) or key in row["error"], row["error"]
    failed = any(r["status"] == "error" for r in rows)
    assert proc.returncode == (1 if failed else 0), proc.stderr
