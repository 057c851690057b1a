"""The ``pollux-workload`` format: Pollux's simulator workloads with durations from its traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.errors import InputError
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.workload.loaders import load_trace

HEADER = "name,time,application,num_replicas,batch_size\n"
VALIDATION = "progress,iteration,metric,grad_sqr,grad_var\n"


def write_traces(folder: Path) -> Path:
    """A toy application: 100 iterations at batch 8, 50 at 16; step times on 1 and 2 GPUs."""
    app = folder / "traces" / "toy"
    app.mkdir(parents=True)
    (app / "validation-8.csv").write_text(VALIDATION + "50,50,1,1,1\n100,100,1,1,1\n")
    (app / "validation-16.csv").write_text(VALIDATION + "50,25,1,1,1\n100,50,1,1,1\n")
    (app / "placements.csv").write_text("placement,local_bsz,step_time,sync_time\n"
                                        "1,4,0.1,0.0\n1,8,0.2,0.0\n2,4,0.12,0.02\n2,8,0.22,0.02\n")  # fmt: skip
    (app / "scalability.csv").write_text("num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,6,4,1.0,0.5\n")
    (folder / "workloads").mkdir()
    return folder / "workloads" / "workload-1.csv"


def test_durations_are_iterations_times_step_time(tmp_path: Path) -> None:
    path = write_traces(tmp_path)
    path.write_text(HEADER + "a,10,toy,1,8\nb,20,toy,2,16\nc,30,toy,2,12\nd,40,toy,1,16\n")
    jobs = load_trace(path, "pollux-workload").jobs.set_index("job_id")
    # a: 100 iterations x 0.2 s; b: 50 x 0.22 s on placement "2"; c: interpolated, 75 x 0.17 s;
    # d: local batch 16 > the largest profiled 8, so one accumulation step: 50 x (0.2 + 0.2)
    assert jobs["duration_s"].to_dict() == pytest.approx({"a": 20.0, "b": 11.0, "c": 12.75, "d": 20.0})
    assert jobs["submit_s"].tolist() == [0.0, 10.0, 20.0, 30.0]
    assert jobs["num_gpus"].tolist() == [1, 2, 2, 1]
    assert set(jobs["model"]) == {"toy"}


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("e,soon,toy,1,8", "time", "soon"),
        ("e,50,toy,1.5,8", "num_replicas", "whole number"),
        ("e,50,toy,1,64", "batch_size", "outside the validated 8-16"),
        ("e,50,gpt,1,8", "application", "no traces for application 'gpt'"),
    ],
)
def test_a_bad_row_names_the_row_and_the_field(tmp_path: Path, row: str, field: str, words: str) -> None:
    path = write_traces(tmp_path)
    path.write_text(HEADER + "a,10,toy,1,8\n" + row + "\n")
    with pytest.raises(InputError) as err:
        load_trace(path, "pollux-workload")
    assert (err.value.row, err.value.field) == (2, field)
    assert words in str(err.value) and str(path) in str(err.value)


def test_missing_traces_folder_is_named(tmp_path: Path) -> None:
    path = tmp_path / "workload-1.csv"
    path.write_text(HEADER + "a,10,toy,1,8\n")
    with pytest.raises(InputError, match="traces folder not found"):
        load_trace(path, "pollux-workload")
    write_traces(tmp_path / "elsewhere")
    assert len(load_trace(path, "pollux-workload", traces=str(tmp_path / "elsewhere" / "traces"))) == 1


def _pollux_1_5(shared_data: Path, k: int) -> Path:
    return shared_data / "pollux" / "simulator" / "workloads-1.5" / f"workload-{k}.csv"


def test_the_shared_workloads_have_the_mix_of_the_issue(shared_data: Path) -> None:
    """240 jobs each; over the eight, 6.7 GPUs per job on average and 28 % above 8 GPUs."""
    loaded = [load_trace(_pollux_1_5(shared_data, k), "pollux-workload").jobs for k in range(1, 9)]
    assert [len(j) for j in loaded] == [240] * 8
    gpus = np.concatenate([j["num_gpus"].to_numpy() for j in loaded])
    assert gpus.mean() == pytest.approx(6.7, abs=0.05)
    assert (gpus > 8).mean() == pytest.approx(0.28, abs=0.005)
    window = max(j["submit_s"].max() for j in loaded)
    assert 7.5 * 3600 < window <= 8 * 3600
    durations = np.concatenate([j["duration_s"].to_numpy() for j in loaded])
    assert durations.min() > 0 and durations.max() < 12 * 3600  # Pollux's configurations stay under 12 h


def test_castor_beats_fifo_on_a_shared_workload(shared_data: Path) -> None:
    path = _pollux_1_5(shared_data, 1)
    workload = load_trace(path, "pollux-workload")
    cluster = load_cluster("uniform:16x8")
    jct = {}
    for policy in ("castor", "fifo"):
        spec = RunSpec(WorkloadSpec(trace=str(path), fmt="pollux-workload"), "uniform:16x8", policy, seed=0)
        summary = simulate_run(spec, None, workload=workload, cluster=cluster)
        jct[policy] = summary["jct_mean_s"]
        assert summary["finished"] == 240
    assert jct["castor"] < 0.5 * jct["fifo"]  # measured: 0.62 h against 2.54 h
