"""The shape of Helios Tables 3 and 4 (Hu et al., SC'21, §4.2): FIFO, SJF (oracle), SRTF
(oracle, preemptive) and QSSF (predicted GPU time) with a train/test split.

Two workloads, each split in time: jobs finished before the split are the predictor's history
and are not simulated; the jobs submitted after it are.

* ``philly`` - Pollux's Philly excerpt (format ``pollux-philly``; no users, no job names) in
  the paper's evaluation window: evaluation = jobs submitted 1 Oct - 30 Nov 2017, history =
  jobs finished before 1 Oct. Cluster: ``--philly-cluster``, by default ``helios-vcs`` (each
  VC sized to its evaluation jobs' demand, :mod:`schedlab.cluster.sizing`), the paper's
  assumption; ``--philly-loads`` adds runs at other sizing loads. On the ``philly`` preset (the
  11 VCs, 2,816 GPUs, of the Helios Philly simulation) the excerpt's VCs are 5-37 % loaded and
  hardly anything queues. With a fixed partitioned cluster, jobs of VCs outside it or larger
  than their VC are dropped and counted.
* ``venus`` - schedlab's synthetic ``venus`` profile (users and job names); history = the
  first ``--venus-train-days`` days, evaluation = the rest. Cluster: the ``venus`` preset, and
  (``venus@LOAD``) VCs sized to the evaluation jobs at ``--venus-sized-load``.

Prints Markdown tables (Table 3 side by side with the paper's values; average JCT, average
queueing delay, queued jobs per policy; JCT improvement of QSSF and SJF over FIFO for short
< 15 min, middle 15 min-6 h and long > 6 h jobs; predictor accuracy) and writes them with every run's summary.json under ``--out``.

    python benchmarks/helios_qssf.py --philly ../shared/data/pollux/simulator/traces/philly.csv \
        --out runs/helios-qssf --doc docs/helios-qssf.md
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.sizing import is_sized, offered_loads, sized_cluster
from schedlab.cluster.spec import ClusterSpec
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.workload import transforms
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import Workload
from schedlab.workload.synthetic import generate

POLICIES = ("fifo", "sjf", "srtf", "qssf")
# Helios Table 3 (SC'21 §4.2.3): average JCT (s), average queueing delay (s), queued jobs.
PAPER_TABLE3 = {
    "venus": {"fifo": (64702, 52933, 15336), "sjf": (21095, 9325, 8353), "qssf": (18349, 6580, 3713)},
    "philly": {"fifo": (86072, 56531, 30282), "sjf": (34272, 4731, 21437), "qssf": (37324, 7783, 22026)},
}
# Helios Table 4: QSSF's JCT improvement (FIFO / QSSF) for short < 15 min, middle, long > 6 h jobs.
PAPER_TABLE4 = {"venus": (11.44, 4.13, 3.22), "philly": (26.95, 5.54, 1.70)}
DOC_BEGIN = "<!-- helios_qssf.py: begin -->"
DOC_END = "<!-- helios_qssf.py: end -->"
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
    """The paper's Philly window: evaluate 1 Oct - 30 Nov 2017, history = jobs finished before it."""
    w = load_trace(path, "pollux-philly")
    seconds = lambda day: (pd.Timestamp(day) - w.origin).total_seconds()  # noqa: E731
    w = transforms.time_window(w, 0.0, seconds("2017-12-01"))
    dropped = 0
    if not is_sized(cluster_name):
        cluster = load_cluster(cluster_name)
        w, dropped = fit_to_cluster(w, cluster)
    history, evaluation = transforms.split_history(w, seconds("2017-10-01"))
    if is_sized(cluster_name):
        cluster = sized_cluster(cluster_name, evaluation)
    loads = offered_loads(evaluation, cluster)
    facts = {"trace": "pollux philly.csv", "history": "jobs finished before 2017-10-01",
             "evaluation": "jobs submitted 2017-10-01 .. 2017-11-30", "dropped_not_fitting": dropped,
             "cluster_gpus": cluster.total_gpus, "vcs": len(cluster.gpus_by_pool()),
             "VC offered load min/max": f"{min(loads.values()):.2f}/{max(loads.values()):.2f}"}  # fmt: skip
    return history, evaluation, cluster, facts


