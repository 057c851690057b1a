"""Run a sweep's cells, resumably, in local worker processes or on a Ray cluster.

Layout of a sweep directory::

    DIR/sweep.toml           the spec as it was last run
    DIR/cells/<cell>/        one run directory per cell: jobs.parquet, timeseries.parquet,
                             summary.json and cell.json (the cell's keys and fingerprint)
    DIR/results.parquet      one row per finished cell: its keys and every summary metric
    DIR/run.json             written once every cell is done (``schedlab rerun DIR``)

A cell is written into a hidden staging folder and renamed into place only when complete
(:func:`schedlab.experiments.outdir.staged`), so a crash, Ctrl-C or a killed worker never
leaves a cell that counts as done; staging folders left by a killed worker are removed when
the sweep runs again. A rerun skips every cell whose folder exists with the same
fingerprint (every setting of its run), so a grown spec (more seeds, more loads) runs only its
new cells; a cell whose settings changed is refused unless ``force``.
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import shutil
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError, SchedlabError
from schedlab.experiments.spec import Cell, SweepSpec

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

    from schedlab.cluster.spec import ClusterSpec
    from schedlab.experiments.run import RunSpec
    from schedlab.workload.schema import Workload

SPEC_COPY = "sweep.toml"
CELLS = "cells"
CELL_FILE = "cell.json"
RESULTS = "results.parquet"
# Summary entries that measure the machine, not the schedule: left out of results.parquet so
# that it repeats byte for byte (they stay in each cell's summary.json).
MACHINE_KEYS = ("sim_wall_s", "engine_wall_s", "peak_rss_mb")
# Facts of a cell's workload on its cluster, kept in cell.json and added to its results row:
# the evaluated jobs ``fit_cluster`` dropped, and the lowest and highest offered load of a pool
# (a VC; the whole cluster when it is one shared pool), GPU time / (GPUs x arrival window).
CELL_FACTS = ("dropped_unfit", "vc_offered_load_min", "vc_offered_load_max")


@dataclass(frozen=True)
class Outcome:
    """How a cell ended: ``done`` (ran now), ``skipped`` (finished before) or ``failed``."""

    index: int
    status: str
    message: str = ""


def prepare_out(out: Path, spec: SweepSpec, *, force: bool) -> Path:
    """Check ``out`` can hold this sweep; copy the spec there; remove stale staging folders and
    the run.json of an earlier complete run.

    Refuses a folder holding anything but a sweep, and (without ``force``) a finished cell
    whose settings differ from the spec's."""
    out = Path(out).absolute()
    if out.exists():
        if not out.is_dir():
            raise ConfigError(f"--out {out}: exists and is a file")
        if any(out.iterdir()) and not (out / SPEC_COPY).is_file():
            raise ConfigError(f"--out {out}: exists and holds files that are not a schedlab sweep; choose another directory")
    if not force:
        changed = [c.name for c in spec.cells if _recorded(out, c) not in (None, c.fingerprint())]
        if changed:
            raise ConfigError(f"--out {out}: {len(changed)} finished cell(s) were run with other settings "
                              f"(first: {changed[0]}); pass --force to run them again, or choose another directory")  # fmt: skip
    (out / CELLS).mkdir(parents=True, exist_ok=True)
    (out / "run.json").unlink(missing_ok=True)  # written again once every cell of this spec is done
    shutil.copyfile(spec.path, out / SPEC_COPY)
    for stale in (out / CELLS).glob(".*.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)
    return out


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / CELLS / cell.name


def is_finished(out: Path, cell: Cell) -> bool:
    return _recorded(out, cell) == cell.fingerprint()


def _recorded(out: Path, cell: Cell) -> str | None:
    """The fingerprint a finished cell's folder records, or None when it has not finished."""
    path = cell_dir(out, cell) / CELL_FILE
    if not path.is_file():
        return None
    try:
        fingerprint: str | None = json.loads(path.read_text())["fingerprint"]
    except (ValueError, KeyError, TypeError):
        return "unreadable"
    return fingerprint


def run_cell(cell: Cell, out: Path) -> None:
    """Simulate one cell into its folder (staged: it appears only when complete). Its
    ``cell.json`` records the :data:`CELL_FACTS` of the run's workload on its cluster."""
    from schedlab.cluster.sizing import offered_loads
    from schedlab.experiments.manifest import _plain
    from schedlab.experiments.outdir import staged
    from schedlab.experiments.run import build_run, execute, write_run

    with staged(cell_dir(out, cell), force=True) as stage:
        wall0 = time.perf_counter()
        record: dict[str, Any] = {"keys": cell.keys, "fingerprint": cell.fingerprint()}
        if cell.fit_cluster:
            history, workload, cluster, record["dropped_unfit"] = _fitted(cell.run)
            built = build_run(cell.run, workload=workload, history=history, cluster=cluster)
        else:
            built = build_run(cell.run)
        loads = offered_loads(built.workload, built.cluster).values()
        record["vc_offered_load_min"], record["vc_offered_load_max"] = min(loads), max(loads)
        result, summary = execute(built)
        summary["sim_wall_s"] = round(time.perf_counter() - wall0, 3)
        write_run(stage, result, summary, built.policy)
        record["settings"] = _plain(cell.run)
        (stage / CELL_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n")


def fit_to_cluster(w: Workload, cluster: ClusterSpec) -> tuple[Workload, int]:
    """Drop the jobs of tenants that own no partition of ``cluster`` and the jobs larger than
    their pool; (the rest, how many were dropped)."""
    jobs = w.jobs
    known = jobs["tenant"].map(lambda t: not cluster.partitioned or t in cluster.tenants).to_numpy()
    cap = [cluster.max_job_gpus(t, g) if k else 0 for t, g, k in zip(jobs["tenant"], jobs["gpu_type"], known)]
    keep = jobs["num_gpus"].to_numpy() <= np.asarray(cap)
    return w.with_jobs(jobs[keep]), int((~keep).sum())


def _fitted(run: RunSpec) -> tuple[Workload | None, Workload, ClusterSpec, int]:
    """(history, evaluation, cluster, evaluation jobs dropped) of a run with ``fit_cluster``."""
    from schedlab.cluster.presets import load_cluster

    cluster = load_cluster(run.cluster_name())
    wspec = run.workload
    if wspec.synthetic is not None and wspec.cluster_gpus is None:
        wspec = replace(wspec, cluster_gpus=cluster.total_gpus)
    history, evaluation = wspec.build_split()
    evaluation, dropped = fit_to_cluster(evaluation, cluster)
    if history is not None:
        history, _ = fit_to_cluster(history, cluster)
    if len(evaluation) == 0:
        raise ConfigError(f"no job of the workload fits cluster '{cluster.name}'")
    return history, evaluation, cluster, dropped


def run_sweep(
    spec: SweepSpec,
    out: Path,
    *,
    workers: int,
    ray_address: str | None = None,
    force: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run every cell not finished yet (every cell with ``force``); the outcome of each cell, in order."""
    outcomes: dict[int, Outcome] = {}

    def report(outcome: Outcome) -> None:
        outcomes[outcome.index] = outcome
        if on_outcome is not None:
            on_outcome(outcome)

    todo = []
    for i, cell in enumerate(spec.cells):
        if not force and is_finished(out, cell):
            report(Outcome(i, "skipped"))
        else:
            todo.append(i)
    if todo:
        if ray_address is not None:
            _run_on_ray(spec.cells, todo, out, ray_address, workers, report)
        else:
            _run_in_processes(spec.cells, todo, out, workers, report)
    return [outcomes[i] for i in range(len(spec.cells))]


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _run_in_processes(cells: Sequence[Cell], todo: list[int], out: Path, workers: int,
                      report: Callable[[Outcome], None]) -> None:
    """One forked process per cell, at most ``workers`` at once. A worker that dies (killed,
    out of memory) fails its cell only; the others go on."""
    ctx = multiprocessing.get_context("fork")
    messages = ctx.Queue()
    waiting = list(todo)
    running: dict[int, multiprocessing.process.BaseProcess] = {}
    try:
        while waiting or running:
            while waiting and len(running) < max(1, workers):
                i = waiting.pop(0)
                running[i] = ctx.Process(target=_worker, args=(i, cells[i], out, messages), daemon=True)
                signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # no signal lost in the fork
                try:
                    running[i].start()
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            try:
                i, status, message = messages.get(timeout=0.2)
            except queue.Empty:
                # A worker exits 0 only after its message is sent; any other exit is a death.
                for i, proc in list(running.items()):
                    if proc.exitcode not in (None, 0):
                        running.pop(i).join()
                        report(Outcome(i, "failed", f"its worker died (exit code {proc.exitcode})"))
                continue
            running.pop(i).join()
            report(Outcome(i, status, message))
    finally:
        for proc in running.values():
            proc.kill()
            proc.join()
        messages.close()


def _worker(i: int, cell: Cell, out: Path, messages: Queue[tuple[int, str, str]]) -> None:
    """A sweep worker: ignores Ctrl-C (the parent stops it) and reports on ``messages``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    messages.put((i, *_attempt(cell, out)))
    messages.close()
    messages.join_thread()


def _attempt(cell: Cell, out: Path) -> tuple[str, str]:
    """Run a cell; ("done", "") or ("failed", why)."""
    try:
        run_cell(cell, out)
    except SchedlabError as exc:
        return "failed", str(exc)
    except Exception:
        return "failed", traceback.format_exc()
    return "done", ""


def _ray_task(cell: Cell, out: str) -> tuple[str, str]:
    return _attempt(cell, Path(out))


def _run_on_ray(cells: Sequence[Cell], todo: list[int], out: Path, address: str, workers: int,
                report: Callable[[Outcome], None]) -> None:
    """One Ray task per cell. ``address`` "local" starts a Ray instance on this machine with
    ``workers`` CPUs; otherwise it is the address of a running cluster, whose nodes need
    schedlab installed and ``out`` on a shared file system."""
    from schedlab.extras import require

    ray = require("ray", "--ray", extra="ray")
    if address == "local":
        ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                 configure_logging=False)  # fmt: skip
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    task = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
    pending: dict[Any, int] = {}
    try:
        pending = {task.remote(cells[i], str(out)): i for i in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    status, message = ray.get(ref)
                except ray.exceptions.RayError as exc:  # the worker died or was lost
                    status, message = "failed", f"its Ray worker failed: {type(exc).__name__}"
                report(Outcome(i, status, message))
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        ray.shutdown()


def collect_results(spec: SweepSpec, out: Path) -> pd.DataFrame:
    """One row per finished cell of ``spec``: its keys, then every summary metric (breakdowns
    flattened to ``outer.inner`` columns, lists as JSON), machine timings left out."""
    from schedlab.metrics.summary import read_summary

    rows = []
    for cell in spec.cells:
        if not is_finished(out, cell):
            continue
        summary = read_summary(cell_dir(out, cell) / "summary.json")
        record = json.loads((cell_dir(out, cell) / CELL_FILE).read_text())
        summary.update({k: record[k] for k in CELL_FACTS if k in record})
        metrics = {k: v for k, v in _flatten(summary).items() if k not in MACHINE_KEYS}
        metrics.pop("seed", None)
        rows.append({**cell.keys, "cell": cell.name, **{k: v for k, v in metrics.items() if k not in cell.keys}})
    frame = pd.DataFrame(rows)
    for column in frame.columns:
        frame[column] = _one_type(frame[column])
    return frame


def _one_type(column: pd.Series) -> pd.Series:
    """A column parquet can store: numbers, true/false or text, missing values as nulls."""
    present = [v for v in column if v is not None and not (isinstance(v, float) and v != v)]
    if not present:
        return column.astype("float64")
    if all(isinstance(v, bool) for v in present):
        return column.astype("boolean")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        ints = all(isinstance(v, int) for v in present) and len(present) == len(column)
        return column.astype("int64" if ints else "float64")
    return column.map(lambda v: None if v is None or (isinstance(v, float) and v != v) else str(v))


def write_results(spec: SweepSpec, out: Path) -> tuple[Path, int]:
    """Write ``out/results.parquet``; its path and row count."""
    frame = collect_results(spec, out)
    path = out / RESULTS
    staging = path.with_name(f".{RESULTS}.partial")
    frame.to_parquet(staging, index=False)
    staging.replace(path)
    return path, len(frame)


def trace_files(spec: SweepSpec) -> list[Path]:
    """The trace files (and tenant maps) the spec reads, for the sweep's run.json."""
    paths: dict[Path, None] = {}
    for cell in spec.cells:
        for name in (cell.run.workload.trace, cell.run.workload.tenant_map):
            if name is None:
                continue
            path = Path(name).absolute()
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            paths.update(dict.fromkeys(p for p in files if p.exists()))
    return list(paths)


def write_sweep_manifest(out: Path, spec: SweepSpec, argv: list[str], cwd: Path) -> Path:
    """``out/run.json`` for a finished sweep: its command, the spec and traces it read, and
    the checksums of every cell's tables and results.parquet."""
    from schedlab.experiments.manifest import checksums, write_manifest

    path = write_manifest(out, argv=argv, cwd=cwd, out=out, settings={"spec": spec.name, "cells": len(spec.cells)})
    manifest = json.loads(path.read_text())
    manifest["inputs"].update(checksums(trace_files(spec)))
    manifest["outputs"] = {k: v for k, v in manifest["outputs"].items() if k != SPEC_COPY}
    path.write_text(json.dumps(manifest, indent=2, allow_nan=True) + "\n")
    return path


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            flat.update(_flatten(item, name + "."))
        elif isinstance(item, list):
            flat[name] = json.dumps(item)
        else:
            flat[name] = item
    return flat
