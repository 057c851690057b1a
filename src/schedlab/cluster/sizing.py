"""VC layouts sized to a workload: the ``helios-vcs[@LOAD]`` cluster.

Helios §4.2 evaluates QSSF on Philly with one assumption about the cluster: "the VC
configurations are static during our evaluation period ... and the size of each VC is set
corresponding to its workloads". The paper gives no formula; this module's rule is:

    demand_v = sum over the VC's jobs of num_gpus * duration_s / span
    nodes_v  = max(ceil(demand_v / (LOAD * G)), ceil(max num_gpus of the VC's jobs / G))

where ``span`` is the workload's arrival window (last submit minus first submit), ``G`` the GPUs
per node (8) and LOAD the offered load each VC is sized for. So every VC runs at about the same
offered load LOAD (less where the second term, the VC's largest job, wins), and every job fits
its VC. Default LOAD 0.75: the Philly cluster's mean share of active nodes over the Helios
evaluation window, 1 Oct - 30 Nov 2017 (320.5 of 424.3 nodes, ``helios-artifact/
philly_node_sequence.csv``, the Philly series of the same paper's §4.3).
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.cluster.presets import partitioned
from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.workload.schema import Workload

KIND = "helios-vcs"
DEFAULT_LOAD = 0.75
GPUS_PER_NODE = 8


def is_sized(spec: str) -> bool:
    """Whether a cluster option names a workload-sized layout (``helios-vcs`` or ``helios-vcs@LOAD``)."""
    return spec == KIND or spec.startswith(KIND + "@")


def parse_load(spec: str) -> float:
    """The LOAD of ``helios-vcs[@LOAD]`` (default :data:`DEFAULT_LOAD`)."""
    _, at, text = spec.partition("@")
    if not at:
        return DEFAULT_LOAD
    try:
        load = float(text)
    except ValueError:
        raise ConfigError(f"cluster '{spec}': LOAD must be a number, e.g. {KIND}@0.75") from None
    if not 0.0 < load <= 1.0:
        raise ConfigError(f"cluster '{spec}': LOAD must be in (0, 1], got {text}")
    return load


def vc_nodes(workload: Workload, load: float = DEFAULT_LOAD, gpus_per_node: int = GPUS_PER_NODE) -> dict[str, int]:
    """Nodes per VC by the rule of the module docstring, VCs in order of first appearance."""
    jobs = workload.jobs
    if len(jobs) == 0:
        raise ConfigError(f"{KIND}: the workload has no jobs to size VCs by")
    tenants = jobs["tenant"].astype(str)
    if (tenants == "").any():
        raise ConfigError(f"{KIND}: {int((tenants == '').sum()):,} jobs have no tenant (VC); every job needs one")
    submit = jobs["submit_s"].to_numpy(dtype=float)
    span = float(submit.max() - submit.min())
    if span <= 0:
        raise ConfigError(f"{KIND}: all jobs arrive at one instant, so there is no demand rate to size VCs by")
    gpus = jobs["num_gpus"].to_numpy(dtype=float)
    frame = jobs.assign(_vc=tenants, _work=gpus * jobs["duration_s"].to_numpy(dtype=float), _gpus=gpus)
    per_vc = frame.groupby("_vc", sort=False).agg(work=("_work", "sum"), largest=("_gpus", "max"))
    nodes: dict[str, int] = {}
    for vc, row in per_vc.iterrows():
        by_demand = math.ceil(row["work"] / span / (load * gpus_per_node))
        by_largest = math.ceil(row["largest"] / gpus_per_node)
        nodes[str(vc)] = int(max(by_demand, by_largest, 1))
    return nodes


def sized_cluster(spec: str, workload: Workload) -> ClusterSpec:
    """The ``helios-vcs[@LOAD]`` cluster for ``workload`` (the jobs that will be simulated)."""
    load = parse_load(spec)
    nodes = vc_nodes(workload, load)
    return partitioned(nodes, name=f"{KIND}@{load:g}")


def offered_loads(workload: Workload, cluster: ClusterSpec) -> dict[str, float]:
    """Each VC's offered load on ``cluster``: its GPU time / (its GPUs x the arrival window); on a
    shared pool, all the GPU time over the pool's GPUs."""
    jobs = workload.jobs
    submit = jobs["submit_s"].to_numpy(dtype=float)
    span = float(submit.max() - submit.min()) if len(jobs) else 0.0
    work = (jobs["num_gpus"] * jobs["duration_s"]).groupby(jobs["tenant"].astype(str)).sum()
    pools = cluster.gpus_by_pool()
    if not cluster.partitioned:  # one shared pool serves every tenant
        work = {pool: float(work.sum()) for pool in pools}
    return {vc: float(work.get(vc, 0.0)) / (g * span) if span > 0 else float(np.nan) for vc, g in pools.items()}
