"""Gavel (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI'20): heterogeneity-aware max-min fairness realised by round-based priorities.

Allocation (Gavel §3-4.1, "LAS" / max-min fairness): ``X[m, j]`` is the fraction of time job
``m`` spends on GPU type ``j``. The LP

    maximise  t
    s.t.      t <= z[m] sum_j T[m, j] X[m, j] / T_equal[m]   for every job m
              sum_j X[m, j] <= 1                            (a job is on one type at a time)
              sum_m z[m] X[m, j] <= n[j]                    (type j has n[j] GPUs; z = job's GPUs)
              X >= 0

is solved with HiGHS (``scipy.optimize.linprog``). ``T[m, j]`` is the job's throughput on type
``j`` relative to the reference type (the engine's rate, :func:`~.rounds.job_speedups`);
``T_equal[m]`` normalises it by the throughput the job would get with an equal share of time on
every type, ``sum_j T[m, j] n[j] / sum_j n[j]`` (Gavel's ``X^equal``); the factor ``z[m]`` (the
job's GPUs) is Gavel's weighting, so a 1-GPU job gets ``z`` times the time of a ``z``-GPU job of
equal throughput. ``aware=False`` sets every ``T`` to 1: the heterogeneity-agnostic max-min
(LAS) baseline. This is Gavel's LAS policy (it names its max-min fairness policy so).

``objective="fifo"`` is Gavel's heterogeneity-aware FIFO instead: every time the job set changes,
jobs in arrival order each take the type of highest throughput that still has room for their
GPUs (``X[m, j] = 1``), and the first job that fits no type stops the queue (no job passes it).

Realisation (Gavel §5, as Hadar §II-A describes it): each round, (job, type) pairs are ranked by
priority ``X[m, j] / rounds[m, j]`` (rounds already received on that type; a pair never served
comes first), and jobs are given their whole gang on one GPU type in that order while GPUs last,
each job at most once. A job chosen again on the type it holds keeps its GPUs (no
checkpoint-restart); others are packed on the type's nodes with most free GPUs first.

A job larger than every GPU type's count never runs under Gavel (it is job-level: all tasks on
one type) and is left out of the LP; the run reports it unfinished.

Cost: one LP of ``3 x jobs`` variables whenever the set of jobs changes (as Gavel), then a sort of the pairs: O(jobs x types).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.hetero.rounds import Alloc, RoundPolicy, free_by_node, held, job_speedups
from schedlab.policies.params import help_field
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context
from schedlab.sim.throughputs import GAVEL_BUILTIN, ThroughputTable


@dataclass(frozen=True)
class GavelParams:
    """Gavel's round length and heterogeneity awareness."""

    round_s: float = help_field(360.0, "length of a scheduling round in seconds (Gavel's default: 6 minutes)")
    aware: bool = help_field(True, "use measured per-type throughputs (False: every type counts as equal)")
    objective: str = help_field("max-min", "max-min (Gavel's LAS: max-min fairness LP) or fifo (arrival order, "
                                "fastest type with room)")


