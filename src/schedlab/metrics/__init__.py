"""Job and cluster metrics of simulation runs, their catalogue, tables and plots.

The plots live in :mod:`schedlab.metrics.plots` (``report``) and are not imported here,
so that importing the metrics does not load matplotlib.
"""

from schedlab.metrics.catalogue import HEADLINE_KEYS, METRICS
from schedlab.metrics.fairness import fairness_metrics, load_shares
from schedlab.metrics.summary import read_summary, summarize, write_summary
from schedlab.metrics.tables import comparison_frame, comparison_table, summary_table

__all__ = [
    "HEADLINE_KEYS",
    "METRICS",
    "comparison_frame",
    "comparison_table",
    "fairness_metrics",
    "load_shares",
    "read_summary",
    "summarize",
    "summary_table",
    "write_summary",
]
