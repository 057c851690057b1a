"""How pauses and CPU time grow with the length of a saturated trace, in schedlab and in Tiresias' simulator.

On a cluster whose load stays above 1 the backlog grows for as long as jobs keep arriving, and a
preemptive policy re-decides among a backlog that grows with the trace. This script measures
whether the number of pauses such a policy takes grows faster than the number of jobs, and
whether that holds for the open Tiresias simulator (SymbioticLab/Tiresias, ``run_sim.py``,
Python 2.7) as well as for schedlab, on the same jobs.

The trace is the 14-day Philly-derived ``trace_job_Philly_MIX2.csv`` of ChronusArtifact (GPU
jobs, times in minutes) on 120 x 8 GPUs, at which it offers a load of about 1.15 throughout.
Its first 1/8, 1/4, 1/2 and all of its 14 days are simulated (prefixes by submission time), by
each simulator schedule and by schedlab with the simulator's settings matched (as in
``compare_tiresias.py``: first-fit placement, no pause cost, its thresholds) and with
schedlab's defaults. For every run it prints jobs, pauses, pauses per job, the largest number of
pauses of one job, mean JCT and CPU time, then the exponents b of pauses ~ jobs^b and CPU ~
jobs^b fitted over the prefixes (least squares on logs).

    python benchmarks/saturation_growth.py --simulator PATH/TO/Tiresias --workdir /tmp/sg
    python benchmarks/saturation_growth.py --simulator PATH/TO/Tiresias --workdir /tmp/sg --reuse

``--simulator`` is a checkout you fetch yourself (never part of this repository). The
simulator's runs take about an hour in all; ``--reuse`` reads them back from ``--workdir``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from compare_tiresias import DEFAULT_TRACE, FREE, SIM_THRESHOLDS, Run, checked_arguments, markdown, run_schedlab, run_simulator, write_inputs
from schedlab.policies.classic.orders import srsf, srtf
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.common.placers import Consolidate, FirstFit
from schedlab.sim.config import SimConfig
from schedlab.workload.loaders import load_trace

FRACTIONS = (0.125, 0.25, 0.5, 1.0)
# simulator schedule -> (schedlab policy with its settings matched, the same policy with its defaults, its registered name)
PAIRS = {
    "shortest": (lambda: srtf(FirstFit()), lambda: srtf(Consolidate()), "srtf"),
    "shortest-gpu": (lambda: srsf(FirstFit()), lambda: srsf(Consolidate()), "srsf"),
    "dlas-gpu-8": (lambda: Tiresias(FirstFit(), thresholds_gpu_s=SIM_THRESHOLDS, promote_knob=8.0),
                   lambda: Tiresias(Consolidate()), "tiresias"),
}  # fmt: skip


def prefix(trace: Path, fraction: float, workdir: Path) -> Path:
    """The trace's jobs submitted in its first ``fraction`` of time (GPU jobs only), as a CSV."""
    raw = pd.read_csv(trace)
    raw = raw[raw["num_gpu"] > 0]
    start, end = raw["submit_time"].min(), raw["submit_time"].max()
    part = raw[raw["submit_time"] <= start + fraction * (end - start)]
    out = workdir / "trace.csv"
    part.to_csv(out, index=False)
    return out


def row(run: Run, schedule: str, side: str, fraction: float) -> dict:
    """One report row: how many pauses, on how many jobs, and at what CPU cost."""
    j = run.jobs
    return {
        "schedule": schedule,
        "run": side,
        "days": 14 * fraction,
        "jobs": len(j),
        "pauses": int(j["preemptions"].sum()),
        "pauses / job": j["preemptions"].mean(),
        "most on one job": int(j["preemptions"].max()),
        "mean JCT (s)": (j["end"] - j["submit"]).mean(),
        "CPU (s)": run.cpu_s,
    }


def exponent(jobs: pd.Series, values: pd.Series) -> float:
    """b in values ~ jobs^b, least squares on logs (nan when a value is 0)."""
    if (values <= 0).any():
        return float("nan")
    return float(np.polyfit(np.log(jobs.to_numpy(float)), np.log(values.to_numpy(float)), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulator", type=Path, required=True, help="a checkout of SymbioticLab/Tiresias")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--schedules", default=",".join(PAIRS), help=f"simulator schedules, of {', '.join(PAIRS)}")
    parser.add_argument("--workdir", type=Path, required=True, help="scratch directory (kept for --reuse)")
    parser.add_argument("--reuse", action="store_true", help="reuse the simulator's logs from an earlier run in --workdir")
    parser.add_argument("--python", default="python2.7", help="the Python 2.7 command the simulator runs with")
    args = parser.parse_args()
    checkout, schedules = checked_arguments(args, PAIRS)
    rows = []
    for fraction in FRACTIONS:
        workdir = (args.workdir / f"prefix_{fraction:g}").resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        trace = prefix(args.trace, fraction, workdir)
        write_inputs(trace, 60.0, workdir)
        workload = load_trace(trace, "tiresias", time_unit="min")
        for schedule in schedules:
            matched, defaults, name = PAIRS[schedule]
            print(f"[{fraction:g} of the trace, {schedule}] simulator ...", file=sys.stderr, flush=True)
            rows.append(row(run_simulator(checkout, workdir, schedule, args.reuse, [args.python]), schedule, "simulator", fraction))
            rows.append(row(run_schedlab(workload, "matched", matched(), FREE, ""), schedule, f"schedlab {name}, matched", fraction))
            rows.append(row(run_schedlab(workload, "defaults", defaults(), SimConfig(), ""), schedule, f"schedlab {name}, defaults", fraction))
    table = pd.DataFrame(rows)
    fits = []
    for (schedule, side), runs in table.groupby(["schedule", "run"], sort=False):
        fits.append({"schedule": schedule, "run": side, "pauses ~ jobs^b": f"{exponent(runs['jobs'], runs['pauses']):.2f}",
                     "CPU ~ jobs^b": f"{exponent(runs['jobs'], runs['CPU (s)']):.2f}"})  # fmt: skip
    report = f"{markdown(table)}\n\nExponents over the {len(FRACTIONS)} prefixes:\n\n{markdown(pd.DataFrame(fits))}\n"
    (args.workdir / "report.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
