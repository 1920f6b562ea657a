"""A stop signal that C code hands back wrapped still stops a sweep in order.

The sweep's signal handler raises :class:`~kernbench.sweep.stop.Interrupted` in whatever
Python code runs when the signal comes. Under the Ray launcher that can be Ray's
``ray.get`` unpickling a finished job's result, and Ray then raised ``SystemError:
<built-in method __new__ ...> returned a result with an exception set`` *from* it.
The sweep exited 1 with that traceback instead of 130 and its one line (seen in
``tests/test_stop.py``'s Ray test, about one run in five on this machine).
"""

from __future__ import annotations

import signal
import subprocess
import sys

from kernbench.sweep import stop


def wrapped(how: str) -> BaseException:
    """An error raised while the stop signal was being raised, as C code raises it:
    from it (``__cause__``) or during it (``__context__``)."""
    try:
        try:
            raise stop.Interrupted(signal.SIGINT)
        except stop.Interrupted as exc:
            if how == "from":
                raise SystemError("returned a result with an exception set") from exc
            raise SystemError("returned a result with an exception set")  # noqa: B904
    except SystemError as exc:
        return exc
    raise AssertionError("not raised")


def test_the_signal_is_found_behind_what_wrapped_it():
    for how in ("from", "during"):
        exc = wrapped(how)
        found = stop.interruption(exc)
        assert isinstance(found, stop.Interrupted) and found.signum == signal.SIGINT
    direct = stop.Interrupted(signal.SIGTERM)
    assert stop.interruption(direct) is direct
    assert stop.interruption(ValueError("not a stop")) is None
    assert stop.interruption(KeyboardInterrupt()) is None


# A launcher whose wait the signal interrupts inside C code: run_plan must take it as
# the stop (read the finished points' marks, end the launcher's processes, return)
# and not let the SystemError out. In a fresh process: run_plan ends this process's
# children when it stops.
RUN_PLAN = """
import signal, sys
from pathlib import Path
from kernbench.sweep import stop
from kernbench.sweep.plan import Plan
from kernbench.sweep.run import run_plan

def run(chunks, gather):
    try:
        raise stop.Interrupted(signal.SIGINT)
    except stop.Interrupted as exc:
        raise SystemError("returned a result with an exception set") from exc

request = stop.StopRequest()
request.signum = signal.SIGINT
gather = run_plan(Plan([], []), [], Path(sys.argv[1]), run, request, polled=False)
print("stopped in order with", len(gather.results), "points done")
"""


def test_a_launchers_wait_interrupted_inside_c_code_stops_in_order(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", RUN_PLAN, str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "stopped in order with 0 points done\n"
