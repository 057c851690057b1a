"""How queueing of gang jobs changes with the checkpoint cost model under defragmentation.

Runs ``fifo`` and ``fifo+defrag`` (and the backfilling pair) on a fragmented workload, the
defrag wrapper once per checkpoint cost model (``fixed``, ``framework``, ``transparent`` at the
low and high end of FlowGPU's reported 1.7x-4.5x migration gain, ``kill``), and writes the table
between the ``defrag-table`` markers of docs/migration.md. A second table (``defrag-scale``
markers) multiplies the engine's absolute checkpoint and restore times (``checkpoint_s``,
``restore_s``) by 1 to 300 and runs ``fifo+defrag`` under ``framework`` and ``transparent``
(4.5x) at each scale: where a slow checkpoint turns the policy off and a cheaper one keeps it on.

The workload (``fragmented_workload``): ``--jobs`` jobs (default 3,000) on ``uniform:16x8``
(16 nodes x 8 V100, 128 GPUs); 85 % 1-GPU jobs, 10 % 8-GPU and 5 % 16-GPU gang jobs (one
8-GPU worker per node); durations lognormal with median 30 min and sigma 1.2, capped at 24 h,
for every size; Poisson arrivals at an offered load of ``--load`` (default 0.85); tenant
``default``; no ``gpu_mem_gib``, so each job's GPU memory is the cost models' reproducible
catalogue draw (seed 0). Every run uses seed 0 and the engine's default costs
(``checkpoint_s`` 10, ``restore_s`` 30, ``restart_s`` 10, ``checkpoint_interval_s`` 1800).

    python benchmarks/defrag_migration.py            # runs and rewrites the table in docs/migration.md
    python benchmarks/defrag_migration.py --no-write # prints it only
"""

from __future__ import annotations

import argparse
import re
import resource
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.cluster.presets import load_cluster
from schedlab.experiments.run import RunSpec, WorkloadSpec, build_run, execute
from schedlab.sim.config import SimConfig
from schedlab.workload.schema import Workload, canonical_frame

DOC = Path(__file__).resolve().parents[1] / "docs" / "migration.md"
CLUSTER = "uniform:16x8"
SIZES = (1, 8, 16)
SIZE_SHARES = (0.85, 0.10, 0.05)
# (label, policy, checkpoint model, transparent speedup)
RUNS = (
    ("fifo (no migration)", "fifo", "fixed", 1.7),
    ("fifo+defrag, fixed", "fifo+defrag", "fixed", 1.7),
    ("fifo+defrag, framework", "fifo+defrag", "framework", 1.7),
    ("fifo+defrag, transparent 1.7x", "fifo+defrag", "transparent", 1.7),
    ("fifo+defrag, transparent 4.5x", "fifo+defrag", "transparent", 4.5),
    ("fifo+defrag, kill", "fifo+defrag", "kill", 1.7),
    ("fifo-backfill (no migration)", "fifo-backfill", "fixed", 1.7),
    ("fifo-backfill+defrag, transparent 1.7x", "fifo-backfill+defrag", "transparent", 1.7),
    ("fifo-backfill+defrag, kill", "fifo-backfill+defrag", "kill", 1.7),
)


SCALES = (1, 10, 30, 100, 300)
SCALED = (("framework", 1.7), ("transparent", 4.5))


def fragmented_workload(n: int, *, gpus: int, load: float, seed: int = 0) -> Workload:
    """Many 1-GPU jobs and 8/16-GPU gang jobs (see the module docstring)."""
    rng = np.random.default_rng(seed)
    size = rng.choice(SIZES, size=n, p=SIZE_SHARES).astype(float)
    duration = np.minimum(1800.0 * np.exp(1.2 * rng.standard_normal(n)), 86400.0)
    duration = np.maximum(duration, 60.0)
    span = float((size * duration).sum()) / (gpus * load)
    gaps = rng.exponential(1.0, n)
    submit = np.cumsum(gaps) / gaps.sum() * span
    submit -= submit[0]
    frame = pd.DataFrame({
        "job_id": [f"frag-{i}" for i in range(n)], "submit_s": submit, "num_gpus": size,
        "gpus_per_worker": np.where(size > 1, 8.0, np.nan), "duration_s": duration,
    })  # fmt: skip
    source = f"fragmented:{n}@{load:g}"
    return Workload(canonical_frame(frame, source=source), source)


