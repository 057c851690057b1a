"""How simulation cost grows with the number of jobs: CPU time, peak memory and jobs/s per
(policy, load, size), and the fitted exponent b of CPU ~ jobs^b (least squares on log-log).
"rounds" counts the scheduling rounds (one per instant at which something changed); CPU per
round, and the exponent of CPU ~ rounds^b, separate what a round costs from how many rounds
a policy's decisions make (preemptions add rounds; a saturated workload makes more of them).

Each run is a fresh Python process (its own peak RSS) under a CPU-time limit (``--timeout``,
and a wall-time one for a starved process); CPU time is that
process's own (``resource.getrusage``), so other work on a shared machine does not inflate it.
"simulate CPU" is ``Simulation.run`` alone; "process CPU" adds the imports and the workload.
A policy that times out at one size is not tried at larger sizes of that load.

    python benchmarks/bench_scaling.py                                   # every policy, 30k..1M, load 0.8 and 1.1
    python benchmarks/bench_scaling.py --policies fifo,srtf,tiresias --jobs 30000 100000 300000
    python benchmarks/bench_scaling.py --jobs --philly ../shared/data/chronus/trace_job_Philly_MIX2.csv

``--philly PATH`` also times the policies on that Philly-format trace (loaded as
``bench_speed.py`` loads it: format ``philly``, times as written) on ``uniform:120x8``.
``--src DIR`` imports schedlab from DIR (e.g. an older checkout's ``src``, for a before/after
table with the same script).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
from typing import Any

from bench_speed import core_of

SIZES = (30_000, 100_000, 300_000, 1_000_000)
LOADS = (0.8, 1.1)
PHILLY_CLUSTER = "uniform:120x8"


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(case: dict[str, Any]) -> dict[str, Any]:
    """Build the workload and simulate it in this process."""
    import numpy as np

    from schedlab.cluster.presets import load_cluster
    from schedlab.policies.registry import PolicyOptions, make_policy
    from schedlab.sim.engine import Simulation
    from schedlab.workload.loaders import load_trace
    from schedlab.workload.schema import SUBMITTED_COLUMNS
    from schedlab.workload.synthetic import generate

    cluster = load_cluster(case["cluster"])
    if case.get("trace"):
        workload = load_trace(case["trace"], "philly")
    else:
        workload = generate(case["profile"], case["jobs"], seed=case["seed"], cluster_gpus=cluster.total_gpus,
                            load=case["load"])  # fmt: skip
    options = PolicyOptions(seed=case["seed"], submissions=workload.jobs.loc[:, list(SUBMITTED_COLUMNS)])
    policy = make_policy(case["policy"], rng=np.random.default_rng(case["seed"]), options=options)
    rounds = 0
    schedule = policy.schedule

    def counted(ctx) -> None:  # the engine calls this once per instant at which something changed
        nonlocal rounds
        rounds += 1
        schedule(ctx)

    policy.schedule = counted  # type: ignore[method-assign]
    c0 = cpu_s()
    result = Simulation(workload, cluster, policy, seed=case["seed"]).run()
    c1 = cpu_s()
    jobs = result.jobs
    return {
        "jobs": len(jobs),
        "sim_cpu_s": c1 - c0,
        "cpu_s": c1,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "finished": int(jobs["finished"].sum()),
        "preemptions": int(jobs["preemptions"].sum()),
        "rounds": rounds,
        "decisions": decision_stats(policy.report(jobs)),
    }


def decision_stats(report: dict[str, Any]) -> dict[str, float] | None:
    """Decisions and their time from a policy's report: a round-based policy's (count, mean and
    maximum wall seconds) or Pollux's (count and total CPU seconds); None for other policies."""
    if "decision_s_mean" in report:
        return {"count": report["rounds"], "mean_s": report["decision_s_mean"], "max_s": report["decision_s_max"]}
    block = report.get("pollux")
    if block:
        n = block["rounds"]
        return {"count": n, "mean_s": block["decision_cpu_s"] / n if n else 0.0, "max_s": math.nan}
    return None


