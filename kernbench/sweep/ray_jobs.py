"""Chunk jobs under ``hydra/launcher=ray`` (hydra-ray-launcher 1.2), launched here.

The plugin's own ``launch`` is kept for Hydra's stock path; the fast sweeper's chunk
jobs (:mod:`kernbench.sweep.remote`) go through :func:`launch` instead, which reads the
same ``hydra.launcher.ray`` config and submits each job with the plugin's own
``launch_job_on_ray``, but differs where the plugin failed a sweep:

- joining a running cluster (``init.address``, or ``RAY_ADDRESS``) passes no
  ``object_store_memory``: the plugin always set 75 MiB, which ``ray.init`` refuses
  when it connects ("When connecting to an existing cluster, object_store_memory must
  not be provided"), so the cluster command (docs/how-to/cluster.md) failed with a
  traceback. Without either, Ray starts a private instance (``address="local"``),
  with the plugin's 75 MiB unless the config says otherwise;
- after ``ray.init`` the sweeper's SIGTERM handler is set again: Ray's replaced it
  (exit 1, or 134 with Ray's signal dump, merging nothing), so SIGTERM now stops the
  sweep as Ctrl-C does (:mod:`kernbench.sweep.stop`);
- each job's result is fetched on its own: a job Ray gives up on (its worker killed
  with no retries left: ``WorkerCrashedError``) is a failed job, whose points become
  error rows, and the others are kept (the plugin's ``ray.get`` of every job raised the
  first such error out of the sweep);
- a private instance is shut down when its jobs are done, and a reaper
  (:mod:`kernbench.sweep.reaper`) ends its processes if the sweep dies first;
- a private instance listens on 127.0.0.1 only (:func:`on_loopback`): started by
  ``ray.init`` it bound its GCS, raylet, workers and dashboard agent to every
  interface, so anyone who could reach the machine could submit code to run as the
  user sweeping, for as long as the sweep ran.

A ``ray.init`` that fails (a misspelt key, no cluster found for ``auto``) is one line
naming ``hydra.launcher.ray.init``.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NamedTuple

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, setup_globals
from omegaconf import DictConfig, OmegaConf, open_dict

from kernbench.errors import ConfigError, error_line
from kernbench.sweep import stop
from kernbench.sweep.reaper import start_time

log = logging.getLogger(__name__)

INIT_KEY = "hydra.launcher.ray.init"
PLUGIN_STORE_BYTES = 78_643_200  # the plugin's object_store_memory (75 MiB)
REAPER = Path(__file__).with_name("reaper.py")
LOOPBACK = "127.0.0.1"


def is_ray_launcher(launcher: Any) -> bool:
    """Whether ``launcher`` is hydra-ray-launcher's local ``RayLauncher``."""
    module = sys.modules.get("hydra_plugins.hydra_ray_launcher.ray_launcher")
    return module is not None and isinstance(launcher, module.RayLauncher)


def launch(launcher: Any, count: int) -> list[JobReturn]:
    """Jobs ``0 .. count-1`` of ``launcher``'s task, as the plugin runs them, each
    job's result fetched on its own (see the module's docstring)."""
    import ray

    setup_globals()
    configure_log(launcher.config.hydra.hydra_logging, launcher.config.hydra.verbose)
    log.info(f"Ray: launching {count} chunk jobs")
    with started(launcher.ray_cfg.init):
        refs = [submit(launcher, num) for num in range(count)]
        wait_all(ray, refs)
        return [fetch(ray, ref) for ref in refs]


def submit(launcher: Any, num: int) -> Any:
    """Job ``num`` submitted as a Ray task, exactly as the plugin submits it."""
    from hydra_plugins.hydra_ray_launcher._launcher_util import launch_job_on_ray

    context = launcher.hydra_context
    config = context.config_loader.load_sweep_config(launcher.config, [])
    with open_dict(config):
        config.hydra.job.id = f"job_id_for_{num}"
        config.hydra.job.num = num
    return launch_job_on_ray(
        context, launcher.ray_cfg.remote, config, launcher.task_function, Singleton.get_state()
    )


def wait_all(ray: Any, refs: list[Any]) -> None:
    """Wait until every task has ended, in steps of :data:`stop.POLL_S`: between them
    Python runs a stop signal's handler at once, where ``ray.get`` looks for signals
    once a second (Ray's ``get_check_signal_interval_milliseconds``), and a sweep told
    to stop ran on meanwhile (all 4 points of a test done instead of 1)."""
    waiting = refs
    while waiting:
        _, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=stop.POLL_S)


