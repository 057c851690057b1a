"""``schedlab simulate --ces``: the same run with the CES service and with vanilla DRS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from schedlab.energy.ces import CESConfig, vanilla_drs
from schedlab.experiments.run import RunSpec, simulate_run
from schedlab.metrics.summary import write_summary
from schedlab.sim.engine import RunProgress


def simulate_with_ces(
    spec: RunSpec, out_dir: Path, *, progress: Callable[[RunProgress], None] | None = None
) -> dict[str, Any]:
    """Run ``spec`` wrapped in CES (its outputs go to ``out_dir``), then again wrapped in
    vanilla DRS; the summary gets both blocks and the CES forecaster's ``smape``."""
    config = spec.ces or CESConfig()
    summary = simulate_run(replace(spec, ces=replace(config, use_forecast=True)), out_dir, progress=progress)
    baseline = simulate_run(replace(spec, ces=vanilla_drs(config)), None)
    summary["vanilla_drs"] = baseline["vanilla_drs"]
    summary["vanilla_drs"].update(finished=baseline["finished"], jct_mean_s=baseline["jct_mean_s"],
                                  queue_mean_s=baseline["queue_mean_s"])  # fmt: skip
    summary["ces"].update(finished=summary["finished"], jct_mean_s=summary["jct_mean_s"],
                          queue_mean_s=summary["queue_mean_s"])  # fmt: skip
    summary["smape"] = summary["ces"]["smape"]
    write_summary(out_dir / "summary.json", summary)
    return summary
