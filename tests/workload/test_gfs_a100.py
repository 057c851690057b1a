"""The ``gfs-a100`` profile and preset: the GFS paper's §4.1 setup (Tables 3 and 5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.cluster.presets import load_cluster
from schedlab.errors import ConfigError
from schedlab.workload.synthetic import (
    GFS_A100_GPU,
    PROFILES,
    generate,
    lognormal_mean_p99,
    solo_mix,
)

FULL = 165_038  # Table 3: 138,403 HP + 26,635 spot tasks


@pytest.fixture(scope="module")
def full():
    return generate("gfs-a100", FULL, seed=3)


def _pod_mix(jobs: pd.DataFrame) -> dict[float, float]:
    return jobs["gpus_per_worker"].value_counts(normalize=True).to_dict()


def test_table3_counts_and_window(full) -> None:
    counts = full.jobs["priority_class"].value_counts()
    assert counts["hp"] == 138_403 and counts["spot"] == 26_635
    assert full.meta["span_s"] == pytest.approx(91 * 86400)
    assert full.jobs["submit_s"].max() < 91 * 86400
    assert full.origin == pd.Timestamp("2024-04-01")
    assert (full.jobs["gpu_type"] == GFS_A100_GPU).all()


@pytest.mark.parametrize(
    ("cls", "pct", "gang"),
    [
        ("hp", (0.11, 55.11, 13.37, 7.53, 23.69), 0.0866),
        ("spot", (0.82, 67.35, 5.67, 12.00, 14.04), 0.2726),
    ],
)
def test_table3_pod_mix_and_gang_share(full, cls: str, pct: tuple[float, ...], gang: float) -> None:
    jobs = full.jobs[full.jobs["priority_class"] == cls]
    mix = _pod_mix(jobs)
    for value, p in zip((0.5, 1.0, 2.0, 4.0, 8.0), pct):
        assert 100 * mix[value] == pytest.approx(p / sum(pct) * 100, abs=0.5), value
    is_gang = jobs["num_gpus"] > jobs["gpus_per_worker"]
    assert is_gang.mean() == pytest.approx(gang, abs=0.01)
    pods = jobs.loc[is_gang, "num_gpus"] / jobs.loc[is_gang, "gpus_per_worker"]
    assert set(pods.unique()) == {2, 4, 8, 16} and (jobs.loc[is_gang, "gpus_per_worker"] >= 1).all()
    assert pods.mean() == pytest.approx(64 / 15, rel=0.05)  # the 8 : 4 : 2 : 1 law over 2, 4, 8, 16 pods


def test_table5_work_statistics(full) -> None:
    hp = full.jobs.loc[full.jobs["priority_class"] == "hp", "duration_s"]
    spot = full.jobs.loc[full.jobs["priority_class"] == "spot", "duration_s"]
    assert hp.mean() == pytest.approx(17_777.1 - 28.4, rel=0.01)  # GFS HP JCT - JQT
    assert hp.quantile(0.99) == pytest.approx(29_304.5, rel=0.02)  # GFS HP JCT-p99
    assert spot.mean() == pytest.approx(10_438.7 - 323.0, rel=0.01)  # GFS spot JCT - JQT


def test_fewer_jobs_keep_the_arrival_rate() -> None:
    w = generate("gfs-a100", 20_000, seed=1)
    assert w.meta["span_s"] == pytest.approx(20_000 / FULL * 91 * 86400)
    assert w.jobs["submit_s"].max() < w.meta["span_s"]


@pytest.mark.parametrize("scale", [2, 4])
def test_spot_scale_raises_the_spot_rate_only(scale: int) -> None:
    base = generate("gfs-a100", 10_000, seed=21)
    more = generate("gfs-a100", 10_000, seed=21, spot_scale=scale)
    b, m = base.jobs["priority_class"].value_counts(), more.jobs["priority_class"].value_counts()
    assert m["hp"] == b["hp"] and m["spot"] == scale * b["spot"]
    assert more.meta["span_s"] == base.meta["span_s"]


def test_a_target_load_is_refused() -> None:
    with pytest.raises(ConfigError, match="fixed arrival rate"):
        generate("gfs-a100", 1000, seed=0, load=0.8)


def test_organisations_follow_observation_2(full) -> None:
    when = full.origin + pd.to_timedelta(full.jobs["submit_s"], unit="s")
    hour, weekend = when.dt.hour, when.dt.day_of_week >= 5
    for org, ratio, drop in (("orgA", 86 / 74, 0.0), ("orgB", 90 / 67, 0.0), ("orgC", None, 0.357)):
        mine = (full.jobs["tenant"] == org).to_numpy()
        peak = ((hour >= 10) & mine).sum() / 14
        off = ((hour < 10) & mine).sum() / 10
        if ratio is not None:
            assert peak / off == pytest.approx(ratio, rel=0.03), org
        per_weekend_day = (weekend & mine).sum() / 26  # Apr-Jun 2024 has 26 weekend days, 65 weekdays
        per_weekday = (~weekend & mine).sum() / 65
        assert 1 - per_weekend_day / per_weekday == pytest.approx(drop, abs=0.03), org
    assert set(full.jobs["tenant"].unique()) == {"orgA", "orgB", "orgC", "orgD"}


def test_solo_mix_keeps_the_all_job_mix() -> None:
    # Hand case: values <1, 1, 8 with shares 0.1, 0.5, 0.4 and gang share 0.5. Gang jobs take 1 or 8
    # GPUs with 5/9 and 4/9, so the non-gang jobs need <1: 0.1 / 0.5 = 0.2, 1: (0.5 - 0.5 * 5/9) / 0.5
    # = 4/9 and 8: (0.4 - 0.5 * 4/9) / 0.5 = 16/45.
    solo = solo_mix((0.5, 1.0, 8.0), (0.1, 0.5, 0.4), 0.5)
    assert solo == pytest.approx((0.2, 4 / 9, 16 / 45))
    gang = (0.0, 5 / 9, 4 / 9)
    assert [0.5 * a + 0.5 * b for a, b in zip(solo, gang)] == pytest.approx([0.1, 0.5, 0.4])


def test_lognormal_through_mean_and_p99() -> None:
    mix = lognormal_mean_p99(100.0, 200.0)
    median, sigma = mix.medians_s[0], mix.sigmas[0]
    assert median * np.exp(sigma**2 / 2) == pytest.approx(100.0)
    assert median * np.exp(2.3263478740408408 * sigma) == pytest.approx(200.0)
    with pytest.raises(ConfigError):
        lognormal_mean_p99(100.0, 90.0)


def test_preset_is_the_papers_cluster_and_jobs_run_at_speed_one() -> None:
    from schedlab.policies.registry import make_policy
    from schedlab.sim.engine import Simulation

    spec = load_cluster("gfs-a100")
    assert len(spec.nodes) == 287 and spec.total_gpus == 2296
    assert spec.gpus_by_type() == {GFS_A100_GPU: 2296} and not spec.partitioned
    assert PROFILES["gfs-a100"].cluster_gpus == spec.total_gpus
    w = generate("gfs-a100", 200, seed=4)
    result = Simulation(w, spec, make_policy("fifo", rng=np.random.default_rng(0))).run()
    jobs = result.jobs.set_index("job_id").loc[w.jobs["job_id"]]
    assert jobs["finished"].all() and (jobs["preemptions"] == 0).all()
    assert jobs["run_s"].to_numpy() == pytest.approx(w.jobs["duration_s"].to_numpy(), rel=1e-9)


def test_cli_spot_scale_takes_gfs_a100_and_refuses_others(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["simulate", "--synthetic", "gfs-a100", "--jobs", "300", "--spot-scale", "2",
                             "--policy", "gfs", "--out", str(tmp_path / "a"), "--no-progress"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    jobs = pd.read_parquet(tmp_path / "a" / "jobs.parquet")
    assert len(jobs) == 300 + round(300 * 26_635 / FULL)  # 50 spot jobs at x1, doubled
    bad = runner.invoke(app, ["simulate", "--synthetic", "venus", "--jobs", "300", "--spot-scale", "2",
                              "--policy", "fifo", "--out", str(tmp_path / "b"), "--no-progress"])  # fmt: skip
    assert bad.exit_code != 0 and "gfs-a100" in bad.output
