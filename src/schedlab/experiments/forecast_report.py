"""The forecast comparison over several seeds as Markdown, beside GFS's published numbers
(Duan et al., ASPLOS '26, §4.6.1: Figure 10 and Table 7), and the files ``schedlab forecast``
writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.experiments.forecast_eval import METRICS, ORGLINEAR, Comparison, Settings, compare_seeds, plot_org
from schedlab.predict.demand_series import DemandSeries

HEADERS = {"mae": "MAE", "mse": "MSE", "rmse": "RMSE", "mape_pct": "MAPE %", "maqe_0.9": "0.9-MAQE",
           "maqe_0.95": "0.95-MAQE", "ql_0.9": "0.9-QL", "ql_0.95": "0.95-QL", "train_s": "train s"}  # fmt: skip

# Table 7 (quantile accuracy and training time) and Figure 10's text (OrgLinear's reduction
# against the second-best model, in percent; the bars' values are not printed).
PAPER_TABLE7 = {"DeepAR": {"maqe_0.95": 0.057, "maqe_0.9": 0.078, "train_s": 28610.1},
                "OrgLinear": {"maqe_0.95": 0.026, "maqe_0.9": 0.056, "train_s": 464.9}}  # fmt: skip
PAPER_REDUCTION = {"mae": 24.30, "mse": 33.26, "rmse": 18.31, "mape_pct": 19.17}
PAPER_VS_DEEPAR = {"maqe_0.95": 45.61, "maqe_0.9": 28.21}


def _cell(values: pd.Series) -> str:
    m = values.mean()
    if not np.isfinite(m):
        return "-"
    digits = 3 if abs(m) < 10 else (2 if abs(m) < 100 else 1)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{m:.{digits}f} ± {sd:.{digits}f}"


def summary_table(rows: pd.DataFrame) -> str:
    """Mean ± sample standard deviation over seeds of every metric, one row per model."""
    head = ["model", *(HEADERS[m] for m in METRICS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model, group in rows.groupby("model", sort=False):
        lines.append("| " + " | ".join([str(model), *(_cell(group[m]) for m in METRICS)]) + " |")
    return "\n".join(lines) + "\n"


def reduction_table(rows: pd.DataFrame) -> str:
    """OrgLinear's reduction (%) against the best other model of each metric (mean over
    seeds), the number of seeds in which OrgLinear is best, and the paper's claim."""
    means = rows.groupby("model", sort=False)[list(METRICS)].mean()
    per_seed = rows.set_index(["seed", "model"])
    seeds = sorted(rows["seed"].unique())
    lines = ["| metric | OrgLinear | best other (model) | OrgLinear's reduction | OrgLinear best in seeds | paper |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for m in ("mae", "mse", "rmse", "mape_pct", "maqe_0.9", "maqe_0.95", "ql_0.9", "ql_0.95"):
        others = means[m].drop(ORGLINEAR)
        best = others.idxmin()
        ours = means.at[ORGLINEAR, m]
        wins = sum(per_seed.loc[s, m].idxmin() == ORGLINEAR for s in seeds)
        if m in PAPER_REDUCTION:
            paper = f"-{PAPER_REDUCTION[m]:.2f} % vs second best"
        elif m in PAPER_VS_DEEPAR:
            paper = f"-{PAPER_VS_DEEPAR[m]:.2f} % vs DeepAR"
        else:
            paper = "-"
        red = 100.0 * (ours - others[best]) / others[best]
        deepar = means[m].get("DeepAR (LSTM)")
        vs = f"; {100.0 * (ours - deepar) / deepar:+.1f} % vs DeepAR" if m in PAPER_VS_DEEPAR and deepar else ""
        lines.append(f"| {HEADERS[m]} | {ours:.4g} | {others[best]:.4g} ({best}) | {red:+.1f} %{vs} | {wins} of {len(seeds)} | {paper} |")
    return "\n".join(lines) + "\n"


def paper_table(rows: pd.DataFrame) -> str:
    """Table 7 of the paper beside ours (DeepAR and OrgLinear: MAQE, QL, training time)."""
    means = rows.groupby("model", sort=False)[list(METRICS)].mean()
    lines = ["| model | 0.95-MAQE | 0.9-MAQE | train s | ours: 0.95-MAQE | 0.9-MAQE | 0.95-QL | 0.9-QL | train s |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for paper_name, ours_name in (("DeepAR", "DeepAR (LSTM)"), ("OrgLinear", ORGLINEAR)):
        p, o = PAPER_TABLE7[paper_name], means.loc[ours_name]
        lines.append(f"| {paper_name} | {p['maqe_0.95']:.3f} | {p['maqe_0.9']:.3f} | {p['train_s']:,.1f} | "
                     f"{o['maqe_0.95']:.3f} | {o['maqe_0.9']:.3f} | {o['ql_0.95']:.3f} | {o['ql_0.9']:.3f} | {o['train_s']:.1f} |")  # fmt: skip
    ratio = means.at[ORGLINEAR, "train_s"] / means.at["DeepAR (LSTM)", "train_s"]
    lines.append(f"\nOrgLinear's training time is {100 * ratio:.1f} % of DeepAR's (paper: 1.63 %).")
    return "\n".join(lines) + "\n"


def report(rows: pd.DataFrame, title: str) -> str:
    """The three tables under a heading line."""
    seeds = sorted(rows["seed"].unique())
    return (f"{title}; seeds {', '.join(map(str, seeds))}: mean ± standard deviation over the seeds.\n\n"
            f"{summary_table(rows)}\n{reduction_table(rows)}\n{paper_table(rows)}")  # fmt: skip


def run_report(series_for: Callable[[int], DemandSeries], seeds: list[int], settings: Settings, out: Path,
               title: str) -> tuple[pd.DataFrame, list[Path]]:  # fmt: skip
    """Run :func:`.compare_seeds`; write ``forecast_comparison.csv`` (one row per seed and
    model), ``forecast_comparison.md`` (:func:`report`) and a PNG of the first seed's
    organisation with the highest mean training demand. Returns the rows and the files."""
    out.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []

    def plot_first(seed: int, series: DemandSeries, result: Comparison) -> None:
        if not pngs:
            org = str(series.demand.iloc[: result.origins[0]].mean().idxmax())
            pngs.append(plot_org(series, result, org, out / f"forecast_{org}.png"))

    rows = compare_seeds(series_for, seeds, settings, plot_first)
    csv, md = out / "forecast_comparison.csv", out / "forecast_comparison.md"
    rows.to_csv(csv, index=False)
    md.write_text(report(rows, title))
    return rows, [csv, md, *pngs]
