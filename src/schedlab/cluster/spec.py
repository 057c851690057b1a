"""Static description of a cluster: GPU types, nodes, tenants (virtual clusters / organisations)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from schedlab.errors import ConfigError


@dataclass(frozen=True, slots=True)
class GpuType:
    """A GPU model. ``speed`` is throughput relative to the reference GPU (1.0)."""

    name: str
    memory_gb: float
    speed: float = 1.0
    idle_power_w: float = 50.0
    busy_power_w: float = 300.0


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One server. ``pool`` is the tenant that owns it in a statically partitioned
    cluster (Helios VCs), or "" for the shared pool."""

    name: str
    gpu_type: str
    num_gpus: int
    rack: str = ""
    pool: str = ""
    num_cpus: int = 0
    idle_power_w: float = 0.0


@dataclass(frozen=True, slots=True)
class TenantSpec:
    """A tenant. ``quota_gpus`` caps its allocation in a shared pool (None = no cap);
    ``weight`` is its fair share."""

    name: str
    quota_gpus: float | None = None
    weight: float = 1.0


@dataclass(frozen=True)
class ClusterSpec:
    """An immutable cluster. ``partitioned`` means each tenant's jobs may only use the
    nodes whose ``pool`` is that tenant (Helios / Philly VCs); otherwise all jobs share
    every node with ``pool == ""`` and quotas are a policy's business."""

    name: str
    gpu_types: dict[str, GpuType]
    nodes: tuple[NodeSpec, ...]
    tenants: dict[str, TenantSpec] = field(default_factory=dict)
    partitioned: bool = False
    max_jobs_per_gpu: int = 1

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ConfigError(f"cluster '{self.name}' has no nodes")
        for node in self.nodes:
            if node.gpu_type not in self.gpu_types:
                raise ConfigError(f"cluster '{self.name}': node '{node.name}' has unknown GPU type '{node.gpu_type}'")
            if node.num_gpus <= 0:
                raise ConfigError(f"cluster '{self.name}': node '{node.name}' has no GPUs")
            if self.partitioned and node.pool not in self.tenants:
                raise ConfigError(f"cluster '{self.name}': node '{node.name}' belongs to unknown tenant '{node.pool}'")
        if self.max_jobs_per_gpu < 1:
            raise ConfigError("max_jobs_per_gpu must be at least 1")

    @property
    def total_gpus(self) -> int:
        return sum(n.num_gpus for n in self.nodes)

    @property
    def max_node_gpus(self) -> int:
        return max(n.num_gpus for n in self.nodes)

    def gpus_by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.gpu_type] = out.get(n.gpu_type, 0) + n.num_gpus
        return out

    def gpus_by_pool(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.pool] = out.get(n.pool, 0) + n.num_gpus
        return out

    def max_job_gpus(self, tenant: str, gpu_type: str = "") -> int:
        """Most GPUs a job of ``tenant`` (and type) could ever get."""
        pool = tenant if self.partitioned else ""
        return sum(
            n.num_gpus for n in self.nodes if n.pool == pool and (gpu_type == "" or n.gpu_type == gpu_type)
        )

    def unpartitioned(self, tenants: Iterable[str]) -> list[str]:
        """The ``tenants`` that own no nodes of this partitioned cluster, sorted (none in a shared pool)."""
        if not self.partitioned:
            return []
        return sorted(set(tenants) - set(self.gpus_by_pool()))

    def unpartitioned_message(self, missing: Sequence[str], *, jobs: int, field: str) -> str:
        """Which tenants (of ``jobs`` jobs, read from ``field``) have no partition here, and the remedies."""
        return (
            f"tenant(s) {_few(missing)} ({len(missing)} in all, {jobs:,} job(s); field '{field}') have no partition "
            f"in cluster '{self.name}' (its partitions: {_few(sorted(self.gpus_by_pool()))}); drop those jobs from "
            "the trace or rename their tenants to the cluster's, or use a shared-pool cluster such as uniform:NxG"
        )

    def with_sharing(self, max_jobs_per_gpu: int) -> "ClusterSpec":
        """The same cluster where a GPU may hold up to ``max_jobs_per_gpu`` jobs."""
        return ClusterSpec(
            self.name, self.gpu_types, self.nodes, self.tenants, self.partitioned, max_jobs_per_gpu
        )


def _few(names: Sequence[str], shown: int = 3) -> str:
    """Up to ``shown`` names, quoted, and how many more there are."""
    listed = ", ".join(f"'{n}'" for n in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")


# Relative speeds are rough FP16/FP32 training-throughput ratios to a V100 (ResNet-50-like work);
# powers are board power (TDP) for busy and a typical idle draw. Policies that need measured
# per-model throughputs use a perf model instead of these single numbers.
GPU_CATALOG: dict[str, GpuType] = {
    g.name: g
    for g in (
        GpuType("V100", 32, 1.0, 40, 300),
        GpuType("V100M32", 32, 1.0, 40, 300),
        GpuType("V100M16", 16, 1.0, 40, 300),
        GpuType("P100", 16, 0.55, 30, 250),
        GpuType("K80", 12, 0.2, 25, 150),
        GpuType("T4", 16, 0.3, 10, 70),
        GpuType("A10", 24, 0.6, 20, 150),
        GpuType("A100", 80, 2.2, 50, 400),
        GpuType("A100-SXM4-80GB", 80, 2.2, 50, 400),
        GpuType("A800-SXM4-80GB", 80, 2.2, 50, 400),
        GpuType("H800", 80, 3.5, 70, 700),
        GpuType("GPU-series-1", 32, 1.0, 40, 300),
        GpuType("GPU-series-2", 80, 2.0, 50, 400),
        GpuType("MISC", 12, 0.25, 25, 150),
    )
}


def gpu_type(name: str) -> GpuType:
    """A catalogued GPU type, or a neutral one (speed 1.0) for a name the catalog lacks."""
    return GPU_CATALOG.get(name) or GpuType(name, 32, 1.0)
