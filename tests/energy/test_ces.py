"""The CES service (Helios §4.3, Algorithm 2): its two checks, replay, and the simulation wrapper."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from schedlab.energy.ces import (
    SOURCES,
    CESConfig,
    arrival_check,
    forecast_trend,
    history_trend,
    kwh,
    paper_buffer,
    periodic_check,
    should_power_down,
    vanilla_drs,
)
from schedlab.energy.policy import CESPolicy
from schedlab.experiments.ces_replay import replay, run_replay
from schedlab.predict import node_demand_eval
from schedlab.predict.node_demand import ForecastConfig
from schedlab.predict.node_demand_eval import ChoiceRule
from schedlab.policies.registry import make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.policy import Context
from simkit import cluster, job, workload

TABLE5 = ("node_util_before", "node_util_after", "nodes_off_mean", "wakeups_per_day", "nodes_per_wakeup",
          "jobs_delayed", "kwh_saved")  # fmt: skip
CFG = CESConfig(history_threshold=0.5, forecast_threshold=0.0, buffer_nodes=2)
SMALL = ForecastConfig(rounds=20, lags_steps=(144,), windows_steps=(6, 18))


def test_defaults_are_the_papers_setting() -> None:
    cfg = CESConfig()
    assert cfg.check_s == 600.0  # PeriodicCheck every 10 minutes (§4.3.2)
    assert cfg.history_checks * cfg.check_s == 3600.0  # RecentNodesTrend over about one hour
    assert cfg.future_steps * cfg.check_s == 3 * 3600.0  # FutureNodesTrend over 3 hours
    assert cfg.boot_s == 300.0 and cfg.idle_power_w == 800.0 and cfg.cooling_factor == 3.0
    assert set(SOURCES) >= {"check_s", "history_checks", "future_steps", "history_threshold",
                            "forecast_threshold", "buffer_nodes", "boot_s", "cooling_factor"}  # fmt: skip
    # the buffer: the artifact's Philly 20 of 420 nodes, scaled; the Earth VCs' 101 nodes give 5
    assert paper_buffer(420) == 20 and paper_buffer(101) == 5 and paper_buffer(8) == 1


def test_recent_trend_reads_the_last_hour_of_checks() -> None:
    # RecentNodesTrend = mean of the previous checks - running now, on the last 6 (one hour)
    past = [30, 30, 30, 30, 30, 30, 30, 20, 20, 20, 20, 20]
    assert history_trend(past[-6:], 17) == pytest.approx(20 - 17 + (30 - 20) / 6 * 1)
    assert history_trend([12, 10, 11], 9) == pytest.approx(2.0)
    assert forecast_trend(9, [8, 7, 6]) == pytest.approx(2.0)  # FutureNodesTrend: 9 - mean 7


def test_periodic_check_needs_both_trends() -> None:
    falling, flat = [12.0, 12.0, 12.0], [8.0, 8.0, 8.0]
    down, up = [6.0, 6.0], [11.0, 11.0]
    # both trends reach their thresholds: power down to running + buffer
    assert periodic_check(20, 12, 8, falling, down, CFG) == 20 - (8 + 2)
    # history trend fails -> nothing; dropping that condition (threshold -inf) would act
    assert periodic_check(20, 12, 8, flat, down, CFG) == 0
    assert periodic_check(20, 12, 8, flat, down, replace(CFG, history_threshold=-math.inf)) == 10
    # forecast trend fails -> nothing; dropping that condition (vanilla DRS) would act
    assert periodic_check(20, 12, 8, falling, up, CFG) == 0
    assert periodic_check(20, 12, 8, falling, up, replace(CFG, use_forecast=False)) == 10
    # the thresholds are reached with >= (the artifact's reading): 0.5 >= 0.5 and 0 >= 0 act,
    # just below does not; CES without a forecast never powers down
    assert should_power_down([8.5], 8, [8.0], CFG)
    assert not should_power_down([8.4], 8, [8.0], CFG)
    assert not should_power_down([8.5], 8, [8.1], CFG)
    assert not should_power_down(falling, 8, None, CFG)
    # only idle booted nodes can go
    assert periodic_check(20, 3, 8, falling, down, CFG) == 3


def test_arrival_check_wakes_the_shortfall_plus_buffer() -> None:
    assert arrival_check(10, 6, 1, 20, CFG) == 3 + 2
    assert arrival_check(10, 6, 1, 4, CFG) == 4  # no more than are off
    assert arrival_check(7, 6, 1, 20, CFG) == 0  # booting nodes already cover it


def test_vanilla_drs_is_recent_trend_only_without_buffer() -> None:
    drs = vanilla_drs(CFG)
    assert drs.label == "vanilla_drs" and drs.buffer_nodes == 0 and not drs.use_forecast
    falling, up = [12.0, 12.0, 12.0], [11.0, 11.0]
    # powers down to the running count exactly, whatever a forecast says
    assert periodic_check(20, 12, 8, falling, up, drs) == 12
    assert periodic_check(20, 12, 8, falling, None, drs) == 12
    # wakes exactly the shortfall, where CES adds its buffer
    assert arrival_check(10, 6, 1, 20, drs) == 3
    assert arrival_check(10, 6, 1, 20, CFG) == 5


def test_energy_counts_cooling_at_twice_the_servers() -> None:
    cfg = CESConfig()
    # one node off for one hour: 0.8 kW x 1 h x (1 server + 2 cooling) = 2.4 kWh
    assert kwh(3600.0, cfg) == pytest.approx(2.4)
    assert kwh(3600.0, cfg, idle_power_w=1000.0) == pytest.approx(3.0)
    # §4.3.3: Table 5's DRS nodes of the four Helios clusters a year -> "over 1.65 million kWh"
    helios_nodes = 5.0 + 20.5 + 20.0 + 34.0
    yearly = kwh(helios_nodes * 8760 * 3600.0, cfg)
    assert 1.65e6 < yearly < 1.70e6
    assert kwh(helios_nodes * 8760 * 3600.0, replace(cfg, cooling_factor=2.0)) < 1.65e6


def _frame(active: list[int], total: int = 10) -> pd.DataFrame:
    idx = pd.date_range("2021-01-04", periods=len(active), freq="1min")
    return pd.DataFrame({"active": active, "total": total}, index=idx)


def test_replay_boot_delay_and_drs_differs_from_ces() -> None:
    frame = _frame([8] * 30 + [2] * 60 + [8] * 60)
    drs = replace(CFG, buffer_nodes=1, use_forecast=False, boot_s=300.0)
    run = replay(frame, None, drs)
    assert run.power_downs >= 1 and run.powered.min() == 3  # down to 2 running + 1 buffer
    assert run.wakeups == [8 - 3 + 1]  # the jump to 8 wakes the shortfall plus the buffer
    assert run.shortfall_minutes == 5.0 and run.shortfall_episodes == 1  # the jobs wait boot_s
    # CES with a forecast of rising demand keeps every node on, unlike vanilla DRS
    fc_index = pd.date_range(frame.index[0], periods=len(frame) // 10 + 20, freq="10min")
    rising = pd.DataFrame(np.full((len(fc_index), 18), 9.0), index=fc_index)
    ces = replay(frame, rising, replace(drs, use_forecast=True))
    assert ces.power_downs == 0 and ces.powered.min() == 10 and ces.wakeups == []


def test_run_replay_writes_both_blocks(tmp_path) -> None:
    idx = pd.date_range("2021-03-01", periods=10 * 1440, freq="1min")
    tod = (idx.hour * 60 + idx.minute).to_numpy()
    active = np.round(30 + 15 * np.sin(2 * np.pi * tod / 1440)).astype(int)
    path = tmp_path / "series.csv"
    pd.DataFrame({"time": idx, "active": active, "total": 60}).to_csv(path, index=False)
    summary = run_replay(path, tmp_path / "out", config=CFG, seed=0, test_days=2, val_days=2,
                         forecast_config=SMALL)
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["smape"] == pytest.approx(summary["smape"]) and np.isfinite(saved["smape"])
    assert saved["forecaster"] in ("gbdt", "last", "seasonal") and saved["fallback"] == (saved["forecaster"] != "gbdt")
    assert saved["ces"]["forecaster"] == saved["forecaster"] and saved["vanilla_drs"]["config"]["buffer_nodes"] == 0
    # 2 validation days are fewer than the rule's 7: the last value is kept, and the summary says why
    assert saved["forecaster"] == "last" and "validation window is 2.0 days" in saved["choice_reason"]
    assert saved["choice_rule"] == {"margin": 0.1, "min_val_days": 7.0, "min_train_days": 14.0}
    for block in ("ces", "vanilla_drs"):
        assert set(TABLE5) <= set(saved[block])
    assert saved["ces"]["node_util_after"] >= saved["ces"]["node_util_before"]
    assert (tmp_path / "out" / "ces_nodes.png").stat().st_size > 0


def test_wrapper_boot_delay_delays_the_waiting_job() -> None:
    wl = workload([job("a", 0.0, 8, 4 * 3600.0), job("b", 1500.0, 16, 600.0)])
    cfg = CESConfig(history_threshold=-1.0, buffer_nodes=0, use_forecast=False)
    policy = CESPolicy(make_policy("fifo", rng=np.random.default_rng(0)), cfg, seed=0)
    result = Simulation(wl, cluster([8, 8, 8]), policy, config=SimConfig(boot_s=300.0)).run()
    starts = result.jobs.set_index("job_id")["first_start_s"]
    assert starts["b"] == pytest.approx(1500.0 + 300.0)  # two nodes were off: b waits one boot
    block = policy.energy_report(3)
    assert block["jobs_delayed"] == 1 and block["wakeups"] == 1 and block["nodes_per_wakeup"] == 2
    assert result.jobs["finished"].all()


@pytest.mark.parametrize("use_forecast", [True, False])
def test_wrapper_keeps_jobs_finishing_and_only_idle_nodes_go_off(use_forecast: bool) -> None:
    rng = np.random.default_rng(7)
    n = 400
    submit = np.sort(rng.uniform(0, 4 * 86400, n))
    rows = [job(f"j{i}", float(s), int(rng.choice([1, 2, 4, 8, 16])), float(rng.exponential(3600)))
            for i, s in enumerate(submit)]  # fmt: skip
    cfg = CESConfig(use_forecast=use_forecast, buffer_nodes=1, history_threshold=1.0)
    short = ChoiceRule(min_val_days=1.0, min_train_days=1.0)  # lets the 4-day run fit and score forecasters
    policy = CESPolicy(make_policy("fifo", rng=np.random.default_rng(0)), cfg, seed=0, rule=short, val_days=1.0)
    spec = cluster([8] * 6)
    seen_busy_off: list[int] = []
    sim = Simulation(workload(rows), spec, policy)
    schedule = policy.schedule

    def checked(ctx: Context) -> None:  # the engine rejects powering a busy node off; check every round too
        schedule(ctx)
        state = sim.state
        seen_busy_off.extend(n for n in range(state.num_nodes) if not state.on[n] and not state.idle(n))

    policy.schedule = checked  # type: ignore[method-assign]  # wraps the policy's rounds
    result = sim.run()
    assert not seen_busy_off
    assert result.jobs["finished"].all()
    block = policy.energy_report(len(spec.nodes))
    assert block["nodes_off_mean"] > 0 and block["kwh_saved"] > 0
    assert set(TABLE5) <= set(block)
    if use_forecast:
        assert block["choices"] and block["forecaster"] == block["choices"][-1]["forecaster"]
        assert block["choice_reason"] == block["choices"][-1]["reason"]


def test_ces_and_simulate_ces_choose_the_forecaster_by_the_same_rule(tmp_path, monkeypatch) -> None:
    """`schedlab ces` and `schedlab simulate --ces` both call node_demand_eval.validate with the
    default ChoiceRule, and both say which forecaster they use and why."""
    from typer.testing import CliRunner

    from schedlab.cli import app

    calls: list[str] = []
    real = node_demand_eval.validate

    def spy(series, *args, rule, **kwargs):
        calls.append(next(iter(series)))
        assert rule == ChoiceRule()
        return real(series, *args, rule=rule, **kwargs)

    monkeypatch.setattr(node_demand_eval, "validate", spy)
    idx = pd.date_range("2021-03-01", periods=6 * 1440, freq="1min")
    active = np.round(30 + 15 * np.sin(2 * np.pi * (idx.hour * 60 + idx.minute).to_numpy() / 1440)).astype(int)
    pd.DataFrame({"time": idx, "active": active, "total": 60}).to_csv(tmp_path / "nodes.csv", index=False)
    runner = CliRunner()
    replayed = runner.invoke(app, ["ces", "--series", str(tmp_path / "nodes.csv"), "--test-days", "2", "--val-days", "1",
                                   "--out", str(tmp_path / "replay")])  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    assert calls == ["nodes.csv"]
    assert "CES forecaster: last (last value kept: the validation window is 1.0 days" in " ".join(replayed.output.split())
    simulated = runner.invoke(app, ["simulate", "--synthetic", "venus", "--jobs", "300", "--ces", "--no-progress",
                                    "--out", str(tmp_path / "sim")])  # fmt: skip
    assert simulated.exit_code == 0, simulated.output
    assert calls[1:] and set(calls[1:]) == {"run"}  # the simulation's running-node series
    ces = json.loads((tmp_path / "sim" / "summary.json").read_text())["ces"]
    assert ces["forecaster"] == "last" and "the validation window is" in ces["choice_reason"]
    assert "CES forecaster at the end of the run: last" in " ".join(simulated.output.split())


def test_ces_command_defaults_are_the_config_defaults() -> None:
    """`schedlab ces` without tuning flags runs CESConfig's (the paper's) setting."""
    import inspect

    from schedlab.cli import ces_replay

    defaults = {name: p.default for name, p in inspect.signature(ces_replay).parameters.items()}
    cfg = CESConfig()
    assert defaults["history_checks"] == cfg.history_checks and defaults["future_steps"] == cfg.future_steps
    assert defaults["history_threshold"] == cfg.history_threshold
    assert defaults["forecast_threshold"] == cfg.forecast_threshold
    assert defaults["boot_s"] == cfg.boot_s and defaults["cooling"] == cfg.cooling_factor
    assert defaults["buffer"] is None  # paper_buffer of the series' size
    assert defaults["choice_margin"] == ChoiceRule().margin


@pytest.mark.parametrize("cells, field, shown", [
    (("2017-10-03 00:01:00", "abc", "420"), "active", "'abc'"),
    (("2017-10-03 00:01:00", "3", "4x"), "total", "'4x'"),
    (("yesterday", "3", "420"), "time", "'yesterday'"),
])  # fmt: skip
def test_a_bad_cell_in_a_node_series_names_its_row_and_field(tmp_path, cells, field, shown) -> None:
    from schedlab.errors import InputError
    from schedlab.experiments.ces_replay import load_node_series

    path = tmp_path / "nodes.csv"
    path.write_text("time,active,total\n2017-10-03 00:00:00,312,420\n" + ",".join(cells) + "\n")
    with pytest.raises(InputError) as err:
        load_node_series(path)
    assert (err.value.file, err.value.row, err.value.field) == (str(path), 2, field) and shown in str(err.value)
