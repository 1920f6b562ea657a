"""Keys a configuration does not read: a sweep over one repeats a point.

A stream draws from its generator (``workload.seed``) only under the ``uniform``
pattern, and reads ``workload.hotspot_pe`` only under ``hotspot``. The bandwidth study
runs ``uniform`` with several seeds to measure its spread; the same seed axis over
``local`` would simulate each local point again per seed, for identical figures. This
is the one place that says which keys a configuration leaves unread; the sweep
(:mod:`kernbench.sweep.repeats`) runs such repeats once.
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

SEED = "workload.seed"
HOTSPOT = "workload.hotspot_pe"
# Per stream key: the only pattern that reads it.
READ_BY_PATTERN: dict[str, str] = {SEED: "uniform", HOTSPOT: "hotspot"}


def unread_keys(task: Any) -> frozenset[str]:
    """The keys of ``task`` (a composed config, without ``hydra``) whose value changes
    nothing its run computes: a stream's seed unless its pattern is ``uniform``, its
    hotspot PE unless it is ``hotspot``. Other workloads read their seed (random
    inputs), so nothing is unread there."""
    if OmegaConf.select(task, "workload.name") != "stream":
        return frozenset()
    pattern = OmegaConf.select(task, "workload.pattern")
    pattern = getattr(pattern, "name", pattern)  # a StreamPattern in a structured config
    return frozenset(k for k, reader in READ_BY_PATTERN.items() if pattern != reader)
