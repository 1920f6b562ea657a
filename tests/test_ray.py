"""The Ray launcher joins, fails and stops as the local pool does (issue 36).

Each test runs the real ``kernbench -m`` in a subprocess, under ``hydra/launcher=ray``:
either joining a cluster this module starts once (``ray start --head``, in its own
process group, ports and temporary folder, so that nothing of another Ray on the
machine is touched, and killed by process group at the end), or starting a private Ray
instance, as the documented default does. What must hold:

- joining a running cluster works (the plugin's ``object_store_memory`` made
  ``ray.init`` refuse to), with the documented command too;
- a chunk job Ray gives up on (its worker killed, no retries left) becomes an error row
  for each of its points, and the sweep goes on and writes its table; a ``ray.init``
  that fails is one line;
- SIGTERM to the sweeping process stops it like Ctrl-C: exit 143, one line, the finished
  points' rows merged; resuming then runs only the other points;
- a SIGKILL of the sweeping process leaves no process of its private cluster (Ray's
  agents lived on for a minute) a few seconds later, and a rerun lists every point once,
  the points that had finished from the cache.

Every table a rerun or resume completes is the local pool's, metrics included.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.sweep import MERGED_FILE
from kernbench.sweep.stop import descendants
from tests.test_launchers import (
    cached_points,
    cluster_command,
    command,
    environment,
    group_size,
    run_cli,
    stable,
    sweep,
)
from tests.test_stop import start, wait_for

pytestmark = pytest.mark.slow
pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the ray extra is not installed")

# Four points of a few tenths of a second, a chunk each (SLOW_GRID's first four).
GRID = (
    "hydra.sweeper.chunk_size=1",
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=2097152",
    "workload.outstanding=1,2,3,4",
)
N_POINTS = 4
PRIVATE = ("hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2")
GONE_S = 5.0  # "a few seconds": no process of a sweep's cluster may outlive it longer


class Cluster:
    """A one-CPU Ray cluster started with ``ray start --head --block``."""

    def __init__(self) -> None:
        self.temp = Path(tempfile.mkdtemp(prefix="kbray-"))  # short: Ray's socket paths
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        log = (self.temp / "head.log").open("w")
        self.head = subprocess.Popen(
            [
                sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                "--node-ip-address=127.0.0.1", f"--port={self.port}",
                f"--ray-client-server-port={_free_port()}",
                f"--dashboard-agent-listen-port={_free_port()}",
                "--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats",
                f"--temp-dir={self.temp / 'ray'}",
            ],
            env=environment(), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the cluster's processes
        )  # fmt: skip

    def wait_started(self, within: float = 120) -> None:
        deadline = time.monotonic() + within
        log = self.temp / "head.log"
        while "Ray runtime started" not in log.read_text():
            assert self.head.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)

    def workers(self) -> list[int]:
        """The cluster's processes (the head's descendants)."""
        return descendants(self.head.pid)

    def stop(self) -> None:
        """Kill every process of the cluster (its process group), then its files. (Not
        waited for: SIGKILL cannot be refused, and waiting until the zombies that init
        reaps have gone from the group took 1.7-2 s.)"""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.head.pid, signal.SIGKILL)
        self.head.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    try:
        started.wait_started()
        yield started
    finally:
        started.stop()


def joined(cluster: Cluster) -> tuple[str, ...]:
    return ("hydra/launcher=ray", f"hydra.launcher.ray.init.address={cluster.address}")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[dict]:
    """The grid's table from the local pool."""
    local = tmp_path_factory.mktemp("local")
    rows, _ = sweep(local, "s", *GRID, "hydra.launcher.n_jobs=2", "cache=false")
    assert [r["job_num"] for r in rows] == list(range(N_POINTS))
    return rows


def test_a_chunk_job_ray_gives_up_on_becomes_error_rows(launcher_stop, cluster):
    """``max_retries=0`` and the worker running chunk 0 killed: Ray gives that task up
    (WorkerCrashedError), which aborted the sweep with a traceback and no table. Now
    its point is an error row, and chunk 1's point is ok. (Joining the cluster at all
    failed before: the plugin's object_store_memory, which ray.init refuses then.)"""
    launcher = ("+hydra.launcher.ray.remote.max_retries=0", *joined(cluster))
    rows = launcher_stop.kill_chunk_zero(lambda proc: cluster.workers(), *launcher)
    assert rows[0]["error"].startswith("its chunk job failed: WorkerCrashedError: The worker")
    assert "\n" not in rows[0]["error"]


