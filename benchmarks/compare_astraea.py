"""Compare schedlab's ``astraea`` with the ASTRAEA artifact's own lease simulator on one window
of the Philly trace, with the artifact's Philly tenant weights.

The input (``--trace``): the first ``--days`` days of Chronus' Philly-derived MIX2 trace
(``../shared/data/chronus``, 11 Philly VCs), or the jobs of the Philly job log excerpt
``../shared/data/pollux/simulator/traces/philly.csv`` (15 VCs) submitted in ``--days`` days from
``--start``; submit times in integer seconds, divided by ``--arrival-scale`` for more load (the
artifact's 1,120 GPUs see little contention from either trace as recorded). Jobs needing more GPUs than their tenant's quota,
int(GPUs x share / total share), are dropped first, because the artifact drops them when they
arrive. Both simulators get the same rows, the weights of ``share-production.csv`` and the
artifact's evaluation settings (``run.sh``: 140 nodes x 8 GPUs, consolidate placement, 900-s
leases, starvation threshold 21,600 s, ``job_selection fairness``, ``user_quota fair``).

The artifact runs from a copy in a temporary directory (``--artifact`` is a checkout or the git
directory of github.com/yzs981130/Astraea_Artifacts; nothing of it is kept); schedlab runs in
process with free checkpoints (the artifact charges none for a lease expiry), by default with the
artifact's two rules that the post leaves open: ``block=any`` (``--block_scheduling 1``) and
``repack`` (every expired job released and placed afresh); ``--block starving --no-repack`` runs
``astraea``'s defaults instead. Both outcomes go
through the same fairness metrics (:mod:`schedlab.metrics.fairness`), received GPU-time taken as
GPUs x duration on both sides (the artifact's output has no lost-work column). CPU time is the
process time of each simulator (the artifact's child process; schedlab's own, loading excluded).

    python benchmarks/compare_astraea.py --artifact PATH/TO/Astraea_Artifacts --trace chronus-mix2 --days 1 --arrival-scale 3
"""

from __future__ import annotations

import argparse
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from doc_tables import replace_block

from schedlab.cluster.presets import load_cluster, uniform
from schedlab.cluster.spec import ClusterSpec
from schedlab.experiments.run import WorkloadSpec
from schedlab.metrics.fairness import fairness_metrics, load_shares
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.fairness.astraea import Astraea
from schedlab.policies.fairness.lease import BLOCK_RULES
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.workload.schema import Workload, canonical_frame

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
DOC = Path(__file__).resolve().parents[1] / "docs" / "fairness.md"
TRACE = DATA / "pollux" / "simulator" / "traces" / "philly.csv"
MIX2 = DATA / "chronus" / "trace_job_Philly_MIX2.csv"
SHARES = DATA / "astraea" / "share-production.csv"
NAMES = DATA / "astraea" / "name-production.lst"
NODES, GPUS_PER_NODE = 140, 8  # run.sh: --num_node_p_switch 140 --num_switch 1 (8 GPUs per node by default)
RUN_SH = ["--block_scheduling", "1", "--num_node_p_switch", str(NODES), "--num_switch", "1",
          "--stavation_threshold", "21600", "--delay_threshold", "300", "--schedule", "lease",
          "--placement", "consolidate", "--job_selection", "fairness", "--log_level", "ERROR",
          "--lease_term_interval", "900", "--user_quota", "fair"]  # fmt: skip


def philly_window(start: str, days: float, shares: dict[str, float], arrival_scale: float = 1.0) -> pd.DataFrame:
    """The window's jobs in the artifact's trace format (job_id, user, num_gpu, submit_time,
    duration); ``arrival_scale`` > 1 divides the submit times (more load, same jobs)."""
    raw = pd.read_csv(TRACE).dropna(subset=["timestamp"])
    t0 = pd.Timestamp(start)
    when = pd.to_datetime(raw["timestamp"])
    rows = raw[(when >= t0) & (when < t0 + pd.Timedelta(days=days))].copy()
    rows["submit_time"] = ((pd.to_datetime(rows["timestamp"]) - t0).dt.total_seconds() / arrival_scale).astype(int)
    rows = rows.sort_values(["submit_time", "timestamp"], kind="stable")
    frame = pd.DataFrame({"user": rows["cluster"].to_numpy(), "num_gpu": rows["num_gpus"].to_numpy(int),
                          "submit_time": rows["submit_time"].to_numpy(),
                          "duration": rows["duration"].round().clip(lower=1).to_numpy(int)})  # fmt: skip
    return _within_quota(frame, shares)


