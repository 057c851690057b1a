"""The iteration-time model (Eq. 1-3), the measured xi table and the regression tree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import InputError
from schedlab.policies.castor.interference import MeasuredXi, UtilisationXi, pair_features, read_pairs
from schedlab.policies.castor.tree import RegressionTree
from schedlab.sim.iteration import CATALOGUE, assign, iteration_time, t_comm

HEADER = (",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,"
          "gpu_util,gmem_util,gmem\n")


def test_eq3_accumulation_and_overlap_by_hand() -> None:
    p = CATALOGUE["VGG"]
    comp = p.alpha_comp + p.beta_comp * 32  # Eq. 1 at sub-batch 64 / 2
    comm = 1e-3 + 2 * 7 / 8 * 4e6 * 14.7 / 10e9  # Eq. 2: ring all-reduce of 14.7 M fp32 gradients on 8 GPUs
    assert t_comm(p, 8) == pytest.approx(comm)
    assert iteration_time(p, 64, 2, 8) == pytest.approx(comp + (comp**2 + comm**2) ** 0.5)
    assert iteration_time(p, 64, 1, 1) == pytest.approx(p.alpha_comp + p.beta_comp * 64)  # no all-reduce alone


def test_assignment_is_reproducible_and_keeps_a_known_model() -> None:
    assert assign("job-7", 3) == assign("job-7", 3)
    assert assign("job-7", 3, "LSTM")[0] == "LSTM" and assign("job-7", 3, "LSTM")[1] in CATALOGUE["LSTM"].batches
    drawn = {assign(f"j{i}", 0)[0] for i in range(500)}
    assert drawn == set(CATALOGUE)


def test_measured_table_is_symmetric_averages_amp_and_takes_the_nearest_batch(tmp_path: Path) -> None:
    csv = tmp_path / "colocate_info.csv"
    csv.write_text(HEADER + "0,VGG,C,1,32,0,0.5,ResNet18,C,1,64,0,0.8,1,1,1\n"
                            "1,VGG,C,1,32,1,0.25,ResNet18,C,1,64,0,1.05,1,1,1\n")  # fmt: skip
    xi = MeasuredXi.from_csv(csv)
    assert xi.xi("VGG", 32, "ResNet18", 64) == pytest.approx((2 + 4) / 2)
    assert xi.xi("ResNet18", 64, "VGG", 32) == pytest.approx((1 / 0.8 + 1 / 1.05) / 2)  # mean, then clamped at 1
    assert xi.xi("VGG", 8, "ResNet18", 128) == xi.xi("VGG", 32, "ResNet18", 64)
    assert xi.xi("VGG", 32, "LSTM", 64) == UtilisationXi().xi("VGG", 32, "LSTM", 64)  # never measured


def test_bad_speed_names_file_row_and_field(tmp_path: Path) -> None:
    csv = tmp_path / "colocate_info.csv"
    csv.write_text(HEADER + "0,VGG,C,1,32,0,0.5,ResNet18,C,1,64,0,0.8,1,1,1\n"
                            "1,VGG,C,1,32,0,x,ResNet18,C,1,64,0,1,1,1,1\n")  # fmt: skip
    with pytest.raises(InputError, match=r"colocate_info.csv: row 2, field 'speed1'"):
        read_pairs(csv)


def test_tree_recovers_a_step_function() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, size=(400, 3))
    y = np.where(x[:, 1] > 0.6, 2.0, 1.0) + np.where(x[:, 0] > 0.3, 0.5, 0.0)
    tree = RegressionTree(max_depth=3, min_leaf=5).fit(x, y)
    test = rng.uniform(0, 1, size=(200, 3))
    truth = np.where(test[:, 1] > 0.6, 2.0, 1.0) + np.where(test[:, 0] > 0.3, 0.5, 0.0)
    assert np.mean(np.abs(tree.predict(test) - truth) > 0.1) < 0.05
    assert RegressionTree(max_depth=0).fit(x, y).predict(test[:1])[0] == pytest.approx(y.mean())


def test_pair_features_join_the_single_job_profiles(shared_data: Path) -> None:
    lucid = shared_data / "lucid"
    pairs = read_pairs(lucid / "data" / "colocate_info.csv")
    feats = pair_features(pairs, pd.read_csv(lucid / "analyzer" / "single_data.csv"))
    assert len(pairs) == 1388 and len(feats) == 1388
    assert feats[["xi1", "xi2"]].stack().between(0.5, 3).all()  # 1/speed; noise reaches below 1


def test_xi_max_stretches_the_run_and_the_decisions_to_the_papers_range() -> None:
    from schedlab.policies.castor.build import CastorParams, xi_sources
    from schedlab.policies.castor.interference import PAPER_XI_MAX, ScaledXi, UtilisationXi

    base = UtilisationXi()
    scaled = ScaledXi.to_range(base, base.largest, PAPER_XI_MAX)
    assert scaled.xi("ResNet18", 128, "MobileNetV3", 128) == pytest.approx(
        1 + 5 * (base.xi("ResNet18", 128, "MobileNetV3", 128) - 1))
    assert ScaledXi(base, 1.0).xi("VGG", 32, "DCGAN", 64) == base.xi("VGG", 32, "DCGAN", 64)
    truth, decide = xi_sources(CastorParams(xi_max=PAPER_XI_MAX))
    assert truth is decide and truth.k == pytest.approx(5.0)  # the utilisation model tops out at 2
    with pytest.raises(ValueError, match="xi_max"):
        CastorParams(xi_max=0.5)
