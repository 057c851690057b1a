"""The ``schedlab`` command: simulate, compare, inspect traces, draw reports."""

from __future__ import annotations

import atexit
import copy
import functools
import gc
import inspect
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperOption

from schedlab.cli_slurm import serve_app, slurm_app
from schedlab.errors import ConfigError, did_you_mean
from schedlab.terminal import EXIT_INTERRUPTED, EXIT_TERMINATED, BoundaryGroup, HelpGroup, RunBars, Terminated, error_line

if TYPE_CHECKING:
    from typer._click import Context as ClickContext

    from schedlab.experiments.run import RunSpec, WorkloadSpec
    from schedlab.experiments.settings import Setting
    from schedlab.sim.config import SimConfig

app = typer.Typer(
    help=(
        "schedlab: simulate and compare GPU-cluster schedulers for deep-learning jobs.\n\n"
        "Quick start:\n\n"
        "  schedlab simulate --synthetic venus --jobs 5000 -p fifo --out runs/fifo\n\n"
        "  schedlab compare --synthetic venus --jobs 5000 -p fifo -p sjf -p srtf \\\n      --out runs/cmp\n\n"
        "  schedlab report runs/cmp"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: readable at 80 columns
    cls=BoundaryGroup,
)
traces_app = typer.Typer(help="List trace formats and synthetic profiles; inspect a trace file.", no_args_is_help=True,
                         rich_markup_mode=None, cls=HelpGroup)
app.add_typer(traces_app, name="traces")
app.add_typer(slurm_app, name="slurm")
app.add_typer(serve_app, name="serve")
console = Console()
err_console = Console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        import platform

        from schedlab import compiled_core

        core = "compiled" if compiled_core() else "interpreted"
        console.print(f"schedlab {_version()} ({core} core), Python {platform.python_version()}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print schedlab's version and whether its core is compiled, and exit.")] = False,
) -> None:  # fmt: skip
    pass  # the commands do the work; --version is handled by its callback

TraceOpt = Annotated[Optional[Path], typer.Option("--trace", help="Trace file (or folder, for pai).")]
FormatOpt = Annotated[Optional[str], typer.Option("--format", "-f", help="Trace format: see `schedlab traces list`.")]
SyntheticOpt = Annotated[Optional[str], typer.Option("--synthetic", help="Synthetic profile: venus, philly, gfs, gfs-a100, gfs-a100-calibrated, simple, hadar, hadar-uniform.")]
RunJobsOpt = Annotated[Optional[int], typer.Option("--jobs", "-n", min=1, help="Number of synthetic jobs (default: the profile's, 2000; hadar and hadar-uniform 480).")]
LoadOpt = Annotated[Optional[float], typer.Option("--load", min=0.01, help="Offered load of a synthetic trace (default: profile's).")]
ClusterOpt = Annotated[Optional[str], typer.Option("--cluster", "-c", help="Preset (see `schedlab clusters`), uniform:NxG[:TYPE], helios:PATH[@DATE], gfs:PATH, helios-vcs[@LOAD] (each VC sized to its jobs' demand). Default for synthetic traces: the profile's cluster.")]
PlacerOpt = Annotated[Optional[str], typer.Option("--placer", help="consolidate, best-fit, first-fit or random (default: the policy's).")]
WindowOpt = Annotated[Optional[str], typer.Option("--window", help="Keep jobs submitted in START:END hours from the trace start.")]
SampleOpt = Annotated[Optional[int], typer.Option("--sample", min=1, help="Keep a random sample of N jobs.")]
ArrivalOpt = Annotated[Optional[float], typer.Option("--arrival-scale", min=0.01, help="Load x K: compress inter-arrival gaps by K.")]
MapOpt = Annotated[Optional[list[str]], typer.Option("--map", help="For --format csv: CANONICAL=SOURCE column mapping, e.g. --map submit_s=submitted --map duration_s=runtime (repeat).")]
TimeUnitOpt = Annotated[Optional[str], typer.Option("--time-unit", help="Unit of the trace's numeric time fields (submit, duration, start/end): s, ms, min or h (default: the format's, s; Chronus trace_job_Philly_*.csv are in min).")]
SkipCpuOpt = Annotated[bool, typer.Option("--skip-cpu-jobs", help="Same as --skip cpu.")]
SkipOpt = Annotated[Optional[list[str]], typer.Option("--skip", help="Leave out jobs (counted under skipped): 'cpu' (0 GPUs) or COLUMN OP VALUE on a canonical column, OP one of < <= > >= == !=, times in seconds, e.g. --skip 'duration_s<60' (repeat).")]
TenantPrefixOpt = Annotated[Optional[str], typer.Option("--tenant-prefix", help="Strip this prefix from tenant names, e.g. vc_ to match the philly preset's VCs.")]
TenantMapOpt = Annotated[Optional[Path], typer.Option("--tenant-map", help="CSV trace_tenant,cluster_tenant: rename tenants (before --tenant-prefix).")]
TrainUntilOpt = Annotated[Optional[float], typer.Option("--train-until", min=0, help="Train/test split at HOURS from the trace start: jobs finished before it are history for predictors (qssf); only jobs submitted from it on are simulated.")]
HorizonOpt = Annotated[Optional[float], typer.Option("--horizon", min=0.001, help="Stop at this simulated time (hours); unfinished jobs are reported.")]
RestoreOpt = Annotated[Optional[float], typer.Option("--restore-s", min=0, help="Seconds to restore a paused or migrated job from its checkpoint (default 30).")]
RestartOpt = Annotated[Optional[float], typer.Option("--restart-s", min=0, help="Seconds an evicted job needs to run again: rescheduling, image pull, restore (default: Hadar's 10 s).")]
CkptOpt = Annotated[Optional[float], typer.Option("--checkpoint-s", min=0, help="Seconds to save a checkpoint on pause or migration (default 10).")]
SettingOpt = Annotated[Optional[str], typer.Option("--setting", help="A named set of engine options, policy parameters and workload options that reproduces a published setup: gfs-authors (the GFS evaluation as the authors' simulator runs it, see docs/gfs.md) or paper-text (the defaults). Options given explicitly win.")]
CkptModelOpt = Annotated[str, typer.Option("--checkpoint-model", help="What a pause or migration costs: fixed (checkpoint-s + restore-s for every job), framework (iteration boundary, whole state, scaled by GPU memory), transparent (FlowGPU-style, active GPU memory) or kill (lose work since the last periodic checkpoint, restart-s). See docs/migration.md.")]
SpeedupOpt = Annotated[float, typer.Option("--transparent-speedup", min=0.001, help="The transparent model's gain over framework checkpointing (default 1.7: FlowGPU's migration gain is 1.7x to 4.5x).")]
SPOT_PROFILES = ("gfs", "gfs-a100", "gfs-a100-calibrated")  # the synthetic profiles with a spot_scale
SpotScaleOpt = Annotated[Optional[float], typer.Option("--spot-scale", min=0.01, help="With --synthetic gfs or gfs-a100: multiply the number of spot jobs by K (1, 2, 4 = low, medium, high spot load).")]
CkptEveryOpt = Annotated[Optional[float], typer.Option("--checkpoint-interval-s", min=0.001, help="Periodic checkpoint interval (work seconds); an eviction loses work since the last one (default 1800).")]
ParamOpt = Annotated[Optional[list[str]], typer.Option("--param", help="A policy parameter KEY=VALUE (repeat); `schedlab policies NAME` lists them.")]
SharesOpt = Annotated[Optional[Path], typer.Option("--shares", help="Tenant weights (CSV tenant,weight or ASTRAEA's name,share): adds the fairness metrics (LTGF, finish-time fairness, Jain's index) to summary.json.")]
BootOpt = Annotated[float, typer.Option("--boot-s", min=0, help="Seconds for a powered-off node to boot.")]
CrossNodeOpt = Annotated[float, typer.Option("--cross-node-factor", min=0.001, max=1.0, help="Speed of a job spread over several nodes, relative to one node.")]
ColocationOpt = Annotated[float, typer.Option("--colocation-factor", min=0.001, max=1.0, help="Speed of each of two jobs sharing GPUs, relative to running alone.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace the run already in --out (its old files are removed).")]
ProgressOpt = Annotated[bool, typer.Option(help="Show progress bars (only when stderr is a terminal).")]
SimSeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seed for the synthetic trace, sampling and random placement.")]
TraceSeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seed for the synthetic trace and sampling.")]
CesSeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seed for the forecaster's training.")]
ForecastSeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seed for the synthetic trace and the forecasters' training.")]


