"""A live Slurm as schedlab sees it: the pending jobs of ``squeue`` as a workload and the
nodes of ``sinfo`` as a cluster, so that the simulator's policies can rank a real queue."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from schedlab.cluster.spec import ClusterSpec, NodeSpec, TenantSpec, gpu_type
from schedlab.errors import ConfigError
from schedlab.slurm.client import NodeInfo, QueueJob
from schedlab.workload.schema import Workload, canonical_frame

UNKNOWN_LIMIT_S = 3600.0  # the planning duration of a job without a time limit


def live_cluster(nodes: Sequence[NodeInfo]) -> ClusterSpec:
    """The GPU nodes as a cluster: one pool per partition when the partitions do not overlap
    (a node in several partitions joins the first), else one shared pool."""
    gpu_nodes = [n for n in nodes if n.gpus > 0]
    if not gpu_nodes:
        raise ConfigError("sinfo shows no node with GPUs (Gres=gpu:...)")
    parts = sorted({p for n in gpu_nodes for p in n.partitions})
    partitioned = len(parts) > 1 and all(len(n.partitions) == 1 for n in gpu_nodes)
    specs = tuple(
        NodeSpec(n.name, n.gpu_type or "gpu", n.gpus, pool=n.partitions[0] if partitioned else "")
        for n in gpu_nodes
    )
    types = {s.gpu_type: gpu_type(s.gpu_type) for s in specs}
    tenants = {p: TenantSpec(p) for p in parts} if partitioned else {}
    return ClusterSpec("slurm-live", types, specs, tenants, partitioned=partitioned)


def pending_workload(jobs: Sequence[QueueJob], cluster: ClusterSpec, now: float) -> Workload:
    """Pending jobs (oldest first) as a workload that arrives all at once at ``now``: the
    policy ranks them as a queue. The tenant is the partition on a partitioned cluster, else
    the account. A job's duration is its time limit (what its user said), or an hour."""
    waiting = sorted((j for j in jobs if j.state == "PENDING" and j.gpus > 0), key=lambda j: (j.submit, j.job_id))
    per_node = max(n.num_gpus for n in cluster.nodes)
    rows = []
    for j in waiting:
        limit = 60.0 * j.time_limit_min if j.time_limit_min else math.nan
        tenant = j.partition if cluster.partitioned else (j.account or j.partition or "default")
        gpus = float(j.gpus)
        rows.append({
            "job_id": str(j.job_id), "submit_s": 0.0, "user": j.user, "tenant": tenant, "name": j.name,
            "num_gpus": gpus, "gpus_per_worker": gpus / j.nodes if j.nodes > 1 and gpus > per_node else np.nan,
            "duration_s": limit if limit == limit else UNKNOWN_LIMIT_S, "time_limit_s": limit,
            "queue_s": max(0.0, now - j.submit),
        })  # fmt: skip
    frame = pd.DataFrame(rows, columns=["job_id", "submit_s", "user", "tenant", "name", "num_gpus",
                                        "gpus_per_worker", "duration_s", "time_limit_s", "queue_s"])  # fmt: skip
    return Workload(canonical_frame(frame, source="squeue"), source="squeue", origin=pd.Timestamp(now, unit="s"))