def venus_case(
    jobs: int, train_days: float, seed: int, cluster_name: str = "venus"
) -> tuple[Workload, Workload, ClusterSpec, dict[str, Any]]:
    """The synthetic ``venus`` profile (1,064 GPUs of load) on the ``venus`` preset (its VC sizes
    of 1 Sep 2020) or on VCs sized to the evaluation jobs (``helios-vcs@LOAD``)."""
    w = generate("venus", jobs, seed=seed, cluster_gpus=load_cluster("venus").total_gpus)
    history, evaluation = transforms.split_history(w, train_days * DAY_S)
    cluster = sized_cluster(cluster_name, evaluation) if is_sized(cluster_name) else load_cluster(cluster_name)
    loads = offered_loads(evaluation, cluster)
    facts = {"trace": f"synthetic venus, {jobs} jobs, seed {seed}", "history": f"first {train_days:g} days",
             "evaluation": f"jobs submitted after day {train_days:g}", "cluster_gpus": cluster.total_gpus,
             "VC offered load min/max": f"{min(loads.values()):.2f}/{max(loads.values()):.2f}"}  # fmt: skip
    return history, evaluation, cluster, facts


def run_case(name: str, case, out: Path, seed: int, policies: tuple[str, ...] = POLICIES) -> dict[str, Any]:
    history, evaluation, cluster, facts = case
    facts = {**facts, "cluster": cluster.name, "history_jobs": len(history), "evaluated_jobs": len(evaluation)}
    runs = {}
    for policy in policies:
        cpu0 = time.process_time()
        spec = RunSpec(WorkloadSpec(), cluster.name, policy, seed=seed)
        runs[policy] = simulate_run(spec, out / name / policy, workload=evaluation, history=history, cluster=cluster)
        print(f"  {name}/{policy}: {time.process_time() - cpu0:.1f} s CPU", flush=True)
    return {"facts": facts, "runs": runs}


def num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def ratio(base: float | None, other: float | None) -> str:
    return "-" if not base or not other else f"{base / other:.2f}x"


