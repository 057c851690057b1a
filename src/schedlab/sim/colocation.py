"""Rates of jobs that share GPUs under Castor's model (Luo et al., "Castor", §3.1-3.2).

A job ``k`` with per-GPU batch ``B`` that runs in ``s`` gradient-accumulation steps needs
``t_iter(B, s)`` per iteration (Eq. 3) instead of ``t_iter(B, 1)``, the time its work
(``duration_s``) was measured at; alone it advances at ``t_iter(B, 1) / t_iter(B, s)`` and,
sharing its GPUs with job ``j``, at that rate divided by its interference ratio
``xi_k(j)`` (Eq. 4-5: ``t_hat = t * xi``). The ratio comes from an :class:`XiSource`, which
sees both jobs' models and current per-step batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from schedlab.cluster.spec import ClusterSpec
from schedlab.sim.iteration import ModelProfile, iteration_time
from schedlab.sim.job import Job
from schedlab.sim.perf import PerfModel


class XiSource(Protocol):
    """Interference ratio of job A (model, per-step batch) while sharing a GPU with job B."""

    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float: ...


@dataclass(frozen=True)
class JobSetting:
    """How a job trains: its model profile, per-GPU batch ``batch`` and accumulation ``steps``."""

    profile: ModelProfile
    batch: int
    steps: int
    gpus: int

    @property
    def sub_batch(self) -> float:
        return self.batch / self.steps

    def t_iter(self, steps: int | None = None) -> float:
        return iteration_time(self.profile, self.batch, self.steps if steps is None else steps, self.gpus)

    @property
    def slowdown(self) -> float:
        """t_iter(B, s) / t_iter(B, 1): the cost of accumulating over ``steps`` sub-batches."""
        return self.t_iter() / self.t_iter(1) if self.steps > 1 else 1.0


class ColocationPerf(PerfModel):
    """:class:`PerfModel` whose colocated rate follows the pair's interference ratios.

    ``settings`` maps a job's arrival index to its :class:`JobSetting`; a job without one runs
    as in the base model (rate 1 alone, ``1 / xi`` is then taken with its partner's ratio 1)."""

    def __init__(self, spec: ClusterSpec, xi: XiSource, *, cross_node_factor: float = 1.0) -> None:
        super().__init__(spec, cross_node_factor=cross_node_factor)
        self.source = xi
        self.settings: dict[int, JobSetting] = {}

    def rate(self, job: Job, nodes: tuple[int, ...]) -> float:
        setting = self.settings.get(job.idx)
        base = super().rate(job, nodes)
        return base / setting.slowdown if setting is not None else base

    def xi(self, job: Job, other: Job) -> float:
        a, b = self.settings.get(job.idx), self.settings.get(other.idx)
        if a is None or b is None:
            return 1.0 / self.colocation_factor
        return self.source.xi(a.profile.name, a.sub_batch, b.profile.name, b.sub_batch)

    def colocated_rate(self, job: Job, nodes: tuple[int, ...], others: list[Job]) -> float:
        return self.rate(job, nodes) / max(self.xi(job, other) for other in others)
