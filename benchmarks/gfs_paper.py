"""GFS's simulation study (Duan et al., ASPLOS '26, arXiv 2509.11134, §4.1 and §4.4-4.6) on the
paper's setup, our figures beside the paper's: Tables 5, 6, 8, 9 and 10.

Setup as §4.1: the ``gfs-a100`` cluster (287 nodes x 8 A100 = 2,296 GPUs) and the
``gfs-a100`` synthetic workload calibrated to Table 3 (see ``docs/gfs-workload.md``); spot
workloads x1, x2, x4 (§4.1 "Workloads"); Tables 6, 8-10 at the medium spot workload (x2), as
their GFS rows (equal to Table 5b's) show. Metrics of §4.2 per class over every job of the run:
mean JCT, JCT-p99 (HP), mean JQT (all queueing segments, re-queues after evictions included)
and the spot eviction rate (evictions / runs).

    python benchmarks/gfs_paper.py table5 --jobs 40000 --seeds 0,1
    python benchmarks/gfs_paper.py all --jobs 40000 --seeds 0,1 --write-doc docs/gfs.md
    python benchmarks/gfs_paper.py contention --jobs 20000 --seeds 0,1,2   # arrival rates x1, x1.15, x1.3
    python benchmarks/gfs_paper.py readings --jobs 40000 --seeds 0,1,2     # eq. 11's two readings
    python benchmarks/gfs_paper.py all --jobs 40000 --seeds 0,1,2 \
        --profiles gfs-a100,gfs-a100-calibrated --settings paper-text,gfs-authors --write-doc docs/gfs.md

``--profiles`` and ``--settings`` repeat each table for every profile (``gfs-a100``: Table 3
only; ``gfs-a100-calibrated``: pods per gang task set by Fig. 8's allocation rate) and setting
(``paper-text``: the defaults; ``gfs-authors``: the baselines, costs and resident HP tasks of the
authors' simulator, :mod:`schedlab.experiments.settings`).

``contention`` (not in ``all``) runs gfs, two of its readings (eq. 9 pooled per model; Sa = all
spot GPUs) and yarn-cs-preempt at spot x2 with every arrival rate scaled by 1, 1.15 and 1.3
(the inter-arrival gaps shrink, the diurnal pattern with them).

``queue`` (not in ``all``) runs gfs at spot x2 with its three queue orders (``queue=pod``, the
public simulator's, by default; ``total``; ``fcfs``), gfs-s and two baselines: the measurement
behind the spot-JQT direction in docs/gfs.md.

``readings`` (not in ``all``) runs gfs at spot x2 for the four combinations of eq. 11's two
ambiguous readings (§3.3.2; see ``schedlab.policies.gfs.sqa``): ``eta`` updated once per ``H``
(default) or every 300 s with the quota (``eta_every_s=300``), and ``l`` the longest spot wait
over the past ``H`` (default) or the spot queue head's wait (``wait_reading=head``), the latter
two as in the authors' public simulator; at arrival rates x1 and x1.3.

``--write-doc`` replaces each table's block between ``<!-- gfs-paper:NAME -->`` and
``<!-- /gfs-paper:NAME -->`` in the given Markdown file with the printed table (NAME@K for
``--arrival-scale K``, NAME/PROFILE/SETTING for other than ``gfs-a100`` and ``paper-text``).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.experiments.settings import SETTINGS, get_setting
from schedlab.policies.registry import POLICIES

BASELINES = ("yarn-cs-preempt", "chronus", "lyra", "fgd")
ABLATIONS = ("gfs-e", "gfs-d", "gfs-s", "gfs-p", "gfs-sp", "gfs")
# Columns: HP JCT-p99, HP JCT, HP JQT, spot JCT, spot JQT (seconds), spot eviction rate (%).
COLUMNS = ("hp JCT-p99 s", "hp JCT s", "hp JQT s", "spot JCT s", "spot JQT s", "spot e %")
PAPER_TABLE5 = {
    1: {"yarn-cs-preempt": (29308.5, 17865.9, 77.4, 13287.4, 3110.2, 2.32),
        "chronus": (32580.0, 19925.8, 71.4, 12068.2, 724.7, None),
        "lyra": (29304.5, 17863.5, 114.9, 12473.2, 2360.9, 1.30),
        "fgd": (29308.5, 17905.3, 116.8, 15680.9, 4887.7, 17.32),
        "gfs": (29304.5, 17777.1, 28.4, 10438.7, 323.0, 0.74)},
    2: {"yarn-cs-preempt": (29308.5, 17891.5, 102.9, 15866.3, 5087.4, 16.74),
        "chronus": (32580.0, 19930.0, 76.0, 12538.4, 1211.7, None),
        "lyra": (29304.5, 17862.3, 113.7, 15107.9, 5016.8, 1.78),
        "fgd": (29308.5, 17900.0, 111.5, 16168.0, 5450.5, 15.36),
        "gfs": (29304.5, 17776.7, 27.7, 10715.3, 575.4, 1.21)},
    4: {"yarn-cs-preempt": (29308.5, 17892.3, 103.9, 17221.1, 6494.5, 14.94),
        "chronus": (32580.0, 20084.3, 230.7, 15373.0, 4039.2, None),
        "lyra": (29304.5, 17867.8, 119.1, 21123.7, 11026.5, 1.63),
        "fgd": (29308.5, 17901.0, 112.5, 20741.3, 10110.6, 12.99),
        "gfs": (29304.5, 17780.3, 30.3, 13117.1, 2901.0, 1.24)},
}  # fmt: skip
# Tables 6 and 8-10 give no JCT-p99.
PAPER_TABLE6 = {1: (None, 17776.7, 27.7, 10715.3, 575.4, 1.21), 2: (None, 17776.9, 28.4, 10619.0, 506.6, 1.29),
                4: (None, 17776.9, 28.4, 13252.8, 3145.6, 1.16)}  # fmt: skip
CONTENTION = (1.0, 1.15, 1.3)  # arrival-rate factors of the contention sweep (spot x2)
READING_ARRIVALS = (1.0, 1.3)  # arrival-rate factors of the readings sweep (spot x2)
READINGS = (("eta per H, l longest", {}), ("eta per H, l head", {"wait_reading": "head"}),
            ("eta per 300 s, l longest", {"eta_every_s": 300.0}),
            ("eta per 300 s, l head", {"eta_every_s": 300.0, "wait_reading": "head"}))  # fmt: skip
PAPER_ABLATION = {"gfs-e": (None, 17776.2, 27.4, 20687.1, 10502.4, 8.08),
                  "gfs-d": (None, 17776.6, 27.6, 12304.7, 2174.3, 1.73),
                  "gfs-s": (None, 17776.8, 27.7, 12369.7, 2237.7, 1.79),
                  "gfs-p": (None, 17776.2, 27.3, 12471.0, 2259.7, 2.95),
                  "gfs-sp": (None, 17778.1, 29.3, 14010.5, 3811.5, 2.64),
                  "gfs": (None, 17776.7, 27.7, 10715.3, 575.4, 1.21)}  # fmt: skip


@dataclass(frozen=True)
class Cell:
    """One row of a table: its label, policy, spot scale, policy parameters and paper values."""

    label: str
    policy: str
    spot_scale: float
    paper: tuple[float | None, ...]
    params: dict[str, Any] = field(default_factory=dict)
    arrival_scale: float | None = None  # None: the command's --arrival-scale


def cells(table: str) -> list[Cell]:
    if table == "table5":
        return [Cell(f"x{k} {p}", p, k, PAPER_TABLE5[k][p]) for k in (1, 2, 4) for p in (*BASELINES, "gfs")]
    if table == "table6":
        return [Cell(f"H={h} h", "gfs", 2, PAPER_TABLE6[h], {"guarantee_h": float(h)}) for h in (1, 2, 4)]
    if table == "ablation":
        return [Cell(p, p, 2, PAPER_ABLATION[p]) for p in ABLATIONS]
    if table == "contention":
        none = (None,) * 6
        variants = [("gfs", {}), ("gfs pooling=model", {"pooling": "model"}), ("gfs sa_rule=all", {"sa_rule": "all"}),
                    ("yarn-cs-preempt", {})]  # fmt: skip
        return [Cell(f"x{a:g} arrivals, {label}", label.split()[0], 2, none, params, a)
                for a in CONTENTION for label, params in variants]  # fmt: skip
    if table == "queue":
        variants = [(f"gfs queue={q}", "gfs", {"queue": q}) for q in ("pod", "total", "fcfs")]
        variants += [("gfs-s", "gfs-s", {}), ("yarn-cs-preempt", "yarn-cs-preempt", {}), ("lyra", "lyra", {})]
        return [Cell(label, policy, 2, (None,) * 6, params) for label, policy, params in variants]
    if table == "readings":
        return [Cell(f"x{a:g} arrivals, {label}", "gfs", 2, (None,) * 6, params, a)
                for a in READING_ARRIVALS for label, params in READINGS]  # fmt: skip
    raise SystemExit(f"unknown table {table!r}")


def run_cell(cell: Cell, jobs: int, seed: int, arrival_scale: float, profile: str = "gfs-a100",
             setting: str = "paper-text") -> dict[str, Any]:  # fmt: skip
    """One simulation of ``cell`` on ``profile`` under ``setting`` (:mod:`schedlab.experiments.settings`):
    the per-class metrics of every job of the window (resident HP tasks are their own class)."""
    arrival_scale = cell.arrival_scale or arrival_scale
    chosen = get_setting(setting)
    wspec = WorkloadSpec(synthetic=profile, jobs=jobs, seed=seed, options={"spot_scale": float(cell.spot_scale)},
                         arrival_scale=None if arrival_scale == 1 else arrival_scale)  # fmt: skip
    params = POLICIES[cell.policy].parse(chosen.policy_params(cell.policy, cell.params))
    spec = RunSpec(chosen.workload(wspec), "gfs-a100", cell.policy, seed=seed, config=chosen.config({}), params=params)
    summary = simulate_run(spec, None)
    hp, spot = summary["classes"]["hp"], summary["classes"]["spot"]
    e = spot.get("eviction_rate")
    values = (hp["jct_p99_s"], hp["jct_mean_s"], hp["queue_mean_s"], spot["jct_mean_s"], spot["queue_mean_s"],
              None if e is None or cell.policy == "chronus" else 100.0 * e)  # fmt: skip
    gfs = summary.get("gfs") or {}
    return {"values": values, "wall_s": summary["sim_wall_s"], "alloc": summary.get("gpu_alloc_rate"),
            "eta_min": gfs.get("eta_min"), "eta_max": gfs.get("eta_max")}  # fmt: skip


def _mean_std(samples: list[float | None]) -> tuple[float, float] | None:
    xs = [x for x in samples if x is not None]
    return (float(np.mean(xs)), float(np.std(xs))) if xs else None


def _fmt(stat: tuple[float, float] | None, n: int, digits: int) -> str:
    if stat is None:
        return "-"
    mean, std = stat
    return f"{mean:,.{digits}f}" + (f" ± {std:,.{digits}f}" if n > 1 else "")


def render(rows: list[tuple[Cell, list[dict[str, Any]]]]) -> str:
    """Markdown: per column, ours (mean ± std over seeds) and the paper's value."""
    head = ["run"] + [f"{c} (ours / paper)" for c in COLUMNS] + ["GPU alloc", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell, runs in rows:
        out = [cell.label]
        for i, _ in enumerate(COLUMNS):
            digits = 2 if i == 5 else 0
            ours = _fmt(_mean_std([r["values"][i] for r in runs]), len(runs), digits)
            paper = "-" if cell.paper[i] is None else f"{cell.paper[i]:,.{digits}f}"
            out.append(f"{ours} / {paper}")
        out.append(_fmt(_mean_std([r["alloc"] for r in runs]), len(runs), 3))
        out.append(f"{np.mean([r['wall_s'] for r in runs]):.0f}")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


def render_readings(rows: list[tuple[Cell, list[dict[str, Any]]]]) -> str:
    """Markdown for ``readings``: HP JQT, spot JQT, spot eviction rate, eta's range and the
    GPU allocation rate, mean ± std over seeds (the paper has no such table)."""
    head = ["run", "hp JQT s", "spot JQT s", "spot e %", "eta min", "eta max", "GPU alloc"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell, runs in rows:
        n = len(runs)
        out = [cell.label, *(_fmt(_mean_std([r["values"][i] for r in runs]), n, d) for i, d in ((2, 0), (4, 0), (5, 2)))]
        out += [_fmt(_mean_std([r.get(k) for r in runs]), n, 2) for k in ("eta_min", "eta_max")]
        out.append(_fmt(_mean_std([r["alloc"] for r in runs]), n, 3))
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


def readings_summary(rows: list[tuple[Cell, list[dict[str, Any]]]]) -> str:
    """Per arrival rate, each alternative reading's change of the three metrics from the default."""
    mean = {c.label: [(_mean_std([r["values"][i] for r in runs]) or (None,))[0] for i in range(6)] for c, runs in rows}
    out = []
    for a in READING_ARRIVALS:
        base = mean[f"x{a:g} arrivals, {READINGS[0][0]}"]
        for label, _ in READINGS[1:]:
            m = mean[f"x{a:g} arrivals, {label}"]
            out.append(f"- x{a:g} arrivals, {label} against the default: HP JQT {_delta(m[2], base[2], 0)} s, "
                       f"spot JQT {_delta(m[4], base[4], 0)} s, spot e {_delta(m[5], base[5], 2)} points")  # fmt: skip
    return "Change from the default readings (eta per H, l longest), means over seeds:\n\n" + "\n".join(out)


def _delta(x: float | None, base: float | None, digits: int) -> str:
    return "-" if x is None or base is None else f"{x - base:+,.{digits}f}"


def _below(a: float | None, b: float | None, atol: float = 1.0) -> bool | None:
    """Whether ``a < b``; None (a tie) when they are within 1 % of the larger or ``atol``
    (1 s; 0.05 percentage points for eviction rates)."""
    if a is None or b is None:
        return False
    if abs(a - b) <= max(0.01 * max(abs(a), abs(b)), atol):
        return None
    return a < b


def directions(table: str, rows: list[tuple[Cell, list[dict[str, Any]]]]) -> str:
    """The paper's claims for ``table``, each with whether our means agree (None: a tie)."""
    mean = {c.label: [(_mean_std([r["values"][i] for r in runs]) or (None,))[0] for i in range(6)] for c, runs in rows}
    claims: list[tuple[str, bool | None]] = []
    if table == "table5":
        for k in (1, 2, 4):
            g = mean[f"x{k} gfs"]
            for b in BASELINES:
                o = mean[f"x{k} {b}"]
                claims.append((f"x{k}: gfs spot JQT < {b}", _below(g[4], o[4])))
                if o[5] is not None:
                    claims.append((f"x{k}: gfs spot eviction rate < {b}", _below(g[5], o[5], 0.05)))
            worse = _below(mean[f"x{k} yarn-cs-preempt"][2], g[2]) is True  # yarn-cs-preempt's HP JQT clearly lower
            claims.append((f"x{k}: gfs HP JQT not above yarn-cs-preempt", not worse))
    elif table == "contention":
        return "The paper's claim at more contention: gfs lowers the spot eviction rate below yarn-cs-preempt's.\n\n" + "\n".join(
            f"- x{a:g} arrivals: gfs {_f1(mean[f'x{a:g} arrivals, gfs'][5])} % against yarn-cs-preempt "
            f"{_f1(mean[f'x{a:g} arrivals, yarn-cs-preempt'][5])} %" for a in CONTENTION)
    elif table == "queue":
        spot = {c.label: mean[c.label][4] for c, _ in rows}
        return "Spot JQT by queue order (measured, no paper figure):\n\n" + "\n".join(
            f"- {label}: {_fmt((value, 0.0), 1, 0)} s" for label, value in spot.items())
    elif table == "table6":
        claims.append(("H=4 h: spot JQT above H=1 h and H=2 h", _below(max(mean["H=1 h"][4], mean["H=2 h"][4]), mean["H=4 h"][4])))
    else:
        g = mean["gfs"]
        for ablation in ABLATIONS[:-1]:
            a = mean[ablation]
            claims.append((f"{ablation}: spot JCT above gfs", _below(g[3], a[3])))
            claims.append((f"{ablation}: spot JQT above gfs", _below(g[4], a[4])))
            claims.append((f"{ablation}: spot eviction rate above gfs", _below(g[5], a[5], 0.05)))
    agree = sum(ok is True for _, ok in claims)
    ties = sum(ok is None for _, ok in claims)
    word = {True: "agrees", None: "tie (within 1 %, 1 s or 0.05 points)", False: "**disagrees**"}
    body = "\n".join(f"- {word[ok]}: {text}" for text, ok in claims)
    return f"Directions: {agree} of {len(claims)} agree with the paper, {ties} are ties.\n\n{body}"


def _f1(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def write_block(doc: Path, name: str, text: str) -> None:
    """Replace the block ``<!-- gfs-paper:name -->`` ... ``<!-- /gfs-paper:name -->`` of ``doc``."""
    source = doc.read_text()
    tag = re.escape(name)
    pattern = re.compile(rf"(<!-- gfs-paper:{tag} -->\n).*?(<!-- /gfs-paper:{tag} -->)", re.S)
    if not pattern.search(source):
        raise SystemExit(f"{doc}: no block <!-- gfs-paper:{name} --> ... <!-- /gfs-paper:{name} -->")
    doc.write_text(pattern.sub(lambda m: m.group(1) + text + "\n" + m.group(2), source))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", choices=("table5", "table6", "ablation", "contention", "readings", "queue", "all"))
    parser.add_argument("--jobs", type=int, default=40000, help="gfs-a100 jobs at spot scale 1 (Table 3: 165,038)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds; tables show mean ± std")
    parser.add_argument("--arrival-scale", type=float, default=1.0,
                        help="multiply every arrival rate (HP and spot) by K: a contention sweep, 1 = Table 3's rates")
    parser.add_argument("--profiles", default="gfs-a100",
                        help="comma-separated: gfs-a100 (Table 3 only) and/or gfs-a100-calibrated (pods per gang task "
                             "set by Fig. 8's allocation rate); one table per profile and setting")
    parser.add_argument("--settings", default="paper-text",
                        help=f"comma-separated settings: {', '.join(SETTINGS)} (gfs-authors: the authors' simulator)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--write-doc", type=Path, default=None, help="Markdown file whose gfs-paper blocks to rewrite")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    profiles, settings = args.profiles.split(","), args.settings.split(",")
    for setting in settings:
        get_setting(setting)
    for profile, setting in ((p, s) for p in profiles for s in settings):
        for name in ("table5", "table6", "ablation") if args.table == "all" else (args.table,):
            run_table(name, args, seeds, profile, setting)


def block_name(table: str, profile: str, setting: str, arrival_scale: float) -> str:
    """The doc block of a table: ``table5``, ``table5@1.15``, ``table5/gfs-a100-calibrated/gfs-authors``, ..."""
    name = table if arrival_scale == 1 else f"{table}@{arrival_scale:g}"
    return name if (profile, setting) == ("gfs-a100", "paper-text") else f"{name}/{profile}/{setting}"


def run_table(name: str, args: argparse.Namespace, seeds: list[int], profile: str, setting: str) -> None:
    todo = cells(name)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.processes) as pool:
        futures = {(c.label, s): pool.submit(run_cell, c, args.jobs, s, args.arrival_scale, profile, setting)
                   for c in todo for s in seeds}  # fmt: skip
        rows = [(c, [futures[c.label, s].result() for s in seeds]) for c in todo]
    scale = "" if args.arrival_scale == 1 else f" --arrival-scale {args.arrival_scale:g}"
    which = "" if (profile, setting) == ("gfs-a100", "paper-text") else f" --profiles {profile} --settings {setting}"
    title = (f"`python benchmarks/gfs_paper.py {name} --jobs {args.jobs} --seeds {args.seeds}{scale}{which}` "
             f"({time.perf_counter() - t0:.0f} s wall with {args.processes} processes)")  # fmt: skip
    if name == "readings":
        text = f"{title}\n\n{render_readings(rows)}\n\n{readings_summary(rows)}\n"
    else:
        text = f"{title}\n\n{render(rows)}\n\n{directions(name, rows)}\n"
    print(f"## {name} ({profile}, {setting})\n\n{text}", flush=True)
    if args.write_doc is not None:
        write_block(args.write_doc, block_name(name, profile, setting, args.arrival_scale), text)


if __name__ == "__main__":
    main()
