"""``workload=gqa_pair`` (issue 55): both GQA variants on one configuration, in one row.

The pair's row holds what separate ``gqa_opt2`` and ``gqa_opt3`` runs of the same
config make, to the bit (each variant runs on a fresh system), and their comparison:
opt3's latency over opt2's, the faster one, and the distance from a tie. Shape: the
default decode shape with 512 KV tokens (4 tiles of 128), under PA (no TLB, no
install). At the default calibration (FIXED 32, R 0.25) opt3 is CPU-bound, and its
latency is tests/test_gqa.py's closed form with 4 tiles instead of 16: load Q (28 B:
39 ns), 4 tiles x 407 cycles, then the last V read (180), GEMM (32), the division (8)
and the store (50): 1937 ns. At FIXED 8 both kernels are DMA-bound and opt3 is faster.
"""

from __future__ import annotations

import pandas as pd
import pytest
from omegaconf import OmegaConf

from kernbench.app import run_job
from kernbench.cli.estimate import SECONDS_PER_COMMAND, warning, work
from kernbench.config.columns import NUMBER, TEXT, metric_columns
from kernbench.errors import ConfigError
from kernbench.results import RESULT_FILE
from kernbench.simulate import run_validated
from kernbench.workloads.gqa_pair import EACH, SHARED, compare
from tests.test_cost_model import gqa_cfg

SHAPE = {"seq_tokens": 512}


def metrics(name: str, fixed: float) -> dict:
    return run_validated(gqa_cfg(name, fixed=fixed, **SHAPE)).metrics


@pytest.mark.parametrize(("fixed", "winner"), [(8.0, "opt3"), (32.0, "opt2")])
def test_the_pair_row_is_both_runs_to_the_bit(fixed, winner):
    pair = metrics("gqa_pair", fixed)
    alone = {v: metrics(f"gqa_{v}", fixed) for v in ("opt2", "opt3")}
    for variant, row in alone.items():
        for name in EACH:
            assert pair[f"{variant}_{name}"] == row[name], (variant, name)
    for name in SHARED:
        assert pair[name] == alone["opt2"][name] == alone["opt3"][name], name
    l2, l3 = alone["opt2"]["kernel_latency_ns"], alone["opt3"]["kernel_latency_ns"]
    assert pair["opt3_over_opt2_latency"] == l3 / l2
    assert pair["opt3_opt2_latency_gap"] == abs(l3 / l2 - 1)
    assert pair["latency_winner"] == winner
    assert pair["sim_time_ns"] == l2 + l3
    if fixed == 32.0:  # the closed form above
        assert l3 == 39 + 4 * 407 + 180 + 32 + 8 + 50 == 1937
        assert (pair["opt2_bottleneck"], pair["opt3_bottleneck"]) == ("dma", "cpu")
    else:
        assert (pair["opt2_bottleneck"], pair["opt3_bottleneck"]) == ("dma", "dma")


def test_the_faster_variant_and_the_distance_from_a_tie():
    assert compare(4000.0, 3960.0) == {
        "opt3_over_opt2_latency": 0.99,
        "latency_winner": "opt3",
        "opt3_opt2_latency_gap": pytest.approx(0.01, abs=1e-15),
    }
    assert compare(4000.0, 6000.0)["latency_winner"] == "opt2"
    # any lead wins, however small: the default shape at FIXED 4, R 0.5 (PA, measured)
    assert compare(4342.1875, 4342.0)["latency_winner"] == "opt3"
    assert compare(4000.0, 6000.0)["opt3_opt2_latency_gap"] == 0.5
    tie = compare(4096.5, 4096.5)
    assert (tie["latency_winner"], tie["opt3_opt2_latency_gap"]) == ("tie", 0.0)


def test_declared_metric_columns_are_the_pair_rows(compose_cfg, tmp_path):
    """As tests/test_objective.py checks every other workload: the row's metric columns
    are kernbench.config.columns' declaration, in order and kind (what objective= and
    the column reference read)."""
    cfg = compose_cfg("workload=gqa_pair", "topology=small", "workload.seq_tokens=256")
    assert run_job(cfg, tmp_path, cache=None) == "ok"
    row = pd.read_parquet(tmp_path / RESULT_FILE).iloc[0].to_dict()
    declared = metric_columns(OmegaConf.to_object(cfg).workload)
    made = list(row)[list(row).index("error") + 1 : list(row).index("cached")]
    assert made == [c for c in declared if c not in ("sim_wall_s", "wall_s")]
    for name in made:
        assert declared[name] == (TEXT if isinstance(row[name], str) else NUMBER), name
    assert row["workload.name"] == "gqa_pair"


def test_a_bad_pair_shape_names_the_key():
    with pytest.raises(ConfigError) as info:
        gqa_cfg("gqa_pair", seq_tokens=1000)
    assert info.value.key == "workload.seq_tokens"


def test_the_run_time_estimate_of_a_pair_is_both_variants():
    """A pair's point simulates opt2's commands, then opt3's: its estimate is the two
    variants' summed. 16 KV heads (a PE each) of 32,000 tiles: opt3 (10 x 32,000 + 3) x 16
    = 5,120,048 commands at 11 us, 56 s, and opt2 (2 x 32,000 + 3) x 16 = 1,024,048,
    11 s: neither warned of alone, the pair (68 s) is."""
    shape = {"query_heads": 16, "kv_heads": 16, "tile_tokens": 16, "seq_tokens": 32_000 * 16}
    alone = {v: work(gqa_cfg(f"gqa_{v}", **shape)) for v in ("opt2", "opt3")}
    assert alone["opt3"] == (5_120_048, "commands", SECONDS_PER_COMMAND)
    assert alone["opt2"] == (1_024_048, "commands", SECONDS_PER_COMMAND)
    pair = gqa_cfg("gqa_pair", **shape)
    count, what, each = work(pair)
    assert (count, what) == (6_144_096, "commands")
    assert count * each == pytest.approx(sum(n * s for n, _, s in alone.values()), rel=1e-12)
    assert [warning(gqa_cfg(f"gqa_{v}", **shape)) for v in ("opt2", "opt3")] == [None, None]
    assert warning(pair) == (
        "kernbench: warning: 6,144,096 commands to simulate, about 68 s of wall time"
        " at ~11.0 us each (Ctrl-C stops it)"
    )
