"""``schedlab slurm``: a local Slurm sandbox of fake GPU nodes, and trace replay on it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from schedlab.errors import ConfigError
from schedlab.terminal import HelpGroup

slurm_app = typer.Typer(
    help=(
        "A real Slurm on this machine: start a sandbox of fake GPU nodes, replay a trace on it and "
        "compare with the simulator.\n\n"
        "Needs Slurm from Debian's packages (root):\n\n"
        "  apt-get install -y --no-install-recommends \\\n      slurmctld slurmd slurm-client munge\n\n"
        "  (with --accounting also: slurmdbd mariadb-server)\n\n"
        "Example:\n\n"
        "  schedlab slurm up --nodes 16 --accounting\n\n"
        "  schedlab slurm replay --synthetic simple --jobs 150 --speedup 1000 \\\n      --out runs/replay\n\n"
        "  schedlab slurm down"
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    cls=HelpGroup,
)
console = Console()
err_console = Console(stderr=True)

DirOpt = Annotated[Path, typer.Option("--dir", help="The sandbox's directory (config, logs, state, PIDs).")]
DEFAULT_DIR = Path("slurm-sandbox")


@slurm_app.command()
def up(
    nodes: Annotated[int, typer.Option("--nodes", "-N", help="Fake GPU nodes (one slurmd each).")] = 16,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs per node.")] = 8,
    gpu_type: Annotated[str, typer.Option("--gpu-type", help="GPU type name in Gres (gpu:TYPE:N).")] = "a100",
    partitions: Annotated[Optional[str], typer.Option("--partitions", help="Split the nodes into partitions NAME:NODES,... in order, e.g. vc1:8,vc2:8 (default: one partition 'gpu').")] = None,
    accounting: Annotated[bool, typer.Option("--accounting", help="Also start MariaDB and slurmdbd, so `sacct` works.")] = False,
    scheduler: Annotated[str, typer.Option("--scheduler", help="backfill (sched/backfill, Slurm's default) or builtin (strict priority order).")] = "backfill",
    sched_params: Annotated[Optional[str], typer.Option("--sched-params", help="Slurm's SchedulerParameters, e.g. bf_interval=5,bf_resolution=10.")] = None,
    conf: Annotated[Optional[list[str]], typer.Option("--conf", help="Another slurm.conf line KEY=VALUE (repeat), e.g. --conf PriorityWeightAge=1000.")] = None,
    port_base: Annotated[int, typer.Option("--port-base", help="First TCP port: slurmctld; +1 slurmdbd, +2 MariaDB, +10.. the nodes.")] = 16900,
    power_saving: Annotated[bool, typer.Option("--power-saving", help="Slurm's power saving: `scontrol update NodeName=N State=POWER_DOWN_ASAP` stops a node's slurmd after its jobs, POWER_UP or a job that needs it starts it again.")] = False,
    sandbox_dir: DirOpt = DEFAULT_DIR,
) -> None:
    """Start a Slurm sandbox: munged, slurmctld and one slurmd per fake GPU node (with --accounting also MariaDB and slurmdbd), all in --dir and stopped by `schedlab slurm down`.

    Examples:

      schedlab slurm up --nodes 16 --accounting

      schedlab slurm up --nodes 16 --partitions vc1:8,vc2:8 --scheduler builtin

      schedlab slurm up --nodes 4 --sched-params bf_interval=5 \\
          --conf PriorityWeightAge=1000

      schedlab slurm up --nodes 8 --power-saving --conf ResumeTimeout=60
    """
    from rich.status import Status

    from schedlab.slurm import sandbox
    from schedlab.slurm.conf import SandboxSpec, parse_extra, parse_partitions

    spec = SandboxSpec(
        nodes=nodes, gpus_per_node=gpus_per_node, gpu_type=gpu_type,
        partitions=parse_partitions(partitions or ""), accounting=accounting, scheduler=scheduler,
        scheduler_parameters=sched_params or "", extra=parse_extra(conf or []), port_base=port_base,
        power_saving=power_saving,
    )  # fmt: skip
    t0 = time.monotonic()
    with Status("starting the Slurm sandbox", console=err_console) as status:
        box = sandbox.up(spec, sandbox_dir, on_wait=lambda phase: status.update(f"Slurm sandbox: {phase}"))
    took = time.monotonic() - t0
    memory = sum(sandbox.memory_mb(box.layout).values())
    parts = ", ".join(f"{p} ({len(n)} nodes)" for p, n in spec.partition_nodes().items())
    console.print(f"Slurm sandbox up in {took:.1f} s: {nodes} nodes x {gpus_per_node} GPUs ({escape(gpu_type)}), "
                  f"partitions {escape(parts)}, sched/{scheduler}"
                  + (", accounting (slurmdbd on MariaDB)" if accounting else "")
                  + (", power saving" if power_saving else "")
                  + f"; {memory:.0f} MB resident")  # fmt: skip
    console.print(f"Use it:   export SLURM_CONF={escape(str(box.layout.slurm_conf))}", highlight=False, soft_wrap=True)
    console.print("          sinfo; sbatch --gres=gpu:1 --wrap 'sleep 10'; squeue", highlight=False, soft_wrap=True)
    console.print(f"Stop it:  schedlab slurm down --dir {escape(str(box.layout.root))}", highlight=False, soft_wrap=True)


@slurm_app.command()
def down(sandbox_dir: DirOpt = DEFAULT_DIR) -> None:
    """Stop the sandbox in --dir: every daemon it started (by PID), and any job left running."""
    from schedlab.slurm import sandbox
    from schedlab.slurm.conf import Layout

    state = sandbox.status(sandbox_dir)
    daemons = len(state.get("pids", {}))
    if not state["supervisor_alive"] and not sandbox.sandbox_processes(Layout(sandbox_dir.resolve())):
        console.print(f"the sandbox in {escape(str(sandbox_dir))} is not running; nothing to stop")
        return
    t0 = time.monotonic()
    leftovers = sandbox.down(sandbox_dir)
    for line in leftovers:
        err_console.print(f"killed a leftover process: {escape(line)}", highlight=False)
    remaining = sandbox.sandbox_processes(Layout(sandbox_dir.resolve()))
    if remaining:
        raise ConfigError(f"{len(remaining)} processes of the sandbox are still running: "
                          + "; ".join(f"{pid} {cmd}" for pid, cmd in remaining[:3]))  # fmt: skip
    console.print(f"stopped the Slurm sandbox ({daemons} daemons) in {time.monotonic() - t0:.1f} s; no process is left")


@slurm_app.command()
def status(sandbox_dir: DirOpt = DEFAULT_DIR) -> None:
    """Show the sandbox's daemons, their memory, and its nodes."""
    from rich.table import Table

    from schedlab.slurm import sandbox
    from schedlab.slurm.client import SlurmClient, SlurmUnavailable
    from schedlab.slurm.conf import Layout

    state = sandbox.status(sandbox_dir)
    layout = Layout(sandbox_dir.resolve())
    console.print(f"sandbox {escape(str(layout.root))}: {state['status']}"
                  + (f" (started in {state['startup_s']} s)" if "startup_s" in state else ""))  # fmt: skip
    memory = {int(k.split()[0]): v for k, v in sandbox.memory_mb(layout).items()}
    table = Table("daemon", "pid", "running", "MB")
    for name, pid in sorted(state.get("pids", {}).items()):
        table.add_row(name, str(pid), "yes" if state["alive"][name] else "no", f"{memory.get(pid, 0):.0f}")
    console.print(table)
    if state["supervisor_alive"]:
        try:
            nodes = SlurmClient(layout.slurm_conf, timeout_s=5).nodes()
        except SlurmUnavailable as exc:
            console.print(f"slurmctld does not answer: {escape(str(exc))}")
            return
        states: dict[str, int] = {}
        for n in nodes:
            node_state = "powered down" if "POWERED_DOWN" in n.flags else n.state
            states[node_state] = states.get(node_state, 0) + 1
        used = sum(n.gpus_used for n in nodes)
        total = sum(n.gpus for n in nodes)
        console.print(f"nodes: {', '.join(f'{v} {k}' for k, v in sorted(states.items()))}; GPUs in use {used}/{total}")


