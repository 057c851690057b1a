"""Lucid on one or two GPUs: the affine-pair rules (sharing scores, time awareness, memory)
decide whether a newcomer packs onto a running job or waits; Prescient Adaptive Sharing turns
packing off; the sharing scores follow the artifact analyzer's rule."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from schedlab.cluster.presets import uniform
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.castor.interference import read_pairs
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.lucid.build import LucidParams, lucid_data
from schedlab.policies.lucid.lucid import Lucid
from schedlab.policies.lucid.scores import analyzer_scores, lookup, score_of_speed
from schedlab.policies.registry import POLICIES
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.iteration import CATALOGUE, assign, memory_mib
from schedlab.workload.schema import Workload, canonical_frame

FREE = SimConfig(checkpoint_s=0.0, restore_s=0.0)
HOST, NEW = "ResNet18", "VGG"
XI = 1.25


class ConstantXi:
    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float:
        return XI


def scores(host: int, new: int) -> dict[tuple[str, int], int]:
    out = {(HOST, b): host for b in CATALOGUE[HOST].batches}
    out.update({(NEW, b): new for b in CATALOGUE[NEW].batches})
    return out


def run(host_score: int, new_score: int, *, new_s: float = 100.0, gpus: int = 1, nodes: int = 1,
        mem_mib: float = 1e9, pas: float = 0.0, rows=None) -> tuple[pd.DataFrame, Lucid]:  # fmt: skip
    rows = rows or [("host", 0.0, gpus, 1000.0, HOST), ("new", 10.0, gpus, new_s, NEW)]
    frame = pd.DataFrame(rows, columns=["job_id", "submit_s", "num_gpus", "duration_s", "model"])
    workload = Workload(canonical_frame(frame, source="lucid-test"), "lucid-test")
    policy = Lucid(Consolidate(), truth=ConstantXi(), scores=scores(host_score, new_score), gpu_mem_mib=mem_mib,
                   pas_threshold=pas)  # fmt: skip
    result = Simulation(workload, uniform(nodes, gpus), policy, config=FREE).run()
    assert result.jobs["finished"].all()
    return result.jobs.set_index("job_id"), policy


@pytest.mark.parametrize(("host", "new", "packs"), [(2, 0, True), (1, 1, True), (0, 2, True), (2, 1, False),
                                                    (1, 2, False), (2, 2, False)])  # fmt: skip
def test_only_jobs_whose_scores_sum_to_two_or_less_share(host: int, new: int, packs: bool) -> None:
    jobs, policy = run(host, new)
    if packs:
        assert jobs.loc["new", "first_start_s"] == pytest.approx(10.0)
        # the newcomer runs 100 s of work at 1/1.25 beside the host
        assert jobs.loc["new", "end_s"] == pytest.approx(10.0 + 100 * XI)
        assert jobs.loc["host", "colocated_s"] == pytest.approx(100 * XI)
        assert [(p.job, p.host, p.scores) for p in policy.packings] == [("new", "host", (new, host))]
    else:  # incompatible: waits for the host's GPU
        assert jobs.loc["new", "first_start_s"] == pytest.approx(1000.0)
        assert jobs["colocated_s"].eq(0).all()
        assert policy.packings == []


def test_a_newcomer_longer_than_twice_the_partner_is_not_packed() -> None:
    # GPU time 2000 <= 2 x 1000: packs; 2001 > 2 x 1000: waits (time-aware rule)
    assert run(0, 0, new_s=2000.0)[0].loc["new", "first_start_s"] == pytest.approx(10.0)
    assert run(0, 0, new_s=2001.0)[0].loc["new", "first_start_s"] == pytest.approx(1000.0)


def test_a_pair_that_does_not_fit_in_memory_is_not_packed() -> None:
    host, new = assign("host", 0, HOST)[1], assign("new", 0, NEW)[1]
    need = memory_mib(CATALOGUE[HOST], host) + memory_mib(CATALOGUE[NEW], new)
    assert run(0, 0, mem_mib=need)[0].loc["new", "first_start_s"] == pytest.approx(10.0)
    assert run(0, 0, mem_mib=need - 1)[0].loc["new", "first_start_s"] == pytest.approx(1000.0)


def test_packing_comes_before_free_gpus_and_needs_the_same_gpu_count() -> None:
    # two 1-GPU nodes: the newcomer packs onto the host although a GPU is free (the artifact's order)
    jobs, _ = run(0, 0, nodes=2)
    assert jobs.loc["new", "colocated_s"] > 0
    # a 2-GPU newcomer next to a 1-GPU host takes free GPUs instead
    rows = [("host", 0.0, 1, 1000.0, HOST), ("new", 10.0, 2, 100.0, NEW)]
    jobs, policy = run(0, 0, gpus=4, rows=rows)
    assert jobs.loc["new", "first_start_s"] == pytest.approx(10.0) and jobs["colocated_s"].eq(0).all()
    assert policy.packings == []


def test_queue_order_is_estimated_gpu_time() -> None:
    # one GPU busy until 1000; at 1000 the 1-GPU 300 s job (GPU time 300) goes before the earlier
    # 1-GPU 500 s job; no packing (scores 2 + 2)
    rows = [("host", 0.0, 1, 1000.0, HOST), ("long", 10.0, 1, 500.0, HOST), ("short", 20.0, 1, 300.0, HOST)]
    jobs, _ = run(2, 2, rows=rows)
    assert jobs.loc["short", "first_start_s"] == pytest.approx(1000.0)
    assert jobs.loc["long", "first_start_s"] == pytest.approx(1300.0)


def test_prescient_adaptive_sharing_turns_packing_off_when_few_jobs_arrive() -> None:
    # two submissions in the 3000 s window forecast 0.4 per 10 min: above 0.3 packs, not above 0.5
    assert run(0, 0, pas=0.3)[0].loc["new", "first_start_s"] == pytest.approx(10.0)
    jobs, policy = run(0, 0, pas=0.5)
    assert jobs.loc["new", "first_start_s"] == pytest.approx(1000.0)
    assert policy.packing_rounds == 0
    # threshold 0 packs always, also with no submission in the window
    always = Lucid(Consolidate(), truth=ConstantXi(), scores={}, pas_threshold=0.0)
    assert always.packing_on(1e9) and not Lucid(Consolidate(), truth=ConstantXi(), scores={}).packing_on(1e9)


def test_packing_off_blocks_at_the_queue_head() -> None:
    # packing off: the 2-GPU head (GPU time 100) waits for the busy GPU; the 1-GPU job behind it
    # (GPU time 120) waits too although a GPU is free
    rows = [("host", 0.0, 1, 1000.0, HOST), ("big", 10.0, 2, 50.0, NEW), ("small", 20.0, 1, 120.0, NEW)]
    jobs, _ = run(0, 0, gpus=2, pas=100.0, rows=rows)
    assert jobs.loc["small", "first_start_s"] == pytest.approx(1050.0)


def test_analyzer_rule_thresholds() -> None:
    assert [score_of_speed(s) for s in (0.849, 0.85, 0.949, 0.95, 1.02)] == [2, 1, 1, 0, 0]
    pairs = pd.DataFrame({"model1": ["VGG", "VGG"], "batchsize1": [32, 32], "amp1": [0, 0], "speed1": [0.9, 0.7],
                          "model2": ["NeuMF", "VGG"], "batchsize2": [64, 32], "amp2": [0, 1], "speed2": [1.0, 0.8]})
    # VGG/32 at amp 0: speeds 0.9 and 0.7 -> mean 0.8 -> 2; the amp = 1 side is not VGG/32's; NeuMF/64: 1.0 -> 0
    assert analyzer_scores(pairs) == {("VGG", 32): 2, ("NeuMF", 64): 0}
    assert lookup({("VGG", 32): 2, ("VGG", 128): 0}, "VGG", 100) == 0  # nearest profiled batch
    assert lookup({}, "VGG", 32) == 2  # an unprofiled model packs only with Tiny jobs


def test_lucid_data_reads_the_artifact(shared_data: Path) -> None:
    folder = shared_data / "lucid"
    _, profiled = lucid_data(LucidParams(lucid=str(folder)))
    # single_data.csv's labels (fp32 rows)
    assert (profiled[("ResNet18", 32)], profiled[("ResNet18", 64)], profiled[("NeuMF", 128)]) == (0, 2, 0)
    _, analyzed = lucid_data(LucidParams(lucid=str(folder), scores="analyzer"))
    assert analyzed == analyzer_scores(read_pairs(folder / "data" / "colocate_info.csv"))
    with pytest.raises(ValueError, match="lucid=FOLDER"):
        LucidParams(scores="profiled")


def test_registered_lucid_runs_on_the_section9_cluster(shared_data: Path) -> None:
    spec = RunSpec(WorkloadSpec(synthetic="venus", jobs=200, seed=3), "uniform:16x8", "lucid", seed=3,
                   params=POLICIES["lucid"].parse({"lucid": str(shared_data / "lucid"), "pas_threshold": "0"}))  # fmt: skip
    s = simulate_run(spec, None)
    assert s["finished"] == 200
    block = s["lucid"]
    assert block["packings"] > 0
    assert set(block["packings_by_scores"]) <= {"0+0", "0+1", "0+2", "1+1"}
