"""Progress: the run bar changes no result and counts every command; sweep log lines.

The bar is driven in-process into a StringIO (``enabled=True``, no delay) so its output
can be read; the system's observer hook must leave every metric and the op log exactly
as a plain ``env.run`` leaves them, also when a batch boundary falls anywhere.
"""

from __future__ import annotations

import dataclasses
import io
import re
import time

import pytest
from omegaconf import OmegaConf

from kernbench import simulate
from kernbench.config.schema import AddressConfig, AddressModel, ExecPath
from kernbench.sim import system as system_mod
from kernbench.sweep import progress, remote
from kernbench.sweep.progress import RunBar, SweepBar, progress_line, sweep_size
from tests.support import make_cfg

BASIC = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def stream_cfg(exec_path=ExecPath.replay):
    """VA: deploying runs the simulation to the install first, then the launch runs, so
    stopping a step late (or early) would shift every time after it."""
    cfg = make_cfg(bytes_per_pe=64 * 1024, access_bytes=1024, outstanding=2)
    cfg.sim = dataclasses.replace(cfg.sim, exec_path=exec_path, oplog=True)
    cfg.address = AddressConfig(model=AddressModel.va)
    return cfg


@pytest.mark.parametrize("every", [7, 4096])
@pytest.mark.parametrize("path", [ExecPath.replay, ExecPath.greenlet])
def test_observed_run_is_identical_and_counts_every_command(monkeypatch, every, path):
    plain = simulate.run(stream_cfg(path))
    monkeypatch.setattr(system_mod, "OBSERVE_EVERY_EVENTS", every)
    out = io.StringIO()
    updates: list[int] = []
    with RunBar(file=out, enabled=True, delay_s=0) as bar:
        advanced = bar.advanced
        monkeypatch.setattr(bar, "advanced", lambda system: updates.append(0) or advanced(system))
        seen = simulate.run(stream_cfg(path), observer=bar)
        counted = (bar.bar.n, bar.bar.total)
    assert seen.metrics == plain.metrics
    assert seen.oplog == plain.oplog
    commands = plain.metrics["accesses"]  # one DMA read per access: 64 per PE x 16 PEs
    assert commands == 1024
    # The bar moves while the launch runs: each read's stage end is a pipeline event
    # (its dispatch end too, unless that runs inline), so a report every 7 events
    # comes at least 1024 / 7 -> 146 times.
    if every == 7:
        assert len(updates) >= commands // every
    # Replay knows the total up front; the greenlet path counts without one.
    assert counted == (commands, commands if path is ExecPath.replay else None)
    assert out.getvalue().startswith("\rsimulating: ")


def test_bar_is_silent_off_a_terminal():
    out = io.StringIO()  # not a tty
    with RunBar(file=out, delay_s=0) as bar:
        simulate.run(stream_cfg(), observer=bar)
    assert not bar.enabled and out.getvalue() == ""


def test_progress_line():
    assert (
        progress_line(3, 8, 5, start=100.0, now=104.1)
        == "point 3/8 done (job 5), 4.1 s elapsed, ~6.8 s left"
    )
    assert progress_line(8, 8, 7, start=0.0, now=3725.0) == (
        "point 8/8 done (job 7), 1h02m05s elapsed, ~0.0 s left"
    )
    assert progress_line(2, None, 1, start=0.0, now=90.0) == "point 2 done (job 1), 1m30s elapsed"
    assert progress_line(2, 4, 1, start=None) == "point 2/4 done (job 1)"


def test_sweep_size_multiplies_every_list():
    cfg = OmegaConf.create(
        {
            "hydra": {
                "sweeper": {"_target_": BASIC, "params": {"a": "1,2,3", "w": "x"}},
                "overrides": {"task": ["b=x,y", "c=1"]},
            }
        }
    )
    assert sweep_size(cfg) == 6
    cfg.hydra.sweeper._target_ = "some.other.Sweeper"
    assert sweep_size(cfg) is None


