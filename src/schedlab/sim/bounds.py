"""A lower bound on the makespan of jobs all submitted at time 0, on measured throughputs.

The fluid bound relaxes scheduling to a linear programme: job ``j`` (``N_j`` GPUs, ``w_j``
work-seconds, i.e. its run time on the reference type) spends ``y[j, k]`` GPU-seconds on type
``k``, where it advances ``s[j, k]`` work-seconds per GPU-second per ``N_j`` GPUs (the measured
speed-up over the reference type, :meth:`~schedlab.sim.throughputs.ThroughputTable.speedup`).
The least ``T`` with

* ``sum_k s[j, k] * y[j, k] >= N_j * w_j``  (every job gets its work done),
* ``sum_j y[j, k] <= G_k * T``              (type ``k`` has ``G_k`` GPUs),
* ``sum_k y[j, k] <= N_j * T``              (a job never holds more than its ``N_j`` GPUs)

is at most the makespan of any schedule: a real one also pays gang placement, the slowest-task
rule across types, rounds and checkpoint-restarts, none of which the bound charges. Without the
last constraint (``per_job=False``) it is the capacity ("area") bound, which also holds for a
scheduler that runs a job as several copies at once (HadarE's forking).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.sim.throughputs import ThroughputTable
from schedlab.workload.schema import Workload


def fluid_makespan_bound(workload: Workload, cluster: ClusterSpec, table: ThroughputTable, *,
                         per_job: bool = True) -> float:  # fmt: skip
    """Seconds: the fluid lower bound on the makespan of ``workload`` (all jobs at time 0,
    every ``model`` in ``table``) on ``cluster``; ``per_job=False`` drops the constraint that a
    job holds at most its own GPU count."""
    jobs = workload.jobs
    if (jobs["submit_s"] != jobs["submit_s"].min()).any():
        raise ConfigError("the fluid bound assumes every job is submitted at once")
    types = sorted(cluster.gpu_types)
    gpus_of = {t: sum(n.num_gpus for n in cluster.nodes if n.gpu_type == t) for t in types}
    n, m = len(jobs), len(types)
    need = (jobs["num_gpus"] * jobs["duration_s"]).to_numpy(dtype=float)
    size = jobs["num_gpus"].to_numpy(dtype=float)
    speed = np.array([[table.speedup(model, g, t) if model in table else 0.0 for t in types]
                      for model, g in zip(jobs["model"], size)])  # fmt: skip
    if not (speed.max(axis=1) > 0).all():
        raise ConfigError("a job has no measured throughput on the cluster's GPU types")
    t_col = n * m  # y[j, k] is variable j * m + k; T is the last one
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []

    def entry(row: int, col: int, value: float) -> None:
        rows.append(row)
        cols.append(col)
        vals.append(value)

    for j in range(n):
        for k in range(m):
            entry(j, j * m + k, -speed[j, k])
            entry(n + k, j * m + k, 1.0)
            if per_job:
                entry(n + m + j, j * m + k, 1.0)
    for k in range(m):
        entry(n + k, t_col, -gpus_of[types[k]])
    n_rows = n + m
    if per_job:
        for j in range(n):
            entry(n + m + j, t_col, -size[j])
        n_rows += n
    a_ub = coo_matrix((vals, (rows, cols)), shape=(n_rows, t_col + 1)).tocsr()
    b_ub = np.concatenate([-need, np.zeros(n_rows - n)])
    cost = np.zeros(t_col + 1)
    cost[t_col] = 1.0
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if res.status != 0:
        raise ConfigError(f"fluid bound: the linear programme failed ({res.message})")
    return float(res.x[t_col])
