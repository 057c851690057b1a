"""Speed beside the peers: CPU time of Tiresias' and Helios' simulators and of schedlab on one trace.

Regenerates the speed table of benchmarks/README.md, section "Speed beside the peers": user +
system CPU seconds of each whole process (a peer simulator, or one ``schedlab simulate`` CLI
process with its start-up), best of ``--repeat`` runs, one timed process at a time, with the
1-minute load average read just before each run. The trace is the 14-day Philly-derived Chronus
``trace_job_Philly_MIX2.csv`` (times in minutes; its GPU jobs) and its first 3 days.

Rows (``--rows``, comma-separated; groups ``full``, ``3day``, ``all``):

- ``fifo``, ``shortest``, ``dlas-gpu``, ``dlas-gpu-8``: Tiresias' simulator (``--tiresias``, run as
  benchmarks/compare_tiresias.py runs it) on the whole trace on 120 x 8 GPUs, against schedlab's
  ``fifo``, ``srtf`` and ``tiresias`` with the simulator's settings matched from the CLI
  (``--placer first-fit``, ``--checkpoint-s 0 --restore-s 0``, Tiresias' thresholds and knob);
- ``tiresias-3day``: the same for ``fifo``, ``shortest`` and ``dlas-gpu`` on the first 3 days;
- ``helios``: the Helios QSSF simulator (``--helios``, HeliosArtifact) on the first 3 days split
  into the 11 Philly VCs of HeliosArtifact's ``philly_vc.csv`` (a job's VC is the trace's
  ``user`` column, ``vc_<name>``), in the artifact's own Philly setting (``-e Philly``), with
  FIFO, SJF, SRTF and QSSF and consolidated placement, against schedlab's ``fifo``, ``sjf``,
  ``srtf`` and ``qssf`` on the same file (``--format helios``, cluster ``helios:...``).

    python benchmarks/peer_speed.py --tiresias PATH/TO/Tiresias --helios PATH/TO/HeliosArtifact
    python benchmarks/peer_speed.py --tiresias ... --helios ... --rows 3day --repeat 3 --workdir DIR
    python benchmarks/peer_speed.py --tiresias ... --helios ... --workdir DIR --reuse

``--reuse`` takes the peers' timings from an earlier run in the same ``--workdir`` (peer runs take
minutes each) and times only schedlab. Writes ``speed.md``, ``speed.csv`` (one line per
measurement) and ``runs.csv`` (one line per timed process) to the work directory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_helios  # noqa: E402  (sibling benchmark scripts)
import compare_tiresias  # noqa: E402

NODES, GPUS_PER_NODE = compare_tiresias.NODES, compare_tiresias.GPUS_PER_NODE
DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEFAULT_TRACE = compare_tiresias.DEFAULT_TRACE
DEFAULT_VCS = DATA / "helios-artifact" / "philly_vc.csv"
SUBSET_MIN = 3 * 24 * 60  # the first 3 days, in the trace's minutes
# The Helios simulator's Philly experiment: it counts time from the first row of cluster_log.csv,
# simulates jobs submitted 2017-10-01 to 2017-11-30 and takes each job's predicted duration from
# estimators/Philly_lgb.csv (columns jobname, priority) in its working directory.
HELIOS_EXPERIMENT = "Philly"
HELIOS_ORIGIN = pd.Timestamp("2017-10-01 00:00:00")
TIME_FORMAT = compare_helios.TIME_FORMAT
VC_PREFIX = "vc_"


@dataclass(frozen=True)
class Part:
    """One measurement: a peer schedule against one schedlab configuration on one input."""

    key: str  # unique, names the files of the measurement
    peer: str  # "tiresias" or "helios"
    schedule: str  # the peer's schedule / policy
    data: str  # "full", "3day" (Tiresias' inputs) or "helios"
    policy: str  # schedlab's policy
    params: tuple[str, ...] = ()  # further schedlab CLI options


def _knob(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:g}"


THRESHOLDS = ",".join(f"{t:g}" for t in compare_tiresias.SIM_THRESHOLDS)
# compare_tiresias.py's matched settings, from the CLI: the placer places whatever fits the free
# GPU count (the simulator's count scheme), no pause cost; tiresias with the simulator's thresholds
# and PROMOTEKNOB (inf: dlas-gpu, no promotion).
MATCHED = ("--placer", "first-fit", "--checkpoint-s", "0", "--restore-s", "0")
TIRESIAS_PARAMS = {
    schedule: ("--param", f"thresholds_gpu_s={THRESHOLDS}", "--param", f"promote_knob={_knob(knob)}")
    for schedule, knob in compare_tiresias.SCHEDULES.items()
}
# Tiresias simulator schedule -> schedlab policy.
TIRESIAS_POLICY = {"fifo": "fifo", "shortest": "srtf", "dlas-gpu": "tiresias", "dlas-gpu-8": "tiresias"}


def tiresias_part(schedule: str, data: str) -> Part:
    policy = TIRESIAS_POLICY[schedule]
    params = MATCHED + TIRESIAS_PARAMS.get(schedule, ()) if policy == "tiresias" else MATCHED
    return Part(f"tiresias-{data}-{schedule}", "tiresias", schedule, data, policy, params)


def helios_part(policy: str) -> Part:
    # compare_helios.py's matching: consolidated placement on both sides, no pause cost in schedlab.
    return Part(f"helios-{policy}", "helios", policy, "helios", policy,
                ("--placer", "consolidate", "--checkpoint-s", "0", "--restore-s", "0"))  # fmt: skip


ROWS: dict[str, tuple[str, list[Part]]] = {
    "fifo": ("Tiresias sim `fifo` vs `fifo`", [tiresias_part("fifo", "full")]),
    "shortest": ("`shortest` vs `srtf` (matched)", [tiresias_part("shortest", "full")]),
    "dlas-gpu": ("`dlas-gpu` vs `tiresias` (matched)", [tiresias_part("dlas-gpu", "full")]),
    "dlas-gpu-8": ("`dlas-gpu-8` vs `tiresias` (matched, promotion)", [tiresias_part("dlas-gpu-8", "full")]),
    "tiresias-3day": ("same, 3-day subset: fifo / shortest / dlas-gpu",
                      [tiresias_part(s, "3day") for s in ("fifo", "shortest", "dlas-gpu")]),
    "helios": ("Helios sim, 11 Philly VCs, 3 days: FIFO / SJF / SRTF / QSSF",
               [helios_part(p) for p in ("fifo", "sjf", "srtf", "qssf")]),
}  # fmt: skip
GROUPS = {"full": ["fifo", "shortest", "dlas-gpu", "dlas-gpu-8"], "3day": ["tiresias-3day", "helios"], "all": list(ROWS)}


def select_rows(spec: str) -> list[str]:
    """Row names from ``--rows`` (names and groups, comma-separated), in the table's order."""
    chosen: set[str] = set()
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name not in ROWS and name not in GROUPS:
            raise SystemExit(f"--rows: unknown row {name!r}; choose of {', '.join([*ROWS, *GROUPS])}")
        chosen.update(GROUPS.get(name, [name]))
    if not chosen:
        raise SystemExit("--rows: no row given")
    return [row for row in ROWS if row in chosen]


