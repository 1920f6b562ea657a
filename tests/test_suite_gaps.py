"""Gaps the planted-bug audit found: one test per bug that passed the whole suite.

Every figure here is derived by hand from the config (the derivation is in each
test's docstring), never recorded from what the code gives today. Default topology
unless said: 8 PEs per cube, a PE's HBM is N = 8 pseudo-channels of 32 GB/s (256 GB/s,
its n:1 aggregate link), interleave granule g = 256 B (a stripe is g x N = 2048 B), a
local route's latency is DMA->router 2 ns + router->HBM 4 ns = 6 ns, and the HBM access
latency 40 ns. A write pays the way out, its bytes, then the access; a read is a round
trip (DESIGN §13.1): its request's way out (6 ns, no payload), the access, the bytes'
way back over the twin links (6 ns), then its bytes, and nothing after.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.utils import JobReturn, JobStatus
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode

from kernbench import simulate
from kernbench.cli.precheck import UsageError, check_overrides
from kernbench.config.schema import StreamPattern
from kernbench.config.store import conf_dir, register_configs
from kernbench.config.validate import validate
from kernbench.job import run_job
from kernbench.report import bw_equivalence as bw
from kernbench.results import make_row
from kernbench.sweep import remote
from kernbench.sweep.cache import PointCache
from kernbench.sweep.plan import Planner, screen
from kernbench.sweep.points import PointResult
from kernbench.sweep.pool import run_chunks
from kernbench.sweep.run import fixed_sizes, make_chunks
from kernbench.workloads import patterns, stream
from tests.support import make_cfg, make_system

# -- 1. stream writes are timed, one DMA per tile ------------------------------------

HELP = " (kernbench --help lists every key)"  # the end of every "no such key" line


@pytest.mark.parametrize("one_to_one", [False, True], ids=["n:1", "1:1"])
def test_two_stores_of_one_tile_serialise_on_the_tile(one_to_one):
    """PE 0 (PA, dispatch free) writes bytes_per_pe = 8192 in accesses of 4096
    with one outstanding: both stores come from the one staging tile, so the second
    may start only when the first has completed (a DMA owns its tile until it ends;
    a store only *reads* its tile, so no RAW/WAW/WAR hazard orders them: the
    one-DMA-per-tile rule alone does).

    One store alone: 6 ns of route + 4096 B / 256 GB/s = 16 ns + 40 ns of HBM = 62 ns
    (1:1: 8 channel requests of 512 B side by side, each 512 / 32 = 16 ns: the same).
    Serialised: the second is issued at 62 and ends at 2 x 62 = 124 ns. Without the
    rule both would be issued at 0 and share the links back to back: the second
    would end at 6 + 2 x 16 + 40 = 78 ns."""
    cfg = make_cfg(one_to_one=one_to_one, op="write", access_bytes=4096, bytes_per_pe=8192,
                   active_pes=1, outstanding=1)  # fmt: skip
    mm, lk = cfg.topology.cube.memory_map, cfg.topology.links
    assert (mm.hbm_channels_per_pe, mm.hbm_channel_bw_gbs) == (8, 32.0)
    assert (lk.dma_router_latency_ns, lk.router_hbm_latency_ns) == (2.0, 4.0)
    assert mm.hbm_access_latency_ns == 40.0
    one = 2 + 4 + 4096 / 256 + 40
    assert one == 62
    m = simulate.run(cfg).metrics
    assert m["sim_time_ns"] == 2 * one == 124
    assert (m["bytes_moved"], m["accesses"]) == (8192, 2)
    # one PE, alone: its 8192 B over the whole run
    assert m["mean_pe_bw_gbs"] == 8192 / 124


# -- 2. the whole-stripe fast path of 1:1 at an offset inside a stripe ----------------


def _trace(tmp_path, model, offset):
    cfg = make_cfg(one_to_one=True, model=model, access_bytes=2048, bytes_per_pe=2048,
                   active_pes=1, align_offset_bytes=offset)  # fmt: skip
    cfg.sim = dataclasses.replace(cfg.sim, trace=True)
    path = tmp_path / f"trace_{model}_{offset}.parquet"
    metrics = simulate.run(cfg, path).metrics
    rows = pq.read_table(path).to_pandas().sort_values("channel")
    return metrics, {int(r.channel): (int(r.pa), int(r.nbytes)) for r in rows.itertuples()}


@pytest.mark.parametrize("model", ["pa", "la"])
def test_a_whole_stripe_access_256_bytes_into_a_stripe_maps_each_channel(tmp_path, model):
    """One access of one stripe (2048 B = 8 granules) starting 256 B into PE 0's
    shard (which starts on a stripe, PA B). Byte o of the PE's space lives on channel
    (o // 256) % 8, so offsets 256..2303 are granule 1..8: channels 1..7 get granules
    1..7, at PA B + 256 c, and channel 0 gets granule 8, the next stripe's first, at
    PA B + 2048 (not B + 256: that byte is channel 1's). Every channel moves 256 B, as
    at offset 0, so the time is the same read round trip: 6 ns out + 40 ns access + 6 ns
    back + 256 B / 32 GB/s = 8 ns: 60 ns.
    B is read from the aligned access: its channel 0 request starts the shard."""
    aligned_m, aligned = _trace(tmp_path, model, 0)
    base = aligned[0][0]
    assert aligned == {c: (base + 256 * c, 256) for c in range(8)}
    m, pieces = _trace(tmp_path, model, 256)
    expected = {c: (base + 256 * c, 256) for c in range(1, 8)}
    expected[0] = (base + 2048, 256)
    assert pieces == expected
    assert m["sim_time_ns"] == aligned_m["sim_time_ns"] == 6 + 40 + 6 + 256 / 32 == 60
    assert m["bytes_moved"] == 2048


# -- 3. a uniform stream whose bytes are not whole accesses ------------------------


def test_a_uniform_stream_with_a_short_last_access_moves_exactly_its_bytes():
    """2 PEs each stream 3 x 4096 + 1024 = 13312 B in accesses of 4096 under
    ``uniform``: 3 whole accesses and one of 1024, so 4 accesses per PE, 8 in all, and
    2 x 13312 = 26624 B. Each access goes to the PE that NumPy's default generator
    seeded with workload.seed draws for it (docs/explanation/models.md, "Stream workload
    and traffic patterns"), one row of 4 draws per PE over the 16 PEs: the HBM behind
    each drawn PE gives 4096 B for draws 0-2 of a row and 1024 B for draw 3. A read's
    bytes leave HBM on the twin of the router's link into it (DESIGN §13.1): they are
    counted there, and nothing goes in."""
    access, total = 4096, 3 * 4096 + 1024
    cfg = make_cfg(pattern=StreamPattern.uniform, access_bytes=access, bytes_per_pe=total,
                   active_pes=2, seed=5)  # fmt: skip
    draws = np.random.default_rng(5).integers(0, 16, size=(2, 4)).tolist()
    expected = [0] * 16
    for row in draws:
        for i, target in enumerate(row):
            expected[target] += 1024 if i == 3 else 4096
    system, _ = make_system(cfg)
    m = stream.run(system, cfg.workload)
    assert (m["bytes_moved"], m["accesses"]) == (2 * total, 2 * 4) == (26624, 8)
    carried = system.fabric.bytes_carried
    graph = system.graph
    into_hbm = [graph.hbm_link[pe.agg_router].id for pe in graph.pes]
    assert [carried[i] for i in into_hbm] == [0] * 16
    assert [carried[graph.twin[i]] for i in into_hbm] == expected
    assert sum(expected) == 26624


# -- 4. cross_cube over 2 SIPs x 2 cubes ---------------------------------------------


def test_cross_cube_on_two_sips_of_two_cubes_names_every_owner():
    """2 SIPs x 2 cubes x 4 PEs = 16 PEs in (sip, cube, pe) order. PE (s, c, p) reads
    the PE with the same index p in the next cube of the global cube order
    s0c0 -> s0c1 -> s1c0 -> s1c1 -> s0c0 (from a SIP's last cube, the next SIP's first;
    the last SIP's last cube wraps to the first)."""
    cfg = make_cfg(pattern=StreamPattern.cross_cube, active_pes="all")
    cfg.topology = dataclasses.replace(cfg.topology, n_sips=2, cubes_per_sip=2, pes_per_cube=4)
    cfg.topology.cube.memory_map.hbm_pseudo_channels = 32
    cfg.topology.cube.memory_map.hbm_channels_per_pe = None
    cfg = validate(cfg)
    pes = make_system(cfg)[0].graph.pes
    assert [(pe.sip, pe.cube, pe.pe) for pe in pes][:5] == [
        (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 1, 0),
    ]  # fmt: skip
    s0c1, s1c0, s1c1, s0c0 = [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], [0, 1, 2, 3]
    #            s0c0's 4 PEs -> s0c1, s0c1 -> s1c0, s1c0 -> s1c1, s1c1 -> s0c0
    assert patterns.owners(cfg.workload, cfg.topology, pes, 1) == s0c1 + s1c0 + s1c1 + s0c0


# -- 5. the sweep's pre-screen checks each value per shape ---------------------------


@pytest.fixture
def loader():
    """Hydra's config loader on the real conf/, inside Hydra's own context manager
    (which restores its global state on exit), as tests/test_sweep_plan.py does."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        yield GlobalHydra.instance().hydra.config_loader


def test_a_value_valid_in_one_shape_is_screened_again_in_another(loader):
    """``workload.access_bytes=4096`` is a stream key: valid in the shape
    ``workload=stream`` (point #0), not a key of ``workload=gqa_opt3`` (point #1). The
    screen applies each distinct value once *per shape*, so having passed in the first
    shape must not pass it in the second: the sweep is refused naming point #1."""
    master = loader.load_configuration("config", [], RunMode.MULTIRUN)
    line = "workload.access_bytes=4096"
    plan = Planner(loader, master).plan([["workload=stream", line], ["workload=gqa_opt3", line]])
    assert len(plan.shapes) == 2
    with pytest.raises(ConfigCompositionException) as info:
        screen(plan)
    message = str(info.value)
    assert message.startswith(f"sweep point #1 (workload=gqa_opt3 {line})")
    assert "access_bytes" in message
    # the first shape alone is fine
    screen(Planner(loader, master).plan([["workload=stream", line]]))


def test_a_sweep_through_a_users_preset_refuses_the_value_in_the_shape_without_it(tmp_path):
    """The same through ``kernbench -m`` (a subprocess: Hydra's state stays its own).
    With a study preset on the command line the override pre-check leaves workload
    keys to the sweep (the preset may choose the workload), so the sweep's own screen
    is what refuses point #1 up front: one line naming it, exit 1, no point run and no
    results.parquet."""
    presets = tmp_path / "presets" / "experiment"
    presets.mkdir(parents=True)
    (presets / "mine.yaml").write_text("# @package _global_\nsim:\n  trace: false\n")
    sweep = tmp_path / "sweep"
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    argv = [sys.executable, "-m", "kernbench.app", "-m", "+experiment=mine",
            f"hydra.searchpath=[file://{tmp_path / 'presets'}]",
            "workload=stream,gqa_opt3", "workload.access_bytes=4096",
            f"hydra.sweep.dir={sweep}", "hydra.launcher.n_jobs=1"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(
        "sweep point #1 (+experiment=mine workload=gqa_opt3 workload.access_bytes=4096):"
        " Key 'access_bytes' not in 'GqaWorkloadConfig'"
    ), proc.stderr
    assert not sweep.exists()  # nothing written, not even Hydra's multirun.yaml


# -- 6. a chunk that fails as a whole gives one error row per point -------------------

SMALL = ["topology=small", "pe_cost_model=zero", "workload.active_pes=1", "address=pa"]


def test_a_chunk_that_cannot_be_sent_gives_each_of_its_points_an_error_row(loader, tmp_path):
    """A chunk of 3 points (bytes_per_pe 4096, 8192, 12288) carrying something that
    cannot be pickled never reaches a worker: the whole chunk fails in the parent.
    Each of its 3 points must still get exactly one row of its own, status error,
    with its job number and its own config, and the message saying why: 3 rows, not
    one for the chunk."""
    master = loader.load_configuration("config", SMALL, RunMode.MULTIRUN)
    jobs = [[*SMALL, f"workload.bytes_per_pe={4096 * (n + 1)}"] for n in range(3)]
    plan = Planner(loader, master).plan(jobs)
    screen(plan)
    base = {"sweep_dir": str(tmp_path), "cache_dir": None}
    [chunk] = make_chunks(plan, fixed_sizes(3), base)
    chunk.unsendable = threading.Lock()  # pickling the chunk raises TypeError
    results = []
    run_chunks([chunk], 1, results.append, None, None)
    assert_one_error_row_each(results, "TypeError: cannot pickle '_thread.lock' object")


def test_a_cluster_chunk_job_that_fails_gives_each_of_its_points_an_error_row(loader, tmp_path):
    """The same rule for a chunk run as one cluster job (submitit, Ray): a job that
    ends FAILED returns no rows, so each of its 3 points gets its own error row."""
    master = loader.load_configuration("config", SMALL, RunMode.MULTIRUN)
    jobs = [[*SMALL, f"workload.bytes_per_pe={4096 * (n + 1)}"] for n in range(3)]
    plan = Planner(loader, master).plan(jobs)
    screen(plan)
    [chunk] = make_chunks(plan, fixed_sizes(3), {"sweep_dir": str(tmp_path), "cache_dir": None})
    ret = JobReturn()
    ret.status, ret._return_value = JobStatus.FAILED, MemoryError("out of memory")
    results = remote._results(chunk, ret, tmp_path)
    assert_one_error_row_each(results, "its chunk job failed: MemoryError: out of memory")

    # A point the job marked done before it failed (Ray's retries used up on the
    # chunk's next point) keeps the result its mark holds.
    done = PointResult(1, "ok", rows=[{"job_num": 1, "status": "ok"}])
    remote.mark_finished(tmp_path, done)
    results = remote._results(chunk, ret, tmp_path)
    assert [(r.num, r.status) for r in results] == [(0, "error"), (1, "ok"), (2, "error")]
    assert results[1].rows == done.rows


class FailingLauncher:
    """A launcher whose every job fails, as a cluster's lost job does."""

    def setup(self, **kwargs):
        pass

    def launch(self, job_overrides, initial_job_idx):
        ret = JobReturn()
        ret.status, ret._return_value = JobStatus.FAILED, RuntimeError("lost")
        return [ret for _ in job_overrides]


def test_a_failed_chunk_job_takes_nothing_from_an_earlier_runs_marks(loader, tmp_path):
    """A done mark an earlier run into the directory left (stopped, killed; older
    code, maybe) is not this run's result: the marks are cleared before the jobs are
    launched, so each point of the failed job is an error row."""
    master = loader.load_configuration("config", SMALL, RunMode.MULTIRUN)
    jobs = [[*SMALL, f"workload.bytes_per_pe={4096 * (n + 1)}"] for n in range(3)]
    plan = Planner(loader, master).plan(jobs)
    screen(plan)
    [chunk] = make_chunks(plan, fixed_sizes(3), {"sweep_dir": str(tmp_path), "cache_dir": None})
    remote.mark_finished(tmp_path, PointResult(1, "ok", rows=[{"job_num": 1}]))
    results = []
    remote.ChunkJobs(FailingLauncher(), master, None, tmp_path)([chunk], results.append)
    assert_one_error_row_each(results, "its chunk job failed: RuntimeError: lost")


def assert_one_error_row_each(results, message):
    """Points 0, 1, 2 each once, an error with ``message`` and one row of its own
    (its job number, its own bytes_per_pe of 4096 x (n + 1))."""
    assert sorted(r.num for r in results) == [0, 1, 2]
    for r in results:
        assert r.status == "error"
        assert r.error.startswith(message)
        [row] = r.rows
        assert (row["job_num"], row["status"], row["error"]) == (r.num, "error", r.error)
        assert row["workload.bytes_per_pe"] == 4096 * (r.num + 1)


# -- 7. a cache entry that is JSON but not an object --------------------------------


@pytest.mark.parametrize("text", ["null", "[]", '[{"key": "x"}]', '"metrics"', "3", "true"])
def test_a_cache_entry_that_is_json_but_not_an_object_is_a_miss(tmp_path, caplog, text):
    """An entry is a JSON object {key, checksum, metrics}. A file that parses to
    anything else (null, a list, a string, a number, a bool) holds no result: the
    lookup is a miss (None, so the point is simulated again), the file is removed, and
    exactly one warning says so; the next lookup is a plain miss, with no warning."""
    store, key = PointCache(tmp_path), "ef" * 32
    path = store.path(key)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="kernbench.sweep.cache"):
        assert store.load(key) is None
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, caplog.text
    assert warnings[0].getMessage().startswith(f"point cache: discarding bad entry {path} (")
    assert not path.exists()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kernbench.sweep.cache"):
        assert store.load(key) is None
    assert caplog.records == []


def test_a_null_cache_entry_is_recomputed_and_stored_afresh(compose_cfg, tmp_path, caplog):
    """Through run_job: a point whose entry reads ``null`` is simulated (cached False),
    its entry written again, and the next run is served from it (cached True)."""
    cfg = compose_cfg(*SMALL, "workload.bytes_per_pe=4096", "workload.access_bytes=4096")
    store = PointCache(tmp_path / "cache")
    assert run_job(cfg, tmp_path / "1", cache=store) == "ok"
    [entry] = sorted((tmp_path / "cache").rglob("*.json"))
    entry.write_text("null")
    with caplog.at_level(logging.WARNING, logger="kernbench.sweep.cache"):
        assert run_job(cfg, tmp_path / "2", cache=store) == "ok"
    assert len([r for r in caplog.records if "discarding bad entry" in r.getMessage()]) == 1
    assert run_job(cfg, tmp_path / "3", cache=store) == "ok"
    rows = [pq.read_table(tmp_path / n / "result.parquet").to_pylist() for n in "123"]
    assert [r["cached"] for [r] in rows] == [False, False, True]
    assert json.loads(entry.read_text())["metrics"]["bytes_moved"] == 4096


# -- 8. ADR-0011's claim fails when 1:1 beats n:1 by more than 1% ---------------------

MM = "topology.cube.memory_map."


def bw_rows(one_to_one_bw: dict[str, float]) -> pd.DataFrame:
    """Stream rows of one local, aligned configuration (8 PEs, N = 8, g = 256, 64 KiB
    accesses from offset 0: a multiple of the 2048 B stripe), n:1 at 200 GB/s per PE
    and 1:1 at ``one_to_one_bw[fabric]``, under each fabric model named."""
    out = []
    for fabric, one in one_to_one_bw.items():
        for mapping, bw_ in (("n_to_one", 200.0), ("one_to_one", one)):
            flat = {
                MM + "hbm_mapping_mode": mapping,
                MM + "hbm_channels_per_pe": 8,
                MM + "interleave_bytes": 256,
                "topology.pes_per_cube": 8,
                "workload.name": "stream",
                "workload.pattern": "local",
                "workload.active_pes": "all",
                "workload.access_bytes": 65536,
                "workload.align_offset_bytes": 0,
                "sim.fabric": fabric,
            }
            link = "sip0.cube0.pe0.agg_router->sip0.cube0.hbm_ctrl"
            metrics = {"mean_pe_bw_gbs": bw_, "busiest_link": link}
            out.append(make_row(flat, status="ok", metrics=metrics))
    return pd.DataFrame(out)


@pytest.mark.parametrize(
    ("one", "holds", "worst"),
    [(204.0, False, "2.00%"), (196.0, False, "2.00%"), (201.0, True, "0.50%")],
    ids=["1:1 2% faster", "1:1 2% slower", "1:1 0.5% faster"],
)
def test_the_adr_0011_claim_fails_when_one_to_one_is_faster_by_more_than_1pc(one, holds, worst):
    """ADR-0011 claims the mappings *agree* within 1% on local aligned accesses, so
    the claim is about |1:1 / n:1 - 1|, in either direction: 204 / 200 = 1.02 is 2%
    apart (DOES NOT HOLD), as is 196 / 200 = 0.98; 201 / 200 = 1.005 is 0.5% (HOLDS).
    The n:1 upper bound (1:1 / n:1 <= 1.01) fails at 1.02 and holds at 0.98 and
    1.005."""
    adr, bound, *_ = bw.check(bw.table(bw_rows({"fair": one})))
    assert adr.text.startswith("ADR-0011: local aligned accesses")
    assert adr.holds is holds
    assert f"worst |1:1/n:1 - 1| = {worst}" in adr.detail
    assert bound.holds is (one / 200 <= 1.01)


def test_with_both_fabric_models_the_adr_claim_stands_on_the_fair_rows():
    """Fair: 1:1 at 204 GB/s against n:1's 200 (2% apart); reservation: equal. The
    1:1-against-n:1 claims are judged on the fair rows, so ADR-0011 DOES NOT HOLD; the
    booking order changed the ratio by |1.00 - 1.02| = 0.02 > 1%, which fails too."""
    claims = bw.check(bw.table(bw_rows({"fair": 204.0, "reservation": 200.0})))
    adr = claims[0]
    assert adr.holds is False
    assert adr.detail.startswith(
        "fair model: 1 distinct configurations; worst |1:1/n:1 - 1| = 2.00%"
    )
    [booking] = [c for c in claims if "booking-order" in c.text]
    assert booking.holds is False


# -- 9. did-you-mean for keys of more than two parts; a truncated key ----------------


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (MM + "interleve_bytes", MM + "interleave_bytes"),
        (MM + "hbm_chanel_bw_gbs", MM + "hbm_channel_bw_gbs"),
        ("topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycle",
         "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles"),
        ("topology.links.pe_noc_bw", "topology.links.pe_noc_bw_gbs"),
    ],
)  # fmt: skip
def test_a_mistyped_key_of_several_parts_gets_its_suggestion(typed, meant):
    """Keys of 3 to 6 parts with the last part mistyped by one or a few letters: the
    one line names the key typed and suggests the one schema key whose last part is
    that close (the last part is what is compared: its parents are shared by many)."""
    with pytest.raises(UsageError) as info:
        check_overrides([f"{typed}=512"])
    assert str(info.value) == f"{typed}: no such key; did you mean {meant}?{HELP}"


@pytest.mark.parametrize(
    ("typed", "suggestion"),
    [
        ("workload.access", "; did you mean workload.access_bytes?"),
        ("topology.cube.memory", ""),  # the start of a node (memory_map), not of a key
        ("topology.links.pcie",
         "; did you mean topology.links.pcie_bw_gbs or topology.links.pcie_latency_ns?"),
        ("workload.bytes", "; did you mean workload.bytes_per_pe?"),
        ("topology.pe.attrs.pe_cost_model.fixed",
         "; did you mean topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles?"),
    ],
)  # fmt: skip
def test_a_truncated_key_is_no_such_key_not_a_node(typed, suggestion):
    """``workload.access`` is the start of ``workload.access_bytes`` but names no key
    and no node (a node is a key followed by '.', as ``topology.cube`` is of
    ``topology.cube.memory_map.*``): "no such key", never accepted as a prefix; the
    keys it starts (by last part, under the same parent) are suggested (issue 22:
    these had no suggestion, too far from the whole name for the similarity)."""
    with pytest.raises(UsageError) as info:
        check_overrides([f"{typed}=0,32"])
    assert str(info.value) == f"{typed}: no such key{suggestion}{HELP}"


def test_a_whole_node_is_still_left_to_omegaconf():
    """The other side of the same rule: a real node (``topology.links``) passes the
    pre-check, whose contents OmegaConf then checks."""
    check_overrides(["topology.links={pcie_bw_gbs: 16.0}"])


# -- 10. a test that hangs fails instead of hanging the suite ------------------------

ROOT = Path(__file__).resolve().parents[1]
HANGING = """
import subprocess
import sys


def test_loops_forever():
    while True:
        pass


def test_waits_forever_on_a_child():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(3600)"], check=False)


def test_after_them():
    pass
"""


def test_pytest_has_a_default_timeout_that_fails_only_the_hanging_test():
    """pyproject.toml: pytest-timeout in the ``test`` extra, and a default timeout
    (at least 600 s: the slowest tests on a loaded 2-core machine) by SIGALRM."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    test_extra = project["project"]["optional-dependencies"]["test"]
    assert any(req.startswith("pytest-timeout") for req in test_extra)
    ini = project["tool"]["pytest"]["ini_options"]
    assert ini["timeout"] >= 600
    assert ini["timeout_method"] == "signal"


def test_a_test_that_hangs_fails_and_the_session_goes_on(tmp_path):
    """pytest with this project's settings (its pyproject.toml) and the timeout cut to
    1 s, on three tests: a loop that never ends, a wait on a child that sleeps for an
    hour, and one that passes. Each hanging test fails on its own ('Timeout') and the
    session runs the third: 2 failed, 1 passed, exit status 1 (the thread method
    would end the whole session at the first timeout instead)."""
    (tmp_path / "test_hangs.py").write_text(HANGING)
    argv = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
            f"--rootdir={tmp_path}", "-p", "no:cacheprovider", "--timeout=1",
            "-o", "addopts=", "-rfE", str(tmp_path / "test_hangs.py")]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "2 failed, 1 passed" in proc.stdout, proc.stdout[-3000:]
    failed = dict(
        line.removeprefix("FAILED ").split(" - ", 1)
        for line in proc.stdout.splitlines()
        if line.startswith("FAILED ")
    )
    assert sorted(failed) == [
        "test_hangs.py::test_loops_forever",
        "test_hangs.py::test_waits_forever_on_a_child",
    ]
    assert all(why.startswith("Failed: Timeout (>1.0s)") for why in failed.values()), failed
