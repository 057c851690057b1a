"""Hadar §IV / §VI reproduction: writes the tables of docs/hadar.md.

Runs the policies of ``experiments/specs/hadar.toml`` (the paper's comparison with its baseline
settings and 10 s checkpoint-restart, plus the ablations) on 480 jobs at time 0 on the
``hadar-60`` cluster, for several seeds and both readings of §IV-A (profiles ``hadar`` and
``hadar-uniform``, see :mod:`schedlab.workload.hadar`); puts the fluid lower bound on the
makespan (:func:`schedlab.sim.bounds.fluid_makespan_bound`) beside every total time duration;
and measures the first round's decision time of hadar and gavel for 32 ... 2048 jobs (Fig. 5).

    PYTHONPATH=src python benchmarks/hadar_eval.py            # prints the tables
    PYTHONPATH=src python benchmarks/hadar_eval.py --write    # and rewrites them in docs/hadar.md
    PYTHONPATH=src python benchmarks/hadar_eval.py --diagnose # Hadar's refused jobs at idle GPUs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from doc_tables import replace_block

from schedlab.cluster.presets import load_cluster
from schedlab.experiments.spec import load_spec
from schedlab.metrics import summarize
from schedlab.policies.registry import make_policy
from schedlab.sim.bounds import fluid_makespan_bound
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.throughputs import GAVEL_BUILTIN
from schedlab.workload.synthetic import generate

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "hadar.md"
SPEC = load_spec(ROOT / "experiments" / "specs" / "hadar.toml")
# (label, registered policy, parameters) of every run, and the engine settings: the spec's.
RUNS = tuple({c.keys["policy"]: (c.keys["policy"], c.run.policy, c.run.params) for c in SPEC.cells}.values())
CONFIG = SPEC.cells[0].run.config
PROFILES = ("hadar", "hadar-uniform")
# Hadar §IV-B (Fig. 4): total time duration in hours (Gavel and Tiresias from Hadar's speedups).
PAPER_TTD_H = {"hadar": 40.0, "gavel": 40.0 * 1.21, "tiresias": 40.0 * 1.35, "yarn-cs": 68.0}
MAIN = ("hadar", "hadare", "gavel", "tiresias", "yarn-cs")


def run_seed(profile: str, seed: int) -> dict:
    """Every run of the spec on one workload, and the workload's bounds."""
    cluster = load_cluster("hadar-60")
    work = generate(profile, 480, seed=seed)
    out: dict = {"gpu_hours": work.meta["gpu_hours"],
                 "bound_h": fluid_makespan_bound(work, cluster, GAVEL_BUILTIN) / 3600,
                 "area_h": fluid_makespan_bound(work, cluster, GAVEL_BUILTIN, per_job=False) / 3600,
                 "runs": {}}  # fmt: skip
    for label, registered, params in RUNS:
        policy = make_policy(registered, rng=np.random.default_rng(seed), params=params)
        t0 = time.perf_counter()
        res = Simulation(work, cluster, policy, config=CONFIG, seed=seed).run()
        s = summarize(res.jobs, res.timeseries, policy=registered)
        jobs = res.jobs
        last = jobs.loc[jobs["end_s"].idxmax()]
        out["runs"][label] = {
            "ttd_h": s["makespan_s"] / 3600,
            "jct_h": s["jct_mean_s"] / 3600,
            "median_done_h": float(np.median(jobs["end_s"])) / 3600,
            "util": s["gpu_alloc_rate_run"],
            "preemptions": int(jobs["preemptions"].sum()),
            "last_v100_h": float(last["duration_s"]) / 3600,  # the last job's run time on a V100
            "last_start_h": float(last["first_start_s"]) / 3600,
            "last_run_h": float(last["end_s"] - last["first_start_s"]) / 3600,
            "wall_s": time.perf_counter() - t0,
            **{k: v for k, v in policy.report(jobs).items() if k.startswith("decision")},
        }
    return out


def decision_times(counts: list[int], seed: int) -> dict[int, dict[str, float]]:
    """Wall seconds of the first round's decision (all jobs queued at time 0)."""
    cluster = load_cluster("hadar-60")
    out: dict[int, dict[str, float]] = {}
    for n in counts:
        work = generate("hadar", n, seed=seed)
        row = {}
        for name in ("hadar", "gavel"):
            policy = make_policy(name, rng=np.random.default_rng(seed))
            Simulation(work, cluster, policy, config=SimConfig(horizon_s=1.0), seed=seed).run()
            row[name] = policy.decision_s[0]
        out[n] = row
    return out


def seed_table(results: dict[int, dict]) -> list[str]:
    """TTD by seed, each beside the workload's bounds."""
    labels = [label for label, _, _ in RUNS]
    lines = ["| seed | V100 GPU-hours | fluid bound (h) | area bound (h) | " + " | ".join(labels) + " |",
             "|---:|---:|---:|---:|" + "---:|" * len(labels)]  # fmt: skip
    for seed, r in results.items():
        ttd = " | ".join(f"{r['runs'][label]['ttd_h']:.1f}" for label in labels)
        lines.append(f"| {seed} | {r['gpu_hours']:,.0f} | {r['bound_h']:.1f} | {r['area_h']:.1f} | {ttd} |")
    return lines