@slurm_app.command()
def env(sandbox_dir: DirOpt = DEFAULT_DIR) -> None:
    """Print the shell line that points Slurm's commands at the sandbox: eval "$(schedlab slurm env)"."""
    from schedlab.slurm.conf import Layout
    from schedlab.slurm.state import read_state

    layout = Layout(sandbox_dir.resolve())
    read_state(layout)
    print(f"export SLURM_CONF={layout.slurm_conf}")


@slurm_app.command()
def replay(
    trace: Annotated[Optional[Path], typer.Option("--trace", help="Trace file to replay.")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", help="Trace format: see `schedlab traces list`.")] = None,
    synthetic: Annotated[Optional[str], typer.Option("--synthetic", help="Or a synthetic profile: venus, philly, simple, ...")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-n", min=1, help="Replay the first N jobs (of the trace, after --window; or N synthetic jobs).")] = None,
    window: Annotated[Optional[str], typer.Option("--window", help="Keep jobs submitted in START:END hours from the trace start.")] = None,
    sample: Annotated[Optional[int], typer.Option("--sample", min=1, help="Keep a random sample of N jobs (after --window).")] = None,
    time_unit: Annotated[Optional[str], typer.Option("--time-unit", help="Unit of the trace's numeric times: s, ms, min or h.")] = None,
    tenant_prefix: Annotated[Optional[str], typer.Option("--tenant-prefix", help="Strip this prefix from tenant names.")] = None,
    speedup: Annotated[float, typer.Option("--speedup", "-k", min=0.001, help="Time compression K: submit at submit/K, sleep duration/K.")] = 100.0,
    time_limit: Annotated[str, typer.Option("--time-limit", help="Each job's limit: auto (the trace's, else its duration), exact (its duration) or xF (F x its duration); whole minutes, at least 1, plus 1 s margin.")] = "auto",
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of --sample, the synthetic trace and the simulation.")] = 0,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory for replay.parquet, jobs.parquet, summary.json, agreement.json.")] = Path("runs/slurm-replay"),
    force: Annotated[bool, typer.Option("--force", help="Replace the run already in --out.")] = False,
    simulate: Annotated[bool, typer.Option(help="Also simulate the same jobs with the sandbox's scheduler and compare.")] = True,
    sandbox_dir: DirOpt = DEFAULT_DIR,
) -> None:
    """Replay a trace on the running sandbox as sleep jobs, K times faster, collect what Slurm really did, and compare it with the simulated Slurm on the same jobs.

    Tenants become partitions when the sandbox has a partition of that name, else accounts of its default partition. Jobs above one node's GPUs run on whole nodes (-N).

    Examples:

      schedlab slurm replay --synthetic simple --jobs 150 --speedup 1000 \\
          --out runs/replay

      schedlab slurm replay \\
          --trace ../shared/data/chronus/trace_job_Philly_MIX2.csv \\
          --format philly --time-unit min --window 24:48 --sample 500 \\
          --speedup 1000 --out runs/replay-philly
    """
    from schedlab.experiments.outdir import staged
    from schedlab.experiments.run import WorkloadSpec, parse_window
    from schedlab.slurm import replay as rp
    from schedlab.slurm.sandbox import running_state
    from schedlab.slurm.conf import Layout, read_slurm_conf

    layout = Layout(sandbox_dir.resolve())
    if running_state(layout.root) is None:
        raise ConfigError(f"no Slurm sandbox runs in {layout.root}; start one with `schedlab slurm up`")
    rule = rp.LimitRule.parse(time_limit)
    options = {"time_unit": time_unit} if time_unit else {}
    spec = WorkloadSpec(trace=str(trace) if trace else None, fmt=fmt, synthetic=synthetic,
                        jobs=jobs if synthetic else None, seed=seed, window_s=parse_window(window), sample=sample,
                        options=options, tenant_prefix=tenant_prefix)  # fmt: skip
    workload = spec.build()
    if jobs is not None and trace is not None and jobs < len(workload):
        workload = workload.with_jobs(workload.jobs.iloc[:jobs])
    conf = read_slurm_conf(layout.slurm_conf)
    with staged(out, force=force) as stage:
        result = rp.replay_and_record(layout, conf, workload, speedup=speedup, rule=rule, out_dir=stage,
                                      console=err_console, simulate=simulate, seed=seed)  # fmt: skip
    _print_replay(result, out)