def mix2_window(days: float, shares: dict[str, float], arrival_scale: float = 1.0) -> pd.DataFrame:
    """Chronus' Philly-derived MIX2 trace (times in minutes, tenants ``vc_<VC>``), its first
    ``days`` days, in the artifact's trace format; submit times divided by ``arrival_scale``."""
    jobs = WorkloadSpec(trace=str(MIX2), fmt="philly", options={"time_unit": "min"}, tenant_prefix="vc_").build().jobs
    jobs = jobs[jobs["submit_s"] < days * 86400].sort_values(["submit_s", "job_id"], kind="stable")
    rows = pd.DataFrame({"user": jobs["tenant"].to_numpy(), "num_gpu": jobs["num_gpus"].to_numpy(int),
                         "submit_time": (jobs["submit_s"].to_numpy() / arrival_scale).astype(int),
                         "duration": jobs["duration_s"].round().clip(lower=1).to_numpy(int)})  # fmt: skip
    return _within_quota(rows, shares)


def _within_quota(rows: pd.DataFrame, shares: dict[str, float]) -> pd.DataFrame:
    """Drop the jobs larger than their tenant's quota (the artifact drops them on arrival); number the rest."""
    total = sum(shares.values())
    quota = {t: int(NODES * GPUS_PER_NODE * w / total) for t, w in shares.items()}
    rows = rows[rows["user"].isin(list(shares)) & (rows["num_gpu"] <= rows["user"].map(quota))]
    return rows.reset_index(drop=True).assign(job_id=lambda r: np.arange(len(r)))[
        ["job_id", "user", "num_gpu", "submit_time", "duration"]]


