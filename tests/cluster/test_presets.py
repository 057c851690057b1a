"""Cluster presets: built-in forms and the public inventory files they come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.cluster.presets import PRESETS, gfs_builtin, gfs_from_inventory, helios_from_gpu_numbers, load_cluster
from schedlab.cluster.state import ClusterState
from schedlab.errors import ConfigError, InputError


def test_every_preset_builds_and_has_consistent_totals() -> None:
    for name in PRESETS:
        spec = load_cluster(name)
        assert spec.total_gpus == sum(spec.gpus_by_type().values()) == sum(spec.gpus_by_pool().values())
    assert load_cluster("venus").total_gpus == 1064 and load_cluster("venus").partitioned
    assert load_cluster("philly").total_gpus == 2816
    assert load_cluster("uniform-800x8").total_gpus == 6400
    assert load_cluster("uniform:3x4:A100").gpus_by_type() == {"A100": 12}


def test_unknown_cluster_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match="Presets: uniform"):
        load_cluster("moon")
    with pytest.raises(ConfigError, match="uniform:NxG"):
        load_cluster("uniform:eight")


def test_gfs_builtin_matches_the_published_inventory_file(shared_data: Path) -> None:
    from_file = gfs_from_inventory(shared_data / "alibaba-spot-gpu-v2026" / "node_info_df.csv")
    builtin = gfs_builtin()
    assert len(from_file.nodes) == len(builtin.nodes) == 4278
    assert from_file.total_gpus == builtin.total_gpus == 10412
    assert from_file.gpus_by_type() == builtin.gpus_by_type()
    assert len(from_file.gpu_types) == 6


def test_helios_cluster_from_gpu_numbers(shared_data: Path) -> None:
    path = shared_data / "helios-data" / "Venus" / "cluster_gpu_number.csv"
    spec = helios_from_gpu_numbers(path, "2020-09-01")
    assert spec.partitioned and spec.total_gpus == 1064 and len(spec.tenants) == 16
    assert spec.gpus_by_pool() == load_cluster("venus").gpus_by_pool()
    assert helios_from_gpu_numbers(path).total_gpus == 1080  # last row, 2020-09-28
    earth = helios_from_gpu_numbers(shared_data / "helios-artifact" / "Earth_vcs" / "Earth_gpu_number.csv")
    assert earth.max_node_gpus == 8


def test_helios_gpu_numbers_errors_name_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "gpus.csv"
    path.write_text("date,vcA,vcB,total\n2020-09-01,16,12,28\n")
    with pytest.raises(InputError) as err:
        helios_from_gpu_numbers(path)
    assert "gpus.csv" in str(err.value) and err.value.row == 1 and err.value.field == "vcB"
    with pytest.raises(InputError, match="no row for date"):
        helios_from_gpu_numbers(path, "2021-01-01")


def test_state_buckets_index_nodes_by_free_gpus() -> None:
    state = ClusterState(load_cluster("uniform:4x8"))
    group = state.groups[0]
    assert list(group.buckets[8]) == [0, 1, 2, 3] and group.free_total == 32
    state.take_whole(2, 5)
    assert group.first_with(3) == 2  # best fit: the node with 3 free
    assert group.first_with(4) == 0
    assert group.free_total == 27 and state.busy_gpus == 5
    state.power_off(3)
    assert 3 not in group.buckets[8] and group.free_total == 19 and state.gpus_on == 24


@pytest.mark.parametrize("spec, message", [
    ("uniform:100000000x8", "N must be 1-100,000 nodes"),
    ("uniform:4x0", "G 1-64 GPUs per node"),
    ("uniform:4x8:H900", "unknown GPU type 'H900'"),
])  # fmt: skip
def test_a_uniform_cluster_that_means_nothing_is_refused_at_once(spec, message):
    with pytest.raises(ConfigError, match=message):
        load_cluster(spec)


def test_a_uniform_cluster_takes_a_catalogued_gpu_type_in_any_case():
    assert {n.gpu_type for n in load_cluster("uniform:2x8:a100").nodes} == {"a100"}  # Slurm's spelling, as in sacct
    assert load_cluster("uniform:2x4:K80").total_gpus == 8
