"""The simulator beside the real Slurm on the same jobs: simulate a replay's jobs exactly as
they were submitted (real seconds, the sleeps, the time limits, the sandbox's nodes and
partitions and its ``slurm.conf``) with ``slurm`` or ``slurm-backfill``, and measure how far
the two are apart, job by job and on average."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from schedlab.cluster.presets import partitioned, uniform
from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.slurm.conf import SlurmConf
from schedlab.workload.schema import Workload, canonical_frame


def sandbox_cluster(conf: SlurmConf) -> ClusterSpec:
    """The sandbox as a simulated cluster. Its GPU type keeps Slurm's lower-case name, which
    the GPU catalogue does not know, so it runs at the reference speed: a sleep takes as long
    on any GPU."""
    counts = {g for g, _ in conf.nodes.values()}
    if len(counts) != 1:
        raise ConfigError(f"the simulated sandbox needs nodes with one GPU count (got {sorted(counts)})")
    per_node = counts.pop()
    gtype = next(iter(conf.nodes.values()))[1] or "gpu"
    members = [n for nodes in conf.partitions.values() for n in nodes]
    if len(conf.partitions) == 1:
        return uniform(len(members), per_node, gpu=gtype, name="slurm-sandbox")
    if len(set(members)) != len(members):
        raise ConfigError("the simulator cannot model overlapping Slurm partitions")
    return partitioned({p: len(n) for p, n in conf.partitions.items()}, name="slurm-sandbox",
                       gpus_per_node=per_node, gpu=gtype)  # fmt: skip


DURATIONS = ("sleep", "observed")


def replay_workload(record: pd.DataFrame, conf: SlurmConf, durations: str = "sleep") -> Workload:
    """The replayed jobs as the simulator's workload, in real seconds after the replay's start:
    submitted when they were submitted, with their names, users and time limits, lasting their sleep
    (``durations="sleep"``) or as long as Slurm recorded them running (``"observed"``: the sleep
    plus the job's launch and teardown, in whole seconds; the sleep where that rounds to 0)."""
    if durations not in DURATIONS:
        raise ConfigError(f"durations must be one of {DURATIONS}, got {durations!r}")
    multi = record["nodes"].to_numpy() > 1
    partitions = record["partition"].to_numpy(dtype=object)
    accounts = record["account"].to_numpy(dtype=object)
    tenant = partitions if len(conf.partitions) > 1 else np.where(accounts != "", accounts, partitions)
    sleep = record["sleep_s"].to_numpy(dtype=float)
    ran = (record["end_s"] - record["start_s"]).to_numpy(dtype=float)
    length = np.where(np.isfinite(ran) & (ran > 0), ran, sleep) if durations == "observed" else sleep
    frame = pd.DataFrame({
        "job_id": record["job_id"].astype(str).to_numpy(),
        "submit_s": record["submitted_at"].to_numpy(dtype=float),
        "name": record["name"].astype(str).to_numpy(),
        "user": record["user"].astype(str).to_numpy() if "user" in record else "",
        "tenant": tenant,
        "num_gpus": record["num_gpus"].to_numpy(dtype=float),
        "gpus_per_worker": np.where(multi, record["gpus_per_node"].to_numpy(dtype=float), np.nan),
        "duration_s": length,
        "time_limit_s": record["time_limit_min"].to_numpy(dtype=float) * 60.0,
    })  # fmt: skip
    return Workload(canonical_frame(frame, source="replay.parquet"), source="replay.parquet")


def simulate(record: pd.DataFrame, conf: SlurmConf, *, durations: str = "sleep",
             seed: int = 0) -> tuple[pd.DataFrame, str]:  # fmt: skip
    """Run the replay's jobs through the simulated Slurm (:func:`replay_workload`); its jobs
    table (real seconds) and the policy's name."""
    from schedlab.policies.registry import PolicyOptions, make_policy
    from schedlab.policies.slurm.params import params_from_conf, scheduler_policy
    from schedlab.sim.engine import Simulation

    name = scheduler_policy(conf.settings)
    params = params_from_conf(conf.settings)
    policy = make_policy(name, rng=np.random.default_rng(seed), params=params, options=PolicyOptions(seed=seed))
    workload = replay_workload(record, conf, durations)
    result = Simulation(workload, sandbox_cluster(conf), policy, seed=seed).run()
    return result.jobs, name


def simulate_served(record: pd.DataFrame, conf: SlurmConf, *, policy: str, interval_s: float, first_s: float,
                    epoch_s: float, history: Workload | None = None, params: Any = None,
                    durations: str = "sleep", seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:  # fmt: skip
    """Run the replay's jobs through the simulated Slurm with ``schedlab serve slurm --policy
    policy --apply`` beside it (:mod:`schedlab.slurm.served`): cycles every ``interval_s`` from
    ``first_s`` (real seconds after the replay's start, ``epoch_s``), QSSF trained on
    ``history``, the jobs lasting as ``durations`` says (:func:`replay_workload`). Its jobs
    table (real seconds) and the policy's report."""
    from schedlab.sim.engine import Simulation
    from schedlab.slurm.served import served_policy

    cluster = sandbox_cluster(conf)
    policy_obj = served_policy(conf.settings, cluster, policy=policy, interval_s=interval_s, first_s=first_s,
                               epoch_s=epoch_s, ranking_params=params, history=history, seed=seed)  # fmt: skip
    result = Simulation(replay_workload(record, conf, durations), cluster, policy_obj, seed=seed).run()
    return result.jobs, policy_obj.report(result.job_columns)


def compare(record: pd.DataFrame, sim_jobs: pd.DataFrame, *, interval_s: float) -> dict[str, Any]:
    """Real against simulated, job by job: start-time differences (real - simulated; median
    and p90 of their size, in seconds and in scheduling intervals), and the mean JCT and
    queueing delay of each with their relative difference. Only jobs that ran in both count."""
    sim = sim_jobs.set_index("job_id")
    real_start = record["start_s"].to_numpy(dtype=float)
    real_end = record["end_s"].to_numpy(dtype=float)
    real_submit = record["submitted_at"].to_numpy(dtype=float)
    ids = record["job_id"].astype(str).to_numpy()
    sim_start = sim.loc[ids, "first_start_s"].to_numpy(dtype=float)
    sim_end = sim.loc[ids, "end_s"].to_numpy(dtype=float)
    both = np.isfinite(real_start) & np.isfinite(sim_start) & np.isfinite(real_end) & np.isfinite(sim_end)
    diff = real_start[both] - sim_start[both]
    size = np.abs(diff)
    real_jct = real_end[both] - real_submit[both]
    sim_jct = sim_end[both] - real_submit[both]
    real_q = real_start[both] - real_submit[both]
    sim_q = sim_start[both] - real_submit[both]

    def rel(a: float, b: float) -> float | None:
        return None if b == 0 else float((a - b) / b)

    return {
        "jobs": int(len(record)),
        "jobs_compared": int(both.sum()),
        "interval_s": interval_s,
        "start_diff_mean_s": float(diff.mean()) if diff.size else None,
        "start_diff_median_abs_s": float(np.median(size)) if size.size else None,
        "start_diff_p90_abs_s": float(np.percentile(size, 90)) if size.size else None,
        "start_diff_median_abs_intervals": float(np.median(size) / interval_s) if size.size else None,
        "start_diff_p90_abs_intervals": float(np.percentile(size, 90) / interval_s) if size.size else None,
        "share_within_one_interval": float(np.mean(size <= interval_s)) if size.size else None,
        "mean_jct_real_s": float(real_jct.mean()),
        "mean_jct_sim_s": float(sim_jct.mean()),
        "mean_jct_rel_diff": rel(float(real_jct.mean()), float(sim_jct.mean())),
        "mean_queue_real_s": float(real_q.mean()),
        "mean_queue_sim_s": float(sim_q.mean()),
        "mean_queue_rel_diff": rel(float(real_q.mean()), float(sim_q.mean())),
        "mean_run_real_s": float((real_end[both] - real_start[both]).mean()),
        "mean_run_sim_s": float((sim_end[both] - sim_start[both]).mean()),
    }


def interval_of(conf: SlurmConf) -> float:
    """The scheduling interval a start may be off by: backfill's ``bf_interval`` under
    sched/backfill, else 1 s (the main scheduler runs on every event)."""
    from schedlab.policies.slurm.params import params_from_conf, scheduler_policy

    if scheduler_policy(conf.settings) != "slurm-backfill":
        return 1.0
    return float(params_from_conf(conf.settings).bf_interval)
