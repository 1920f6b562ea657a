"""Ends a private Ray cluster's processes when the sweep that started them is gone.

``ray.init`` without an address starts a cluster whose processes die with the sweep
(Ray ties them to it), all but two: the raylet's ``DashboardAgent`` and
``RuntimeEnvAgent``. Each notices its raylet gone within 2 s, then, since the raylet did
not end through its SIGTERM, tries to report that to the GCS (dead too) and waits out a
60 s timeout: after a SIGKILL of the sweep they lived on for about a minute (100 s
seen under load). No Ray setting shortens that wait.

So the sweep starts this script beside its cluster (:func:`kernbench.sweep.ray_jobs.
watch_cluster`) and writes it the cluster's processes, one ``<pid> <start time>`` a
line, on a pipe only the sweep holds. The pipe closes when the sweep closes it or
exits, however (the kernel closes it on a SIGKILL too); then this script SIGKILLs each
listed process still alive with the same start time (a pid reused meanwhile is another
process), and exits.

Run as a script with the standard library only (``python -I -S reaper.py``), so it
starts in milliseconds and imports nothing of kernbench: it must not touch the sweep's
files or state.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def stat_field(pid: int, index: int) -> str | None:
    """Field ``index`` after the command name of ``/proc/<pid>/stat`` (0: the state
    letter, 19: when the process started), or None if it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[index]
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> str | None:
    """When the process started (field 22 of its stat), or None if gone."""
    return stat_field(pid, 19)


def main() -> None:
    # Ctrl-C to the terminal's process group is the sweeper's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    listed: dict[int, str] = {}
    for line in sys.stdin:  # until the sweep closes the pipe or is gone
        with contextlib.suppress(ValueError):
            pid, started = line.split()
            listed[int(pid)] = started
    for pid, started in listed.items():
        if start_time(pid) == started:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
