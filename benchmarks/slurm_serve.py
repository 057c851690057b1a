"""``schedlab serve slurm`` measured on a real Slurm, beside the simulator's prediction.

On a fresh sandbox per scheduler (16 fake 8-GPU nodes, accounting and power saving on), a
sample of a shared Philly trace is replayed time-compressed:

1. once, an earlier window (the site's history): its ``sacct --json`` trains QSSF's predictor
   (``serve slurm --history``), in the service and in the simulator alike;
2. the evaluation window with Slurm alone (the baseline);
3. the same window with ``schedlab serve slurm --policy qssf --apply`` running beside it;
4. (``--ces-on``) the same window with ``serve slurm --policy fifo --ces --apply``: CES parks
   idle nodes; the FIFO ranking keeps Slurm's own order (submit time, with every priority
   weight 0).

The simulator predicts (2) with ``slurm``/``slurm-backfill`` and (3) with the same Slurm policy
and the service beside it (:mod:`schedlab.slurm.served`: the same ranking code every cycle),
each on the submissions of its own run. The tables go into docs/slurm.md between
``<!-- slurm-serve:begin -->`` and ``<!-- slurm-serve:end -->``.

Needs Slurm's Debian packages and root (see docs/slurm.md); about 10 minutes per replay:

    python benchmarks/slurm_serve.py
    python benchmarks/slurm_serve.py --schedulers backfill --reuse --no-doc   # re-simulate only
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from doc_tables import replace_block
from rich.console import Console

from schedlab.experiments.run import WorkloadSpec
from schedlab.slurm import agreement as ag
from schedlab.slurm import replay as rp
from schedlab.slurm import sandbox
from schedlab.slurm.client import SlurmClient
from schedlab.slurm.conf import Layout, SandboxSpec, read_slurm_conf
from schedlab.workload.loaders import load_trace

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / ".." / "shared" / "data" / "chronus" / "trace_job_Philly_MIX2.csv"


def workload(args: argparse.Namespace, window: tuple[float, float]):
    return WorkloadSpec(trace=str(args.trace), fmt="philly", options={"time_unit": "min"},
                        window_s=(window[0] * 3600, window[1] * 3600), sample=args.sample, seed=args.seed).build()  # fmt: skip


def replay(layout: Layout, args: argparse.Namespace, window: tuple[float, float], out: Path, console: Console) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    return rp.replay_and_record(layout, read_slurm_conf(layout.slurm_conf), workload(args, window),
                                speedup=args.speedup, rule=rp.LimitRule.parse(args.time_limit), out_dir=out,
                                console=console, simulate=False, seed=args.seed)  # fmt: skip


def start_service(layout: Layout, state: Path, extra: list[str], args: argparse.Namespace) -> subprocess.Popen:
    """``schedlab serve slurm`` as a user would start it, once its first cycle is done."""
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    exe = shutil.which("schedlab") or str(Path(sys.executable).parent / "schedlab")
    cmd = [exe, "serve", "slurm", "--dir", str(layout.root), "--state", str(state),
           "--interval", f"{args.interval:g}", "--apply", *extra]  # fmt: skip
    log = open(state / "serve.log", "w")  # noqa: SIM115 - the child writes it until stopped
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the service stopped: {(state / 'serve.log').read_text()[-2000:]}")
        db = state / "serve.db"
        if db.exists():
            with sqlite3.connect(db) as con:
                row = con.execute("SELECT value FROM meta WHERE key = 'cycle'").fetchone()
            if row is not None:
                return proc
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("the service did not finish a cycle in 120 s")


def stop_service(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def first_cycle(state: Path, t0: float, interval: float) -> float:
    """The service's cycle phase in real seconds after the replay's start, from its decisions."""
    with sqlite3.connect(state / "serve.db") as con:
        times = [t for (t,) in con.execute("SELECT DISTINCT time FROM decisions ORDER BY time")]
    after = [t - t0 for t in times if t >= t0]
    return float(after[0] % interval) if after else 0.0


def wake_time(layout: Layout, node: str) -> float:
    """Seconds from ``POWER_UP`` of a parked idle node until Slurm shows it idle again."""
    client = SlurmClient(layout.slurm_conf)

    def state() -> tuple[str, set[str]]:
        info = next(n for n in client.nodes() if n.name == node)
        return info.state, set(info.flags)

    client.run(["scontrol", "update", f"NodeName={node}", "State=POWER_DOWN_ASAP"])
    deadline = time.monotonic() + 120
    while "POWERED_DOWN" not in state()[1]:
        if time.monotonic() > deadline:
            raise SystemExit(f"{node} did not power down in 120 s")
        time.sleep(0.2)
    t = time.monotonic()
    client.run(["scontrol", "update", f"NodeName={node}", "State=POWER_UP"])
    while True:
        st, flags = state()
        if st == "idle" and not flags & {"POWERED_DOWN", "POWERING_UP", "POWER_UP", "POWERING_DOWN"}:
            return time.monotonic() - t
        if time.monotonic() > deadline + 120:
            raise SystemExit(f"{node} did not come back in 120 s")
        time.sleep(0.1)


def power_events(root: Path, t0: float) -> pd.DataFrame:
    """Suspends and resumes the sandbox's supervisor served: (time after t0, action, node)."""
    from schedlab.slurm.conf import expand_hostlist

    rows = []
    for line in (root / "log" / "supervisor.log").read_text(errors="replace").splitlines():
        stamp, _, rest = line.partition(" ")
        words = rest.split()
        if len(words) == 2 and words[0] in ("suspend", "resume"):
            at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp() - t0
            rows += [{"time_s": at, "action": words[0], "node": n} for n in expand_hostlist(words[1])]
    return pd.DataFrame(rows, columns=["time_s", "action", "node"])


