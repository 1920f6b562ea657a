"""The decoder-layer study's claims on hand-made rows (no simulation): each verdict
follows from the figures as the claim words them."""

from __future__ import annotations

import pandas as pd

from kernbench.report import decoder_layer as study
from kernbench.report.tables import FIXED, RECIP

BATCH = "workload.batch"


def rows(bound: dict[tuple[int, float], list[str]]) -> pd.DataFrame:
    """A study table: per (batch, FIXED) at R 0.25, the configurations' bottlenecks."""
    out = [
        {BATCH: batch, FIXED: fixed, RECIP: 0.25, "bottleneck": b}
        for (batch, fixed), bottlenecks in bound.items()
        for b in bottlenecks
    ]
    table = pd.DataFrame(out)
    table.attrs["keys"] = [BATCH, FIXED, RECIP]
    return table


def test_a_larger_batch_needs_a_larger_fixed_to_be_cpu_bound():
    claim = study._dispatch_bound(
        rows(
            {
                (1, 0): ["dma", "dma"],
                (1, 32): ["cpu", "cpu"],
                (8, 0): ["dma", "dma"],
                (8, 32): ["cpu", "dma"],  # half: later than batch 1
            }
        )
    )
    assert claim.holds is True
    assert "batch 1: CPU-bound in 0/2 at 0, 2/2 at 32; all from FIXED 32" in claim.detail
    assert "batch 8: CPU-bound in 0/2 at 0, 1/2 at 32; all not within the grid" in claim.detail


def test_a_larger_batch_cpu_bound_sooner_breaks_the_claim():
    claim = study._dispatch_bound(
        rows({(1, 32): ["dma", "dma"], (8, 32): ["cpu", "dma"]})  # batch 8 sooner
    )
    assert claim.holds is False


def test_one_batch_size_leaves_the_batch_claim_untested():
    """A shape run at one batch (decoder_8b beside decoder_small's batches 1 and 8)
    has no larger batch to compare: not tested, its counts still said."""
    claim = study._dispatch_bound(rows({(1, 0): ["dma"], (1, 32): ["dma"]}))
    assert claim.holds is None
    assert claim.detail.startswith(
        "one batch size, none to compare it with: batch 1: CPU-bound in 0/1 at 0, 0/1 at 32;"
    )


# -- one verdict per layer shape (issue 55) -------------------------------------------------
SMALL = {"hidden": 512, "heads": 8, "kv_heads": 2, "head_dim": 64, "ffn": 1536}
BIG = {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "ffn": 14336}
SMALL_SHAPE = {**SMALL, "context_tokens": 256}
BIG_SHAPE = {**BIG, "context_tokens": 4096}
KERNELS = ("attn_norm", "qkv_proj", "attention", "down_proj")
# per (shape, batch, FIXED): the step's and its launches' bottleneck, as the issue found
# them: decoder_small's batch 1 dispatch-bound at FIXED 32 and decoder_8b's DMA-bound
BOUND = {
    ("small", 1, 0.0): "dma",
    ("small", 1, 32.0): "cpu",
    ("small", 8, 0.0): "dma",
    ("small", 8, 32.0): "dma",
    ("8b", 1, 0.0): "dma",
    ("8b", 1, 32.0): "dma",
    ("8b", 8, 0.0): "dma",
    ("8b", 8, 32.0): "cpu",  # a larger batch dispatch-bound sooner: the claim fails here
}


def two_shapes(tmp_path) -> pd.DataFrame:
    """A merged decoder sweep of decoder_small and decoder_8b (PA and VA, batch 1 and 8,
    FIXED 0 and 32 at R 0.25), its launch rows in ``kernels.parquet`` beside it: every
    launch bound as its step is (:data:`BOUND`), a third of its latency over its roofline
    bound, VA 0.9 of PA's latency with fewer descriptors."""
    points, launches = [], []
    shapes = {"small": SMALL_SHAPE, "8b": BIG_SHAPE}
    for num, ((shape, batch, fixed), bound) in enumerate(BOUND.items()):
        for model in ("pa", "va"):
            job = 2 * num + (model == "va")
            latency = (10.0 if shape == "small" else 1000.0) * (0.9 if model == "va" else 1.0)
            config = {f"workload.{k}": v for k, v in shapes[shape].items()}
            points.append(
                {  # in a result table's order: the topology's keys, then the workload's
                    study.MAPPING: "n_to_one",
                    FIXED: fixed,
                    RECIP: 0.25,
                    study.ADDRESS: model,
                    BATCH: batch,
                    **config,
                    "workload.name": "decoder_layer",
                    "job_num": job,
                    "config_hash": f"h{job}",
                    "status": "ok",
                    "kernel_latency_ns": latency * len(KERNELS),
                    "bottleneck": bound,
                    "dma_commands": 100 if model == "pa" else 80,
                    "install_bytes": 0 if model == "pa" else 4096,
                    "install_latency_ns": 0.0 if model == "pa" else 1000.0,
                    **{m: 0 for m in ("cpu_bound_kernels", "roofline_efficiency")},
                    **{m: 0 for m in ("dominant_kernel", "max_abs_error")},
                }
            )
            launches += [
                {
                    "sweep_id": "s",
                    "job_num": job,
                    "config_hash": f"h{job}",
                    "launch": i,
                    "kernel": kernel,
                    "kernel_latency_ns": latency,
                    "roofline_bound_ns": latency / 3,
                    "roofline_efficiency": 1 / 3,
                    "bottleneck": bound,
                }
                for i, kernel in enumerate(KERNELS)
            ]
    pd.DataFrame(launches).to_parquet(tmp_path / "kernels.parquet")
    df = pd.DataFrame(points)
    df.attrs[study.KERNELS_PATH] = str(tmp_path / "kernels.parquet")
    return df


