"""Compare schedlab's ``tiresias`` with Tiresias' own simulator (SymbioticLab/Tiresias) on one trace.

Both sides simulate the GPU jobs of a Tiresias/Chronus job CSV (default: the 14-day
Philly-derived ``trace_job_Philly_MIX2.csv``, times in minutes) on 1 switch x 120 nodes x 8 GPUs
(960 GPUs), the cluster ChronusArtifact simulates its Philly traces on. The simulator runs as a
Python 2.7 subprocess from a checkout you provide (``--simulator``; never part of this
repository), with its ``count`` placement and the schedules given (``dlas-gpu``: discretised
2D-LAS on GPU time, no promotion; ``dlas-gpu-8``: the same with PROMOTEKNOB 8). It reads times
in seconds, so the trace is written for it in seconds. schedlab runs in-process: once with its
defaults and, per schedule, with the simulator's settings matched (thresholds, knob, no pause
cost, placement by free-GPU count), plus ablations that undo one matched setting each.

Prints a Markdown report (also written to the work directory with the per-run CSV): mean JCT,
median JCT, mean queueing delay, preemptions, promotions and makespan of every run, the
difference of each schedlab run from the simulator's, and the simulator's CPU time.

    python benchmarks/compare_tiresias.py --simulator PATH/TO/Tiresias
    python benchmarks/compare_tiresias.py --simulator PATH/TO/Tiresias --workdir /tmp/ct --reuse

``--reuse`` takes the simulator's job logs (and the CPU time it recorded) from an earlier run in
the same work directory instead of running it again (it takes minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.cluster.presets import uniform
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.common.placers import Consolidate, FirstFit
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.job import RUNNING
from schedlab.workload.loaders import load_trace

DEFAULT_TRACE = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "chronus" / "trace_job_Philly_MIX2.csv"
NODES, GPUS_PER_NODE = 120, 8
# Tiresias' simulator (jobs.py): three queues, thresholds in GPU-seconds; its schedule names
# dlas-gpu-N set PROMOTEKNOB to N, plain dlas-gpu has no promotion.
SIM_THRESHOLDS = (3250.0, 7200.0)
SCHEDULES = {"dlas-gpu": float("inf"), "dlas-gpu-8": 8.0}
FREE = SimConfig(checkpoint_s=0.0, restore_s=0.0)


@dataclass
class Run:
    """Per-job outcome of one simulation (job_id, gpus, submit, start, end, queue, preemptions,
    promotions) and its CPU time."""

    label: str
    jobs: pd.DataFrame
    cpu_s: float
    settings: str = ""
    extra: dict = field(default_factory=dict)


class SubmitOrder(Tiresias):
    """Ablation: FIFO by submission inside a queue, running jobs not kept ahead (the order
    schedlab used before it followed the simulator's)."""

    def queue_key(self, ctx, job) -> tuple:
        return (self._las[job.idx].level, 0, job.submit)


class CountRounds(Tiresias):
    """Ablation: the simulator's round. Admit jobs in queue order while their GPUs fit the
    cluster's (placement by count), pause every running job that was not admitted and start
    every admitted one; a job that was not admitted never starts, even where GPUs are free."""

    def schedule(self, ctx) -> None:
        ranked = sorted(self.active.values(), key=lambda j: self.priority(ctx, j))
        free = ctx.cluster.total_gpus
        admitted = []
        for job in ranked:
            if job.num_gpus <= free:
                free -= job.num_gpus
                admitted.append(job)
        keep = {job.idx for job in admitted}
        for job in [j for j in ranked if j.state == RUNNING and j.idx not in keep]:
            self._pause(ctx, job)
        for job in admitted:
            if job.state != RUNNING:
                self._start(ctx, job, self.placer.place(ctx, job))
        self.settle_demoted(ctx)


class SimulatorEvents(CountRounds):
    """Ablation: :class:`CountRounds` at the simulator's instants. Queue changes are found only
    when a round runs: at an arrival or completion, or at the one instant the simulator
    predicts after each round, the earliest of ceil((threshold - t_J) / GPUs) over running jobs
    (t_J in seconds, not GPU-seconds: late for a multi-GPU job that has run) and of the
    promotion limits of waiting jobs. Demotions (one queue per round) and promotions are applied
    in arrival order before the round."""

    JUMP = "simulator-jump"
    jump_at = math.inf

    def _arm(self, ctx, job) -> None:
        self._las[job.idx].token += 1  # no timer of its own: queue changes wait for a round

    def paused(self, ctx, job) -> None:
        super().paused(ctx, job)
        self._las[job.idx].token += 1  # drops the promotion timer: promotions are found in rounds

    def on_timer(self, ctx, payload) -> bool:
        if payload == self.JUMP:
            return ctx.now == self.jump_at  # an earlier prediction, replaced since, is stale
        return super().on_timer(ctx, payload)

    def schedule(self, ctx) -> None:
        knob = self.promote_knob
        for job in sorted(self.active.values(), key=lambda j: j.idx):
            st = self._las[job.idx]
            if job.state == RUNNING:
                level = min(self._level(ctx, job), st.level + 1)  # one queue per round
                if level != st.level:
                    self._enter(st, level)
                    st.ahead = False
                    self._demoted_running.append(job)
            elif st.level > 0 and st.paused_at == st.paused_at and math.isfinite(knob):
                if st.waited_s + ctx.now - st.paused_at >= knob * (ctx.executed(job) - st.executed_offset):
                    self._promote(ctx, job)
        super().schedule(ctx)
        jump = math.inf
        for job in self.active.values():
            st = self._las[job.idx]
            executed = ctx.executed(job) - st.executed_offset
            if job.state == RUNNING and st.level < len(self.thresholds):
                jump = min(jump, ctx.now + math.ceil((self.thresholds[st.level] - executed) / job.num_gpus))
            elif job.state != RUNNING and st.level > 0 and st.paused_at == st.paused_at and math.isfinite(knob):
                left = knob * executed - (st.waited_s + ctx.now - st.paused_at)
                if left > 0:
                    jump = min(jump, ctx.now + int(left))
        self.jump_at = jump
        if jump < math.inf:
            ctx.set_timer(jump, self.JUMP)


def write_inputs(trace: Path, unit_s: float, workdir: Path) -> tuple[Path, Path, Path]:
    """The simulator's inputs: the trace's GPU jobs in whole seconds, the cluster spec, and a
    stand-in ``numpy`` module (the simulator imports numpy but uses it only in commented-out code)."""
    raw = pd.read_csv(trace)
    raw = raw[raw["num_gpu"] > 0].copy()
    for col in ("submit_time", "duration", "interval"):
        seconds = raw[col] * unit_s
        if not np.allclose(seconds, np.rint(seconds)):
            raise SystemExit(f"{trace}: {col} in seconds is not whole; the simulator needs integers")
        raw[col] = np.rint(seconds).astype(np.int64)
    sim_trace = workdir / "trace_seconds.csv"
    raw[["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"]].to_csv(sim_trace, index=False)
    spec = workdir / f"n{NODES}g{GPUS_PER_NODE}.csv"
    spec.write_text(f"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,{NODES},{GPUS_PER_NODE},128,256\n")
    shim = workdir / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "numpy.py").write_text('"""Stand-in: imported, not used."""\n')
    return sim_trace, spec, shim