def ces_figures(record: pd.DataFrame, events: pd.DataFrame, nodes: int, speedup: float) -> dict:
    """Node-hours parked and wake-ups, per trace day, over the replay (start to last end), and
    each job's wait in CONFIGURING (its run beyond its sleep)."""
    end = float(record["end_s"].max())
    off_s = 0.0
    wakeups = 0
    for node, ev in events.sort_values("time_s").groupby("node"):
        since = None
        for t, action in zip(ev["time_s"], ev["action"]):
            if action == "suspend" and since is None:
                since = max(t, 0.0)
            elif action == "resume" and since is not None:
                off_s += max(0.0, min(t, end) - since)
                since = None
                wakeups += 0 <= t <= end
        if since is not None:
            off_s += max(0.0, end - since)
    days = end * speedup / 86400.0
    extra = (record["end_s"] - record["start_s"] - record["sleep_s"]).to_numpy(dtype=float)
    return {"replay_s": end, "trace_days": days, "node_hours_parked": off_s * speedup / 3600.0,
            "node_hours_parked_per_day": off_s * speedup / 3600.0 / days, "parked_share": off_s / (end * nodes),
            "wakeups": int(wakeups), "wakeups_per_day": wakeups / days,
            "extra_run_max_s": float(np.nanmax(extra)), "extra_run_p99_s": float(np.nanpercentile(extra, 99))}  # fmt: skip


def means(record: pd.DataFrame, jobs: pd.DataFrame | None = None) -> dict:
    """Mean JCT and queueing (real seconds) of the real run, or of a simulation of it."""
    submit = record["submitted_at"].to_numpy(dtype=float)
    if jobs is None:
        start, end = record["start_s"].to_numpy(dtype=float), record["end_s"].to_numpy(dtype=float)
    else:
        sim = jobs.set_index("job_id").loc[record["job_id"].astype(str)]
        start, end = sim["first_start_s"].to_numpy(dtype=float), sim["end_s"].to_numpy(dtype=float)
    return {"jct_s": float(np.mean(end - submit)), "queue_s": float(np.mean(start - submit))}