def _workload_spec(
    trace: Path | None = None, *, window: str | None = None, mapping: list[str] | None = None,
    time_unit: str | None = None, skip_cpu_jobs: bool = False, skip: list[str] | None = None,
    tenant_map: Path | None = None, **fields: Any,
) -> WorkloadSpec:
    """A :class:`WorkloadSpec` from the command line's workload options; ``fields`` are its own
    fields as given (fmt, synthetic, jobs, seed, load, sample, arrival_scale, tenant_prefix)."""
    from schedlab.experiments.run import WorkloadSpec, parse_window

    options: dict[str, Any] = {}
    if mapping:
        options["columns"] = _pairs(mapping, "--map", "CANONICAL=SOURCE, e.g. --map duration_s=runtime")
    if time_unit:
        options["time_unit"] = time_unit
    rules = list(dict.fromkeys([*(["cpu"] if skip_cpu_jobs else []), *(skip or [])]))
    if rules:
        options["skip"] = tuple(rules)
    if options and trace is None:
        raise ConfigError("--map, --time-unit and --skip apply to a trace (--trace), not a synthetic workload")
    return WorkloadSpec(trace=str(trace) if trace is not None else None, window_s=parse_window(window),
                        options=options, tenant_map=str(tenant_map) if tenant_map is not None else None,
                        **fields)  # fmt: skip


def _run_options(
    trace: TraceOpt = None,
    fmt: FormatOpt = None,
    synthetic: SyntheticOpt = None,
    jobs: RunJobsOpt = None,
    load: LoadOpt = None,
    cluster: ClusterOpt = None,
    placer: PlacerOpt = None,
    seed: SimSeedOpt = 0,
    window: WindowOpt = None,
    sample: SampleOpt = None,
    arrival_scale: ArrivalOpt = None,
    mapping: MapOpt = None,
    time_unit: TimeUnitOpt = None,
    skip_cpu_jobs: SkipCpuOpt = False,
    skip: SkipOpt = None,
    tenant_prefix: TenantPrefixOpt = None,
    tenant_map: TenantMapOpt = None,
    train_until: TrainUntilOpt = None,
    spot_scale: SpotScaleOpt = None,
    param: ParamOpt = None,
    shares: SharesOpt = None,
    horizon: HorizonOpt = None,
    setting: SettingOpt = None,
    restore_s: RestoreOpt = None,
    restart_s: RestartOpt = None,
    checkpoint_s: CkptOpt = None,
    checkpoint_interval_s: CkptEveryOpt = None,
    checkpoint_model: CkptModelOpt = "fixed",
    transparent_speedup: SpeedupOpt = 1.7,
    boot_s: BootOpt = 300.0,
    cross_node_factor: CrossNodeOpt = 1.0,
    colocation_factor: ColocationOpt = 0.75,
) -> _RunOptions:
    """The options ``simulate`` and ``compare`` share: where the jobs come from, the cluster,
    the policy parameters and the engine settings."""
    from dataclasses import replace

    from schedlab.experiments.settings import get_setting

    chosen = get_setting(setting)
    wspec = _workload_spec(trace, fmt=fmt, synthetic=synthetic, jobs=jobs, seed=seed, load=load, window=window,
                           sample=sample, arrival_scale=arrival_scale, mapping=mapping, time_unit=time_unit,
                           skip_cpu_jobs=skip_cpu_jobs, skip=skip, tenant_prefix=tenant_prefix,
                           tenant_map=tenant_map)  # fmt: skip
    if train_until is not None:
        wspec = replace(wspec, train_until_s=train_until * 3600)
    if spot_scale is not None:
        if synthetic not in SPOT_PROFILES:
            raise ConfigError(f"--spot-scale needs --synthetic {' or '.join(SPOT_PROFILES)}")
        wspec = replace(wspec, options={**wspec.options, "spot_scale": spot_scale})
    wspec = chosen.workload(wspec)
    costs = {"restore_s": restore_s, "restart_s": restart_s, "checkpoint_s": checkpoint_s,
             "checkpoint_interval_s": checkpoint_interval_s}  # fmt: skip
    config = chosen.config({
        **{name: value for name, value in costs.items() if value is not None}, "boot_s": boot_s,
        "checkpoint_model": checkpoint_model, "transparent_speedup": transparent_speedup,
        "horizon_s": horizon * 3600 if horizon is not None else float("inf"),
        "cross_node_factor": cross_node_factor, "colocation_factor": colocation_factor,
    })  # fmt: skip
    weights = None
    if shares is not None:
        from schedlab.metrics.fairness import load_shares

        weights = load_shares(shares)
    params = _pairs(param, "--param", "KEY=VALUE, e.g. --param promote_knob=4")
    return _RunOptions(wspec, cluster, placer, seed, config, params, weights, chosen)


