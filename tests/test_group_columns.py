"""The group options a row was composed from are columns of it (``channel_mapping``,
``traffic``, ...), as the user typed them, outside the config hash: two compositions of
one configuration are one point (issue 38)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd

from kernbench.config.columns import group_names
from kernbench.sweep import MERGED_FILE

SMALL = ["topology=small", "workload.bytes_per_pe=8192", "workload.access_bytes=4096"]


def sweep(tmp_path, name: str, *overrides: str) -> pd.DataFrame:
    where = tmp_path / name
    cmd = [sys.executable, "-m", "kernbench.app", "-m", *SMALL, *overrides,
           f"hydra.sweep.dir={where}", "cache=false"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return pd.read_parquet(where / MERGED_FILE)


def test_group_options_are_columns_and_not_part_of_the_config(tmp_path):
    """``traffic=hotspot`` sets pattern and active PEs; typing those keys instead is the
    same configuration (same config hash) with no traffic option (null)."""
    by_group = sweep(tmp_path, "a", "channel_mapping=one_to_one,n_to_one", "traffic=hotspot")
    by_keys = sweep(tmp_path, "b", "channel_mapping=one_to_one,n_to_one",
                    "workload.pattern=hotspot", "workload.active_pes=all")  # fmt: skip
    assert list(by_group.columns[: len(group_names())]) == list(group_names())
    assert by_group["channel_mapping"].tolist() == ["one_to_one", "n_to_one"]
    assert by_group["traffic"].tolist() == ["hotspot", "hotspot"]
    assert by_keys["traffic"].isna().all()
    assert (by_group[["address", "topology", "workload"]].values == ["va", "small", "stream"]).all()
    assert by_group["experiment"].isna().all()
    assert by_group["config_hash"].tolist() == by_keys["config_hash"].tolist()
    assert (by_group["workload.pattern"] == "hotspot").all()