def by_shape(claims: list) -> dict[str, dict[str, object]]:
    """``{shape: {claim text without the shape: claim}}``, each claim's shape the name
    leading its text."""
    out: dict[str, dict[str, object]] = {}
    for claim in claims:
        shape, _, text = claim.text.partition(": ")
        assert text not in out.setdefault(shape, {}), claim.text  # one verdict per shape
        out[shape][text] = claim
    return out


def test_a_sweep_of_two_shapes_gets_one_verdict_per_shape(tmp_path):
    """decoder_small's batch 1 is dispatch-bound at FIXED 32, decoder_8b's DMA-bound:
    the claims on what bounds the step differ between them, and pooled they would read
    as neither (pooled, a batch's share of CPU-bound configurations is a half at batch
    1 and at batch 8, so the dispatch claim would hold; and the batch-1 claim would
    fail for decoder_8b too)."""
    t = study.table(two_shapes(tmp_path))
    assert t["workload.hidden"].is_monotonic_increasing  # a shape's rows together
    claims = by_shape(study.check(t))
    assert list(claims) == ["decoder_small", "decoder_8b"]  # every claim names one
    assert [len(c) for c in claims.values()] == [8, 8]
    small, big = claims["decoder_small"], claims["decoder_8b"]
    one = "at batch 1 and FIXED 32, R 0.25 every projection is memory-bound (bottleneck dma)"
    assert (small[one].holds, big[one].holds) == (False, True)
    assert small[one].detail == "qkv_proj: cpu 2; down_proj: cpu 2"
    assert big[one].detail == "qkv_proj: dma 2; down_proj: dma 2"
    dispatch = next(k for k in small if k.startswith("a larger batch takes a larger FIXED"))
    assert (small[dispatch].holds, big[dispatch].holds) == (True, False)
    assert small[dispatch].detail.startswith(
        "batch 1: CPU-bound in 0/2 at 0, 2/2 at 32; all from FIXED 32;"
        " batch 8: CPU-bound in 0/2 at 0, 0/2 at 32; all not within the grid"
    )
    assert big[dispatch].detail.startswith(
        "batch 1: CPU-bound in 0/2 at 0, 0/2 at 32; all not within the grid;"
        " batch 8: CPU-bound in 0/2 at 0, 2/2 at 32; all from FIXED 32"
    )
    # what holds of both is still said of each, with each shape's own figures
    descriptors = (
        "VA and LA issue no more DMA descriptors than PA (one contiguous range per tensor)"
    )
    assert small[descriptors].holds is big[descriptors].holds is True
    roofline = "no kernel beats its roofline (latency >= bound in every launch)"
    assert small[roofline].detail.startswith("32 launches, 0 below their bound")
    assert big[roofline].detail.startswith("32 launches, 0 below their bound")


def test_one_shape_is_named_and_its_table_says_its_dimensions(tmp_path):
    """A sweep of one shape: each claim still names it, and the table keeps the shape's
    columns (the report says them once, as the same in every row)."""
    df = two_shapes(tmp_path)
    t = study.table(df[df["workload.hidden"] == 512])
    assert all(c.text.startswith("decoder_small: ") for c in study.check(t))
    assert t["workload.ffn"].tolist() == [1536] * len(t)
    other = df[df["workload.hidden"] == 512].assign(**{"workload.context_tokens": 300})
    named = {c.text.partition(": ")[0] for c in study.check(study.table(other))}
    assert named == {"hidden 512, heads 8, kv_heads 2, head_dim 64, ffn 1536, context_tokens 300"}


def test_two_shapes_are_plotted_apart(tmp_path):
    t = study.table(two_shapes(tmp_path))
    names = sorted(p.name for p in study.plot(t, tmp_path))
    assert names == sorted(
        f"decoder_layer_{plot}_{shape}.png"
        for plot in ("kernels", "dispatch", "roofline")
        for shape in ("decoder_small", "decoder_8b")
    )


def test_the_presets_shapes_are_the_schemas_and_decoder_8b_yaml():
    """:data:`~kernbench.report.decoder_layer.PRESETS` names the shapes the presets run:
    workload=decoder_layer's defaults (decoder_small) and experiments/decoder_8b.yaml's."""
    from omegaconf import OmegaConf

    from kernbench.config.schema import DecoderLayerWorkloadConfig
    from kernbench.config.store import experiments_dir

    keys = [k.removeprefix("workload.") for k in study.SHAPE]
    small = DecoderLayerWorkloadConfig()
    big = OmegaConf.load(experiments_dir() / "decoder_8b.yaml").workload
    named = {
        tuple(getattr(small, k) for k in keys): "decoder_small",
        tuple(big[k] for k in keys): "decoder_8b",
    }
    assert named == study.PRESETS
    assert {k: big[k] for k in keys} == BIG_SHAPE  # this module's rows are the preset's
