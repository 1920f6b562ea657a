"""The memory estimate before a stream run warns past half the machine and refuses past
all of it, naming the keys (kernbench.cli.estimate, issue 39).

The figures per term are the measured ones rounded up (the benchmark,
tests/test_bench_scale.py, holds the estimate against a run's peak at 16,384 PEs);
here what follows from the model (which terms a config has, that they grow with what
sets them, and what the user sees), and, on a small ``uniform`` run in a fresh
interpreter, that what the run allocates stays within the terms the estimate counts
for it and does not keep what it no longer needs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.cli import estimate
from kernbench.config.schema import StreamPattern
from kernbench.config.validate import validate
from kernbench.errors import ConfigError
from tests.support import make_cfg

GB = 1 << 30


def big(pattern: str = "hotspot", sips: int = 16, cubes: int = 16, **stream: object):
    """The issue's largest point (``sips`` x ``cubes`` x 64 PEs), 8 channels each, 1:1."""
    cfg = make_cfg(one_to_one=True, model="va", pattern=StreamPattern(pattern), **stream)
    topo = cfg.topology
    topo.n_sips, topo.cubes_per_sip, topo.pes_per_cube = sips, cubes, 64
    topo.cube.memory_map.hbm_pseudo_channels, topo.cube.memory_map.hbm_channels_per_pe = 512, None
    return validate(cfg)


def need(cfg) -> int:
    return sum(n for n, _, _ in estimate.memory_terms(cfg))


def test_the_largest_point_fits_in_well_under_4_gb():
    cfg = big(access_bytes=256, bytes_per_pe=256)
    terms = {what: n for n, what, _ in estimate.memory_terms(cfg)}
    assert terms["16,384 PEs x 1 route"] == 16384 * estimate.PE_BYTES
    assert need(cfg) < GB


def test_routes_draws_and_the_op_log_each_add_their_term():
    one = need(big(access_bytes=256, bytes_per_pe=256))
    # 1:1, 2 KiB accesses: each touches all 8 channels, 8 routes to the hotspot
    assert need(big(access_bytes=2048, bytes_per_pe=2048)) == one + 16384 * 7 * estimate.ROUTE_BYTES
    uniform = big("uniform", access_bytes=256, bytes_per_pe=4096)  # 16 targets each
    terms = {what for _, what, _ in estimate.memory_terms(uniform)}
    assert {"16,384 PEs x 16 routes", "262,144 draws"} <= terms
    logged = big(access_bytes=256, bytes_per_pe=256)
    logged.sim.oplog = True
    assert need(logged) == one + 16384 * estimate.OPLOG_BYTES
    gqa = make_cfg()
    gqa.workload.name = "gqa_opt3"
    assert estimate.memory_terms(gqa) is None  # a few PEs: nothing to estimate


def test_a_run_past_the_machine_is_refused_naming_the_keys():
    cfg = big("uniform", access_bytes=256, bytes_per_pe=1 << 20)  # 4,096 targets a PE
    assert need(cfg) > 64 * GB
    with pytest.raises(ConfigError) as err:
        estimate.check(cfg, have=64 * GB)
    text = str(err.value)
    assert text.startswith(f"{estimate.PES}, workload.active_pes, workload.pattern, ")
    assert "16,384 PEs x 4,096 routes: 128.3 GB" in text and "64.0 GB this machine has" in text


def test_past_half_the_machine_a_warning_below_it_nothing(capsys):
    cfg = big(access_bytes=256, bytes_per_pe=256)
    estimate.check(cfg, have=2 * need(cfg))
    assert capsys.readouterr().err == ""
    estimate.check(cfg, have=2 * need(cfg) - 2)
    line = capsys.readouterr().err
    assert line.startswith("kernbench: warning: the run needs about 556 MB of memory")
    assert line.rstrip().endswith("more than half the 1.1 GB this machine has")


def test_the_app_refuses_before_simulating(compose_cfg, monkeypatch, tmp_path, capsys):
    """The hook in job.run_job: an error row, the one error line, nothing simulated."""
    from kernbench import simulate
    from kernbench.job import run_job

    def never(*a, **kw):
        raise AssertionError("simulated")

    monkeypatch.setattr(simulate, "run_validated", never)
    monkeypatch.setattr(estimate, "machine_bytes", lambda: 100 << 20)  # below the process
    assert run_job(compose_cfg("workload.access_bytes=65536"), tmp_path) == "error"
    err = capsys.readouterr().err
    assert "kernbench: error: topology.n_sips x topology.cubes_per_sip x" in err
    assert "more than the 100 MB this machine has" in err


# A 1:1 ``uniform`` stream on 64 PEs (1 SIP x 1 cube x 64 PEs, 8 channels each), 64
# reads of 256 B per PE (one channel each), ``sys.argv[1]`` of them in flight per PE, in
# a fresh interpreter: the estimate's terms, and what building the system and running
# it allocated (tracemalloc) at its peak and still held once it ended (the system
# kept, as a report reads it). ``uniform`` is the pattern whose state grows with the
# run: a route and a queue per target channel, and components of every queue.
HELD = """
import json, sys, tracemalloc
from kernbench.cli import estimate
from kernbench.sim.system import System
from kernbench.workloads import stream
from tests.test_estimate_memory import big

cfg = big("uniform", 1, 1, access_bytes=256, bytes_per_pe=64 * 256, outstanding=int(sys.argv[1]))
terms = {what: n for n, what, _ in estimate.memory_terms(cfg)}
tracemalloc.start()
system = System(cfg)
row = stream.run(system, cfg.workload)
held, peak = tracemalloc.get_traced_memory()
print(json.dumps({"terms": terms, "peak": peak, "held": held, "accesses": row["accesses"]}))
"""


def held(outstanding: int) -> dict:
    """Run :data:`HELD` as a user's process meets it, from the repository's root."""
    out = subprocess.run(
        [sys.executable, "-c", HELD, str(outstanding)], capture_output=True, text=True,
        check=True, cwd=Path(__file__).parent.parent,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_long_uniform_run_stays_within_its_estimate():
    got = held(4)
    terms = got["terms"]
    assert got["accesses"] == 64 * 64
    # 64 PEs x 64 routes (64 targets of 64 x 8 channels, one channel each), 4,096 draws
    assert terms["64 PEs x 64 routes"] == 64 * (estimate.PE_BYTES + 63 * estimate.ROUTE_BYTES)
    assert terms["4,096 draws"] == 4096 * estimate.DRAW_BYTES
    counted = sum(n for what, n in terms.items() if what != "the process")
    # 6.2 MB against 10.0 MB; 16 MB when the bandwidth bound's walk over every router
    # of each target kept a route to each (one channel of eight is what an access took).
    assert got["peak"] <= counted


def test_a_finished_run_holds_the_same_whatever_it_kept_in_flight():
    # The same draws, so the same routes and queues, with 1 and 16 accesses in flight
    # per PE: components of about 64 and 1,000 queues. Once the run has ended, what it
    # holds (6.0-6.4 MB) must not carry its last components: idle links kept each one
    # they were last found in (+21% at 16 in flight), idle queues their last age order
    # (+62%).
    one, many = held(1), held(16)
    assert one["accesses"] == many["accesses"] == 64 * 64
    assert many["held"] <= 1.1 * one["held"]
