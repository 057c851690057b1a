"""Engine settings: what checkpoints, restarts and boots cost, and where a run stops."""

from __future__ import annotations

import math
from dataclasses import dataclass

from schedlab.errors import ConfigError
from schedlab.sim.checkpoint import FLOWGPU_MIGRATION_SPEEDUP, MODELS

INF = math.inf


@dataclass(frozen=True)
class SimConfig:
    """Engine settings. Costs are in seconds.

    * ``checkpoint_model``: what a pause or a migration costs (:mod:`schedlab.sim.checkpoint`):
      ``fixed`` (default: ``checkpoint_s`` and ``restore_s`` for every job), ``framework``
      (iteration-boundary wait, then the whole state, scaled by the job's GPU memory),
      ``transparent`` (FlowGPU style: active GPU memory, ``transparent_speedup`` times cheaper
      than ``framework``) or ``kill`` (a pause or migration kills the job: it loses the work
      since its last periodic checkpoint and pays ``restart_s``);
    * ``transparent_speedup``: the ``transparent`` model's gain over ``framework``; default 1.7,
      the low end of the "1.7x to 4.5x" migration gain FlowGPU reports over PyTorch
      framework-level checkpointing;
    * ``checkpoint_s``: time to save a checkpoint when a job is paused or migrated (the
      ``framework`` and ``transparent`` models scale it by the job's GPU memory);
    * ``restore_s``: time to restore from a checkpoint when a paused or migrated job starts again;
    * ``restart_s``: time for an evicted (killed) job to run again once it is given GPUs:
      rescheduling, image pull and restore from its last checkpoint. Default 10 s, the
      checkpoint-restart delay of the Hadar evaluation (§IV); production restarts that pull a
      large image take longer, so studies of eviction cost should set it;
    * ``checkpoint_interval_s``: periodic checkpoints, in seconds of work, for jobs whose
      row does not set one; an eviction (:meth:`Simulation.preempt`) loses the work since the
      last of them (``inf`` = never checkpointed: an evicted job restarts from zero);
    * ``boot_s``: time for a powered-off node to come back;
    * ``horizon_s``: stop the simulation at this time (jobs not done are reported unfinished).

    The GPUs of a paused, preempted or migrated job are freed at once; the save and restore
    time is charged as a stall when the job runs again.
    """

    checkpoint_model: str = "fixed"
    transparent_speedup: float = FLOWGPU_MIGRATION_SPEEDUP[0]
    checkpoint_s: float = 10.0
    restore_s: float = 30.0
    restart_s: float = 10.0
    checkpoint_interval_s: float = 1800.0
    boot_s: float = 300.0
    horizon_s: float = INF
    cross_node_factor: float = 1.0
    colocation_factor: float = 0.75

    def __post_init__(self) -> None:
        for name in ("checkpoint_s", "restore_s", "restart_s", "boot_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ConfigError(f"{name} must be a non-negative number, got {value!r}")
        if self.checkpoint_model not in MODELS:
            raise ConfigError(f"unknown checkpoint model '{self.checkpoint_model}'; choose one of {', '.join(MODELS)}")
        if not (self.transparent_speedup > 0 and math.isfinite(self.transparent_speedup)):
            raise ConfigError(f"transparent_speedup must be a positive number, got {self.transparent_speedup!r}")
        if not self.checkpoint_interval_s > 0:
            raise ConfigError("checkpoint_interval_s must be positive (inf for never)")
        if not self.horizon_s > 0:
            raise ConfigError("horizon_s must be positive")
