"""The shape of Helios Tables 3 and 4 (Hu et al., SC'21, §4.2): FIFO, SJF (oracle), SRTF
(oracle, preemptive) and QSSF (predicted GPU time) with a train/test split.

Two workloads, each split in time: jobs finished before the split are the predictor's history
and are not simulated; the jobs submitted after it are.

* ``philly`` - Pollux's Philly excerpt (format ``pollux-philly``; no users, no job names),
  submitted before 2017-12-01; history = jobs finished before 2017-11-01, evaluation =
  November. Cluster: ``--philly-cluster``, by default one shared pool ``uniform:56x8``
  (448 GPUs, offered load about 0.8 in November): the excerpt is a sample of Philly, and on
  the ``philly`` preset (the 11 VCs, 2,816 GPUs, of the Helios Philly simulation) its VCs are
  4-40 % loaded and hardly anything queues. With a partitioned preset, jobs of VCs outside it
  or larger than their VC are dropped and counted.
* ``venus`` - schedlab's synthetic ``venus`` profile (users and job names); history = the
  first ``--venus-train-days`` days, evaluation = the rest. Cluster: the ``venus`` preset.

Prints Markdown tables (average JCT, average queueing delay, queued jobs per policy; JCT
improvement of QSSF and SJF over FIFO for short < 15 min, middle 15 min-6 h and long > 6 h
jobs; predictor accuracy) and writes them with every run's summary.json under ``--out``.

    python benchmarks/helios_qssf.py --philly PATH/TO/philly.csv --out runs/helios-qssf
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.spec import ClusterSpec
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.workload import transforms
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import Workload
from schedlab.workload.synthetic import generate

POLICIES = ("fifo", "sjf", "srtf", "qssf")
BUCKETS = ("short", "middle", "long")
DAY_S = 86400.0


def fit_to_cluster(w: Workload, cluster: ClusterSpec) -> tuple[Workload, int]:
    """Drop jobs whose VC is not in a partitioned cluster or that are larger than their pool."""
    jobs = w.jobs
    known = lambda t: not cluster.partitioned or t in cluster.tenants  # noqa: E731
    cap = jobs["tenant"].map(lambda t: cluster.max_job_gpus(t, "") if known(t) else 0)
    keep = jobs["num_gpus"].to_numpy() <= cap.to_numpy()
    return w.with_jobs(jobs[keep]), int((~keep).sum())


def philly_case(path: str, cluster_name: str) -> tuple[Workload, Workload, ClusterSpec, dict[str, Any]]:
    w = load_trace(path, "pollux-philly")
    cluster = load_cluster(cluster_name)
    seconds = lambda day: (pd.Timestamp(day) - w.origin).total_seconds()  # noqa: E731
    w = transforms.time_window(w, 0.0, seconds("2017-12-01"))
    w, dropped = fit_to_cluster(w, cluster)
    history, evaluation = transforms.split_history(w, seconds("2017-11-01"))
    facts = {"trace": "pollux philly.csv", "history": "jobs finished before 2017-11-01",
             "evaluation": "jobs submitted 2017-11-01 .. 2017-11-30", "dropped_not_fitting": dropped}  # fmt: skip
    return history, evaluation, cluster, facts


def venus_case(jobs: int, train_days: float, seed: int) -> tuple[Workload, Workload, ClusterSpec, dict[str, Any]]:
    cluster = load_cluster("venus")
    w = generate("venus", jobs, seed=seed, cluster_gpus=cluster.total_gpus)
    history, evaluation = transforms.split_history(w, train_days * DAY_S)
    facts = {"trace": f"synthetic venus, {jobs} jobs, seed {seed}", "history": f"first {train_days:g} days",
             "evaluation": f"jobs submitted after day {train_days:g}"}  # fmt: skip
    return history, evaluation, cluster, facts


def run_case(name: str, case, out: Path, seed: int) -> dict[str, Any]:
    history, evaluation, cluster, facts = case
    facts = {**facts, "cluster": cluster.name, "history_jobs": len(history), "evaluated_jobs": len(evaluation)}
    runs = {}
    for policy in POLICIES:
        wall0 = time.perf_counter()
        spec = RunSpec(WorkloadSpec(), cluster.name, policy, seed=seed)
        runs[policy] = simulate_run(spec, out / name / policy, workload=evaluation, history=history, cluster=cluster)
        print(f"  {name}/{policy}: {time.perf_counter() - wall0:.1f} s", flush=True)
    return {"facts": facts, "runs": runs}


def hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def ratio(base: float | None, other: float | None) -> str:
    return "-" if not base or not other else f"{base / other:.2f}x"


def render(results: dict[str, dict[str, Any]]) -> str:
    lines = ["### Table 3 shape: average JCT, average queueing delay (hours), queued jobs", ""]
    lines += ["| workload | policy | avg JCT (h) | avg queue (h) | queued jobs | jobs |", "|---|---|---:|---:|---:|---:|"]
    for name, res in results.items():
        for policy, s in res["runs"].items():
            lines.append(f"| {name} | {policy} | {hours(s['jct_mean_s'])} | {hours(s['queue_mean_s'])} | "
                         f"{s['queued_jobs']:,} | {s['jobs']:,} |")  # fmt: skip
    lines += ["", "### Table 4 shape: JCT improvement over FIFO (FIFO avg JCT / policy avg JCT) by duration", ""]
    lines += ["| workload | policy | short < 15 min | middle 15 min-6 h | long > 6 h | all |", "|---|---|---:|---:|---:|---:|"]
    for name, res in results.items():
        fifo = res["runs"]["fifo"]
        for policy in ("sjf", "qssf"):
            s = res["runs"][policy]
            cells = [ratio(fifo["duration_buckets"][b]["jct_mean_s"], s["duration_buckets"][b]["jct_mean_s"])
                     for b in BUCKETS]  # fmt: skip
            lines.append(f"| {name} | {policy} | {' | '.join(cells)} | {ratio(fifo['jct_mean_s'], s['jct_mean_s'])} |")
    lines += ["", "### Predictor accuracy (QSSF, durations predicted at arrival)", ""]
    lines += ["| workload | jobs | MAE (h) | Spearman (GPU time) | names used | refits |", "|---|---:|---:|---:|---|---:|"]
    for name, res in results.items():
        p = res["runs"]["qssf"]["predictor"]
        lines.append(f"| {name} | {p['jobs']:,} | {hours(p['mae_s'])} | {p['spearman_gpu_time']} | "
                     f"{p['names_used']} | {p['refits']} |")  # fmt: skip
    lines += ["", "### Setup", ""]
    for name, res in results.items():
        lines.append(f"- {name}: " + "; ".join(f"{k}: {v}" for k, v in res["facts"].items()))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--philly", help="Pollux philly.csv (format pollux-philly); omit to skip")
    parser.add_argument("--philly-cluster", default="uniform:56x8", help="cluster for the Philly case")
    parser.add_argument("--venus-jobs", type=int, default=20000, help="synthetic venus jobs (about 27 days)")
    parser.add_argument("--venus-train-days", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/helios-qssf"))
    args = parser.parse_args()
    cases = {}
    if args.philly:
        cases["philly"] = philly_case(args.philly, args.philly_cluster)
    cases["venus"] = venus_case(args.venus_jobs, args.venus_train_days, args.seed)
    results = {name: run_case(name, case, args.out, args.seed) for name, case in cases.items()}
    text = render(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tables.md").write_text(text)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print(text)


if __name__ == "__main__":
    main()