def one(scheduler: str, args: argparse.Namespace, console: Console) -> dict:
    base_dir = args.out / scheduler
    history = args.out / "history" / "sacct.json"
    if not args.reuse:
        shutil.rmtree(base_dir, ignore_errors=True)
        base_dir.mkdir(parents=True)
        spec = SandboxSpec(nodes=args.nodes, accounting=True, power_saving=True, scheduler=scheduler,
                           port_base=sandbox.find_port_base(args.nodes))  # fmt: skip
        box = sandbox.up(spec, base_dir / "sandbox")
        layout = box.layout
        try:
            if not history.is_file():
                console.print(f"[bold]history[/]: trace hours {args.history[0]:g}-{args.history[1]:g}")
                replay(layout, args, tuple(args.history), history.parent, console)
            console.print(f"[bold]{scheduler}: Slurm alone[/]")
            replay(layout, args, tuple(args.window), base_dir / "base", console)
            console.print(f"[bold]{scheduler}: with serve slurm --policy qssf --apply[/]")
            proc = start_service(layout, base_dir / "qssf-state", ["--policy", "qssf", "--history", str(history)], args)
            try:
                replay(layout, args, tuple(args.window), base_dir / "qssf", console)
            finally:
                stop_service(proc)
            if scheduler in args.ces_on:
                node = list(read_slurm_conf(layout.slurm_conf).nodes)[-1]
                wake = wake_time(layout, node)
                console.print(f"[bold]{scheduler}: with serve slurm --ces --apply[/] (a node wakes in {wake:.1f} s)")
                proc = start_service(layout, base_dir / "ces-state", ["--policy", "fifo", "--ces", "--ces-every",
                                                                      f"{args.ces_every:g}"], args)  # fmt: skip
                try:
                    replay(layout, args, tuple(args.window), base_dir / "ces", console)
                finally:
                    stop_service(proc)
                (base_dir / "wake.json").write_text(json.dumps({"node": node, "wake_s": wake}))
        finally:
            sandbox.down(base_dir / "sandbox")
            box.supervisor.wait(timeout=30)
    return measure(scheduler, base_dir, history, args)


def measure(scheduler: str, base_dir: Path, history_path: Path, args: argparse.Namespace) -> dict:
    conf = read_slurm_conf(base_dir / "sandbox" / "slurm.conf")
    history = load_trace(str(history_path), "sacct")
    base = pd.read_parquet(base_dir / "base" / "replay.parquet")
    served = pd.read_parquet(base_dir / "qssf" / "replay.parquet")
    t0 = json.loads((base_dir / "qssf" / "replay.json").read_text())["start_epoch_s"]
    sim_base, _ = ag.simulate(base, conf, seed=args.seed)
    sim_served, report = ag.simulate_served(served, conf, policy="qssf", interval_s=args.interval,
                                            first_s=first_cycle(base_dir / "qssf-state", t0, args.interval),
                                            epoch_s=t0, history=history, seed=args.seed)  # fmt: skip
    with sqlite3.connect(base_dir / "qssf-state" / "serve.db") as con:
        real_cycles = int(con.execute("SELECT value FROM meta WHERE key = 'cycle'").fetchone()[0])
        writes = con.execute("SELECT COUNT(*) FROM decisions WHERE applied = 1").fetchone()[0]
    report["real_service_cycles"], report["real_site_factor_writes"] = real_cycles, writes
    row = {"scheduler": scheduler, "real_base": means(base), "real_served": means(served),
           "sim_base": means(base, sim_base), "sim_served": means(served, sim_served), "sim_report": report}  # fmt: skip
    if (base_dir / "ces").is_dir():
        ces = pd.read_parquet(base_dir / "ces" / "replay.parquet")
        ces_t0 = json.loads((base_dir / "ces" / "replay.json").read_text())["start_epoch_s"]
        events = power_events(base_dir / "sandbox", ces_t0)
        row["ces"] = {**ces_figures(ces, events, len(conf.nodes), args.speedup), **means(ces),
                      "wake_s": json.loads((base_dir / "wake.json").read_text())["wake_s"],
                      "base_extra_run_max_s": float(np.nanmax((base["end_s"] - base["start_s"] - base["sleep_s"])))}  # fmt: skip
        extra = (ces["end_s"] - ces["start_s"] - ces["sleep_s"]).to_numpy(dtype=float)
        row["ces"]["jobs_waiting_on_a_woken_node"] = int((extra > row["ces"]["base_extra_run_max_s"]).sum())
    return row


