"""The simulator against the real Slurm on the same jobs: replay a sample of a shared Philly
trace on a fresh Slurm sandbox (16 fake 8-GPU nodes, accounting on), once per scheduler, and
simulate the same submissions with ``slurm`` / ``slurm-backfill``; write the agreement table
into docs/slurm.md between ``<!-- slurm-agreement:begin -->`` and ``<!-- slurm-agreement:end -->``.

Needs Slurm's Debian packages and root (see docs/slurm.md). About 5 minutes per scheduler:

    python benchmarks/slurm_agreement.py                   # sched/backfill and sched/builtin
    python benchmarks/slurm_agreement.py --schedulers backfill --no-doc
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import pandas as pd
from doc_tables import replace_block
from rich.console import Console

from schedlab.experiments.run import WorkloadSpec
from schedlab.slurm import replay as rp
from schedlab.slurm import sandbox
from schedlab.slurm.conf import SandboxSpec, read_slurm_conf

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / ".." / "shared" / "data" / "chronus" / "trace_job_Philly_MIX2.csv"


def one(scheduler: str, speedup: float, args: argparse.Namespace, console: Console) -> dict:
    """Start a sandbox with ``scheduler``, replay at ``speedup``, stop; the agreement and the
    sandbox's figures. With ``--reuse`` and a finished replay in place, only the simulation
    and the comparison are made again."""
    base = args.out / f"{scheduler}-k{speedup:g}"
    root, out = base / "sandbox", base / "replay"
    if args.reuse and (out / "replay.parquet").is_file() and (base / "sandbox.json").is_file():
        return _again(base, scheduler, speedup)
    shutil.rmtree(base, ignore_errors=True)
    out.mkdir(parents=True)
    spec = SandboxSpec(nodes=args.nodes, accounting=True, scheduler=scheduler, scheduler_parameters=args.sched_params,
                       port_base=sandbox.find_port_base(args.nodes))  # fmt: skip
    t0 = time.monotonic()
    box = sandbox.up(spec, root)
    startup = time.monotonic() - t0
    memory = sandbox.memory_mb(box.layout)
    try:
        workload = WorkloadSpec(trace=str(args.trace), fmt="philly", options={"time_unit": "min"},
                                window_s=(args.window[0] * 3600, args.window[1] * 3600), sample=args.sample,
                                seed=args.seed).build()  # fmt: skip
        result = rp.replay_and_record(box.layout, read_slurm_conf(box.layout.slurm_conf), workload,
                                      speedup=speedup, rule=rp.LimitRule.parse(args.time_limit), out_dir=out,
                                      console=console, seed=args.seed)  # fmt: skip
    finally:
        sandbox.down(root)
        box.supervisor.wait(timeout=30)
    facts = {"scheduler": scheduler, "speedup": speedup, "startup_s": startup, "memory_mb": sum(memory.values()),
             "wall_s": result["wall_s"], "seed": args.seed}  # fmt: skip
    (base / "sandbox.json").write_text(json.dumps(facts, indent=2))
    return {**facts, **result["agreement"], "release": release_gap(root)}


def _again(base: Path, scheduler: str, speedup: float) -> dict:
    """The agreement of a replay already made, simulated again with the current code."""
    from schedlab.slurm import agreement as ag

    facts = json.loads((base / "sandbox.json").read_text())
    record = pd.read_parquet(base / "replay" / "replay.parquet")
    conf = read_slurm_conf(base / "sandbox" / "slurm.conf")
    interval = ag.interval_of(conf)
    sim, name = ag.simulate(record, conf, seed=facts["seed"])
    observed, _ = ag.simulate(record, conf, durations="observed", seed=facts["seed"])
    return {**facts, "policy": name, **ag.compare(record, sim, interval_s=interval),
            "observed_runtimes": ag.compare(record, observed, interval_s=interval),
            "release": release_gap(base / "sandbox")}  # fmt: skip


def release_gap(root: Path) -> dict:
    """From slurmctld's log: seconds from a job's completion to the main scheduler's next start
    (the node is free only once its epilog completes), median and mean."""
    from datetime import datetime

    ends, gaps = None, []
    with open(root / "log" / "slurmctld.log", errors="replace") as f:
        for line in f:
            if "_job_complete: JobId=" in line and line.rstrip().endswith("done"):
                ends = datetime.strptime(line[1:24], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            elif "sched: Allocate JobId=" in line and ends is not None:
                gaps.append(datetime.strptime(line[1:24], "%Y-%m-%dT%H:%M:%S.%f").timestamp() - ends)
                ends = None
    arr = pd.Series(gaps, dtype=float)
    return {"median_s": float(arr.median()), "mean_s": float(arr.mean()), "count": int(arr.size)}


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    head = ("| Slurm (real) | speedup | replay | simulated with | mean JCT real / sim (s) | diff "
            "| mean queueing real / sim (s) | diff | start diff median / p90 (s) | within one interval |")  # fmt: skip
    lines = [head, "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        for label, a in ((f"`{r['policy']}`, the sleeps", r), (f"`{r['policy']}`, the run times Slurm logged",
                                                              r["observed_runtimes"])):  # fmt: skip
            lines.append(
                f"| sched/{r['scheduler']} | {r['speedup']:g} | {r['wall_s']:.0f} s | {label} "
                f"| {a['mean_jct_real_s']:.1f} / {a['mean_jct_sim_s']:.1f} | {a['mean_jct_rel_diff']:+.1%} "
                f"| {a['mean_queue_real_s']:.1f} / {a['mean_queue_sim_s']:.1f} | {a['mean_queue_rel_diff']:+.1%} "
                f"| {a['start_diff_median_abs_s']:.2f} / {a['start_diff_p90_abs_s']:.2f} "
                f"| {a['share_within_one_interval']:.1%} of {a['interval_s']:g} s |"
            )
    w = args.window
    facts = "; ".join(
        f"sched/{r['scheduler']} x{r['speedup']:g}: jobs held GPUs {r['mean_run_real_s'] - r['mean_run_sim_s']:+.2f} s "
        f"longer than their sleep, the next start came {r['release']['median_s']:.2f} s (median; mean "
        f"{r['release']['mean_s']:.2f} s) after a completion, start-up {r['startup_s']:.1f} s, "
        f"{r['memory_mb']:.0f} MB resident"
        for r in rows
    )
    setup = (f"Philly MIX2 (`{TRACE.name}`), jobs submitted {w[0]:g}-{w[1]:g} h, random sample of {args.sample} "
             f"(seed {args.seed}), time limits `{args.time_limit}`, {args.nodes} nodes x 8 GPUs with accounting, "
             f"SchedulerParameters `{args.sched_params or '(Slurm defaults)'}`. Times are real seconds, to the "
             "millisecond from slurmctld's log.")  # fmt: skip
    command = "python benchmarks/slurm_agreement.py " + " ".join(args.argv)
    return (f"{setup}\n\n" + "\n".join(lines) + f"\n\nMeasured in the same runs: {facts}.\n\n"
            f"Generated by `{command.strip()}`.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--window", type=float, nargs=2, default=(24.0, 48.0), metavar=("START_H", "END_H"))
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--time-limit", default="auto")
    parser.add_argument("--sched-params", default="")
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", nargs="+", default=["backfill:600", "backfill:1200", "builtin:1200"],
                        help="SCHEDULER:SPEEDUP pairs (backfill or builtin)")
    parser.add_argument("--reuse", action="store_true",
                        help="simulate and compare again the replays already in --out instead of replaying")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "slurm-agreement")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "slurm.md")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    console = Console(stderr=True)
    runs = [(r.split(":")[0], float(r.split(":")[1])) for r in args.runs]
    rows = [one(sched, k, args, console) for sched, k in runs]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "agreement.json").write_text(json.dumps(rows, indent=2))
    text = markdown(rows, args)
    print(text)
    if not args.no_doc:
        replace_block(args.doc, "<!-- slurm-agreement:begin -->", "<!-- slurm-agreement:end -->", text)
        print(f"wrote the table into {args.doc}")


if __name__ == "__main__":
    main()
