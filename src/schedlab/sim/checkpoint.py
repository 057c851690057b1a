"""Checkpoint cost models: what pausing, resuming, migrating and evicting a job costs.

Policies choose *when* to pause (:meth:`~schedlab.sim.engine.Simulation.pause`), evict
(``preempt``) or move (``migrate``) a job; the model chosen by ``SimConfig.checkpoint_model``
decides *what it costs*. The engine frees the job's GPUs at once and charges the cost as a
stall when the job runs again (see :mod:`schedlab.sim.engine`). Four models:

``fixed`` (the default, the engine's behaviour before these models)
    a pause saves in ``checkpoint_s`` and restores in ``restore_s``; a migration stalls
    ``checkpoint_s + restore_s``; costs are the same for every job.
``framework``: framework-level checkpoint
    the job runs on to its next iteration boundary, then the framework writes its whole state.
    Save = half an iteration (the expected wait for the boundary; Castor's Eq. 3 iteration time
    of the job's model and batch, :mod:`schedlab.sim.iteration`) + ``checkpoint_s x M / M_ref``;
    restore = ``restore_s x M / M_ref``; migration = save + restore. ``M`` is the job's GPU
    memory per GPU (the state each GPU writes, in parallel), ``M_ref`` =
    :data:`REFERENCE_MEM_GIB`, the mean of the default memory draw, so that the default draw
    pays on average what ``fixed`` charges every job.
``transparent``: transparent GPU checkpoint in the FlowGPU style
    the job is paused where it is (no boundary wait) and its *active* GPU memory is copied out;
    pause = ``checkpoint_s x M / M_ref / transparent_speedup``, restore =
    ``restore_s x M / M_ref / transparent_speedup``, migration = pause + restore: proportional
    to the job's active memory, and ``transparent_speedup`` times cheaper than the framework
    checkpoint of the same job (less the boundary wait).
``kill``: kill and restart
    no checkpoint on demand: a pause or a migration kills the job, which loses the work since
    its last periodic checkpoint (``checkpoint_interval_s``) and pays ``restart_s`` when it runs
    again (the eviction semantics of ``preempt``).

``preempt`` is an eviction under every model (the policy chose to kill); only ``pause`` and
``migrate`` change with the model.

**Where the defaults come from.** The post "GPU Pause, Resume, and Migration: The Missing
Primitive in Cluster Scheduling" (yezhisheng.me, 17 May 2026, on FlowGPU, Euro-Par) reports:
"it reduces checkpoint pause time by 6.2x to 15x over POS and up to 10.4x over Singularity.
Restore time drops by 12x to 18x over POS and up to 4.1x over Singularity. For migration,
FlowGPU outperforms Singularity by up to 2.1x and PyTorch framework-level checkpointing by
1.7x to 4.5x." The only ratio against framework-level checkpointing is the migration one, so
``transparent_speedup`` defaults to its low end, 1.7 (the smallest gain reported; 4.5 is the
other end) and is applied to pause and restore alike, which keeps migration = pause + restore
at that ratio. The pause and restore ratios are against other transparent mechanisms (POS,
Singularity), not against framework checkpointing, and are not used. The absolute framework
figures are the engine's ``checkpoint_s`` (10 s) and ``restore_s`` (30 s) defaults, which the
post does not give; the post gives no absolute time at all.

**GPU memory of a job.** The row's ``gpu_mem_gib`` (active memory per GPU, GiB) when the trace
has it; otherwise a default from Castor's model catalogue (:mod:`schedlab.sim.iteration`,
Lucid's measured memory): the job's ``model`` when the catalogue has it, else a model drawn by
a hash of ``(seed, job_id)``, and a batch drawn the same way (:func:`iteration.assign`), memory
= ``mem_base + mem_per_sample x batch``. The draw is reproducible: the same job and seed get
the same memory whatever the policy or run order. The default is per GPU and the same for
every GPU count: a data-parallel worker holds a full replica whatever the number of workers.
The catalogue's models are small (2.0 to 10.3 GiB per GPU); give ``gpu_mem_gib`` for large ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING

from schedlab.errors import ConfigError
from schedlab.sim import iteration

if TYPE_CHECKING:
    from schedlab.sim.job import Job

MODELS = ("fixed", "framework", "transparent", "kill")
# FlowGPU's migration gain over PyTorch framework-level checkpointing: "1.7x to 4.5x" (the post).
FLOWGPU_MIGRATION_SPEEDUP = (1.7, 4.5)
# The mean GPU memory per GPU (GiB) of the default draw: catalogue models uniform, then their
# profiled batches uniform, as iteration.assign draws them (3.46 GiB).
REFERENCE_MEM_GIB = fmean(
    fmean(iteration.memory_mib(p, b) for b in p.batches) / 1024 for p in iteration.CATALOGUE.values()
)


@dataclass(frozen=True)
class StopCost:
    """What stopping a job costs: ``save_s`` (writing the checkpoint) and ``restore_s`` (reading
    it back on the next start), both charged as a stall when the job runs again; ``kill`` says
    there is no checkpoint on demand: the job loses the work since its last periodic
    checkpoint and ``restore_s`` is the restart time."""

    save_s: float
    restore_s: float
    kill: bool = False

    @property
    def stall_s(self) -> float:
        return self.save_s + self.restore_s


class CheckpointModel:
    """The cost of a pause, a migration and an eviction under one of :data:`MODELS`."""

    def __init__(
        self,
        name: str,
        *,
        checkpoint_s: float,
        restore_s: float,
        restart_s: float,
        transparent_speedup: float = FLOWGPU_MIGRATION_SPEEDUP[0],
        seed: int = 0,
    ) -> None:
        if name not in MODELS:
            raise ConfigError(f"unknown checkpoint model '{name}'; choose one of {', '.join(MODELS)}")
        if not (transparent_speedup > 0 and math.isfinite(transparent_speedup)):
            raise ConfigError(f"transparent_speedup must be a positive number, got {transparent_speedup!r}")
        self.name = name
        self.checkpoint_s = checkpoint_s
        self.restore_s = restore_s
        self.restart_s = restart_s
        self.speedup = transparent_speedup
        self.seed = seed

    def pause(self, job: Job) -> StopCost:
        """The cost of pausing ``job`` now (and resuming it later)."""
        name = self.name
        if name == "fixed":
            return StopCost(self.checkpoint_s, self.restore_s)
        if name == "kill":
            return StopCost(0.0, self.restart_s, kill=True)
        scale = self.mem_gib(job) / REFERENCE_MEM_GIB
        if name == "framework":
            return StopCost(0.5 * self.iteration_s(job) + self.checkpoint_s * scale, self.restore_s * scale)
        return StopCost(self.checkpoint_s * scale / self.speedup, self.restore_s * scale / self.speedup)

    @property
    def pause_kills(self) -> bool:
        """Whether :meth:`pause` (and so :meth:`migration`) kills the job under this model."""
        return self.name == "kill"

    def migration(self, job: Job) -> StopCost:
        """The cost of moving ``job`` now: a pause and a restore on the new GPUs."""
        return self.pause(job)

    def eviction(self, job: Job) -> StopCost:
        """The cost of evicting ``job`` (``preempt``): a kill under every model."""
        return StopCost(0.0, self.restart_s, kill=True)

    def mem_gib(self, job: Job) -> float:
        """The job's active GPU memory per GPU, GiB: its row's ``gpu_mem_gib`` or the default draw."""
        if job.mem_gib == job.mem_gib:
            return job.mem_gib
        p, batch = self._profile(job)
        return iteration.memory_mib(p, batch) / 1024

    def iteration_s(self, job: Job) -> float:
        """One training iteration of the job's (drawn) model and batch on its GPUs (Castor Eq. 3)."""
        p, batch = self._profile(job)
        return iteration.iteration_time(p, batch, 1, max(1, int(math.ceil(job.num_gpus))))

    def _profile(self, job: Job) -> tuple[iteration.ModelProfile, int]:
        model, batch = iteration.assign(job.id, self.seed, job.model)
        return iteration.CATALOGUE[model], batch