def run_one(workload: Workload, cluster, policy: str, model: str, speedup: float,
            scale: float = 1.0) -> tuple[pd.DataFrame, dict, float]:  # fmt: skip
    config = SimConfig(checkpoint_model=model, transparent_speedup=speedup, checkpoint_s=10.0 * scale,
                       restore_s=30.0 * scale)  # fmt: skip
    spec = RunSpec(WorkloadSpec(trace=workload.source, fmt="csv"), CLUSTER, policy, seed=0, config=config)
    cpu0 = time.process_time()
    built = build_run(spec, workload=workload, cluster=cluster)
    result, summary = execute(built)
    return result.jobs, summary, time.process_time() - cpu0


def row(label: str, jobs: pd.DataFrame, summary: dict) -> dict:
    gang = jobs[jobs["num_gpus"] >= 8]
    small = jobs[jobs["num_gpus"] == 1]
    moved = jobs[jobs["migrations"] > 0]
    defrag = summary.get("defrag", {})
    return {
        "run": label,
        "gang queue mean (h)": gang["queue_s"].mean() / 3600,
        "gang queue p95 (h)": gang["queue_s"].quantile(0.95) / 3600,
        "1-GPU queue mean (min)": small["queue_s"].mean() / 60,
        "JCT mean (h)": (jobs["end_s"] - jobs["submit_s"]).mean() / 3600,
        "migrations": int(jobs["migrations"].sum()),
        "stall per move (s)": moved["migration_s"].sum() / max(1, jobs["migrations"].sum()),
        "plans declined": defrag.get("declined", "-"),
        "work lost (GPU-h)": float((jobs["lost_work_s"] * jobs["num_gpus"]).sum() / 3600),
        "unfinished": int((~jobs["finished"]).sum()),
    }


def replace_between(text: str, marker: str, table: str) -> str:
    pattern = rf"(<!-- {marker} -->\n)(?:.*?\n)?(<!-- /{marker} -->)"
    new = re.sub(pattern, lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)
    if f"<!-- {marker} -->" not in text:
        raise SystemExit(f"{DOC}: no <!-- {marker} --> markers")
    return new


def markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if c == "run" else "---:" for c in cols) + "|"]
    for _, r in frame.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(v if isinstance(v, str) else (f"{v:,}" if isinstance(v, (int, np.integer)) else f"{v:,.2f}"))
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--load", type=float, default=0.85)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/migration.md alone")
    args = parser.parse_args()
    cluster = load_cluster(CLUSTER)
    workload = fragmented_workload(args.jobs, gpus=cluster.total_gpus, load=args.load)
    rows, cpu = [], 0.0
    for label, policy, model, speedup in RUNS:
        jobs, summary, seconds = run_one(workload, cluster, policy, model, speedup)
        cpu += seconds
        rows.append(row(label, jobs, summary))
        print(f"{label:<42} {seconds:6.1f} s CPU", flush=True)
    frame = pd.DataFrame(rows)
    scaled = []
    for scale in SCALES:
        for model, speedup in SCALED:
            label = f"x{scale:g}, {model}" + (f" {speedup:g}x" if model == "transparent" else "")
            jobs, summary, seconds = run_one(workload, cluster, "fifo+defrag", model, speedup, scale)
            cpu += seconds
            scaled.append(row(label, jobs, summary))
            print(f"{label:<42} {seconds:6.1f} s CPU", flush=True)
    keep = ["run", "gang queue mean (h)", "1-GPU queue mean (min)", "JCT mean (h)", "migrations", "stall per move (s)",
            "plans declined"]  # fmt: skip
    scale_table = markdown(pd.DataFrame(scaled)[keep])
    sizes = workload.jobs["num_gpus"].value_counts().sort_index()
    counts = ", ".join(f"{int(c):,} of {g:g} GPU" + ("s" if g > 1 else "") for g, c in sizes.items())
    options = (f" --jobs {args.jobs}" if args.jobs != 3000 else "") + (f" --load {args.load:g}" if args.load != 0.85 else "")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    caption = (f"{args.jobs:,} jobs ({counts}) on {CLUSTER}, offered load {args.load:g}, seed 0; "
               f"`python benchmarks/defrag_migration.py{options}` ({cpu:.0f} s CPU, peak RSS {rss:.0f} MB).")  # fmt: skip
    table = markdown(frame) + "\n\n" + caption
    print(table + "\n\n" + scale_table)
    if not args.no_write:
        text = replace_between(DOC.read_text(), "defrag-table", table)
        DOC.write_text(replace_between(text, "defrag-scale", scale_table))
        print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
