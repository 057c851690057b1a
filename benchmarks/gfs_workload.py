"""The ``gfs-a100`` workload against the GFS paper's setup (Duan et al., ASPLOS '26, §4.1, Tables 3 and 5).

Writes two tables into ``docs/gfs-workload.md`` (between its ``<!-- begin NAME -->`` and
``<!-- end NAME -->`` markers) and prints them:

* ``calibration``: each published figure the profile reproduces beside its value on a
  generated trace (``--jobs``, default the paper's 165,038 tasks, seed ``--seed``);
* ``load``: the GPUs the HP and spot tasks would hold if each ran from its submission for its
  duration (no queueing), as a share of the 2,296 GPUs: on average and at the daily peak (the
  highest 5-minute sample of each day, averaged over the days, and the highest of all), over
  the arrival window less its first day (the cluster fills over a few hours).

The schedulers on this workload: ``benchmarks/gfs_paper.py`` (docs/gfs.md).

    python benchmarks/gfs_workload.py                        # both tables (seconds)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.workload.synthetic import GFS_A100_TASKS, PROFILES, generate

DOC = Path(__file__).resolve().parents[1] / "docs" / "gfs-workload.md"
CLUSTER_GPUS = 2296
FULL = sum(GFS_A100_TASKS.values())
POD_GPUS = (0.5, 1.0, 2.0, 4.0, 8.0)


def _pct(x: float, digits: int = 2) -> str:
    return f"{100 * x:.{digits}f}"


def calibration(w) -> str:
    """Markdown: published figure, its source, and the generated trace's value."""
    j = w.jobs
    rows: list[tuple[str, str, str, str]] = []
    for cls in ("hp", "spot"):
        rows.append((f"{cls} tasks", f"{GFS_A100_TASKS[cls]:,}", "Table 3", f"{(j['priority_class'] == cls).sum():,}"))
    rows.append(("submission window (days)", "91 (Apr-Jun 2024)", "§4.1 Dataset", f"{w.meta['span_s'] / 86400:.2f}"))
    for cls, pct in (("hp", "0.11 / 55.11 / 13.37 / 7.53 / 23.69"), ("spot", "0.82 / 67.35 / 5.67 / 12.00 / 14.04")):
        mine = j[j["priority_class"] == cls]
        mix = mine["gpus_per_worker"].value_counts(normalize=True)
        rows.append((f"{cls} GPUs per pod <1 / 1 / 2 / 4 / 8 (% of tasks)", pct, "Table 3",
                     " / ".join(_pct(mix.get(v, 0.0)) for v in POD_GPUS)))  # fmt: skip
    for cls, gang in (("hp", "8.66"), ("spot", "27.26")):
        mine = j[j["priority_class"] == cls]
        share = (mine["num_gpus"] > mine["gpus_per_worker"]).mean()
        rows.append((f"{cls} gang tasks (%)", gang, "Table 3", _pct(share)))
    for cls in ("hp", "spot"):
        mine = j[(j["priority_class"] == cls) & (j["num_gpus"] > j["gpus_per_worker"])]
        rows.append((f"{cls} pods per gang task (mean)", "not published (assumed 64/15 = 4.27)", "-",
                     f"{(mine['num_gpus'] / mine['gpus_per_worker']).mean():.2f}"))  # fmt: skip
    hp = j.loc[j["priority_class"] == "hp", "duration_s"]
    spot = j.loc[j["priority_class"] == "spot", "duration_s"]
    rows += [
        ("hp work mean (s)", "17,748.7 = 17,777.1 - 28.4", "Table 5(a), GFS: HP JCT - JQT", f"{hp.mean():,.1f}"),
        ("hp work p99 (s)", "29,304.5", "Table 5(a), GFS: HP JCT-p99", f"{hp.quantile(0.99):,.1f}"),
        ("spot work mean (s)", "10,115.7 = 10,438.7 - 323.0", "Table 5(a), GFS: spot JCT - JQT", f"{spot.mean():,.1f}"),
        ("spot work p99 (s)", "not published (HP's log-sd)", "-", f"{spot.quantile(0.99):,.1f}"),
    ]
    when = w.origin + pd.to_timedelta(j["submit_s"], unit="s")
    hour, weekend = when.dt.hour.to_numpy(), (when.dt.day_of_week >= 5).to_numpy()
    days = pd.date_range(w.origin, periods=int(round(w.meta["span_s"] / 86400)), freq="D")
    n_weekend = int((days.day_of_week >= 5).sum())
    for org, ratio in (("orgA", "1.16 = 86 / 74 GPUs"), ("orgB", "1.34 = 90 / 67 GPUs")):
        mine = (j["tenant"] == org).to_numpy()
        peak, off = (mine & (hour >= 10)).sum() / 14, (mine & (hour < 10)).sum() / 10
        rows.append((f"{org} arrivals 10-24 h / 0-10 h (per hour)", ratio, "§2 Obs. 2, Fig. 4 demand range",
                     f"{peak / off:.3f}"))  # fmt: skip
    for org, drop in (("orgA", "none"), ("orgC", "35.7")):
        mine = (j["tenant"] == org).to_numpy()
        per_we = (mine & weekend).sum() / n_weekend
        per_wd = (mine & ~weekend).sum() / (len(days) - n_weekend)
        rows.append((f"{org} weekend drop in arrivals (%)", drop, "§3.2 (Obs. 2)", _pct(1 - per_we / per_wd, 1)))
    lines = ["| quantity | paper | source | generated |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def occupancy(jobs: pd.DataFrame, times: np.ndarray) -> np.ndarray:
    """GPUs held at each of ``times`` if every job ran from its submission for its duration."""
    start = jobs["submit_s"].to_numpy()
    end = start + jobs["duration_s"].to_numpy()
    gpus = jobs["num_gpus"].to_numpy()
    on = np.cumsum(gpus[np.argsort(start)])
    off = np.cumsum(gpus[np.argsort(end)])
    s_sorted, e_sorted = np.sort(start), np.sort(end)
    n_on = np.searchsorted(s_sorted, times, side="right")
    n_off = np.searchsorted(e_sorted, times, side="right")
    return np.where(n_on > 0, on[n_on - 1], 0.0) - np.where(n_off > 0, off[n_off - 1], 0.0)


def load_table(n_jobs: int, seed: int, profile: str = "gfs-a100") -> str:
    """Markdown: GPUs held by HP and by spot (x1, x2, x4) with no queueing, mean and daily peak.

    The HP tasks are the same at every spot scale (the scale adds spot tasks only)."""
    traces = {scale: generate(profile, n_jobs, seed=seed, spot_scale=scale) for scale in (1, 2, 4)}
    times = np.arange(86400.0, traces[1].meta["span_s"], 300.0)
    if times.size == 0:
        raise SystemExit("the load table needs more than one day of arrivals (raise --jobs)")
    day = ((times - 86400.0) // 86400).astype(int)

    def held(w, cls: str) -> np.ndarray:
        return occupancy(w.jobs[w.jobs["priority_class"] == cls], times)

    hp = held(traces[1], "hp")
    rows = [("hp", hp)]
    for scale, w in traces.items():
        spot = held(w, "spot")
        rows += [(f"spot x{scale}", spot), (f"hp + spot x{scale}", hp + spot)]
    lines = ["| tasks | mean GPUs | mean % | daily peak GPUs (mean of days) | daily peak % | highest GPUs | highest % |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for label, curve in rows:
        peaks = pd.Series(curve).groupby(day).max()
        lines.append(f"| {label} | {curve.mean():,.0f} | {_pct(curve.mean() / CLUSTER_GPUS, 1)} | "
                     f"{peaks.mean():,.0f} | {_pct(peaks.mean() / CLUSTER_GPUS, 1)} | {curve.max():,.0f} | "
                     f"{_pct(curve.max() / CLUSTER_GPUS, 1)} |")  # fmt: skip
    return "\n".join(lines)


def gang_table(w) -> str:
    """Markdown: the calibrated law of pods per gang task (published figure it matches, the
    law's shares and its mean) beside the generated trace."""
    j = w.jobs
    gang = j[j["num_gpus"] > j["gpus_per_worker"]]
    pods = (gang["num_gpus"] / gang["gpus_per_worker"]).round().astype(int)
    law = PROFILES["gfs-a100-calibrated"].classes[0]
    shares = pods.value_counts(normalize=True)
    lines = ["| pods per gang task | " + " | ".join(map(str, law.worker_values)) + " | mean |",
             "|---|" + "---|" * (len(law.worker_values) + 1),
             "| law (%) | " + " | ".join(_pct(p) for p in law.worker_probs) + f" | {np.dot(law.worker_values, law.worker_probs):.2f} |",
             "| generated (%) | " + " | ".join(_pct(shares.get(v, 0.0)) for v in law.worker_values) + f" | {pods.mean():.2f} |"]  # fmt: skip
    return "\n".join(lines)


def write_section(text: str, name: str, body: str) -> str:
    """``text`` with the lines between ``<!-- begin name -->`` and ``<!-- end name -->`` replaced."""
    pattern = re.compile(rf"(<!-- begin {name} -->\n).*?(<!-- end {name} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{DOC} has no '<!-- begin {name} -->' ... '<!-- end {name} -->' markers")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=FULL, help="tasks at spot scale 1 for the calibration and load")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--doc", type=Path, default=DOC, help="the page whose marked sections are rewritten")
    args = parser.parse_args()
    profile = PROFILES["gfs-a100"]
    print(f"gfs-a100: {profile.jobs_per_day:,.1f} tasks a day", flush=True)
    sections = {
        "calibration": calibration(generate("gfs-a100", args.jobs, seed=args.seed)),
        "load": load_table(args.jobs, args.seed),
        "load-calibrated": load_table(args.jobs, args.seed, "gfs-a100-calibrated"),
        "gang-calibrated": gang_table(generate("gfs-a100-calibrated", args.jobs, seed=args.seed)),
    }
    text = args.doc.read_text()
    for name, body in sections.items():
        print(f"\n{name}\n{body}")
        text = write_section(text, name, body)
    args.doc.write_text(text)
    print(f"\nwrote {args.doc}")


if __name__ == "__main__":
    main()