def _print_replay(result: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    real = result["summary"]
    console.print(f"replayed {real['jobs']} jobs in {result['wall_s']:.0f} s on the sandbox "
                  f"(speedup {result['speedup']:g}); wrote {escape(str(out))}")  # fmt: skip
    agreement = result.get("agreement")
    if not agreement:
        return
    table = Table(title=f"real Slurm vs simulated {agreement['policy']} (real seconds)")
    table.add_column("metric")
    table.add_column("real", justify="right")
    table.add_column("simulated", justify="right")
    table.add_column("difference", justify="right")
    for label, key in (("mean JCT", "mean_jct"), ("mean queueing", "mean_queue"), ("mean run time", "mean_run")):
        r, s = agreement[f"{key}_real_s"], agreement[f"{key}_sim_s"]
        table.add_row(label, f"{r:.2f} s", f"{s:.2f} s", f"{(r - s) / s:+.1%}" if s else "-")
    console.print(table)
    console.print(
        f"start time, real - simulated: median |diff| {agreement['start_diff_median_abs_s']:.2f} s, "
        f"p90 {agreement['start_diff_p90_abs_s']:.2f} s "
        f"({agreement['start_diff_median_abs_intervals']:.2f} and {agreement['start_diff_p90_abs_intervals']:.2f} "
        f"scheduling intervals of {agreement['interval_s']:g} s); "
        f"{agreement['share_within_one_interval']:.0%} of jobs start within one interval"
    )
    console.print(json.dumps({k: agreement[k] for k in ("jobs", "jobs_compared")}), highlight=False)


@slurm_app.command()
def restart(
    daemon: Annotated[str, typer.Argument(help="slurmctld, slurmdbd, munged, mariadb, or a node (gpu-n3) for its slurmd.")],
    down_for: Annotated[float, typer.Option("--down-for", min=0.0, help="Seconds to keep it stopped before starting it again.")] = 0.0,
    sandbox_dir: DirOpt = DEFAULT_DIR,
) -> None:
    """Stop one daemon of the running sandbox and start it again, through its supervisor; slurmctld keeps its state (jobs survive).

    Examples:

      schedlab slurm restart slurmctld --down-for 10

      schedlab slurm restart gpu-n3
    """
    from schedlab.slurm import sandbox

    took = sandbox.restart(sandbox_dir, daemon, down_s=down_for)
    console.print(f"restarted {escape(daemon)}: not serving for {took:.1f} s")


serve_app = typer.Typer(help="Services that act on a real cluster with schedlab's policies.", no_args_is_help=True,
                        rich_markup_mode=None, cls=HelpGroup)


@serve_app.command("slurm")
def serve_slurm(
    policy: Annotated[str, typer.Option("--policy", "-p", help="Ranking policy: qssf (predicted GPU time, trained on sacct), sjf (users' time limits), fifo, fair-share, astraea, gandiva-fair, themis, ssf.")] = "qssf",
    param: Annotated[Optional[list[str]], typer.Option("--param", help="A policy parameter KEY=VALUE (repeat); `schedlab policies NAME` lists them.")] = None,
    interval: Annotated[float, typer.Option("--interval", min=1.0, help="Seconds between cycles.")] = 30.0,
    apply: Annotated[bool, typer.Option("--apply", help="Write the SiteFactors (default: a dry run that only logs them).")] = False,
    state: Annotated[Path, typer.Option("--state", help="The service's state: serve.db, decisions.parquet, history.")] = Path("slurm-serve"),
    cycles: Annotated[Optional[int], typer.Option("--cycles", min=1, help="Stop after N cycles (default: run until Ctrl-C).")] = None,
    history_days: Annotated[float, typer.Option("--history-days", min=0.0, help="Days of sacct history that train qssf's predictor.")] = 30.0,
    history: Annotated[Optional[Path], typer.Option("--history", exists=True, dir_okay=False, help="Train qssf on this `sacct --json` export (e.g. from another cluster) instead of asking sacct.")] = None,
    sandbox_dir: Annotated[Optional[Path], typer.Option("--dir", help="A schedlab Slurm sandbox to serve (default: the Slurm of SLURM_CONF or /etc/slurm).")] = None,
    ces: Annotated[bool, typer.Option("--ces", help="Also power idle nodes down and up with Helios' CES (needs Slurm's power saving on).")] = False,
    ces_every: Annotated[float, typer.Option("--ces-every", min=1.0, help="Seconds between CES's periodic checks (Helios: 600).")] = 600.0,
) -> None:
    """Reorder a live Slurm queue with a schedlab policy, through each job's SiteFactor.

    Every --interval seconds: read squeue and sinfo, rank the pending jobs with the policy (the simulator's own policy classes), and write SiteFactor for each job whose place changed, in one scontrol session. Needs PriorityType=priority/multifactor; --apply needs root or SlurmUser. State and the log of every decision are in --state.

    Examples:

      schedlab serve slurm --dir slurm-sandbox --policy sjf           # dry run

      schedlab serve slurm --dir slurm-sandbox --policy qssf --apply
    """
    from rich.status import Status

    from schedlab.slurm.client import SlurmClient
    from schedlab.slurm.conf import Layout
    from schedlab.policies.registry import POLICIES
    from schedlab.slurm.service import RANKING_POLICIES, CycleResult, Service, ServeSettings, check_controller

    if policy not in RANKING_POLICIES:
        raise ConfigError(f"--policy {policy!r} cannot rank a live queue; choose one of {', '.join(RANKING_POLICIES)}")
    params = {}
    for item in param or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--param {item!r} is not KEY=VALUE")
        params[key.strip()] = value.strip()
    parsed = POLICIES[policy].parse(params)  # a bad key or value stops here, before Slurm is asked
    conf = Layout(sandbox_dir.resolve()).slurm_conf if sandbox_dir is not None else None
    client = SlurmClient(conf)
    config = check_controller(client, apply=apply, ces=ces)
    ces_config = None
    if ces:
        from schedlab.energy.ces import CESConfig, paper_buffer

        nodes = client.nodes()
        ces_config = CESConfig(check_s=ces_every, buffer_nodes=paper_buffer(len(nodes)))
        console.print(f"CES: a check every {ces_every:g} s, buffer {ces_config.buffer_nodes} of {len(nodes)} nodes, "
                      f"last-value forecast; power saving by {escape(config.get('SuspendProgram', '?'))}")  # fmt: skip
    if history is not None:
        from schedlab.workload.loaders import load_trace

        load_trace(str(history), "sacct")  # a bad file stops here, with its row and field
    settings = ServeSettings(policy=policy, params=parsed, interval_s=interval, apply=apply, history_days=history_days,
                             ces=ces_config, history_file=history.resolve() if history is not None else None)  # fmt: skip
    state = state.resolve()
    mode = "applying" if apply else "dry run (add --apply to write)"
    console.print(f"serving Slurm with {policy}, every {interval:g} s, {mode}; state in {escape(str(state))}")
    service = Service(client, settings, state, lambda line: console.print(escape(line), highlight=False))
    try:
        with Status("waiting for the first cycle", console=err_console) as status:

            def show(r: CycleResult) -> None:
                status.update(f"cycle {r.cycle}: {r.pending} pending, {r.changed} SiteFactors "
                              f"{'written' if r.applied else 'proposed'} in {r.seconds:.1f} s"
                              + (f", {len(r.errors)} errors" if r.errors else ""))  # fmt: skip
                for line in r.errors:
                    err_console.print(f"scontrol: {escape(line)}", highlight=False)

            service.run(cycles=cycles, on_cycle=show)
    finally:
        service.close()
