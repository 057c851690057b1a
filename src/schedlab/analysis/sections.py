"""The characterisation report, one section per analysis: its table's numbers, a short text and
its figure, or a note saying why the trace does not support it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from schedlab.analysis.plots import (
    MAX_VCS,
    plot_duration_cdf,
    plot_final_states,
    plot_gpu_demand,
    plot_hourly,
    plot_monthly,
    plot_queue_over_time,
    plot_user_gpu_time,
    plot_vc_queueing,
    plot_user_queueing,
    plot_vc_usage,
)
from schedlab.analysis.tables import (
    NO_QUEUE_BASIS,
    QUEUE_BASIS,
    TOP_USER_FRACTIONS,
    duration_summary,
    duration_text,
    final_state_gpu_time,
    final_states_by_demand,
    gpu_demand,
    hourly_profile,
    monthly_trends,
    queue_over_time,
    queue_summary,
    recorded_queue,
    top_user_share,
    user_gpu_time,
    user_queueing,
    vc_daily_usage,
    vc_queueing,
)
from schedlab.workload.schema import Workload


@dataclass
class Section:
    """One analysis in the report: its figure (None when skipped) and the text and numbers behind it."""

    key: str
    title: str
    text: str
    figure: Figure | None = None
    numbers: dict[str, Any] = field(default_factory=dict)

    @property
    def png(self) -> str:
        return f"{self.key}.png"


@dataclass(frozen=True)
class Trace:
    """What the analyses share: the job table, its dates, skipped rows and cluster capacity."""

    workload: Workload
    capacity_gpus: float | None
    vc_gpus: Mapping[str, float] | None

    @property
    def jobs(self) -> pd.DataFrame:
        return self.workload.jobs

    @property
    def basis(self) -> str:
        return QUEUE_BASIS if self.queue_known else NO_QUEUE_BASIS

    @property
    def queue_known(self) -> bool:
        return recorded_queue(self.jobs) is not None


def _hourly_section(trace: Trace) -> Section:
    title = "Hourly cluster usage and submissions"
    if trace.workload.origin is None:
        return Section("hourly", title, "Skipped: the trace has no wall-clock dates, so hours of day are unknown.")
    table = hourly_profile(trace.jobs, trace.workload.origin, capacity_gpus=trace.capacity_gpus)
    subs = table["submissions"].dropna()
    ratio = float(subs.max() / subs.min()) if len(subs) and subs.min() > 0 else None
    numbers = {
        "peak_submit_hour": int(subs.idxmax()),
        "trough_submit_hour": int(subs.idxmin()),
        "peak_trough_submit_ratio": ratio,
        "mean_submissions_per_hour": float(subs.mean()),
        "mean_gpus_running": float(table["gpus_running"].mean()),
        "peak_usage_hour": int(table["gpus_running"].idxmax()),
        "mean_utilisation": float(table["utilisation"].mean()) if "utilisation" in table.columns else None,
        "running_basis": trace.basis,
        "table": _records(table),
    }
    ratio_text = f"{ratio:.1f}x" if ratio is not None else "undefined (an hour without submissions)"
    util = f" ({numbers['mean_utilisation']:.0%} of the cluster)" if numbers["mean_utilisation"] is not None else ""
    text = (
        f"Submissions peak at {numbers['peak_submit_hour']}:00 and bottom out at {numbers['trough_submit_hour']}:00 "
        f"(peak/trough ratio {ratio_text}). Running jobs request {numbers['mean_gpus_running']:,.0f} GPUs on "
        f"average{util}, most at {numbers['peak_usage_hour']}:00."
    )
    return Section("hourly", title, text, plot_hourly(table, trace.basis), numbers)


def _monthly_section(trace: Trace) -> Section:
    title = "Monthly trends"
    if trace.workload.origin is None:
        return Section("monthly", title, "Skipped: the trace has no wall-clock dates, so months are unknown.")
    table = monthly_trends(trace.jobs, trace.workload.origin, capacity_gpus=trace.capacity_gpus)
    busiest = str(table["gpu_hours"].idxmax())
    numbers = {"months": len(table), "busiest_month": busiest, "table": _records(table)}
    text = (
        f"{len(table)} month(s), {table['jobs'].min():,}-{table['jobs'].max():,} jobs per month; most GPU time in "
        f"{busiest} ({table['gpu_hours'].max():,.0f} GPU-hours). Multi-GPU jobs: "
        f"{table['multi_gpu_jobs'].sum() / table['jobs'].sum():.1%} of all jobs."
    )
    return Section("monthly", title, text, plot_monthly(table), numbers)


def _vc_section(trace: Trace) -> Section:
    title = "Per-VC utilisation"
    tenants = trace.jobs["tenant"].nunique()
    if tenants < 2:
        return Section("vc_usage", title, f"Skipped: the trace has {tenants} tenant (VC), so there is no spread.")
    table = vc_daily_usage(trace.jobs, trace.workload.origin, vc_gpus=trace.vc_gpus)
    sized = trace.vc_gpus is not None and table.shape[1] > 0
    if not sized:
        table = vc_daily_usage(trace.jobs, trace.workload.origin)
    medians = table.median().sort_values(ascending=False)
    numbers = {
        "vcs": int(tenants),
        "vcs_shown": int(min(table.shape[1], MAX_VCS)),
        "relative_to_size": sized,
        "days": int(table.shape[0]),
        "median_by_vc": {str(k): clean(v) for k, v in medians.items()},
    }
    what = "daily utilisation of its own GPUs" if sized else "daily share of the cluster's GPU time"
    left_out = f" {tenants - table.shape[1]} VC(s) have no size in the cluster and are left out." if sized else ""
    text = (
        f"{tenants} VCs over {table.shape[0]} days; per-VC median {what} ranges from {medians.min():.1%} to "
        f"{medians.max():.1%} ({medians.index[0]} highest).{left_out}"
    )
    return Section("vc_usage", title, text, plot_vc_usage(table, relative_to_size=sized), numbers)


def _duration_section(trace: Trace) -> Section:
    table = duration_summary(trace.jobs)
    cpu = int(trace.workload.skipped.get("cpu_job", 0))
    total = len(trace.jobs) + sum(trace.workload.skipped.values())
    overall = table.loc["all GPU jobs"]
    numbers = {"cpu_jobs_skipped": cpu, "cpu_job_share_of_rows": cpu / total if total else 0.0,
               "table": _records(table)}  # fmt: skip
    cpu_text = (
        f" The loader skipped {cpu:,} CPU jobs ({numbers['cpu_job_share_of_rows']:.1%} of the trace's rows); their "
        "durations are not kept, so only GPU jobs are shown."
        if cpu
        else " The trace has no CPU jobs (or the loader recorded none), so only GPU jobs are shown."
    )
    text = (
        f"Median GPU-job duration {duration_text(overall['p50_s'])}, p90 {duration_text(overall['p90_s'])}, "
        f"mean {duration_text(overall['mean_s'])}.{cpu_text}"
    )
    return Section("durations", "Job duration", text, plot_duration_cdf(trace.jobs, cpu), numbers)


def _demand_section(trace: Trace) -> Section:
    table = gpu_demand(trace.jobs)
    gpus = table.index.to_numpy(dtype=np.float64)
    numbers = {
        "single_gpu_job_share": float(table["job_share"][gpus == 1].sum()),
        "at_most_one_gpu_job_share": float(table["job_share"][gpus <= 1].sum()),
        "single_gpu_time_share": float(table["gpu_time_share"][gpus <= 1].sum()),
        "ge8_gpu_job_share": float(table["job_share"][gpus >= 8].sum()),
        "ge8_gpu_time_share": float(table["gpu_time_share"][gpus >= 8].sum()),
        "table": _records(table),
    }
    text = (
        f"{numbers['single_gpu_job_share']:.1%} of jobs use a single GPU but take only "
        f"{numbers['single_gpu_time_share']:.1%} of GPU time (jobs with at most one GPU); jobs with 8+ GPUs are "
        f"{numbers['ge8_gpu_job_share']:.1%} of jobs and {numbers['ge8_gpu_time_share']:.1%} of GPU time."
    )
    return Section("gpu_demand", "GPU demand", text, plot_gpu_demand(table), numbers)


def _state_section(trace: Trace) -> Section:
    title = "Final states by GPU demand"
    if (trace.jobs["final_state"] == "unknown").all():
        return Section("final_states", title, "Skipped: the trace records no final states.")
    table = final_states_by_demand(trace.jobs)
    job_shares = trace.jobs["final_state"].value_counts(normalize=True)
    time_shares = final_state_gpu_time(trace.jobs)
    numbers = {
        "job_share": {str(k): float(v) for k, v in job_shares.items()},
        "gpu_time_share": {str(k): float(v) for k, v in time_shares.items()},
        "table": _records(table),
    }
    parts = ", ".join(
        f"{s} {job_shares.get(s, 0.0):.1%} of jobs / {time_shares.get(s, 0.0):.1%} of GPU time"
        for s in time_shares.index
    )
    return Section("final_states", title, f"{parts[0].upper()}{parts[1:]}.", plot_final_states(table), numbers)


def _user_section(trace: Trace) -> Section:
    title = "GPU time by user (marquee users)"
    if (trace.jobs["user"] == "").all():
        return Section("user_gpu_time", title, "Skipped: the trace has no user column.")
    table = user_gpu_time(trace.jobs)
    shares = {f"top_{round(100 * f)}pct_users_gpu_time_share": top_user_share(table, f) for f in TOP_USER_FRACTIONS}
    numbers = {"users": len(table), **shares}
    text = (
        f"{len(table):,} users. The top 1 % / 5 % / 10 % of users consume "
        + " / ".join(f"{v:.1%}" for v in shares.values())
        + " of all GPU time."
    )
    return Section("user_gpu_time", title, text, plot_user_gpu_time(table), numbers)


def _queue_section(trace: Trace) -> Section:
    title = "Queueing delay by user"
    if not trace.queue_known:
        return Section("user_queueing", title, "Skipped: the trace records no queueing delay.")
    if (trace.jobs["user"] == "").all():
        return Section("user_queueing", title, "Skipped: the trace has no user column.")
    table = user_queueing(trace.jobs)
    top5 = top_user_share(table, 0.05)
    numbers = {
        "users": len(table),
        "median_user_mean_queue_s": float(table["mean_queue_s"].median()),
        "top_5pct_users_queue_share": top5,
    }
    text = (
        f"The median user waits {duration_text(numbers['median_user_mean_queue_s'])} per job on average; the 5 % "
        f"of users who wait longest account for {top5:.1%} of all queueing delay."
    )
    return Section("user_queueing", title, text, plot_user_queueing(table), numbers)


NO_QUEUE_NOTE = (
    "Skipped: the trace records no start times, so queueing delays are unknown (formats with start "
    "times: helios, philly JSON, pai, openb, and csv with a queue_s column)."
)


def _vc_queue_section(trace: Trace) -> Section:
    title = "Queueing delay by VC"
    recorded = recorded_queue(trace.jobs)
    if recorded is None:
        return Section("vc_queueing", title, NO_QUEUE_NOTE)
    overall = queue_summary(trace.jobs)
    table = vc_queueing(trace.jobs)
    known = np.isfinite(recorded)
    delays = pd.Series(recorded[known]).groupby(trace.jobs["tenant"].to_numpy(dtype=object)[known])
    spread = {str(vc): values.to_numpy() for vc, values in delays}
    corr = None
    if len(table) >= 3 and table["mean_queue_s"].std() > 0 and table["mean_duration_s"].std() > 0:
        corr = float(table["mean_queue_s"].corr(table["mean_duration_s"], method="spearman"))
    numbers = {**overall, "vcs": len(table), "queue_duration_rank_correlation": corr, "table": _records(table)}
    longest = table.index[0]
    corr_text = (
        f" Across VCs, mean queueing delay and mean duration have a rank correlation of {corr:.2f}."
        if corr is not None
        else ""
    )
    text = (
        f"{overall['jobs']:,} jobs with a recorded start: {overall['queued_share']:.1%} waited; mean delay "
        f"{duration_text(overall['mean_queue_s'])}, p90 {duration_text(overall['p90_queue_s'])}; queueing is "
        f"{overall['queue_share_of_jct']:.1%} of total JCT. {len(table)} VC(s); {longest} waits longest "
        f"(mean {duration_text(table['mean_queue_s'].iloc[0])}).{corr_text}"
    )
    return Section("vc_queueing", title, text, plot_vc_queueing(table, spread), numbers)


def _queue_time_section(trace: Trace) -> Section:
    title = "Queueing delay over time"
    if not trace.queue_known:
        return Section("queue_over_time", title, NO_QUEUE_NOTE)
    table = queue_over_time(trace.jobs, trace.workload.origin)
    busy = table["mean_queue_s"].dropna()
    worst = str(busy.idxmax())
    numbers = {"bins": len(table), "bin": table.index.name, "worst_bin": worst,
               "worst_bin_mean_queue_s": float(busy.max()), "table": _records(table)}  # fmt: skip
    text = (
        f"Mean queueing delay by {table.index.name} of submission ranges from {duration_text(float(busy.min()))} to "
        f"{duration_text(float(busy.max()))} (worst: {worst})."
    )
    return Section("queue_over_time", title, text, plot_queue_over_time(table), numbers)


SECTIONS: tuple[Callable[[Trace], Section], ...] = (
    _hourly_section,
    _monthly_section,
    _vc_section,
    _duration_section,
    _demand_section,
    _state_section,
    _user_section,
    _queue_section,
    _vc_queue_section,
    _queue_time_section,
)


def _records(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """A table as ``{row label: {column: value}}`` for JSON."""
    return {str(k): {str(c): v for c, v in row.items()} for k, row in table.to_dict(orient="index").items()}


def clean(value: Any) -> Any:
    """JSON-ready copy: numpy scalars to Python, NaN and infinities to None."""
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value
