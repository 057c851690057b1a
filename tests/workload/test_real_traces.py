"""Loaders on the public traces in ../shared/data, checked against figures of their PROVENANCE.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import InputError
from schedlab.workload.inspect import describe
from schedlab.workload.loaders import load_trace

pytestmark = pytest.mark.shared_data


def test_chronus_mix2(shared_data: Path) -> None:
    w = load_trace(shared_data / "chronus" / "trace_job_Philly_MIX2.csv", "philly")
    assert w.skipped == {"cpu_job": 194}  # ~0.6 % of 30,940 rows have num_gpu 0
    assert len(w) == 30_940 - 194
    counts = w.jobs["num_gpus"].value_counts()
    for gpus, share in {1: 0.913, 4: 0.040, 8: 0.030, 2: 0.007, 16: 0.003}.items():
        assert counts[gpus] / 30_940 == pytest.approx(share, abs=0.0006)
    assert w.jobs["submit_s"].iloc[0] == 0.0 and w.jobs["submit_s"].is_monotonic_increasing
    assert w.jobs["duration_s"].min() == 20 and w.jobs["duration_s"].max() == 4_317
    assert w.jobs["duration_s"].median() == 60
    assert set(w.jobs["model"]) == {"alexnet", "vgg16", "resnet101", "mobilenet_v2", "inception_v3"}
    assert w.jobs["deadline_s"].notna().sum() > 0
    assert (w.jobs["deadline_s"].dropna() >= w.jobs["submit_s"][w.jobs["deadline_s"].notna()]).all()


def test_pollux_philly(shared_data: Path) -> None:
    w = load_trace(shared_data / "pollux" / "simulator" / "traces" / "philly.csv", "philly")
    summary = describe(w)
    assert summary["jobs"] == 82_247 and summary["skipped"] == {}
    assert summary["tenants"] == 15
    assert w.origin.date() == pd.Timestamp("2017-09-04").date()
    last = w.origin + pd.Timedelta(seconds=float(w.jobs["submit_s"].max()))
    assert last.date() == pd.Timestamp("2017-12-22").date()
    mix = summary["gpu_mix"]
    for gpus, share in {1: 0.932, 2: 0.022, 4: 0.023, 8: 0.020}.items():
        assert mix[gpus] == pytest.approx(share, abs=0.0006)
    assert max(mix) == 128
    assert summary["duration_s"]["p50"] == 1_144
    assert summary["duration_s"]["p90"] == pytest.approx(11_265, abs=1)
    assert summary["duration_s"]["p99"] == pytest.approx(254_758, abs=1)


def test_elasticflow_clusters(shared_data: Path) -> None:
    files = sorted((shared_data / "elasticflow-itp" / "raw-traces").glob("cluster*.csv"))
    loaded = [load_trace(f, "elasticflow") for f in files]
    assert len(files) == 9 and all(w.skipped == {} for w in loaded)
    jobs = pd.concat([w.jobs for w in loaded])
    assert len(jobs) == 56_652
    shares = jobs["num_gpus"].value_counts(normalize=True)
    for gpus, share in {1: 0.844, 8: 0.107, 4: 0.023, 2: 0.011, 16: 0.007, 32: 0.006, 64: 0.001}.items():
        assert shares[gpus] == pytest.approx(share, abs=0.0006)
    assert np.median(jobs["duration_s"]) == 11_183
    cluster10 = loaded[[f.name for f in files].index("cluster10.csv")]
    assert len(cluster10) == 260


def test_openb_default(shared_data: Path) -> None:
    w = load_trace(shared_data / "alibaba-gpu-v2023" / "csv" / "openb_pod_list_default.csv", "openb")
    assert w.skipped == {"cpu_job": 1_088, "never_scheduled": 861}  # num_gpu 0: 13.4 % of 8,152
    assert len(w) == 8_152 - 1_088 - 861
    assert w.skipped["cpu_job"] / 8_152 == pytest.approx(0.134, abs=0.0006)
    gpus = w.jobs["num_gpus"]
    assert gpus.max() == 8 and gpus.min() > 0
    assert ((gpus < 1).sum()) > 0.3 * (gpus <= 1).sum()  # ~44 % of 1-GPU pods are fractional
    assert (w.jobs["gpus_per_worker"] == gpus).all()
    assert set(w.jobs["priority_class"]) <= {"ls", "be", "burstable", "guaranteed"}
    assert w.jobs["submit_s"].max() / 86_400 < 150  # creation times span 149 days


def test_openb_gpuspec_variant_and_untimed_variant(shared_data: Path) -> None:
    csv = shared_data / "alibaba-gpu-v2023" / "csv"
    w = load_trace(csv / "openb_pod_list_gpuspec33.csv", "openb")
    assert w.meta["multi_type_pods"] > 0
    assert {"T4", "G2", "P100", ""} <= set(w.jobs["gpu_type"])
    with pytest.raises(InputError) as info:  # the multigpu* variants carry no times
        load_trace(csv / "openb_pod_list_multigpu20.csv", "openb")
    assert info.value.field == "creation_time" and info.value.row is None
