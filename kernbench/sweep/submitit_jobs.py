"""Chunk jobs under ``hydra/launcher=submitit_slurm`` and ``submitit_local``
(hydra-submitit-launcher 1.2), launched here.

The plugin's ``launch`` builds a submitit executor from ``hydra.launcher.*``, submits
one array job and returns ``[job.results()[0] for job in jobs]``: the first job that
did not complete (killed, out of time past ``max_num_timeout`` requeues, its node
lost: submitit's ``UncompletedJobError``) raised out of the sweep with a traceback and
no table, while the other jobs ran on. :func:`launch` builds the same executor (the
same keys, the same array) and the same jobs (the launcher itself is each job's
callable, as in the plugin), and fetches each job's result on its own: a job that did
not complete is a failed job, whose points become error rows
(:mod:`kernbench.sweep.remote`), and the sweep goes on. Hydra's stock path keeps the
plugin's own ``launch``.

submitit pickles each job (the launcher, its config, the task) into
``hydra.launcher.submitit_folder`` (``<sweep>/.submitit/%j`` by default), where the
job unpickles it, and each job's result back there, where this process unpickles it.
So the folder's fixed part (up to its first ``%`` field) is made a directory only this
user can use (:func:`kernbench.files.private_dir`), refused in one line naming
``hydra.launcher.submitit_folder`` if it is a symbolic link or another user's, and
checked again before each job's result is read (:func:`fetch`).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from kernbench.errors import ConfigError
from kernbench.files import UnsafePath, private_dir

log = logging.getLogger(__name__)

PLUGIN = "hydra_plugins.hydra_submitit_launcher.submitit_launcher"
FOLDER_KEY = "hydra.launcher.submitit_folder"
INIT_KEYS = {"submitit_folder", "max_num_timeout"}  # the executor's, not the jobs'
# submitit waits 15 s for the result file of a job that ended without one, in case a
# network filesystem shows it late: right for a SLURM job written on another node,
# but a local job (a child of this process) wrote it here before it ended. A killed
# local job's points wait 1 s then, not 15.
LOCAL_RESULT_WAIT_S = 1


def is_submitit_launcher(launcher: Any) -> bool:
    """Whether ``launcher`` is one of hydra-submitit-launcher's (SLURM or local)."""
    module = sys.modules.get(PLUGIN)
    return module is not None and isinstance(launcher, module.BaseSubmititLauncher)


def launch(launcher: Any, count: int) -> list[JobReturn]:
    """Jobs ``0 .. count-1`` of ``launcher``'s task as one submitit array, each job's
    result fetched on its own (see the module's docstring)."""
    executor = make_executor(launcher)
    sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if "mode" in launcher.config.hydra.sweep:
        os.chmod(sweep_dir, mode=int(str(launcher.config.hydra.sweep.mode), 8))
    folder = private_folder(launcher.params["submitit_folder"])
    log.info(f"submitit '{launcher._EXECUTOR}': launching {count} chunk jobs")
    state = Singleton.get_state()
    jobs = executor.map_array(
        launcher,
        [[] for _ in range(count)],
        ["hydra.sweep.dir"] * count,
        list(range(count)),
        [f"job_id_for_{num}" for num in range(count)],
        [state] * count,
    )
    if launcher._EXECUTOR == "local":
        for job in jobs:
            job._results_timeout_s = LOCAL_RESULT_WAIT_S
    return [fetch(job, folder) for job in jobs]


def make_executor(launcher: Any) -> Any:
    """The executor the plugin builds from ``hydra.launcher.*``: the folder and
    ``max_num_timeout`` set it up, the other keys are its jobs' parameters (those that
    are not the plugin's common queue keys get the executor's prefix, ``slurm_``)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    name, params = launcher._EXECUTOR, launcher.params
    init = {"folder": params["submitit_folder"]}
    if "max_num_timeout" in params:
        init[f"{name}_max_num_timeout"] = params["max_num_timeout"]
    executor = submitit.AutoExecutor(cluster=name, **init)
    common = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(
        **{
            key if key in common else f"{name}_{key}": value
            for key, value in params.items()
            if key not in INIT_KEYS
        }
    )
    return executor


def private_folder(folder: str) -> Path | None:
    """The fixed part of submitit's ``folder`` (up to its first ``%`` field, which
    submitit fills in per job), made private to this user (see the module's
    docstring); a :class:`ConfigError` naming ``hydra.launcher.submitit_folder`` if it
    is a symbolic link or another user's. None for a folder that is all ``%`` fields
    (relative to where kernbench started, which is not kernbench's to make private)."""
    parts = Path(folder).parts
    fixed = next((n for n, part in enumerate(parts) if "%" in part), len(parts))
    if not fixed:
        return None
    try:
        return private_dir(Path(*parts[:fixed]))
    except UnsafePath as exc:
        raise ConfigError(
            FOLDER_KEY,
            f"{exc}; submitit keeps the jobs it runs there as pickles, which run code when"
            " read: it must be a directory of the sweeping user's that no one else can"
            " write (remove it, or choose another folder)",
        ) from None


def fetch(job: Any, folder: Path | None) -> JobReturn:
    """The job's own JobReturn, or a failed one holding why it gave none: submitit's
    ``UncompletedJobError`` (a RuntimeError; a stop is a KeyboardInterrupt), told in
    one line where it ran to several (the job, and its log). Its result is read only
    once the job has ended and ``folder`` is still private to this user."""
    from submitit.core.utils import FailedJobError, UncompletedJobError

    try:
        job.wait()
        if folder is not None:
            private_folder(str(folder))
        return job.results()[0]
    except ConfigError as exc:
        return JobReturn(status=JobStatus.FAILED, _return_value=RuntimeError(str(exc)))
    except RuntimeError as exc:
        why = exc
        if not isinstance(exc, FailedJobError):  # killed, lost or out of time
            why = UncompletedJobError(
                f"submitit job {job.job_id} (task {job.task_id}) ended without a result"
                f" (killed, out of time, its node lost); its log: {job.paths.stderr}"
            )
        return JobReturn(status=JobStatus.FAILED, _return_value=why)