@dataclass(frozen=True)
class _RunOptions:
    """What :func:`_run_options` builds: everything of a run but its policy."""

    workload: WorkloadSpec
    cluster: str | None
    placer: str | None
    seed: int
    config: SimConfig
    params: dict[str, str]
    shares: dict[str, float] | None
    setting: Setting

    def spec(self, policy: str) -> RunSpec:
        from schedlab.experiments.run import RunSpec

        from schedlab.policies.registry import POLICIES

        given = self.setting.policy_params(policy, self.params)
        params = POLICIES[policy].parse(given)  # the one conversion of --param KEY=VALUE
        return RunSpec(self.workload, self.cluster, policy, self.placer, self.seed, self.config, params=params,
                       shares=self.shares)  # fmt: skip


def _with_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` the options of :func:`_run_options` too, passed to it built, as ``run``."""
    shared = list(inspect.signature(_run_options, eval_str=True).parameters.values())
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "run"]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        options = _run_options(**{p.name: kwargs.pop(p.name) for p in shared})
        command(**kwargs, run=options)

    required = [p for p in own if p.default is p.empty]
    signature = inspect.Signature(required + [p for p in own if p not in required] + shared)
    wrapper.__signature__ = signature  # type: ignore[attr-defined]  # read by inspect.signature; typeshed does not declare it
    wrapper.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return wrapper


def _fairness_line(summary: dict[str, Any]) -> str:
    return (f"fairness: tenant LTGF {summary['ltgf_tenant_min']:.3g}-{summary['ltgf_tenant_max']:.3g}, "
            f"Jain {summary['jain_tenants']:.3g}, finish-time rho mean {summary['ftf_rho_mean']:.3g} "
            f"(p95 {summary['ftf_rho_p95']:.3g})")  # fmt: skip


def _param_text(value: object) -> str:
    return ",".join(f"{v:g}" for v in value) if isinstance(value, list) else f"{value}"


def _pairs(values: list[str] | None, flag: str, form: str) -> dict[str, str]:
    pairs = [v.partition("=") for v in values or []]
    if any(not sep or not key.strip() for key, sep, _ in pairs):
        raise ConfigError(f"{flag} takes {form}")
    return {key.strip(): value for key, _, value in pairs}


def _invocation(ctx: typer.Context) -> list[str]:
    """The command as it ran, every option resolved (``--force`` left out): what ``rerun`` repeats.

    The subcommand names come from the context chain, not the program name, which is several
    words when run as ``python -m schedlab.cli`` (as ``rerun`` does)."""
    args: list[str] = []
    outer: ClickContext = ctx
    while outer.parent is not None:
        assert outer.info_name is not None
        args.insert(0, outer.info_name)
        outer = outer.parent
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or param.name == "force":
            continue
        if param.param_type_name == "argument":
            args.append(str(value))
            continue
        flag = next(o for o in param.opts if o.startswith("--"))
        if isinstance(param, TyperOption) and param.is_flag:
            if value or param.secondary_opts:
                args.append(flag if value else param.secondary_opts[0])
            continue
        for item in value if param.multiple else [value]:
            args += [flag, str(item)]
    return args


@contextmanager
def _run_dir(ctx: typer.Context, out: Path, force: bool, settings: object = None) -> Iterator[Path]:
    """Stage a run directory beside ``out``; on success write its ``run.json`` and move it into place."""
    from schedlab.experiments.manifest import write_manifest
    from schedlab.experiments.outdir import staged

    with staged(out, force=force) as stage:
        yield stage
        write_manifest(stage, argv=_invocation(ctx), cwd=Path.cwd(), out=out.absolute(), settings=settings)


def _run_line(summary: dict[str, Any]) -> str:
    from schedlab.metrics.tables import format_value

    keys = ("jct_mean_s", "queue_mean_s", "gpu_alloc_rate", "preemptions", "sim_wall_s")
    labels = ("JCT mean", "queueing mean", "GPU alloc (arrival window)", "preemptions", "wall")
    return " · ".join(f"{label} {format_value(key, summary.get(key))}" for key, label in zip(keys, labels))


@app.command()
@_with_run_options
def simulate(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (refused if a run is there, unless --force).")],
    policy: Annotated[str, typer.Option("--policy", "-p", help="Scheduler: see `schedlab policies`.")] = "fifo",
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    ces: Annotated[bool, typer.Option("--ces", help="Wrap the policy in the Helios CES energy service; also run vanilla DRS (summary blocks ces, vanilla_drs; ces_nodes.png).")] = False,
    ces_buffer: Annotated[int, typer.Option("--ces-buffer", min=0, help="CES buffer nodes kept on beyond demand.")] = 5,
    *,
    run: _RunOptions,
) -> None:
    """Run one policy over one workload and write jobs.parquet, timeseries.parquet, summary.json, run.json.

    The results appear in --out only when the run is complete; `schedlab rerun DIR` repeats it.

    Examples:

      schedlab simulate --synthetic venus --jobs 20000 --policy sjf --out runs/sjf

      schedlab simulate --trace ../shared/data/chronus/trace_job_Philly_MIX2.csv \\
          --format philly --time-unit min --cluster philly --tenant-prefix vc_ \\
          --policy tiresias --out runs/tiresias
    """
    from rich.columns import Columns

    from schedlab.experiments.outdir import check_out
    from schedlab.experiments.run import check_names, simulate_run
    from schedlab.metrics.tables import breakdown_table, summary_table

    check_out(out, force=force)
    check_names([policy], run.workload.synthetic)
    spec = run.spec(policy)
    spec.cluster_name()
    with _run_dir(ctx, out, force, settings=spec) as stage, RunBars([policy], enabled=progress) as bars:
        if ces:
            from dataclasses import replace

            from schedlab.energy.ces import CESConfig
            from schedlab.experiments.ces_run import simulate_with_ces

            ces_spec = replace(spec, ces=CESConfig(buffer_nodes=ces_buffer, boot_s=spec.config.boot_s))
            summary = simulate_with_ces(ces_spec, stage, progress=bars.tick())
        else:
            summary = simulate_run(spec, stage, progress=bars.tick())
    console.print(summary_table(summary))
    if "jain_tenants" in summary:
        console.print(_fairness_line(summary), highlight=False, markup=False)
    if summary.get("params"):
        console.print("parameters: " + " ".join(f"{k}={_param_text(v)}" for k, v in summary["params"].items()),
                      highlight=False, markup=False)  # fmt: skip
    console.print(Columns([breakdown_table(summary, "sizes", title="by job size (GPUs)"),
                           breakdown_table(summary, "tenants", title="by tenant")]))  # fmt: skip
    if ces:
        console.print(f"CES forecaster at the end of the run: [bold]{summary['ces']['forecaster']}[/] "
                      f"({escape(summary['ces']['choice_reason'])})")  # fmt: skip
    console.print(f"results in [bold]{escape(str(out))}[/]  (draw plots: schedlab report {escape(str(out))})")


@app.command()
@_with_run_options
def compare(
    ctx: typer.Context,
    policy: Annotated[list[str], typer.Option("--policy", "-p", help="A policy; repeat for several.")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory, one subfolder per policy (refused if a run is there, unless --force); without it the runs go to a temporary folder and only the comparison is shown.")] = None,
    processes: Annotated[int, typer.Option("--workers", "--processes", "-j", min=0, help="Policies run at once, one process each (default: cores); as sweep's --workers.")] = 0,
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    *,
    run: _RunOptions,
) -> None:
    """Run several policies on the same workload and cluster, in parallel processes.

    Shows one progress bar per policy and a line for each as it finishes, then the comparison.
    Writes DIR/<policy>/ (as simulate does), DIR/comparison.csv and DIR/run.json; without
    --out nothing is kept.

    Example:

      schedlab compare --synthetic philly --jobs 20000 -p fifo -p sjf -p srtf \\
          -p tiresias --out runs/cmp
    """
    from schedlab.experiments.outdir import check_out
    from schedlab.experiments.run import check_names, compare_runs
    from schedlab.metrics import comparison_frame, comparison_table
    from schedlab.metrics.tables import metrics_table

    with tempfile.TemporaryDirectory(prefix="schedlab-compare-") as scratch:
        target = out if out is not None else Path(scratch) / "compare"
        check_out(target, force=force)
        check_names(policy, run.workload.synthetic)
        specs = [run.spec(p) for p in policy]
        specs[0].cluster_name()
        with _run_dir(ctx, target, force, settings=specs) as stage, RunBars(policy, enabled=progress) as bars:
            summaries = compare_runs(specs, stage, processes=processes or os.cpu_count() or 1,
                                     on_progress=bars.update, on_done=lambda i, s: bars.done(i, _run_line(s)))  # fmt: skip
            frame = comparison_frame(summaries)
            frame.to_csv(stage / "comparison.csv", index=False)
    console.print(comparison_table(frame))
    by_class = _class_rows(summaries)
    if by_class:
        console.print(metrics_table(by_class, "per priority class (means; resident tasks are their own class)"))
    if out is not None:
        console.print(f"results in [bold]{escape(str(out))}[/]  (draw plots: schedlab report {escape(str(out))})")


def _class_rows(summaries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per policy, each priority class's mean JQT and JCT and its eviction rate where one is
    measured; empty when the runs have a single class."""
    classes = sorted({c for s in summaries for c in s.get("classes", {})})
    if len(classes) < 2:
        return {}
    rows: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        row: dict[str, Any] = {}
        for name in classes:
            m = summary["classes"].get(name)
            if m is not None:
                row[f"{name} JQT (s)"] = m["queue_mean_s"]
                row[f"{name} JCT (s)"] = m["jct_mean_s"]
                if m.get("eviction_rate") is not None:
                    row[f"{name} evicted (%)"] = 100.0 * m["eviction_rate"]
        rows[summary["policy"]] = row
    return rows


@app.command()
def rerun(
    run_dir: Annotated[Path, typer.Argument(help="A run directory with a run.json (simulate, compare, characterize, ces, forecast).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Where the repeat goes (default: RUN_DIR-rerun).")] = None,
    force: ForceOpt = False,
) -> None:
    """Repeat a run from its run.json and check that its tables come out byte for byte the same
    (or, written by another schedlab, with the same columns, dtypes and values).

    Fails (exit 2) when an input file, or one of the run's own tables, changed or went missing
    since the run; exits 1 when an output of the repeat differs.

    Example:

      schedlab rerun runs/quickstart
    """
    from schedlab.experiments.manifest import MANIFEST, changed_inputs, changed_outputs, compare_outputs, read_manifest
    from schedlab.experiments.outdir import check_out

    manifest = read_manifest(run_dir)
    changed = changed_inputs(manifest)
    if changed:
        raise ConfigError(f"{run_dir}: input changed or missing since the run: {', '.join(changed)}")
    altered = changed_outputs(manifest, run_dir)
    if altered:
        raise ConfigError(f"{run_dir}: the run's own tables no longer match the SHA-256 in its {MANIFEST}: "
                          f"{', '.join(altered)}; restore them, or run the recorded command again yourself")  # fmt: skip
    command = [str(a) for a in manifest["command"]]
    at = next((i for i, a in enumerate(command) if a in ("--out", "-o") or a.startswith("--out=")), None)
    if at is None or (at == len(command) - 1 and "=" not in command[at]):
        raise ConfigError(f"{run_dir / MANIFEST}: the recorded command has no --out, so the repeat has nowhere to go")
    cwd = Path(manifest["cwd"])
    if not cwd.is_dir():
        raise ConfigError(f"{run_dir}: the run's working directory {cwd} no longer exists")
    target = check_out(out or run_dir.with_name(run_dir.name + "-rerun"), force=force, option="--out")
    if "=" in command[at]:
        command[at] = f"--out={target}"
    else:
        command[at + 1] = str(target)
    if manifest.get("schedlab_version") != _version():
        err_console.print(f"note: the run was made with schedlab {manifest.get('schedlab_version')}, this is {_version()}")
    err_console.print("schedlab " + " ".join(command), markup=False, highlight=False)
    done = subprocess.run([sys.executable, "-m", "schedlab.cli", *command, *(["--force"] if force else [])], cwd=cwd)
    if done.returncode != 0:
        raise typer.Exit(done.returncode)
    same, different = compare_outputs(manifest, target)
    from schedlab.tables import same_values

    # A table written by another schedlab may hold the same values in other bytes (Parquet metadata).
    equal = [name for name in different if (target / name).is_file() and same_values(run_dir / name, target / name)]
    different = [name for name in different if name not in equal]
    for name in same:
        console.print(f"[green]identical[/] {escape(name)}")
    for name in equal:
        console.print(f"[green]same values[/] {escape(name)} (other bytes: another Parquet writer's metadata)")
    for name in different:
        console.print(f"[bold red]differs[/]   {escape(name)}")
    if different:
        error_line(err_console, f"{len(different)} of {len(same) + len(equal) + len(different)} tables differ from {run_dir}")
        raise typer.Exit(1)
    also = f", {len(equal)} with the same values" if equal else ""
    console.print(f"reproduced {escape(str(run_dir))} in {escape(str(target))}: {len(same)} tables byte for byte the same{also}")


def _version() -> str:
    from schedlab import __version__

    return __version__


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory, a compare directory, a sweep directory or a `schedlab serve slurm` state directory.")]) -> None:
    """Draw PNG plots (JCT and queueing CDFs, queue length and GPU allocation over time) into a run directory.

    For a sweep directory: DIR/report.html (comparison tables with the mean and spread over seeds,
    JCT and queueing CDFs, metrics against load) and DIR/tables.md (the spec's tables).

    Examples:

      schedlab report runs/quickstart

      schedlab report runs/cmp

      schedlab report runs/helios-table3
    """
    if (run_dir / "results.parquet").is_file() and (run_dir / "sweep.toml").is_file():
        return _sweep_report(run_dir)
    from schedlab.slurm.serve_report import is_serve_dir

    if is_serve_dir(run_dir):
        from schedlab.slurm.serve_report import draw as draw_serve

        for p in draw_serve(run_dir):
            console.print(f"wrote {escape(str(p))}")
        return
    from schedlab.metrics.plots import report as draw

    for p in draw(run_dir):
        console.print(f"wrote {escape(str(p))}")


@app.command()
def characterize(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory: one PNG per analysis, summary.json, index.html.")],
    trace: TraceOpt = None,
    fmt: FormatOpt = None,
    synthetic: SyntheticOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", "-n", min=1, help="Number of synthetic jobs (default 10000, more than simulate's: the distributions need them).")] = 10000,
    seed: TraceSeedOpt = 0,
    cluster: Annotated[Optional[str], typer.Option("--cluster", "-c", help="Show utilisation relative to this cluster's GPUs (and each VC's): a preset, uniform:NxG, helios:PATH[@DATE], gfs:PATH.")] = None,
    window: WindowOpt = None,
    sample: SampleOpt = None,
    mapping: MapOpt = None,
    time_unit: TimeUnitOpt = None,
    skip_cpu_jobs: SkipCpuOpt = False,
    skip: SkipOpt = None,
    tenant_prefix: TenantPrefixOpt = None,
    tenant_map: TenantMapOpt = None,
    force: ForceOpt = False,
) -> None:
    """Characterise a workload as in Hu et al. (SC '21, Helios) section 3: PNG plots and an HTML page.

    Hourly usage and submissions, monthly trends, per-VC utilisation, duration and GPU-demand CDFs, final states by GPU demand, GPU time and queueing by user, queueing delay by VC and over time (from the start times a trace records: helios, philly JSON, pai, openb, csv with queue_s); an analysis the trace lacks data for is skipped with a note.

    Examples:

      schedlab characterize --trace philly.csv --format pollux-philly \\
          --out char/philly

      schedlab characterize --synthetic venus --jobs 50000 --cluster venus \\
          --out char/venus
    """
    from schedlab.analysis.characterize import characterize as run_characterize
    from schedlab.cluster.presets import load_cluster
    from schedlab.experiments.outdir import check_out

    if (trace is None) == (synthetic is None):
        raise ConfigError("give either --trace PATH --format F or --synthetic PROFILE")
    check_out(out, force=force)
    spec = _workload_spec(trace, fmt=fmt, synthetic=synthetic, jobs=jobs, seed=seed, window=window, sample=sample,
                          mapping=mapping, time_unit=time_unit, skip_cpu_jobs=skip_cpu_jobs, skip=skip,
                          tenant_prefix=tenant_prefix, tenant_map=tenant_map)  # fmt: skip
    cluster_spec = load_cluster(cluster) if cluster else None
    with _run_dir(ctx, out, force, settings=spec) as stage, console.status("characterising ..."):
        paths = run_characterize(spec.build(), stage, cluster=cluster_spec)
    for p in paths:
        console.print(f"wrote {escape(str(out / p.relative_to(stage)))}")
    console.print(f"open [bold]{escape(str(out / 'index.html'))}[/] for the report")


@app.command()
def policies(
    name: Annotated[Optional[str], typer.Argument(help="A policy: show its parameters, defaults and help.")] = None,
) -> None:
    """List the registered scheduling policies and placers, or one policy's parameters.

    Examples:

      schedlab policies

      schedlab policies tiresias   # then: --param promote_knob=4
    """
    from rich.table import Table

    from schedlab.policies.common.placers import PLACERS
    from schedlab.policies.params import describe
    from schedlab.policies.registry import POLICIES

    if name is not None:
        info = POLICIES.get(name)
        if info is None:
            raise ConfigError(f"unknown policy '{name}'{did_you_mean(name, POLICIES)}; "
                              f"choose one of {', '.join(POLICIES)}")
        console.print(f"[bold]{name}[/]: {info.summary} (default placer: {info.default_placer})", highlight=False)
        if info.params is None:
            console.print("no parameters")
            return
        table = Table("--param KEY", "type", "default", "what it sets", title=f"parameters of {name}")
        for row in describe(info.params):
            table.add_row(*row)
        console.print(table)
        return
    table = Table("policy", "default placer", "what it does", title="policies")
    for info in POLICIES.values():
        table.add_row(info.name, info.default_placer, info.summary)
    console.print(table)
    placers = Table("placer", "what it does", title="placers")
    for placer, (_, doc) in PLACERS.items():
        placers.add_row(placer, " ".join((doc or "").split()))
    console.print(placers)
    console.print("A policy's parameters: schedlab policies NAME", markup=False)


@app.command()
def clusters() -> None:
    """List the cluster presets.

    Example:

      schedlab clusters
    """
    from rich.table import Table

    from schedlab.cluster.presets import PRESETS

    table = Table("preset", "what it is", title="cluster presets")
    for name, (summary, _) in PRESETS.items():
        table.add_row(name, summary)
    console.print(table)
    console.print(
        "Also: uniform:NxG[:TYPE], helios:PATH[@DATE] (cluster_gpu_number.csv), gfs:PATH (node_info_df.csv), "
        "helios-vcs[@LOAD] (each VC of the run's jobs sized to its demand at offered load LOAD, default 0.75)",
        markup=False,
    )


@app.command("ces")
def ces_replay(
    ctx: typer.Context,
    series: Annotated[Path, typer.Option("--series", help="Node series: CSV time,active,total; a Helios VC cluster_sequence_vc.csv; or a folder of VC folders.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")],
    test_days: Annotated[float, typer.Option("--test-days", min=0.05, help="Replay the last N days (from a midnight); the forecaster trains on what comes before.")] = 14.0,
    val_days: Annotated[float, typer.Option("--val-days", min=1.0, help="Days before the replay on which GBDT, last-value and seasonal-naive forecasts are compared; CES keeps the last value unless another beats it by --choice-margin (and at every lead).")] = 7.0,
    choice_margin: Annotated[float, typer.Option("--choice-margin", min=0.0, max=0.99, help="Relative SMAPE gain over the last value a forecaster needs on the validation days to replace it.")] = 0.10,
    buffer: Annotated[Optional[int], typer.Option("--buffer", min=0, help="Buffer nodes kept on beyond demand (default: 20 per 420 nodes, the Helios artifact's Philly setting).")] = None,
    history_checks: Annotated[int, typer.Option("--history-checks", min=1, help="RecentNodesTrend window, in 10-minute checks (paper: about 1 h).")] = 6,
    future_steps: Annotated[int, typer.Option("--future-steps", min=1, max=18, help="FutureNodesTrend window, in 10-minute steps (paper: 3 h).")] = 18,
    history_threshold: Annotated[float, typer.Option("--history-threshold", help="Power down only when RecentNodesTrend >= this many nodes (artifact: 0.1).")] = 0.1,
    forecast_threshold: Annotated[float, typer.Option("--forecast-threshold", help="Power down only when FutureNodesTrend >= this many nodes (artifact: 0).")] = 0.0,
    boot_s: Annotated[float, typer.Option("--boot-s", min=0, help="Seconds for a woken node to boot (paper: 5 minutes).")] = 300.0,
    cooling: Annotated[float, typer.Option("--cooling", min=1.0, help="Energy per saved server joule, cooling included (paper: cooling takes twice the servers' energy, so 3).")] = 3.0,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", min=1, help="GPUs per node, to turn GPU counts into nodes.")] = 8,
    holiday: Annotated[Optional[list[str]], typer.Option("--holiday", help="A holiday date (YYYY-MM-DD); repeat for several.")] = None,
    seed: CesSeedOpt = 0,
    force: ForceOpt = False,
) -> None:
    """Replay the Helios CES service and vanilla DRS on a recorded node-usage series.

    The defaults are the paper's setting (docs/helios-ces.md lists each one's source).
    Writes DIR/summary.json (blocks ces and vanilla_drs, the forecaster used and its scores)
    and DIR/ces_nodes.png.

    Example:

      schedlab ces \\
          --series ../shared/data/helios-artifact/philly_node_sequence.csv \\
          --out runs/ces-philly
    """
    from schedlab.energy.ces import CESConfig
    from schedlab.experiments.ces_replay import run_replay
    from schedlab.experiments.outdir import check_out
    from schedlab.metrics.tables import metrics_table
    from schedlab.predict.node_demand_eval import ChoiceRule

    check_out(out, force=force)
    config = CESConfig(history_checks=history_checks, future_steps=future_steps, history_threshold=history_threshold,
                       forecast_threshold=forecast_threshold, boot_s=boot_s, cooling_factor=cooling)  # fmt: skip
    with _run_dir(ctx, out, force, settings=config) as stage, console.status("choosing the forecaster and replaying ..."):
        summary = run_replay(series, stage, config=config, seed=seed, test_days=test_days, val_days=val_days,
                             buffer=buffer, holidays=tuple(holiday or ()), gpus_per_node=gpus_per_node,
                             rule=ChoiceRule(margin=choice_margin))  # fmt: skip
    rows = {label: {f"{name} ({unit})": _scaled(summary[block][key], scale) for key, name, unit, scale in _CES_METRICS}
            for block, label in (("ces", "CES"), ("vanilla_drs", "vanilla DRS"))}  # fmt: skip
    console.print(metrics_table(rows, title=f"CES replay, buffer {summary['ces']['config']['buffer_nodes']} nodes"))
    for row in summary["forecast_scores"]:
        console.print(f"forecast SMAPE {row['lead'] * 10} min ahead: GBDT {row['smape_gbdt']:.2f} %, "
                      f"last value {row['smape_last']:.2f} %, seasonal naive {row['smape_seasonal']:.2f} %")  # fmt: skip
    console.print(f"CES forecaster: [bold]{summary['forecaster']}[/] ({escape(summary['choice_reason'])})")
    console.print(f"results in [bold]{escape(str(out))}[/]")


_CES_METRICS = (
    ("node_util_before", "node utilisation before", "%", 100),
    ("node_util_after", "node utilisation after", "%", 100),
    ("nodes_off_mean", "nodes powered off, mean", "nodes", 1),
    ("wakeups_per_day", "wake-ups", "per day", 1),
    ("nodes_per_wakeup", "nodes woken per wake-up", "nodes", 1),
    ("jobs_delayed", "jobs delayed by a boot", "jobs", 1),
    ("kwh_saved", "energy saved", "kWh", 1),
)


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale


@app.command()
def forecast(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")],
    trace: TraceOpt = None,
    fmt: FormatOpt = None,
    synthetic: SyntheticOpt = None,
    series: Annotated[Optional[Path], typer.Option("--series", help="Demand CSV with columns time, org, gpus.")] = None,
    vc_sequences: Annotated[Optional[Path], typer.Option("--vc-sequences", help="Folder of Helios per-minute VC states (<vc>/cluster_sequence_vc.csv), one organisation per VC.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-n", min=1, help="Number of synthetic jobs (default 150000: about 55 days of gfs arrivals, the history the forecasters need).")] = 150000,
    seed: ForecastSeedOpt = 0,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Repeat for seeds SEED .. SEED+N-1 (a new synthetic trace and new training per seed) and report mean ± std.")] = 1,
    all_classes: Annotated[bool, typer.Option("--all-classes", help="Count every priority class, not only hp.")] = False,
    country: Annotated[Optional[str], typer.Option("--country", help="Holiday calendar: CN, US or none (default: CN for --synthetic gfs, gfs-a100 and --vc-sequences, else none).")] = None,
    lookback: Annotated[int, typer.Option("--lookback", min=2, help="Look-back window (hours).")] = 168,
    forecast_hours: Annotated[int, typer.Option("--forecast-hours", min=1, max=24, help="How far ahead to forecast (hours, at most 24: DeepAR's daily lag).")] = 24,
    test_days: Annotated[float, typer.Option("--test-days", min=0.05, help="Hold out the last N days for testing.")] = 7.0,
    epochs: Annotated[int, typer.Option("--epochs", min=1, help="Training epochs of OrgLinear and DLinear.")] = 20,
    min_steps: Annotated[int, typer.Option("--min-steps", min=0, help="Raise OrgLinear's and DLinear's epochs to at least this many Adam steps.")] = 500,
    deepar_steps: Annotated[int, typer.Option("--deepar-steps", min=1, help="Training steps (batches) of DeepAR.")] = 800,
    force: ForceOpt = False,
) -> None:
    """Compare the GFS GPU Demand Estimator (OrgLinear) with GFS-e, seasonal naive, DLinear, LightGBM and DeepAR.

    Builds per-organisation hourly GPU demand (HP jobs by default), trains on all but the last
    --test-days and writes DIR/forecast_comparison.csv (one row per seed and model),
    DIR/forecast_comparison.md (mean ± std over the seeds beside the paper's Table 7 and
    Figure 10) and a PNG of the largest organisation's forecast.

    Example:

      schedlab forecast --synthetic gfs --seeds 5 --out runs/gfs-forecast
    """
    from schedlab.experiments.forecast_eval import Settings
    from schedlab.experiments.forecast_report import run_report
    from schedlab.experiments.outdir import check_out
    from schedlab.metrics.tables import metrics_table
    from schedlab.predict.demand_series import DemandSeries, from_csv, from_vc_sequences, from_workload

    if sum(x is not None for x in (trace, synthetic, series, vc_sequences)) != 1:
        raise ConfigError("give exactly one of --synthetic PROFILE, --trace PATH --format F, --series CSV or --vc-sequences DIR")
    check_out(out, force=force)
    if country is None:
        country = "CN" if synthetic in SPOT_PROFILES or vc_sequences is not None else "none"
    fixed = (from_csv(series, country=country) if series is not None
             else from_vc_sequences(vc_sequences, country=country) if vc_sequences is not None else None)  # fmt: skip
    if fixed is not None:
        def series_for(_seed: int) -> DemandSeries:
            return fixed
    else:
        @functools.cache
        def series_for(s: int) -> DemandSeries:
            spec = _workload_spec(trace, fmt=fmt, synthetic=synthetic, jobs=jobs, seed=s)
            return from_workload(spec.build(), classes=None if all_classes else ("hp",), country=country)

    settings = Settings(lookback=lookback, horizon=forecast_hours, test_hours=max(1, round(24 * test_days)),
                        epochs=epochs, min_steps=min_steps, deepar_steps=deepar_steps)  # fmt: skip
    first = series_for(seed)
    title = f"{first.source}: {first.demand.shape[1]} organisations, {len(first)} hours, {forecast_hours} h ahead"
    with _run_dir(ctx, out, force) as stage, console.status("training and scoring forecasters ..."):
        rows, paths = run_report(series_for, list(range(seed, seed + seeds)), settings, stage, title)
    means = rows.groupby("model", sort=False).mean(numeric_only=True)
    table = {model: {_FORECAST_HEADERS[c]: r[c] for c in _FORECAST_HEADERS} for model, r in means.iterrows()}
    console.print(metrics_table(table, title=f"{title} (mean of {seeds} seed{'s' * (seeds > 1)})"))
    console.print("MAQE: mean |p-quantile - demand| / mean demand; QL: 2 x pinball loss / demand (see the .md)",
                  highlight=False)  # fmt: skip
    for p in paths:
        console.print(f"wrote {escape(str(out / p.relative_to(stage)))}")


_FORECAST_HEADERS = {"mae": "MAE (GPUs)", "mse": "MSE (GPUs²)", "rmse": "RMSE (GPUs)", "mape_pct": "MAPE (%)",
                     "maqe_0.9": "0.9-MAQE", "maqe_0.95": "0.95-MAQE", "ql_0.9": "0.9-QL", "ql_0.95": "0.95-QL",
                     "train_s": "train (s)"}  # fmt: skip


_FLAGS = {"columns": "--map", "time_unit": "--time-unit", "time_format": "--time-format (Python API only)",
          "skip": "--skip", "task_table": "task table file beside the job table (Python API only)"}  # fmt: skip


@traces_app.command("list")
def traces_list() -> None:
    """List trace formats (loaders), their options, and synthetic profiles.

    Example:

      schedlab traces list
    """
    from rich.table import Table

    from schedlab.workload.loaders import LOADERS
    from schedlab.workload.synthetic import PROFILES

    table = Table("--format", "what it reads", "options", title="trace formats")
    for name, info in LOADERS.items():
        table.add_row(name, info.description, ", ".join(_FLAGS.get(o, o) for o in info.options))
    console.print(table)
    prof = Table("--synthetic", "what it mimics", title="synthetic profiles")
    for name, p in PROFILES.items():
        prof.add_row(name, (type(p).__doc__ or "").strip().splitlines()[0])
    console.print(prof)


@traces_app.command("inspect")
def traces_inspect(
    path: Annotated[Path, typer.Argument(help="Trace file (or folder, for pai).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="Trace format: see `schedlab traces list`.")],
    mapping: MapOpt = None,
    time_unit: TimeUnitOpt = None,
    skip_cpu_jobs: SkipCpuOpt = False,
    skip: SkipOpt = None,
    tenant_prefix: TenantPrefixOpt = None,
    tenant_map: TenantMapOpt = None,
) -> None:
    """Show what a loader read and skipped: counts, GPU mix, duration quantiles.

    Examples:

      schedlab traces inspect ../shared/data/chronus/trace_job_Philly_MIX2.csv \\
          --format philly --time-unit min

      schedlab traces inspect jobs.csv --format csv --map submit_s=submitted \\
          --map duration_s=runtime --time-unit min
    """
    from schedlab.workload.inspect import describe, render_description

    spec = _workload_spec(path, fmt=fmt, mapping=mapping, time_unit=time_unit, skip_cpu_jobs=skip_cpu_jobs, skip=skip,
                          tenant_prefix=tenant_prefix, tenant_map=tenant_map)  # fmt: skip
    console.print(render_description(describe(spec.build())))


# --- sweep: a spec's grid of runs, and its HTML report ------------------------------------------


@app.command()
def sweep(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="A sweep spec (TOML): workloads, policies, seeds, engine settings; see docs/guide.md.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Sweep directory: DIR/cells/<cell>/, DIR/results.parquet. Rerunning into it skips finished cells.")],
    workers: Annotated[int, typer.Option("--workers", "-j", min=0, help="Cells run at once: local processes, or Ray CPUs with --ray local (default: cores).")] = 0,
    ray: Annotated[Optional[str], typer.Option("--ray", help="Run the cells on a Ray cluster at ADDRESS (needs the 'ray' extra and DIR on a shared file system); 'local' starts one here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Run every cell again, finished ones included.")] = False,
    progress: ProgressOpt = True,
) -> None:
    """Run every cell of a spec's grid (workloads x policies x parameters x settings x seeds).

    Each cell writes its run directory DIR/cells/<cell>/ only when complete; a rerun skips
    finished cells, so an interrupted sweep resumes where it stopped. Then writes
    DIR/results.parquet (one row per cell: its keys and every summary metric); once every cell
    is done, DIR/run.json (`schedlab rerun DIR`). Draw the page: schedlab report DIR.

    Examples:

      schedlab sweep experiments/specs/helios-table3.toml --out runs/helios-table3

      schedlab sweep my-spec.toml --out runs/mine --ray local
    """
    from schedlab.experiments.spec import load_spec, resolve_dates
    from schedlab.experiments.sweep import Outcome, cell_dir, prepare_out, run_sweep, write_results, write_sweep_manifest
    from schedlab.metrics.summary import read_summary

    parsed = resolve_dates(load_spec(spec))
    out = prepare_out(out, parsed, force=force)
    cells = parsed.cells
    counts = {"done": 0, "skipped": 0, "failed": 0}
    failures = []
    with _CellBar(len(cells), enabled=progress) as bar:

        def show(outcome: Outcome) -> None:
            counts[outcome.status] += 1
            bar.advance(counts)
            cell = cells[outcome.index]
            name = cell.name
            if outcome.status == "done":
                line = _run_line(read_summary(cell_dir(out, cell) / "summary.json"))
                bar.line(f"[green]✓[/] [bold]{escape(name)}[/] {escape(line)}")
            elif outcome.status == "failed":
                failures.append((name, outcome.message))
                bar.line(f"[bold red]✗[/] [bold]{escape(name)}[/] {escape(outcome.message.strip().splitlines()[-1])}")

        try:
            run_sweep(parsed, out, workers=workers or os.cpu_count() or 1, ray_address=ray, force=force, on_outcome=show)
        except (KeyboardInterrupt, Terminated) as stop:
            _, finished = write_results(parsed, out)
            what = "interrupted" if isinstance(stop, KeyboardInterrupt) else "terminated"
            error_line(err_console, f"{what}: {finished} of {len(cells)} cells are finished "
                                    "and kept; run the same command again to resume")  # fmt: skip
            raise typer.Exit(EXIT_INTERRUPTED if isinstance(stop, KeyboardInterrupt) else EXIT_TERMINATED) from None
    path, rows = write_results(parsed, out)
    console.print(f"{len(cells)} cells: {counts['done']} ran, {counts['skipped']} finished before, "
                  f"{counts['failed']} failed; {rows} rows in [bold]{path}[/]")  # fmt: skip
    if failures:
        for name, message in failures:
            err_console.print(f"cell {name} failed:\n{message.strip()}", markup=False, highlight=False)
        error_line(err_console, f"{len(failures)} cell(s) failed; fix the cause and run the same command to run them again")
        raise typer.Exit(1)
    write_sweep_manifest(out, parsed, _invocation(ctx), Path.cwd())
    console.print(f"draw the page: schedlab report {escape(str(out))}")


class _CellBar:
    """One progress bar over a sweep's cells (when stderr is a terminal), and a line per finished cell."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.console = Console(stderr=True)
        self.bar = Progress(TextColumn("[bold]cells"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                            TimeElapsedColumn(), TimeRemainingColumn(), console=self.console, transient=True,
                            disable=not (enabled and self.console.is_terminal))  # fmt: skip
        self.task = self.bar.add_task("cells", total=total, status="")

    def __enter__(self) -> _CellBar:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def advance(self, counts: dict[str, int]) -> None:
        status = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
        self.bar.update(self.task, completed=sum(counts.values()), status=status)

    def line(self, text: str) -> None:
        self.bar.console.print(text, highlight=False)


def _sweep_report(run_dir: Path) -> None:
    """The HTML page of a sweep directory, and its spec's Markdown tables."""
    from schedlab.experiments.report_html import write_report

    with console.status("drawing the sweep's report ..."):
        paths = write_report(run_dir)
    for p in paths:
        console.print(f"wrote {escape(str(p))}")


def main() -> None:
    """The ``schedlab`` console script: :data:`app` with two process-wide settings of a command line
    tool. NumPy's OpenBLAS runs one thread unless ``OPENBLAS_NUM_THREADS`` says otherwise: schedlab
    multiplies only small arrays, and the idle thread OpenBLAS starts spins for a while (about
    0.1 s of CPU per run here). The objects still alive at exit are frozen out of the
    interpreter's final garbage collections, which otherwise walk every object of every loaded
    library (0.1-0.2 s of CPU per run here): nothing in schedlab waits at exit on a cycle being
    collected (files and daemons are closed explicitly)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    atexit.register(gc.freeze)  # registered first, so run last of the exit handlers
    app_for(sys.argv[1:])()


def app_for(args: list[str]) -> typer.Typer:
    """:data:`app` with only the command or group that ``args`` start with, else all of it
    (``--help``, ``--version``, a misspelt name). Typer builds the click command of every
    registered function before it parses a word, about 60 ms of CPU here; a run needs one."""
    if not args:
        return app
    chosen = copy.copy(app)
    chosen.registered_commands = [info for info in app.registered_commands if _command_name(info) == args[0]]
    chosen.registered_groups = [info for info in app.registered_groups if info.name == args[0]]
    return chosen if chosen.registered_commands or chosen.registered_groups else app


def _command_name(info: typer.models.CommandInfo) -> str | None:
    if info.name is not None or info.callback is None:
        return info.name
    return typer.main.get_command_name(info.callback.__name__)


if __name__ == "__main__":
    main()
