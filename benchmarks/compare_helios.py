"""Compare schedlab with the Helios QSSF simulator (HeliosArtifact) on one Helios-format trace.

The trace comes from schedlab's ``venus`` synthetic profile, written as a Helios
``cluster_log.csv`` (integer seconds, no two jobs submitted in the same second) starting
2020-09-01, the first day of the simulator's "Sept" window. Both simulators run FIFO, SJF and
SRTF with the consolidate placer on it: Helios as a subprocess from a checkout you provide,
schedlab in-process. Prints a Markdown report (also written to the work directory with CSV
tables): per-VC average JCT and queueing delay of both sides, the number of jobs that start at
the same second on both, and the run times.

    python benchmarks/compare_helios.py --artifact PATH/TO/HeliosArtifact --jobs 4000 --seed 1
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.cluster.presets import VENUS_SEPT_NODES, load_cluster
from schedlab.policies.registry import make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.workload import transforms
from schedlab.workload.loaders import load_trace
from schedlab.workload.synthetic import generate

# The Helios simulator's "Sept" experiments: submit times count from a fixed anchor, and only
# jobs submitted inside the window are simulated.
ANCHOR = pd.Timestamp("2020-04-01 00:00:00")
WINDOW_START = pd.Timestamp("2020-09-01 00:00:00")
WINDOW_END = pd.Timestamp("2020-09-26 23:59:00")
EXPERIMENT = "Schedlab_Sept"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
POLICIES = ("fifo", "sjf", "srtf")
# A second schedlab SRTF run whose resume cost stands in for Helios' per-preemption overhead.
MIMIC_RESTORE_S = 30.0
GPUS_PER_NODE = 8


@dataclass
class Run:
    """Per-job outcome of one simulation (columns job_id, vc, gpus, submit, start, end, queue,
    preemptions, overhead) and its run time."""

    policy: str
    jobs: pd.DataFrame
    wall_s: float
    cpu_s: float


def seconds(stamp: pd.Timestamp) -> int:
    """Whole seconds from the simulator's anchor to ``stamp``."""
    return int((stamp - ANCHOR) / pd.Timedelta(seconds=1))


