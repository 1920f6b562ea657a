"""``kernbench-report``: study tables, claim checks and plots from a sweep's table.

Data path: ``results.parquet`` -> :mod:`~kernbench.report.tables` (one DataFrame per
study found in it) -> :mod:`~kernbench.report.claims` (each study's claims, checked
with stated tolerances) -> :mod:`~kernbench.report.plots` (PNG files) ->
:mod:`~kernbench.report.cli` (prints it all and writes it beside the table).
"""

from kernbench.report.claims import Claim, check_dispatch_ratio
from kernbench.report.tables import dispatch_ratio_table, load_results

__all__ = [
    "Claim",
    "check_dispatch_ratio",
    "dispatch_ratio_table",
    "load_results",
]
