"""Castor §9 on Pollux's workloads: the ``castor_pollux`` block of docs/castor.md.

Castor's simulations (§9.1) take "240 jobs ... the settings of GPU numbers and training
iterations also follow those of Pollux". Pollux's artifact has exactly such workloads:
``simulator/workloads-1.5/workload-{1..8}.csv``, 240 jobs each in 8 hours, with application,
GPU count and batch size; ``--format pollux-workload`` derives each job's duration from Pollux's
own application traces (see :mod:`schedlab.workload.loaders.pollux_workload`). Cluster:
``uniform:16x8`` (§9.1). The eight workloads are the replicates; each cell is their mean.

Intensity sweep (§9.5, Fig. 16: "we scale the baseline workload of 240 jobs by factors ranging
from 0.5x to 2x, resulting in job submission counts from 120 to 480"): ``n <= 240`` jobs are a
random subset of workload-k (seed k); ``n > 240`` are workload-k plus ``n - 240`` jobs drawn from
workload-(k mod 8 + 1) of the same folder, keeping their submit times (same generator, same
8-hour window).

Interference: castor and sjf-ffs run twice, on Lucid's measured xi as they are (largest cell
1.79) and stretched to the paper's range, ``xi_max=6`` (Castor §3.3: "a wide range of up to 6").
The drawn catalogue models are the ones of docs/castor.md: cifar10 and ncf are Lucid's ResNet18
and NeuMF, the other four applications draw a catalogue model per job.

    python benchmarks/castor_eval.py --part pollux     # rewrites the castor_pollux block
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.experiments.run import RunSpec, WorkloadSpec, build_run, execute
from schedlab.policies.castor.interference import PAPER_XI_MAX
from schedlab.policies.registry import POLICIES
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import Workload, canonical_frame

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data"
LUCID = DATA / "lucid"
WORKLOADS = DATA / "pollux" / "simulator" / "workloads-1.5"
CLUSTER = "uniform:16x8"
FILES = tuple(range(1, 9))
BASE_JOBS = 240
SWEEP = (120, 240, 360, 480)
XI_SETTINGS = (("measured", 0.0), ("paper range", PAPER_XI_MAX))
# (label, registered policy, varies with xi)
POLICIES = (("fifo", "fifo", False), ("sjf", "sjf", False), ("sjf-backfill", "sjf-backfill", False),
            ("ssf", "ssf", False), ("tiresias", "tiresias", False), ("lucid", "lucid", False),
            ("pollux", "pollux", False), ("sjf-ffs", "sjf-ffs", True), ("castor", "castor", True))  # fmt: skip
# Castor's average-JCT reduction in Tables 5 (Philly-like) and 6 (Venus-like), from their JCTs (h).
PAPER_JCT = {
    "philly": {"fifo": 2.64, "sjf": 1.88, "tiresias": 2.57, "pollux": 2.17, "lucid": 2.10, "castor": 1.54},
    "venus": {"fifo": 4.73, "sjf": 3.35, "tiresias": 3.94, "lucid": 3.35, "castor": 2.89},
}
PAPER_QUEUE_SHARE = {"philly": 1.86 / 2.64, "venus": 3.51 / 4.73}  # FIFO's queueing / JCT


def workload(k: int, n: int) -> Workload:
    """Workload-k of Pollux's 1.5x folder with ``n`` jobs (see the module docstring)."""
    base = load_trace(WORKLOADS / f"workload-{k}.csv", "pollux-workload").jobs
    if n <= len(base):
        rng = np.random.default_rng(k)
        jobs = base.iloc[np.sort(rng.choice(len(base), size=n, replace=False))]
    else:
        other = load_trace(WORKLOADS / f"workload-{k % len(FILES) + 1}.csv", "pollux-workload").jobs
        rng = np.random.default_rng(k)
        extra = other.iloc[np.sort(rng.choice(len(other), size=n - len(base), replace=False))]
        jobs = pd.concat([base, extra.assign(job_id="b-" + extra["job_id"].astype(str))])
    jobs = jobs.drop(columns=["source_row"]).sort_values("submit_s", kind="stable").reset_index(drop=True)
    source = f"pollux-workload-{k}-{n}"
    return Workload(canonical_frame(jobs, source=source), source)


