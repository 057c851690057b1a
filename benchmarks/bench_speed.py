"""Simulator speed: jobs per second, wall time and peak memory per (workload, policy).

Each measurement runs in a fresh Python process, so its peak RSS (``ru_maxrss`` at the end of
that process: imports, workload and simulation) belongs to that run alone. Prints a Markdown
table and, per policy, how jobs/s changes from the smallest to the largest synthetic size.

    python benchmarks/bench_speed.py                                  # 100k and 1M Venus-like jobs
    python benchmarks/bench_speed.py --jobs 10000 100000 --policies fifo,srtf
    python benchmarks/bench_speed.py --jobs --chronus ../shared/data/chronus/trace_job_Philly_MIX2.csv

``--src DIR`` imports schedlab from DIR (e.g. an older checkout's ``src``, for a before/after
table with the same script). "simulate CPU" is the CPU time of ``Simulation.run`` alone, which
other work on a shared machine inflates less than the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

CHRONUS_POLICIES = ("fifo", "sjf", "srtf", "tiresias")
# ChronusArtifact's run script simulates the Philly traces on 1 switch x 120 nodes x 8 GPUs.
CHRONUS_CLUSTER = "uniform:120x8"


@dataclass(frozen=True)
class Case:
    """One measurement: a synthetic profile of ``jobs`` jobs, or the trace at ``trace``."""

    policy: str
    cluster: str
    seed: int
    jobs: int = 0
    profile: str = ""
    trace: str = ""
    fmt: str = ""

    @property
    def label(self) -> str:
        return f"{self.fmt}: {os.path.basename(self.trace)}" if self.trace else f"synthetic {self.profile}"


def measure(case: Case) -> dict[str, Any]:
    """Build the workload and simulate it in this process; return timings and peak RSS."""
    import numpy as np

    from schedlab.cluster.presets import load_cluster
    from schedlab.policies.registry import make_policy
    from schedlab.sim.engine import Simulation
    from schedlab.workload.loaders import load_trace
    from schedlab.workload.synthetic import generate

    cluster = load_cluster(case.cluster)
    t0 = time.perf_counter()
    if case.trace:
        workload = load_trace(case.trace, case.fmt)
    else:
        workload = generate(case.profile, case.jobs, seed=case.seed, cluster_gpus=cluster.total_gpus)
    t1 = time.perf_counter()
    policy = make_policy(case.policy, rng=np.random.default_rng(case.seed))
    c1 = time.process_time()
    result = Simulation(workload, cluster, policy, seed=case.seed).run()
    t2 = time.perf_counter()
    c2 = time.process_time()
    jobs = result.jobs
    return {
        "jobs": len(jobs),
        "build_s": t1 - t0,
        "simulate_s": t2 - t1,
        "simulate_cpu_s": c2 - c1,
        "finished": int(jobs["finished"].sum()),
        "preemptions": int(jobs["preemptions"].sum()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_isolated(case: Case, timeout_s: float, src: str | None) -> dict[str, Any] | None:
    """:func:`measure` in a fresh interpreter (importing schedlab from ``src`` if given); None
    when it exceeds ``timeout_s`` (it is killed)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.path.abspath(src)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(asdict(case))]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"{case} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def core_of(src: str | None) -> str:
    """Whether the schedlab that ``run_isolated`` imports runs its core compiled (setup.py)."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)} if src else None
    code = "import schedlab; print(schedlab.compiled_core())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return "compiled" if out.stdout.strip() == "True" else "interpreted"


def table_row(case: Case, load: float, res: dict[str, Any] | None, timeout_s: float) -> str:
    """One Markdown row; a timed-out run shows only its time limit."""
    if res is None:
        cells = [case.label, f"{case.jobs:,}" if case.jobs else "?", case.policy, "-", f"> {timeout_s:,.0f}"]
        cells += ["-"] * 5
    else:
        cells = [
            case.label, f"{res['jobs']:,}", case.policy, f"{res['jobs'] / res['simulate_s']:,.0f}",
            f"{res['simulate_s']:,.1f}", f"{res['simulate_cpu_s']:,.1f}", f"{res['build_s']:,.1f}", f"{res['peak_rss_mb']:,.0f}",
            f"{res['finished']:,}", f"{res['preemptions']:,}",
        ]  # fmt: skip
    return "| " + " | ".join([*cells, f"{load:.2f}"]) + " |"


HEADER = (
    "| workload | jobs | policy | jobs/s | simulate (s) | simulate CPU (s) | generate/load (s) | peak RSS (MB) "
    "| finished | preemptions | load avg (1 min) |\n|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="*", default=[100_000, 1_000_000],
                        help="synthetic sizes (default 100000 1000000); give none to skip synthetic runs")
    parser.add_argument("--policies", default="fifo,sjf,tiresias", help="policies of the synthetic runs")
    parser.add_argument("--profile", default="venus", help="synthetic profile")
    parser.add_argument("--cluster", default="uniform-800x8", help="cluster of the synthetic runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chronus", metavar="PATH",
                        help=f"also time {', '.join(CHRONUS_POLICIES)} on this Chronus Philly trace (format philly)")
    parser.add_argument("--chronus-cluster", default=CHRONUS_CLUSTER, help="cluster of the Chronus runs")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is stopped")
    parser.add_argument("--src", help="import schedlab from this directory (a before/after comparison)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()  # fmt: skip
    if args.child:
        print(json.dumps(measure(Case(**json.loads(args.child)))))
        return

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    cases = [Case(p, args.cluster, args.seed, jobs=n, profile=args.profile) for n in args.jobs for p in policies]
    if args.chronus:
        cases += [Case(p, args.chronus_cluster, args.seed, trace=args.chronus, fmt="philly") for p in CHRONUS_POLICIES]
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}; "
          f"synthetic cluster {args.cluster}, Chronus cluster {args.chronus_cluster}, seed {args.seed}; "
          f"schedlab core {core_of(args.src)}\n")  # fmt: skip
    print(HEADER, flush=True)
    rates: dict[str, dict[int, float]] = {}
    for case in cases:
        load = os.getloadavg()[0]
        res = run_isolated(case, args.timeout, args.src)
        print(table_row(case, load, res, args.timeout), flush=True)
        if res is not None and not case.trace:
            rates.setdefault(case.policy, {})[case.jobs] = res["jobs"] / res["simulate_s"]
    print()
    for policy, by_size in rates.items():
        sizes = sorted(by_size)
        if len(sizes) > 1:
            steps = " -> ".join(f"{by_size[n]:,.0f} ({n:,})" for n in sizes)
            print(f"{policy}: jobs/s {steps}; {sizes[-1]:,} vs {sizes[0]:,} jobs: {by_size[sizes[-1]] / by_size[sizes[0]]:.2f}x")


if __name__ == "__main__":
    main()
