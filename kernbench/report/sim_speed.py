"""Simulator speed (issue 7, ``+experiment=sim_speed``): ``table``, ``check``, ``plot``.

One row per configuration and amount of work: accesses simulated, wall time, cost per
access, accesses per second against SimPy's bare timeout rate measured just before,
and the cost per access relative to the configuration's first point of at least 10^4
accesses. Claims: the speed targets per channel mapping, and wall time linear in work.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from kernbench.report.claims import Claim  # noqa: E402
from kernbench.report.plots import _config_keys, _label, _save  # noqa: E402
from kernbench.report.tables import (  # noqa: E402
    LINEAR_FROM,
    MAPPING,
    WORK,
    speed_sweep,
    varying_config,
)
from kernbench.results import STATUS_OK  # noqa: E402

__all__ = ["check", "plot", "table"]

# Accesses/s over SimPy's bare timeout rate, per mapping (1:1 does N sub-requests of
# work per access), and how flat the cost per access must stay (issue 7's targets).
SPEED_TARGETS = {"n_to_one": 0.5, "one_to_one": 0.25}
LINEAR_TOL = 0.20


def table(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per configuration and amount of work: accesses, wall time, cost per access,
    accesses per second against SimPy's bare rate, and the cost per access relative
    to the same configuration at its smallest point of at least 10^4 accesses.

    None when the table holds no speed measurements (``sim.measure_speed``).
    """
    if not speed_sweep(df):
        return None
    ok = df[(df["status"] == STATUS_OK) & df["speed_ratio"].notna()]
    if ok.empty:
        return None
    keys = varying_config(ok, exclude=(WORK,))
    table = ok[[*keys, "sim_accesses", "sim_wall_s", "accesses_per_s"]].copy()
    table["us_per_access"] = table["sim_wall_s"] / table["sim_accesses"] * 1e6
    table["bare_simpy_events_per_s"] = ok["bare_simpy_events_per_s"]
    table["speed_ratio"] = ok["speed_ratio"]
    table = table.sort_values([*keys, "sim_accesses"]).reset_index(drop=True)
    big = table[table["sim_accesses"] >= LINEAR_FROM]
    first = big.groupby(keys)["us_per_access"].first() if keys else big["us_per_access"][:1]
    ref = table[keys].merge(first.reset_index(), how="left")["us_per_access"] if keys else first
    table["cost_vs_1e4"] = table["us_per_access"] / ref.to_numpy()
    return table


def check(t: pd.DataFrame) -> list[Claim]:
    """The speed targets per mapping and linear cost, from 10^4 accesses up."""
    big = t[t["sim_accesses"] >= LINEAR_FROM]
    claims = []
    for mapping, target in SPEED_TARGETS.items():
        rows = big[big[MAPPING] == mapping] if MAPPING in big else big.iloc[:0]
        ratio = rows["speed_ratio"]
        claims.append(
            Claim(
                f"{mapping}: accesses/s >= {target:g} x SimPy's bare timeout rate "
                f"(issue 7), from {LINEAR_FROM:,} accesses",
                bool((ratio >= target).all()) if len(ratio) else None,
                f"ratio {ratio.min():.3f} ... {ratio.max():.3f} over {len(ratio)} points"
                if len(ratio)
                else "no such point (channel mapping not swept)",
            )
        )
    dev = (big["cost_vs_1e4"] - 1).abs()
    keys = [c for c in big.columns if "." in c]
    grown = len(big) > (big.groupby(keys).ngroups if keys else 1)  # some config has 2+ points
    claims.append(
        Claim(
            f"wall time is linear in work: cost per access within +-{LINEAR_TOL:.0%} of "
            f"each configuration's first point from {LINEAR_FROM:,} accesses",
            bool((dev <= LINEAR_TOL).all()) if grown else None,
            f"largest deviation {dev.max():.1%} over {len(dev)} points",
        )
    )
    return claims


def plot(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``sim_speed.png``: wall time against accesses (log-log) and the speed ratio,
    one line per configuration."""
    keys = _config_keys(table)
    fig, (wall, ratio) = plt.subplots(1, 2, figsize=(11, 4))
    for label, group in table.groupby(keys, sort=True) if keys else [("", table)]:
        name = _label(pd.Series(np.atleast_1d(label), index=keys), keys)
        wall.loglog(group["sim_accesses"], group["sim_wall_s"], marker="o", label=name)
        ratio.semilogx(group["sim_accesses"], group["speed_ratio"], marker="o", label=name)
    wall.set(xlabel="DMA accesses simulated", ylabel="simulation wall time (s)")
    ratio.set(xlabel="DMA accesses simulated", ylabel="accesses/s / bare SimPy events/s")
    wall.set_title("Wall time against work")
    ratio.set_title("Speed against SimPy's bare timeout rate")
    ratio.legend(fontsize=6)
    return [_save(fig, out_dir / "sim_speed.png")]
