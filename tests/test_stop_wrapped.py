"""A stop signal that C code hands back wrapped still stops a sweep in order.

The sweep's signal handler raises :class:`~kernbench.sweep.stop.Interrupted` in whatever
Python code runs when the signal comes. Under the Ray launcher that can be Ray's
``ray.get`` unpickling a finished job's result, and Ray then raised ``SystemError:
<built-in method __new__ ...> returned a result with an exception set`` *from* it.
The sweep exited 1 with that traceback instead of 130 and its one line (seen in
``tests/test_stop.py``'s Ray test, about one run in five on this machine). Or the C
code takes the signal and raises its own: Ray's wait runs the handler and takes only a
KeyboardInterrupt from it; it wrote our stop off as unraisable and waited for every
point (the same test, about one run in seven: "2 of 2 points done").
"""

from __future__ import annotations

import pytest

from tests.support import run_python

# A launcher whose wait the signal interrupts inside C code: run_plan must take what
# it raises as the stop (read the finished points' marks, end the launcher's
# processes, return) and not let it out. The handler (the sweep's, installed) raises
# the stop; C code hands it back wrapped, from it (``__cause__``) or during it
# (``__context__``), or as it is. An error with no stop requested is the launcher's
# own and goes out as it came (a KeyboardInterrupt too: no handler installed, as
# under the launch API). In a fresh process: run_plan ends this process's children
# when it stops.
RUN_PLAN = """
import signal, sys
from pathlib import Path
from kernbench.sweep import stop
from kernbench.sweep.plan import Plan
from kernbench.sweep.run import run_plan

how = sys.argv[2]

def run(chunks, gather):
    if how == "ValueError":
        raise ValueError("not a stop")
    if how == "KeyboardInterrupt":
        raise KeyboardInterrupt()
    try:
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # the stop handler
    except stop.Interrupted as exc:
        if how == "from":
            raise SystemError("returned a result with an exception set") from exc
        if how == "during":
            raise SystemError("returned a result with an exception set")
        raise

with stop.handled() as request:
    gather = run_plan(Plan([], []), [], Path(sys.argv[1]), run, request, polled=False)
print("stopped in order with", len(gather.results), "points done")
"""


@pytest.mark.parametrize("how", ["from", "during", "as it is"])
def test_a_launchers_wait_interrupted_inside_c_code_stops_in_order(tmp_path, how):
    proc = run_python(RUN_PLAN, str(tmp_path), how)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "stopped in order with 0 points done\n"


@pytest.mark.parametrize("error", ["ValueError", "KeyboardInterrupt"])
def test_a_launchers_own_error_with_no_stop_requested_goes_out(tmp_path, error):
    proc = run_python(RUN_PLAN, str(tmp_path), error)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1].startswith(error)


# A launcher whose wait checks for signals as Ray's ray.get does
# (ray._raylet.check_signals, Ray 2.x): it runs the handler through PyErr_CheckSignals,
# takes a KeyboardInterrupt as "interrupted" and raises a KeyboardInterrupt of its own
# (not the handler's) out of the wait; anything else the handler raises is written off
# as unraisable, and the wait goes on. The sweep must stop at once, in order.
RAY_LIKE_WAIT = """
import signal, sys
from pathlib import Path
from kernbench.sweep import stop
from kernbench.sweep.plan import Plan
from kernbench.sweep.run import run_plan

def check_signals():
    try:  # PyErr_CheckSignals runs the installed handler for the pending Ctrl-C
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
    except KeyboardInterrupt:
        return "interrupted"
    except BaseException as exc:
        print('Exception ignored in check_signals:', repr(exc), file=sys.stderr)
    return "ok"

def run(chunks, gather):
    if check_signals() == "interrupted":
        raise KeyboardInterrupt()
    print("the wait went on to the last point")

with stop.handled() as request:
    gather = run_plan(Plan([], []), [], Path(sys.argv[1]), run, request, polled=False)
print("stopped by", signal.Signals(request.signum).name, "with", len(gather.results), "points done")
"""


def test_a_wait_that_takes_only_keyboardinterrupt_stops_the_sweep(tmp_path):
    proc = run_python(RAY_LIKE_WAIT, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "stopped by SIGINT with 0 points done\n", proc.stderr[-3000:]


# A launcher that hands back point 0's row, while its jobs mark points 0 and 1 done
# (point 0's mark written before its row came back, as a job marks each point as it
# ends), then is interrupted: run_plan reads the marks of the points it has not
# gathered, so point 1 comes from its mark, point 0 only from the launcher, and
# point 2 (never finished) from neither. The table holds each job number once.
STOPPED_WITH_MARKS = """
import signal, sys
from pathlib import Path
import pyarrow.parquet as pq
from kernbench.sweep import remote, stop
from kernbench.sweep.plan import Plan, Point
from kernbench.sweep.points import PointResult
from kernbench.sweep.run import run_plan

sweep = Path(sys.argv[1])

def result(num):
    return PointResult(num, "ok", log=f"point {num}\\n", rows=[{"job_num": num, "status": "ok"}])

def run(chunks, gather):
    for num in (0, 1):
        remote.mark_finished(sweep, result(num))
    gather(result(0))
    signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # the stop, inside the wait

plan = Plan([Point(n, [f"workload.seed={n}"], 0) for n in range(3)], [])
with stop.handled() as request:
    gather = run_plan(plan, [], sweep, run, request, polled=False)
gather.merge()
print(pq.read_table(sweep / "results.parquet").column("job_num").to_pylist())
print((sweep / "points.log").read_text().count("point 0"), sorted(gather.results))
"""


def test_a_stopped_sweep_gathers_each_point_once(tmp_path):
    proc = run_python(STOPPED_WITH_MARKS, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "[0, 1]\n1 [0, 1]\n"
