"""ASTRAEA's headline claims, in direction, on Philly-derived traces: tenant-level and job-level
long-term GPU-time fairness improved several-fold over the fair-share baselines, without a worse
average JCT (the post: "up to 9.42x" and "up to 10.3x", "without sacrificing average job
completion time").

Workloads (tenants are Philly VCs, weighted by the artifact's ``share-production.csv``; the
artifact's evaluation cluster, 140 nodes x 8 GPUs):

* ``chronus-mix2`` (``--workload chronus-mix2``): Chronus' Philly-derived MIX2 trace (30,746 GPU jobs over 14 days, 11 VCs;
  times in minutes), as loaded by ``schedlab simulate --format philly --time-unit min
  --tenant-prefix vc_``. Offered load about 1.0 on 1,120 GPUs.
* ``mix2-day1-x3`` (the default): MIX2's first day with arrivals x3 (5,224 jobs), the input of
  ``compare_astraea.py`` (where the artifact's simulator runs on it too).

Every policy runs with schedlab's default costs (checkpoint 10 s + restore 30 s per pause).
Unfairness of a tenant is |r - 1|, r its LTGF ratio (received / deserved GPU-time, see
``docs/fairness.md``); "tenant unfairness" is the largest over tenants, "job unfairness" the
95th percentile over jobs. An improvement factor is the baseline's unfairness over ASTRAEA's.
Writes the tables between the markers of ``docs/fairness.md`` (``--write``) and prints them.

    python benchmarks/fairness_repro.py --write
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from schedlab.cluster.presets import load_cluster
from schedlab.experiments.run import WorkloadSpec
from schedlab.metrics import summarize
from schedlab.metrics.fairness import load_shares
from schedlab.policies.registry import POLICIES, PolicyOptions, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.workload.schema import Workload, canonical_frame

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_astraea import DATA, SHARES, mix2_window  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "fairness.md"
CLUSTER = "uniform:140x8"
POLICIES = ("fifo", "tiresias", "yarn-cs", "fair-share", "themis", "gandiva-fair", "astraea", "astraea-no-starvation")
VARIANTS = {"astraea-no-starvation": ("astraea", {"starvation_s": "inf"})}  # label: (policy, params)
BASELINES = ("tiresias", "yarn-cs", "fair-share", "themis", "gandiva-fair")
PAPER = {"tenant": "up to 9.42x", "job": "up to 10.3x", "jct": "not worse"}
START, END = "<!-- fairness-repro:start -->", "<!-- fairness-repro:end -->"


def workload(name: str) -> Workload:
    if name == "chronus-mix2":
        return WorkloadSpec(trace=str(DATA / "chronus" / "trace_job_Philly_MIX2.csv"), fmt="philly",
                            options={"time_unit": "min"}, tenant_prefix="vc_").build()  # fmt: skip
    rows = mix2_window(1, load_shares(SHARES), arrival_scale=3)
    rows = rows.assign(job_id=rows["job_id"].astype(str))
    frame = canonical_frame(rows.rename(columns={"submit_time": "submit_s", "num_gpu": "num_gpus",
                                                 "duration": "duration_s", "user": "tenant"}), source=name)  # fmt: skip
    return Workload(frame, name)


def run(name: str, policy: str) -> dict:
    shares = load_shares(SHARES)
    jobs = workload(name)
    cluster = load_cluster(CLUSTER)
    name, params = VARIANTS.get(policy, (policy, {}))
    options = PolicyOptions(seed=0, shares=shares)
    built = make_policy(name, rng=np.random.default_rng(0), params=POLICIES[name].parse(params), options=options)
    cpu = time.process_time()
    result = Simulation(jobs, cluster, built, config=SimConfig(), seed=0).run()
    cpu = time.process_time() - cpu
    s = summarize(result.jobs, result.timeseries, policy=policy, extra={"cluster_gpus": cluster.total_gpus},
                  shares=shares)  # fmt: skip
    s["idle_gpu_h_waiting"] = _idle_while_waiting(result.timeseries)
    s["tenant_unfairness"] = max(abs(s["ltgf_tenant_min"] - 1), abs(s["ltgf_tenant_max"] - 1))
    s["cpu_s"] = cpu
    s["jobs"] = len(jobs)
    return {k: v for k, v in s.items() if not isinstance(v, dict | list)}


def _idle_while_waiting(ts) -> float:
    """GPU-hours left free while jobs were pending (from the run's time series)."""
    dt = np.diff(ts["time_s"].to_numpy(), append=ts["time_s"].iat[-1])
    idle = (ts["gpus_total"] - ts["gpus_busy"]).to_numpy() * (ts["pending_jobs"].to_numpy() > 0)
    return float((idle * dt).sum() / 3600)


def tables(name: str, rows: dict[str, dict]) -> str:
    first = next(iter(rows.values()))
    out = [f"**{name}** ({first['jobs']:,} jobs, {CLUSTER})", "",
           "| policy | tenant unfairness max | tenant LTGF min-max | Jain | job unfairness p95 | job unfairness max "
           "| mean JCT (h) | rho mean | pauses | idle GPU-h while jobs wait | CPU s |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for policy, s in rows.items():
        out.append(f"| {policy} | {s['tenant_unfairness']:.3f} | {s['ltgf_tenant_min']:.3f}-{s['ltgf_tenant_max']:.3f} | "
                   f"{s['jain_tenants']:.4f} | {s['ltgf_job_unfairness_p95']:.3f} | {s['ltgf_job_unfairness_max']:.2f} | "
                   f"{s['jct_mean_s'] / 3600:.2f} | {s['ftf_rho_mean']:.2f} | {s['preemptions']:,} | "
                   f"{s['idle_gpu_h_waiting']:,.0f} | {s['cpu_s']:.0f} |")  # fmt: skip
    a = rows["astraea"]
    out += ["", "| ASTRAEA against | tenant fairness (x better) | job fairness (x better) | mean JCT (ASTRAEA / it) |",
            "|---|---|---|---|", f"| paper (post) | {PAPER['tenant']} | {PAPER['job']} | {PAPER['jct']} |"]  # fmt: skip
    for base in BASELINES:
        b = rows[base]
        out.append(f"| {base} | {_factor(b['tenant_unfairness'], a['tenant_unfairness'])} | "
                   f"{_factor(b['ltgf_job_unfairness_p95'], a['ltgf_job_unfairness_p95'])} | "
                   f"{a['jct_mean_s'] / b['jct_mean_s']:.3f} |")  # fmt: skip
    return "\n".join(out)


def _factor(base: float, ours: float) -> str:
    return f"{base / ours:.2f}" if ours > 0 else ("equal (both 0)" if base == 0 else "inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", action="append", choices=("chronus-mix2", "mix2-day1-x3"),
                        help="repeatable; default mix2-day1-x3 (the docs' table; chronus-mix2, 30,746 jobs, was not run for it)")
    parser.add_argument("--processes", "-j", type=int, default=1)
    parser.add_argument("--write", action="store_true", help=f"write the tables into {DOC.name}")
    args = parser.parse_args()
    names = args.workload or ["mix2-day1-x3"]
    tasks = [(n, p) for n in names for p in POLICIES]
    with ProcessPoolExecutor(args.processes) as pool:
        results = list(pool.map(run, *zip(*tasks)))
    text = "\n\n".join(tables(n, {p: r for (m, p), r in zip(tasks, results) if m == n}) for n in names)
    flags = "".join(f" --workload {n}" for n in args.workload or [])
    text += f"\n\nGenerated by `python benchmarks/fairness_repro.py{flags} --write`."
    print(text)
    if args.write:
        doc = DOC.read_text()
        if START not in doc:
            raise SystemExit(f"{DOC}: markers {START} / {END} missing")
        DOC.write_text(re.sub(f"{re.escape(START)}.*?{re.escape(END)}", lambda _: f"{START}\n{text}\n{END}", doc,
                              flags=re.S))  # fmt: skip


if __name__ == "__main__":
    main()
