"""The decoder-layer study (``+experiment=decoder_layer``): ``table``, ``check``, ``plot``.

One row per configuration (every swept key: channel mapping, address model, FIXED, R,
PEs per cube, batch) with the step's latency, bottleneck, DMA descriptors, install
cost and roofline efficiency. The launches of ``kernels.parquet`` (one row per kernel
launch, joined by ``job_num`` and ``config_hash``) ride in ``table.attrs["launches"]``
with the same keys. The claims answer the issue's questions with figures: does 1:1
against n:1 change the latency (and in which kernel); what VA and LA change against PA
(descriptors, install bytes and time, latency); the FIXED at the default R from which
the step is dispatch-bound (its CPU the busiest unit) per batch; and how close each
kernel comes to its roofline.

Every claim is checked per layer shape (:data:`SHAPE`: the model's dimensions and the
tokens already in the cache), its text led by the shape's name (``decoder_small: ...``,
or its dimensions when it is no preset's), and the plots are drawn per shape. What
bounds a step does not carry over from one shape to another (issue 55): at FIXED 32,
R 0.25 ``decoder_small``'s batch 1 is CPU-bound in 11 of 12 configurations, where
``decoder_8b``'s is DMA-bound, so a sweep holding two shapes gets a verdict per shape,
never one pooled over both.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pandas as pd

from kernbench.report.claims import Claim
from kernbench.report.decoder_layer_plots import draw
from kernbench.report.tables import CHANNELS_PER_PE, FIXED, MAPPING, RECIP, WORKLOAD, varying_config
from kernbench.results import STATUS_OK

__all__ = ["check", "plot", "shape_name", "shapes", "table", "KERNELS_PATH"]

KERNELS_PATH = "kernels_path"  # df.attrs: where the run's kernels.parquet is
ADDRESS = "address.model"
BATCH = "workload.batch"
PES = "topology.pes_per_cube"
NAME = "decoder_layer"
DEFAULT_FIXED, DEFAULT_RECIP = 32.0, 0.25  # ADR-0064's calibration
SAME_WITHIN = 0.01  # "the same latency": within 1%
METRICS = (
    "kernel_latency_ns",
    "bottleneck",
    "cpu_bound_kernels",
    "dominant_kernel",
    "dma_commands",
    "install_bytes",
    "install_latency_ns",
    "roofline_efficiency",
    "max_abs_error",
)
KEY = ["job_num", "config_hash"]
# The layer's shape: what a launch moves and computes per command, so what bounds the
# step (docs/explanation/studies.md, "Decoder layer"). The blocks and the dtype are how
# the same layer is run, so configurations of one shape.
SHAPE = (
    "workload.hidden",
    "workload.heads",
    "workload.kv_heads",
    "workload.head_dim",
    "workload.ffn",
    "workload.context_tokens",
)
# The presets' shapes (SHAPE's order), named as the docs name them; tests hold them to
# the schema's defaults (workload=decoder_layer) and experiments/decoder_8b.yaml.
PRESETS = {
    (512, 8, 2, 64, 1536, 256): "decoder_small",
    (4096, 32, 8, 128, 14336, 4096): "decoder_8b",
}


def table(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per configuration, the step's figures; its launches in ``attrs["launches"]``.
    None unless the rows are decoder-layer points with their launch rows beside them."""
    if WORKLOAD not in df or not (df[WORKLOAD] == NAME).any():
        return None
    ok = df[(df["status"] == STATUS_OK) & (df[WORKLOAD] == NAME)]
    path = Path(str(df.attrs.get(KERNELS_PATH, "")))
    if ok.empty or not path.is_file():
        return None
    keys = varying_config(ok, exclude=(CHANNELS_PER_PE,))  # derived from PEs per cube
    # the shape leads (a shape's rows together) and is kept even when constant: every
    # claim names it
    keys = [*(k for k in SHAPE if k in keys), *(k for k in keys if k not in SHAPE)]
    shape = [k for k in SHAPE if k in ok and k not in keys]
    out = ok[[*keys, *shape, *METRICS]].sort_values(keys).reset_index(drop=True)
    # the calibration, batch and shape ride with every launch even when the grid fixes them
    riders = (k for k in (FIXED, RECIP, BATCH, *SHAPE) if k in ok)
    known = list(dict.fromkeys([*keys, *riders]))
    launches = pd.read_parquet(path).merge(ok[[*KEY, *known]], on=KEY)
    out.attrs["launches"] = launches.drop(columns=["sweep_id", *KEY])
    out.attrs["keys"] = keys
    return out


