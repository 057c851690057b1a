"""Replay a trace on a running Slurm as sleep jobs, time-compressed by ``speedup``.

Each job becomes ``sbatch --wrap "sleep D/K"`` submitted K times faster than the trace
(``submit / K`` after the start), with ``--gres=gpu:G`` per node and ``-N`` nodes, its tenant
as partition (or as account when the sandbox has no such partition), a time limit (see
:func:`time_limit_min`) and as job name the trace's (its model where the trace names only
that, as the Tiresias/Chronus CSVs; else ``r<row>``), which a service ranking the queue reads.
What Slurm really did is read back from ``sacct`` (with accounting) or ``squeue`` (without:
the sandbox keeps ended jobs for ``MinJobAge``).

Times in ``replay.parquet`` are real seconds after the replay's start, which falls on a whole
second, so Slurm's whole-second timestamps are exact offsets.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.slurm.client import QueueJob, SlurmClient, SlurmUnavailable
from schedlab.slurm.conf import Layout, SlurmConf
from schedlab.workload.schema import Workload

if TYPE_CHECKING:
    from rich.console import Console

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
            "DEADLINE"}  # fmt: skip


@dataclass(frozen=True)
class LimitRule:
    """How a replayed job's time limit is set: ``trace`` (the trace's limit, else ``factor`` x
    its duration), or ``factor`` x its duration; in whole minutes (Slurm's unit), at least 1."""

    use_trace: bool = True
    factor: float = 1.0

    @classmethod
    def parse(cls, text: str) -> "LimitRule":
        """``auto`` (trace limit, else the duration), ``exact`` (the duration), ``x3`` (3 x the duration)."""
        if text == "auto":
            return cls(True, 1.0)
        if text == "exact":
            return cls(False, 1.0)
        if text.startswith("x"):
            try:
                factor = float(text[1:])
            except ValueError:
                factor = 0.0
            if factor >= 1.0 and math.isfinite(factor):
                return cls(False, factor)
        raise ConfigError(f"--time-limit must be auto, exact or xF with F >= 1, e.g. x2 (got {text!r})")


def time_limit_min(sleep_s: float, trace_limit_s: float, speedup: float, rule: LimitRule) -> int:
    """The limit in whole minutes: the trace's (compressed) when the rule allows and it has one,
    else ``factor`` x the sleep plus one second of launch margin, rounded up."""
    if rule.use_trace and trace_limit_s == trace_limit_s and math.isfinite(trace_limit_s):
        return max(1, math.ceil(trace_limit_s / speedup / 60.0 - 1e-9))
    return max(1, math.ceil((rule.factor * sleep_s + 1.0) / 60.0 - 1e-9))


def plan(workload: Workload, conf: SlurmConf, *, speedup: float, rule: LimitRule) -> pd.DataFrame:
    """One row per job: when to submit it (real seconds after the start), how long it sleeps,
    its nodes and GPUs per node, partition or account, and time limit. Raises ConfigError for a
    job the sandbox cannot run, naming its source row."""
    if not speedup > 0 or not math.isfinite(speedup):
        raise ConfigError(f"--speedup must be a positive number (got {speedup})")
    jobs = workload.jobs
    part_gpus = {p: conf.partition_gpus(p) for p in conf.partitions}
    rows = []
    for i, job in enumerate(jobs.itertuples(index=False)):
        tenant = str(job.tenant)
        partition, account = (tenant, "") if tenant in conf.partitions else (conf.default_partition, tenant)
        node_gpus = part_gpus[partition]
        width = max(node_gpus) if node_gpus else 0
        gpus = max(1, math.ceil(job.num_gpus))
        gpw = job.gpus_per_worker
        if gpw == gpw and gpw >= 1:
            per, nodes = int(gpw), int(round(gpus / gpw))
        elif gpus <= width:
            per, nodes = gpus, 1
        else:
            per, nodes = width, math.ceil(gpus / width) if width else 0
        if width == 0 or per > width or nodes * per != gpus or nodes > len(node_gpus):
            raise workload.error(i, "num_gpus", f"job '{job.job_id}' asks for {job.num_gpus:g} GPUs, which partition "
                                 f"'{partition}' ({len(node_gpus)} nodes of {width} GPUs) cannot give as whole nodes")  # fmt: skip
        sleep_s = float(job.duration_s) / speedup
        rows.append({
            "row": i, "job_id": str(job.job_id), "name": job.name or job.model or f"r{i}", "submit_at": float(job.submit_s) / speedup,
            "sleep_s": sleep_s, "nodes": nodes, "gpus_per_node": per, "num_gpus": gpus, "partition": partition,
            "account": account, "tenant": tenant,
            "time_limit_min": time_limit_min(sleep_s, float(job.time_limit_s), speedup, rule),
        })  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["submit_at"] -= frame["submit_at"].min()
    return frame


def sbatch_args(job: Any) -> list[str]:
    """The ``sbatch`` arguments of one planned job: a row of :func:`plan`'s frame."""
    args = ["-J", job.name, "-p", job.partition, "-N", str(job.nodes), f"--gres=gpu:{job.gpus_per_node}",
            "-t", str(job.time_limit_min), "-o", "/dev/null", "-e", "/dev/null"]  # fmt: skip
    if job.account:
        args += ["-A", job.account]
    return [*args, "--wrap", f"exec sleep {job.sleep_s:.3f}"]


@dataclass
class Progress:
    submitted: int = 0
    running: int = 0
    ended: int = 0
    total: int = 0
    elapsed_s: float = 0.0


def run(client: SlurmClient, planned: pd.DataFrame, *, on_progress: Callable[[Progress], None] | None = None,
        poll_s: float = 1.0, timeout_s: float | None = None) -> tuple[float, pd.DataFrame]:  # fmt: skip
    """Submit every planned job at its time and wait until all have ended. Returns the replay's
    start (epoch seconds, a whole second) and the planned table with ``slurm_id`` and
    ``submitted_at`` (real seconds after the start, as measured here). Interrupted, it cancels
    the jobs it submitted."""
    total = len(planned)
    ids = np.zeros(total, dtype=np.int64)
    submitted_at = np.full(total, np.nan)
    t0 = math.ceil(time.time()) + 1.0
    horizon = float(planned["submit_at"].max()) + float((planned["sleep_s"] + 60 * planned["time_limit_min"]).sum())
    deadline = t0 + (timeout_s if timeout_s is not None else horizon + 600)
    progress = Progress(total=total)
    last_poll = 0.0
    seen: dict[int, QueueJob] = {}
    order = planned.sort_values("submit_at", kind="stable")
    pending_rows = list(order.itertuples(index=True))
    try:
        while True:
            now = time.time()
            while pending_rows and now >= t0 + pending_rows[0].submit_at:
                job = pending_rows.pop(0)
                ids[job.Index] = _submit(client, sbatch_args(job))
                submitted_at[job.Index] = time.time() - t0
                progress.submitted += 1
                now = time.time()
            if now - last_poll >= poll_s:
                last_poll = now
                for q in _poll(client):
                    seen[q.job_id] = q
                mine = [seen[i] for i in ids[ids > 0] if i in seen]
                progress.running = sum(q.state == "RUNNING" for q in mine)
                progress.ended = sum(q.state in TERMINAL for q in mine)
                progress.elapsed_s = now - t0
                if on_progress is not None:
                    on_progress(progress)
                if not pending_rows and progress.ended == total:
                    break
            if now > deadline:
                raise ConfigError(f"the replay did not end within {deadline - t0:.0f} s; "
                                  f"{total - progress.ended} jobs are still pending or running")  # fmt: skip
            wait = min(poll_s, (t0 + pending_rows[0].submit_at - now) if pending_rows else poll_s)
            time.sleep(max(0.0, min(wait, 0.05 if pending_rows else poll_s)))
    except BaseException:
        _cancel(client, ids[ids > 0])
        raise
    out = planned.copy()
    out["slurm_id"] = ids
    out["submitted_at"] = submitted_at
    return t0, out


def _submit(client: SlurmClient, args: list[str]) -> int:
    """Submit with retries while the controller is briefly unavailable."""
    for attempt in range(5):
        try:
            return client.submit(args)
        except SlurmUnavailable:
            if attempt == 4:
                raise
            time.sleep(0.5 * 2**attempt)
    raise AssertionError("unreachable")


def _poll(client: SlurmClient) -> list[QueueJob]:
    try:
        return client.queue(all_states=True)
    except SlurmUnavailable:
        return []


def observed(client: SlurmClient, t0: float, submitted: pd.DataFrame) -> pd.DataFrame:
    """What Slurm recorded for each replayed job (from ``squeue --states=all``): submit, start
    and end as real seconds after ``t0``, state, nodes, the submitting user."""
    by_id = {q.job_id: q for q in client.queue(all_states=True)}
    rows = []
    for job in submitted.itertuples(index=False):
        q = by_id.get(int(job.slurm_id))
        if q is None:
            raise ConfigError(f"Slurm no longer shows job {job.slurm_id} (trace job '{job.job_id}'); "
                              "raise MinJobAge or use a sandbox with --accounting")  # fmt: skip
        rows.append({"slurm_submit_s": q.submit - t0, "start_s": q.start - t0 if q.start else np.nan,
                     "end_s": q.end - t0 if q.end else np.nan, "state": q.state, "node_list": q.node_list, "user": q.user})  # fmt: skip
    return pd.concat([submitted.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def with_log_times(record: pd.DataFrame, log: Path, t0: float) -> pd.DataFrame:
    """``record`` with each job's submit, start and end to the millisecond from slurmctld's log
    (``squeue`` and ``sacct`` round them down to whole seconds; those stay as ``*_whole_s``)
    and ``started_by`` (main or backfill). Jobs the log does not show keep the whole seconds."""
    from schedlab.slurm.ctld_log import read_events

    events = read_events(log).reindex(record["slurm_id"].to_numpy())
    out = record.copy()
    for col, whole, key in (("slurm_submit_s", "slurm_submit_whole_s", "submit"), ("start_s", "start_whole_s", "start"),
                            ("end_s", "end_whole_s", "end")):  # fmt: skip
        out[whole] = record[col]
        precise = events[key].to_numpy(dtype=float) - t0
        out[col] = np.where(np.isfinite(precise), precise, record[col].to_numpy(dtype=float))
    out["started_by"] = events["started_by"].fillna("").to_numpy()
    return out


def jobs_table(record: pd.DataFrame, workload: Workload, speedup: float) -> pd.DataFrame:
    """The replay as ``simulate``'s ``jobs.parquet``: trace seconds (real x speedup) after the
    first submission, one row per trace job."""
    jobs = workload.jobs
    k = speedup
    submit = record["slurm_submit_s"].to_numpy() * k
    start = record["start_s"].to_numpy() * k
    end = record["end_s"].to_numpy() * k
    ran = np.isfinite(start) & np.isfinite(end)
    finished = ran & (record["state"].to_numpy() == "COMPLETED")
    out = pd.DataFrame({
        "job_id": record["job_id"].to_numpy(), "user": jobs["user"].to_numpy(), "tenant": record["tenant"].to_numpy(),
        "priority_class": jobs["priority_class"].to_numpy(), "num_gpus": record["num_gpus"].to_numpy(dtype=float),
        "gpu_type": jobs["gpu_type"].to_numpy(), "submit_s": submit, "duration_s": jobs["duration_s"].to_numpy(),
        "first_start_s": start, "end_s": end, "finished": finished, "queue_s": np.where(ran, start - submit, np.nan),
        "run_s": np.where(ran, end - start, 0.0), "preemptions": np.zeros(len(record), dtype=np.int64),
        "gpu_seconds": np.where(ran, (end - start) * record["num_gpus"].to_numpy(dtype=float), 0.0),
        "final_state": [s.lower() if s in ("COMPLETED", "FAILED", "CANCELLED") else "failed" for s in record["state"]],
    })  # fmt: skip
    return out


def write(out: Path, name: str, frame: pd.DataFrame) -> Path:
    path = out / name
    frame.to_parquet(path, index=False)
    return path


def timeseries(record: pd.DataFrame, conf: SlurmConf, speedup: float) -> pd.DataFrame:
    """The cluster over time in trace seconds, with the columns of ``simulate``'s time series:
    GPUs allocated, running and pending jobs (from each job's Slurm submit, start and end),
    nodes on (all), and the per-type columns."""
    k = speedup
    submit = record["slurm_submit_s"].to_numpy(dtype=float) * k
    start = record["start_s"].to_numpy(dtype=float) * k
    end = record["end_s"].to_numpy(dtype=float) * k
    gpus = record["num_gpus"].to_numpy(dtype=float)
    ran = np.isfinite(start) & np.isfinite(end)
    left = np.where(ran, start, np.where(np.isfinite(end), end, np.inf))  # a job cancelled while pending
    events = [  # (time, d busy GPUs, d running, d pending)
        (submit, 0.0, 0, 1), (left[np.isfinite(left)], 0.0, 0, -1),
        (start[ran], gpus[ran], 1, 0), (end[ran], -gpus[ran], -1, 0),
    ]  # fmt: skip
    times = np.concatenate([e[0] for e in events])
    deltas = [np.concatenate([np.broadcast_to(e[c], e[0].shape) if np.ndim(e[c]) == 0 else e[c] for e in events])
              for c in (1, 2, 3)]  # fmt: skip
    order = np.argsort(times, kind="stable")
    frame = pd.DataFrame({"time_s": times[order], "gpus_busy": np.cumsum(deltas[0][order]),
                          "running_jobs": np.cumsum(deltas[1][order]), "pending_jobs": np.cumsum(deltas[2][order])})
    frame = frame.groupby("time_s", sort=True).last().reset_index()
    total = float(sum(g for g, _ in conf.nodes.values()))
    gtype = next(iter(conf.nodes.values()))[1] or "gpu"
    return pd.DataFrame({
        "time_s": frame["time_s"].to_numpy(), "gpus_total": total, "gpus_busy": frame["gpus_busy"].to_numpy(),
        "running_jobs": frame["running_jobs"].to_numpy(dtype=np.int64),
        "pending_jobs": frame["pending_jobs"].to_numpy(dtype=np.int64), "nodes_on": len(conf.nodes),
        f"gpus_busy[{gtype}]": frame["gpus_busy"].to_numpy(), f"gpus_total[{gtype}]": total,
    })  # fmt: skip


def replay_and_record(layout: Layout, conf: SlurmConf, workload: Workload, *, speedup: float, rule: LimitRule,
                      out_dir: Path, console: Console, simulate: bool = True, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Plan, submit and wait (with a progress bar on ``console``), then write ``replay.parquet``
    (real seconds), ``jobs.parquet``, ``timeseries.parquet`` and ``summary.json`` (trace
    seconds), ``sacct.json`` with accounting, ``replay.json``, and with ``simulate`` the
    simulated jobs and ``agreement.json``. Interrupted, it cancels the jobs it submitted."""
    import json

    from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn

    from schedlab.metrics.summary import summarize, write_summary

    client = SlurmClient(layout.slurm_conf)
    planned = plan(workload, conf, speedup=speedup, rule=rule)
    span = float(planned["submit_at"].max())
    console.print(f"replaying {len(planned)} jobs: submissions over {span:.0f} s (trace {span * speedup / 3600:.1f} h "
                  f"/ {speedup:g}), sleeps of {planned['sleep_s'].median():.1f} s median")  # fmt: skip
    bar = Bar(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
              console=console, disable=not console.is_terminal)  # fmt: skip
    wall0 = time.monotonic()
    with bar:
        task = bar.add_task("replay", total=len(planned), info="")

        def show(p: Progress) -> None:
            bar.update(task, completed=p.ended, info=f"submitted {p.submitted}, running {p.running}, ended {p.ended}")

        t0, submitted = run(client, planned, on_progress=show)
    wall = time.monotonic() - wall0
    record = observed(client, t0, submitted)
    log = Path(conf.settings.get("SlurmctldLogFile", ""))
    if log.is_file():
        record = with_log_times(record, log, t0)
    accounting = conf.settings.get("AccountingStorageType", "") == "accounting_storage/slurmdbd"
    if accounting:
        sacct = client.run(["sacct", "--json", "-a", "-S", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t0 - 5))],
                           timeout_s=60)  # fmt: skip
        (out_dir / "sacct.json").write_text(sacct)
    write(out_dir, "replay.parquet", record)
    jobs = jobs_table(record, workload, speedup)
    total = sum(g for g, _ in conf.nodes.values())
    ts = timeseries(record, conf, speedup)
    write(out_dir, "jobs.parquet", jobs)
    write(out_dir, "timeseries.parquet", ts)
    summary = summarize(jobs, ts, policy="slurm (real)", extra={"cluster_gpus": total})
    write_summary(out_dir / "summary.json", summary)
    result: dict[str, Any] = {"summary": summary, "wall_s": wall, "speedup": speedup, "start_epoch_s": t0,
                    "time_limit_rule": {"use_trace": rule.use_trace, "factor": rule.factor},
                    "slurm_conf": conf.settings, "source": workload.source}  # fmt: skip
    if simulate:
        from schedlab.slurm import agreement as ag

        interval = ag.interval_of(conf)
        (out_dir / "simulated").mkdir()
        sim_jobs, name = ag.simulate(record, conf, seed=seed)
        write(out_dir / "simulated", "jobs.parquet", sim_jobs)
        observed_jobs, _ = ag.simulate(record, conf, durations="observed", seed=seed)
        write(out_dir / "simulated", "jobs-observed-runtimes.parquet", observed_jobs)
        result["agreement"] = {"policy": name, **ag.compare(record, sim_jobs, interval_s=interval),
                               "observed_runtimes": ag.compare(record, observed_jobs, interval_s=interval)}  # fmt: skip
        (out_dir / "agreement.json").write_text(json.dumps(result["agreement"], indent=2))
    (out_dir / "replay.json").write_text(json.dumps({k: v for k, v in result.items() if k != "summary"}, indent=2,
                                                    default=str))  # fmt: skip
    return result


def _cancel(client: SlurmClient, ids: np.ndarray) -> None:
    """Cancel the replay's jobs (an interrupted replay), best effort."""
    try:
        if len(ids):
            client.run(["scancel", *(str(i) for i in ids)], timeout_s=10)
    except Exception:  # noqa: BLE001 - already failing; the sandbox's down cancels the rest
        pass
