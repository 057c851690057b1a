"""Fairness of one run: ASTRAEA's long-term GPU-time fairness (LTGF) per tenant and per job,
Themis' finish-time fairness ρ, and Jain's index over tenants.

Source: Zhisheng Ye, "ASTRAEA: Fairness Is More Than Counting GPUs"
(https://yezhisheng.me/post/astraea/), which states LTGF in words only: it "asks how much GPU
service a tenant or job has received over a period of time compared with how much it deserves";
"at the tenant level, LTGF distributes GPU-time according to tenant weights [...]. At the job
level, it distributes GPU-time fairly among concurrent jobs inside a tenant." The exact rules
below follow the ASTRAEA artifact's simulator (github.com/yzs981130/Astraea_Artifacts,
``simulation/alg/scheduler/lease.py``) where the post is silent; ``docs/fairness.md`` lists them.

A job has demand from ``submit_s`` until ``end_s`` (an unfinished job until the horizon); a
tenant's demand at time t is the sum of ``num_gpus`` of its jobs with demand. Received GPU-time
is ``gpu_seconds``.

- **Tenant LTGF ratio** r_i = received_i / deserved_i, with deserved_i = ∫ d_i(t) dt and d(t)
  the weighted max-min fair split of the cluster's G GPUs among the tenants with demand, capped
  at each tenant's demand (ASTRAEA's ``deserved = min(demand, weighted share)``; the capped
  remainder goes to the others, so a work-conserving, perfectly fair schedule has r_i = 1).
- **Job LTGF ratio** = ``gpu_seconds`` / ∫ min(num_gpus, d_i(t) / n_i(t)) dt over the job's
  demand, n_i(t) = the tenant's jobs with demand (ASTRAEA's equal job shares in a tenant).
  Unfairness of a ratio r is |r − 1|.
- **Finish-time fairness** ρ = JCT / T_id with T_id = ``duration_s`` × max(1, num_gpus / S_i),
  S_i = G × w_i / Σ w over the run's tenants: the job alone in its tenant's static weighted
  share of the cluster, time-sliced when it needs more GPUs than that (finished jobs only).
- **Jain's index** over tenants with deserved > 0: (Σ r_i)² / (n Σ r_i²).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import ConfigError, InputError
from schedlab.metrics.columns import Groups, Table, flags, labels, numbers

TENANT_COLUMNS = ("tenant", "name")  # ours, then ASTRAEA's share-production.csv
WEIGHT_COLUMNS = ("weight", "share")


def load_shares(path: Path | str) -> dict[str, float]:
    """Tenant weights from a CSV with a ``tenant`` (or ``name``) and a ``weight`` (or ``share``)
    column, e.g. ASTRAEA's ``share-production.csv``. Weights must be finite and > 0."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
            header = rows[0].keys() if rows else []
    except FileNotFoundError as exc:
        raise InputError("file not found", file=str(path)) from exc
    tenant_col = next((c for c in TENANT_COLUMNS if c in header), None)
    weight_col = next((c for c in WEIGHT_COLUMNS if c in header), None)
    if tenant_col is None or weight_col is None:
        missing = TENANT_COLUMNS if tenant_col is None else WEIGHT_COLUMNS
        raise InputError(f"needs a column {' or '.join(missing)}", file=str(path), field=missing[0])
    shares: dict[str, float] = {}
    for number, row in enumerate(rows, start=1):
        tenant = (row[tenant_col] or "").strip()
        if not tenant or tenant in shares:
            raise InputError("empty or repeated tenant", file=str(path), row=number, field=tenant_col)
        try:
            weight = float(row[weight_col] or "")
        except ValueError:
            weight = math.nan
        if not (math.isfinite(weight) and weight > 0):
            raise InputError(f"weight {row[weight_col]!r} is not a number > 0", file=str(path), row=number,
                             field=weight_col)  # fmt: skip
        shares[tenant] = weight
    return shares


def fairness_metrics(
    jobs: Table, cluster_gpus: float, *, shares: Mapping[str, float] | None = None, horizon_s: float | None = None
) -> dict[str, Any]:
    """The run's fairness keys and its per-tenant ``tenant_fairness`` block (see the module doc).

    ``shares`` maps tenant to weight (equal weights when None; every tenant of the run must be
    in it). ``horizon_s`` ends unfinished jobs' demand (default: the last end or submit). With
    no GPUs nothing is deserved and every statistic is None.
    """
    cluster_gpus = max(float(cluster_gpus), 0.0)
    codes, tenants = labels(jobs["tenant"])
    weights = _weights(tenants, shares)
    gpus = numbers(jobs["num_gpus"])
    submit = numbers(jobs["submit_s"])
    end = numbers(jobs["end_s"])
    received = numbers(jobs["gpu_seconds"])
    if horizon_s is None:
        horizon_s = float(np.nanmax(np.append(np.concatenate([submit, end]), 0.0)))
    start = np.minimum(submit, horizon_s)
    stop = np.maximum(np.where(np.isfinite(end), end, horizon_s), start)

    times = np.unique(np.concatenate([start, stop]))
    widths = np.diff(times)
    first, last = np.searchsorted(times, start), np.searchsorted(times, stop)
    demand = _step_sum(first, last, codes, gpus, len(times), len(tenants))
    active = _step_sum(first, last, codes, np.ones_like(gpus), len(times), len(tenants))
    fair = _water_fill(demand, weights, cluster_gpus)

    tenant_received = np.bincount(codes, weights=np.nan_to_num(received), minlength=len(tenants))
    tenant_deserved = widths @ fair if widths.size else np.zeros(len(tenants))
    tenant_ratio = _ratio(tenant_received, tenant_deserved)
    job_ratio = _ratio(received, _job_deserved(fair, active, widths, first, last, codes, gpus))
    rho = _rho(jobs, codes, weights, cluster_gpus)

    rated = tenant_ratio[np.isfinite(tenant_ratio)]
    job_unfair = np.abs(job_ratio[np.isfinite(job_ratio)] - 1.0)
    finite_rho = rho[np.isfinite(rho)]
    rho_by_tenant = Groups(codes, len(tenants)).mean(rho)
    return {
        "ltgf_tenant_min": float(rated.min()) if rated.size else None,
        "ltgf_tenant_max": float(rated.max()) if rated.size else None,
        "ltgf_job_unfairness_p95": float(np.percentile(job_unfair, 95)) if job_unfair.size else None,
        "ltgf_job_unfairness_max": float(job_unfair.max()) if job_unfair.size else None,
        "jain_tenants": jain_index(rated),
        "ftf_rho_mean": float(finite_rho.mean()) if finite_rho.size else None,
        "ftf_rho_p95": float(np.percentile(finite_rho, 95)) if finite_rho.size else None,
        "ftf_rho_max": float(finite_rho.max()) if finite_rho.size else None,
        "tenant_fairness": {
            name: {
                "weight": float(weights[i]),
                "received_gpu_h": tenant_received[i] / 3600.0,
                "deserved_gpu_h": tenant_deserved[i] / 3600.0,
                "ltgf_ratio": tenant_ratio[i],
                "rho_mean": rho_by_tenant[i],
            }
            for i, name in enumerate(tenants)
        },
    }