def summary_table(results: dict[int, dict]) -> list[str]:
    """Means over the seeds beside the paper's figures."""
    def mean(label: str, key: str) -> float:
        return float(np.mean([r["runs"][label][key] for r in results.values()]))

    bound = float(np.mean([r["bound_h"] for r in results.values()]))
    area = float(np.mean([r["area_h"] for r in results.values()]))
    h = mean("hadar", "ttd_h")
    lines = [
        "| policy | TTD (h), paper | TTD (h), ours | ours / fluid bound | Hadar's speedup, paper | Hadar's speedup, ours | "
        "50 % of jobs done (h) | mean JCT (h) | GPU utilisation | preemptions | last job: V100 h / start h / ran h | decision s (mean / max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| *fluid bound (area bound)* | - | {bound:.1f} ({area:.1f}) | 1.00 | - | - | - | - | - | - | - | - |",
    ]
    for label, _, _ in RUNS:
        ttd = mean(label, "ttd_h")
        dec = (f"{mean(label, 'decision_s_mean'):.4f} / {max(r['runs'][label]['decision_s_max'] for r in results.values()):.3f}"
               if "decision_s_mean" in next(iter(results.values()))["runs"][label] else "-")  # fmt: skip
        paper = PAPER_TTD_H.get(label)
        paper_ttd = f"{paper:.0f}" if paper else "-"
        paper_speedup = f"{paper / PAPER_TTD_H['hadar']:.2f}" if paper else "-"
        lines.append(
            f"| {label} | {paper_ttd} | {ttd:.1f} | {ttd / bound:.2f} | {paper_speedup} | {ttd / h:.2f} | {mean(label, 'median_done_h'):.1f} | "
            f"{mean(label, 'jct_h'):.1f} | {100 * mean(label, 'util'):.1f} % | {mean(label, 'preemptions'):,.0f} | "
            f"{mean(label, 'last_v100_h'):.0f} / {mean(label, 'last_start_h'):.1f} / {mean(label, 'last_run_h'):.0f} | {dec} |"
        )
    return lines


def tables(by_profile: dict[str, dict[int, dict]], scaling: dict[int, dict[str, float]]) -> str:
    lines: list[str] = []
    for profile, results in by_profile.items():
        seeds = ", ".join(str(s) for s in results)
        lines += [f"**Profile `{profile}`**, seeds {seeds}: total time duration (h) by seed, beside the lower bounds.", ""]
        lines += seed_table(results) + ["", f"**Profile `{profile}`**: means over seeds {seeds}.", ""]
        lines += summary_table(results) + [""]
    lines += ["| jobs | hadar decision (s) | gavel decision (s) |", "|---:|---:|---:|"]
    for n, row in scaling.items():
        lines.append(f"| {n} | {row['hadar']:.3f} | {row['gavel']:.3f} |")
    return "\n".join(lines)


def diagnose(profile: str, seed: int) -> str:
    """After each of Hadar's decisions: GPUs held by jobs spanning GPU types, and free GPUs left
    while a waiting job would fit their number (the price refused it)."""
    from schedlab.policies.hetero.hadar import Hadar

    class Logged(Hadar):
        def apply(self, ctx, target):
            super().apply(ctx, target)
            types = ctx.state.node_type
            mixed = sum(j.num_gpus for j in ctx.running.values() if len({types[n] for n in j.nodes}) > 1)
            free = ctx.state.free_total()
            refused = sum(1 for j in ctx.active.values() if j.state == 0 and j.num_gpus <= free) if free else 0
            self.log.append((mixed, free, refused))

    policy = Logged()
    policy.log = []
    Simulation(generate(profile, 480, seed=seed), load_cluster("hadar-60"), policy, config=CONFIG, seed=seed).run()
    mixed = np.mean([m for m, _, _ in policy.log])
    idle = [(f, r) for _, f, r in policy.log if r]
    return (f"hadar on {profile}, seed {seed}: {mixed:.1f} GPUs on average in jobs spanning GPU types after a "
            f"decision; {len(idle)} of {len(policy.log)} decisions left GPUs free while a waiting job fitted their "
            f"number ({sum(r for _, r in idle)} such refused jobs, {np.mean([f for f, _ in idle]) if idle else 0:.1f} "
            "free GPUs on average at those)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--uniform-seeds", type=int, nargs="+", default=[0],
                    help="seeds of the hadar-uniform profile (its runs are long)")
    ap.add_argument("--write", action="store_true", help="rewrite the generated block of docs/hadar.md")
    ap.add_argument("--diagnose", action="store_true", help="only print Hadar's refused jobs at idle GPUs")
    args = ap.parse_args()
    if args.diagnose:
        for profile in PROFILES:
            print(diagnose(profile, args.seeds[0]))
        return
    by_profile = {profile: {s: run_seed(profile, s) for s in seeds}
                  for profile, seeds in zip(PROFILES, (args.seeds, args.uniform_seeds))}  # fmt: skip
    scaling = decision_times([32, 64, 128, 256, 512, 1024, 2048], args.seeds[0])
    text = tables(by_profile, scaling)
    print(text)
    if args.write:
        replace_block(DOC, "<!-- hadar_eval:begin -->", "<!-- hadar_eval:end -->", text)


if __name__ == "__main__":
    main()
