"""Figures a benchmark measured, written where the documentation reads them.

A benchmark calls :func:`record` with its figures; the file lands in
``docs/measured/<name>.json`` with the command, machine, build and commit that produced
them, and the docs show it wherever a page says ``<!-- measured: <name> -->``
(docs/hooks/reference.py). So no timing in the docs is copied by hand: rerun the
benchmark (``pytest -m benchmark -s tests/<file>``) and commit the file it rewrote.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import date
from pathlib import Path

import kernbench

ROOT = Path(__file__).resolve().parents[1]


def machine() -> str:
    """``Intel(R) Xeon(R) ..., 2 cores, load average 3.1``: what moves a timing."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
                 if ln.startswith("model name")]  # fmt: skip
        model = names[0] if names else model
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{model}, {os.cpu_count()} cores, load average {load:.1f} at the end"


def commit() -> str:
    """The checkout's short commit, ``+changes`` when its files differ from it."""
    run = {"cwd": ROOT, "capture_output": True, "text": True}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], **run).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **run)
    return (head or "unknown") + ("+changes" if dirty.stdout.strip() else "")


def record(name: str, command: str, figures: dict[str, str], writer: str) -> Path:
    """Write ``docs/measured/<name>.json``: ``figures`` (label -> value with its unit)."""
    path = ROOT / "docs" / "measured" / f"{name}.json"
    data = {
        "command": command,
        "date": date.today().isoformat(),
        "machine": machine(),
        "build": kernbench.build(),
        "commit": commit(),
        "writer": writer,
        "figures": figures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path
