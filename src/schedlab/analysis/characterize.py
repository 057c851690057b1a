"""Workload characterisation after Hu et al., SC '21 (Helios) §3: cluster, job and user views.

:func:`characterize` runs every analysis the workload supports and writes ``DIR/*.png``,
``DIR/summary.json`` and ``DIR/index.html``. The layers: :mod:`~schedlab.analysis.tables`
computes, :mod:`~schedlab.analysis.plots` draws, :mod:`~schedlab.analysis.sections` turns each
analysis into numbers, text and a figure, and :mod:`~schedlab.analysis.page` lays out the HTML.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.analysis.page import html_page
from schedlab.analysis.sections import SECTIONS, Section, Trace, clean
from schedlab.analysis.tables import duration_text
from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.figures import save
from schedlab.units import DAY_S, HOUR_S
from schedlab.workload.schema import FINAL_STATES, Workload


def characterize(workload: Workload, out_dir: Path, *, cluster: ClusterSpec | None = None) -> list[Path]:
    """Run every analysis the workload supports; write ``<analysis>.png`` files, ``summary.json`` and
    ``index.html`` into ``out_dir`` and return their paths. ``cluster`` turns GPU counts into
    utilisation (of the whole cluster, and of each VC for partitioned or quota'd tenants)."""
    if len(workload) == 0:
        raise ConfigError("the workload has no jobs to characterise")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = Trace(workload, None if cluster is None else float(cluster.total_gpus), _vc_capacity(cluster))
    sections = [build(trace) for build in SECTIONS]
    written = []
    for section in sections:
        path = out_dir / section.png
        if section.figure is not None:
            written.append(save(section.figure, path))
        else:
            path.unlink(missing_ok=True)
    summary = _summary(trace, sections)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    (out_dir / "index.html").write_text(html_page(summary, sections))
    return [*written, out_dir / "summary.json", out_dir / "index.html"]


def _vc_capacity(cluster: ClusterSpec | None) -> dict[str, float] | None:
    """GPUs of each VC: its node pool in a partitioned cluster, else its quota (None if none)."""
    if cluster is None:
        return None
    if cluster.partitioned:
        return {pool: float(g) for pool, g in cluster.gpus_by_pool().items() if pool}
    quotas = {t.name: float(t.quota_gpus) for t in cluster.tenants.values() if t.quota_gpus}
    return quotas or None


def _summary(trace: Trace, sections: list[Section]) -> dict[str, Any]:
    """The content of summary.json: the workload's facts, the key figures and every section's numbers."""
    w = trace.workload
    submit = w.jobs["submit_s"].to_numpy(dtype=np.float64)
    gpu_h = float((w.jobs["num_gpus"] * w.jobs["duration_s"]).sum() / HOUR_S)
    summary: dict[str, Any] = clean(
        {
            "source": w.source,
            "origin": None if w.origin is None else w.origin.isoformat(),
            "jobs": len(w),
            "skipped": dict(w.skipped),
            "span_days": float((submit.max() - submit.min()) / DAY_S),
            "gpu_hours": gpu_h,
            "cluster_gpus": trace.capacity_gpus,
            "running_basis": trace.basis,
            "key_figures": _key_figures(sections),
            "analyses": {
                s.key: {"title": s.title, "figure": s.png if s.figure is not None else None, "text": s.text,
                        **s.numbers}  # fmt: skip
                for s in sections
            },
        }
    )
    return summary


def _key_figures(sections: list[Section]) -> list[str]:
    """The headline numbers of the analyses that ran, one short line each."""
    n = {s.key: s.numbers for s in sections if s.figure is not None}
    lines = []
    if n.get("hourly", {}).get("peak_trough_submit_ratio") is not None:
        h = n["hourly"]
        lines.append(f"peak/trough hourly submissions: {h['peak_trough_submit_ratio']:.1f}x "
                     f"({h['peak_submit_hour']}:00 vs {h['trough_submit_hour']}:00)")  # fmt: skip
    p50 = n["durations"]["table"]["all GPU jobs"]["p50_s"]
    lines.append(f"median GPU-job duration: {duration_text(p50)}")
    d = n["gpu_demand"]
    lines.append(f"single-GPU jobs: {d['single_gpu_job_share']:.1%} of jobs")
    lines.append(f"jobs with 8+ GPUs: {d['ge8_gpu_job_share']:.1%} of jobs, {d['ge8_gpu_time_share']:.1%} of GPU time")
    if "final_states" in n:
        shares = n["final_states"]["job_share"]
        lines.append(", ".join(f"{s} {shares.get(s, 0.0):.1%}" for s in FINAL_STATES if s in shares) + " of jobs")
    if "user_gpu_time" in n:
        lines.append(f"GPU-time share of the top 5 % users: {n['user_gpu_time']['top_5pct_users_gpu_time_share']:.1%}")
    if "vc_queueing" in n:
        q = n["vc_queueing"]
        lines.append(f"queueing: {q['queued_share']:.1%} of jobs waited, mean {duration_text(q['mean_queue_s'])}, "
                     f"{q['queue_share_of_jct']:.1%} of total JCT")  # fmt: skip
    if "user_queueing" in n:
        lines.append(f"queueing share of the 5 % longest-waiting users: "
                     f"{n['user_queueing']['top_5pct_users_queue_share']:.1%}")  # fmt: skip
    return lines
