"""GFS evaluation (Duan et al., ASPLOS '26, arXiv 2509.11134, §4): the shape of Tables 5, 6 and 8-10.

Every run uses the ``gfs`` cluster preset (4,278 nodes, 10,412 GPUs) and a ``--synthetic gfs``
workload whose job durations are capped at ``--max-duration-days`` (7 by default), so that the
cluster reaches a steady state within the arrival window. Metrics are measured in steady state:
over the jobs submitted after a warm-up (the first ``--warmup`` fraction of the arrival window,
half by default, when the cluster is still filling) and, for the GPU allocation rate, over the
same stretch of time. Per class (hp, spot): mean JCT, JCT-p99, mean JQT (``queue_s``: every
queueing segment, re-queues after evictions included), the spot eviction rate (evictions /
runs) and the GPU allocation rate overall and per GPU model (§4.2). Runs go to a pool of
worker processes, one pool per table.

    python benchmarks/gfs_eval.py table5        # spot_scale 1, 2, 4 x baselines and gfs
    python benchmarks/gfs_eval.py table6        # gfs with guaranteed duration H = 1, 2, 4 h
    python benchmarks/gfs_eval.py ablation      # gfs-e, gfs-d, gfs-s, gfs-p, gfs-sp, gfs
    python benchmarks/gfs_eval.py all --out runs/gfs-eval
    python benchmarks/gfs_eval.py table5 --only "x4 chronus,x4 lyra"   # some rows only

Baselines of Table 5 are those of ``BASELINES`` present in the registry when the script runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.metrics.summary import gpu_alloc_rate, gpu_alloc_rate_by_model, window_classes
from schedlab.policies.registry import POLICIES

BASELINES = ("yarn-cs-preempt", "chronus", "lyra", "fgd")
ABLATIONS = ("gfs-e", "gfs-d", "gfs-s", "gfs-p", "gfs-sp", "gfs")
CLASSES = ("hp", "spot")


@dataclass(frozen=True)
class Cell:
    """One run of a table: its row label, policy, spot scale and policy options."""

    label: str
    policy: str
    spot_scale: float
    params: dict[str, Any] = field(default_factory=dict)


def cells(table: str) -> list[Cell]:
    """The runs of ``table`` (table5, table6 or ablation)."""
    if table == "table5":
        names = [p for p in BASELINES if p in POLICIES] + ["gfs"]
        return [Cell(f"x{k:g} {p}", p, k) for k in (1, 2, 4) for p in names]
    if table == "table6":
        return [Cell(f"H={h:g} h", "gfs", 1, {"guarantee_h": float(h)}) for h in (1, 2, 4)]
    if table == "ablation":
        return [Cell(p, p, 1) for p in ABLATIONS]
    raise SystemExit(f"unknown table {table!r}")


@dataclass(frozen=True)
class Setup:
    """The workload every cell of a table shares, and the measurement window."""

    jobs: int
    load: float
    seed: int
    max_duration_days: float
    warmup: float


def run_cell(cell: Cell, setup: Setup, out: Path | None) -> dict[str, Any]:
    """Simulate one cell; returns its summary plus ``window``: the per-class metrics of the jobs
    submitted after the warm-up and the GPU allocation rate, overall and per model, from the
    end of the warm-up to the last submission."""
    options = {"spot_scale": cell.spot_scale, "max_duration_s": setup.max_duration_days * 86400.0}
    wspec = WorkloadSpec(synthetic="gfs", jobs=setup.jobs, seed=setup.seed, load=setup.load, options=options)
    spec = RunSpec(wspec, "gfs", cell.policy, seed=setup.seed, params=POLICIES[cell.policy].parse(cell.params))
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) if out is None else out / cell.label.replace(" ", "_").replace("=", "")
        summary = simulate_run(spec, target)
        ts = pd.read_parquet(target / "timeseries.parquet")
        jobs = pd.read_parquet(target / "jobs.parquet")
    last_submit = float(jobs["submit_s"].max())
    start = setup.warmup * last_submit
    window = ts[(ts["time_s"] >= start) & (ts["time_s"] <= last_submit)]
    end = np.array([last_submit])
    summary["window"] = {
        "classes": window_classes(jobs, start, last_submit),
        "spot_jqt_by_model": spot_jqt_by_model(jobs, start, last_submit),
        "alloc": gpu_alloc_rate(window, end),
        "alloc_by_model": gpu_alloc_rate_by_model(window, end),
        "hours": (start / 3600, last_submit / 3600),
    }
    return summary


def spot_jqt_by_model(jobs: pd.DataFrame, start: float, end: float) -> dict[str, float]:
    """Mean JQT (seconds) of the spot jobs submitted in ``[start, end]``, per GPU model."""
    inside = jobs[(jobs["submit_s"] >= start) & (jobs["submit_s"] <= end) & (jobs["priority_class"] == "spot")]
    return {str(m): float(q) for m, q in inside.groupby("gpu_type")["queue_s"].mean().items()}


def _quiet_stdout() -> None:
    """Send a worker's stdout to stderr: HiGHS (under Chronus) prints stray lines that would
    otherwise interleave with the tables."""
    os.dup2(2, 1)


def _h(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(rows: list[tuple[Cell, dict[str, Any]]]) -> str:
    """Markdown: per class JCT, JCT-p99 and JQT (hours), spot eviction rate and GPU
    allocation rate in the window; the share of started spot jobs evicted inside their
    guarantee and the run's wall time over the whole run."""
    head = ["run"]
    for c in CLASSES:
        head += [f"{c} JCT h", f"{c} JCT-p99 h", f"{c} JQT h"]
    head += ["spot evict rate", "GPU alloc", "spot SLO-violated share (run)", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell, s in rows:
        w = s["window"]
        row = [cell.label]
        for c in CLASSES:
            k = w["classes"].get(c, {})
            row += [_h(k.get("jct_mean_s")), _h(k.get("jct_p99_s")), _h(k.get("queue_mean_s"))]
        gfs = s.get("gfs", {})
        row += [_f(w["classes"].get("spot", {}).get("eviction_rate")), _f(w["alloc"]),
                _f(gfs.get("slo_violated_share")), f"{s['sim_wall_s']:.0f}"]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _per_model(rows: list[tuple[Cell, dict[str, Any]]], key: str, fmt: Callable[[float | None], str]) -> str:
    """Markdown: the window's per-GPU-model figures ``key``, one row per run."""
    models = sorted({m for _, s in rows for m in s["window"][key]})
    lines = ["| run | " + " | ".join(models) + " |", "|" + "---|" * (len(models) + 1)]
    for cell, s in rows:
        by = s["window"][key]
        lines.append(f"| {cell.label} | " + " | ".join(fmt(by.get(m)) for m in models) + " |")
    return "\n".join(lines)


def model_table(rows: list[tuple[Cell, dict[str, Any]]]) -> str:
    """Markdown: GPU allocation rate per GPU model in the window."""
    return _per_model(rows, "alloc_by_model", _f)


def jqt_table(rows: list[tuple[Cell, dict[str, Any]]]) -> str:
    """Markdown: mean spot JQT (hours) per GPU model in the window."""
    return _per_model(rows, "spot_jqt_by_model", _h)


def decisions(rows: list[tuple[Cell, dict[str, Any]]]) -> str:
    """Markdown: the gfs policies' scheduling decision time per task, evictions (all, and
    those inside the guaranteed duration), ``eta``'s range and the forecaster's cost."""
    head = ("| run | decisions | mean ms | p99 ms | evictions (run) | inside guarantee (run) | eta min / max "
            "| OrgLinear trainings | training s |")  # fmt: skip
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for cell, s in rows:
        g = s.get("gfs")
        if g is not None:
            lines.append(f"| {cell.label} | {g['decisions']} | {_f(g['decision_ms_mean'], 4)} | "
                         f"{_f(g['decision_ms_p99'], 4)} | {g['evictions']} | {g['slo_violations']} | {_f(g['eta_min'], 2)} / {_f(g['eta_max'], 2)} | "
                         f"{g.get('forecaster_trainings', '-')} | "
                         f"{g.get('forecaster_train_s', '-')} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", choices=("table5", "table6", "ablation", "all"))
    parser.add_argument("--jobs", type=int, default=60000, help="synthetic gfs jobs at spot_scale 1")
    parser.add_argument("--load", type=float, default=0.9, help="offered load of the workload at spot_scale 1")
    parser.add_argument("--max-duration-days", type=float, default=7.0, help="cap on job durations")
    parser.add_argument("--warmup", type=float, default=0.5, help="share of the arrival window left out of the metrics")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=None, help="write each run's results under this folder")
    parser.add_argument("--only", default=None,
                        help="run only the rows whose label contains one of these comma-separated strings, e.g. 'x4'")
    args = parser.parse_args()
    if not 0.0 <= args.warmup < 1.0:
        parser.error("--warmup must lie in [0, 1)")
    setup = Setup(args.jobs, args.load, args.seed, args.max_duration_days, args.warmup)
    tables = ("table5", "table6", "ablation") if args.table == "all" else (args.table,)
    for name in tables:
        todo = cells(name)
        if args.only:
            wanted = [w.strip() for w in args.only.split(",") if w.strip()]
            todo = [c for c in todo if any(w in c.label for w in wanted)]
            if not todo:
                parser.error(f"--only {args.only!r} matches no row of {name}")
        out = None if args.out is None else args.out / name
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=min(args.processes, len(todo)), initializer=_quiet_stdout) as pool:
            futures = [pool.submit(run_cell, c, setup, out) for c in todo]
            rows = [(c, f.result()) for c, f in zip(todo, futures, strict=True)]
        start_h, end_h = rows[0][1]["window"]["hours"]
        print(f"## {name}: {args.jobs} jobs, load {args.load:g}, durations <= {args.max_duration_days:g} d, "
              f"seed {args.seed}; measured on jobs submitted {start_h:.1f}-{end_h:.1f} h "
              f"({time.perf_counter() - t0:.0f} s)\n")  # fmt: skip
        print(table(rows), "\n")
        print(model_table(rows), "\n")
        print(jqt_table(rows), "\n")
        print(decisions(rows), "\n", flush=True)


if __name__ == "__main__":
    main()
