"""GFS forecast comparison (Duan et al., ASPLOS '26, §4.6.1: Figure 10, Table 7) into docs/gfs-forecast.md.

Runs ``schedlab forecast`` on each data set below with ``--seeds N`` and puts the Markdown it
writes (mean ± std over the seeds, the paper's numbers beside ours) into the doc between the
data set's marker comments ``<!-- gfs-forecast:NAME:begin -->`` / ``<!-- ...:end -->``,
preceded by the command that produced it.

    python benchmarks/gfs_forecast.py                       # both data sets, 5 seeds
    python benchmarks/gfs_forecast.py --only earth --seeds 3
    python benchmarks/gfs_forecast.py --out runs/gfs-forecast  # keep the run directories
    python benchmarks/gfs_forecast.py --probe --seeds 2     # why OrgLinear wins or not: section "probe"

``synthetic``: the HP demand of ``--synthetic gfs`` (150,000 jobs; a new trace per seed).
``earth``: the real per-VC GPU demand (running + pending GPUs) of the 15 Helios Earth VCs in
May 2020 (``../shared/data/helios-artifact/Earth_vcs``; fixed data, new training seeds).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "gfs-forecast.md"
DATA = {
    "synthetic": ["--synthetic", "gfs"],
    "earth": ["--vc-sequences", "../shared/data/helios-artifact/Earth_vcs"],
}


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the part between the begin and end markers of ``name`` replaced by ``body``."""
    begin, end = f"<!-- gfs-forecast:{name}:begin -->", f"<!-- gfs-forecast:{name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{DOC}: markers {begin} / {end} not found")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body.rstrip()}\n{end}{tail}"


def run(name: str, seeds: int, out: Path) -> str:
    """Run the command for one data set; return the section's Markdown."""
    args = ["forecast", *DATA[name], "--seeds", str(seeds), "--out", str(out / name), "--force"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from schedlab.cli import app; app()", *args], cwd=ROOT, env=env, check=True)
    wall = time.perf_counter() - t0
    table = (out / name / "forecast_comparison.md").read_text()
    shown = " ".join(a if a != str(out / name) else "DIR" for a in args)
    return f"`schedlab {shown}` (wall time {wall / 60:.0f} min on one shared CPU core per model):\n\n{table}"


@contextmanager
def _without_context():
    """OrgLinear with c_o and c_t replaced by zeros (eq. 5 and 7 then see the history only)."""
    from schedlab.predict.orglinear_net import OrgLinearNet, torch

    saved = OrgLinearNet.organisation, OrgLinearNet.temporal
    OrgLinearNet.organisation = lambda self, attrs: torch.zeros(len(attrs), self.attention.dim)
    OrgLinearNet.temporal = lambda self, cal: torch.zeros(len(cal), 3 * self.attention.dim)
    try:
        yield
    finally:
        OrgLinearNet.organisation, OrgLinearNet.temporal = saved


def _variants(seed: int) -> list:
    """OrgLinear as in the comparison and the variants that test one explanation each."""
    from schedlab.experiments.forecast_eval import OrgLinearModel, Settings
    from schedlab.predict.demand_series import DemandSeries
    from schedlab.predict.orglinear import OrgLinearConfig

    s = Settings()

    def config(**kw) -> OrgLinearConfig:
        return OrgLinearConfig(**{"epochs": s.epochs, "min_steps": s.min_steps, "learning_rate": s.orglinear_lr, **kw})

    class Named(OrgLinearModel):
        def __init__(self, name: str, cfg: OrgLinearConfig, *, no_context: bool = False, keep: float = 1.0) -> None:
            super().__init__(cfg, seed)
            self.name, self.no_context, self.keep = name, no_context, keep

        def fit(self, train: DemandSeries) -> None:
            start = int(len(train) * (1 - self.keep))
            train = DemandSeries(train.demand.iloc[start:], train.holidays, train.source)
            with _without_context() if self.no_context else nullcontext():
                super().fit(train)

        def predict(self, series, end, levels):  # noqa: ANN001, ANN201
            with _without_context() if self.no_context else nullcontext():
                return super().predict(series, end, levels)

    return [Named("OrgLinear (as compared)", config()),
            Named("without c_o and c_t", config(), no_context=True),
            Named("half the training hours", config(), keep=0.5),
            Named("look-back 72 h", config(lookback=72)),
            Named("look-back 336 h", config(lookback=336))]  # fmt: skip


def _seasonality(values: np.ndarray) -> float:
    """Share of the demand's variance (per organisation, averaged) explained by its mean
    hour-of-week profile: 1 = a fixed weekly shape, 0 = no weekly shape."""
    n = values.shape[1] // 168 * 168
    v = values[:, :n].reshape(values.shape[0], -1, 168)
    total = v.reshape(v.shape[0], -1).var(axis=1)
    profile = v.mean(axis=1).var(axis=1)
    keep = total > 0
    return float(np.mean(profile[keep] / total[keep]))


def probe(seeds: int) -> str:
    """OrgLinear's variants on both data sets (MAE, 0.9-QL, 0.95-QL; mean over seeds)."""
    import pandas as pd

    from schedlab.experiments.forecast_eval import compare
    from schedlab.experiments.run import WorkloadSpec
    from schedlab.predict.demand_series import from_vc_sequences, from_workload

    loaders = {
        "synthetic": lambda seed: from_workload(WorkloadSpec(synthetic="gfs", jobs=150000, seed=seed).build(), country="CN"),
        "earth": lambda seed: from_vc_sequences(ROOT / DATA["earth"][1], country="CN"),
    }
    lines = ["| data | variant | MAE | 0.9-QL | 0.95-QL | train s |", "|---|---|---|---|---|---|"]
    notes = []
    for name, load in loaders.items():
        rows = []
        for seed in range(seeds):
            series = load(seed)
            result = compare(series, _variants(seed), test_hours=168, horizon=24, lookback=336)
            rows.append(result.table)
            if seed == 0:
                train = series.values[:, : len(series) - 168]
                notes.append(f"{name}: {series.values.shape[0]} organisations, {train.shape[1]} training hours, "
                             f"weekly-profile share of variance {_seasonality(train):.2f}")  # fmt: skip
        mean = pd.concat(rows).groupby("model", sort=False).mean(numeric_only=True)
        for model, r in mean.iterrows():
            lines.append(f"| {name} | {model} | {r['mae']:.3f} | {r['ql_0.9']:.4f} | {r['ql_0.95']:.4f} | {r['train_s']:.1f} |")
    return (f"`python benchmarks/gfs_forecast.py --probe --seeds {seeds}` (OrgLinear only; same test span and "
            f"origins as above; mean over {seeds} seeds):\n\n" + "\n".join(lines) + "\n\n" + "; ".join(notes) + ".\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", choices=sorted(DATA), action="append", help="data set(s) to run (default: all)")
    parser.add_argument("--out", type=Path, help="keep the run directories here (default: a temporary folder)")
    parser.add_argument("--probe", action="store_true", help="run OrgLinear's variants instead (section probe)")
    args = parser.parse_args()
    if args.probe:
        section = probe(args.seeds)  # before reading the doc: it may change while this runs
        DOC.write_text(replace_section(DOC.read_text(), "probe", section))
        print(f"{DOC.relative_to(ROOT)}: section probe rewritten")
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        for name in args.only or list(DATA):
            section = run(name, args.seeds, out)
            DOC.write_text(replace_section(DOC.read_text(), name, section))
            print(f"{DOC.relative_to(ROOT)}: section {name} rewritten")


if __name__ == "__main__":
    main()
