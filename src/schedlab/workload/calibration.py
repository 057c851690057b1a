"""Published workload statistics a synthetic profile is calibrated to, and how a sample measures up.

:data:`VENUS_TARGETS` are the Helios Venus figures the ``venus`` profile reproduces (Hu et al.,
SC '21; the HeliosArtifact summary ``helios_cluster_summary.csv``; Lucid's Venus
``cluster_throughput.csv``). Each has a tolerance stated for a 200,000-job sample: the means
(GPU time per job, and through it the jobs a month, since the arrival window is set by the
offered load) move by up to a quarter between seeds because a few 128-GPU jobs of weeks carry
percents of all GPU time; medians and shares move by a few percent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from schedlab.units import DAY_S
from schedlab.workload.schema import Workload


@dataclass(frozen=True)
class Target:
    """A published statistic: its value, the allowed distance (``rel`` or ``abs``) and its source."""

    name: str
    value: float
    source: str
    rel: float | None = None
    abs: float | None = None

    def allowed(self) -> float:
        return self.abs if self.abs is not None else abs(self.value) * (self.rel or 0.0)

    def holds(self, measured: float) -> bool:
        return abs(measured - self.value) <= self.allowed()

    def tolerance(self) -> str:
        return f"± {self.abs:g}" if self.abs is not None else f"± {100 * (self.rel or 0.0):g} %"


SUMMARY = "helios_cluster_summary.csv, Venus row"
THROUGHPUT = "Lucid Venus cluster_throughput.csv"
VENUS_TARGETS: tuple[Target, ...] = (
    Target("GPU jobs per 30 days", 20754.0, f"{THROUGHPUT}: 125,214 GPU jobs in 181 days", rel=0.25),
    Target("share of 1-GPU jobs", 0.51, "§3.2.1 'over 50 %' and med_gpu_num 1; 49.8 % in the "
           f"single-submission bins of {THROUGHPUT}", abs=0.015),  # fmt: skip
    Target("median GPUs per job", 1.0, f"{SUMMARY}: med_gpu_num", abs=0.0),
    Target("mean GPUs per job", 6.736, f"{SUMMARY}: avg_gpu_num", rel=0.05),
    Target("share of 8-GPU jobs", 0.269, f"single-submission bins of {THROUGHPUT}", abs=0.02),
    Target("median duration (s)", 204.0, f"{SUMMARY}: med_run_time_gpu", rel=0.10),
    Target("share of jobs under 1,000 s", 0.75, "§3.2.1: 'roughly three-quarters' (all four clusters)", abs=0.03),
    Target("mean duration (s)", 13040.6, f"{SUMMARY}: avg_run_time_gpu", rel=0.15),
    Target("GPU time per job (GPU-s)", 98525.0, f"{SUMMARY}: GPU time by state / gpu_job_num", rel=0.25),
    Target("share completed", 0.526, f"{SUMMARY}: complete_rate_gpu", abs=0.015),
    Target("share cancelled", 0.272, f"{SUMMARY}: cancel_rate_gpu", abs=0.015),
    Target("share failed", 0.202, f"{SUMMARY}: fail_rate_gpu", abs=0.015),
)


def _share(cond: np.ndarray) -> float:
    return float(np.mean(cond))


MEASURES: dict[str, Callable[[Workload], float]] = {
    "GPU jobs per 30 days": lambda w: len(w) / w.meta["span_s"] * 30 * DAY_S,
    "share of 1-GPU jobs": lambda w: _share(w.jobs["num_gpus"].to_numpy() == 1),
    "median GPUs per job": lambda w: float(np.median(w.jobs["num_gpus"])),
    "mean GPUs per job": lambda w: float(np.mean(w.jobs["num_gpus"])),
    "share of 8-GPU jobs": lambda w: _share(w.jobs["num_gpus"].to_numpy() == 8),
    "median duration (s)": lambda w: float(np.median(w.jobs["duration_s"])),
    "share of jobs under 1,000 s": lambda w: _share(w.jobs["duration_s"].to_numpy() < 1000),
    "mean duration (s)": lambda w: float(np.mean(w.jobs["duration_s"])),
    "GPU time per job (GPU-s)": lambda w: float(np.mean(w.jobs["num_gpus"] * w.jobs["duration_s"])),
    "share completed": lambda w: _share(w.jobs["final_state"].to_numpy() == "completed"),
    "share cancelled": lambda w: _share(w.jobs["final_state"].to_numpy() == "cancelled"),
    "share failed": lambda w: _share(w.jobs["final_state"].to_numpy() == "failed"),
}


def measure(w: Workload, targets: tuple[Target, ...] = VENUS_TARGETS) -> list[tuple[Target, float]]:
    """Each target beside the value the synthetic workload ``w`` (with ``meta['span_s']``) shows."""
    return [(t, MEASURES[t.name](w)) for t in targets]
