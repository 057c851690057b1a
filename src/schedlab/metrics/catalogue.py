"""The catalogue of run metrics: every key of ``summary.json`` (a policy's own ``report``
blocks aside), top level or inside a breakdown (``eviction_rate``), with its label, unit,
better direction and the tables that show it.

The catalogue's order is the order of ``summary.json``; the run's summary table, the comparison
table and ``comparison.csv`` are derived from it (:data:`SUMMARY_KEYS`, :data:`COMPARISON_KEYS`,
:data:`HEADLINE_KEYS`), as are the units and highlights of :mod:`schedlab.metrics.tables`.

To add a metric: compute it in :func:`schedlab.metrics.summary.summarize` (or pass it as an
``extra``), add one :class:`Metric` here at its place in that order (with ``summary`` or
``compare`` set to show it in a table), and add its row to the ``summary.json`` table of
``docs/guide.md``; tests check that the catalogue, a run's summary and the guide agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal


class Unit(Enum):
    """What a metric's numbers are, which sets how tables show them."""

    SECONDS = "s"  # shown in s, min, h or d, whichever suits the largest value
    RATE = "rate"  # a fraction, shown in %
    COUNT = "count"
    NUMBER = "number"
    MB = "MB"
    NAME = "name"  # a name or an identifier, shown as it is
    BREAKDOWN = "breakdown"  # a mapping (per class, tenant, GPU model...; or settings), not in the tables


@dataclass(frozen=True)
class Metric:
    """One metric. ``summary`` and ``compare`` place it in the run's summary table and in the
    comparison table: 0 not shown, else its group there (group 1 first, then group 2), in
    catalogue order within a group."""

    key: str
    label: str
    unit: Unit
    better: Literal["lower", "higher"] | None = None
    summary: int = 0
    compare: int = 0
    note: str = ""  # a caption for the tables that show the metric


ALLOC_NOTE = "GPU alloc: share of GPUs allocated from the first to the last job arrival."

METRICS = (
    Metric("policy", "policy", Unit.NAME),
    Metric("jobs", "jobs", Unit.COUNT, summary=1),
    Metric("finished", "finished", Unit.COUNT, "higher", summary=1, compare=1),
    Metric("unfinished", "unfinished", Unit.COUNT, "lower", summary=1),
    Metric("jct_mean_s", "JCT mean", Unit.SECONDS, "lower", summary=1, compare=1),
    Metric("jct_p50_s", "JCT p50", Unit.SECONDS, "lower", summary=2),
    Metric("jct_p95_s", "JCT p95", Unit.SECONDS, "lower", summary=2),
    Metric("jct_p99_s", "JCT p99", Unit.SECONDS, "lower", summary=1, compare=1),
    Metric("queue_mean_s", "queue mean", Unit.SECONDS, "lower", summary=1, compare=1),
    Metric("queue_p50_s", "queue p50", Unit.SECONDS, "lower", summary=2),
    Metric("queue_p99_s", "queue p99", Unit.SECONDS, "lower", summary=2),
    Metric("queued_jobs", "jobs that queued", Unit.COUNT, "lower", summary=2),
    Metric("slowdown_mean", "slowdown mean", Unit.NUMBER, "lower", summary=2),
    Metric("makespan_s", "makespan", Unit.SECONDS, "lower", summary=2, compare=2),
    Metric("gpu_alloc_rate", "GPU alloc", Unit.RATE, "higher", summary=1, compare=1, note=ALLOC_NOTE),
    Metric("gpu_alloc_rate_run", "GPU alloc, whole run", Unit.RATE, "higher", summary=2),
    Metric("gpu_alloc_rate_by_model", "GPU alloc by model", Unit.BREAKDOWN),
    Metric("preemptions", "preemptions", Unit.COUNT, "lower", summary=1, compare=1),
    Metric("migrations", "migrations", Unit.COUNT, summary=2),
    Metric("colocated_jobs", "jobs that shared GPUs", Unit.COUNT, summary=2),
    Metric("gpu_seconds", "GPU-seconds", Unit.NUMBER),
    Metric("classes", "by priority class", Unit.BREAKDOWN),
    Metric("eviction_rate", "eviction rate", Unit.RATE, "lower"),  # inside classes
    Metric("tenants", "by tenant", Unit.BREAKDOWN),
    Metric("sizes", "by job size", Unit.BREAKDOWN),
    Metric("duration_buckets", "by job duration", Unit.BREAKDOWN),
    Metric("ltgf_tenant_min", "tenant LTGF, lowest", Unit.NUMBER, "higher", compare=2),
    Metric("ltgf_tenant_max", "tenant LTGF, highest", Unit.NUMBER, compare=2),
    Metric("ltgf_job_unfairness_p95", "job LTGF unfairness p95", Unit.NUMBER, "lower", compare=2),
    Metric("ltgf_job_unfairness_max", "job LTGF unfairness max", Unit.NUMBER, "lower"),
    Metric("jain_tenants", "Jain's index, tenants", Unit.NUMBER, "higher", compare=2),
    Metric("ftf_rho_mean", "finish-time fairness mean", Unit.NUMBER, "lower", compare=2),
    Metric("ftf_rho_p95", "finish-time fairness p95", Unit.NUMBER, "lower"),
    Metric("ftf_rho_max", "finish-time fairness max", Unit.NUMBER, "lower"),
    Metric("tenant_fairness", "fairness by tenant", Unit.BREAKDOWN),
    Metric("placer", "placer", Unit.NAME),
    Metric("workload", "workload", Unit.NAME),
    Metric("cluster", "cluster", Unit.NAME),
    Metric("cluster_gpus", "cluster GPUs", Unit.COUNT),
    Metric("seed", "seed", Unit.NAME),
    Metric("stalled_jobs", "stalled jobs", Unit.COUNT, "lower"),
    Metric("not_arrived", "jobs not arrived", Unit.COUNT),
    Metric("sim_wall_s", "sim wall", Unit.SECONDS, "lower", compare=2),
    Metric("engine_wall_s", "engine wall", Unit.SECONDS, "lower"),
    Metric("peak_rss_mb", "peak RSS", Unit.MB, "lower"),
    Metric("params", "policy parameters", Unit.BREAKDOWN),
    Metric("history_jobs", "history jobs", Unit.COUNT),
)
BY_KEY = {metric.key: metric for metric in METRICS}


def _shown(table: str) -> tuple[str, ...]:
    """The keys a table shows (``summary`` or ``compare``), in order."""
    shown = sorted((m for m in METRICS if getattr(m, table)), key=lambda m: getattr(m, table))
    return tuple(m.key for m in shown)


SUMMARY_KEYS = _shown("summary")
COMPARISON_KEYS = _shown("compare")
HEADLINE_KEYS = ("policy", *(m.key for m in METRICS if m.summary))  # the leading columns of comparison.csv