def fetch(ray: Any, ref: Any) -> JobReturn:
    """The job's own JobReturn, or a failed one holding the error Ray gave up with."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:  # not the stop: a KeyboardInterrupt
        return JobReturn(status=JobStatus.FAILED, _return_value=exc)


@contextmanager
def started(init: DictConfig) -> Iterator[None]:
    """Ray started (private) or joined for the block. A private instance is watched
    by the reaper meanwhile and shut down after; a joined cluster is left running."""
    import ray

    if ray.is_initialized():  # started by someone else: theirs to end
        yield
        return
    kwargs = init_kwargs(init)
    if kwargs.get("address") is None and not os.environ.get("RAY_ADDRESS"):
        # Private, as docs/how-to/cluster.md says, not ray.init's None: that joined a cluster
        # `ray start` had left on this machine (its address file), if there was one.
        kwargs["address"] = "local"
    private = kwargs.get("address") == "local"
    if private:
        kwargs.setdefault("object_store_memory", PLUGIN_STORE_BYTES)
        kwargs.setdefault("dashboard_host", LOOPBACK)
    loopback = on_loopback() if private and "_node_ip_address" not in kwargs else nullcontext()
    with _stop_handlers_kept(), loopback:
        try:
            ray.init(**kwargs)
        except Exception as exc:
            raise ConfigError(INIT_KEY, f"Ray did not start: {error_line(exc)}") from None
    reaper = watch_cluster() if private else None
    # On a stop (or a failure) the block raises: Ray is left as it is for
    # remote.abandon_jobs, which shuts it down and kills what is left, the reaper too.
    yield
    ray.shutdown()
    if reaper is not None:
        os.close(reaper.pipe)  # the reaper ends what the shutdown left, then exits
        reaper.process.wait()


@contextmanager
def on_loopback() -> Iterator[None]:
    """A private instance started in the block listens on 127.0.0.1 alone: its GCS
    and raylet, its workers, its dashboard and agents.

    Ray binds its servers to 127.0.0.1 when the node's address is a loopback one, and
    to every interface otherwise; but ``ray.init`` (and ``ray start``) replace a
    loopback ``_node_ip_address`` with the address other machines reach this one at,
    unless Ray runs as "no cluster" (its default on macOS and Windows: Ray's constant
    ``ENABLE_RAY_CLUSTER``, read when the address is chosen). That constant is false
    for the block; the node's processes are then given 127.0.0.1 as their address. It
    is restored after, so a cluster joined later is reached as before.
    tests/test_ray_local.py checks every listening socket of a private sweep's cluster."""
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def init_kwargs(init: DictConfig) -> dict[str, Any]:
    """``ray.init``'s arguments: the config's, with ``object_store_memory`` left out
    unless the config sets it (null is "not given")."""
    kwargs = OmegaConf.to_container(init, resolve=True) or {}
    assert isinstance(kwargs, dict)
    if kwargs.get("object_store_memory") is None:
        kwargs.pop("object_store_memory", None)
    return {str(k): v for k, v in kwargs.items()}


@contextmanager
def _stop_handlers_kept() -> Iterator[None]:
    """The sweeper's SIGINT and SIGTERM handlers kept through ``ray.init``, which
    replaced SIGTERM's with its own (``sys.exit``; a private head's also killed its
    processes) and Ray's C++ signal dump. Ray's setter
    (``ray._private.utils.set_sigterm_handler``, which ``ray.init`` calls for the driver
    and a private head) does nothing meanwhile, so a SIGTERM while Ray starts (seconds)
    stops the sweep too (it exited 15); after the block the handlers are set again,
    which also takes the signals back from the C++ handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import ray._private.utils as ray_utils

    setter = getattr(ray_utils, "set_sigterm_handler", None)
    before = {signum: signal.getsignal(signum) for signum in stop.STOP_SIGNALS}
    if setter is not None:
        ray_utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if setter is not None:
            ray_utils.set_sigterm_handler = setter
        for signum, handler in before.items():
            if handler is not None:  # None: not set from Python, nothing to restore
                signal.signal(signum, handler)


class Reaper(NamedTuple):
    process: subprocess.Popen
    pipe: int  # the write end: the reaper acts when it closes


def watch_cluster() -> Reaper:
    """Start the reaper (:mod:`kernbench.sweep.reaper`) and list this process's
    descendants for it: the private cluster ``ray.init`` just started. The pipe's write
    end is a plain descriptor, not a file object, so that nothing but closing it (or
    this process ending) closes it; no child inherits it."""
    cluster = stop.descendants(os.getpid())
    read, write = os.pipe()
    try:
        process = subprocess.Popen([sys.executable, "-I", "-S", str(REAPER)], stdin=read)
    finally:
        os.close(read)
    started = {pid: start_time(pid) for pid in cluster}
    lines = "".join(f"{pid} {t}\n" for pid, t in started.items() if t is not None)
    os.write(write, lines.encode())  # a few hundred bytes: within the pipe's buffer
    return Reaper(process, write)
