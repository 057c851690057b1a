"""Helios CES (Hu et al., SC '21, §4.3) on the shared node series: the forecast table and
Table 5 beside the paper's, written into docs/helios-ces.md between its markers
``<!-- ces:forecast:begin -->`` / ``<!-- ces:forecast:end -->`` and ``<!-- ces:table5:begin -->`` /
``<!-- ces:table5:end -->``.

* Philly: ``philly_node_sequence.csv``; test (replay) 2017-12-01 to the end (2017-12-15 18:42),
  the paper's "1st December to 14th December" plus the recorded part of the 15th; validation the
  week before; the forecaster trains on everything earlier (from 2017-10-03).
* Earth: the 15 VC series (May 2020); test May 25-31, validation May 18-24, training May 1-17.
  One forecaster is trained on the 15 VCs together (a VC alone has 17 days of history). Table 5
  for Earth is given twice: the 15 VCs replayed separately (a node serves its own VC) and
  summed, and their summed node series replayed as one cluster (the paper's cluster view).

Every setting is the ``schedlab ces`` default (the paper's; docs/helios-ces.md lists sources).

    python benchmarks/ces_paper.py            # writes docs/helios-ces.md, prints the tables
    python benchmarks/ces_paper.py --no-write
"""

from __future__ import annotations

import argparse
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.energy.ces import CESConfig
from schedlab.experiments.ces_forecast import REPORT_LEAD_NAMES, REPORT_LEADS, score_table, wins
from schedlab.energy.report import table5
from schedlab.experiments.ces_replay import VC_FILE, load_node_series, replay, replay_pool
from schedlab.predict.node_demand_eval import ChoiceRule

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "helios-ces.md"
DATA = ROOT.parent / "shared" / "data" / "helios-artifact"
SEED = 0

# Table 5 of the paper (Philly and Earth columns), and §4.3.3's vanilla DRS figure (the mean
# over the four Helios clusters; the paper gives no per-cluster or Philly value).
PAPER = {
    "Philly": {"nodes_off_mean": 100.1, "wakeups_per_day": 0.5, "nodes_per_wakeup": 27.1,
               "node_util_before": 69.0, "node_util_after": 90.4},
    "Earth": {"nodes_off_mean": 20.5, "wakeups_per_day": 1.3, "nodes_per_wakeup": 6.7,
              "node_util_before": 82.1, "node_util_after": 95.1},
}  # fmt: skip
PAPER_DRS_WAKEUPS = 34.1
ROWS = (
    ("nodes_off_mean", "Average # of DRS nodes", "{:.1f}"),
    ("wakeups_per_day", "Average times of daily wake up", "{:.2f}"),
    ("nodes_per_wakeup", "Average # of woken up nodes per time", "{:.1f}"),
    ("node_util_before", "Node utilization (original)", "{:.1f} %"),
    ("node_util_after", "Node utilization (CES / DRS)", "{:.1f} %"),
    ("kwh_saved_per_day", "Energy saved per day, cooling x3 (kWh)", "{:,.0f}"),
    ("jobs_delayed", "Boot waits (shortfall steps in a row)", "{:d}"),
)


def fmt(value, pattern: str) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    return pattern.format(value)


def merged(blocks: list[dict]) -> dict:
    """Table 5 metrics of several separately replayed series taken together: node counts and
    wake-ups summed, utilisation over the pooled nodes (weighted by each series' size)."""
    days = blocks[0]["days"]
    wakeups = sum(b["wakeups"] for b in blocks)
    woken = sum(b["wakeups"] * (b["nodes_per_wakeup"] or 0.0) for b in blocks)
    return {
        "nodes_off_mean": sum(b["nodes_off_mean"] for b in blocks),
        "wakeups_per_day": wakeups / days,
        "nodes_per_wakeup": woken / wakeups if wakeups else None,
        "node_util_before": sum(b["busy_mean"] for b in blocks) / sum(b["total_mean"] for b in blocks),
        "node_util_after": sum(b["busy_mean"] for b in blocks) / sum(b["powered_mean"] for b in blocks),
        "kwh_saved_per_day": sum(b["kwh_saved_per_day"] for b in blocks),
        "jobs_delayed": sum(b["jobs_delayed"] for b in blocks),
    }


