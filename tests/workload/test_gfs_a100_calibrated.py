"""``gfs-a100-calibrated``: Table 3's tasks with pods per gang task set by Fig. 8's allocation
rate, and the resident HP tasks submitted before the window (``resident_days``)."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.errors import ConfigError
from schedlab.workload.synthetic import (
    GFS_A100_GPUS,
    GFS_A100_TASKS,
    GFS_CLUSTER_B_ALLOCATION,
    PROFILES,
    RESIDENT,
    calibrated_gang_ratio,
    doubling_law,
    generate,
    offered_gpus,
)

FULL = 165_038
RATES = {name: count / 91 for name, count in GFS_A100_TASKS.items()}


def _offered(workload) -> float:
    jobs = workload.jobs
    return float((jobs["num_gpus"] * jobs["duration_s"]).sum() / (GFS_A100_GPUS * workload.meta["span_s"]))


def test_the_calibrated_law_offers_cluster_b_allocation_rate() -> None:
    profile = PROFILES["gfs-a100-calibrated"]
    assert offered_gpus(profile.classes, RATES) / GFS_A100_GPUS == pytest.approx(GFS_CLUSTER_B_ALLOCATION, abs=1e-6)
    assert offered_gpus(PROFILES["gfs-a100"].classes, RATES) / GFS_A100_GPUS == pytest.approx(0.595, abs=0.005)
    pods = profile.classes[0].worker_values
    assert pods == (2, 4, 8, 16, 32, 64, 128)
    ratio = calibrated_gang_ratio(GFS_CLUSTER_B_ALLOCATION)
    assert profile.classes[0].worker_probs == pytest.approx(doubling_law(ratio, 128)[1])
    assert 0.4 < ratio < 0.5  # heavier than "every gang size the same GPU time" would make it


def test_a_generated_trace_offers_it_and_keeps_table3() -> None:
    loads = [_offered(generate("gfs-a100-calibrated", FULL, seed=s)) for s in (0, 1)]
    assert np.mean(loads) == pytest.approx(GFS_CLUSTER_B_ALLOCATION, abs=0.01)
    w = generate("gfs-a100-calibrated", FULL, seed=0)
    counts = w.jobs["priority_class"].value_counts()
    assert counts["hp"] == 138_403 and counts["spot"] == 26_635
    gang = w.jobs[w.jobs["num_gpus"] > w.jobs["gpus_per_worker"]]
    hp = w.jobs["priority_class"] == "hp"
    assert len(gang[gang["priority_class"] == "hp"]) / hp.sum() == pytest.approx(0.0866, abs=0.005)
    pods = gang["num_gpus"] / gang["gpus_per_worker"]
    assert pods.max() == 128 and pods.mean() == pytest.approx(6.24, rel=0.05)


def test_an_unreachable_allocation_is_refused() -> None:
    with pytest.raises(ConfigError, match="no doubling ratio"):
        calibrated_gang_ratio(3.0)  # more than every gang at 128 pods offers
    with pytest.raises(ConfigError, match="no doubling ratio"):
        calibrated_gang_ratio(0.3)  # less than every gang at 2 pods offers


def test_residents_precede_an_unchanged_window() -> None:
    plain = generate("gfs-a100", 20_000, seed=1)
    with_res = generate("gfs-a100", 20_000, seed=1, resident_days=7)
    lead = 7 * 86400
    jobs = with_res.jobs
    window = jobs[jobs["priority_class"] != RESIDENT].reset_index(drop=True)
    assert np.allclose(window["submit_s"] - lead, plain.jobs["submit_s"])
    for col in ("num_gpus", "gpus_per_worker", "duration_s", "priority_class", "tenant"):
        assert window[col].tolist() == plain.jobs[col].tolist()
    residents = jobs[jobs["priority_class"] == RESIDENT]
    assert residents["submit_s"].max() < lead <= window["submit_s"].min()
    hp_per_day = (plain.jobs["priority_class"] == "hp").sum() / (plain.meta["span_s"] / 86400)
    assert len(residents) == pytest.approx(7 * hp_per_day, rel=0.01)
    assert with_res.origin == plain.origin - np.timedelta64(7, "D")
    assert with_res.meta["window_start_s"] == lead
    assert with_res.meta["class_counts"][RESIDENT] == len(residents)


def test_negative_resident_days_are_refused() -> None:
    with pytest.raises(ConfigError, match="resident_days"):
        generate("gfs-a100", 100, seed=0, resident_days=-1)