def first_days(trace: pd.DataFrame, minutes: int = SUBSET_MIN) -> pd.DataFrame:
    """The rows of a Chronus trace submitted in its first ``minutes`` (its own clock, in minutes)."""
    return trace[trace["submit_time"] < minutes]


def read_vcs(path: Path) -> dict[str, int]:
    """HeliosArtifact's ``philly_vc.csv`` (columns ``vc``, ``node num``): nodes per VC."""
    table = pd.read_csv(path, dtype={"vc": str})
    if not {"vc", "node num"} <= set(table.columns):
        raise SystemExit(f"{path}: expected columns vc, node num")
    return {str(v): int(n) for v, n in zip(table["vc"], table["node num"], strict=True)}


def helios_trace(trace: pd.DataFrame, vc_nodes: dict[str, int], unit_s: float = 60.0) -> pd.DataFrame:
    """The GPU jobs of a Chronus trace as a Helios ``cluster_log.csv`` for the simulator's Philly
    experiment: VC = the ``user`` column without ``vc_``, job name = ``<model>-<job_id>``, times
    from 2017-10-01 00:00:00 in whole seconds, sorted by submission (stable: ties keep trace
    order), since the simulator counts time from the first row.

    The names are unique because the simulator's Philly experiment reads no job id: it keeps jobs
    as dicts and removes them from its queues by equality, so two jobs alike in every column it
    reads (VC, name, GPUs, submission, duration) would be confused, and its SRTF then loses one
    of them and never ends."""
    jobs = trace[trace["num_gpu"] > 0].sort_values("submit_time", kind="stable")
    user = jobs["user"].astype(str)
    if not user.str.startswith(VC_PREFIX).all():
        raise SystemExit(f"every job's user must name its VC as {VC_PREFIX}<name>")
    vc = user.str.removeprefix(VC_PREFIX)
    unknown = sorted(set(vc) - set(vc_nodes))
    if unknown:
        raise SystemExit(f"VC {unknown[0]} of the trace is not among the VCs given ({', '.join(vc_nodes)})")
    gpus = jobs["num_gpu"].astype("int64")
    too_big = gpus > vc.map(vc_nodes) * GPUS_PER_NODE
    if too_big.any():  # the simulator's loop would never end
        raise SystemExit(f"job {jobs['job_id'][too_big].iloc[0]} needs more GPUs than its VC has")
    submit_s = (jobs["submit_time"] * unit_s).round().astype("int64")
    duration = (jobs["duration"] * unit_s).round().astype("int64")
    if (duration <= 0).any():  # a 0-s job never ends in the simulator
        raise SystemExit("the trace has jobs of 0 s")
    submit = HELIOS_ORIGIN + pd.to_timedelta(submit_s, unit="s")
    return pd.DataFrame(
        {
            "job_id": jobs["job_id"].to_numpy(),
            "user": user.to_numpy(),  # the trace has no users; its user column is the VC
            "vc": vc.to_numpy(),
            "jobname": (jobs["model_name"].astype(str) + "-" + jobs["job_id"].astype(str)).to_numpy(),
            "gpu_num": gpus.to_numpy(),
            "cpu_num": 0,
            "node_num": (-(-gpus // GPUS_PER_NODE)).to_numpy(),
            "state": "COMPLETED",
            "submit_time": submit.dt.strftime(TIME_FORMAT).to_numpy(),
            "start_time": submit.dt.strftime(TIME_FORMAT).to_numpy(),
            "end_time": (submit + pd.to_timedelta(duration, unit="s")).dt.strftime(TIME_FORMAT).to_numpy(),
            "duration": duration.to_numpy(),
            "queue": 0,
        }
    )


def name_estimates(log: pd.DataFrame) -> pd.DataFrame:
    """The simulator's QSSF duration estimates (``Philly_lgb.csv``: jobname, priority in seconds;
    it multiplies by the GPUs), one row per job: the mean duration of the jobs of its model (the
    name without ``-<job_id>``). A stand-in for the artifact's LightGBM output for Philly."""
    model = log["jobname"].str.rsplit("-", n=1).str[0]
    means = log.groupby(model)["duration"].mean().round().astype("int64")
    return pd.DataFrame({"jobname": log["jobname"].to_numpy(), "priority": model.map(means).to_numpy()})


def write_helios_inputs(subset: pd.DataFrame, vcs: Path, workdir: Path) -> Path:
    """cluster_log.csv, VC sizes and the QSSF estimate file for the Helios rows; the trace dir."""
    vc_nodes = read_vcs(vcs)
    log = helios_trace(subset, vc_nodes)
    used = {v: vc_nodes[v] for v in vc_nodes if v in set(log["vc"])}
    if len(used) < len(vc_nodes):  # the simulator stops on a VC without jobs
        raise SystemExit(f"VCs without jobs in the subset: {', '.join(sorted(set(vc_nodes) - set(used)))}")
    trace_dir = workdir / "trace"
    trace_dir.mkdir(parents=True, exist_ok=True)
    log.to_csv(trace_dir / "cluster_log.csv", index=False)
    compare_helios.write_vcs(trace_dir, used, HELIOS_ORIGIN)
    (workdir / "estimators").mkdir(exist_ok=True)
    name_estimates(log).to_csv(workdir / "estimators" / f"{HELIOS_EXPERIMENT}_lgb.csv", index=False)
    return trace_dir


@dataclass
class Inputs:
    """Where each measurement's files are: the Tiresias work dirs (full, 3day), the Helios one."""

    dirs: dict[str, Path]
    chronus: dict[str, Path]  # the Chronus CSV schedlab reads per Tiresias input
    helios_trace: Path

    def schedlab_args(self, part: Part) -> list[str]:
        if part.peer == "tiresias":
            return ["--trace", str(self.chronus[part.data]), "--format", "tiresias", "--time-unit", "min",
                    "--cluster", f"uniform:{NODES}x{GPUS_PER_NODE}"]  # fmt: skip
        gpu_numbers = self.helios_trace / "cluster_gpu_number.csv"
        return ["--trace", str(self.helios_trace / "cluster_log.csv"), "--format", "helios",
                "--cluster", f"helios:{gpu_numbers}@{HELIOS_ORIGIN:%Y-%m-%d}"]  # fmt: skip


def write_inputs(trace_path: Path, vcs: Path, workdir: Path, parts: list[Part]) -> Inputs:
    """Write the inputs the chosen measurements need (cheap; rewritten identically on each run)."""
    trace = pd.read_csv(trace_path)
    datas = {p.data for p in parts}
    dirs, chronus = {}, {}
    for data in ("full", "3day"):
        if data not in datas:
            continue
        d = workdir / f"tiresias-{data}"
        d.mkdir(parents=True, exist_ok=True)
        if data == "full":
            chronus[data] = trace_path.resolve()
        else:
            chronus[data] = d / "trace_3day.csv"
            first_days(trace).to_csv(chronus[data], index=False)
        compare_tiresias.write_inputs(chronus[data], 60.0, d)
        dirs[data] = d
    helios_dir = workdir / "helios"
    if "helios" in datas:
        helios_dir.mkdir(parents=True, exist_ok=True)
        write_helios_inputs(first_days(trace), vcs, helios_dir)
        dirs["helios"] = helios_dir
    return Inputs(dirs, chronus, helios_dir / "trace")


def load1() -> float:
    return os.getloadavg()[0]


def timed(cmd: list[str], *, cwd: Path, env: dict[str, str], out: Path) -> dict:
    """Run ``cmd`` and return its user + system CPU time (with the children it waited for), wall
    time, peak RSS, exit code and the 1-minute load average just before it started."""
    load = load1()
    wall0 = time.perf_counter()
    with open(out, "wb") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": time.perf_counter() - wall0,
            "peak_rss_mb": usage.ru_maxrss / 1024, "load1": load, "exit": proc.returncode}  # fmt: skip


def run_peer(part: Part, inputs: Inputs, args: argparse.Namespace) -> dict:
    """One timed run of the peer simulator for ``part``."""
    workdir = inputs.dirs[part.data]
    if part.peer == "tiresias":
        load = load1()
        run = compare_tiresias.run_simulator(args.tiresias, workdir, part.schedule, False, [args.python])
        timing = json.loads((workdir / f"sim_{part.schedule}.json").read_text())
        return {"cpu_s": run.cpu_s, "wall_s": timing["wall_s"], "peak_rss_mb": timing["peak_rss_mb"], "load1": load, "exit": 0}
    log_root = workdir / "log"
    logs = compare_helios.helios_logs(log_root, inputs.helios_trace, part.schedule, HELIOS_EXPERIMENT)
    for path in logs:
        path.unlink(missing_ok=True)
    cmd = compare_helios.helios_command(args.helios, inputs.helios_trace, log_root, part.schedule,
                                        args.helios_processes, HELIOS_EXPERIMENT)  # fmt: skip
    result = timed(cmd, cwd=workdir, env=compare_helios.helios_env(), out=workdir / f"helios_{part.schedule}.out")
    # It exits non-zero at the end (its summary step wants the logs of all four policies), so
    # success is every VC's log written.
    missing = [p for p in logs if not p.exists()]
    if missing:
        raise SystemExit(f"Helios {part.schedule} (exit {result['exit']}) wrote no {missing[0]}; "
                         f"see {workdir / f'helios_{part.schedule}.out'}")  # fmt: skip
    return result


def schedlab_command() -> list[str]:
    """The ``schedlab`` console script of this Python environment."""
    script = Path(sys.executable).parent / "schedlab"
    found = str(script) if script.exists() else shutil.which("schedlab")
    if found is None:
        raise SystemExit("no `schedlab` command: install the package (pip install -e .)")
    return [found]


def run_schedlab(part: Part, inputs: Inputs, workdir: Path) -> dict:
    """One timed ``schedlab simulate`` process for ``part``."""
    out_dir = workdir / "schedlab" / part.key
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    cmd = [*schedlab_command(), "simulate", *inputs.schedlab_args(part), "--policy", part.policy, *part.params,
           "--no-progress", "--force", "--out", str(out_dir)]  # fmt: skip
    env = os.environ | {"COLUMNS": "120"}
    result = timed(cmd, cwd=workdir, env=env, out=workdir / "schedlab" / f"{part.key}.out")
    if result["exit"] != 0:
        raise SystemExit(f"schedlab ({part.key}) exited {result['exit']}; see {workdir / 'schedlab' / f'{part.key}.out'}")
    result["command"] = " ".join(cmd)
    return result


def mean_jcts(part: Part, inputs: Inputs, workdir: Path) -> tuple[float, float, int, int]:
    """Mean JCT (s) and job count of the last peer and schedlab runs: a check that both sides
    simulated the same jobs to comparable schedules (NaN where a log is missing)."""
    peer_jct, peer_n = math.nan, 0
    try:
        if part.peer == "tiresias":
            log = pd.read_csv(inputs.dirs[part.data] / f"sim_{part.schedule}" / "job.csv")
            jct = log["end_time"] - log["submit_time"]
        else:
            logs = compare_helios.helios_logs(inputs.dirs["helios"] / "log", inputs.helios_trace, part.schedule,
                                              HELIOS_EXPERIMENT)  # fmt: skip
            jct = pd.concat([pd.read_csv(p, usecols=["jct"]) for p in logs])["jct"]
        peer_jct, peer_n = float(jct.mean()), len(jct)
    except (FileNotFoundError, KeyError):
        pass
    ours = pd.read_parquet(workdir / "schedlab" / part.key / "jobs.parquet", columns=["submit_s", "end_s"])
    return peer_jct, float((ours["end_s"] - ours["submit_s"]).mean()), peer_n, len(ours)


def fmt_s(v: float) -> str:
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def tables(parts_by_row: dict[str, list[Part]], results: pd.DataFrame) -> str:
    """The speed table: per row the best CPU seconds of each side (the load average before that run
    in brackets) and their ratio; a row of several measurements lists them in order."""
    best = results.loc[results.groupby(["part", "side"])["cpu_s"].idxmin()].set_index(["part", "side"])
    lines = ["| peer schedule | peer | schedlab | ratio |", "|---|--:|--:|--:|"]
    for row, parts in parts_by_row.items():
        peer = [best.loc[(p.key, "peer")] for p in parts]
        ours = [best.loc[(p.key, "schedlab")] for p in parts]
        cell = lambda rs: " / ".join(f"{fmt_s(r['cpu_s'])} ({r['load1']:.1f})" for r in rs)  # noqa: E731
        ratio = " / ".join(f"{p['cpu_s'] / o['cpu_s']:.0f}x" for p, o in zip(peer, ours, strict=True))
        lines.append(f"| {ROWS[row][0]} | {cell(peer)} | {cell(ours)} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiresias", type=Path, help="a checkout of SymbioticLab/Tiresias (rows of Tiresias' simulator)")
    parser.add_argument("--helios", type=Path, help="a checkout of S-Lab-System-Group/HeliosArtifact (the helios row)")
    parser.add_argument("--rows", default="all",
                        help=f"rows, comma-separated: {', '.join(ROWS)}, or groups {', '.join(GROUPS)} (default all)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per side and measurement; the best counts")
    parser.add_argument("--reuse", action="store_true", help="take the peers' timings from an earlier run in --workdir")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="the Chronus trace (times in minutes)")
    parser.add_argument("--vcs", type=Path, default=DEFAULT_VCS, help="HeliosArtifact's philly_vc.csv (VC sizes in nodes)")
    parser.add_argument("--python", default="python2.7",
                        help="the Python 2.7 command for Tiresias' simulator (with PYENV_VERSION=2.7.18 for pyenv)")  # fmt: skip
    parser.add_argument("--helios-processes", type=int, default=None,
                        help="Helios -j: worker processes, one VC each (default: its own, min(VCs, CPUs))")  # fmt: skip
    args = parser.parse_args()
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    rows = select_rows(args.rows)
    parts = [p for row in rows for p in ROWS[row][1]]
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="peer_speed_"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    record_path = workdir / "peer_runs.json"
    # Peer timings of earlier runs in this work dir: those of the chosen rows are reused with
    # --reuse and replaced without it; those of other rows are kept.
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    for part in parts:
        if not args.reuse:
            record.pop(part.key, None)
        elif part.key in record and record[part.key]["trace"] != str(args.trace.resolve()):
            raise SystemExit(f"--reuse: {record_path} timed {part.key} on {record[part.key]['trace']}, not on {args.trace}")
    to_run = {p.peer for p in parts if p.key not in record}
    if "tiresias" in to_run:
        if args.tiresias is None or not (args.tiresias / "simulator" / "run_sim.py").exists():
            raise SystemExit("--tiresias: a checkout of SymbioticLab/Tiresias (with simulator/run_sim.py) is needed")
        args.tiresias = args.tiresias.resolve()
        compare_tiresias.check_python2(args.python)
    if "helios" in to_run:
        if args.helios is None or not (args.helios / "framework" / "QSSF Service" / "simulator.py").exists():
            raise SystemExit("--helios: a checkout of HeliosArtifact (with framework/QSSF Service/simulator.py) is needed")
        args.helios = args.helios.resolve()
    inputs = write_inputs(args.trace, args.vcs, workdir, parts)

    runs = []
    for part in parts:
        reused = part.key in record
        if reused:
            for i, r in enumerate(record[part.key]["runs"]):
                runs.append({"part": part.key, "side": "peer", "repeat": i + 1, "reused": True} | r)
        for i in range(args.repeat):  # interleaved: peer, schedlab, peer, schedlab, ...
            peer = "reused"
            if not reused:
                print(f"[{part.key}] {part.peer} {part.schedule}, run {i + 1} ...", file=sys.stderr, flush=True)
                r = run_peer(part, inputs, args)
                runs.append({"part": part.key, "side": "peer", "repeat": i + 1, "reused": False} | r)
                record.setdefault(part.key, {"trace": str(args.trace.resolve()), "runs": []})["runs"].append(r)
                record_path.write_text(json.dumps(record, indent=1))
                peer = f"{r['cpu_s']:.1f} s at load {r['load1']:.2f}"
            r = run_schedlab(part, inputs, workdir)
            runs.append({"part": part.key, "side": "schedlab", "repeat": i + 1, "reused": False} | r)
            print(f"[{part.key}] peer {peer}; schedlab {r['cpu_s']:.2f} s at load {r['load1']:.2f}",
                  file=sys.stderr, flush=True)  # fmt: skip
    results = pd.DataFrame(runs)
    results.to_csv(workdir / "runs.csv", index=False)

    detail = []
    for row in rows:
        for part in ROWS[row][1]:
            mine = results[results["part"] == part.key]
            peer, ours = mine[mine["side"] == "peer"], mine[mine["side"] == "schedlab"]
            bp, bo = peer.loc[peer["cpu_s"].idxmin()], ours.loc[ours["cpu_s"].idxmin()]
            peer_jct, our_jct, peer_n, our_n = mean_jcts(part, inputs, workdir)
            detail.append(
                {
                    "row": row,
                    "measurement": part.key,
                    "peer": f"{part.peer} {part.schedule}",
                    "schedlab": f"{part.policy} {' '.join(part.params)}",
                    "peer CPU s (best)": bp["cpu_s"],
                    "peer load1": bp["load1"],
                    "peer runs": len(peer),
                    "peer CPU s (all)": " ".join(f"{v:.1f}" for v in peer["cpu_s"]),
                    "schedlab CPU s (best)": bo["cpu_s"],
                    "schedlab load1": bo["load1"],
                    "schedlab runs": len(ours),
                    "schedlab CPU s (all)": " ".join(f"{v:.2f}" for v in ours["cpu_s"]),
                    "ratio": bp["cpu_s"] / bo["cpu_s"],
                    "jobs peer / schedlab": f"{peer_n:,} / {our_n:,}",
                    "mean JCT s peer": peer_jct,
                    "mean JCT s schedlab": our_jct,
                }
            )
    detail_table = pd.DataFrame(detail)
    detail_table.to_csv(workdir / "speed.csv", index=False)
    view = detail_table[["measurement", "peer CPU s (best)", "peer load1", "peer CPU s (all)", "schedlab CPU s (best)",
                         "schedlab load1", "schedlab CPU s (all)", "ratio", "jobs peer / schedlab",
                         "mean JCT s peer", "mean JCT s schedlab"]]  # fmt: skip
    text = "\n\n".join(
        [
            f"CPU seconds (user + sys of the whole process), best of {args.repeat} run{'s' * (args.repeat > 1)}"
            + (" (a reused peer figure: best of the runs recorded)" if results["reused"].any() else "")
            + "; in brackets the 1-minute load average just before that run.",
            tables({row: ROWS[row][1] for row in rows}, results),
            "Each measurement (all runs, and the last runs' mean JCT as a check that both sides simulated "
            "the same jobs):",
            compare_tiresias.markdown(view.fillna("")),
        ]
    )
    (workdir / "speed.md").write_text(text + "\n")
    print(text)
    print(f"\nInputs, logs and tables: {workdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
