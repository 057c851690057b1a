"""What one scheduling decision costs the round-based policies (Gavel, Hadar, HadarE, Pollux) at
scale: per policy, the simulation CPU, the decisions taken and their mean (and, where recorded,
maximum) time, on Venus-like jobs at load 0.8 on ``uniform-800x8`` (6,400 GPUs), as
``bench_scaling.py`` runs them (a fresh process each, under a CPU-time limit).

Hadar, HadarE and Gavel record each decision's wall time (``decision_s_mean``, ``decision_s_max``
in the run summary); Pollux records the CPU time of all its decisions, so only its mean is given.

    python benchmarks/round_decisions.py                          # hadar, hadare, pollux, gavel at 30k
    python benchmarks/round_decisions.py --jobs 3000 --policies hadare --src OTHER_CHECKOUT/src
"""

from __future__ import annotations

import argparse
import math
import os
import platform

from bench_scaling import run_isolated
from bench_speed import core_of

POLICIES = "hadar,hadare,pollux,gavel"


def row(policy: str, jobs: int, res: dict, timeout_s: float) -> str:
    """One Markdown row of the table."""
    if res.get("timeout"):
        return f"| {policy} | {jobs:,} | > {timeout_s:,.0f} | - | - | - | - |"
    if "error" in res:
        return f"| {policy} | {jobs:,} | error: {res['error'][:80]} | - | - | - | - |"
    d = res["decisions"]
    share = d["count"] * d["mean_s"] / res["sim_cpu_s"] if res["sim_cpu_s"] else math.nan
    biggest = "-" if math.isnan(d["max_s"]) else f"{d['max_s']:.3f}"
    return (f"| {policy} | {res['jobs']:,} | {res['sim_cpu_s']:,.1f} | {d['count']:,} | {d['mean_s'] * 1000:,.1f} | "
            f"{biggest} | {share:.0%} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", default=POLICIES, help=f"comma-separated (default {POLICIES})")
    parser.add_argument("--jobs", type=int, default=30_000, help="jobs in the workload")
    parser.add_argument("--load", type=float, default=0.8, help="offered load")
    parser.add_argument("--cluster", default="uniform-800x8")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900.0, help="CPU seconds a run may take")
    parser.add_argument("--src", help="import schedlab from this directory (a before/after comparison)")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs; {args.jobs:,} Venus-like jobs at load "
          f"{args.load} on {args.cluster}, seed {args.seed}; schedlab core {core_of(args.src)}; "
          f"load average {os.getloadavg()[0]:.2f}\n")  # fmt: skip
    print("| policy | jobs | simulate CPU (s) | decisions | mean decision (ms) | longest decision (s) "
          "| decisions' share of CPU |\n|---|--:|--:|--:|--:|--:|--:|")  # fmt: skip
    for policy in args.policies.split(","):
        case = {"policy": policy, "cluster": args.cluster, "seed": args.seed, "jobs": args.jobs,
                "profile": "venus", "load": args.load}  # fmt: skip
        res = run_isolated(case, args.timeout, args.src, wall_s=3 * args.timeout)
        print(row(policy, args.jobs, res, args.timeout), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
