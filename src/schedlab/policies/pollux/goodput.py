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
maximisation numerically), and keeps the first point of highest goodput, memoised per model
and GPU count.

**Assumptions** (the jobs carry no gradient statistics; Castor leaves Pollux out of its Venus
runs for that reason): ``phi`` is constant over a job's life, ``noise_scale x M0``
(Pollux measures ``phi_t`` online and it grows as training proceeds); ``max_local`` is the
model's largest profiled batch, so Eq. 1's linear fit is not extrapolated; ``max_batch`` is a
multiple of ``M0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from schedlab.errors import ConfigError
from schedlab.sim.iteration import DELTA, ModelProfile, iteration_time, t_comm

GRID = 16  # per-step batches tried per accumulation count
BLOCK = 32  # GPU counts searched together
TOL = 1e-9  # relative margin over the rounding differences between the estimates and the exact values


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
    largest total batch ``max_batch`` and largest per-step per-GPU batch ``max_local``; ``best``
    memoises its configurations by GPU count in ``configs`` (the fields never change)."""

    profile: ModelProfile
    m0: float
    phi: float
    max_batch: float
    max_local: float
    configs: dict[int, Config] = field(default_factory=dict, init=False, repr=False, compare=False)

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


def best(model: GoodputModel, gpus: int) -> Config:
    """§3.3: the goodput-maximising batch on ``gpus`` GPUs (goodput 0 when no batch is
    allowed: ``gpus`` above ``max_batch`` samples). Searched for ``BLOCK`` GPU counts at a time."""
    found = model.configs.get(gpus)
    if found is None:
        start = gpus - gpus % BLOCK
        model.configs.update(_search(model, range(start, start + BLOCK)))
        found = model.configs[gpus]
    return found


def _search(model: GoodputModel, counts: range) -> dict[int, Config]:
    """For each GPU count, the first grid point of highest goodput, scanning ``s = 1, 2, ...``
    and each grid upwards. NumPy finds the per-step batches allowed (the scan's float
    operations, each exact) and estimates the goodput of every point; the points within ``TOL``
    of their count's best estimate are evaluated exactly, in scan order."""
    found = {gpus: Config(gpus, 0.0, 1, 0.0) for gpus in counts}
    gpus = np.arange(max(1, counts.start), max(1, counts.stop))
    if not len(gpus):
        return found
    s_need = np.maximum(1.0, np.ceil(model.m0 / (gpus * model.max_local)))
    steps = np.arange(1, s_need.max() + 8)
    n = np.multiply.outer(gpus, steps)
    lo = np.maximum(1.0, model.m0 / n)
    hi = np.minimum(model.max_local, model.max_batch / n)
    allowed = ((steps <= s_need[:, None] + 7) & (lo <= hi))[..., None]
    sub = lo[..., None] * (hi / lo)[..., None] ** (np.arange(GRID) / (GRID - 1))  # (count, steps, grid)
    p = model.profile
    comp = p.alpha_comp + p.beta_comp * sub
    comm = np.array([t_comm(p, g) for g in gpus.tolist()])[:, None, None]
    t = (steps[:, None] - 1) * comp + (comp**DELTA + comm**DELTA) ** (1 / DELTA)
    total = gpus[:, None, None] * sub * steps[:, None]
    estimate = np.where(allowed, total / t * (model.phi + model.m0) / (model.phi + total), -np.inf)
    near = allowed & (estimate >= (1 - TOL) * estimate.max(axis=(1, 2), keepdims=True))
    for i, j, k in zip(*(index.tolist() for index in np.nonzero(near)), strict=True):
        count = int(gpus[i])
        batch = _grid_batch(model, count, j + 1, k)
        goodput = model.goodput(count, batch, j + 1)
        if goodput > found[count].goodput:
            found[count] = Config(count, batch, j + 1, goodput)
    return found


def _grid_batch(model: GoodputModel, gpus: int, steps: int, k: int) -> float:
    """The per-GPU batch of grid point ``k`` at ``steps`` accumulation steps on ``gpus`` GPUs."""
    lo = max(1.0, model.m0 / (gpus * steps))
    hi = min(model.max_local, model.max_batch / (gpus * steps))
    return (lo * (hi / lo) ** (k / (GRID - 1)) if hi > lo else lo) * steps


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
