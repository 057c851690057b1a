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
import re
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console

from schedlab.experiments.run import WorkloadSpec
from schedlab.slurm import replay as rp
from schedlab.slurm import sandbox
from schedlab.slurm.conf import SandboxSpec, read_slurm_conf

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / ".." / "shared" / "data" / "chronus" / "trace_job_Philly_MIX2.csv"
MARK = re.compile(r"(<!-- slurm-agreement:begin -->\n).*?(<!-- slurm-agreement:end -->)", re.S)


def one(scheduler: str, args: argparse.Namespace, console: Console) -> dict:
    """Start a sandbox with ``scheduler``, replay, stop; the agreement and the sandbox's figures."""
    root = args.out / f"sandbox-{scheduler}"
    shutil.rmtree(root, ignore_errors=True)
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
        out = args.out / f"replay-{scheduler}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        result = rp.replay_and_record(box.layout, read_slurm_conf(box.layout.slurm_conf), workload,
                                      speedup=args.speedup, rule=rp.LimitRule.parse(args.time_limit), out_dir=out,
                                      console=console, seed=args.seed)  # fmt: skip
    finally:
        sandbox.down(root)
        box.supervisor.wait(timeout=30)
    return {"scheduler": scheduler, "startup_s": startup, "memory_mb": sum(memory.values()),
            "slurmd_mb": [v for k, v in memory.items() if " slurmd " in f" {k.split(' ', 1)[1]} "],
            "wall_s": result["wall_s"], **result["agreement"]}  # fmt: skip


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    head = ("| Slurm (real) | simulated with | jobs | mean JCT real / sim (s) | diff | mean queueing real / sim (s) "
            "| diff | start diff median / p90 (s) | in intervals | within one interval |")  # fmt: skip
    lines = [head, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        for label, a in ((f"`{r['policy']}`, the sleeps", r), (f"`{r['policy']}`, the run times Slurm recorded",
                                                              r["observed_runtimes"])):  # fmt: skip
            lines.append(
                f"| sched/{r['scheduler']} | {label} | {a['jobs_compared']} "
                f"| {a['mean_jct_real_s']:.1f} / {a['mean_jct_sim_s']:.1f} | {a['mean_jct_rel_diff']:+.1%} "
                f"| {a['mean_queue_real_s']:.1f} / {a['mean_queue_sim_s']:.1f} | {a['mean_queue_rel_diff']:+.1%} "
                f"| {a['start_diff_median_abs_s']:.1f} / {a['start_diff_p90_abs_s']:.1f} "
                f"| {a['start_diff_median_abs_intervals']:.2f} / {a['start_diff_p90_abs_intervals']:.2f} "
                f"(of {a['interval_s']:g} s) | {a['share_within_one_interval']:.0%} |"
            )
    w = args.window
    overhead = ", ".join(f"sched/{r['scheduler']} {r['mean_run_real_s'] - r['mean_run_sim_s']:+.2f} s" for r in rows)
    setup = (f"Philly MIX2 (`{TRACE.name}`), jobs submitted {w[0]:g}-{w[1]:g} h, random sample of {args.sample} "
             f"(seed {args.seed}), speedup {args.speedup:g}, time limits `{args.time_limit}`, "
             f"{args.nodes} nodes x 8 GPUs, SchedulerParameters `{args.sched_params or '(Slurm defaults)'}`. "
             "Times are real seconds. Replay wall time: "
             + ", ".join(f"sched/{r['scheduler']} {r['wall_s']:.0f} s" for r in rows)
             + ". Sandbox start-up (accounting on): "
             + ", ".join(f"{r['startup_s']:.1f} s / {r['memory_mb']:.0f} MB resident" for r in rows)
             + f". A job held its GPUs longer than its sleep by, on average: {overhead}.")  # fmt: skip
    command = "python benchmarks/slurm_agreement.py " + " ".join(args.argv)
    return f"{setup}\n\n" + "\n".join(lines) + f"\n\nGenerated by `{command.strip()}`.\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--window", type=float, nargs=2, default=(24.0, 48.0), metavar=("START_H", "END_H"))
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--speedup", type=float, default=1200.0)
    parser.add_argument("--time-limit", default="auto")
    parser.add_argument("--sched-params", default="")
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedulers", nargs="+", default=["backfill", "builtin"])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "slurm-agreement")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "slurm.md")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    console = Console(stderr=True)
    rows = [one(s, args, console) for s in args.schedulers]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "agreement.json").write_text(json.dumps(rows, indent=2))
    text = markdown(rows, args)
    print(text)
    if not args.no_doc:
        page = args.doc.read_text()
        if not MARK.search(page):
            raise SystemExit(f"{args.doc}: no <!-- slurm-agreement:begin --> ... <!-- slurm-agreement:end --> block")
        args.doc.write_text(MARK.sub(lambda m: m.group(1) + "\n" + text + "\n" + m.group(2), page))
        print(f"wrote the table into {args.doc}")


if __name__ == "__main__":
    main()
