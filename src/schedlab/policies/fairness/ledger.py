"""GPU-time accounts of tenants and jobs for the fairness schedulers.

Between two events every rate is constant, so the ledger integrates exactly: a tenant's
*used* GPU-time grows at the GPUs it holds, its *deserved* GPU-time at its weighted max-min
fair share of the cluster (capped at its demand, the leftover redistributed: the same rule as
:mod:`schedlab.metrics.fairness`), and the deserved GPU-time of a job of g GPUs at
min(g, tenant's fair share / tenant's jobs with demand). The last is kept as one running
integral per (tenant, job size), so a job's deserved GPU-time is a difference of two readings
and no per-job work is done per event. Hourly marks give the tenant sums over a sliding window.
Cost per event: O(tenants with demand + their distinct job sizes); a demand change adds a
water-fill, O(T log T).
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping


def water_fill(demand: Mapping[str, float], weight: Callable[[str], float], capacity: float) -> dict[str, float]:
    """The weighted max-min fair split of ``capacity`` among tenants with demand > 0, each
    capped at its demand; the capacity a capped tenant leaves goes to the others."""
    open_ = sorted((d / weight(t), t) for t, d in demand.items() if d > 0)
    left, weights = float(capacity), sum(weight(t) for _, t in open_)
    fair: dict[str, float] = {}
    for k, (ratio, tenant) in enumerate(open_):
        level = left / weights if weights > 0 else 0.0
        if ratio > level:
            fair.update((t, level * weight(t)) for _, t in open_[k:])
            break
        fair[tenant] = demand[tenant]
        left -= demand[tenant]
        weights -= weight(tenant)
    return fair


class Ledger:
    """Used and deserved GPU-time per tenant (whole run and over a sliding window) and the
    per-(tenant, size) integral of a job's deserved rate. Call :meth:`advance` before every change."""

    def __init__(self, capacity: float, weight: Callable[[str], float], *, window_s: float,
                 mark_s: float = 3600.0) -> None:  # fmt: skip
        self.capacity = capacity
        self.weight = weight
        self.window_s = window_s
        self.mark_s = mark_s
        self.demand: defaultdict[str, float] = defaultdict(float)  # GPUs of arrived, unfinished jobs
        self.jobs: Counter[str] = Counter()  # arrived, unfinished jobs (tenants with none are dropped)
        self.sizes: defaultdict[str, Counter[float]] = defaultdict(Counter)
        self.held: defaultdict[str, float] = defaultdict(float)  # GPUs held now
        self.used: defaultdict[str, float] = defaultdict(float)  # GPU-s held since the start
        self.deserved: defaultdict[str, float] = defaultdict(float)
        self.job_share: defaultdict[tuple[str, float], float] = defaultdict(float)
        self.fair: dict[str, float] = {}
        self.marks: deque[tuple[float, dict[str, float], dict[str, float]]] = deque([(0.0, {}, {})])
        self.now = 0.0
        self._stale = False

    def advance(self, now: float) -> None:
        """Integrate every account up to ``now``, setting a window mark at each hour passed."""
        if self._stale:
            self.fair = water_fill(self.demand, self.weight, self.capacity)
            self._stale = False
        while (boundary := (self.now // self.mark_s + 1) * self.mark_s) <= now:
            self._integrate(boundary)
            self.marks.append((boundary, dict(self.used), dict(self.deserved)))
        self._integrate(now)
        while len(self.marks) > 1 and self.marks[0][0] < now - self.window_s:
            self.marks.popleft()

    def _integrate(self, to: float) -> None:
        dt = to - self.now
        if dt > 0:
            for tenant, count in self.jobs.items():
                fair = self.fair.get(tenant, 0.0)
                self.used[tenant] += self.held[tenant] * dt
                self.deserved[tenant] += fair * dt
                per_job = fair / count
                for size in self.sizes[tenant]:
                    self.job_share[tenant, size] += min(size, per_job) * dt
        self.now = max(self.now, to)

    def arrive(self, tenant: str, gpus: float) -> float:
        """A job joins its tenant's demand; returns its deserved-GPU-time baseline."""
        self.demand[tenant] += gpus
        self.jobs[tenant] += 1
        self.sizes[tenant][gpus] += 1
        self._stale = True
        return self.job_share[tenant, gpus]

    def leave(self, tenant: str, gpus: float) -> None:
        """A job finished."""
        self.demand[tenant] -= gpus
        self.jobs[tenant] -= 1
        self.sizes[tenant][gpus] -= 1
        if not self.sizes[tenant][gpus]:
            del self.sizes[tenant][gpus]
        if not self.jobs[tenant]:
            del self.jobs[tenant], self.demand[tenant]
        self._stale = True

    def hold(self, tenant: str, gpus: float) -> None:
        """The tenant's held GPUs change by ``gpus`` (negative when released)."""
        self.held[tenant] += gpus

    def job_deserved(self, tenant: str, gpus: float, baseline: float) -> float:
        """Deserved GPU-time of a job since its arrival (``baseline`` from :meth:`arrive`)."""
        return self.job_share[tenant, gpus] - baseline

    def window(self, tenant: str) -> tuple[float, float]:
        """(used, deserved) GPU-seconds of ``tenant`` since the oldest mark in the window."""
        _, used, deserved = self.marks[0]
        return self.used[tenant] - used.get(tenant, 0.0), self.deserved[tenant] - deserved.get(tenant, 0.0)
