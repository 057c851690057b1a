"""The ``venus`` synthetic profile beside the published Venus statistics, and the queueing it gives.

1. Calibration: every target of :data:`schedlab.workload.calibration.VENUS_TARGETS` (value,
   tolerance, source) beside what ``--jobs`` generated jobs show, for several seeds.
2. Queueing share of JCT (Helios Table 3: FIFO on Venus, September 2020, 52,933 s of 64,702 s =
   81.8 %): an output, not a target. FIFO on the venus case of
   ``experiments/specs/helios-table3.toml`` (history = the first ``--train-days`` days,
   evaluation = the rest), on the ``venus`` preset and, to find what
   drives it, on the same jobs with other clusters or schedulers: one shared pool of the same
   1,064 GPUs, VCs sized to the jobs' demand (``helios-vcs@0.741``), FIFO with backfilling, and
   a what-if (not calibrated) where no job asks for more than half its VC.

    python benchmarks/venus_calibration.py --out runs/venus-calibration --doc docs/helios-qssf.md
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.sizing import offered_loads, sized_cluster
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.workload import transforms
from schedlab.workload.calibration import VENUS_TARGETS, measure
from schedlab.workload.synthetic import PROFILES, JobClass, generate

PAPER_FIFO = (64702.0, 52933.0)  # Helios Table 3, Venus, FIFO: average JCT and queueing (s)
DAY_S = 86400.0
BEGIN, END = "<!-- venus_calibration.py: begin -->", "<!-- venus_calibration.py: end -->"


def write_between(doc: Path, text: str) -> None:
    """Replace what lies between the lines :data:`BEGIN` and :data:`END` of ``doc`` with ``text``."""
    body = doc.read_text()
    head, begin, rest = body.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{doc}: needs the lines {BEGIN} and {END}")
    doc.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")


def fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def calibration(jobs: int, seeds: list[int]) -> list[str]:
    rows = {t.name: [t] for t in VENUS_TARGETS}
    for seed in seeds:
        for t, value in measure(generate("venus", jobs, seed=seed)):
            rows[t.name].append(value)
    lines = [f"| statistic | published | tolerance | " + " | ".join(f"seed {s}" for s in seeds) + " | source |",
             "|---|---:|---:|" + "---:|" * len(seeds) + "---|"]  # fmt: skip
    for t, *values in rows.values():
        cells = " | ".join(fmt(v) + ("" if t.holds(v) else " (out)") for v in values)
        lines.append(f"| {t.name} | {fmt(t.value)} | {t.tolerance()} | {cells} | {t.source} |")
    return lines


def queueing(jobs: int, train_days: float, seed: int) -> tuple[list[str], dict[str, Any]]:
    w = generate("venus", jobs, seed=seed, cluster_gpus=1064)
    history, evaluation = transforms.split_history(w, train_days * DAY_S)
    venus = load_cluster("venus")
    setups = [
        ("venus preset (16 VCs, 1 Sep 2020)", venus, "fifo"),
        ("venus preset, FIFO with backfilling", venus, "fifo-backfill"),
        ("VCs sized to the jobs (helios-vcs@0.741)", sized_cluster("helios-vcs@0.741", evaluation), "fifo"),
        ("one shared pool of 1,064 GPUs (uniform:133x8)", load_cluster("uniform:133x8"), "fifo"),
    ]
    # what-if, not calibrated: no job needs more than half its VC (the 128-GPU share goes to 64)
    profile = PROFILES["venus"]
    half = JobClass(gpu_values=profile.classes[0].gpu_values[:-1],
                    gpu_probs=(*profile.classes[0].gpu_probs[:-2], sum(profile.classes[0].gpu_probs[-2:])))  # fmt: skip
    w_half = generate("venus", jobs, seed=seed, cluster_gpus=1064, classes=(half,),
                      tenant_max_gpus=tuple(max(g / 2, 8) for g in profile.tenant_max_gpus))  # fmt: skip
    history_half, evaluation_half = transforms.split_history(w_half, train_days * DAY_S)
    lines = ["| cluster / scheduler | GPUs | VC offered load min-max | avg JCT (s) | avg queue (s) | "
             "queue share of JCT | queued jobs | CPU (s) |", "|---|---:|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    lines.append(f"| paper, Venus FIFO (Table 3) | 1,064 | - | {PAPER_FIFO[0]:,.0f} | {PAPER_FIFO[1]:,.0f} | "
                 f"{PAPER_FIFO[1] / PAPER_FIFO[0]:.1%} | 15,336 | - |")  # fmt: skip
    setups = [(label, cluster, policy, history, evaluation) for label, cluster, policy in setups]
    setups.append(("what-if: no job over half its VC, venus preset", venus, "fifo", history_half, evaluation_half))
    results = {}
    for label, cluster, policy, past, jobs_run in setups:
        cpu0 = time.process_time()
        s = simulate_run(RunSpec(WorkloadSpec(), cluster.name, policy, seed=seed), None, workload=jobs_run,
                         history=past, cluster=cluster)  # fmt: skip
        loads = offered_loads(jobs_run, cluster)
        spread = f"{min(loads.values()):.2f}-{max(loads.values()):.2f}" if cluster.partitioned else f"{loads['']:.2f}"
        lines.append(f"| {label} ({policy}) | {cluster.total_gpus:,} | {spread} | {s['jct_mean_s']:,.0f} | "
                     f"{s['queue_mean_s']:,.0f} | {s['queue_mean_s'] / s['jct_mean_s']:.1%} | {s['queued_jobs']:,} | "
                     f"{time.process_time() - cpu0:.1f} |")  # fmt: skip
        results[label] = s
    lines += ["", f"Evaluation: {len(evaluation):,} jobs submitted after day {train_days:g} of {jobs:,} "
              f"(seed {seed}); history {len(history):,} jobs."]  # fmt: skip
    return lines, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200_000, help="jobs per calibration sample")
    parser.add_argument("--seeds", default="0,1,2,3")
    parser.add_argument("--queue-jobs", type=int, default=40_000)
    parser.add_argument("--train-days", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/venus-calibration"))
    parser.add_argument("--doc", type=Path, help=f"write the tables between {BEGIN} and {END} of this file")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    lines = [f"Calibration ({args.jobs:,} jobs per seed; '(out)' marks a value outside its tolerance):", ""]
    lines += calibration(args.jobs, seeds)
    queue_lines, results = queueing(args.queue_jobs, args.train_days, args.seed)
    lines += ["", "Queueing share of JCT (an output of the calibrated inputs, not a target):", ""] + queue_lines
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tables.md").write_text(text)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if args.doc:
        write_between(args.doc, text)
    print(text)


if __name__ == "__main__":
    main()