def write_inputs(workdir: Path, n_jobs: int, seed: int, load: float | None) -> Path:
    """Write cluster_log.csv, cluster_gpu_number.csv and vc_dict_homo.pkl to ``workdir/trace``,
    and the dummy estimator file the Helios simulator opens; return the trace directory."""
    w = generate("venus", n_jobs, seed=seed, load=load)
    jobs = w.jobs
    offset = seconds(w.origin)
    submit = np.floor(jobs["submit_s"].to_numpy()).astype(np.int64)
    submit = np.maximum.accumulate(submit - np.arange(len(submit))) + np.arange(len(submit))  # strictly increasing
    submit += offset
    if submit[-1] > seconds(WINDOW_END):
        last = ANCHOR + pd.Timedelta(seconds=int(submit[-1]))
        raise SystemExit(f"the last job is submitted at {last}, after the simulator's window ({WINDOW_END}); "
                         "use fewer --jobs or a higher --load")  # fmt: skip
    duration = np.maximum(1, np.rint(jobs["duration_s"].to_numpy())).astype(np.int64)
    gpus = jobs["num_gpus"].to_numpy().astype(np.int64)
    vc = jobs["tenant"].to_numpy()
    vc_nodes = {v: VENUS_SEPT_NODES[v] for v in VENUS_SEPT_NODES if v in set(vc)}
    if np.any(gpus > np.array([vc_nodes[v] * GPUS_PER_NODE for v in vc])):
        raise SystemExit("a generated job is larger than its VC")
    stamp = ANCHOR + pd.to_timedelta(submit, unit="s")
    trace = pd.DataFrame(
        {
            "job_id": np.arange(1, len(jobs) + 1),
            "user": jobs["user"].to_numpy(),
            "vc": vc,
            "jobname": jobs["name"].to_numpy(),
            "gpu_num": gpus,
            "cpu_num": jobs["num_cpus"].fillna(0).to_numpy().astype(np.int64),
            "node_num": -(-gpus // GPUS_PER_NODE),
            "state": pd.Series(jobs["final_state"]).str.upper().to_numpy(),
            "submit_time": stamp.strftime(TIME_FORMAT),
            "start_time": stamp.strftime(TIME_FORMAT),
            "end_time": (stamp + pd.to_timedelta(duration, unit="s")).strftime(TIME_FORMAT),
            "duration": duration,
            "queue": 0,
        }
    )
    # The simulator counts times from its first row, so one row must sit at the anchor; it is
    # outside the window and not simulated by either side.
    anchor = trace.iloc[[0]].assign(
        job_id=0, jobname="anchor", gpu_num=1, cpu_num=1, node_num=1, duration=1,
        submit_time=ANCHOR.strftime(TIME_FORMAT), start_time=ANCHOR.strftime(TIME_FORMAT),
        end_time=(ANCHOR + pd.Timedelta(seconds=1)).strftime(TIME_FORMAT),
    )  # fmt: skip
    trace_dir = workdir / "trace"
    trace_dir.mkdir(parents=True, exist_ok=True)
    pd.concat([anchor, trace]).to_csv(trace_dir / "cluster_log.csv", index=False)
    write_vcs(trace_dir, vc_nodes, WINDOW_START)
    (workdir / "estimators").mkdir(exist_ok=True)
    pd.DataFrame({"job_id": trace["job_id"], "priority": 0}).to_csv(
        workdir / "estimators" / f"{EXPERIMENT}_lgb.csv", index=False
    )
    return trace_dir


def write_vcs(trace_dir: Path, vc_nodes: dict[str, int], date: pd.Timestamp) -> None:
    """Write the VC sizes (nodes of 8 GPUs) as ``cluster_gpu_number.csv`` for schedlab (GPUs per
    VC on ``date``; cluster ``helios:PATH@DATE``) and as ``vc_dict_homo.pkl`` for the simulator."""
    vc_nodes = {str(v): int(n) for v, n in vc_nodes.items()}
    gpu_numbers: dict[str, object] = {"date": date.strftime("%Y-%m-%d")}
    gpu_numbers |= {v: n * GPUS_PER_NODE for v, n in vc_nodes.items()}
    gpu_numbers["total"] = sum(n * GPUS_PER_NODE for n in vc_nodes.values())
    pd.DataFrame([gpu_numbers]).to_csv(trace_dir / "cluster_gpu_number.csv", index=False)
    with open(trace_dir / "vc_dict_homo.pkl", "wb") as f:
        pickle.dump(vc_nodes, f)


def helios_overhead(gpus: pd.Series) -> pd.Series:
    """Seconds Helios adds to a job's remaining time per preemption (7 / 30 / 60 by GPUs)."""
    return pd.Series(np.where(gpus == 1, 7, np.where(gpus <= GPUS_PER_NODE, 30, 60)), index=gpus.index)


def helios_command(artifact: Path, trace_dir: Path, log_root: Path, policy: str, processes: int | None,
                   experiment: str = EXPERIMENT, placer: str = "consolidate") -> list[str]:
    """The command that runs the Helios simulator (``simulator.py`` of the checkout ``artifact``)
    for one policy; it reads ``estimators/<experiment>_lgb.csv`` relative to its working directory."""
    simulator = artifact / "framework" / "QSSF Service" / "simulator.py"
    cmd = [sys.executable, str(simulator), "-e", experiment, "-t", str(trace_dir), "-l", str(log_root),
           "-s", policy, "-p", placer]  # fmt: skip
    if processes is not None:
        cmd += ["-j", str(processes)]
    return cmd


def helios_env() -> dict[str, str]:
    """The simulator's environment: UTC, because it reads naive times in the local time zone."""
    return os.environ | {"TZ": "UTC"}


def helios_logs(log_root: Path, trace_dir: Path, policy: str, experiment: str = EXPERIMENT,
                placer: str = "consolidate") -> list[Path]:
    """The per-VC job logs one simulator run writes (one per VC of ``vc_dict_homo.pkl``)."""
    vcs = list(pd.read_pickle(trace_dir / "vc_dict_homo.pkl"))
    return [log_root / experiment / vc / f"{policy}_{placer}_{vc}_log.csv" for vc in vcs]


def run_helios(artifact: Path, workdir: Path, trace_dir: Path, policy: str, processes: int | None) -> Run:
    """Run the Helios simulator for one policy and read its per-job logs."""
    log_root = workdir / "log"
    logs = helios_logs(log_root, trace_dir, policy)
    for path in logs:
        path.unlink(missing_ok=True)
    cmd = helios_command(artifact, trace_dir, log_root, policy, processes)
    env = helios_env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    with open(workdir / f"helios_{policy}.out", "wb") as out:
        # It exits non-zero at the end: its summary step wants the logs of all four policies.
        proc = subprocess.run(cmd, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    missing = [p for p in logs if not p.exists()]
    if missing:
        raise SystemExit(f"Helios {policy} (exit {proc.returncode}) wrote no {missing[0]}; "
                         f"see {workdir / f'helios_{policy}.out'}")  # fmt: skip
    raw = pd.concat([pd.read_csv(p) for p in logs], ignore_index=True)
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_id"].astype(str),
            "vc": raw["vc"],
            "gpus": raw["gpu_num"],
            "submit": raw["submit_time"].astype(float),
            "start": raw["start_time"].astype(float),
            "end": raw["end_time"].astype(float),
            "queue": raw["queue"].astype(float),
            "preemptions": raw["ckpt_times"],
            "overhead": raw["ckpt_times"] * helios_overhead(raw["gpu_num"]),
        }
    )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(policy, jobs, wall, cpu)