def gain(before: float, after: float) -> float:
    return (before - after) / before


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    lines = ["| Slurm | metric | real: alone | real: with qssf | real gain | simulated: alone | simulated: with qssf "
             "| predicted gain | real / predicted gain |", "|---|---|--:|--:|--:|--:|--:|--:|--:|"]  # fmt: skip
    for r in rows:
        for key, label in (("jct_s", "mean JCT (s)"), ("queue_s", "mean queueing (s)")):
            real = gain(r["real_base"][key], r["real_served"][key])
            sim = gain(r["sim_base"][key], r["sim_served"][key])
            lines.append(f"| sched/{r['scheduler']} | {label} | {r['real_base'][key]:.1f} | {r['real_served'][key]:.1f} "
                         f"| {real:+.1%} | {r['sim_base'][key]:.1f} | {r['sim_served'][key]:.1f} | {sim:+.1%} "
                         f"| {real / sim if sim else float('nan'):.2f} |")  # fmt: skip
    counts = "; ".join(
        f"sched/{r['scheduler']}: {r['sim_report']['real_service_cycles']} cycles writing "
        f"{r['sim_report']['real_site_factor_writes']} SiteFactors (simulated: {r['sim_report']['service_cycles']} "
        f"and {r['sim_report']['service_site_factor_writes']})"
        for r in rows
    )
    lines.append(f"\nThe service from its own store (start to stop; the simulated one from the first submission "
                 f"to the last start): {counts}.")
    ces_rows = [r for r in rows if "ces" in r]
    ces_text = ""
    if ces_rows:
        ces_lines = ["| Slurm | node-hours parked per day | share of node time | wake-ups per day | node wake time "
                     "| jobs that waited on a woken node | longest wait in CONFIGURING (alone) "
                     "| mean JCT alone / with CES (s) | mean queueing alone / with CES (s) |",
                     "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]  # fmt: skip
        for r in ces_rows:
            c = r["ces"]
            ces_lines.append(
                f"| sched/{r['scheduler']} | {c['node_hours_parked_per_day']:.1f} | {c['parked_share']:.1%} "
                f"| {c['wakeups_per_day']:.1f} | {c['wake_s']:.1f} s | {c['jobs_waiting_on_a_woken_node']} "
                f"| {c['extra_run_max_s']:.1f} s "
                f"({c['base_extra_run_max_s']:.1f} s) | {r['real_base']['jct_s']:.1f} / {c['jct_s']:.1f} "
                f"| {r['real_base']['queue_s']:.1f} / {c['queue_s']:.1f} |")  # fmt: skip
        ces_text = ("\n\nCES (`serve slurm --policy fifo --ces --ces-every "
                    f"{args.ces_every:g} --apply`, a last-value forecast), in trace days (real x {args.speedup:g}):\n\n"
                    + "\n".join(ces_lines))  # fmt: skip
    w, h = args.window, args.history
    setup = (f"Philly MIX2 (`{TRACE.name}`), a random sample of {args.sample} jobs (seed {args.seed}) submitted "
             f"{w[0]:g}-{w[1]:g} h, replayed at x{args.speedup:g} on {args.nodes} nodes x 8 GPUs; QSSF trained on "
             f"the sandbox's `sacct` of the same-size sample from hours {h[0]:g}-{h[1]:g}; the service cycles every "
             f"{args.interval:g} s (real). Gains are (alone - with) / alone; times are real seconds.")  # fmt: skip
    argv = [a for a in args.argv if a not in ("--reuse", "--no-doc")]
    command = "python benchmarks/slurm_serve.py " + " ".join(argv)
    again = " (these tables were made again from its replays with `--reuse`)" if args.reuse else ""
    return f"{setup}\n\n" + "\n".join(lines) + ces_text + f"\n\nGenerated by `{command.strip()}`{again}.\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--history", type=float, nargs=2, default=(0.0, 24.0), metavar=("START_H", "END_H"))
    parser.add_argument("--window", type=float, nargs=2, default=(24.0, 48.0), metavar=("START_H", "END_H"))
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--speedup", type=float, default=600.0)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between the service's cycles")
    parser.add_argument("--ces-every", type=float, default=2.0, help="seconds between CES's periodic checks")
    parser.add_argument("--ces-on", nargs="*", default=["backfill"], help="schedulers with a CES run")
    parser.add_argument("--time-limit", default="auto")
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedulers", nargs="+", default=["builtin", "backfill"])
    parser.add_argument("--reuse", action="store_true", help="simulate again the replays already in --out")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "slurm-serve")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "slurm.md")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    console = Console(stderr=True)
    rows = [one(s, args, console) for s in args.schedulers]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "serve.json").write_text(json.dumps(rows, indent=2))
    text = markdown(rows, args)
    print(text)
    if not args.no_doc:
        replace_block(args.doc, "<!-- slurm-serve:begin -->", "<!-- slurm-serve:end -->", text)
        print(f"wrote the tables into {args.doc}")


if __name__ == "__main__":
    main()
