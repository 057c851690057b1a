"""Synthetic generator: reproducibility, schema, and calibration against the published targets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import ConfigError
from schedlab.workload.schema import canonical_frame
from schedlab.workload.synthetic import PROFILES, generate

N = 50_000
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def venus():
    return generate("venus", N, seed=11)


@pytest.fixture(scope="module")
def philly():
    return generate("philly", N, seed=12)


@pytest.fixture(scope="module")
def gfs():
    return generate("gfs", N, seed=13)


def _shares(values: pd.Series) -> dict[float, float]:
    return values.value_counts(normalize=True).to_dict()


def _hour_counts(w) -> np.ndarray:
    hours = (w.origin + pd.to_timedelta(w.jobs["submit_s"], unit="s")).dt.hour
    return np.bincount(hours, minlength=24)


def test_same_seed_same_frame_and_different_seed_differs() -> None:
    a = generate("simple", 3000, seed=5)
    b = generate("simple", 3000, seed=5)
    c = generate("simple", 3000, seed=6)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert not a.jobs["duration_s"].equals(c.jobs["duration_s"])


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_is_canonical(name: str) -> None:
    w = generate(name, 2000, seed=1)
    pd.testing.assert_frame_equal(canonical_frame(w.jobs, source="check"), w.jobs)
    assert w.jobs["job_id"].iloc[0] == f"{PROFILES[name].name}-0"
    assert w.origin is not None and w.meta["seed"] == 1 and w.meta["profile"] == PROFILES[name].name


def test_helios_is_an_alias_of_venus() -> None:
    pd.testing.assert_frame_equal(generate("helios", 500, seed=2).jobs, generate("venus", 500, seed=2).jobs)


def test_bad_profile_or_parameter_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown workload profile"):
        generate("nope", 10, seed=0)
    with pytest.raises(ConfigError, match="no parameter"):
        generate("venus", 10, seed=0, colour="red")


@pytest.mark.parametrize("load", [0.5, 1.2])
def test_offered_load_and_span(load: float) -> None:
    w = generate("simple", 4000, seed=3, cluster_gpus=32, load=load)
    j = w.jobs
    span = w.meta["span_s"]
    assert (j["num_gpus"] * j["duration_s"]).sum() / (32 * span) == pytest.approx(load)
    assert j["submit_s"].min() >= 0 and j["submit_s"].max() < span
    assert j["submit_s"].max() > 0.95 * span


def test_venus_gpu_mix_durations_and_states(venus) -> None:
    j = venus.jobs
    targets = dict(zip(PROFILES["venus"].classes[0].gpu_values, PROFILES["venus"].classes[0].gpu_probs))
    shares = _shares(j["num_gpus"])
    for gpus, share in targets.items():
        assert shares.get(gpus, 0.0) == pytest.approx(share, abs=0.01)
    assert j["num_gpus"].mean() == pytest.approx(6.736, rel=0.05)  # Helios avg_gpu_num
    assert j["duration_s"].median() == pytest.approx(204, rel=0.15)  # Helios med_run_time_gpu
    counts = _shares(j["final_state"])
    for state, share in {"completed": 0.526, "cancelled": 0.272, "failed": 0.202}.items():
        assert counts[state] == pytest.approx(share, abs=0.015)
    gpu_time = (j["num_gpus"] * j["duration_s"]).groupby(j["final_state"]).sum()
    gpu_time /= gpu_time.sum()
    assert gpu_time["failed"] < 0.15 < counts["failed"]  # failures die young: 8.5 % of GPU time
    assert gpu_time["cancelled"] > counts["cancelled"]


def test_venus_arrivals_are_diurnal_with_quiet_weekends(venus) -> None:
    hourly = _hour_counts(venus)
    assert hourly.max() / hourly.min() > 4  # Lucid's Venus series: about 9
    assert np.argmax(hourly) in range(10, 22) and np.argmin(hourly) in range(2, 9)
    flat = _hour_counts(generate("simple", 20_000, seed=4))
    assert flat.max() / flat.min() < 1.3
    days = (venus.origin + pd.to_timedelta(venus.jobs["submit_s"], unit="s")).dt.normalize()
    per_day = days.value_counts()
    weekend = per_day[per_day.index.day_of_week >= 5].mean() / per_day[per_day.index.day_of_week < 5].mean()
    assert 0.5 < weekend < 0.8


def test_venus_users_and_names_carry_signal(venus) -> None:
    j = venus.jobs
    gpu_time = (j["num_gpus"] * j["duration_s"]).groupby(j["user"]).sum().sort_values(ascending=False)
    top = max(1, int(0.05 * len(gpu_time)))
    assert gpu_time.iloc[:top].sum() / gpu_time.sum() > 0.4
    assert _explained_by_name(j) > 0.1
    flat = generate("venus", 20_000, seed=11, template_sigma=0.0, template_affinity=0.0)
    assert _explained_by_name(flat.jobs) < 0.02


def _explained_by_name(j: pd.DataFrame) -> float:
    """Out-of-sample R^2 of log duration predicted by the mean of earlier jobs of the same
    (user, name stem, GPU count), against predicting by the GPU count alone."""
    log_d = np.log(j["duration_s"]).to_numpy()
    key = j["user"] + "|" + j["name"].str.rsplit("-", n=1).str[0] + "|" + j["num_gpus"].astype(str)
    train = np.arange(len(j)) % 2 == 0
    by_key = pd.Series(log_d[train]).groupby(key[train].to_numpy()).mean()
    by_size = pd.Series(log_d[train]).groupby(j["num_gpus"].to_numpy()[train]).mean()
    sizes = pd.Series(train).groupby(key.to_numpy()).sum()
    test = ~train & key.isin(sizes.index[sizes >= 5]).to_numpy()
    own = by_key.reindex(key[test].to_numpy()).to_numpy()
    size = by_size.reindex(j["num_gpus"].to_numpy()[test]).to_numpy()
    return 1.0 - np.sum((log_d[test] - own) ** 2) / np.sum((log_d[test] - size) ** 2)


def test_philly_matches_the_pollux_excerpt(philly) -> None:
    j = philly.jobs
    assert _shares(j["num_gpus"])[1.0] == pytest.approx(0.9317, abs=0.006)
    assert j["duration_s"].median() == pytest.approx(1144, rel=0.15)
    assert j["duration_s"].quantile(0.9) == pytest.approx(11265, rel=0.3)
    assert j["tenant"].nunique() >= 11 and _shares(j["tenant"])["6214e9"] == pytest.approx(0.501, abs=0.01)
    assert philly.origin == pd.Timestamp("2017-09-04")


def test_gfs_classes_gangs_and_gpu_types(gfs) -> None:
    j = gfs.jobs
    cls = _shares(j["priority_class"])
    assert cls["hp"] == pytest.approx(0.839, abs=0.002) and cls["spot"] == pytest.approx(0.161, abs=0.002)
    gang = j["num_gpus"] > j["gpus_per_worker"]
    assert gang[j["priority_class"] == "hp"].mean() == pytest.approx(0.0866, abs=0.01)
    assert gang[j["priority_class"] == "spot"].mean() == pytest.approx(0.2726, abs=0.015)
    assert j["gpus_per_worker"].notna().all()
    assert (j.loc[gang, "gpus_per_worker"] >= 1).all()
    assert (j.loc[j["gpu_type"] == "A10", "gpus_per_worker"] <= 1).all()
    assert (j["gpus_per_worker"] > 1).any()
    types = _shares(j["gpu_type"])
    assert types["A100-SXM4-80GB"] == pytest.approx(3456 / 10412, abs=0.01)
    assert types["A10"] == pytest.approx(2494 / 10412, abs=0.01)
    assert j["tenant"].nunique() > 100 and (j["final_state"] == "unknown").all()


def test_gfs_organisations_have_their_own_daily_phase(gfs) -> None:
    def phase_spread(w) -> float:
        """Spread (hours) of the circular-mean submit hour of the 10 busiest organisations."""
        hours = (w.origin + pd.to_timedelta(w.jobs["submit_s"], unit="s")).dt.hour.to_numpy()
        tenants = w.jobs["tenant"].to_numpy()
        top = w.jobs["tenant"].value_counts().index[:10]
        angles = [np.angle(np.exp(2j * np.pi * hours[tenants == t] / 24).mean()) for t in top]
        return float(np.std(np.unwrap(np.sort(angles))) * 24 / (2 * np.pi))

    assert phase_spread(gfs) > 1.0
    assert phase_spread(generate("gfs", N, seed=13, tenant_phase_sd_h=0.0, tenant_amplitude=(1.0, 1.0))) < 0.5


@pytest.mark.parametrize("scale", [2, 4])
def test_spot_scale_multiplies_spot_jobs_only(scale: int) -> None:
    base = generate("gfs", 10_000, seed=21).jobs["priority_class"].value_counts()
    more = generate("gfs", 10_000, seed=21, spot_scale=scale).jobs["priority_class"].value_counts()
    assert more["hp"] == base["hp"]
    assert more["spot"] == scale * base["spot"]


@pytest.mark.shared_data
def test_venus_profile_matches_the_helios_summary_file() -> None:
    path = DATA / "helios-artifact" / "helios_cluster_summary.csv"
    if not path.exists():
        pytest.skip("shared data folder not present")
    row = pd.read_csv(path).set_index("id").loc["Venus"]
    j = generate("venus", 30_000, seed=8).jobs
    assert j["duration_s"].median() == pytest.approx(row["med_run_time_gpu"], rel=0.2)
    assert j["num_gpus"].mean() == pytest.approx(row["avg_gpu_num"], rel=0.1)
    assert (j["final_state"] == "completed").mean() == pytest.approx(row["complete_rate_gpu"], abs=0.02)


def test_gfs_gangs_never_exceed_their_models_gpus() -> None:
    from schedlab.cluster.presets import load_cluster
    from schedlab.policies.registry import make_policy
    from schedlab.sim.engine import Simulation

    w = generate("gfs", 60000, seed=0, load=0.9, spot_scale=4)
    totals = w.jobs.groupby("gpu_type")["num_gpus"].max()
    assert totals["A800-SXM4-80GB"] <= 176  # the smallest model: 22 nodes of 8
    Simulation(w, load_cluster("gfs"), make_policy("fifo", rng=np.random.default_rng(0)))  # fit check passes


@pytest.mark.parametrize("options", [{"load": float("inf")}, {"load": float("nan")}, {"cluster_gpus": float("inf")}])
def test_a_load_or_cluster_size_that_is_not_a_finite_number_is_refused(options):
    with pytest.raises(ConfigError, match="positive finite numbers"):
        generate("simple", 100, seed=0, **options)


def test_scaling_arrivals_by_infinity_is_refused():
    from schedlab.workload.transforms import scale_arrivals

    with pytest.raises(ConfigError, match="positive finite number"):
        scale_arrivals(generate("simple", 10, seed=0), float("inf"))