def _artifact_copy(artifact: Path, into: Path) -> Path:
    """The artifact's ``simulation`` folder copied under ``into`` (from a checkout or a git directory)."""
    if (artifact / "simulation" / "main.py").is_file():
        shutil.copytree(artifact / "simulation", into / "simulation")
    else:
        archive = subprocess.run(["git", "--git-dir", str(artifact), "archive", "HEAD", "simulation"],
                                 check=True, capture_output=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "simulation"


def run_artifact(artifact: Path, jobs: pd.DataFrame, python: str) -> tuple[pd.DataFrame, float, float]:
    """Per-job outcome of the artifact (job_id, end_time, preempt_cnt, lease_expiry_cnt), CPU s, wall s."""
    with tempfile.TemporaryDirectory(prefix="astraea-artifact-") as tmp:
        sim = _artifact_copy(artifact, Path(tmp))
        jobs.to_csv(sim / "trace.csv", index=False)
        args = [python, "main.py", *RUN_SH, "--trace", "trace.csv", "--share", str(SHARES.resolve()),
                "--name_list", str(NAMES.resolve()), "--fairness_output", "result.csv"]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        subprocess.run(args, cwd=sim, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = pd.read_csv(sim / "result.csv")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu, wall


def run_schedlab(jobs: pd.DataFrame, shares: dict[str, float], block: str, repack: bool,
                 starvation_s: float = 21600.0, cluster: ClusterSpec | None = None,
                 ) -> tuple[pd.DataFrame, float, float, float]:  # fmt: skip
    """schedlab's astraea on the same rows (on the artifact's cluster unless ``cluster``): its
    jobs table, GPU-hours left free while a job waited, CPU s, wall s."""
    frame = pd.DataFrame({"job_id": jobs["job_id"].astype(str), "submit_s": jobs["submit_time"].astype(float),
                          "num_gpus": jobs["num_gpu"].astype(float), "duration_s": jobs["duration"].astype(float),
                          "tenant": jobs["user"]})  # fmt: skip
    workload = Workload(canonical_frame(frame, source="philly-window"), "philly-window")
    cluster = cluster or load_cluster(f"uniform:{NODES}x{GPUS_PER_NODE}")
    config = SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0)
    cpu, wall = time.process_time(), time.perf_counter()
    result = Simulation(workload, cluster, Astraea(Consolidate(), shares=shares, block=block, repack=repack, starvation_s=starvation_s),
                        config=config,
                        seed=0).run()  # fmt: skip
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return result.jobs, idle_while_waiting(result.timeseries), cpu, wall


def variants(jobs: pd.DataFrame, shares: dict[str, float]) -> str:
    """schedlab alone under each rule the post leaves open, and on one pooled node: where the
    GPUs left free while jobs wait come from."""
    pooled = uniform(1, NODES * GPUS_PER_NODE)
    rows = [("defaults (block behind starving jobs, renewed jobs stay put)", "starving", False, 21600.0, None),
            ("no starvation threshold", "starving", False, math.inf, None),
            ("`block=any`", "any", False, 21600.0, None),
            ("`repack=true`", "starving", True, 21600.0, None),
            ("`block=any`, `repack=true` (the artifact's rules)", "any", True, 21600.0, None),
            (f"defaults on one {NODES * GPUS_PER_NODE:,}-GPU node (no placement constraint)", "starving", False,
             21600.0, pooled),
            (f"`block=any` on one {NODES * GPUS_PER_NODE:,}-GPU node", "any", False, 21600.0, pooled)]  # fmt: skip
    lines = ["| schedlab setting | lowest tenant LTGF | mean JCT (s) | GPU-h free while a job waited |",
             "|---|--:|--:|--:|"]  # fmt: skip
    order = jobs["job_id"].astype(str)
    for label, block, repack, starvation_s, cluster in rows:
        ours, idle, _, _ = run_schedlab(jobs, shares, block, repack, starvation_s, cluster)
        ours = ours.set_index("job_id").loc[order]
        result = summary(outcome(jobs, ours["end_s"], ours["preemptions"]), shares)
        lines.append(f"| {label} | {result['ltgf_tenant_min']:.3f} | {result['jct_mean_s']:,.0f} | {idle:,.0f} |")
    return "\n".join(lines)


def idle_while_waiting(series: pd.DataFrame) -> float:
    """GPU-hours free while at least one job was pending (each sample holds until the next)."""
    t = series["time_s"].to_numpy(float)
    free = (series["gpus_total"] - series["gpus_busy"]).to_numpy(float)
    waiting = series["pending_jobs"].to_numpy() > 0
    return float((free[:-1] * waiting[:-1] * np.diff(t)).sum() / 3600.0)


def outcome(jobs: pd.DataFrame, end: pd.Series, preemptions: pd.Series) -> pd.DataFrame:
    """A common per-job table for the fairness metrics."""
    return pd.DataFrame({"tenant": jobs["user"].to_numpy(), "num_gpus": jobs["num_gpu"].to_numpy(float),
                         "submit_s": jobs["submit_time"].to_numpy(float), "end_s": end.to_numpy(float),
                         "duration_s": jobs["duration"].to_numpy(float), "finished": True,
                         "gpu_seconds": (jobs["num_gpu"] * jobs["duration"]).to_numpy(float),
                         "preemptions": preemptions.to_numpy(float)})  # fmt: skip


def _offered_load(jobs: pd.DataFrame) -> float:
    work = float((jobs["num_gpu"] * jobs["duration"]).sum())
    return work / (NODES * GPUS_PER_NODE * (jobs["submit_time"].max() + 1))


def summary(table: pd.DataFrame, shares: dict[str, float]) -> dict:
    gpus = NODES * GPUS_PER_NODE
    metrics = fairness_metrics(table, gpus, shares=shares)
    jct = table["end_s"] - table["submit_s"]
    return {**metrics, "jct_mean_s": float(jct.mean()), "queue_free_jct": float((jct - table["duration_s"]).mean()),
            "preemptions": float(table["preemptions"].sum())}  # fmt: skip


def report(jobs: pd.DataFrame, art: pd.DataFrame, ours: pd.DataFrame, shares: dict[str, float],
           times: dict[str, float], idle_gpu_h: float) -> str:  # fmt: skip
    art = art.set_index("job_id").loc[jobs["job_id"]]
    ours = ours.set_index("job_id").loc[jobs["job_id"].astype(str)]
    a = outcome(jobs, art["end_time"], art["preempt_cnt"] + art["resume_cnt"])
    s = outcome(jobs, ours["end_s"], ours["preemptions"])
    sa, ss = summary(a, shares), summary(s, shares)
    ja = (a["end_s"] - a["submit_s"]).to_numpy()
    js = (s["end_s"] - s["submit_s"]).to_numpy()
    lines = [f"{len(jobs)} jobs, {jobs['user'].nunique()} tenants, {NODES * GPUS_PER_NODE} GPUs; "
             f"offered load {_offered_load(jobs):.2f} (GPU-time over GPUs x arrival span)",
             "", "| metric | artifact | schedlab | diff |", "|---|---|---|---|"]  # fmt: skip
    for key, label in (("jct_mean_s", "mean JCT (s)"), ("queue_free_jct", "mean JCT - duration (s)"),
                       ("ltgf_tenant_min", "tenant LTGF, lowest"), ("ltgf_tenant_max", "tenant LTGF, highest"),
                       ("jain_tenants", "Jain's index over tenants"),
                       ("ltgf_job_unfairness_p95", "job LTGF unfairness p95"),
                       ("ltgf_job_unfairness_max", "job LTGF unfairness max"),
                       ("ftf_rho_mean", "finish-time fairness rho mean"), ("ftf_rho_p95", "rho p95")):  # fmt: skip
        x, y = sa[key], ss[key]
        diff = f"{100 * (y - x) / x:+.1f}%" if x else "-"
        lines.append(f"| {label} | {x:.4g} | {y:.4g} | {diff} |")
    lines.append(f"| stops (pauses, preemptions) | {sa['preemptions']:.0f} | {ss['preemptions']:.0f} | |")
    work = float((jobs["num_gpu"] * jobs["duration"]).sum()) / 3600.0
    lines.append(f"| GPU-h free while a job waited (of {work:,.0f} GPU-h of work) | | {idle_gpu_h:,.0f} | |")
    same = np.abs(ja - js) <= 10.0
    lines.append(f"| jobs whose JCT agrees within 10 s (one artifact tick) | {same.mean():.1%} | | |")
    lines += ["", "| tenant | share | jobs | artifact LTGF | schedlab LTGF | artifact mean JCT (s) | schedlab mean JCT (s) |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    counts = jobs["user"].value_counts()
    for tenant, row in sorted(sa["tenant_fairness"].items(), key=lambda kv: -counts.get(kv[0], 0)):
        if tenant not in counts:
            continue
        mine = jobs["user"].to_numpy() == tenant
        lines.append(f"| {tenant} | {shares[tenant]:g} | {counts[tenant]} | {row['ltgf_ratio']:.3f} | "
                     f"{ss['tenant_fairness'][tenant]['ltgf_ratio']:.3f} | {ja[mine].mean():.0f} | {js[mine].mean():.0f} |")  # fmt: skip
    lines += ["", "| simulator | CPU s | wall s |", "|---|---|---|",
              f"| artifact | {times['artifact_cpu']:.1f} | {times['artifact_wall']:.1f} |",
              f"| schedlab | {times['schedlab_cpu']:.1f} | {times['schedlab_wall']:.1f} |",
              f"| ratio (artifact / schedlab) | {times['artifact_cpu'] / times['schedlab_cpu']:.1f} | "
              f"{times['artifact_wall'] / times['schedlab_wall']:.1f} |"]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifact", type=Path, help="Astraea_Artifacts checkout or git directory")
    parser.add_argument("--variants", action="store_true",
                        help="instead: schedlab alone under each blocking / re-packing rule and on one pooled node")
    parser.add_argument("--trace", choices=("chronus-mix2", "pollux-philly"), default="chronus-mix2")
    parser.add_argument("--start", default="2017-10-23", help="window start (pollux-philly: Philly calendar time)")
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--arrival-scale", type=float, default=1.0, help="divide submit times by this (load x it)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the artifact (Python 3)")
    parser.add_argument("--block", choices=BLOCK_RULES, default="any",
                        help="schedlab's blocking rule (any: the artifact's run.sh --block_scheduling 1)")
    parser.add_argument("--repack", action=argparse.BooleanOptionalAction, default=True,
                        help="schedlab places the jobs of expired leases afresh, as the artifact does")
    parser.add_argument("--doc", action="store_true",
                        help="also write the comparison and the variants into docs/fairness.md")
    parser.add_argument("--out", type=Path, help="also write the per-job outcomes of both sides here (CSV)")
    args = parser.parse_args()
    shares = load_shares(SHARES)
    if args.trace == "chronus-mix2":
        jobs = mix2_window(args.days, shares, args.arrival_scale)
    else:
        jobs = philly_window(args.start, args.days, shares, args.arrival_scale)
    where = args.trace + (f" from {args.start}" if args.trace == "pollux-philly" else "")
    if args.variants:
        print(f"{where}, {args.days:g} days, arrivals x{args.arrival_scale:g}")
        print(variants(jobs, shares))
        return
    if args.artifact is None:
        parser.error("--artifact is needed (or --variants)")
    art, art_cpu, art_wall = run_artifact(args.artifact, jobs, args.python)
    ours, idle, our_cpu, our_wall = run_schedlab(jobs, shares, args.block, args.repack)
    times = {"artifact_cpu": art_cpu, "artifact_wall": art_wall, "schedlab_cpu": our_cpu, "schedlab_wall": our_wall}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        art.to_csv(args.out / "artifact_jobs.csv", index=False)
        ours.to_csv(args.out / "schedlab_jobs.csv", index=False)
    title = f"{where}, {args.days:g} days, arrivals x{args.arrival_scale:g}, schedlab block={args.block} repack={args.repack}"
    text = report(jobs, art, ours, shares, times, idle)
    print(title)
    print(text)
    if args.doc:
        command = " ".join(["python benchmarks/compare_astraea.py --artifact PATH/TO/Astraea_Artifacts",
                            *sys.argv[sys.argv.index("--trace"):]] if "--trace" in sys.argv else sys.argv[1:])
        block = (f"Generated by `{command}` ({title}):\n\n{text}\n\n"
                 f"schedlab alone on the same jobs under each rule, and on one pooled node:\n\n{variants(jobs, shares)}")
        replace_block(DOC, "<!-- astraea-artifact:begin -->", "<!-- astraea-artifact:end -->", block)


if __name__ == "__main__":
    main()
