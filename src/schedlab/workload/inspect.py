"""Summaries of a workload, as a plain dict and as Rich tables (``schedlab traces inspect``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from schedlab.workload.schema import Workload

QUANTILES = {"p10": 0.10, "p50": 0.50, "p90": 0.90, "p99": 0.99}


def describe(workload: Workload) -> dict[str, Any]:
    """Headline figures of a workload.

    Keys: ``source``, ``origin`` (ISO string or None), ``jobs``, ``skipped`` (reason → rows),
    ``users``, ``tenants`` (distinct non-empty values), ``gpu_mix`` (num_gpus → share of jobs,
    ascending), ``classes`` (priority class → jobs), ``final_states`` (state → jobs),
    ``duration_s`` (p10, p50, p90, p99, mean), ``submit_span_days``, ``gpu_hours``.
    """
    jobs = workload.jobs
    duration = jobs["duration_s"].to_numpy(dtype=np.float64)
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)
    gpus = jobs["num_gpus"].to_numpy(dtype=np.float64)
    empty = len(jobs) == 0
    mix = jobs["num_gpus"].value_counts(normalize=True).sort_index()
    return {
        "source": workload.source,
        "origin": None if workload.origin is None else workload.origin.isoformat(),
        "jobs": len(jobs),
        "skipped": dict(workload.skipped),
        "users": int(jobs["user"][jobs["user"] != ""].nunique()),
        "tenants": int(jobs["tenant"][jobs["tenant"] != ""].nunique()),
        "gpu_mix": {float(k): float(v) for k, v in mix.items()},
        "classes": {str(k): int(v) for k, v in jobs["priority_class"].value_counts().items()},
        "final_states": {str(k): int(v) for k, v in jobs["final_state"].value_counts().items()},
        "duration_s": {
            **{name: float("nan") if empty else float(np.quantile(duration, q)) for name, q in QUANTILES.items()},
            "mean": float("nan") if empty else float(duration.mean()),
        },
        "submit_span_days": 0.0 if empty else float((submit.max() - submit.min()) / 86400.0),
        "gpu_hours": float((gpus * duration).sum() / 3600.0),
    }


def render_description(summary: dict[str, Any]) -> Group:
    """Rich tables for a :func:`describe` result (print with ``rich.console.Console().print``)."""
    # The source is a heading line of its own: a long path as a table title would wrap mid-name.
    heading = Text(f"Workload {summary['source']}", style="bold")
    overview = Table(show_header=False)
    overview.add_column("item", style="bold")
    overview.add_column("value", justify="right")
    overview.add_row("jobs", f"{summary['jobs']:,}")
    for reason, count in sorted(summary["skipped"].items()):
        overview.add_row(f"skipped: {reason}", f"{count:,}")
    overview.add_row("users", f"{summary['users']:,}")
    overview.add_row("tenants", f"{summary['tenants']:,}")
    overview.add_row("origin (t = 0)", summary["origin"] or "-")
    overview.add_row("submit span (days)", f"{summary['submit_span_days']:.2f}")
    overview.add_row("GPU-hours", f"{summary['gpu_hours']:,.1f}")

    durations = Table(title="Duration (s)")
    for name in summary["duration_s"]:
        durations.add_column(name, justify="right")
    durations.add_row(*(f"{v:,.0f}" for v in summary["duration_s"].values()))

    mix = Table(title="GPUs per job")
    mix.add_column("GPUs", justify="right")
    mix.add_column("share of jobs", justify="right")
    fractional = sum(share for gpus, share in summary["gpu_mix"].items() if gpus < 1)
    if fractional:
        mix.add_row("< 1", f"{fractional:.2%}")
    for gpus, share in summary["gpu_mix"].items():
        if gpus >= 1:
            mix.add_row(f"{gpus:g}", f"{share:.2%}")

    classes = Table(title="Classes and final states")
    classes.add_column("kind")
    classes.add_column("value")
    classes.add_column("jobs", justify="right")
    for kind, key in (("class", "classes"), ("final state", "final_states")):
        for value, count in summary[key].items():
            classes.add_row(kind, value, f"{count:,}")
    return Group(heading, overview, durations, mix, classes)