def max_min_allocation(speed: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Gavel's max-min fairness LP: ``speed`` jobs x types, ``scale`` GPUs per job, ``capacity``
    GPUs per type; returns ``X`` (jobs x types) of time fractions."""
    from scipy.optimize import linprog  # imported here: SciPy's solvers take ~0.3 s to import
    from scipy.sparse import csr_matrix

    m, k = speed.shape
    equal = speed @ capacity / capacity.sum()
    if np.any(equal <= 0):
        raise ConfigError("gavel: a job has no positive throughput on any GPU type (drop it before the LP)")
    n = m * k
    c = np.zeros(n + 1)
    c[-1] = -1.0  # maximise t
    rows, cols, vals = [], [], []
    for i in range(m):  # t - z[i] sum_j T[i, j] X[i, j] / equal[i] <= 0
        rows += [i] * (k + 1)
        cols += [i * k + j for j in range(k)] + [n]
        vals += list(-scale[i] * speed[i] / equal[i]) + [1.0]
    for i in range(m):  # sum_j X[i, j] <= 1
        rows += [m + i] * k
        cols += [i * k + j for j in range(k)]
        vals += [1.0] * k
    for j in range(k):  # sum_i z[i] X[i, j] <= n[j]
        rows += [2 * m + j] * m
        cols += [i * k + j for i in range(m)]
        vals += list(scale)
    a = csr_matrix((vals, (rows, cols)), shape=(2 * m + k, n + 1))
    b = np.concatenate([np.zeros(m), np.ones(m), capacity])
    res = linprog(c, A_ub=a, b_ub=b, bounds=(0, None), method="highs")
    if res.status != 0:
        raise ConfigError(f"gavel: the allocation LP failed ({res.message})")
    x: np.ndarray = np.clip(res.x[:n].reshape(m, k), 0.0, 1.0)
    return x


def fifo_allocation(speed: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Gavel's heterogeneity-aware FIFO: rows in arrival order take their fastest type with room
    for their GPUs; the first row that fits nowhere stops the queue."""
    x = np.zeros_like(speed)
    left = capacity.astype(float).copy()
    for i in range(speed.shape[0]):
        room = [j for j in range(speed.shape[1]) if left[j] >= scale[i] and speed[i, j] > 0]
        if not room:
            break
        best = max(room, key=lambda j: (speed[i, j], -j))
        x[i, best] = 1.0
        left[best] -= scale[i]
    return x


class Gavel(RoundPolicy):
    """Heterogeneity-aware max-min fairness with Gavel's round-based priorities."""

    name = "gavel"

    def __init__(self, *, round_s: float = 360.0, aware: bool = True, objective: str = "max-min",
                 table: ThroughputTable | None = GAVEL_BUILTIN):  # fmt: skip
        super().__init__(round_s)
        if objective not in ("max-min", "fifo"):
            raise ConfigError(f"gavel: objective must be max-min or fifo, got {objective!r}")
        self.aware = aware
        self.objective = objective
        self.table = table
        self.rounds: dict[tuple[int, str], int] = {}
        self.last_x: dict[int, dict[str, float]] = {}
        self._solved_for: tuple[int, ...] = ()
        self._x: tuple[list[str], np.ndarray] = ([], np.zeros((0, 0)))
        self.lp_solves = 0
        self.fits: dict[str, int] = {}  # largest gang one GPU type can hold, by required type ("" = any)
        self.by_type: dict[str, int] = {}  # GPUs of each type
        self.type_nodes: dict[str, list[int]] = {}  # nodes of each type

    def setup(self, ctx: Context) -> None:
        super().setup(ctx)
        self.by_type = ctx.cluster.gpus_by_type()
        self.fits = {"": max(self.by_type.values()), **self.by_type}
        for node, gtype in enumerate(ctx.state.node_type):
            self.type_nodes.setdefault(gtype, []).append(node)

    def allocation(self, cluster: ClusterSpec, jobs: list[Job]) -> tuple[list[str], np.ndarray]:
        """The LP's ``X`` for ``jobs`` (rows) over the cluster's types (columns)."""
        types = list(cluster.gpu_types)
        by_type = cluster.gpus_by_type()
        speed = np.zeros((len(jobs), len(types)))
        for i, job in enumerate(jobs):
            rates = job_speedups(self.table, cluster, job)
            for j, t in enumerate(types):
                if job.num_gpus <= by_type.get(t, 0) and rates.get(t, 0.0) > 0:
                    speed[i, j] = rates[t] if self.aware else 1.0
        capacity = np.array([float(by_type.get(t, 0)) for t in types])
        scale = np.array([float(j.num_gpus) for j in jobs])
        if self.objective == "fifo":
            return types, fifo_allocation(speed, scale, capacity)
        return types, max_min_allocation(speed, scale, capacity)

    def plan(self, ctx: Context) -> dict[int, Alloc]:
        jobs = [j for j in ctx.active.values() if j.num_gpus <= self.fits.get(j.gpu_type or "", 0)]
        if not jobs:
            return {}
        key = tuple(j.idx for j in jobs)
        if key != self._solved_for:  # Gavel recomputes X when jobs arrive or finish
            types, x = self.allocation(ctx.cluster, jobs)
            self._solved_for, self._x = key, (types, x)
            self.last_x = {job.idx: dict(zip(types, row)) for job, row in zip(jobs, x)}
            self.lp_solves += 1
        types, x = self._x
        pairs = []
        for i, job in enumerate(jobs):
            for j, t in enumerate(types):
                if x[i, j] > 1e-9:
                    served = self.rounds.get((job.idx, t), 0)
                    priority = x[i, j] / served if served else float("inf")
                    pairs.append((-priority, -x[i, j], job.idx, t, job))
        pairs.sort(key=lambda p: p[:4])
        left = dict(self.by_type)
        chosen: dict[int, tuple[Job, str]] = {}
        for _, _, idx, t, job in pairs:
            if idx not in chosen and left.get(t, 0) >= job.num_gpus:
                chosen[idx] = (job, t)
                left[t] -= int(job.num_gpus)
        return self._place(ctx, chosen)

    def _place(self, ctx: Context, chosen: dict[int, tuple[Job, str]]) -> dict[int, Alloc]:
        """Keep a job chosen on the type it holds on its GPUs; pack the rest, most free first."""
        node_type = ctx.state.node_type
        target: dict[int, Alloc] = {}
        for idx, (job, t) in chosen.items():
            if job.state == RUNNING and all(node_type[n] == t for n in job.nodes):
                target[idx] = held(job)
        free = free_by_node(ctx.cluster, target.values())
        for idx, (job, t) in sorted(chosen.items(), key=lambda kv: (-kv[1][0].num_gpus, kv[0])):
            if idx in target:
                continue
            alloc = _pack(free, self.type_nodes[t], int(job.num_gpus))
            if alloc is not None:
                target[idx] = alloc
        for idx, (job, t) in chosen.items():
            if idx in target:
                self.rounds[(idx, t)] = self.rounds.get((idx, t), 0) + 1
        return target


    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().report(jobs), "lp_solves": self.lp_solves}


def _pack(free: list[int], nodes: list[int], need: int) -> Alloc | None:
    """``need`` GPUs on ``nodes``: one node that fits it best if any, else the fullest-free
    nodes first; takes them from ``free``. None when they do not fit."""
    fits = [n for n in nodes if free[n] >= need]
    if fits:
        best = min(fits, key=lambda n: (free[n], n))
        free[best] -= need
        return [(best, need)]
    alloc: Alloc = []
    for n in sorted(nodes, key=lambda n: (-free[n], n)):
        if need == 0:
            break
        take = min(free[n], need)
        if take:
            alloc.append((n, take))
            need -= take
    if need:
        return None
    for n, take in alloc:
        free[n] -= take
    return alloc
