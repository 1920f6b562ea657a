"""Benchmark (``pytest -m benchmark -s tests/test_bench_help.py``): ``kernbench --help``
costs little more than importing Hydra, which it needs to parse the command line.

Issue 38 asked for ``--help`` under 1 s; it took 2-4.6 s because the console script
imported the simulator, pandas and pyarrow, and Hydra's ``compose`` scanned every
installed plugin (kernbench's own import the sweep machinery) before the help was
printed. A wall-clock limit would fail on a loaded machine, so this holds the CPU time
of ``kernbench --help`` (the console script, as users run it) to a ratio of the CPU time
of ``python -c "import hydra, omegaconf"`` measured in the same run, interleaved: the
median of 5 of each. Before the fix the ratio was about 5 (1.00 s against 0.20 s: the
code of commit 06a6b11, pure build, on the 2-core development machine); after it about 2
(0.42 s); the target is 2.5. Writes its figures to docs/measured/help.json
(tests/measured.py).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.measured import record

pytestmark = pytest.mark.benchmark
ROUNDS = 5
TARGET = 2.5


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU time of one run of ``argv`` (its children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def test_help_costs_little_more_than_importing_hydra():
    kernbench = str(Path(sys.executable).parent / "kernbench")
    hydra = [sys.executable, "-c", "import hydra, omegaconf"]
    cpu_seconds([kernbench, "--help"])  # warm the file cache and .pyc files
    helps, imports = [], []
    for _ in range(ROUNDS):
        helps.append(cpu_seconds([kernbench, "--help"]))
        imports.append(cpu_seconds(hydra))
    help_s, import_s = statistics.median(helps), statistics.median(imports)
    ratio = help_s / import_s
    print(f"\nkernbench --help: {help_s:.2f} s CPU; import hydra: {import_s:.2f} s; x{ratio:.2f}")
    record(
        "help",
        "pytest -m benchmark -s tests/test_bench_help.py",
        {
            "`kernbench --help`, CPU time (median of 5)": f"{help_s:.2f} s",
            '`python -c "import hydra, omegaconf"`, CPU time (median of 5)': f"{import_s:.2f} s",
            "the ratio (target: at most 2.5; before the fix about 5)": f"{ratio:.2f}",
        },
        writer="tests/test_bench_help.py",
    )
    assert ratio <= TARGET