def run_isolated(case: dict[str, Any], timeout_s: float, src: str | None, wall_s: float) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter; ``{"timeout": True}`` past ``timeout_s`` of CPU time
    (or ``wall_s`` of wall time, for a process starved of CPU), ``{"error": ...}``
    when the run fails (e.g. a policy that needs another cluster or workload)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.path.abspath(src)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(case)]
    limit = int(math.ceil(timeout_s))

    def cpu_limit() -> None:  # the child is stopped after ``timeout_s`` of its own CPU time
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=wall_s, check=False, env=env,
                              preexec_fn=cpu_limit)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"timeout": True}
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"timeout": True}
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(CPU) on log(size) (jobs, or scheduling rounds); None with fewer
    than two sizes."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(c, 1e-3)) for _, c in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def row(label: str, load: str, policy: str, jobs: int | None, res: dict[str, Any], timeout_s: float) -> str:
    if res.get("timeout"):
        cells = [label, load, policy, f"{jobs:,}" if jobs else "-", f"> {timeout_s:,.0f}"] + ["-"] * 6
    elif "error" in res:
        cells = [label, load, policy, f"{jobs:,}" if jobs else "-", "error"] + ["-"] * 5 + [res["error"][:80]]
    else:
        cells = [label, load, policy, f"{res['jobs']:,}", f"{res['sim_cpu_s']:,.1f}", f"{res['cpu_s']:,.1f}",
                 f"{res['jobs'] / max(res['sim_cpu_s'], 1e-9):,.0f}", f"{res['peak_mb']:,.0f}",
                 f"{res['rounds']:,}", f"{1e6 * res['sim_cpu_s'] / max(res['rounds'], 1):,.0f}",
                 f"{res['preemptions']:,}"]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


HEADER = ("| workload | load | policy | jobs | simulate CPU (s) | process CPU (s) | jobs/s (simulate CPU) "
          "| peak RSS (MB) | rounds | CPU per round (us) | preemptions |\n"
          "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="*", default=list(SIZES), help="synthetic sizes (none: skip them)")
    parser.add_argument("--loads", type=float, nargs="+", default=list(LOADS), help="offered loads")
    parser.add_argument("--policies", default="", help="comma-separated (default: every registered policy)")
    parser.add_argument("--profile", default="venus")
    parser.add_argument("--cluster", default="uniform-800x8", help="cluster of the synthetic runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--philly", metavar="PATH", help="also time the policies on this Philly-format trace")
    parser.add_argument("--philly-policies", default="fifo,sjf,srtf,srsf,tiresias")
    parser.add_argument("--timeout", type=float, default=600.0, help="CPU seconds before a run is stopped")
    parser.add_argument("--wall-timeout", type=float, default=3600.0, help="wall seconds before a run is stopped")
    parser.add_argument("--src", help="import schedlab from this directory (a before/after comparison)")
    parser.add_argument("--json", help="append every result as a JSON line to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(json.loads(args.child))))
        return
    if args.policies:
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    else:
        if args.src:
            sys.path.insert(0, os.path.abspath(args.src))
        from schedlab.policies.registry import policy_names

        policies = policy_names()
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs; cluster {args.cluster}, "
          f"profile {args.profile}, seed {args.seed}, timeout {args.timeout:.0f} s; schedlab core {core_of(args.src)}\n")  # fmt: skip
    print(HEADER, flush=True)
    log = open(args.json, "a") if args.json else None  # noqa: SIM115
    fits: list[tuple[str, float, float | None, float | None]] = []
    for load in args.loads:
        for policy in policies:
            points: list[tuple[int, float]] = []
            per_round: list[tuple[int, float]] = []
            for n in sorted(args.jobs):
                case = {"policy": policy, "cluster": args.cluster, "seed": args.seed, "jobs": n,
                        "profile": args.profile, "load": load}  # fmt: skip
                res = run_isolated(case, args.timeout, args.src, args.wall_timeout)
                print(row(f"synthetic {args.profile}", f"{load:.1f}", policy, n, res, args.timeout), flush=True)
                if log:
                    log.write(json.dumps({**case, **res}) + "\n")
                    log.flush()
                if "sim_cpu_s" not in res:
                    break
                points.append((n, res["sim_cpu_s"]))
                per_round.append((res["rounds"], res["sim_cpu_s"]))
            if points:
                fits.append((policy, load, exponent(points), exponent(per_round)))
    if args.philly:
        for policy in [p for p in args.philly_policies.split(",") if p]:
            case = {"policy": policy, "cluster": PHILLY_CLUSTER, "seed": args.seed, "trace": args.philly}
            res = run_isolated(case, args.timeout, args.src, args.wall_timeout)
            print(row(f"philly {os.path.basename(args.philly)}", "-", policy, None, res, args.timeout), flush=True)
            if log:
                log.write(json.dumps({**case, **res}) + "\n")
                log.flush()
    if log:
        log.close()
    if fits:
        print("\n| policy | load | exponent (CPU ~ jobs^b) | exponent (CPU ~ rounds^b) |\n|---|--:|--:|--:|")
        for policy, load, b, c in fits:
            print(f"| {policy} | {load:.1f} | {'-' if b is None else f'{b:.2f}'} | {'-' if c is None else f'{c:.2f}'} |")


if __name__ == "__main__":
    main()
