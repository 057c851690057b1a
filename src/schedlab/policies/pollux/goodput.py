"""Pollux's goodput model (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for
Goodput-Optimized Deep Learning", OSDI'21, §3) on Castor's iteration-time model.

``GOODPUT(a, M) = THROUGHPUT(a, M) x EFFICIENCY(M)`` (§3): the samples per second of a job on
``a`` GPUs at total batch ``M``, times the statistical efficiency of that batch, the training
progress per sample relative to the initial batch ``M0`` (§3.1):

    EFFICIENCY(M) = (phi + M0) / (phi + M)

with ``phi`` the gradient noise scale (in samples). Throughput is ``M / t_iter`` with the
iteration time of §3.2, which is Castor's Eq. 3 (:func:`schedlab.sim.iteration.iteration_time`,
Pollux's ``T_grad``, ``T_sync`` and overlap ``gamma``): ``M = a B`` for a per-GPU batch ``B``
stepped in ``s`` gradient-accumulation steps of ``B / s``. Batch-size adaptation (§3.3) picks,
for a given ``a``, the ``(B, s)`` with the highest goodput under ``M0 <= M <= max_batch`` and a
per-step batch ``B / s <= max_local`` (memory); :func:`best` searches ``s = 1, 2, ...`` and, for
each, a log-spaced grid of per-step batches (``GRID`` points; Pollux solves the same
maximisation numerically).

**Assumptions** (the jobs carry no gradient statistics; Castor leaves Pollux out of its Venus
runs for that reason): ``phi`` is constant over a job's life, ``noise_scale x M0``
(Pollux measures ``phi_t`` online and it grows as training proceeds); ``max_local`` is the
model's largest profiled batch, so Eq. 1's linear fit is not extrapolated; ``max_batch`` is a
multiple of ``M0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from schedlab.errors import ConfigError
from schedlab.sim.iteration import ModelProfile, iteration_time

GRID = 16  # per-step batches tried per accumulation count


@dataclass(frozen=True)
class Config:
    """A batch configuration on ``gpus`` GPUs and its goodput (samples/s at efficiency 1)."""

    gpus: int
    batch: float  # per GPU per iteration
    steps: int
    goodput: float

    @property
    def total_batch(self) -> float:
        return self.gpus * self.batch


@dataclass(frozen=True)
class GoodputModel:
    """One job's goodput: its model profile, initial total batch ``m0``, noise scale ``phi``,
    largest total batch ``max_batch`` and largest per-step per-GPU batch ``max_local``."""

    profile: ModelProfile
    m0: float
    phi: float
    max_batch: float
    max_local: float

    def __post_init__(self) -> None:
        if not (self.m0 > 0 and self.phi >= 0 and self.max_batch >= self.m0 and self.max_local >= 1):
            raise ConfigError(f"goodput model: need m0 > 0, phi >= 0, max_batch >= m0, max_local >= 1; got {self}")

    def efficiency(self, total_batch: float) -> float:
        """§3.1: progress per sample at ``total_batch`` relative to ``m0``."""
        return (self.phi + self.m0) / (self.phi + total_batch)

    def goodput(self, gpus: int, batch: float, steps: int) -> float:
        """§3: samples/s x efficiency on ``gpus`` GPUs at per-GPU ``batch`` in ``steps`` steps."""
        t = iteration_time(self.profile, batch, steps, gpus)
        return gpus * batch / t * self.efficiency(gpus * batch)


@lru_cache(maxsize=65536)
def best(model: GoodputModel, gpus: int) -> Config:
    """§3.3: the goodput-maximising batch on ``gpus`` GPUs (goodput 0 when no batch is
    allowed: ``gpus`` above ``max_batch`` samples)."""
    if gpus < 1:
        return Config(gpus, 0.0, 1, 0.0)
    found = Config(gpus, 0.0, 1, 0.0)
    s_need = max(1, math.ceil(model.m0 / (gpus * model.max_local)))
    for steps in range(1, s_need + 8):
        lo = max(1.0, model.m0 / (gpus * steps))
        hi = min(model.max_local, model.max_batch / (gpus * steps))
        if lo > hi:
            continue
        for k in range(GRID):
            sub = lo * (hi / lo) ** (k / (GRID - 1)) if hi > lo else lo
            g = model.goodput(gpus, sub * steps, steps)
            if g > found.goodput:
                found = Config(gpus, sub * steps, steps, g)
    return found


def best_at(model: GoodputModel, gpus: float) -> float:
    """Best goodput at a possibly fractional GPU count: linear between whole counts (below one
    GPU, a share of one GPU's), for the fair-share baseline of the speedup (§4.2). A count
    above ``max_batch`` (less than one sample per GPU) counts as ``max_batch`` GPUs."""
    gpus = min(gpus, math.floor(model.max_batch))
    low = math.floor(gpus)
    g_low = best(model, low).goodput if low >= 1 else 0.0
    if gpus == low:
        return g_low
    return g_low + (gpus - low) * (best(model, low + 1).goodput - g_low)
