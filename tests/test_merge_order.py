"""Merged rows are in ``job_num`` order, also where directory order differs (issue 12).

With 12 jobs, directory names sort as 0, 1, 10, 11, 2, ...: an order check over 4 jobs
or fewer cannot tell the two apart. The rows are written in a shuffled order too, so
neither file-system order nor writing order can pass for job order.
"""

from __future__ import annotations

import random

import pyarrow.parquet as pq

from kernbench.results import make_row, write_rows
from kernbench.sweep import MERGED_FILE, merge_sweep

JOBS = 12


def test_twelve_jobs_merge_in_job_num_order(tmp_path):
    nums = list(range(JOBS))
    random.Random(12).shuffle(nums)
    for n in nums:
        row = make_row({"x": n * 10}, status="ok", sweep_id=str(tmp_path), job_num=n)
        write_rows([row], tmp_path / str(n) / "result.parquet")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[:4] == ["0", "1", "10", "11"]  # directory order is not job order
    outcome = merge_sweep(tmp_path)
    assert (outcome.n_rows, outcome.n_errors) == (JOBS, 0)
    rows = pq.read_table(tmp_path / MERGED_FILE).to_pylist()
    assert [r["job_num"] for r in rows] == list(range(JOBS))
    assert [r["x"] for r in rows] == [10 * n for n in range(JOBS)]