def check_python2(python: str) -> None:
    """Stop with a clear message unless ``python`` runs Python 2 (the simulator is Python 2 code)."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.version_info[0])"], capture_output=True, text=True,
                             env=os.environ | {"PYENV_VERSION": "2.7.18"}, check=False).stdout.strip()  # fmt: skip
    except FileNotFoundError:
        out = "not found"
    if out != "2":
        raise SystemExit(f"--python {python}: the Tiresias simulator needs Python 2.7 ({python} gives: {out or 'no answer'})")


def checked_arguments(args: argparse.Namespace, known: Collection[str]) -> tuple[Path, list[str]]:
    """The simulator checkout and the schedules asked for, or a clear stop: not a Tiresias
    checkout, no Python 2 to run it (unless ``--reuse``), or a schedule not in ``known``."""
    checkout = args.simulator.resolve()
    if not (checkout / "simulator" / "run_sim.py").exists():
        raise SystemExit(f"{checkout} is not a Tiresias checkout (no simulator/run_sim.py)")
    if not args.reuse:
        check_python2(args.python)
    schedules = [s.strip() for s in args.schedules.split(",") if s.strip()]
    unknown = [s for s in schedules if s not in known]
    if unknown:
        raise SystemExit(f"unknown schedule {unknown[0]}; choose of {', '.join(known)}")
    return checkout, schedules


def run_simulator(checkout: Path, workdir: Path, schedule: str, reuse: bool, python: list[str]) -> Run:
    """Run (or with ``reuse`` read back) one schedule of Tiresias' simulator; its CPU time is the
    subprocess' user + system time."""
    sim_trace, spec, shim = workdir / "trace_seconds.csv", workdir / f"n{NODES}g{GPUS_PER_NODE}.csv", workdir / "shim"
    log_dir = workdir / f"sim_{schedule}"
    timing = workdir / f"sim_{schedule}.json"
    if not (reuse and timing.exists()):
        cmd = [*python, "run_sim.py", f"--cluster_spec={spec}", "--scheme=count", f"--trace_file={sim_trace}",
               f"--schedule={schedule}", f"--log_path={log_dir}"]  # fmt: skip
        env = os.environ | {"PYTHONPATH": str(shim), "PYENV_VERSION": "2.7.18"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall0 = time.perf_counter()
        with open(workdir / f"sim_{schedule}.out", "wb") as out:
            proc = subprocess.run(cmd, cwd=checkout / "simulator", env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
        wall = time.perf_counter() - wall0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(f"the simulator ({schedule}) exited {proc.returncode}; see {workdir / f'sim_{schedule}.out'}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        timing.write_text(json.dumps({"cpu_s": cpu, "wall_s": wall, "peak_rss_mb": after.ru_maxrss / 1024}))
    cpu = json.loads(timing.read_text())["cpu_s"]
    raw = pd.read_csv(log_dir / "job.csv")
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_id"].astype(str),
            "gpus": raw["num_gpu"],
            "submit": raw["submit_time"].astype(float),
            "start": raw["start_time"].astype(float),
            "end": raw["end_time"].astype(float),
            "queue": raw["pending_time"].astype(float),
            "preemptions": raw["preempt"],
            "promotions": raw["promote"],
        }
    )
    return Run(f"simulator {schedule}", jobs, cpu, "its own (count placement, no pause cost)")


def run_schedlab(workload, label: str, policy: Tiresias, config: SimConfig, settings: str) -> Run:
    """Simulate one configuration in-process on 120 x 8 GPUs."""
    cpu0 = time.process_time()
    sim = Simulation(workload, uniform(NODES, GPUS_PER_NODE), policy, config=config, seed=0)
    out = sim.run().jobs
    cpu = time.process_time() - cpu0
    if not out["finished"].all():
        raise SystemExit(f"schedlab {label}: {int((~out['finished']).sum())} jobs did not finish")
    jobs = pd.DataFrame(
        {
            "job_id": out["job_id"].astype(str),
            "gpus": out["num_gpus"],
            "submit": out["submit_s"],
            "start": out["first_start_s"],
            "end": out["end_s"],
            "queue": out["queue_s"],
            "preemptions": out["preemptions"],
        }
    )
    return Run(f"schedlab {label}", jobs, cpu, settings)


def summary(run: Run, reference: Run | None) -> dict:
    """One report row: the run's averages and, against ``reference``, the differences."""
    j = run.jobs
    jct = j["end"] - j["submit"]
    row = {
        "run": run.label,
        "settings": run.settings,
        "mean JCT (s)": jct.mean(),
        "median JCT (s)": jct.median(),
        "mean queueing (s)": j["queue"].mean(),
        "preemptions": int(j["preemptions"].sum()),
        "makespan (h)": (j["end"].max() - j["submit"].min()) / 3600,
        "CPU (s)": run.cpu_s,
    }
    if reference is not None:
        ref_jct = (reference.jobs["end"] - reference.jobs["submit"]).mean()
        row["JCT vs simulator"] = f"{100 * (jct.mean() - ref_jct) / ref_jct:+.1f} %"
        both = reference.jobs.merge(j, on="job_id", suffixes=("_r", "_s"), validate="one_to_one")
        if len(both) != len(j) or len(both) != len(reference.jobs):
            raise SystemExit(f"{run.label}: the two sides simulated different jobs")
        offset = (both["submit_r"] - both["submit_s"]).median()  # schedlab's trace starts at 0
        same = np.isclose(both["start_r"], both["start_s"] + offset)
        row["same first start"] = f"{int(same.sum()):,} / {len(both):,}"
    return row


def markdown(table: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table."""
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:,.1f}" if abs(v) < 100 else f"{v:,.0f}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulator", type=Path, required=True, help="a checkout of SymbioticLab/Tiresias")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--time-unit", default="min", choices=("s", "min"), help="unit of the trace's times (Chronus: min)")
    parser.add_argument("--schedules", default=",".join(SCHEDULES), help=f"simulator schedules, of {', '.join(SCHEDULES)}")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    parser.add_argument("--reuse", action="store_true", help="reuse the simulator's logs from an earlier run in --workdir")
    parser.add_argument("--python", default="python2.7",
                        help="the Python 2.7 command the simulator runs with (with PYENV_VERSION=2.7.18 for pyenv)")  # fmt: skip
    args = parser.parse_args()
    checkout, schedules = checked_arguments(args, SCHEDULES)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="compare_tiresias_"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    unit_s = {"s": 1.0, "min": 60.0}[args.time_unit]
    write_inputs(args.trace, unit_s, workdir)
    workload = load_trace(args.trace, "tiresias", time_unit=args.time_unit)

    parts = [f"Trace: {args.trace.name} ({len(workload.jobs):,} GPU jobs, times in {args.time_unit}), "
             f"{NODES} x {GPUS_PER_NODE} GPUs."]  # fmt: skip
    rows = []
    ours_default = run_schedlab(workload, "defaults", Tiresias(Consolidate()), SimConfig(),
                                "defaults: consolidate, 10 + 30 s pause cost")  # fmt: skip
    for schedule in schedules:
        knob = SCHEDULES[schedule]
        print(f"[{schedule}] simulator ...", file=sys.stderr, flush=True)
        sim = run_simulator(checkout, workdir, schedule, args.reuse, [args.python])
        matched = {"thresholds_gpu_s": SIM_THRESHOLDS, "promote_knob": knob}
        runs = [
            ours_default,
            run_schedlab(workload, "matched", Tiresias(FirstFit(), **matched), FREE, "matched"),
            run_schedlab(workload, "matched, submit order", SubmitOrder(FirstFit(), **matched), FREE,
                         "matched but FIFO by submission, running jobs not kept ahead"),
            run_schedlab(workload, "matched, consolidate", Tiresias(Consolidate(), **matched), FREE,
                         "matched but consolidated placement"),
            run_schedlab(workload, "matched, pause cost", Tiresias(FirstFit(), **matched), SimConfig(),
                         "matched but 10 + 30 s per pause"),
            run_schedlab(workload, "simulator's rounds", CountRounds(FirstFit(), **matched), FREE,
                         "matched, rounds as the simulator's"),
            run_schedlab(workload, "simulator's rounds and instants", SimulatorEvents(FirstFit(), **matched), FREE,
                         "matched, rounds and queue changes at the simulator's instants"),
        ]  # fmt: skip
        print(f"[{schedule}] simulator CPU {sim.cpu_s:.1f} s", file=sys.stderr, flush=True)
        rows.append(summary(sim, None) | {"schedule": schedule})
        rows += [summary(run, sim) | {"schedule": schedule} for run in runs]
        promotions = int(sim.jobs["promotions"].sum())
        parts.append(f"Simulator `{schedule}`: {promotions:,} promotions; CPU {sim.cpu_s:,.1f} s.")
    table = pd.DataFrame(rows)
    table.to_csv(workdir / "summary.csv", index=False)
    columns = ["schedule", "run", "mean JCT (s)", "JCT vs simulator", "median JCT (s)", "mean queueing (s)",
               "preemptions", "makespan (h)", "same first start", "CPU (s)"]  # fmt: skip
    view = table[columns].fillna("")
    parts.append(markdown(view))
    text = "\n\n".join(parts)
    (workdir / "report.md").write_text(text + "\n")
    print(text)
    print(f"\nInputs, logs and tables: {workdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