def run(frames: dict[str, pd.DataFrame], test_days: float):
    plan, blocks, powered, windows = replay_pool(frames, config=CESConfig(), seed=SEED, test_days=test_days,
                                                 val_days=7.0)  # fmt: skip
    for name, by in blocks.items():
        w = windows[name]
        # the previous definition of vanilla DRS, for comparison: CES's buffer kept
        cfg = replace(CESConfig(**by["ces"]["config"]), use_forecast=False)
        kept = replay(w, None, cfg)
        by["drs_buffer"] = table5(w["active"].to_numpy(), kept.powered, w["total"].to_numpy(),
                                  step_s=(w.index[1] - w.index[0]).total_seconds(), wakeups=kept.wakeups, jobs_delayed=kept.shortfall_episodes, config=cfg)  # fmt: skip
        powered[name]["drs_buffer"] = kept.powered
        for label, block in by.items():  # pooled-utilisation inputs for merged()
            block.update(busy_mean=float(np.minimum(w["active"], powered[name][label]).mean()),
                         total_mean=float(w["total"].mean()), powered_mean=float(powered[name][label].mean()))  # fmt: skip
    return plan, blocks


def forecast_section(plans: dict[str, object]) -> str:
    table = pd.concat([score_table(p.test) for p in plans.values()], ignore_index=True)
    chosen = {k: v for p in plans.values() for k, v in p.chosen.items()}
    label = lambda s: s.replace("philly_node_sequence", "Philly").replace("Earth ", "")  # noqa: E731
    lines = ["| lead | series | GBDT SMAPE | last value | seasonal naive | GBDT MAE | last value | seasonal naive | CES uses |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for lead in REPORT_LEADS:
        for _, r in table[table["lead"] == lead].iterrows():
            best = min(r[f"smape_{f}"] for f in ("gbdt", "last", "seasonal"))
            cells = [f"**{r[f'smape_{f}']:.2f} %**" if r[f"smape_{f}"] <= best + 1e-9 else f"{r[f'smape_{f}']:.2f} %"
                     for f in ("gbdt", "last", "seasonal")]  # fmt: skip
            cells += [f"{r[f'mae_{f}']:.3f}" for f in ("gbdt", "last", "seasonal")]
            lines.append(f"| {REPORT_LEAD_NAMES[lead]} | {label(r['series'])} | " + " | ".join(cells) + f" | {chosen[r['series']]} |")
    summary = ["", "| lead | GBDT SMAPE below last value's (series) | below seasonal naive's |", "|---|---|---|"]
    for lead in REPORT_LEADS:
        won, n = wins(table, lead)
        rows = table[table["lead"] == lead]
        seasonal = int(np.sum(rows["smape_gbdt"] < rows["smape_seasonal"] - 1e-9))
        summary.append(f"| {REPORT_LEAD_NAMES[lead]} | {won} of {n} | {seasonal} of {n} |")
    summary += ["", "Validation week, SMAPE averaged over leads 10 min .. 3 h (what the choice rule reads):", "",
                "| series | GBDT | last value | seasonal naive | CES uses |", "|---|---|---|---|---|"]
    for plan in plans.values():
        val = pd.DataFrame([vars(s) for s in plan.validation]).groupby(["series", "forecaster"], sort=False)["smape"].mean()
        for name, f in plan.chosen.items():
            summary.append(f"| {label(name)} | " + " | ".join(f"{val[(name, x)]:.3f} %" for x in ("gbdt", "last", "seasonal"))
                           + f" | {f} |")  # fmt: skip
    fallback = sorted(label(k) for k, v in chosen.items() if v != "gbdt")
    note = ["", f"CES uses GBDT on {sum(v == 'gbdt' for v in chosen.values())} of {len(chosen)} series; the choice "
            f"rule (margin {ChoiceRule().margin * 100:.0f} %, no lead worse) keeps a baseline on: "
            + (", ".join(f"{k} ({chosen[[c for c in chosen if label(c) == k][0]]})" for k in fallback) or "none") + "."]  # fmt: skip
    return "\n".join(lines + summary + note)


def table5_section(philly: dict, earth_vcs: dict, earth_sum: dict) -> str:
    head = ("| | Philly paper | Philly CES | Philly vanilla DRS | Earth paper | Earth VCs CES | Earth VCs vanilla DRS "
            "| Earth sum CES | Earth sum vanilla DRS |")
    lines = [head, "|" + "---|" * 9]
    for key, name, pattern in ROWS:
        scale = 100.0 if key.startswith("node_util") else 1.0
        cell = lambda b: fmt(None if b.get(key) is None else b[key] * scale if scale != 1.0 else b[key], pattern)  # noqa: E731
        paper = lambda c: fmt(PAPER[c].get(key), pattern)  # noqa: E731
        lines.append(f"| {name} | {paper('Philly')} | {cell(philly['ces'])} | {cell(philly['vanilla_drs'])} | "
                     f"{paper('Earth')} | {cell(earth_vcs['ces'])} | {cell(earth_vcs['vanilla_drs'])} | "
                     f"{cell(earth_sum['ces'])} | {cell(earth_sum['vanilla_drs'])} |")  # fmt: skip
    lines += ["", "Vanilla DRS with CES's buffer kept (the previous definition):", "",
              "| | Philly | Earth VCs | Earth sum |", "|---|---|---|---|"]
    for key, name, pattern in ROWS[:3]:
        lines.append(f"| {name} | " + " | ".join(fmt(b["drs_buffer"][key], pattern) for b in (philly, earth_vcs, earth_sum)) + " |")
    lines.append(f"\nThe paper's vanilla DRS: {PAPER_DRS_WAKEUPS} wake-ups a day on average over its four Helios "
                 "clusters (§4.3.3); no per-cluster or Philly figure is printed.")
    return "\n".join(lines)


def write_block(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- ces:{name}:begin -->", f"<!-- ces:{name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{DOC}: markers {begin} / {end} not found")
    head, rest = text.split(begin, 1)
    return head + begin + "\n" + body + "\n" + end + rest.split(end, 1)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--save", type=Path, help="also pickle the runs' results to this file")
    parser.add_argument("--load", type=Path, help="format the results pickled by --save instead of running")
    args = parser.parse_args()
    t0 = time.process_time()
    if args.load:
        results = pickle.loads(args.load.read_bytes())
    else:
        vcs = {f"Earth {p.parent.name}": load_node_series(p) for p in sorted((DATA / "Earth_vcs").glob(f"*/{VC_FILE}"))}
        results = (run({"philly_node_sequence": load_node_series(DATA / "philly_node_sequence.csv")}, 14.0),
                   run(vcs, 7.0), run({"Earth sum of 15 VCs": load_node_series(DATA / "Earth_vcs")}, 7.0))  # fmt: skip
        if args.save:
            args.save.write_bytes(pickle.dumps(results))
    (philly_plan, philly), (earth_plan, earth), (sum_plan, earth_sum) = results
    forecast = forecast_section({"philly": philly_plan, "earth": earth_plan, "sum": sum_plan})
    by = lambda label: merged([b[label] for b in earth.values()])  # noqa: E731
    t5 = table5_section(philly["philly_node_sequence"], {k: by(k) for k in ("ces", "vanilla_drs", "drs_buffer")},
                        earth_sum["Earth sum of 15 VCs"])  # fmt: skip
    cpu = time.process_time() - t0
    print(forecast, "\n\n", t5, f"\n\n(process CPU time {cpu:.0f} s)", sep="")
    if not args.no_write:
        text = write_block(DOC.read_text(), "forecast", forecast)
        DOC.write_text(write_block(text, "table5", t5))
        print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
