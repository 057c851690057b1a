"""Run simulations from plain settings: build the workload and cluster, simulate, write results.

A :class:`RunSpec` holds only picklable settings, so ``compare`` can hand one to each worker
process, which rebuilds the (deterministic) workload itself instead of shipping a large frame.
"""

from __future__ import annotations

import functools
import math
import queue
import resource
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.sizing import is_sized, sized_cluster
from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError, SchedlabError, did_you_mean
from schedlab.metrics import summarize, write_summary
from schedlab.metrics.fairness import check_shares
from schedlab.policies.params import as_dict
from schedlab.policies.registry import POLICIES, PolicyOptions, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import RunProgress, SimResult, Simulation
from schedlab.sim.policy import Policy
from schedlab.tables import write_parquet
from schedlab.workload.schema import Workload
from schedlab.workload.tenant_map import load_tenant_map

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

    from schedlab.energy.ces import CESConfig

# The cluster a synthetic profile runs on when none is given.
PROFILE_CLUSTERS = {"venus": "venus", "helios": "venus", "philly": "philly", "gfs": "gfs", "gfs-a100": "gfs-a100",
                    "gfs-a100-calibrated": "gfs-a100",
                    "simple": "uniform:8x8", "uniform": "uniform:8x8", "hadar": "hadar-60",
                    "hadar-uniform": "hadar-60"}  # fmt: skip


@dataclass(frozen=True)
class WorkloadSpec:
    """Where the jobs come from: a trace file or a synthetic profile, plus transforms.

    ``options`` go to the loader (every format takes ``time_unit`` and ``skip``, see
    :mod:`schedlab.workload.loaders`); tenants are renamed right after loading."""

    trace: str | None = None
    fmt: str | None = None
    synthetic: str | None = None
    jobs: int | None = None  # None: the profile's default_jobs, else 2000
    seed: int = 0
    load: float | None = None
    window_s: tuple[float, float] | None = None
    sample: int | None = None
    arrival_scale: float | None = None
    class_scale: tuple[str, float] | None = None
    cluster_gpus: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    train_until_s: float | None = None
    tenant_prefix: str | None = None  # stripped from tenant names (e.g. "vc_")
    tenant_map: str | None = None  # CSV trace_tenant,cluster_tenant, applied before the prefix

    def build_split(self) -> tuple[Workload | None, Workload]:
        """(history, evaluation): with ``train_until_s``, the jobs finished before it are
        history for predictors and only the jobs submitted from it on are simulated."""
        w = self.build()
        if self.train_until_s is None:
            return None, w
        from schedlab.workload import transforms  # imported on use, as pandas: a plain run needs neither

        history, evaluation = transforms.split_history(w, self.train_until_s)
        if len(evaluation) == 0:
            raise ConfigError(f"no job is submitted after the train/test split at {self.train_until_s / 3600:g} h")
        return history, evaluation

    def build(self) -> Workload:
        if self.trace is not None and self.synthetic is None:
            if not self.fmt:
                raise ConfigError("a trace needs its format (see `schedlab traces list`)")
            from schedlab.workload.loaders import load_trace  # imported on use: every loader, pyarrow.csv

            w = load_trace(self.trace, self.fmt, **self.options)
        elif self.synthetic is not None and self.trace is None:
            from schedlab.workload.synthetic import PROFILES, generate  # imported on use, as the loaders

            n = self.jobs if self.jobs is not None else getattr(PROFILES.get(self.synthetic), "default_jobs", 2000)
            w = generate(self.synthetic, n, seed=self.seed, cluster_gpus=self.cluster_gpus,
                         load=self.load, **self.options)  # fmt: skip
        else:
            raise ConfigError("give either a trace file (with its format) or a synthetic profile")
        if self.tenant_prefix or self.tenant_map or any(
            x is not None for x in (self.window_s, self.sample, self.arrival_scale, self.class_scale)
        ):
            w = self._transformed(w)
        if len(w) == 0:
            raise ConfigError("the workload has no jobs after loading and transforms")
        return w

    def _transformed(self, w: Workload) -> Workload:
        """``w`` with the spec's tenant renaming, window, sample and scalings applied, in that order."""
        from schedlab.workload import transforms  # imported on use, as pandas: a plain run needs neither

        if self.tenant_prefix or self.tenant_map:
            mapping = load_tenant_map(self.tenant_map) if self.tenant_map else None
            w = transforms.rename_tenants(w, mapping, self.tenant_prefix or "")
        if self.window_s is not None:
            w = transforms.time_window(w, *self.window_s)
        if self.sample is not None and self.sample < len(w):
            w = transforms.sample(w, n=self.sample, seed=self.seed)
        if self.arrival_scale is not None:
            w = transforms.scale_arrivals(w, self.arrival_scale)
        if self.class_scale is not None:
            w = transforms.scale_class(w, self.class_scale[0], self.class_scale[1], seed=self.seed)
        return w


