"""Workload transforms: windows, samples, load scaling, class scaling, re-basing, tenant renaming
and the train/test split of history-based predictors.

Each transform returns a new :class:`Workload` sorted by submit time and appends a record to
``meta["transforms"]`` naming the operation, its arguments and how many rows it removed or
added, so no row is lost silently. Moving a job's submit time moves its deadline with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.workload.schema import Workload, canonical_frame
from schedlab.workload.tenant_map import renamed


def time_window(w: Workload, start_s: float, end_s: float) -> Workload:
    """Jobs submitted in ``[start_s, end_s)``; submit times are kept (see :func:`shift_to_zero`)."""
    if end_s < start_s:
        raise ConfigError(f"time_window: end_s {end_s} is before start_s {start_s}")
    submit = w.jobs["submit_s"].to_numpy()
    keep = (submit >= start_s) & (submit < end_s)
    record = {
        "op": "time_window",
        "start_s": start_s,
        "end_s": end_s,
        "removed_before": int(np.sum(submit < start_s)),
        "removed_after": int(np.sum(submit >= end_s)),
    }
    return _result(w, w.jobs[keep], record)


def sample(w: Workload, n: int | None = None, frac: float | None = None, *, seed: int) -> Workload:
    """A uniform random subset of ``n`` jobs or of a fraction ``frac`` of them (exactly one of the two)."""
    total = len(w.jobs)
    if n is not None and frac is None:
        size = n
    elif frac is not None and n is None:
        size = int(round(frac * total))
    else:
        raise ConfigError("sample: give exactly one of n and frac")
    if not 0 <= size <= total:
        raise ConfigError(f"sample: cannot take {size} of {total} jobs")
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(total, size=size, replace=False))
    record = {"op": "sample", "n": n, "frac": frac, "seed": seed, "removed": total - size}
    return _result(w, w.jobs.iloc[rows], record)


def scale_arrivals(w: Workload, k: float) -> Workload:
    """Offered load x ``k``: every inter-arrival gap divided by ``k`` (the first submit stays put)."""
    if not 0 < k < math.inf:
        raise ConfigError(f"scale_arrivals: k must be a positive finite number (got {k})")
    jobs = w.jobs.copy()
    submit = jobs["submit_s"].to_numpy()
    first = submit.min() if submit.size else 0.0
    _move(jobs, first + (submit - first) / k)
    return _result(w, jobs, {"op": "scale_arrivals", "k": k, "removed": 0})


def scale_class(w: Workload, cls: str, k: float, *, seed: int, jitter_s: float | None = None) -> Workload:
    """Jobs of priority class ``cls`` x ``k`` (other classes unchanged).

    ``k >= 1``: ``floor(k) - 1`` copies of every job of the class plus one copy of a random
    ``k - floor(k)`` fraction of them; ``k < 1``: a random ``k`` fraction of the class is kept.
    Copies get ids ``"<id>~<j>"`` and their submit time moved by a uniform jitter of up to
    +-``jitter_s`` (default: the class's mean inter-arrival gap), kept inside the original span.
    """
    if k < 0:
        raise ConfigError(f"scale_class: k must be non-negative (got {k})")
    jobs = w.jobs
    members = np.flatnonzero((jobs["priority_class"] == cls).to_numpy())
    rng = np.random.default_rng(seed)
    if k < 1:
        keep_n = int(round(k * members.size))
        dropped = np.setdiff1d(members, rng.choice(members, size=keep_n, replace=False))
        record = {"op": "scale_class", "class": cls, "k": k, "seed": seed, "removed": int(dropped.size), "added": 0}
        return _result(w, jobs.drop(index=jobs.index[dropped]), record)
    whole = int(np.floor(k))
    extra = rng.choice(members, size=int(round((k - whole) * members.size)), replace=False)
    source_rows = np.concatenate([np.tile(members, whole - 1), np.sort(extra)])
    copy_no = np.concatenate([np.repeat(np.arange(1, whole), members.size), np.full(extra.size, whole)])
    copies = jobs.iloc[source_rows].copy()
    copies["job_id"] = (copies["job_id"].astype(str) + "~" + pd.Series(copy_no, index=copies.index).astype(str)).to_numpy(dtype=object)
    _move(copies, _jittered(rng, jobs, members, copies["submit_s"].to_numpy(), jitter_s))
    record = {"op": "scale_class", "class": cls, "k": k, "seed": seed, "removed": 0, "added": len(copies)}
    return _result(w, pd.concat([jobs, copies], ignore_index=True), record)


def rename_tenants(w: Workload, mapping: Mapping[str, str] | None = None, prefix: str = "") -> Workload:
    """Tenants renamed: by ``mapping`` (trace name → new name) first, else with ``prefix`` stripped.

    The record counts the jobs whose tenant changed and keeps the old → new names."""
    old = w.jobs["tenant"]
    names = {t: renamed(t, mapping or {}, prefix) for t in old.unique()}
    changed = {t: n for t, n in names.items() if n != t}
    jobs = w.jobs.assign(tenant=old.map(names))
    renamed_jobs = int(old.isin(list(changed)).sum())
    record = {"op": "rename_tenants", "prefix": prefix, "renamed": changed, "jobs_renamed": renamed_jobs, "removed": 0}
    return _result(w, jobs, record)


def shift_to_zero(w: Workload) -> Workload:
    """Submit times re-based so the first job arrives at 0; ``origin`` moves forward to match."""
    jobs = w.jobs.copy()
    submit = jobs["submit_s"].to_numpy()
    first = float(submit.min()) if submit.size else 0.0
    _move(jobs, submit - first)
    out = _result(w, jobs, {"op": "shift_to_zero", "shift_s": first, "removed": 0})
    if w.origin is not None:
        out.origin = w.origin + pd.Timedelta(seconds=first)
    return out


def split_history(w: Workload, train_until_s: float) -> tuple[Workload, Workload]:
    """Split at ``train_until_s``: (history, evaluation) on the same time axis and origin.

    Evaluation keeps the jobs submitted at or after ``train_until_s``. History keeps the jobs
    that finished before it, taking ``submit_s + duration_s`` as a trace job's finish (its
    queueing in the real cluster is unknown); jobs submitted before the split that were still
    running at it belong to neither and are counted as ``dropped_running``.
    """
    jobs = w.jobs
    submit = jobs["submit_s"].to_numpy()
    finished = submit + jobs["duration_s"].to_numpy() <= train_until_s
    evaluated = submit >= train_until_s
    record = {
        "op": "split_history",
        "train_until_s": train_until_s,
        "history": int(finished.sum()),
        "dropped_running": int(np.sum(~finished & ~evaluated)),
    }
    history = _result(w, jobs[finished], {**record, "removed": int(np.sum(~finished))})
    evaluation = _result(w, jobs[evaluated], {**record, "removed": int(np.sum(~evaluated))})
    return history, evaluation


def _jittered(
    rng: np.random.Generator, jobs: pd.DataFrame, members: np.ndarray, submit: np.ndarray, jitter_s: float | None
) -> np.ndarray:
    span = jobs["submit_s"].to_numpy()[members] if members.size else np.zeros(1)
    lo, hi = float(span.min()), float(span.max())
    if jitter_s is None:
        jitter_s = (hi - lo) / max(members.size - 1, 1)
    return np.clip(submit + rng.uniform(-jitter_s, jitter_s, submit.size), lo, hi)


def _move(jobs: pd.DataFrame, new_submit: np.ndarray) -> None:
    """Set submit times in place, carrying each absolute deadline along with its job."""
    old = jobs["submit_s"].to_numpy()
    jobs["deadline_s"] = jobs["deadline_s"].to_numpy() + (new_submit - old)
    jobs["submit_s"] = new_submit


def _result(w: Workload, jobs: pd.DataFrame, record: Mapping[str, object]) -> Workload:
    history = [*w.meta.get("transforms", []), record]
    return w.with_jobs(canonical_frame(jobs.reset_index(drop=True), source=w.source), transforms=history)
