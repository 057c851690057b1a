"""Fairness metrics (LTGF, finish-time fairness, Jain's index) on hand-computed cases, and the
tenant-weights loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from metrics_builders import build_jobs, build_ts

from schedlab.errors import ConfigError, InputError
from schedlab.metrics.fairness import fairness_metrics, jain_index, load_shares
from schedlab.metrics.summary import summarize


def _two_tenants() -> object:
    # 4 GPUs; tenant a (weight 1) runs a1, 2 GPUs, on [0, 100); tenant b (weight 3) submits b1,
    # 4 GPUs, at 0 and runs it on [100, 200).
    return build_jobs(
        tenant=["a", "b"], num_gpus=[2.0, 4.0], submit_s=[0.0, 0.0], duration_s=[100.0, 100.0],
        first_start_s=[0.0, 100.0], end_s=[100.0, 200.0], gpu_seconds=[200.0, 400.0],
    )  # fmt: skip


def test_two_tenants_weighted_1_to_3_by_hand() -> None:
    result = fairness_metrics(_two_tenants(), 4, shares={"a": 1.0, "b": 3.0})
    # [0, 100): both have demand (a 2, b 4); weighted split 1:3 of 4 GPUs = a 1, b 3 (neither capped).
    # [100, 200): only b (demand 4) -> b 4.  Deserved a = 100, b = 300 + 400 = 700 GPU-s.
    # Ratios a = 200 / 100 = 2, b = 400 / 700 = 4/7.
    tenants = result["tenant_fairness"]
    assert tenants["a"]["deserved_gpu_h"] == pytest.approx(100 / 3600)
    assert tenants["b"]["deserved_gpu_h"] == pytest.approx(700 / 3600)
    assert tenants["b"]["received_gpu_h"] == pytest.approx(400 / 3600)
    assert tenants["a"]["ltgf_ratio"] == pytest.approx(2.0)
    assert tenants["b"]["ltgf_ratio"] == pytest.approx(4 / 7)
    assert result["ltgf_tenant_min"] == pytest.approx(4 / 7)
    assert result["ltgf_tenant_max"] == pytest.approx(2.0)
    # Jain: (2 + 4/7)^2 / (2 (4 + 16/49)) = (324/49) / (424/49) = 324/424
    assert result["jain_tenants"] == pytest.approx(324 / 424)
    # jobs: a1 alone in a deserves min(2, 1/1) x 100 = 100 -> ratio 2, unfairness 1;
    # b1 deserves min(4, 3) x 100 + min(4, 4) x 100 = 700 -> ratio 4/7, unfairness 3/7.
    # p95 of [3/7, 1] = 3/7 + 0.95 x 4/7 = 6.8/7
    assert result["ltgf_job_unfairness_max"] == pytest.approx(1.0)
    assert result["ltgf_job_unfairness_p95"] == pytest.approx(6.8 / 7)
    # rho: shares of 4 GPUs a 1, b 3; a1: JCT 100 / (100 x max(1, 2/1)) = 0.5;
    # b1: JCT 200 / (100 x max(1, 4/3)) = 1.5. mean 1, max 1.5, p95 = 0.5 + 0.95 x 1 = 1.45.
    assert result["ftf_rho_mean"] == pytest.approx(1.0)
    assert result["ftf_rho_max"] == pytest.approx(1.5)
    assert result["ftf_rho_p95"] == pytest.approx(1.45)
    assert tenants["a"]["rho_mean"] == pytest.approx(0.5)
    assert tenants["b"]["weight"] == 3.0


def test_perfect_fairness_gives_one() -> None:
    # 4 GPUs, equal weights, each tenant runs one 2-GPU job on [0, 100): each deserves 2 x 100.
    jobs = build_jobs(tenant=["a", "b"], num_gpus=[2.0, 2.0], end_s=[100.0, 100.0], duration_s=[100.0, 100.0],
                      gpu_seconds=[200.0, 200.0])  # fmt: skip
    result = fairness_metrics(jobs, 4)
    assert result["ltgf_tenant_min"] == result["ltgf_tenant_max"] == pytest.approx(1.0)
    assert result["jain_tenants"] == pytest.approx(1.0)
    assert result["ltgf_job_unfairness_max"] == pytest.approx(0.0)
    assert result["ftf_rho_max"] == pytest.approx(1.0)  # 100 / (100 x max(1, 2/2))


def test_a_tenants_unused_share_goes_to_the_others() -> None:
    # 4 GPUs, equal weights, on [0, 100): a demands 1 GPU (capped at 1), so b deserves the
    # other 3, not 2; both get what they deserve.
    jobs = build_jobs(tenant=["a", "b"], num_gpus=[1.0, 4.0], end_s=[100.0, 100.0], gpu_seconds=[100.0, 300.0])
    tenants = fairness_metrics(jobs, 4)["tenant_fairness"]
    assert tenants["a"]["deserved_gpu_h"] == pytest.approx(100 / 3600)
    assert tenants["b"]["deserved_gpu_h"] == pytest.approx(300 / 3600)
    assert tenants["b"]["ltgf_ratio"] == pytest.approx(1.0)


def test_job_share_inside_a_tenant_and_an_unfinished_job() -> None:
    # 2 GPUs, one tenant: j0 (1 GPU) runs [0, 100); j1 (2 GPUs) waits from 0 to the horizon 200.
    # [0, 100): tenant deserves 2, split over 2 jobs: j0 min(1, 1) = 1, j1 min(2, 1) = 1.
    # [100, 200): j1 alone, min(2, 2) = 2. Deserved j0 100 (ratio 1), j1 300 (received 0, ratio 0).
    jobs = build_jobs(num_gpus=[1.0, 2.0], end_s=[100.0, np.nan], finished=[True, False], gpu_seconds=[100.0, 0.0],
                      first_start_s=[0.0, np.nan], duration_s=[100.0, 100.0])  # fmt: skip
    result = fairness_metrics(jobs, 2, horizon_s=200.0)
    assert result["ltgf_job_unfairness_max"] == pytest.approx(1.0)
    assert result["tenant_fairness"]["t1"]["deserved_gpu_h"] == pytest.approx(400 / 3600)  # 2 x 200
    assert result["ftf_rho_mean"] == pytest.approx(1.0)  # finished j0 only: 100 / (100 x max(1, 1/2))


def test_jain_index_extremes() -> None:
    assert jain_index(np.array([1.0, 1.0, 1.0])) == pytest.approx(1.0)
    assert jain_index(np.array([3.0, 0.0, 0.0])) == pytest.approx(1 / 3)
    assert jain_index(np.array([])) is None


def test_weights_must_cover_every_tenant() -> None:
    with pytest.raises(ConfigError, match="b"):
        fairness_metrics(_two_tenants(), 4, shares={"a": 1.0})


def test_summarize_adds_the_fairness_keys() -> None:
    ts = build_ts([0.0, 100.0], [4.0, 4.0], gpus_total=4.0)
    summary = summarize(_two_tenants(), ts, policy="p", shares={"a": 1.0, "b": 3.0})
    assert summary["jain_tenants"] == pytest.approx(324 / 424)
    assert summary["tenant_fairness"]["a"]["ltgf_ratio"] == pytest.approx(2.0)
    equal = summarize(_two_tenants(), ts, policy="p", extra={"cluster_gpus": 4}, fairness=True)
    # equal weights: [0, 100) a 2, b 2; [100, 200) b 4 -> deserved a 200, b 600
    assert equal["tenant_fairness"]["b"]["ltgf_ratio"] == pytest.approx(400 / 600)
    assert "jain_tenants" not in summarize(_two_tenants(), ts, policy="p")  # opt-in: they cost time and memory


def test_load_shares_reads_both_headers(tmp_path: Path) -> None:
    astraea = tmp_path / "share.csv"
    astraea.write_text("name,share\nvc1,2690\nvc2,36\n", encoding="utf-8")
    assert load_shares(astraea) == {"vc1": 2690.0, "vc2": 36.0}
    ours = tmp_path / "weights.csv"
    ours.write_text("tenant,weight\na,0.25\n", encoding="utf-8")
    assert load_shares(ours) == {"a": 0.25}


@pytest.mark.parametrize("weight", ["-1", "0", "x", "", "nan"])
def test_load_shares_rejects_a_bad_weight(tmp_path: Path, weight: str) -> None:
    path = tmp_path / "share.csv"
    path.write_text(f"name,share\nvc1,3\nvc2,{weight}\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_shares(path)
    assert (caught.value.file, caught.value.row, caught.value.field) == (str(path), 2, "share")


def test_load_shares_names_a_missing_column_or_file(tmp_path: Path) -> None:
    path = tmp_path / "share.csv"
    path.write_text("tenant,quota\na,3\n", encoding="utf-8")
    with pytest.raises(InputError, match="weight or share") as caught:
        load_shares(path)
    assert caught.value.field == "weight"
    with pytest.raises(InputError, match="file not found"):
        load_shares(tmp_path / "absent.csv")


def test_load_shares_rejects_a_repeated_tenant(tmp_path: Path) -> None:
    path = tmp_path / "share.csv"
    path.write_text("tenant,weight\na,1\na,2\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_shares(path)
    assert (caught.value.row, caught.value.field) == (2, "tenant")


def test_astraea_production_shares_load(shared_data: Path) -> None:
    shares = load_shares(shared_data / "astraea" / "share-production.csv")
    assert len(shares) == 15
    assert shares["6214e9"] == 2690.0 and shares["795a4c"] == 36.0
