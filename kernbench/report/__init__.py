"""``kernbench-report``: a general report for any sweep or run, plus the studies' claims.

Data path: ``results.parquet`` (or one run's ``result.parquet``) ->
:mod:`~kernbench.report.general` (swept keys, constants, compact table) and
:mod:`~kernbench.report.metric_plot` (a metric against the swept keys) ->
:mod:`~kernbench.report.study` (each study a ``table``/``check``/``plot`` triple:
:mod:`~kernbench.report.dispatch_ratio`, :mod:`~kernbench.report.sim_speed`, bandwidth
equivalence) -> :mod:`~kernbench.report.document` (text) and
:mod:`~kernbench.report.html` (``report.html``) -> :mod:`~kernbench.report.cli`.
"""

from kernbench.report.claims import Claim
from kernbench.report.tables import load_results

__all__ = ["Claim", "load_results"]