@dataclass(frozen=True)
class RunSpec:
    """One simulation: workload, cluster, policy, placer, seed and engine settings."""

    workload: WorkloadSpec
    cluster: str | None
    policy: str
    placer: str | None = None
    seed: int = 0
    config: SimConfig = field(default_factory=SimConfig)
    ces: CESConfig | None = None  # wrap the policy in the CES service (or vanilla DRS)
    params: Any = None  # the policy's parameters (PolicyInfo.parse: its dataclass); None: its defaults
    shares: dict[str, float] | None = None  # tenant weights: the summary gets the fairness metrics

    def cluster_name(self) -> str:
        if self.cluster:
            return self.cluster
        profile = self.workload.synthetic
        if profile in PROFILE_CLUSTERS:
            return PROFILE_CLUSTERS[profile]
        raise ConfigError("a trace needs a cluster (see `schedlab clusters`)")


def check_names(policies: list[str], profile: str | None) -> None:
    """Fail early, before any work, on an unknown policy or profile."""
    for p in policies:
        if p not in POLICIES:
            raise ConfigError(f"unknown policy '{p}'{did_you_mean(p, POLICIES)}; choose one of {', '.join(POLICIES)}")
    if profile is None:
        return
    from schedlab.workload.synthetic import PROFILES

    if profile not in PROFILES:
        raise ConfigError(f"unknown synthetic profile '{profile}'{did_you_mean(profile, PROFILES)}; "
                          f"choose one of {', '.join(PROFILES)}")


@dataclass
class BuiltRun:
    """A run ready to simulate: its spec, workload (and warm-start history), cluster and policy."""

    spec: RunSpec
    workload: Workload
    history: Workload | None
    cluster: ClusterSpec
    policy: Policy
    params: dict[str, Any]


def build_run(
    spec: RunSpec,
    *,
    workload: Workload | None = None,
    history: Workload | None = None,
    cluster: ClusterSpec | None = None,
) -> BuiltRun:
    """Build the workload (unless given), the cluster and the policy of ``spec``.

    ``history`` (or the spec's train/test split) warm-starts predictor-based policies."""
    if cluster is None and is_sized(spec.cluster_name()):  # VCs sized to the simulated jobs
        if workload is None:
            history, workload = spec.workload.build_split()
        cluster = sized_cluster(spec.cluster_name(), workload)
    cluster = cluster or load_cluster(spec.cluster_name())
    if workload is None:
        wspec = spec.workload
        if wspec.synthetic is not None and wspec.cluster_gpus is None:
            wspec = replace(wspec, cluster_gpus=cluster.total_gpus)
        history, workload = wspec.build_split()
    if spec.shares is not None:
        check_shares(workload.column("tenant").unique().to_pylist(), spec.shares)
    options = PolicyOptions(history=history, seed=spec.seed, workload=workload, shares=spec.shares)
    policy = make_policy(spec.policy, placer=spec.placer, rng=np.random.default_rng(spec.seed), params=spec.params,
                         options=options)  # fmt: skip
    if spec.ces is not None:
        from schedlab.energy.policy import CESPolicy

        policy = CESPolicy(policy, spec.ces, seed=spec.seed)
    return BuiltRun(spec, workload, history, cluster, policy, as_dict(spec.params))