def jain_index(values: np.ndarray) -> float | None:
    """Jain's index (Σx)² / (n Σx²): 1 when all are equal, 1/n when one gets everything."""
    values = np.asarray(values, dtype=float)
    squares = float(np.dot(values, values))
    return float(values.sum() ** 2 / (values.size * squares)) if squares > 0 else None


def check_shares(tenants: Iterable[str], shares: Mapping[str, float]) -> None:
    """Fail when ``shares`` has no weight for one of ``tenants``."""
    missing = sorted(set(tenants) - set(shares))
    if missing:
        more = " ..." if len(missing) > 5 else ""
        raise ConfigError(f"the tenant weights lack {len(missing)} tenant(s) of the workload: "
                          f"{', '.join(missing[:5])}{more}")  # fmt: skip


def _weights(tenants: list[str], shares: Mapping[str, float] | None) -> np.ndarray:
    if shares is None:
        return np.ones(len(tenants))
    check_shares(tenants, shares)
    return np.array([float(shares[t]) for t in tenants])


def _step_sum(first: np.ndarray, last: np.ndarray, codes: np.ndarray, values: np.ndarray, points: int,
              tenants: int) -> np.ndarray:  # fmt: skip
    """Per interval between consecutive time points and per tenant: the sum of ``values`` of the
    jobs whose ``[first, last)`` interval range covers it."""
    steps = np.zeros((points, tenants))
    np.add.at(steps, (first, codes), values)
    np.add.at(steps, (last, codes), -values)
    total = np.cumsum(steps, axis=0)[:-1]
    total[np.abs(total) < 1e-9] = 0.0  # rounding left by cancelled steps
    return total


def _water_fill(demand: np.ndarray, weights: np.ndarray, capacity: float) -> np.ndarray:
    """Per row, the weighted max-min fair split of ``capacity`` among columns, capped at their demand."""
    fair = np.zeros_like(demand)
    open_ = demand > 0
    left = np.full(len(demand), capacity)
    for _ in range(demand.shape[1]):
        weight_sum = (open_ * weights).sum(axis=1)
        level = np.divide(left, weight_sum, out=np.zeros_like(left), where=weight_sum > 0)
        share = level[:, None] * weights
        capped = open_ & (demand <= share)
        final = open_ & ~capped.any(axis=1, keepdims=True)  # nobody capped: the open ones split the rest
        fair = np.where(capped, demand, np.where(final, share, fair))
        left -= np.where(capped, demand, 0.0).sum(axis=1)
        open_ &= ~(capped | final)
        if not open_.any():
            break
    return fair


def _job_deserved(fair: np.ndarray, active: np.ndarray, widths: np.ndarray, first: np.ndarray, last: np.ndarray,
                  codes: np.ndarray, gpus: np.ndarray) -> np.ndarray:  # fmt: skip
    """∫ min(num_gpus, tenant's fair GPUs / its jobs with demand) dt over each job's demand."""
    per_job = np.divide(fair, active, out=np.zeros_like(fair), where=active > 0)
    deserved = np.zeros(len(gpus))
    for size in np.unique(gpus[np.isfinite(gpus)]):
        cumulative = np.vstack([np.zeros(fair.shape[1]), np.cumsum(np.minimum(per_job, size) * widths[:, None], axis=0)])
        mine = gpus == size
        deserved[mine] = cumulative[last[mine], codes[mine]] - cumulative[first[mine], codes[mine]]
    return deserved


def _rho(jobs: Table, codes: np.ndarray, weights: np.ndarray, cluster_gpus: float) -> np.ndarray:
    """Finish-time fairness of each finished job (NaN for the others)."""
    finished = flags(jobs["finished"])
    jct = numbers(jobs["end_s"]) - numbers(jobs["submit_s"])
    share = cluster_gpus * weights[codes] / weights.sum() if len(weights) else np.zeros(0)
    with np.errstate(divide="ignore"):
        ideal = numbers(jobs["duration_s"]) * np.maximum(1.0, numbers(jobs["num_gpus"]) / share)
    return np.where(finished & np.isfinite(ideal), _ratio(jct, ideal), np.nan)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is not > 0."""
    ratio: np.ndarray = np.divide(numerator, denominator, out=np.full(len(denominator), np.nan), where=denominator > 0)
    return ratio
