"""helios-vcs[@LOAD]: VCs sized to the workload's per-VC demand (Helios §4.2's Philly assumption)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.sizing import offered_loads, parse_load, sized_cluster, vc_nodes
from schedlab.errors import ConfigError
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from tests.simkit import job, workload


def _two_vcs():
    # Arrival window 0..100 s. VC a: 4 GPUs x 100 s + 4 x 100 = 800 GPU-s -> 8 GPUs busy on average.
    # VC b: one 20-GPU job of 10 s = 200 GPU-s -> 2 GPUs busy, but its largest job needs 3 nodes.
    return workload([
        job("a1", 0.0, 4, 100.0, tenant="a"),
        job("a2", 50.0, 4, 100.0, tenant="a"),
        job("b1", 100.0, 20, 10.0, tenant="b"),
    ])  # fmt: skip


def test_nodes_follow_demand_over_load_and_the_largest_job() -> None:
    w = _two_vcs()
    # a: ceil(8 / (0.5 * 8)) = 2 nodes; b: max(ceil(2 / 4), ceil(20 / 8)) = 3 nodes.
    assert vc_nodes(w, 0.5) == {"a": 2, "b": 3}
    # at load 0.25, a needs ceil(8 / 2) = 4 nodes; b still 3 (its largest job)
    assert vc_nodes(w, 0.25) == {"a": 4, "b": 3}
    cluster = sized_cluster("helios-vcs@0.5", w)
    assert cluster.partitioned and cluster.gpus_by_pool() == {"a": 16, "b": 24}
    assert offered_loads(w, cluster) == pytest.approx({"a": 0.5, "b": 200 / 100 / 24})


def test_load_option_is_checked() -> None:
    assert parse_load("helios-vcs") == 0.75
    assert parse_load("helios-vcs@0.6") == 0.6
    for bad in ("helios-vcs@x", "helios-vcs@0", "helios-vcs@1.5"):
        with pytest.raises(ConfigError, match="LOAD"):
            parse_load(bad)
    with pytest.raises(ConfigError, match="sized to the jobs of a run"):
        load_cluster("helios-vcs@0.7")


def test_jobs_without_a_vc_or_a_rate_are_refused() -> None:
    with pytest.raises(ConfigError, match="no tenant"):
        vc_nodes(workload([job("x", 0.0, 1, 10.0, tenant=""), job("y", 5.0, 1, 10.0, tenant="a")]))
    with pytest.raises(ConfigError, match="one instant"):
        vc_nodes(workload([job("x", 0.0, 1, 10.0, tenant="a"), job("y", 0.0, 1, 10.0, tenant="a")]))


def test_chronus_trace_on_sized_vcs_queues_less_than_on_the_preset(shared_data: Path, tmp_path: Path) -> None:
    """The Chronus MIX2 jobs are spread evenly over the 11 Philly VCs, whose preset sizes differ
    8x: the 8-node VCs are overloaded. Sized to their demand every VC is at load 0.75 and the
    trace's 14 days drain in far less time."""
    wspec = WorkloadSpec(trace=str(shared_data / "chronus" / "trace_job_Philly_MIX2.csv"), fmt="philly",
                         options={"time_unit": "min"}, tenant_prefix="vc_", window_s=(0.0, 3 * 86400.0))  # fmt: skip
    preset = simulate_run(RunSpec(wspec, "philly", "fifo"), None)
    sized = simulate_run(RunSpec(wspec, "helios-vcs", "fifo"), None)
    assert sized["cluster"] == "helios-vcs@0.75" and sized["jobs"] == preset["jobs"]
    assert sized["queue_mean_s"] < preset["queue_mean_s"] / 2
    assert sized["makespan_s"] < preset["makespan_s"]