def plot(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The plots per shape: one shape's bars would flatten another's (``decoder_8b``'s
    step is about a hundred times ``decoder_small``'s). With one shape the files keep
    their plain names; with more, each name ends in the shape's."""
    parts = shapes(t)
    paths = []
    for name, part in parts:
        launches = part.attrs["launches"]
        slug = _slug(name) if len(parts) > 1 else ""
        paths += draw(part, launches, out_dir, _default(launches), name, slug)
    return paths


def check(t: pd.DataFrame) -> list[Claim]:
    """Every claim per shape, its text led by the shape's name: what bounds a step at
    one shape says nothing of another (issue 55)."""
    return [_named(name, claim) for name, part in shapes(t) for claim in _claims(part)]


def _claims(t: pd.DataFrame) -> list[Claim]:
    """The claims on the rows of one shape."""
    return [
        _mapping(t),
        _descriptors(t),
        _installs(t),
        _address_latency(t),
        _dispatch_bound(t),
        _zero_cost(t),
        _roofline(t),
        _batch_one_memory_bound(t),
    ]


# -- shapes -------------------------------------------------------------------------------
def shapes(t: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``(name, rows)`` per layer shape of ``t``, smallest first; each part's launches
    (``attrs["launches"]``) are its own and its keys those that vary within it. A table
    without the shape's columns is one part, unnamed."""
    columns = [k for k in SHAPE if k in t]
    if not columns:
        return [("", t)]
    launches = t.attrs["launches"]
    parts = []
    for values, rows in t.groupby(columns, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        shape = dict(zip(columns, values, strict=True))
        mine = (launches[columns] == pd.Series(shape)).all(axis=1)
        parts.append((shape_name(shape), _part(t, rows, launches[mine])))
    return parts


def _part(t: pd.DataFrame, rows: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """One shape's rows as a study table of their own."""
    part = rows.copy()
    keys = [k for k in t.attrs["keys"] if k not in SHAPE]
    part.attrs = {
        **t.attrs,
        "launches": launches,
        "keys": [k for k in keys if part[k].nunique(dropna=False) > 1],
    }
    return part


def shape_name(values: dict[str, object]) -> str:
    """A preset's name for its shape (``decoder_small``), else the dimensions
    (``hidden 64, heads 4, kv_heads 2, head_dim 16, ffn 96, context_tokens 5``)."""
    known = PRESETS.get(tuple(values.get(k) for k in SHAPE))
    if known:
        return known
    return ", ".join(f"{k.rsplit('.', 1)[-1]} {v}" for k, v in values.items())


def _named(name: str, claim: Claim) -> Claim:
    """``claim`` led by the shape it stands on, so its verdict read alone says which."""
    return replace(claim, text=f"{name}: {claim.text}") if name else claim


def _slug(name: str) -> str:
    """A shape's name as a file-name part (``decoder_8b``, ``hidden_64_heads_4_...``)."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


# -- helpers ------------------------------------------------------------------------------
def _default(t: pd.DataFrame) -> pd.Series:
    """Rows at the ADR's calibration (every row where the grid does not sweep it)."""
    keep = pd.Series(True, index=t.index)
    for key, value in ((FIXED, DEFAULT_FIXED), (RECIP, DEFAULT_RECIP)):
        if key in t:
            keep &= t[key] == value
    return keep


def _at_default(launches: pd.DataFrame) -> pd.DataFrame:
    """The launches at the ADR's calibration (FIXED 32, R 0.25)."""
    return launches[_default(launches)]


def _pairs(t: pd.DataFrame, key: str, a: str, b: str, metric: str) -> pd.DataFrame:
    """``metric`` of rows differing only in ``key`` (``a`` against ``b``), side by side."""
    others = [k for k in t.attrs["keys"] if k != key]
    return _side_by_side(t, others, key, (a, b), metric)


def _launch_pairs(t: pd.DataFrame, key: str, a: str, b: str) -> pd.DataFrame:
    others = [k for k in t.attrs["keys"] if k != key] + ["kernel"]
    return _side_by_side(t.attrs["launches"], others, key, (a, b), "kernel_latency_ns")


def _side_by_side(
    rows: pd.DataFrame, index: list[str], key: str, pair: tuple[str, str], metric: str
) -> pd.DataFrame:
    """``metric`` at ``key``'s two values of ``pair``, one row per ``index``; none when
    the rows lack either value. A key the grid fixes is no column of a study table:
    no pair either (pivoting on it would raise, costing the section every claim)."""
    if key not in rows:
        return pd.DataFrame(columns=list(pair))
    wide = rows.pivot_table(index=index, columns=key, values=metric, aggfunc="first")
    return wide[list(pair)].dropna() if set(pair) <= set(wide.columns) else wide.iloc[:0]


# -- claims -------------------------------------------------------------------------------
def _mapping(t: pd.DataFrame) -> Claim:
    text = "1:1 and n:1 give the same decode-step latency (within 1%; ADR-0011)"
    pairs = _pairs(t, MAPPING, "one_to_one", "n_to_one", "kernel_latency_ns")
    if pairs.empty:
        return Claim(text, None, "no configuration run under both mappings")
    ratio = pairs["one_to_one"] / pairs["n_to_one"]
    worst = (ratio - 1).abs()
    per_kernel = _launch_pairs(t, MAPPING, "one_to_one", "n_to_one")
    diff = (per_kernel["one_to_one"] - per_kernel["n_to_one"]).groupby("kernel").sum()
    share = (diff / diff.abs().sum()).sort_values(key=abs, ascending=False)
    top = ", ".join(f"{k} {v:+.0%}" for k, v in share.head(3).items())
    detail = (
        f"{len(pairs)} configurations; 1:1 / n:1 from {ratio.min():.4f} to {ratio.max():.4f}"
        f" (worst at {_where(worst)}); of the summed latency difference: {top}"
    )
    return Claim(text, bool((worst <= SAME_WITHIN).all()), detail)


def _descriptors(t: pd.DataFrame) -> Claim:
    text = "VA and LA issue no more DMA descriptors than PA (one contiguous range per tensor)"
    rows = []
    for model in ("va", "la"):
        pairs = _pairs(t, ADDRESS, model, "pa", "dma_commands")
        if not pairs.empty:
            rows.append((model, pairs[model] / pairs["pa"]))
    if not rows:
        return Claim(text, None, "no configuration run under PA and VA or LA")
    parts = [f"{m}/pa {r.min():.3f}..{r.max():.3f}" for m, r in rows]
    by = t.groupby(ADDRESS)["dma_commands"].median()
    detail = "descriptors " + "; ".join(parts) + "; median per step: " + _series(by, "{:.0f}")
    return Claim(text, all(bool((r <= 1).all()) for _, r in rows), detail)


def _installs(t: pd.DataFrame) -> Claim:
    text = "LA's installs are lighter than VA's: fewer bytes, less time (ADR-0011)"
    pairs = _pairs(t, ADDRESS, "la", "va", "install_bytes")
    times = _pairs(t, ADDRESS, "la", "va", "install_latency_ns")
    if pairs.empty:
        return Claim(text, None, "no configuration run under both VA and LA")
    holds = bool((pairs["la"] < pairs["va"]).all() and (times["la"] < times["va"]).all())
    b, n = t.groupby(ADDRESS)["install_bytes"], t.groupby(ADDRESS)["install_latency_ns"]
    in_bytes = (pairs["la"] / pairs["va"]).median()
    in_time = (times["la"] / times["va"]).median()
    detail = (
        f"median install bytes {_series(b.median(), '{:.0f}')}; install time"
        f" {_series(n.median(), '{:.0f} ns')}; LA/VA bytes {in_bytes:.3f}, time {in_time:.3f}"
    )
    return Claim(text, holds, detail)


def _address_latency(t: pd.DataFrame) -> Claim:
    text = "the address model changes the decode-step latency by less than 1% against PA"
    parts, worst = [], 0.0
    for model in ("va", "la"):
        pairs = _pairs(t, ADDRESS, model, "pa", "kernel_latency_ns")
        if pairs.empty:
            continue
        ratio = pairs[model] / pairs["pa"]
        worst = max(worst, float((ratio - 1).abs().max()))
        parts.append(
            f"{model}/pa {ratio.min():.4f}..{ratio.max():.4f} (median {ratio.median():.4f})"
        )
    if not parts:
        return Claim(text, None, "no configuration run under PA and VA or LA")
    return Claim(text, worst < SAME_WITHIN, "; ".join(parts))


def _dispatch_bound(t: pd.DataFrame) -> Claim:
    """Per batch, at the default R: how many configurations are CPU-bound at each FIXED,
    and the least FIXED from which every configuration is, at it and above. Holds when
    at no FIXED a larger batch has a larger share of CPU-bound configurations; not tested
    with one batch size (a shape's rows may hold one where the table holds more)."""
    text = "a larger batch takes a larger FIXED (R = 0.25) to make the decode step dispatch-bound"
    if FIXED not in t or BATCH not in t:
        return Claim(text, None, "FIXED or the batch is not swept")
    at = t[t[RECIP] == DEFAULT_RECIP] if RECIP in t else t
    cpu = (at["bottleneck"] == "cpu").groupby([at[FIXED], at[BATCH]]).mean().unstack(BATCH)
    parts = []
    for batch, g in at.groupby(BATCH):
        bound = (g["bottleneck"] == "cpu").groupby(g[FIXED])
        counts = ", ".join(f"{int(c.sum())}/{len(c)} at {f:g}" for f, c in bound)
        every = bound.all()
        first = next((f for f in every.index if every.loc[f:].all()), None)
        found = f"from FIXED {first:g}" if first is not None else "not within the grid"
        parts.append(f"batch {batch}: CPU-bound in {counts}; all {found}")
    holds = bool((cpu.diff(axis=1).fillna(0) <= 0).all().all()) if len(parts) > 1 else None
    detail = "; ".join(parts) + " (CPU-bound: the CPU is the step's busiest unit)"
    if holds is None:
        detail = "one batch size, none to compare it with: " + detail
    return Claim(text, holds, detail)


def _zero_cost(t: pd.DataFrame) -> Claim:
    text = "with FIXED = R = 0 no kernel is CPU-bound"
    launches = t.attrs["launches"]
    if FIXED not in launches or RECIP not in launches:
        return Claim(text, None, "FIXED and R are not swept")
    zero = launches[(launches[FIXED] == 0) & (launches[RECIP] == 0)]
    if zero.empty:
        return Claim(text, None, "no point at FIXED = R = 0")
    cpu = zero[zero["bottleneck"] == "cpu"]
    detail = f"{len(zero)} launches, {len(cpu)} CPU-bound; their bottlenecks: "
    detail += _series(zero["bottleneck"].value_counts(), "{}")
    return Claim(text, cpu.empty, detail)


def _roofline(t: pd.DataFrame) -> Claim:
    text = "no kernel beats its roofline (latency >= bound in every launch)"
    launches = t.attrs["launches"]
    below = launches[launches["kernel_latency_ns"] < launches["roofline_bound_ns"]]
    at, where = _at_default(launches), "at FIXED 32, R 0.25"
    if at.empty:
        at, where = launches, "over every launch"
    eff = at.groupby("kernel", sort=False)["roofline_efficiency"].median().sort_values()
    detail = (
        f"{len(launches)} launches, {len(below)} below their bound; median efficiency"
        f" (bound / latency) {where}, lowest first: {_series(eff, '{:.2f}')}"
    )
    return Claim(text, below.empty, detail)


def _batch_one_memory_bound(t: pd.DataFrame) -> Claim:
    text = "at batch 1 and FIXED 32, R 0.25 every projection is memory-bound (bottleneck dma)"
    launches = _at_default(t.attrs["launches"])
    one = launches[launches[BATCH] == 1] if BATCH in launches else launches
    proj = one[one["kernel"].str.endswith("_proj")]
    if proj.empty:
        return Claim(text, None, "no batch-1 point")
    counts = proj.groupby("kernel", sort=False)["bottleneck"].agg(
        lambda b: _series(b.value_counts(), "{}")
    )
    detail = "; ".join(f"{k}: {v}" for k, v in counts.items())
    return Claim(text, bool((proj["bottleneck"] == "dma").all()), detail)


def _where(values: pd.Series) -> str:
    index = values.idxmax()
    names = values.index.names
    index = index if isinstance(index, tuple) else (index,)
    return ", ".join(f"{n.rsplit('.', 1)[-1]}={v}" for n, v in zip(names, index, strict=True))


def _series(s: pd.Series, fmt: str) -> str:
    return ", ".join(f"{k} {fmt.format(v)}" for k, v in s.items())
