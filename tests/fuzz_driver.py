"""Run many single ``kernbench <overrides>`` runs in one process, for the override fuzz.

``tests/test_override_fuzz.py`` starts this as a subprocess (``sys.executable``) and
sends it one JSON line per example: ``{"argv": [...], "max_work": N}``. For each it does
what ``kernbench <argv>`` does for a single run, through the same functions
(``kernbench.app.main``): the pre-Hydra check (:func:`kernbench.cli.entry.before_hydra`),
composition of ``conf/`` by Hydra (here its compose API, initialised once in this
process, never reset), and :func:`kernbench.job.run_job` as ``_hydra_task`` calls it
(no point cache, as with ``cache=false``). What ``hydra.main`` prints for an exception
it catches (composition, or one escaping the task) is printed the same way: its
message and the HYDRA_FULL_ERROR hint, so a test sees the lines a user would.

It answers one JSON line: ``{"exit": code, "stderr": text, "rows": [...], "ran": bool}``
with the rows of the ``result.parquet`` the run wrote. A valid config with more than
``max_work`` DMA accesses or commands (:func:`kernbench.cli.estimate.work`), or a Triton
kernel over more than ``max_work`` elements, is validated and then not simulated
(``ran`` false, exit 0, no rows): such runs are long by request, not hangs.

Answers go to the file descriptor stdout had at start; everything the runs print
(Python's ``sys.stdout``, and the C-level fd 1) goes to stderr of this process, so no
stray output can corrupt the protocol.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import sys
import tempfile
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pyarrow.parquet as pq
from hydra import compose, initialize_config_dir

from kernbench import job, simulate
from kernbench.cli import entry, estimate
from kernbench.config.store import conf_dir, register_configs
from kernbench.results import RESULT_FILE
from kernbench.sweep.progress import RunBar

HYDRA_HINT = "\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."
TRITON_ELEMENTS = {
    "vector_add": ("size",),
    "softmax": ("rows", "cols"),
    "layer_norm": ("rows", "cols"),
    "matmul": ("m", "n", "k"),
    "decode_attention": ("num_heads", "seq_len", "head_dim"),
}


class TooMuchWork(BaseException):  # noqa: N818 - not an error: escapes run_job's handler
    """A valid config whose simulation this driver skips (see the module docstring)."""


def _work(cfg) -> int:
    found = estimate.work(cfg)
    if found is not None:
        return found[0]
    w = cfg.workload
    if w.name == "triton":
        return math.prod(getattr(w, k) for k in TRITON_ELEMENTS.get(w.kernel, ("size",)))
    return 0


def _gated(max_work: int):
    real = simulate.run_validated

    def run_validated(cfg, *args, **kwargs):
        if _work(cfg) > max_work:
            raise TooMuchWork
        return real(cfg, *args, **kwargs)

    return run_validated


def single_run(argv: list[str], out_dir: Path) -> int:
    """``kernbench <argv>`` (a single run), as ``kernbench.app.main`` does it."""
    try:
        argv = entry.before_hydra(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    try:
        cfg = compose(config_name="config", overrides=argv)
    except Exception as exc:  # hydra.main's run_and_report prints these so
        print(str(exc), file=sys.stderr)
        print(HYDRA_HINT, file=sys.stderr)
        return 1
    try:
        with RunBar(enabled=False) as bar:
            status = job.run_job(cfg, out_dir, job.JobId(), None, bar)
    except TooMuchWork:
        raise
    except Exception:  # a bug: Hydra would print it with its traceback
        traceback.print_exc()
        return 1
    return 0 if status == job.STATUS_OK else 1


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    work_root = Path(tempfile.mkdtemp(prefix="kernbench-fuzz-"))
    os.chdir(work_root)
    register_configs()  # as importing kernbench.app does for the command
    try:
        with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
            for n, line in enumerate(sys.stdin):
                request = json.loads(line)
                simulate.run_validated = _gated(int(request.get("max_work", 10**4)))
                out_dir = work_root / str(n)
                out_dir.mkdir()
                err, out = io.StringIO(), io.StringIO()
                ran = True
                with redirect_stderr(err), redirect_stdout(out):
                    try:
                        code = single_run(list(request["argv"]), out_dir)
                    except TooMuchWork:
                        code, ran = 0, False
                result = out_dir / RESULT_FILE
                rows = pq.read_table(result).to_pylist() if result.exists() else []
                answer = {"exit": code, "stderr": err.getvalue(), "rows": rows, "ran": ran}
                answers.write(json.dumps(answer, default=str) + "\n")
                answers.flush()
                shutil.rmtree(out_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)


if __name__ == "__main__":
    main()