def run_cell(args: tuple[int, int, str, str, float]) -> dict[str, Any]:
    k, n, label, name, xi_max = args
    params: dict[str, str] = {}
    if name in ("castor", "sjf-ffs", "lucid"):
        params["lucid"] = str(LUCID)
    if xi_max:
        params["xi_max"] = f"{xi_max:g}"
    w = workload(k, n)
    spec = RunSpec(WorkloadSpec(trace=str(WORKLOADS / f"workload-{k}.csv"), fmt="pollux-workload"), CLUSTER, name,
                   seed=k, params=POLICIES[name].parse(params))  # fmt: skip
    result, s = execute(build_run(spec, workload=w))
    castor = s.get("castor") or {}
    jobs = w.jobs
    done = result.jobs
    large = done["num_gpus"] > 8  # Tables 5-6: "more than 8 GPUs are classified as large"
    jct = done["end_s"] - done["submit_s"]
    return {"workload": k, "jobs": n, "policy": label, "xi_max": xi_max,
            "offered_load": float((jobs["num_gpus"] * jobs["duration_s"]).sum()) / (128 * 8 * 3600),
            "jct_h": s["jct_mean_s"] / 3600, "queue_h": s["queue_mean_s"] / 3600, "makespan_h": s["makespan_s"] / 3600,
            "colocated_jobs": s["colocated_jobs"], "harmful": castor.get("harmful_colocations"),
            "large_jct_h": jct[large].mean() / 3600, "small_jct_h": jct[~large].mean() / 3600,
            "large_queue_h": done["queue_s"][large].mean() / 3600, "small_queue_h": done["queue_s"][~large].mean() / 3600,
            "preemptions": s["preemptions"], "large_share": float(large.mean()),
            "accumulating": castor.get("accumulating_jobs")}  # fmt: skip


def cells(sizes: tuple[int, ...] = SWEEP) -> list[tuple[int, int, str, str, float]]:
    out = []
    for n in sizes:
        for k in FILES:
            for label, name, varies in POLICIES:
                for _, xi_max in XI_SETTINGS if varies else XI_SETTINGS[:1]:
                    out.append((k, n, label, name, xi_max))
    return out


def simulate(processes: int) -> pd.DataFrame:
    with ProcessPoolExecutor(processes) as pool:
        return pd.DataFrame(list(pool.map(run_cell, cells(), chunksize=4)))


def _label(row: pd.Series) -> str:
    return f"{row.policy} (xi up to {row.xi_max:g})" if row.xi_max else row.policy


def _pct(ours: float, base: float) -> str:
    return f"{100 * (base - ours) / base:+.0f} %"


