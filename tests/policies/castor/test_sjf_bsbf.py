"""SJF-BSBF against SJF-FFS on one GPU: the sharing-benefit check decides whether a newcomer
waits or shares, the pair's xi sets the rates, and memory forces gradient accumulation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from schedlab.cluster.presets import uniform
from schedlab.errors import InputError
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.castor.build import CastorParams, xi_sources
from schedlab.policies.castor.sjf_bsbf import SjfBsbf
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.registry import POLICIES
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.iteration import CATALOGUE, assign, memory_mib
from schedlab.workload.schema import Workload, canonical_frame

FREE = SimConfig(checkpoint_s=0.0, restore_s=0.0)
MODEL = "ResNet18"


class ConstantXi:
    def __init__(self, value: float) -> None:
        self.value = value

    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float:
        return self.value


def run(xi: float, sharing: str, *, mem_mib: float = 1e9, rows=None) -> tuple[pd.DataFrame, SjfBsbf]:
    rows = rows or [("long", 0.0, 1, 1000.0), ("short", 10.0, 1, 100.0)]
    frame = pd.DataFrame(rows, columns=["job_id", "submit_s", "num_gpus", "duration_s"])
    frame["model"] = MODEL
    workload = Workload(canonical_frame(frame, source="castor-test"), "castor-test")
    policy = SjfBsbf(Consolidate(), truth=ConstantXi(xi), decide=ConstantXi(xi), sharing=sharing, gpu_mem_mib=mem_mib)
    result = Simulation(workload, uniform(1, 1), policy, config=FREE).run()
    assert result.jobs["finished"].all()
    return result.jobs.set_index("job_id"), policy


def test_harmful_sharing_is_refused_by_castor_but_not_by_sjf_ffs() -> None:
    # At t=10 (seconds of work): A has 990 left, B 100. xi = 12 for both is case 1 of Theorem 1,
    # Eq. 19: 1200 + 990/2 - 1200/24 = 1645 > sequential 990 + 100/2 = 1040: B waits.
    castor, _ = run(12.0, "bsbf")
    ffs, _ = run(12.0, "ffs")
    assert castor.loc["short", "first_start_s"] == pytest.approx(1000.0)  # waited for the GPU
    assert castor.loc["short", "colocated_s"] == 0.0
    assert ffs.loc["short", "first_start_s"] == pytest.approx(10.0)  # first-fit shares at once
    assert ffs.loc["short", "end_s"] == pytest.approx(10.0 + 100 * 12.0)
    assert castor["end_s"].mean() < ffs["end_s"].mean()
    (c,) = run(12.0, "ffs")[1].colocations
    assert not c.beneficial  # counted in the report's harmful_colocations


def test_beneficial_sharing_starts_at_once_and_runs_at_one_over_xi() -> None:
    jobs, policy = run(1.25, "bsbf")
    assert jobs.loc["short", "first_start_s"] == pytest.approx(10.0)
    assert jobs.loc["short", "end_s"] == pytest.approx(10.0 + 100 * 1.25)
    assert jobs.loc["short", "colocated_s"] == pytest.approx(125.0)
    assert jobs.loc["long", "colocated_s"] == pytest.approx(125.0)
    # long: 10 s alone, 125 s at 1/1.25 (100 s of work), then 890 s alone
    assert jobs.loc["long", "end_s"] == pytest.approx(10.0 + 125.0 + 890.0)
    (c,) = policy.colocations
    assert (c.job, c.host, c.steps) == ("short", "long", 1)
    # Eq. 24: waiting = 990 + 100 = 1090 s from t=10, sharing = 125 s
    assert c.sharing_benefit == pytest.approx(1090 / 125)


def test_memory_forces_gradient_accumulation() -> None:
    p = CATALOGUE[MODEL]
    batch_long = assign("long", 0, MODEL)[1]
    batch_short = assign("short", 0, MODEL)[1]
    # room for the host plus the newcomer at half its batch, not at its full batch
    room = memory_mib(p, batch_long) + memory_mib(p, batch_short / 2) + 0.5
    assert room < memory_mib(p, batch_long) + memory_mib(p, batch_short)
    jobs, policy = run(1.25, "bsbf", mem_mib=room)
    (c,) = policy.colocations
    assert (c.steps, c.batch) == (2, batch_short / 2)
    # Eq. 3 on one GPU: 2 steps cost 2*alpha + beta*B instead of alpha + beta*B
    slowdown = (2 * p.alpha_comp + p.beta_comp * batch_short) / (p.alpha_comp + p.beta_comp * batch_short)
    assert jobs.loc["short", "end_s"] == pytest.approx(10.0 + 100 * 1.25 * slowdown)
    # the pair never fits below: nobody shares, the newcomer waits
    jobs, policy = run(1.25, "bsbf", mem_mib=memory_mib(p, batch_long) + 1.0)
    assert not policy.colocations and jobs.loc["short", "first_start_s"] == pytest.approx(1000.0)


def test_shortest_job_first_and_at_most_two_jobs_per_gpu() -> None:
    rows = [("long", 0.0, 1, 1000.0), ("mid", 10.0, 1, 300.0), ("short", 10.0, 1, 100.0)]
    jobs, policy = run(1.25, "bsbf", rows=rows)
    assert [c.job for c in policy.colocations][0] == "short"  # ranked before "mid"
    assert jobs.loc["mid", "first_start_s"] >= jobs.loc["short", "end_s"] - 1e-9  # a third job never joins


def test_registered_castor_runs_with_each_xi_source(shared_data: Path) -> None:
    lucid = str(shared_data / "lucid")
    w = WorkloadSpec(synthetic="simple", jobs=80, load=2.0, seed=1)
    for params in ({}, {"lucid": lucid}, {"lucid": lucid, "predictor": "tree"}):
        s = simulate_run(RunSpec(w, "uniform:2x8", "castor", seed=1, params=POLICIES["castor"].parse(params)), None)
        assert s["finished"] == 80 and s["colocated_jobs"] > 0, params
        assert s["castor"]["colocations"] * 2 >= s["colocated_jobs"] and s["castor"]["harmful_colocations"] == 0


def test_a_missing_lucid_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="colocate_info.csv: cannot read"):
        xi_sources(CastorParams(lucid=str(tmp_path)))
