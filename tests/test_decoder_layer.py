"""``workload=decoder_layer``: the step's output equals torch's on every address model
and channel mapping, its row is the sum of its launch rows, and its rules name the key.

A tiny layer on topology=small (4 PEs): 2 sequences after 5 tokens (6 slots, KV tiles
of 4: a masked tail), 4 query heads and 2 KV heads of 16, hidden 64, ffn 96.
"""

from __future__ import annotations

import copy
import functools

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from kernbench.config.store import conf_dir, register_configs
from kernbench.config.validate import validate
from kernbench.errors import ConfigError
from kernbench.sim.system import System
from kernbench.triton import decoder
from kernbench.triton.accelerator import compose_config

TINY = [
    "topology=small",
    "workload=decoder_layer",
    "workload.batch=2",
    "workload.context_tokens=5",
    "workload.hidden=64",
    "workload.heads=4",
    "workload.kv_heads=2",
    "workload.head_dim=16",
    "workload.ffn=96",
    "workload.block_n=16",
    "workload.block_k=32",
    "workload.attn_block_n=4",
    "workload.block_heads=2",
    "workload.block_size=64",
]
STEPS = [
    "attn_norm",
    "qkv_proj",
    "rotary_q",
    "rotary_k",
    "v_append",
    "attention",
    "o_proj",
    "attn_residual",
    "mlp_norm",
    "gate_proj",
    "up_proj",
    "silu_mul",
    "down_proj",
    "mlp_residual",
]


@functools.cache
def step(*overrides: str) -> decoder.Outcome:
    """The tiny layer's step (once per set of overrides in this module: tests only read)."""
    cfg = compose_config([*TINY, *overrides])
    return decoder.run_step(System(cfg), cfg.workload)


@pytest.mark.parametrize("mapping", ["n_to_one", "one_to_one"])
@pytest.mark.parametrize("model", ["pa", "va", "la"])
def test_output_equals_torch_on_every_address_model_and_mapping(model, mapping):
    out = step("workload.dtype=float32", f"address={model}", f"channel_mapping={mapping}")
    torch.testing.assert_close(out.output, out.expected)  # float32's tolerance
    row, launches = out.result.metrics, out.result.kernels
    assert row["max_abs_error"] == (out.output.double() - out.expected.double()).abs().max()
    assert [r["kernel"] for r in launches] == STEPS
    assert (row["install_bytes"] > 0) == (model != "pa")  # PA installs nothing
    for r in launches:  # a property: no launch beats its roofline (dispatch at its default)
        assert r["kernel_latency_ns"] >= r["roofline_bound_ns"] > 0, r


def test_float16_output_is_torch_within_float16_rounding():
    # 14 kernels each round their output to float16, in places in another order than
    # torch: float16's relative tolerance (1e-3, about one ulp) and one ulp of 1.0
    # absolute, for outputs near zero that sums of rounded terms leave
    out = step("workload.placement.weights=replicate")
    assert out.output.dtype == torch.float16
    torch.testing.assert_close(out.output, out.expected, rtol=1e-3, atol=2**-10)


def test_the_row_sums_its_launches_and_names_the_longest():
    out = step("workload.dtype=float32", "address=la", "channel_mapping=n_to_one")
    row, launches = out.result.metrics, out.result.kernels
    latency = sum(r["kernel_latency_ns"] for r in launches)
    assert row["kernel_latency_ns"] == pytest.approx(latency, rel=1e-12)
    for key in ("commands", "dma_commands", "bytes_moved", "flops", "math_elements"):
        assert row[key] == sum(r[key] for r in launches)
    longest = max(launches, key=lambda r: r["kernel_latency_ns"])
    assert row["dominant_kernel"] == longest["kernel"]
    assert row["dominant_kernel_share"] == longest["kernel_latency_ns"] / row["kernel_latency_ns"]
    assert row["roofline_bound_ns"] == sum(r["roofline_bound_ns"] for r in launches)
    # 5 GEMM launches (the projections) and one attention of 2 dots per KV tile
    assert sum(r["gemm_commands"] > 0 for r in launches) == 6


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("workload.heads=6", "workload.heads"),  # 6 / 2 = 3 rows: not a power of two
        ("workload.kv_heads=3", "workload.heads"),  # 4 / 3
        ("workload.head_dim=24", "workload.head_dim"),
        ("workload.block_k=48", "workload.block_k"),
        ("workload.dtype=bfloat16", "workload.dtype"),
        ("workload.placement.kv_cache=replicate", "workload.placement.kv_cache"),
        ("workload.placement.weights=diagonal", "workload.placement.weights"),
        ("workload.context_tokens=-1", "workload.context_tokens"),
        ("workload.hidden=400000000", "workload.hidden"),  # more than the HBM holds
    ],
)
def test_bad_shapes_name_their_key(tiny_typed, override, key):
    cfg = copy.deepcopy(tiny_typed)
    where, _, value = override.partition("=")
    parent, _, name = where.removeprefix("workload.").rpartition(".")
    node = getattr(cfg.workload, parent) if parent else cfg.workload
    setattr(node, name, type(getattr(node, name))(value))
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert err.value.key == key


@pytest.fixture(scope="module")
def tiny_typed():
    """The tiny layer's typed config, composed once (each case sets one key on a copy)."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        return OmegaConf.to_object(compose(config_name="config", overrides=TINY))


def test_a_rerun_is_served_from_the_point_cache_with_its_launch_rows(compose_cfg, tmp_path):
    """A decoder point's output is its row and its launch rows: the cache stores both,
    so a rerun of the same point writes the same kernels.parquet without simulating
    (cached True, no sim_wall_s); a launch row that is not what kernels.parquet holds
    (a negative latency, under a checksum that matches it) is discarded and the point
    simulated again."""
    import json

    import pyarrow.parquet as pq

    from kernbench.job import run_job
    from kernbench.sweep import cache as cache_mod
    from kernbench.sweep.cache import PointCache

    cfg, store = compose_cfg(*TINY, "address=va"), PointCache(tmp_path / "cache")
    runs = [tmp_path / name for name in ("first", "served", "forged")]
    assert run_job(cfg, runs[0], cache=store) == "ok"
    assert run_job(cfg, runs[1], cache=store) == "ok"
    [entry] = sorted((tmp_path / "cache").rglob("*.json"))
    stored = json.loads(entry.read_text())
    stored["launches"][3]["kernel_latency_ns"] = -1.0  # with a checksum that matches it
    stored["checksum"] = cache_mod._checksum(stored["metrics"], stored["launches"])
    entry.write_text(json.dumps(stored))
    assert run_job(cfg, runs[2], cache=store) == "ok"

    rows = [pq.read_table(run / "result.parquet").to_pylist()[0] for run in runs]
    launches = [pq.read_table(run / "kernels.parquet").to_pylist() for run in runs]
    assert [r["cached"] for r in rows] == [False, True, False]
    assert rows[1]["sim_wall_s"] is None and rows[2]["sim_wall_s"] > 0
    assert [r["kernel"] for r in launches[1]] == STEPS
    assert launches[0] == launches[1] == launches[2]
    volatile = {"cached", "sim_wall_s", "wall_s"}
    same = [{k: v for k, v in r.items() if k not in volatile} for r in rows]
    assert same[0] == same[1] == same[2]
