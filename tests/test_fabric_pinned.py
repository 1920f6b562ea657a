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

Every digest was recorded again, once, for issue 35 (DESIGN §13.1), whose changes move
results on purpose: reads are round trips (their bytes come back over the reverse
links after the request's way out and the access), HBM is one half-duplex resource,
install messages cost their size (VA and LA points' install times, and the op log
times after them) and stream rows gain ``install_bytes``. The driven runs mix reads
and writes since. Both builds give the new digests (tests/test_round_trips.py and
the re-derived closed-form tests say what moved and why).
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
    """Random reads and writes issued straight into the fair fabric: every transfer's
    completion, and without the fast path every link stretch (time, rate) recorded."""
    rng = random.Random(seed)
    graph = topology(4, 2, 2, one_to_one)
    reqs = [
        (rng.randrange(8), rng.randrange(8), rng.randrange(6), rng.choice((256, 2048, 9000)),
         rng.choice((0.0, 0.0, 3.5, 40.0)), rng.random() < 0.5)
        for _ in range(60)
    ]  # fmt: skip
    fabric, ends = drive(graph, reqs, fast=fast, record=not fast)  # recording: no fast path
    h = hashlib.sha256()
    h.update(repr(ends).encode())
    h.update(repr(fabric.segments).encode())
    h.update(repr(fabric.bytes_carried).encode())
    return h.hexdigest()[:16]


PINNED: dict[tuple[object, ...], str] = {
    ("fair", "n:1", "local", 512, 1, 1, "pa", "read", True, True): "96d5d0b554b1b521",
    ("fair", "n:1", "local", 512, 1, 16, "va", "write", True, False): "de3b9bb1625c700c",
    ("fair", "n:1", "local", 512, 4, 1, "la", "copy", False, True): "a54078bbc84d877d",
    ("fair", "n:1", "local", 512, 4, 16, "pa", "read", False, False): "7ba22204c27bc2da",
    ("fair", "n:1", "local", 2048, 1, 1, "va", "write", True, True): "5ea53bd33cf97d21",
    ("fair", "n:1", "local", 2048, 1, 16, "la", "read", True, False): "ea9f01ecda3868a3",
    ("fair", "n:1", "local", 2048, 4, 1, "pa", "write", False, True): "64ce22374274b529",
    ("fair", "n:1", "local", 2048, 4, 16, "va", "copy", False, False): "f8271bfd01e068d8",
    ("fair", "n:1", "local", 65536, 1, 1, "la", "read", True, True): "2e0b052568b5be00",
    ("fair", "n:1", "local", 65536, 1, 16, "pa", "write", True, False): "b39f64ee2eaed0cb",
    ("fair", "n:1", "local", 65536, 4, 1, "va", "read", False, True): "d5995843fb976a94",
    ("fair", "n:1", "local", 65536, 4, 16, "la", "write", False, False): "7d7baaa1f8612200",
    ("fair", "n:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "578e39134800d053",
    ("fair", "n:1", "neighbor", 512, 1, 16, "va", "read", True, False): "5eece93f9045c641",
    ("fair", "n:1", "neighbor", 512, 4, 1, "la", "write", False, True): "f91d8b36d6407672",
    ("fair", "n:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "c28d65e0e3657a78",
    ("fair", "n:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "6f2c6b58e6355af6",
    ("fair", "n:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "22c58cc4d4c9ad00",
    ("fair", "n:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "cd3494cf814084c3",
    ("fair", "n:1", "neighbor", 2048, 4, 16, "va", "write", False, False): "dde3f33fdba047d6",
    ("fair", "n:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "c6a44a137315b428",
    ("fair", "n:1", "neighbor", 65536, 1, 16, "pa", "write", True, False): "dbcf88bab41594df",
    ("fair", "n:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "47f37b68a3703d04",
    ("fair", "n:1", "neighbor", 65536, 4, 16, "la", "read", False, False): "2c29b994263ecca1",
    ("fair", "n:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "51aba2273e926012",
    ("fair", "n:1", "hotspot", 512, 1, 16, "va", "read", True, False): "99f2bc3e23672076",
    ("fair", "n:1", "hotspot", 512, 4, 1, "la", "write", False, True): "f0fb2084b1a5db81",
    ("fair", "n:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "05be416bc5b1c134",
    ("fair", "n:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "8f1438b3d7757edb",
    ("fair", "n:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "f9f3c79270957ed8",
    ("fair", "n:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "c1f374a0b1e217e5",
    ("fair", "n:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "14396a1d219562b2",
    ("fair", "n:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "0f51525e031b5ecd",
    ("fair", "n:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "fce9ab9a9184f4d7",
    ("fair", "n:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "e5d0df15f9dccb36",
    ("fair", "n:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "bd6bbcbc445850c1",
    ("fair", "n:1", "uniform", 512, 1, 1, "pa", "write", True, True): "8c94054313626cb8",
    ("fair", "n:1", "uniform", 512, 1, 16, "va", "copy", True, False): "02830a8a35d0f3a1",
    ("fair", "n:1", "uniform", 512, 4, 1, "la", "read", False, True): "08efa1409276bd00",
    ("fair", "n:1", "uniform", 512, 4, 16, "pa", "write", False, False): "94771f5573f89d6e",
    ("fair", "n:1", "uniform", 2048, 1, 1, "va", "read", True, True): "1944d526ba181ca4",
    ("fair", "n:1", "uniform", 2048, 1, 16, "la", "write", True, False): "80ac32da9682a916",
    ("fair", "n:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "6d5613771d47ec3d",
    ("fair", "n:1", "uniform", 2048, 4, 16, "va", "read", False, False): "c2bf6453b4c63805",
    ("fair", "n:1", "uniform", 65536, 1, 1, "la", "write", True, True): "885e36250d94e1d1",
    ("fair", "n:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "af60e89fa3cc9196",
    ("fair", "n:1", "uniform", 65536, 4, 1, "va", "write", False, True): "f0b7995f58a2a829",
    ("fair", "n:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "5440e13b3cd41b21",
    ("fair", "n:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "7acfc4c9415def30",
    ("fair", "n:1", "cross_cube", 512, 1, 16, "va", "write", True, False): "9221d00ca382fe83",
    ("fair", "n:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "19d5085f4f2acc8d",
    ("fair", "n:1", "cross_cube", 512, 4, 16, "pa", "write", False, False): "8b769b2036744d03",
    ("fair", "n:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "e82944b22c50cd92",
    ("fair", "n:1", "cross_cube", 2048, 1, 16, "la", "read", True, False): "8608c2b7015d7d3a",
    ("fair", "n:1", "cross_cube", 2048, 4, 1, "pa", "write", False, True): "0ee06abd505c7281",
    ("fair", "n:1", "cross_cube", 2048, 4, 16, "va", "read", False, False): "8dc726ebee214461",
    ("fair", "n:1", "cross_cube", 65536, 1, 1, "la", "write", True, True): "dc94db5a2edd6585",
    ("fair", "n:1", "cross_cube", 65536, 1, 16, "pa", "copy", True, False): "980126e741822fde",
    ("fair", "n:1", "cross_cube", 65536, 4, 1, "va", "read", False, True): "33ce452ef527e058",
    ("fair", "n:1", "cross_cube", 65536, 4, 16, "la", "write", False, False): "39edf43bf61e844d",
    ("fair", "1:1", "local", 512, 1, 1, "pa", "read", True, True): "bffd8dbc188d4fb9",
    ("fair", "1:1", "local", 512, 1, 16, "va", "write", True, False): "d0a633734ac90675",
    ("fair", "1:1", "local", 512, 4, 1, "la", "copy", False, True): "decc65b4dfacfd50",
    ("fair", "1:1", "local", 512, 4, 16, "pa", "read", False, False): "e822ace20e77f4d8",
    ("fair", "1:1", "local", 2048, 1, 1, "va", "write", True, True): "4c54c33823e0eabd",
    ("fair", "1:1", "local", 2048, 1, 16, "la", "read", True, False): "f8ac01729c529440",
    ("fair", "1:1", "local", 2048, 4, 1, "pa", "write", False, True): "7f8cc6cd01c07755",
    ("fair", "1:1", "local", 2048, 4, 16, "va", "copy", False, False): "6a50e0874ac008a6",
    ("fair", "1:1", "local", 65536, 1, 1, "la", "read", True, True): "9f7850ff3914b398",
    ("fair", "1:1", "local", 65536, 1, 16, "pa", "write", True, False): "00e94602c04e5020",
    ("fair", "1:1", "local", 65536, 4, 1, "va", "read", False, True): "b778dfd79ff05623",
    ("fair", "1:1", "local", 65536, 4, 16, "la", "write", False, False): "5f10c2b6811a5f98",
    ("fair", "1:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "8aaa3c1a837f0608",
    ("fair", "1:1", "neighbor", 512, 1, 16, "va", "read", True, False): "8de43048a165eac1",
    ("fair", "1:1", "neighbor", 512, 4, 1, "la", "write", False, True): "6244b11397a52b5e",
    ("fair", "1:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "56c8e23361e7ea25",
    ("fair", "1:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "7d3648cea58f9f19",
    ("fair", "1:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "29e3ddec4b9e43c6",
    ("fair", "1:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "1b975634d98be155",
    ("fair", "1:1", "neighbor", 2048, 4, 16, "va", "write", False, False): "dde3f33fdba047d6",
    ("fair", "1:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "c12d60ab35823b01",
    ("fair", "1:1", "neighbor", 65536, 1, 16, "pa", "write", True, False): "dbcf88bab41594df",
    ("fair", "1:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "61effdacc8756a0e",
    ("fair", "1:1", "neighbor", 65536, 4, 16, "la", "read", False, False): "2c29b994263ecca1",
    ("fair", "1:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "99355c583136b171",
    ("fair", "1:1", "hotspot", 512, 1, 16, "va", "read", True, False): "0c587b4d35ab9610",
    ("fair", "1:1", "hotspot", 512, 4, 1, "la", "write", False, True): "2218c1a07b7818bf",
    ("fair", "1:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "9e1d8ceefede1d21",
    ("fair", "1:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "59c73169d9eab02b",
    ("fair", "1:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "5e8b779c889d16a4",
    ("fair", "1:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "8ff54258f68e3fe7",
    ("fair", "1:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "109ec4c02e9cc9ef",
    ("fair", "1:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "dfd30c3ec9fa8b9b",
    ("fair", "1:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "083421f1e0b91c63",
    ("fair", "1:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "a1c242d363f654c9",
    ("fair", "1:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "7d679bd6a81308f4",
    ("fair", "1:1", "uniform", 512, 1, 1, "pa", "write", True, True): "62907e9c3a212641",
    ("fair", "1:1", "uniform", 512, 1, 16, "va", "copy", True, False): "1d745aa4185369e0",
    ("fair", "1:1", "uniform", 512, 4, 1, "la", "read", False, True): "c1c1324ef25198f9",
    ("fair", "1:1", "uniform", 512, 4, 16, "pa", "write", False, False): "0a4464ab82c07410",
    ("fair", "1:1", "uniform", 2048, 1, 1, "va", "read", True, True): "4b893e350614f55c",
    ("fair", "1:1", "uniform", 2048, 1, 16, "la", "write", True, False): "56b36cdcb1cdc895",
    ("fair", "1:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "7de5abc11246be27",
    ("fair", "1:1", "uniform", 2048, 4, 16, "va", "read", False, False): "bc3a006738dfbf58",
    ("fair", "1:1", "uniform", 65536, 1, 1, "la", "write", True, True): "945c5b2a5aa1a830",
    ("fair", "1:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "83062c11fb7c6d02",
    ("fair", "1:1", "uniform", 65536, 4, 1, "va", "write", False, True): "0be416fcfd7c431f",
    ("fair", "1:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "137ee40e6617b7c2",
    ("fair", "1:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "86329d9edc14edc8",
    ("fair", "1:1", "cross_cube", 512, 1, 16, "va", "write", True, False): "9221d00ca382fe83",
    ("fair", "1:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "5a077bd098b25bb7",
    ("fair", "1:1", "cross_cube", 512, 4, 16, "pa", "write", False, False): "8b769b2036744d03",
    ("fair", "1:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "e1d0079bbfd63320",
    ("fair", "1:1", "cross_cube", 2048, 1, 16, "la", "read", True, False): "8608c2b7015d7d3a",
    ("fair", "1:1", "cross_cube", 2048, 4, 1, "pa", "write", False, True): "db08fe8090f23b0f",
    ("fair", "1:1", "cross_cube", 2048, 4, 16, "va", "read", False, False): "8dc726ebee214461",
    ("fair", "1:1", "cross_cube", 65536, 1, 1, "la", "write", True, True): "29727925646ffda3",
    ("fair", "1:1", "cross_cube", 65536, 1, 16, "pa", "copy", True, False): "980126e741822fde",
    ("fair", "1:1", "cross_cube", 65536, 4, 1, "va", "read", False, True): "5f8a826373d16733",
    ("fair", "1:1", "cross_cube", 65536, 4, 16, "la", "write", False, False): "39edf43bf61e844d",
    ("reservation", "n:1", "local", 512, 1, 1, "pa", "read", True, True): "96d5d0b554b1b521",
    ("reservation", "n:1", "local", 512, 1, 16, "va", "write", True, False): "de3b9bb1625c700c",
    ("reservation", "n:1", "local", 512, 4, 1, "la", "copy", False, True): "a54078bbc84d877d",
    ("reservation", "n:1", "local", 512, 4, 16, "pa", "read", False, False): "7ba22204c27bc2da",
    ("reservation", "n:1", "local", 2048, 1, 1, "va", "write", True, True): "5ea53bd33cf97d21",
    ("reservation", "n:1", "local", 2048, 1, 16, "la", "read", True, False): "ea9f01ecda3868a3",
    ("reservation", "n:1", "local", 2048, 4, 1, "pa", "write", False, True): "64ce22374274b529",
    ("reservation", "n:1", "local", 2048, 4, 16, "va", "copy", False, False): "f8271bfd01e068d8",
    ("reservation", "n:1", "local", 65536, 1, 1, "la", "read", True, True): "2e0b052568b5be00",
    ("reservation", "n:1", "local", 65536, 1, 16, "pa", "write", True, False): "b39f64ee2eaed0cb",
    ("reservation", "n:1", "local", 65536, 4, 1, "va", "read", False, True): "d5995843fb976a94",
    ("reservation", "n:1", "local", 65536, 4, 16, "la", "write", False, False): "7d7baaa1f8612200",
    ("reservation", "n:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "578e39134800d053",
    ("reservation", "n:1", "neighbor", 512, 1, 16, "va", "read", True, False): "5eece93f9045c641",
    ("reservation", "n:1", "neighbor", 512, 4, 1, "la", "write", False, True): "f91d8b36d6407672",
    ("reservation", "n:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "c28d65e0e3657a78",
    ("reservation", "n:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "6f2c6b58e6355af6",
    ("reservation", "n:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "22c58cc4d4c9ad00",
    ("reservation", "n:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "cd3494cf814084c3",
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
    ): "dde3f33fdba047d6",
    ("reservation", "n:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "c6a44a137315b428",
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
    ): "dbcf88bab41594df",
    ("reservation", "n:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "ca328eebbf795d89",
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
    ): "2c29b994263ecca1",
    ("reservation", "n:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "51aba2273e926012",
    ("reservation", "n:1", "hotspot", 512, 1, 16, "va", "read", True, False): "d90b3d05d0a237b2",
    ("reservation", "n:1", "hotspot", 512, 4, 1, "la", "write", False, True): "f0fb2084b1a5db81",
    ("reservation", "n:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "e9e3f9c5a57345d2",
    ("reservation", "n:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "8f1438b3d7757edb",
    ("reservation", "n:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "5690b842b173d31a",
    ("reservation", "n:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "c1f374a0b1e217e5",
    ("reservation", "n:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "efe3cb26383b243f",
    ("reservation", "n:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "0f51525e031b5ecd",
    ("reservation", "n:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "8abdca1a19e3cd0f",
    ("reservation", "n:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "e5d0df15f9dccb36",
    ("reservation", "n:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "77c5b8ba622a7d6f",
    ("reservation", "n:1", "uniform", 512, 1, 1, "pa", "write", True, True): "8c94054313626cb8",
    ("reservation", "n:1", "uniform", 512, 1, 16, "va", "copy", True, False): "b293c74ebef91827",
    ("reservation", "n:1", "uniform", 512, 4, 1, "la", "read", False, True): "e0a8774eb317129b",
    ("reservation", "n:1", "uniform", 512, 4, 16, "pa", "write", False, False): "48716b7d2e9370db",
    ("reservation", "n:1", "uniform", 2048, 1, 1, "va", "read", True, True): "1944d526ba181ca4",
    ("reservation", "n:1", "uniform", 2048, 1, 16, "la", "write", True, False): "2082d8a6c8ec5eb7",
    ("reservation", "n:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "6d5613771d47ec3d",
    ("reservation", "n:1", "uniform", 2048, 4, 16, "va", "read", False, False): "9aa7f4f7430fdde6",
    ("reservation", "n:1", "uniform", 65536, 1, 1, "la", "write", True, True): "885e36250d94e1d1",
    ("reservation", "n:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "c82e0fbc9a5f874c",
    ("reservation", "n:1", "uniform", 65536, 4, 1, "va", "write", False, True): "6bc41023c54867db",
    ("reservation", "n:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "18af94b279c534e1",
    ("reservation", "n:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "7acfc4c9415def30",
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
    ): "fbc65cf6c9a86470",
    ("reservation", "n:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "19d5085f4f2acc8d",
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
    ): "91ec90996a1cfb97",
    ("reservation", "n:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "e82944b22c50cd92",
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
    ): "8ed2bb2a759f452e",
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
    ): "0ee06abd505c7281",
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
    ): "934237af5a71131c",
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
    ): "dc94db5a2edd6585",
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
    ): "85724a9737768c8d",
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
    ): "33ce452ef527e058",
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
    ): "a3d3f8be718ad5a6",
    ("reservation", "1:1", "local", 512, 1, 1, "pa", "read", True, True): "bffd8dbc188d4fb9",
    ("reservation", "1:1", "local", 512, 1, 16, "va", "write", True, False): "d0a633734ac90675",
    ("reservation", "1:1", "local", 512, 4, 1, "la", "copy", False, True): "decc65b4dfacfd50",
    ("reservation", "1:1", "local", 512, 4, 16, "pa", "read", False, False): "e822ace20e77f4d8",
    ("reservation", "1:1", "local", 2048, 1, 1, "va", "write", True, True): "4c54c33823e0eabd",
    ("reservation", "1:1", "local", 2048, 1, 16, "la", "read", True, False): "f8ac01729c529440",
    ("reservation", "1:1", "local", 2048, 4, 1, "pa", "write", False, True): "7f8cc6cd01c07755",
    ("reservation", "1:1", "local", 2048, 4, 16, "va", "copy", False, False): "6a50e0874ac008a6",
    ("reservation", "1:1", "local", 65536, 1, 1, "la", "read", True, True): "9f7850ff3914b398",
    ("reservation", "1:1", "local", 65536, 1, 16, "pa", "write", True, False): "00e94602c04e5020",
    ("reservation", "1:1", "local", 65536, 4, 1, "va", "read", False, True): "b778dfd79ff05623",
    ("reservation", "1:1", "local", 65536, 4, 16, "la", "write", False, False): "5f10c2b6811a5f98",
    ("reservation", "1:1", "neighbor", 512, 1, 1, "pa", "copy", True, True): "68250c229592bf36",
    ("reservation", "1:1", "neighbor", 512, 1, 16, "va", "read", True, False): "b0217c855dcb0dfe",
    ("reservation", "1:1", "neighbor", 512, 4, 1, "la", "write", False, True): "36ab1e1464a52a1c",
    ("reservation", "1:1", "neighbor", 512, 4, 16, "pa", "read", False, False): "63f4e67bb8ce4094",
    ("reservation", "1:1", "neighbor", 2048, 1, 1, "va", "write", True, True): "4a90d0b1f6e20c24",
    ("reservation", "1:1", "neighbor", 2048, 1, 16, "la", "copy", True, False): "79f5f9839d705d7d",
    ("reservation", "1:1", "neighbor", 2048, 4, 1, "pa", "read", False, True): "9327c01c06506946",
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
    ): "0b6f4cae7552432b",
    ("reservation", "1:1", "neighbor", 65536, 1, 1, "la", "read", True, True): "b3ab9c0f1aa968ba",
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
    ): "eb82c4d2a3035e72",
    ("reservation", "1:1", "neighbor", 65536, 4, 1, "va", "copy", False, True): "e35af42ffe2002c6",
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
    ): "9b974720a21f75d1",
    ("reservation", "1:1", "hotspot", 512, 1, 1, "pa", "write", True, True): "99355c583136b171",
    ("reservation", "1:1", "hotspot", 512, 1, 16, "va", "read", True, False): "b07b5200a4359723",
    ("reservation", "1:1", "hotspot", 512, 4, 1, "la", "write", False, True): "2218c1a07b7818bf",
    ("reservation", "1:1", "hotspot", 512, 4, 16, "pa", "copy", False, False): "7cf52573985602b0",
    ("reservation", "1:1", "hotspot", 2048, 1, 1, "va", "read", True, True): "59c73169d9eab02b",
    ("reservation", "1:1", "hotspot", 2048, 1, 16, "la", "write", True, False): "d904504aa8dbea5e",
    ("reservation", "1:1", "hotspot", 2048, 4, 1, "pa", "read", False, True): "8ff54258f68e3fe7",
    ("reservation", "1:1", "hotspot", 2048, 4, 16, "va", "write", False, False): "6c9812864bea37b7",
    ("reservation", "1:1", "hotspot", 65536, 1, 1, "la", "copy", True, True): "dfd30c3ec9fa8b9b",
    ("reservation", "1:1", "hotspot", 65536, 1, 16, "pa", "read", True, False): "3d5756dbdded6d69",
    ("reservation", "1:1", "hotspot", 65536, 4, 1, "va", "write", False, True): "a1c242d363f654c9",
    ("reservation", "1:1", "hotspot", 65536, 4, 16, "la", "read", False, False): "cbcfbd5a32953f95",
    ("reservation", "1:1", "uniform", 512, 1, 1, "pa", "write", True, True): "63b0fa0073904050",
    ("reservation", "1:1", "uniform", 512, 1, 16, "va", "copy", True, False): "d15babad239e7016",
    ("reservation", "1:1", "uniform", 512, 4, 1, "la", "read", False, True): "3d1ee0cac1a96fbd",
    ("reservation", "1:1", "uniform", 512, 4, 16, "pa", "write", False, False): "f322f9d8a5408f31",
    ("reservation", "1:1", "uniform", 2048, 1, 1, "va", "read", True, True): "4b1810cb42fdd7b2",
    ("reservation", "1:1", "uniform", 2048, 1, 16, "la", "write", True, False): "41f7563b8d5a39f4",
    ("reservation", "1:1", "uniform", 2048, 4, 1, "pa", "copy", False, True): "ae8f4a3e292c804a",
    ("reservation", "1:1", "uniform", 2048, 4, 16, "va", "read", False, False): "4c115bb7e3721fc4",
    ("reservation", "1:1", "uniform", 65536, 1, 1, "la", "write", True, True): "75d7900e5d44c5fa",
    ("reservation", "1:1", "uniform", 65536, 1, 16, "pa", "read", True, False): "c1f8590bbd80fa5e",
    ("reservation", "1:1", "uniform", 65536, 4, 1, "va", "write", False, True): "80ed1d4b9b934d90",
    ("reservation", "1:1", "uniform", 65536, 4, 16, "la", "copy", False, False): "6886b46b55b2b05d",
    ("reservation", "1:1", "cross_cube", 512, 1, 1, "pa", "read", True, True): "da434f40ae4125b7",
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
    ): "d5b0c72251c70e10",
    ("reservation", "1:1", "cross_cube", 512, 4, 1, "la", "read", False, True): "cd0daa84500e1736",
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
    ): "7ec900906dfbb562",
    ("reservation", "1:1", "cross_cube", 2048, 1, 1, "va", "copy", True, True): "3e8f46531dffc146",
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
    ): "6341c428970adb3c",
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
    ): "eac5759eed4658f4",
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
    ): "0a4c4a71e752d8d8",
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
    ): "7fa90524dce30f3e",
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
    ): "8d3cfa25c45cfebd",
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
    ): "1efaff27853ac2ea",
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
    ): "20157b9e4dd812ad",
}
GQA_PINNED: dict[tuple[object, ...], str] = {
    ("gqa_opt2", "fair", False): "429a0ccc8c89710e",
    ("gqa_opt2", "fair", True): "9a5e5ba0a246b221",
    ("gqa_opt2", "reservation", False): "429a0ccc8c89710e",
    ("gqa_opt2", "reservation", True): "9a5e5ba0a246b221",
    ("gqa_opt3", "fair", False): "43295e19fe7f172b",
    ("gqa_opt3", "fair", True): "ddc845adf5fd2d1b",
    ("gqa_opt3", "reservation", False): "43295e19fe7f172b",
    ("gqa_opt3", "reservation", True): "ddc845adf5fd2d1b",
}
DRIVEN_PINNED: dict[tuple[object, ...], str] = {
    (0, False, False): "8ff7a18de4f2432a",
    (0, False, True): "11984badda0de25d",
    (0, True, False): "3196f3bf2c864675",
    (0, True, True): "3b5e8d141d3d92cf",
    (1, False, False): "17e877aad873fd2f",
    (1, False, True): "5363287f39fbb322",
    (1, True, False): "c43f0225bda743b3",
    (1, True, True): "33d8685a60018073",
    (2, False, False): "d9e1a1b10d704d35",
    (2, False, True): "9795f8c6b99e18de",
    (2, True, False): "faf8dd8ea0e65afc",
    (2, True, True): "3c1e54901d473c21",
    (3, False, False): "138d9b564b777990",
    (3, False, True): "10fe8573d1da881b",
    (3, True, False): "a15e9a7e8e8b60c3",
    (3, True, True): "6b2e3f59c8a2d320",
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