def run_schedlab(trace_dir: Path, policy: str, config: SimConfig, label: str) -> Run:
    """Load the trace and the VC config and simulate one policy in-process."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    w = load_trace(trace_dir / "cluster_log.csv", "helios")
    w = transforms.time_window(w, seconds(WINDOW_START), seconds(WINDOW_END) + 1)  # drops the anchor row
    cluster = load_cluster(f"helios:{trace_dir / 'cluster_gpu_number.csv'}@{WINDOW_START:%Y-%m-%d}")
    sim = Simulation(w, cluster, make_policy(policy, rng=np.random.default_rng(0)), config=config)
    out = sim.run().jobs
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    # Workload times count from the earliest row, the anchor, as the simulator's do.
    jobs = pd.DataFrame(
        {
            "job_id": out["job_id"].astype(str),
            "vc": out["tenant"],
            "gpus": out["num_gpus"],
            "submit": out["submit_s"],
            "start": out["first_start_s"],
            "end": out["end_s"],
            "queue": out["queue_s"],
            "preemptions": out["preemptions"],
            "overhead": out["preemptions"] * (config.checkpoint_s + config.restore_s),
        }
    )
    if not out["finished"].all():
        raise SystemExit(f"schedlab {label}: {int((~out['finished']).sum())} jobs did not finish")
    return Run(label, jobs, wall, cpu)


def compare(helios: Run, ours: Run) -> pd.DataFrame:
    """Per-VC (and "all") averages of both runs, matched by job id."""
    both = helios.jobs.merge(ours.jobs, on="job_id", suffixes=("_h", "_s"), validate="one_to_one")
    if len(both) != len(helios.jobs) or len(both) != len(ours.jobs):
        raise SystemExit(f"{ours.policy}: the two sides simulated different jobs")
    both["jct_h"] = both["end_h"] - both["submit_h"]
    both["jct_s"] = both["end_s"] - both["submit_s"]
    both["same_start"] = both["start_h"] == both["start_s"]
    rows = []
    for vc, part in [*sorted(both.groupby("vc_h")), ("all", both)]:
        jct_h, jct_s = part["jct_h"].mean(), part["jct_s"].mean()
        q_h, q_s = part["queue_h"].mean(), part["queue_s"].mean()
        rows.append(
            {
                "policy": ours.policy,
                "vc": vc,
                "jobs": len(part),
                "helios_jct_s": jct_h,
                "schedlab_jct_s": jct_s,
                "jct_diff_pct": 100 * (jct_s - jct_h) / jct_h,
                "helios_queue_s": q_h,
                "schedlab_queue_s": q_s,
                "queue_diff_pct": 100 * (q_s - q_h) / q_h if q_h else float("nan"),
                "same_start": int(part["same_start"].sum()),
                "helios_preemptions": int(part["preemptions_h"].sum()),
                "schedlab_preemptions": int(part["preemptions_s"].sum()),
                "helios_overhead_s": part["overhead_h"].mean(),
            }
        )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, floats: str = "{:,.0f}") -> str:
    """A DataFrame as a Markdown table (floats formatted with ``floats``)."""
    def cell(v: object) -> str:
        if isinstance(v, float):
            return "–" if v != v else floats.format(v)
        return f"{v:,}" if isinstance(v, int) else str(v)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def report(results: pd.DataFrame, speed: pd.DataFrame, args: argparse.Namespace) -> str:
    """The Markdown report: one per-VC table per policy, an SRTF cost breakdown and the speeds."""
    parts = [f"Trace: venus profile, {args.jobs:,} jobs, seed {args.seed}"
             + (f", load {args.load}" if args.load is not None else "") + "."]  # fmt: skip
    for policy, t in results.groupby("policy", sort=False):
        view = pd.DataFrame(
            {
                "VC": t["vc"],
                "jobs": t["jobs"].astype(int),
                "Helios JCT": t["helios_jct_s"],
                "schedlab JCT": t["schedlab_jct_s"],
                "JCT diff %": t["jct_diff_pct"].map("{:+.2f}".format),
                "Helios queue": t["helios_queue_s"],
                "schedlab queue": t["schedlab_queue_s"],
                "queue diff %": t["queue_diff_pct"].map(lambda v: "–" if v != v else f"{v:+.2f}"),
                "same start": [f"{s:,} / {n:,}" for s, n in zip(t["same_start"], t["jobs"], strict=True)],
            }
        )
        if policy.startswith("srtf"):
            view["Helios preemptions"] = t["helios_preemptions"].astype(int)
            view["schedlab preemptions"] = t["schedlab_preemptions"].astype(int)
        parts.append(f"**{policy}** (seconds)\n\n" + markdown(view))
    srtf = results[results["vc"] == "all"]
    srtf = srtf[srtf["policy"].str.startswith("srtf")]
    helios_row = srtf.iloc[0]
    net = helios_row["helios_jct_s"] - 1 - helios_row["helios_overhead_s"]
    costs = pd.DataFrame(
        {
            "run": ["Helios srtf", *("schedlab " + srtf["policy"])],
            "avg JCT": [helios_row["helios_jct_s"], *srtf["schedlab_jct_s"]],
            "preemptions": [int(helios_row["helios_preemptions"]), *srtf["schedlab_preemptions"].astype(int)],
        }
    )
    parts.append(
        "**srtf, all VCs: preemption cost**\n\n" + markdown(costs)
        + f"\n\nHelios' SRTF JCT includes 1 s per job (a job ends one step after its remaining time "
        f"reaches 0) and {helios_row['helios_overhead_s']:,.1f} s per job of checkpoint overhead "
        f"(7/30/60 s per preemption); without both its average JCT would be {net:,.0f} s."
    )  # fmt: skip
    parts.append("**Run time** (Helios: subprocess, wall and user+sys CPU of it and its workers; "
                 "schedlab: in-process load + simulate)\n\n" + markdown(speed, "{:,.2f}"))  # fmt: skip
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifact", type=Path, required=True, help="a checkout of HeliosArtifact")
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=None, help="offered load (default: the venus profile's)")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    parser.add_argument("--helios-processes", type=int, default=None,
                        help="Helios -j: worker processes, one VC each (default: its own, min(VCs, CPUs))")  # fmt: skip
    args = parser.parse_args()
    if not (args.artifact / "framework" / "QSSF Service" / "simulator.py").exists():
        raise SystemExit(f"{args.artifact} is not a HeliosArtifact checkout (no framework/QSSF Service/simulator.py)")
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="compare_helios_"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    artifact = args.artifact.resolve()
    trace_dir = write_inputs(workdir, args.jobs, args.seed, args.load)
    free = SimConfig(checkpoint_s=0.0, restore_s=0.0)
    tables, speed = [], []
    for policy in POLICIES:
        print(f"[{policy}] Helios ...", file=sys.stderr, flush=True)
        helios = run_helios(artifact, workdir, trace_dir, policy, args.helios_processes)
        runs = [run_schedlab(trace_dir, policy, free, policy)]
        if policy == "srtf":
            mimic = SimConfig(checkpoint_s=0.0, restore_s=MIMIC_RESTORE_S)
            runs.append(run_schedlab(trace_dir, policy, mimic, f"srtf+{MIMIC_RESTORE_S:g}s"))
        for ours in runs:
            tables.append(compare(helios, ours))
            n = len(ours.jobs)
            speed.append(
                {
                    "policy": ours.policy,
                    "Helios wall s": helios.wall_s,
                    "Helios CPU s": helios.cpu_s,
                    "schedlab wall s": ours.wall_s,
                    "schedlab CPU s": ours.cpu_s,
                    "ratio wall": helios.wall_s / ours.wall_s,
                    "ratio CPU": helios.cpu_s / ours.cpu_s,
                    "Helios jobs/s": n / helios.wall_s,
                    "schedlab jobs/s": n / ours.wall_s,
                }
            )
            print(f"[{ours.policy}] Helios {helios.wall_s:.1f} s, schedlab {ours.wall_s:.2f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
    results = pd.concat(tables, ignore_index=True)
    speed_table = pd.DataFrame(speed)
    results.to_csv(workdir / "results.csv", index=False)
    speed_table.to_csv(workdir / "speed.csv", index=False)
    text = report(results, speed_table, args)
    (workdir / "report.md").write_text(text + "\n")
    print(text)
    print(f"\nInputs, logs and tables: {workdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