def paper_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Table 3 rows of the workloads the paper has, ours beside the paper's (seconds)."""
    lines = ["### Table 3 beside the paper (seconds; queued = jobs that waited)", ""]
    lines += ["| workload | policy | avg JCT ours | avg JCT paper | avg queue ours | avg queue paper | "
              "queued ours | queued paper | jobs ours |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for name, res in results.items():
        paper = PAPER_TABLE3.get(name.split("@")[0])
        if paper is None:
            continue
        for policy in ("fifo", "sjf", "qssf"):
            s = res["runs"][policy]
            jct, que, queued = paper[policy]
            lines.append(f"| {name} | {policy} | {num(s['jct_mean_s'])} | {jct:,} | {num(s['queue_mean_s'])} | "
                         f"{que:,} | {s['queued_jobs']:,} | {queued:,} | {s['jobs']:,} |")  # fmt: skip
    lines += ["", "Ratios FIFO / QSSF (and FIFO / SJF), ours vs the paper's:", ""]
    lines += ["| workload | JCT FIFO/QSSF | paper | queue FIFO/QSSF | paper | queued QSSF/FIFO | paper | "
              "JCT FIFO/SJF | paper |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for name, res in results.items():
        paper = PAPER_TABLE3.get(name.split("@")[0])
        if paper is None:
            continue
        r = res["runs"]
        f, q, j = r["fifo"], r["qssf"], r["sjf"]
        lines.append(
            f"| {name} | {ratio(f['jct_mean_s'], q['jct_mean_s'])} | {paper['fifo'][0] / paper['qssf'][0]:.2f}x | "
            f"{ratio(f['queue_mean_s'], q['queue_mean_s'])} | {paper['fifo'][1] / paper['qssf'][1]:.2f}x | "
            f"{q['queued_jobs'] / max(f['queued_jobs'], 1):.2f} | {paper['qssf'][2] / paper['fifo'][2]:.2f} | "
            f"{ratio(f['jct_mean_s'], j['jct_mean_s'])} | {paper['fifo'][0] / paper['sjf'][0]:.2f}x |"
        )
    return lines + [""]


def render(results: dict[str, dict[str, Any]]) -> str:
    lines = paper_table(results)
    lines += ["### Table 3 shape: average JCT, average queueing delay (hours), queued jobs", ""]
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
            s = res["runs"][policy]  # every case runs fifo, sjf and qssf
            cells = [ratio(fifo["duration_buckets"][b]["jct_mean_s"], s["duration_buckets"][b]["jct_mean_s"])
                     for b in BUCKETS]  # fmt: skip
            lines.append(f"| {name} | {policy} | {' | '.join(cells)} | {ratio(fifo['jct_mean_s'], s['jct_mean_s'])} |")
        if name in PAPER_TABLE4:
            cells = [f"{v:.2f}x" for v in PAPER_TABLE4[name]]
            lines.append(f"| {name} | qssf, paper Table 4 | {' | '.join(cells)} | - |")
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
    parser.add_argument("--philly-cluster", default="helios-vcs", help="cluster for the Philly case")
    parser.add_argument("--philly-loads", default="", help="extra helios-vcs sizing loads, e.g. 0.6,0.9")
    parser.add_argument("--venus-jobs", type=int, default=40000, help="synthetic venus jobs (about two months)")
    parser.add_argument("--venus-train-days", type=float, default=30.0)
    parser.add_argument("--venus-sized-load", type=float, default=0.741,
                        help="also run venus on helios-vcs@LOAD (0: skip); default the profile's load")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/helios-qssf"))
    parser.add_argument("--doc", type=Path, help=f"write the tables between {DOC_BEGIN} and {DOC_END} of this file")
    parser.add_argument("--render-only", action="store_true", help="redraw the tables from --out/results.json")
    args = parser.parse_args()
    if args.render_only:
        results = json.loads((args.out / "results.json").read_text())
        text = render(results)
        if args.doc:
            write_between(args.doc, text)
        print(text)
        return
    cases = {}
    if args.philly:
        cases["philly"] = philly_case(args.philly, args.philly_cluster)
        for load in filter(None, args.philly_loads.split(",")):
            cases[f"philly@{float(load):g}"] = philly_case(args.philly, f"helios-vcs@{float(load):g}")
    cases["venus"] = venus_case(args.venus_jobs, args.venus_train_days, args.seed)
    if args.venus_sized_load:
        load = f"{args.venus_sized_load:g}"
        cases[f"venus@{load}"] = venus_case(args.venus_jobs, args.venus_train_days, args.seed, f"helios-vcs@{load}")
    results = {}
    for name, case in cases.items():  # the extra sizing loads run Table 3's policies only
        policies = POLICIES if name in ("philly", "venus") else ("fifo", "sjf", "qssf")
        results[name] = run_case(name, case, args.out, args.seed, policies)
    text = render(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tables.md").write_text(text)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if args.doc:
        write_between(args.doc, text)
    print(text)


def write_between(doc: Path, text: str, begin_marker: str = DOC_BEGIN, end_marker: str = DOC_END) -> None:
    """Replace what lies between the begin and end markers of ``doc`` with ``text``."""
    body = doc.read_text()
    head, begin, rest = body.partition(begin_marker)
    _, end, tail = rest.partition(end_marker)
    if not begin or not end:
        raise SystemExit(f"{doc}: needs the lines {begin_marker} and {end_marker}")
    doc.write_text(f"{head}{begin_marker}\n{text}{end_marker}{tail}")


if __name__ == "__main__":
    main()
