"""How fast a job runs where it is placed.

A job's work is measured in seconds on the reference GPU, alone and consolidated. Its rate on
an allocation is the product of

* the speed of the slowest GPU type in the allocation relative to the job's own type
  (a synchronous gang is bounded by its slowest worker); a job with no type runs at the
  type's catalogue speed;
* ``cross_node_factor`` when the allocation spans more than one node;
* ``colocation_factor`` while a GPU of the job is time-shared with another job.

A job whose ``model`` the throughput table measures (:mod:`schedlab.sim.throughputs`, by
default the Gavel throughputs of the Hadar models) instead advances at its measured rate on each
GPU type relative to the reference type, the slowest type of its allocation bounding it (Hadar
§III-A (1b)), when every GPU type of the cluster is in the table.
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.sim.job import Job
from schedlab.sim.throughputs import GAVEL_BUILTIN, ThroughputTable


@mypyc_attr(allow_interpreted_subclasses=True)  # Pollux's and colocation's; with a compiled core (setup.py)
class PerfModel:
    """Rate of a job on an allocation (work-seconds per second)."""

    def __init__(
        self,
        spec: ClusterSpec,
        *,
        cross_node_factor: float = 1.0,
        colocation_factor: float = 0.75,
        throughputs: ThroughputTable | None = GAVEL_BUILTIN,
    ) -> None:
        if not 0 < cross_node_factor <= 1 or not 0 < colocation_factor <= 1:
            raise ConfigError("perf factors must lie in (0, 1]")
        self.node_speed = [spec.gpu_types[n.gpu_type].speed for n in spec.nodes]
        self.type_speed = {name: t.speed for name, t in spec.gpu_types.items()}
        self.cross_node_factor = cross_node_factor
        self.colocation_factor = colocation_factor
        self.node_type = [n.gpu_type for n in spec.nodes]
        measured = throughputs is not None and all(
            any(t in row for row in throughputs.rows.values()) for t in spec.gpu_types
        )
        self.throughputs = throughputs if measured else None
        self.constant = cross_node_factor == 1.0 and all(s == 1.0 for s in self.node_speed) and not measured

    def rate(self, job: Job, nodes: tuple[int, ...]) -> float:
        """Rate of ``job`` running alone on ``nodes``."""
        if self.constant:
            return 1.0
        table = self.throughputs
        if table is not None and job.model in table:
            rate = table.task_rate(job.model, job.num_gpus, {self.node_type[n] for n in nodes})
            return rate * self.cross_node_factor if len(nodes) > 1 else rate
        speed = self.node_speed[nodes[0]] if len(nodes) == 1 else min(self.node_speed[n] for n in nodes)
        native = self.type_speed.get(job.gpu_type, 1.0) if job.gpu_type else 1.0
        rate = speed / native
        if len(nodes) > 1:
            rate *= self.cross_node_factor
        return rate

    def colocated_rate(self, job: Job, nodes: tuple[int, ...], others: list[Job]) -> float:
        """Rate of ``job`` while sharing its GPUs with ``others`` (non-empty)."""
        return self.rate(job, nodes) * self.colocation_factor