def execute(built: BuiltRun, *, progress: Callable[[RunProgress], None] | None = None) -> tuple[SimResult, dict[str, Any]]:
    """Simulate a built run; its result and summary (the policy's ``report`` adds its entries)."""
    spec = built.spec
    sim = Simulation(built.workload, built.cluster, built.policy, config=spec.config, seed=spec.seed)
    result = sim.run(progress=progress)
    extra = {
        "placer": spec.placer or POLICIES[spec.policy].default_placer,
        "workload": built.workload.source,
        "cluster": built.cluster.name,
        "cluster_gpus": built.cluster.total_gpus,
        "seed": spec.seed,
        "stalled_jobs": result.meta["stalled"],
        "not_arrived": result.meta["not_arrived"],
        "sim_wall_s": None,  # set by the caller, who knows what the run's wall time covers
        "engine_wall_s": round(result.meta["engine_wall_s"], 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if built.params:
        extra["params"] = built.params
    if built.history is not None:
        extra["history_jobs"] = len(built.history)
    extra.update(built.policy.report(result.job_columns))
    return result, summarize(result.job_columns, result.series_columns, policy=spec.policy, extra=extra,
                             shares=spec.shares)  # fmt: skip


def write_run(out_dir: Path, result: SimResult, summary: dict[str, Any], policy: Policy) -> list[Path]:
    """Write jobs.parquet, timeseries.parquet, summary.json and the policy's own artifacts."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_parquet(out_dir / "jobs.parquet", result.job_columns)
    write_parquet(out_dir / "timeseries.parquet", result.series_columns)
    paths = [out_dir / "jobs.parquet", out_dir / "timeseries.parquet", write_summary(out_dir / "summary.json", summary)]
    return paths + list(policy.artifacts(out_dir))


def simulate_run(
    spec: RunSpec,
    out_dir: Path | None,
    *,
    workload: Workload | None = None,
    history: Workload | None = None,
    cluster: ClusterSpec | None = None,
    progress: Callable[[RunProgress], None] | None = None,
) -> dict[str, Any]:
    """Build, simulate and (with an ``out_dir``) write one run; its summary."""
    wall0 = time.perf_counter()
    built = build_run(spec, workload=workload, history=history, cluster=cluster)
    result, summary = execute(built, progress=progress)
    summary["sim_wall_s"] = round(time.perf_counter() - wall0, 3)
    if out_dir is not None:
        write_run(out_dir, result, summary, built.policy)
    return summary


def compare_runs(
    specs: list[RunSpec],
    out_dir: Path,
    *,
    processes: int,
    on_progress: Callable[[int, RunProgress], None] | None = None,
    on_done: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run several specs (one per policy) in worker processes; results in ``out_dir/<policy>``.

    ``on_progress(i, progress)`` and ``on_done(i, summary)`` are called in this process as spec
    ``i`` advances and finishes. Workers ignore SIGINT; on any exception here (Ctrl-C included)
    they are terminated, so no worker outlives the call."""
    dirs = [out_dir / s.policy for s in specs]
    if len(set(dirs)) != len(dirs):
        raise ConfigError("each policy may be compared once (its results go to a folder named after it)")
    if processes <= 1 or len(specs) == 1:
        summaries = []
        for i, (spec, d) in enumerate(zip(specs, dirs, strict=True)):
            tick = None if on_progress is None else functools.partial(on_progress, i)
            summaries.append(simulate_run(spec, d, progress=tick))
            if on_done is not None:
                on_done(i, summaries[-1])
        return summaries
    return _run_in_processes(specs, dirs, processes, on_progress, on_done)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _run_in_processes(
    specs: list[RunSpec],
    dirs: list[Path],
    processes: int,
    on_progress: Callable[[int, RunProgress], None] | None,
    on_done: Callable[[int, dict[str, Any]], None] | None,
) -> list[dict[str, Any]]:
    """At most ``processes`` forked workers at once; each sends progress and its outcome on one queue."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    messages = ctx.Queue()
    todo = list(range(len(specs)))
    workers: dict[int, multiprocessing.process.BaseProcess] = {}
    summaries: dict[int, dict[str, Any]] = {}
    try:
        while len(summaries) < len(specs):
            while todo and len(workers) < processes:
                i = todo.pop(0)
                workers[i] = ctx.Process(target=_worker, args=(i, specs[i], dirs[i], messages), daemon=True)
                # A signal arriving during fork would be swallowed by an at-fork hook: hold it until after.
                signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
                try:
                    workers[i].start()
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            try:
                kind, i, payload = messages.get(timeout=0.2)
            except queue.Empty:
                for i, proc in workers.items():
                    if proc.exitcode is not None and messages.empty():
                        raise RuntimeError(f"the worker running policy '{specs[i].policy}' died (exit code {proc.exitcode})")
                continue
            if kind == "progress":
                if on_progress is not None:
                    on_progress(i, payload)
            elif kind == "done":
                workers.pop(i).join()
                summaries[i] = payload
                if on_done is not None:
                    on_done(i, payload)
            else:
                workers.pop(i).join()
                error, message = payload
                raise ConfigError(message) if error else RuntimeError(f"policy '{specs[i].policy}': {message}")
        return [summaries[i] for i in range(len(specs))]
    finally:
        for proc in workers.values():
            proc.kill()
            proc.join()
        messages.close()


def _worker(i: int, spec: RunSpec, out_dir: Path, messages: Queue[tuple[str, int, Any]]) -> None:
    """A compare worker: ignores Ctrl-C (the parent stops it) and reports on ``messages``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    try:
        summary = simulate_run(spec, out_dir, progress=lambda p: messages.put(("progress", i, p)))
    except SchedlabError as exc:
        messages.put(("error", i, (True, str(exc))))
    except Exception:
        messages.put(("error", i, (False, traceback.format_exc())))
    else:
        messages.put(("done", i, summary))
    messages.close()
    messages.join_thread()


def parse_window(text: str | None) -> tuple[float, float] | None:
    """``START:END`` in hours from the workload origin (either side may be empty)."""
    if text is None:
        return None
    start, sep, end = text.partition(":")
    try:
        lo = float(start) * 3600 if start else 0.0
        hi = float(end) * 3600 if end else math.inf
    except ValueError as exc:
        raise ConfigError(f"window {text!r}: expected START:END in hours, e.g. 0:72") from exc
    if not sep or hi <= lo:
        raise ConfigError(f"window {text!r}: expected START:END in hours with END > START")
    return lo, hi