def test_a_ray_init_that_fails_is_one_line(tmp_path):
    """A misspelt ``hydra.launcher.ray.init`` key: ray.init refuses it before it starts
    or looks for anything (a cluster address that does not answer is another matter:
    Ray retries it for minutes). It gave a traceback; now one line, exit 1."""
    proc = run_cli(
        tmp_path, command(tmp_path / "s", *GRID, *PRIVATE, "+hydra.launcher.ray.init.num_cpu=2")
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "kernbench: error: hydra.launcher.ray.init: Ray did not start: RuntimeError: Unknown"
        " keyword argument(s): num_cpu"
    ]


def test_ray_init_cannot_take_sigterm_from_the_sweeper():
    """``ray.init`` sets Ray's SIGTERM handler through
    ``ray._private.utils.set_sigterm_handler`` (for the driver, and again for a private
    head): while Ray starts (seconds) a SIGTERM exited 15, merging nothing. Inside the
    block that setter does nothing, and after it the sweeper's handlers are set again."""
    import ray._private.utils as ray_utils

    from kernbench.sweep import ray_jobs

    def ours(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, ours)
    try:
        with ray_jobs._stop_handlers_kept():
            ray_utils.set_sigterm_handler(lambda signum, frame: sys.exit(signum))
            assert signal.getsignal(signal.SIGTERM) is ours
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as Ray's C++ handler would
        assert signal.getsignal(signal.SIGTERM) is ours
        ray_utils.set_sigterm_handler(signal.SIG_DFL)  # Ray's setter works again after
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_stops_a_ray_sweep_like_ctrl_c_and_resume_finishes_it(
    tmp_path, launcher_stop, cluster, reference
):
    """SIGTERM to the sweeping process alone, once a point is done: Ray's own handler
    (ray.init's) exited 1 or 134 with Ray's signal dump, merging nothing."""
    done, total, stderr = launcher_stop.sigterm(*GRID, *joined(cluster))
    assert "SIGTERM received" not in stderr, stderr[-3000:]
    assert total == N_POINTS and 1 <= done < N_POINTS, "stopped part-way"
    out = launcher_stop.out

    # Resumed: the merged rows kept, the other points run.
    resumed = run_cli(tmp_path, command(out, *GRID, *joined(cluster), "hydra.sweeper.resume=true"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"Resuming: {done} of {N_POINTS} points kept" in resumed.stdout + resumed.stderr
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert stable(rows) == stable(reference)  # every point once, the same metrics


def test_a_killed_ray_sweep_leaves_no_process_and_reruns(tmp_path, cluster, reference):
    """SIGKILL to the sweeping process alone, a point done, under a private Ray
    instance: Ray's DashboardAgent and RuntimeEnvAgent outlived it by about a minute.
    The rerun is the documented cluster command (docs/how-to/cluster.md; ``address=auto``,
    RAY_ADDRESS naming the cluster as ``ray start`` does on its head node): the plugin's
    object_store_memory made ray.init refuse to join a cluster."""
    out = tmp_path / "sweep"
    proc = start(out, *GRID, *PRIVATE)
    wait_for(proc, lambda: cached_points(tmp_path) >= 1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone = time.monotonic() + GONE_S
    while group_size(proc.pid) and time.monotonic() < gone:
        time.sleep(0.05)
    left = subprocess.run(["ps", "-o", "pid,args", "-g", str(proc.pid)], capture_output=True)
    assert group_size(proc.pid) == 0, f"outlived the sweep: {left.stdout.decode()}"
    cached_before = cached_points(tmp_path)
    assert 1 <= cached_before < N_POINTS, "killed part-way"

    documented = [o for o in cluster_command("ray") if not o.startswith("+experiment=")]
    assert documented == ["hydra/launcher=ray", "hydra.launcher.ray.init.address=auto"]
    rerun = run_cli(
        tmp_path, command(out, *GRID, *documented), env={"RAY_ADDRESS": cluster.address}
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Connecting to existing Ray cluster" in rerun.stderr
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert stable(rows) == stable(reference)  # every point once, the same metrics
    assert sum(r["cached"] for r in rows) == cached_before
    assert cluster.head.poll() is None and cluster.workers(), "the sweep ended the cluster"
