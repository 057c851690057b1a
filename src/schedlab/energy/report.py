"""Table 5-shaped metrics of a CES / vanilla DRS run and the nodes-over-time plot.

All metrics are read off a regular grid (one row per sample): ``active`` nodes running work,
``powered`` nodes drawing power (booted or booting) and ``total`` nodes of the cluster.

* ``node_util_before`` = mean of active / total (every node on, as without the service);
* ``node_util_after`` = mean of min(active, powered) / powered;
* ``nodes_off_mean`` = mean of total - powered (the paper's average powered-down nodes);
* ``wakeups_per_day`` = JobArrivalCheck wake-ups per day; ``nodes_per_wakeup`` = nodes each;
* ``jobs_delayed`` = as the caller defines it (replay: shortfall episodes; simulation: jobs
  whose start waited for a powered-down or booting node);
* ``kwh_saved`` = powered-down node-hours x idle power x cooling factor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.energy.ces import CESConfig, kwh
from schedlab.figures import new_figure, save

FIGSIZE = (10.0, 4.5)


def table5(
    active: np.ndarray,
    powered: np.ndarray,
    total: np.ndarray,
    *,
    step_s: float,
    wakeups: Sequence[int],
    jobs_delayed: int,
    config: CESConfig,
    off_watts: np.ndarray | None = None,
) -> dict[str, Any]:
    """The Table 5 row set of one run (see the module doc)."""
    active = np.asarray(active, dtype=float)
    powered = np.asarray(powered, dtype=float)
    total = np.asarray(total, dtype=float)
    days = len(active) * step_s / 86400.0
    on = total > 0
    live = powered > 0
    off = total - powered
    saved = (
        kwh(float(off.sum()) * step_s, config)
        if off_watts is None
        else kwh(float(np.asarray(off_watts, dtype=float).sum()) * step_s, config, idle_power_w=1.0)
    )
    return {
        "node_util_before": float(np.mean(np.minimum(active[on], total[on]) / total[on])) if on.any() else None,
        "node_util_after": float(np.mean(np.minimum(active[live], powered[live]) / powered[live])) if live.any() else None,
        "nodes_off_mean": float(off.mean()) if off.size else None,
        "wakeups": len(wakeups),
        "wakeups_per_day": len(wakeups) / days if days > 0 else None,
        "nodes_per_wakeup": float(np.mean(wakeups)) if len(wakeups) else None,
        "jobs_delayed": int(jobs_delayed),
        "kwh_saved": saved,
        "kwh_saved_per_day": saved / days if days > 0 else None,
        "days": days,
    }  # fmt: skip


def plot_nodes(
    time: pd.DatetimeIndex | np.ndarray,
    active: np.ndarray,
    total: np.ndarray,
    powered: Mapping[str, np.ndarray],
    path: Path,
    *,
    title: str,
) -> Path:
    """Active vs powered-on nodes over time (one line per service), saved as a PNG."""
    fig = new_figure(FIGSIZE, layout=None)
    ax = fig.add_subplot()
    ax.plot(time, total, color="0.6", linewidth=1.0, label="total nodes")
    for label, values in powered.items():
        ax.plot(time, values, linewidth=1.0, label=f"powered on ({label})")
    ax.plot(time, active, color="black", linewidth=0.8, label="active (running work)")
    ax.set_ylabel("nodes")
    ax.set_title(title)
    ax.grid(axis="y", linestyle=":")
    ax.legend(loc="lower left", fontsize=8)
    fig.autofmt_xdate()
    return save(fig, path, bbox_inches="tight")
