"""Both fabric models' results pinned bit for bit (issue 23's contention-path speed work
must not move a figure): per stream point, a digest of the run's metrics row, its whole
op log and, on every other point, its trace rows (a trace turns the fair fabric's fast
path off, so both paths are pinned); the same for both GQA kernels; and the link
stretches and completion times of the fair fabric driven directly on random traffic
(flows only, and with the fast path). Triton launches are pinned by
``tests/test_triton_pinned.py``.

The digests were recorded with the code before the speed work (``python -m
tests.test_fabric_pinned`` prints them), except that the PA points' (and GQA's, which
runs under PA) were recorded again when SimPy's clock started at 0.0 instead of the int
0, so both builds print the same op log (tests/test_build.py): their op logs' first
entries print as ``0.0``, and with every op log time taken as a float all 88 digests
at main's code and after agree, in both builds. A digest that moves means a result
moved: a change that is exact only up to float rounding shows here. The 19 fair
digests of contended points (1:1 hotspot and uniform, n:1 uniform copy, the driven
runs) were recorded again when a recomputation came to cover a requester's other
queues (their age order couples them; a requester split over two components got
more than its max-min share): tests/test_fair_properties.py checks the new rates
against a solve of every queue at every recomputation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench import simulate
from kernbench.config.schema import ExecPath, FabricModel, StreamPattern
from kernbench.config.validate import validate
from tests.support import make_cfg
from tests.test_cost_model import gqa_cfg
from tests.test_fair_properties import drive, topology

FABRICS = ("fair", "reservation")
MAPPINGS = ("n:1", "1:1")
PATTERNS = ("local", "neighbor", "hotspot", "uniform", "cross_cube")
SIZES = (512, 2048, 65536)
OUTSTANDING = (1, 4)
PES = (1, 16)
MODELS = ("pa", "va", "la")
OPS = ("read", "write", "copy")


def stream_points() -> list[tuple[object, ...]]:
    """Every fabric x mapping x pattern x access size x depth x PE count. Four switches
    rotate over the points: the address model, the op, dispatch cost (free dispatch
    puts many requests at one instant) and the trace."""
    grid = itertools.product(FABRICS, MAPPINGS, PATTERNS, SIZES, OUTSTANDING, PES)
    return [(*p, MODELS[k % 3], OPS[k % 5 % 3], k % 4 < 2, k % 2 == 0) for k, p in enumerate(grid)]


def stream_digest(
    tmp: Path, fabric, mapping, pattern, size, outstanding, pes, model, op, zero_cost, trace
) -> str:
    accesses = 4 if size == 65536 else 12
    cfg = make_cfg(
        one_to_one=mapping == "1:1",
        zero_cost=zero_cost,
        model=model,
        fabric=fabric,
        op=op,
        access_bytes=size,
        bytes_per_pe=size * accesses,
        outstanding=outstanding,
        active_pes=pes,
        pattern=StreamPattern(pattern),
    )
    return run_digest(tmp, cfg, trace)


def run_digest(tmp: Path, cfg, trace: bool) -> str:
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True, trace=trace)
    path = tmp / "trace.parquet"
    result = simulate.run(cfg, path)
    h = hashlib.sha256()
    h.update(repr(sorted(result.metrics.items())).encode())
    h.update(repr(result.oplog).encode())
    assert result.oplog
    if trace:
        rows = pq.read_table(path).to_pylist()
        assert rows
        h.update(repr(rows).encode())
    return h.hexdigest()[:16]


GQA_POINTS = [
    (name, fabric, trace)
    for name in ("gqa_opt2", "gqa_opt3")
    for fabric in FABRICS
    for trace in (False, True)
]


def gqa_digest(tmp: Path, name: str, fabric: str, trace: bool) -> str:
    cfg = gqa_cfg(name, seq_tokens=512, exec_path=ExecPath.replay.value)
    cfg.sim.fabric = FabricModel(fabric)
    return run_digest(tmp, validate(cfg), trace)


DRIVEN = [(seed, one_to_one, fast) for seed in range(4) for one_to_one in (False, True)
          for fast in (False, True)]  # fmt: skip


def driven_digest(seed: int, one_to_one: bool, fast: bool) -> str:
    """Random requests issued straight into the fair fabric: every transfer's
    completion, and without the fast path every link stretch (time, rate) recorded."""
    rng = random.Random(seed)
    graph = topology(4, 2, 2, one_to_one)
    reqs = [
        (rng.randrange(8), rng.randrange(8), rng.randrange(6), rng.choice((256, 2048, 9000)),
         rng.choice((0.0, 0.0, 3.5, 40.0)))
        for _ in range(60)
    ]  # fmt: skip
    fabric, ends = drive(graph, reqs, fast=fast, record=not fast)  # recording: no fast path
    h = hashlib.sha256()
    h.update(repr(ends).encode())
    h.update(repr(fabric.segments).encode())
    h.update(repr(fabric.bytes_carried).encode())
    return h.hexdigest()[:16]


PINNED: dict[tuple[object, ...], str] = {
    ("fair", "n:1", "local", 512, 1, 1, "pa", "read", True, True): "246642f750966e5f",
    ("fair", "n:1", "local", 512, 1, 16, "va", "write", True, False): "ff65ce88bd129d54",
    ("fair", "n:1", "local", 512, 4, 1, "la", "copy", False, True): "bf4c6927a006e897",
    ("fair", "n:1", "local", 512, 4, 16, "pa", "read", False, False): "20bc74cc95e7959b",
    ("fair", "n:1", "local", 2048, 1, 1, "va", "write", True, True): "71c5348a0c3520bf",
    ("fair", "n:1", "local", 2048, 1, 16, "la", "read", True, False): "90493fd5edf11528",
    ("fair", "n:1", "local", 2048, 4, 1, "pa", "write", False, True): "111c45513ce9aaff",
    ("fair", "n:1", "local", 2048, 4, 16, "va", "copy", False, False): "87c558bad881e4be",
    ("fair", "n:1", "local", 65536, 1, 1, "la", "read", True, True): "60c20049e6783041",
    ("fair", "n:1", "local", 65536, 1, 16, "pa", "write", True, False): "c237b235cf3a6723",
    ("fair", "n:1", "local", 65536, 4, 1, "va", "read", False, True): "406e7b8aa3c9e014",
    ("fair", "n:1", "local", 65536, 4, 16, "la", "write", False, False): "bf953ae19164bb4c",
    ("fair", "n:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "221cf9592edcbc38",
    ("fair", "n:1", "neighbor", 512, 1, 16, "va", "read", True, False): "be1d732ee9d910a8",
    ("fair", "n:1", "neighbor", 512, 4, 1, "la", "write", False, True): "3811d07426af79fc",
    ("fair", "n:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "897e4a3306ca7983",
    ("fair", "n:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "84859c021ddc551a",
    ("fair", "n:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "8eb430f6ed82ee7a",
    ("fair", "n:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "c28d44ba88e814ad",
    ("fair", "n:1", "neighbor", 2048, 4, 16, "va", "write", False, False): "0d6afda9d3bb41b8",
    ("fair", "n:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "63a8618616b71b31",
    ("fair", "n:1", "neighbor", 65536, 1, 16, "pa", "write", True, False): "62885070f44299d6",
    ("fair", "n:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "e0d5e9050c3b90d2",
    ("fair", "n:1", "neighbor", 65536, 4, 16, "la", "read", False, False): "045a2cbd68bdb4f2",
    ("fair", "n:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "6a2e942584b77549",
    ("fair", "n:1", "hotspot", 512, 1, 16, "va", "read", True, False): "ad6e95aff3bb9fb6",
    ("fair", "n:1", "hotspot", 512, 4, 1, "la", "write", False, True): "d6aa23bb4f5ebc0a",
    ("fair", "n:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "5f26a4c37a7fb152",
    ("fair", "n:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "3df528935ad0b45e",
    ("fair", "n:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "e13a2e72ff35eb67",
    ("fair", "n:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "4b6e813e727affd6",
    ("fair", "n:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "363a9ba5ce53863c",
    ("fair", "n:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "c3a98330d5d5cbad",
    ("fair", "n:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "032e32f34e013b1e",
    ("fair", "n:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "dedebe2b586fa910",
    ("fair", "n:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "98c5fa94962e2d0a",
    ("fair", "n:1", "uniform", 512, 1, 1, "pa", "write", True, True): "eb3670176e7b940a",
    ("fair", "n:1", "uniform", 512, 1, 16, "va", "copy", True, False): "e081de44c26489f5",
    ("fair", "n:1", "uniform", 512, 4, 1, "la", "read", False, True): "e7c27fd4255a5edd",
    ("fair", "n:1", "uniform", 512, 4, 16, "pa", "write", False, False): "fa5c8b04a2eb6736",
    ("fair", "n:1", "uniform", 2048, 1, 1, "va", "read", True, True): "94f6d35f472bd390",
    ("fair", "n:1", "uniform", 2048, 1, 16, "la", "write", True, False): "0d44b1fcd5a02b4a",
    ("fair", "n:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "e37307e0cf66dad5",
    ("fair", "n:1", "uniform", 2048, 4, 16, "va", "read", False, False): "8548282a7d42a593",
    ("fair", "n:1", "uniform", 65536, 1, 1, "la", "write", True, True): "6039fae077482071",
    ("fair", "n:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "9e1aead795ffb02a",
    ("fair", "n:1", "uniform", 65536, 4, 1, "va", "write", False, True): "ff5249eb97ef5af9",
    ("fair", "n:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "fbb5eac49f343cc5",
    ("fair", "n:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "d5f91a2368ea5eb1",
    ("fair", "n:1", "cross_cube", 512, 1, 16, "va", "write", True, False): "a9cbe7871da00944",
    ("fair", "n:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "552f15c15b37c3f4",
    ("fair", "n:1", "cross_cube", 512, 4, 16, "pa", "write", False, False): "f801abd684f268c2",
    ("fair", "n:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "f86799ba46ecffd7",
    ("fair", "n:1", "cross_cube", 2048, 1, 16, "la", "read", True, False): "c13152553f16eab4",
    ("fair", "n:1", "cross_cube", 2048, 4, 1, "pa", "write", False, True): "e55d06af17a95bfd",
    ("fair", "n:1", "cross_cube", 2048, 4, 16, "va", "read", False, False): "e9506346c076c039",
    ("fair", "n:1", "cross_cube", 65536, 1, 1, "la", "write", True, True): "1acc97a9274b3f50",
    ("fair", "n:1", "cross_cube", 65536, 1, 16, "pa", "copy", True, False): "e6f927a79d1ed345",
    ("fair", "n:1", "cross_cube", 65536, 4, 1, "va", "read", False, True): "5b5bbe50436b9564",
    ("fair", "n:1", "cross_cube", 65536, 4, 16, "la", "write", False, False): "954353ffdb9083e8",
    ("fair", "1:1", "local", 512, 1, 1, "pa", "read", True, True): "5e5989d15c195f01",
    ("fair", "1:1", "local", 512, 1, 16, "va", "write", True, False): "a75845e55c25d8fe",
    ("fair", "1:1", "local", 512, 4, 1, "la", "copy", False, True): "655186309afe8608",
    ("fair", "1:1", "local", 512, 4, 16, "pa", "read", False, False): "d481ecd9aac8b0a0",
    ("fair", "1:1", "local", 2048, 1, 1, "va", "write", True, True): "cd93747b5c26ec2a",
    ("fair", "1:1", "local", 2048, 1, 16, "la", "read", True, False): "ef1ccadc623bc714",
    ("fair", "1:1", "local", 2048, 4, 1, "pa", "write", False, True): "6d3a331657f80db9",
    ("fair", "1:1", "local", 2048, 4, 16, "va", "copy", False, False): "9cd9d5c351ed9c99",
    ("fair", "1:1", "local", 65536, 1, 1, "la", "read", True, True): "5ec1bc160d42514e",
    ("fair", "1:1", "local", 65536, 1, 16, "pa", "write", True, False): "3b5ceb0276f6d6bf",
    ("fair", "1:1", "local", 65536, 4, 1, "va", "read", False, True): "bb250463813951e2",
    ("fair", "1:1", "local", 65536, 4, 16, "la", "write", False, False): "385e8dde3df50f66",
    ("fair", "1:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "abbfb4629b5770c5",
    ("fair", "1:1", "neighbor", 512, 1, 16, "va", "read", True, False): "9cf0a3b1d775327a",
    ("fair", "1:1", "neighbor", 512, 4, 1, "la", "write", False, True): "68c160b21c54f17c",
    ("fair", "1:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "43802f26e8ca4def",
    ("fair", "1:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "4472bd007fbad7ca",
    ("fair", "1:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "8eb430f6ed82ee7a",
    ("fair", "1:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "26cd236dad1d4cdd",
    ("fair", "1:1", "neighbor", 2048, 4, 16, "va", "write", False, False): "0d6afda9d3bb41b8",
    ("fair", "1:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "6ee5b7e4f300f048",
    ("fair", "1:1", "neighbor", 65536, 1, 16, "pa", "write", True, False): "62885070f44299d6",
    ("fair", "1:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "273295adc0eae460",
    ("fair", "1:1", "neighbor", 65536, 4, 16, "la", "read", False, False): "045a2cbd68bdb4f2",
    ("fair", "1:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "54de7e9e48e01218",
    ("fair", "1:1", "hotspot", 512, 1, 16, "va", "read", True, False): "8c492cee159b2061",
    ("fair", "1:1", "hotspot", 512, 4, 1, "la", "write", False, True): "7e5c71994bc66149",
    ("fair", "1:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "27871fbb8897c29b",
    ("fair", "1:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "aee7aa61af0d59af",
    ("fair", "1:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "f6aa42b6a8a05adf",
    ("fair", "1:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "93994b0b2258050e",
    ("fair", "1:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "d4052272cc1b80a2",
    ("fair", "1:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "0cecf3f0db781444",
    ("fair", "1:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "83c30103d8fe5c24",
    ("fair", "1:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "ac65b8b0267fdcbe",
    ("fair", "1:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "5891ac9aea9ffe89",
    ("fair", "1:1", "uniform", 512, 1, 1, "pa", "write", True, True): "0e73a8897425347c",
    ("fair", "1:1", "uniform", 512, 1, 16, "va", "copy", True, False): "21627dc0dcc2e077",
    ("fair", "1:1", "uniform", 512, 4, 1, "la", "read", False, True): "e1a012f7b6464b15",
    ("fair", "1:1", "uniform", 512, 4, 16, "pa", "write", False, False): "84b83609b8ac82c6",
    ("fair", "1:1", "uniform", 2048, 1, 1, "va", "read", True, True): "f8d5c8b971fe828d",
    ("fair", "1:1", "uniform", 2048, 1, 16, "la", "write", True, False): "4e3632fe66cba1b9",
    ("fair", "1:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "63cb1078141e5452",
    ("fair", "1:1", "uniform", 2048, 4, 16, "va", "read", False, False): "2a6badf0f32889bd",
    ("fair", "1:1", "uniform", 65536, 1, 1, "la", "write", True, True): "daa77cd95d380239",
    ("fair", "1:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "ecee43117e398c7b",
    ("fair", "1:1", "uniform", 65536, 4, 1, "va", "write", False, True): "48dedc911346ba64",
    ("fair", "1:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "1252167ba84b8dbc",
    ("fair", "1:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "c61bf12a5abd10ed",
    ("fair", "1:1", "cross_cube", 512, 1, 16, "va", "write", True, False): "a9cbe7871da00944",
    ("fair", "1:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "b5113bd2cfce8bea",
    ("fair", "1:1", "cross_cube", 512, 4, 16, "pa", "write", False, False): "f801abd684f268c2",
    ("fair", "1:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "f3130383471b0ce2",
    ("fair", "1:1", "cross_cube", 2048, 1, 16, "la", "read", True, False): "c13152553f16eab4",
    ("fair", "1:1", "cross_cube", 2048, 4, 1, "pa", "write", False, True): "895c72864f8ce292",
    ("fair", "1:1", "cross_cube", 2048, 4, 16, "va", "read", False, False): "e9506346c076c039",
    ("fair", "1:1", "cross_cube", 65536, 1, 1, "la", "write", True, True): "fe4fe85295756eb1",
    ("fair", "1:1", "cross_cube", 65536, 1, 16, "pa", "copy", True, False): "e6f927a79d1ed345",
    ("fair", "1:1", "cross_cube", 65536, 4, 1, "va", "read", False, True): "3e974201aa781339",
    ("fair", "1:1", "cross_cube", 65536, 4, 16, "la", "write", False, False): "954353ffdb9083e8",
    ("reservation", "n:1", "local", 512, 1, 1, "pa", "read", True, True): "246642f750966e5f",
    ("reservation", "n:1", "local", 512, 1, 16, "va", "write", True, False): "ff65ce88bd129d54",
    ("reservation", "n:1", "local", 512, 4, 1, "la", "copy", False, True): "bf4c6927a006e897",
    ("reservation", "n:1", "local", 512, 4, 16, "pa", "read", False, False): "20bc74cc95e7959b",
    ("reservation", "n:1", "local", 2048, 1, 1, "va", "write", True, True): "71c5348a0c3520bf",
    ("reservation", "n:1", "local", 2048, 1, 16, "la", "read", True, False): "90493fd5edf11528",
    ("reservation", "n:1", "local", 2048, 4, 1, "pa", "write", False, True): "111c45513ce9aaff",
    ("reservation", "n:1", "local", 2048, 4, 16, "va", "copy", False, False): "87c558bad881e4be",
    ("reservation", "n:1", "local", 65536, 1, 1, "la", "read", True, True): "60c20049e6783041",
    ("reservation", "n:1", "local", 65536, 1, 16, "pa", "write", True, False): "c237b235cf3a6723",
    ("reservation", "n:1", "local", 65536, 4, 1, "va", "read", False, True): "406e7b8aa3c9e014",
    ("reservation", "n:1", "local", 65536, 4, 16, "la", "write", False, False): "bf953ae19164bb4c",
    ("reservation", "n:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "221cf9592edcbc38",
    ("reservation", "n:1", "neighbor", 512, 1, 16, "va", "read", True, False): "be1d732ee9d910a8",
    ("reservation", "n:1", "neighbor", 512, 4, 1, "la", "write", False, True): "3811d07426af79fc",
    ("reservation", "n:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "897e4a3306ca7983",
    ("reservation", "n:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "84859c021ddc551a",
    ("reservation", "n:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "8eb430f6ed82ee7a",
    ("reservation", "n:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "c28d44ba88e814ad",
    (
        "reservation",
        "n:1",
        "neighbor",
        2048,
        4,
        16,
        "va",
        "write",
        False,
        False,
    ): "0d6afda9d3bb41b8",
    ("reservation", "n:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "63a8618616b71b31",
    (
        "reservation",
        "n:1",
        "neighbor",
        65536,
        1,
        16,
        "pa",
        "write",
        True,
        False,
    ): "62885070f44299d6",
    ("reservation", "n:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "e0d5e9050c3b90d2",
    (
        "reservation",
        "n:1",
        "neighbor",
        65536,
        4,
        16,
        "la",
        "read",
        False,
        False,
    ): "045a2cbd68bdb4f2",
    ("reservation", "n:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "6a2e942584b77549",
    ("reservation", "n:1", "hotspot", 512, 1, 16, "va", "read", True, False): "e17a937215adcbb7",
    ("reservation", "n:1", "hotspot", 512, 4, 1, "la", "write", False, True): "d6aa23bb4f5ebc0a",
    ("reservation", "n:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "a26e3f419404f5ae",
    ("reservation", "n:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "3df528935ad0b45e",
    ("reservation", "n:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "745ac94b92e72c80",
    ("reservation", "n:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "4b6e813e727affd6",
    ("reservation", "n:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "b43088b080169940",
    ("reservation", "n:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "c3a98330d5d5cbad",
    ("reservation", "n:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "3c08b88ea9a72359",
    ("reservation", "n:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "dedebe2b586fa910",
    ("reservation", "n:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "6b064d28cf9d2679",
    ("reservation", "n:1", "uniform", 512, 1, 1, "pa", "write", True, True): "eb3670176e7b940a",
    ("reservation", "n:1", "uniform", 512, 1, 16, "va", "copy", True, False): "6f6c062f647b6a60",
    ("reservation", "n:1", "uniform", 512, 4, 1, "la", "read", False, True): "e7c27fd4255a5edd",
    ("reservation", "n:1", "uniform", 512, 4, 16, "pa", "write", False, False): "e3a03e17ad680276",
    ("reservation", "n:1", "uniform", 2048, 1, 1, "va", "read", True, True): "94f6d35f472bd390",
    ("reservation", "n:1", "uniform", 2048, 1, 16, "la", "write", True, False): "0f6df7e20b09caa1",
    ("reservation", "n:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "d96279e59e011e20",
    ("reservation", "n:1", "uniform", 2048, 4, 16, "va", "read", False, False): "7ac3b8c2e686345a",
    ("reservation", "n:1", "uniform", 65536, 1, 1, "la", "write", True, True): "6039fae077482071",
    ("reservation", "n:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "4125bd79a4586f14",
    ("reservation", "n:1", "uniform", 65536, 4, 1, "va", "write", False, True): "3e7adf3ef18ca0aa",
    ("reservation", "n:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "da7979e10932c6a6",
    ("reservation", "n:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "d5f91a2368ea5eb1",
    (
        "reservation",
        "n:1",
        "cross_cube",
        512,
        1,
        16,
        "va",
        "write",
        True,
        False,
    ): "f65a5b7445a3f775",
    ("reservation", "n:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "552f15c15b37c3f4",
    (
        "reservation",
        "n:1",
        "cross_cube",
        512,
        4,
        16,
        "pa",
        "write",
        False,
        False,
    ): "02d4a9cf8debbf00",
    ("reservation", "n:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "f86799ba46ecffd7",
    (
        "reservation",
        "n:1",
        "cross_cube",
        2048,
        1,
        16,
        "la",
        "read",
        True,
        False,
    ): "1dff080c60ba96d7",
    (
        "reservation",
        "n:1",
        "cross_cube",
        2048,
        4,
        1,
        "pa",
        "write",
        False,
        True,
    ): "e55d06af17a95bfd",
    (
        "reservation",
        "n:1",
        "cross_cube",
        2048,
        4,
        16,
        "va",
        "read",
        False,
        False,
    ): "df1bd8ceb9dc6080",
    (
        "reservation",
        "n:1",
        "cross_cube",
        65536,
        1,
        1,
        "la",
        "write",
        True,
        True,
    ): "1acc97a9274b3f50",
    (
        "reservation",
        "n:1",
        "cross_cube",
        65536,
        1,
        16,
        "pa",
        "copy",
        True,
        False,
    ): "9b34a846291955c8",
    (
        "reservation",
        "n:1",
        "cross_cube",
        65536,
        4,
        1,
        "va",
        "read",
        False,
        True,
    ): "5b5bbe50436b9564",
    (
        "reservation",
        "n:1",
        "cross_cube",
        65536,
        4,
        16,
        "la",
        "write",
        False,
        False,
    ): "7726ea9f53244d47",
    ("reservation", "1:1", "local", 512, 1, 1, "pa", "read", True, True): "5e5989d15c195f01",
    ("reservation", "1:1", "local", 512, 1, 16, "va", "write", True, False): "a75845e55c25d8fe",
    ("reservation", "1:1", "local", 512, 4, 1, "la", "copy", False, True): "655186309afe8608",
    ("reservation", "1:1", "local", 512, 4, 16, "pa", "read", False, False): "d481ecd9aac8b0a0",
    ("reservation", "1:1", "local", 2048, 1, 1, "va", "write", True, True): "cd93747b5c26ec2a",
    ("reservation", "1:1", "local", 2048, 1, 16, "la", "read", True, False): "ef1ccadc623bc714",
    ("reservation", "1:1", "local", 2048, 4, 1, "pa", "write", False, True): "6d3a331657f80db9",
    ("reservation", "1:1", "local", 2048, 4, 16, "va", "copy", False, False): "9cd9d5c351ed9c99",
    ("reservation", "1:1", "local", 65536, 1, 1, "la", "read", True, True): "5ec1bc160d42514e",
    ("reservation", "1:1", "local", 65536, 1, 16, "pa", "write", True, False): "3b5ceb0276f6d6bf",
    ("reservation", "1:1", "local", 65536, 4, 1, "va", "read", False, True): "bb250463813951e2",
    ("reservation", "1:1", "local", 65536, 4, 16, "la", "write", False, False): "385e8dde3df50f66",
    ("reservation", "1:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "2328a3811ad15f09",
    ("reservation", "1:1", "neighbor", 512, 1, 16, "va", "read", True, False): "5d09e3d694cddb8a",
    ("reservation", "1:1", "neighbor", 512, 4, 1, "la", "write", False, True): "2331f108313bfe30",
    ("reservation", "1:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "1098c7f885c7cd7b",
    ("reservation", "1:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "94184ca37f817155",
    ("reservation", "1:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "f67aff55fb730739",
    ("reservation", "1:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "6d12d4fd3c9300c0",
    (
        "reservation",
        "1:1",
        "neighbor",
        2048,
        4,
        16,
        "va",
        "write",
        False,
        False,
    ): "9126a469ed3c7078",
    ("reservation", "1:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "66b7fc6dc1443dd0",
    (
        "reservation",
        "1:1",
        "neighbor",
        65536,
        1,
        16,
        "pa",
        "write",
        True,
        False,
    ): "d50b87c2012eb34a",
    ("reservation", "1:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "03bffbaf01f5ef5c",
    (
        "reservation",
        "1:1",
        "neighbor",
        65536,
        4,
        16,
        "la",
        "read",
        False,
        False,
    ): "0e0468c88a039903",
    ("reservation", "1:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "54de7e9e48e01218",
    ("reservation", "1:1", "hotspot", 512, 1, 16, "va", "read", True, False): "9bb240aebb0a7890",
    ("reservation", "1:1", "hotspot", 512, 4, 1, "la", "write", False, True): "7e5c71994bc66149",
    ("reservation", "1:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "2ca41a5b899401e4",
    ("reservation", "1:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "aee7aa61af0d59af",
    ("reservation", "1:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "605d472343538aab",
    ("reservation", "1:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "93994b0b2258050e",
    ("reservation", "1:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "6c8e8fbac4cfafba",
    ("reservation", "1:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "0cecf3f0db781444",
    ("reservation", "1:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "267b3b2a7f8043a1",
    ("reservation", "1:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "ac65b8b0267fdcbe",
    ("reservation", "1:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "caa7a85c3a77317f",
    ("reservation", "1:1", "uniform", 512, 1, 1, "pa", "write", True, True): "62623bc5107a7195",
    ("reservation", "1:1", "uniform", 512, 1, 16, "va", "copy", True, False): "279893dae6919b54",
    ("reservation", "1:1", "uniform", 512, 4, 1, "la", "read", False, True): "5743fb240d52859d",
    ("reservation", "1:1", "uniform", 512, 4, 16, "pa", "write", False, False): "b61278ebdc867312",
    ("reservation", "1:1", "uniform", 2048, 1, 1, "va", "read", True, True): "56719be24c3f4554",
    ("reservation", "1:1", "uniform", 2048, 1, 16, "la", "write", True, False): "ac195da0184e87d1",
    ("reservation", "1:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "41977f75f511f8b5",
    ("reservation", "1:1", "uniform", 2048, 4, 16, "va", "read", False, False): "de5cbd3723423742",
    ("reservation", "1:1", "uniform", 65536, 1, 1, "la", "write", True, True): "e60b4d118407fd53",
    ("reservation", "1:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "36f199edfd472210",
    ("reservation", "1:1", "uniform", 65536, 4, 1, "va", "write", False, True): "6c14fcce85821f74",
    ("reservation", "1:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "4654dba4cec9b05e",
    ("reservation", "1:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "bf62840ea7826e78",
    (
        "reservation",
        "1:1",
        "cross_cube",
        512,
        1,
        16,
        "va",
        "write",
        True,
        False,
    ): "cbbc200e8275183a",
    ("reservation", "1:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "b17118e85dc214ce",
    (
        "reservation",
        "1:1",
        "cross_cube",
        512,
        4,
        16,
        "pa",
        "write",
        False,
        False,
    ): "886f45e74f81082c",
    ("reservation", "1:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "b35c758c80247aa4",
    (
        "reservation",
        "1:1",
        "cross_cube",
        2048,
        1,
        16,
        "la",
        "read",
        True,
        False,
    ): "9d3c0408dffd6f12",
    (
        "reservation",
        "1:1",
        "cross_cube",
        2048,
        4,
        1,
        "pa",
        "write",
        False,
        True,
    ): "75c367973ed0a374",
    (
        "reservation",
        "1:1",
        "cross_cube",
        2048,
        4,
        16,
        "va",
        "read",
        False,
        False,
    ): "28564b89cfb6e56c",
    (
        "reservation",
        "1:1",
        "cross_cube",
        65536,
        1,
        1,
        "la",
        "write",
        True,
        True,
    ): "9f03fccc9af95e8c",
    (
        "reservation",
        "1:1",
        "cross_cube",
        65536,
        1,
        16,
        "pa",
        "copy",
        True,
        False,
    ): "f1b59f814f139dbb",
    (
        "reservation",
        "1:1",
        "cross_cube",
        65536,
        4,
        1,
        "va",
        "read",
        False,
        True,
    ): "cd15131611a7451c",
    (
        "reservation",
        "1:1",
        "cross_cube",
        65536,
        4,
        16,
        "la",
        "write",
        False,
        False,
    ): "cd625ee6b8201808",
}
GQA_PINNED: dict[tuple[object, ...], str] = {
    ("gqa_opt2", "fair", False): "a0d42a057a92991c",
    ("gqa_opt2", "fair", True): "7fb833bbffe08687",
    ("gqa_opt2", "reservation", False): "a0d42a057a92991c",
    ("gqa_opt2", "reservation", True): "7fb833bbffe08687",
    ("gqa_opt3", "fair", False): "15b233d03d29dbac",
    ("gqa_opt3", "fair", True): "f4fc678f20a7cc9b",
    ("gqa_opt3", "reservation", False): "15b233d03d29dbac",
    ("gqa_opt3", "reservation", True): "f4fc678f20a7cc9b",
}
DRIVEN_PINNED: dict[tuple[object, ...], str] = {
    (0, False, False): "9a98a5e6d5b91209",
    (0, False, True): "e6023acb1f5ee5ad",
    (0, True, False): "66245a19c6600d3c",
    (0, True, True): "2095f6cdb3282a3f",
    (1, False, False): "6f9dd5b7704139f5",
    (1, False, True): "d16326cb62d1464c",
    (1, True, False): "81fa999a6f7fcf9e",
    (1, True, True): "b16624fccbe713f9",
    (2, False, False): "f21bf16c120e9930",
    (2, False, True): "147e29126cf329cb",
    (2, True, False): "1df744e6c60ec032",
    (2, True, True): "4636940d6f92bb1a",
    (3, False, False): "0201e85d3d15163c",
    (3, False, True): "0180ed3b741643c0",
    (3, True, False): "d6b210cb295feba8",
    (3, True, True): "15e5f6bf10e21dbb",
}


@pytest.mark.parametrize("point", stream_points(), ids=lambda p: "-".join(map(str, p)))
def test_stream_results_are_pinned(tmp_path, point):
    assert stream_digest(tmp_path, *point) == PINNED[point]


@pytest.mark.parametrize("point", GQA_POINTS, ids=lambda p: "-".join(map(str, p)))
def test_gqa_results_are_pinned(tmp_path, point):
    assert gqa_digest(tmp_path, *point) == GQA_PINNED[point]


@pytest.mark.parametrize("point", DRIVEN, ids=lambda p: "-".join(map(str, p)))
def test_driven_fair_fabric_is_pinned(point):
    assert driven_digest(*point) == DRIVEN_PINNED[point]


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for name, points, fn in (
            ("PINNED", stream_points(), lambda p: stream_digest(Path(d), *p)),
            ("GQA_PINNED", GQA_POINTS, lambda p: gqa_digest(Path(d), *p)),
            ("DRIVEN_PINNED", DRIVEN, lambda p: driven_digest(*p)),
        ):
            print(f"{name}: dict[tuple[object, ...], str] = {{")
            for p in points:
                print(f"    {p!r}: {fn(p)!r},")
            print("}")