def tables(runs: pd.DataFrame) -> str:
    runs = runs.assign(label=runs.apply(_label, axis=1))
    order = [_label(pd.Series({"policy": p, "xi_max": x})) for p, _, v in POLICIES
             for _, x in (XI_SETTINGS if v else XI_SETTINGS[:1])]  # fmt: skip
    mean = runs.groupby(["jobs", "label"]).mean(numeric_only=True).reset_index()
    base = mean[mean.jobs == BASE_JOBS].set_index("label").loc[order]
    load = runs[(runs.jobs == BASE_JOBS) & (runs.label == "fifo")].set_index("workload").offered_load
    out = ["Generated by `python benchmarks/castor_eval.py --part pollux` (Pollux's `workloads-1.5`, "
           f"workload-1 to -{len(FILES)}, mean over the {len(FILES)}; hours; `uniform:16x8`).", "",
           f"**240 jobs** (offered load in the 8 hours, GPU-hours of work / (128 GPUs x 8 h): "
           f"{load.min():.2f}-{load.max():.2f}, mean {load.mean():.2f}):", "",
           "| policy | JCT | queue | queue / JCT | large jobs JCT / queue | small jobs JCT / queue | makespan "
           "| colocated jobs | harmful (Thm 1) | preemptions |",
           "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for label, row in base.iterrows():
        harm = "" if pd.isna(row.harmful) else f"{row.harmful:.1f}"
        out.append(f"| {label} | {row.jct_h:.2f} | {row.queue_h:.2f} | {100 * row.queue_h / row.jct_h:.0f} % | "
                   f"{row.large_jct_h:.2f} / {row.large_queue_h:.2f} | {row.small_jct_h:.2f} / {row.small_queue_h:.2f} | "
                   f"{row.makespan_h:.1f} | {row.colocated_jobs:.1f} | {harm} | {row.preemptions:.0f} |")
    share = runs[(runs.jobs == BASE_JOBS) & (runs.label == "fifo")].large_share.mean()
    out += ["", f"Large = more than 8 GPUs (Tables 5-6): {100 * share:.0f} % of the jobs. Paper, average JCT of all / "
            "large / small jobs: castor 1.54 / 0.45 / 1.09 h, Tiresias 2.57 / 1.31 / 1.26 h (Table 5; its 'large' and "
            "'small' columns add up to 'all')."]  # fmt: skip
    out += ["", f"Paper, FIFO's queueing / JCT: {100 * PAPER_QUEUE_SHARE['philly']:.0f} % (Table 5, Philly-like), "
            f"{100 * PAPER_QUEUE_SHARE['venus']:.0f} % (Table 6, Venus-like).", "",
            "Castor's average-JCT reduction against each baseline (mean JCTs; in brackets the workloads, of "
            f"{len(FILES)}, where castor's JCT is the lower), beside the paper's:", "",
            "| against | castor, measured xi | castor, xi up to 6 | paper, Venus-like (Table 6) "
            "| paper, Philly-like (Table 5) |", "|---|---|---|---|---|"]  # fmt: skip
    per = runs[runs.jobs == BASE_JOBS].pivot_table(index="workload", columns="label", values="jct_h")
    castors = ["castor", f"castor (xi up to {PAPER_XI_MAX:g})"]
    for against in ("fifo", "sjf", "tiresias", "ssf", "sjf-backfill", "sjf-ffs", "lucid", "pollux"):
        cols = []
        for c in castors:
            ref = f"sjf-ffs (xi up to {PAPER_XI_MAX:g})" if against == "sjf-ffs" and c != "castor" else against
            wins = int((per[c] < per[ref]).sum())
            cols.append(f"{_pct(base.loc[c, 'jct_h'], base.loc[ref, 'jct_h'])} ({wins}/{len(FILES)})")
        paper = [_pct(PAPER_JCT[p]["castor"], PAPER_JCT[p][against]) if against in PAPER_JCT[p] else "not given"
                 for p in ("venus", "philly")]  # fmt: skip
        if against == "sjf-ffs":
            paper = ["up to 20 % (abstract, Fig. 14)"] * 2
        out.append(f"| {against} | {cols[0]} | {cols[1]} | {paper[0]} | {paper[1]} |")
    sweep = mean.pivot(index="label", columns="jobs", values="jct_h").loc[order]
    loads = runs[runs.label == "fifo"].groupby("jobs").offered_load.mean()
    out += ["", "**Intensity sweep (§9.5, Fig. 16)**, average JCT (h), 120-480 jobs in the same 8 hours:", "",
            "| policy | " + " | ".join(f"{n} jobs" for n in sweep.columns) + " |", "|---|" + "---|" * len(sweep.columns),
            "| offered load | " + " | ".join(f"{loads[n]:.2f}" for n in sweep.columns) + " |"]  # fmt: skip
    out += [f"| {label} | " + " | ".join(f"{v:.2f}" for v in row) + " |" for label, row in sweep.iterrows()]
    out.append("")
    return "\n".join(out)