def test_markers_count_points_across_workers(tmp_path):
    progress.start_sweep(tmp_path, 3, now=10.0)
    assert progress.finish_point(tmp_path, 2, now=12.0) == (
        "point 1/3 done (job 2), 2.0 s elapsed, ~4.0 s left"
    )
    assert progress.finish_point(tmp_path, 0, now=13.0).startswith("point 2/3 done (job 0)")
    # A point finishing twice (a retried job) is still one point.
    assert progress.finish_point(tmp_path, 0, now=13.5).startswith("point 2/3 done")


class _Result:
    def __init__(self, num: int, status: str = "ok", error: str | None = None) -> None:
        self.num, self.status, self.error = num, status, error


def test_sweep_bar_in_a_pipe_says_every_tenth_and_each_error():
    out = io.StringIO()
    bar = SweepBar(20, file=out, enabled=False)
    bar.start = 100.0
    for num in range(20):
        bar.point_done(_Result(num, *(("error", "boom") if num == 6 else ())), f"x={num}")
    lines = out.getvalue().splitlines()
    counts = [int(m) for m in re.findall(r"^sweep: (\d+)/20 points", out.getvalue(), re.M)]
    assert counts == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]  # one line per 10%
    assert lines.count("kernbench: error: point #6 (x=6): boom") == 1
    assert sum(", 1 error," in line for line in lines) == 7  # from the 7th point on


def test_sweep_bar_eta_is_elapsed_per_point_times_points_left():
    bar = SweepBar(40, file=io.StringIO(), enabled=False)
    bar.start, bar.done, bar.finished = 1000.0, 10, 10
    # 10 points in 5 s: 0.5 s a point, 30 to go -> 15 s left.
    assert bar.line(now=1005.0) == "sweep: 10/40 points, 5.0 s elapsed, ~15.0 s left"


def test_sweep_bar_on_a_terminal_is_one_bar_and_the_errors():
    out = io.StringIO()
    bar = SweepBar(3, file=out, enabled=True)
    for num, status in enumerate(["ok", "error", "ok"]):
        bar.point_done(_Result(num, status, "boom" if status == "error" else None), "x=1")
    bar.close()
    text = out.getvalue()
    assert "3/3" in text and "sweep" in text
    assert "kernbench: error: point #1 (x=1): boom" in text
    assert not re.search(r"^sweep: \d+/3 points", text, re.M)  # no log lines beside the bar


def test_sweep_bar_shows_points_finished_before_their_rows_come_back():
    """Under a cluster launcher the tasks' rows come back when the last task ends:
    progress() moves the bar meanwhile (a line per 10% passed), the rows are not
    counted again when they come, and the last one prints the final line, errors
    included."""
    out = io.StringIO()
    bar = SweepBar(10, file=out, enabled=False)
    bar.start = 100.0
    for finished in (0, 3, 3, 7, 10, 12):  # 12: a retried task noted its points twice
        bar.progress(finished)
    for num in range(10):
        bar.point_done(_Result(num, *(("error", "boom") if num == 4 else ())), "x=4")
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "sweep: 3/10 points",
        "sweep: 7/10 points",
        "sweep: 10/10 points",
        "kernbench: error: point #4 (x=4): boom",
        "sweep: 10/10 points",
    ]
    assert lines[-1].startswith("sweep: 10/10 points, 1 error, ")


def test_sweep_bar_on_a_terminal_counts_a_point_once():
    bar = SweepBar(4, file=io.StringIO(), enabled=True)
    bar.progress(3)
    assert bar.bar.n == 3
    for num in range(4):
        bar.point_done(_Result(num))
        assert bar.bar.n == max(3, num + 1)
    bar.close()


def test_points_marked_done_are_counted_once_and_watched(tmp_path, monkeypatch):
    for num in (0, 2, 5, 2):  # 2 twice: a retried task
        progress.mark_done(tmp_path, num)
    assert progress.count_done(tmp_path) == 3
    assert progress.count_done(tmp_path / "elsewhere") == 0  # nothing marked yet
    seen: list[int] = []
    monkeypatch.setattr(remote, "WATCH_S", 0.01)
    with remote.FinishedWatch(tmp_path, seen.append):
        time.sleep(0.2)
    assert seen and set(seen) == {3}
