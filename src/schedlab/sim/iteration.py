"""Castor's iteration-time model (Luo et al., "Castor", §3.1, Eq. 1-3) and its model catalogue.

One training iteration of a data-parallel job with per-GPU batch ``B`` on ``G`` GPUs, split
into ``s`` gradient-accumulation steps of sub-batch ``B/s``, takes (Eq. 3)

    t_iter = (s - 1) * t_comp(B/s) + (t_comp(B/s)**delta + t_comm**delta) ** (1/delta)

with ``t_comp(b) = alpha_comp + beta_comp * b`` (Eq. 1, linear in the per-step batch) and
``t_comm = alpha_comm + beta_comm * M`` (Eq. 2, linear in the message size ``M``, the model's
gradient bytes; zero on one GPU, where there is no all-reduce). ``delta`` is the overlap of
computation and communication (Pollux's gamma): 1 = none, large = full overlap.

**Catalogue provenance.** The paper prints its fitted parameters only as curves (Fig. 2), so
the profiles are built from Lucid's public single-job profiles (``analyzer/single_data.csv``
of the Lucid artifact, ASPLOS '23; one GPU, fp32 rows): for each model ``alpha_comp`` and
``beta_comp`` are the least-squares fit of ``t_comp(B) = B / speed(B)`` over its profiled
batch sizes (slope clamped at 0, then ``alpha`` = mean time), memory is the fit of ``gmem``
(MiB) against the batch size, and ``util`` keeps the measured GPU and GPU-memory utilisation
(%) per profiled batch. These are the nine models of Lucid's ``colocate_info.csv`` (the
measured colocation pairs) whose ``speed`` is in samples per second; PPO and TD3 are left out
because their speed unit is not samples (it falls with the batch size). Parameter counts
(``params_m``, millions) are the usual published sizes of the CIFAR/ImageNet variants and
are approximate. The communication constants are assumptions, not the paper's: a ring
all-reduce moves ``2 (G-1)/G * 4 * params`` bytes at ``COMM_BANDWIDTH`` bytes/s after a
latency ``COMM_LATENCY_S``; ``DELTA`` = 2.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

from schedlab.errors import ConfigError

COMM_LATENCY_S = 1e-3
COMM_BANDWIDTH = 10e9  # bytes per second per GPU link (PCIe-class; assumption)
DELTA = 2.0


@dataclass(frozen=True)
class ModelProfile:
    """One model's Eq. 1 and Eq. 2 parameters, its memory and its profiled utilisation."""

    name: str
    dataset: str
    params_m: float
    alpha_comp: float  # s
    beta_comp: float  # s per sample
    mem_base_mib: float
    mem_per_sample_mib: float
    util: tuple[tuple[int, float, float], ...]  # (batch, GPU util %, GPU memory util %)

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(b for b, _, _ in self.util)

    def features(self, batch: float) -> tuple[float, float, float]:
        """(GPU util %, memory util %, memory MiB) at ``batch``, from the nearest profiled batch."""
        b, gpu, mem = min(self.util, key=lambda u: (abs(math.log2(u[0]) - math.log2(batch)), u[0]))
        return gpu, mem, memory_mib(self, batch)


CATALOGUE: dict[str, ModelProfile] = {
    p.name: p
    for p in (
        ModelProfile("DCGAN", "LSUN", 6.4, 1.214e-02, 1.192e-04, 2071, 7.42,
                     ((32, 57.8, 20.2), (64, 72.9, 31.0), (128, 94.0, 41.0))),
        ModelProfile("EfficientNet", "CIFAR-10", 4.0, 3.657e-02, 0.0, 2401, 2.01,
                     ((32, 24.5, 3.0), (64, 35.4, 8.0), (128, 44.8, 16.2))),
        ModelProfile("LSTM", "Wikitext2", 13.5, 0.0, 2.469e-04, 2152, 27.06, ((64, 97.0, 74.9), (128, 76.2, 63.8))),
        ModelProfile("MobileNetV2", "CIFAR-10", 2.2, 2.502e-02, 8.445e-05, 1974, 16.40,
                     ((32, 42.8, 17.0), (64, 69.5, 39.5), (128, 98.8, 65.3))),
        ModelProfile("MobileNetV3", "ImageNet", 5.4, 1.805e-02, 1.507e-04, 2113, 18.08,
                     ((32, 45.4, 19.7), (64, 80.5, 44.3), (128, 100.0, 60.9))),
        ModelProfile("NeuMF", "MovieLens", 5.0, 4.016e-03, 2.209e-06, 2050, 0.0, ((64, 10.5, 2.0), (128, 10.5, 2.0))),
        ModelProfile("PointNet", "ShapeNet", 3.5, 1.870e-02, 6.981e-03, 1904, 67.30,
                     ((32, 11.5, 9.7), (64, 7.8, 6.6), (128, 9.0, 7.6))),
        ModelProfile("ResNet18", "CIFAR-10", 11.7, 1.371e-02, 9.085e-05, 2154, 7.28,
                     ((32, 58.7, 25.0), (64, 80.7, 47.0), (128, 96.2, 67.0))),
        ModelProfile("VGG", "CIFAR-10", 14.7, 6.163e-03, 8.226e-05, 3183, 6.30,
                     ((32, 44.0, 23.0), (64, 51.0, 30.0), (128, 50.5, 34.0))),
    )
}  # fmt: skip


def profile(name: str) -> ModelProfile:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise ConfigError(f"no iteration profile for model '{name}'; known: {', '.join(CATALOGUE)}") from None


def t_comp(p: ModelProfile, batch: float) -> float:
    """Eq. 1: computation time of one forward/backward step on ``batch`` samples per GPU."""
    return p.alpha_comp + p.beta_comp * batch


def t_comm(p: ModelProfile, gpus: int) -> float:
    """Eq. 2: all-reduce time of one iteration's gradients (0 on one GPU)."""
    if gpus <= 1:
        return 0.0
    message = 4e6 * p.params_m  # fp32 gradient bytes
    return COMM_LATENCY_S + 2 * (gpus - 1) / gpus * message / COMM_BANDWIDTH


def iteration_time(p: ModelProfile, batch: float, steps: int, gpus: int, delta: float = DELTA) -> float:
    """Eq. 3: one iteration at per-GPU ``batch`` in ``steps`` accumulation steps on ``gpus`` GPUs."""
    if steps < 1 or batch <= 0:
        raise ConfigError(f"iteration_time: need batch > 0 and steps >= 1, got {batch!r}, {steps!r}")
    comp = t_comp(p, batch / steps)
    return float((steps - 1) * comp + (comp**delta + t_comm(p, gpus) ** delta) ** (1 / delta))


def memory_mib(p: ModelProfile, batch: float) -> float:
    """GPU memory (MiB) of one worker stepping ``batch`` samples at a time."""
    return p.mem_base_mib + p.mem_per_sample_mib * batch


# Trace model names that are a catalogue model under another name: Pollux's applications
# ``cifar10`` (ResNet-18 on CIFAR-10) and ``ncf`` (NeuMF on MovieLens) are Lucid's ResNet18 and
# NeuMF (Pollux, OSDI '21, Table 1). Pollux's bert, deepspeech2, imagenet (ResNet-50) and yolov3
# have no catalogue counterpart and are drawn like model-less jobs.
ALIASES = {"cifar10": "ResNet18", "ncf": "NeuMF"}


def assign(job_id: str, seed: int, model: str = "") -> tuple[str, int]:
    """A model and per-GPU batch size for a job: ``model`` when it is in the catalogue (directly
    or through :data:`ALIASES`), else one drawn uniformly from the catalogue, and one of the
    model's profiled batches, both by a hash of ``(seed, job_id)``: the same job and seed always
    get the same pair, whatever the run order or the policy."""
    h = zlib.crc32(f"{seed}:{job_id}".encode())
    names = list(CATALOGUE)
    model = ALIASES.get(model, model)
    p = CATALOGUE[model] if model in CATALOGUE else CATALOGUE[names[h % len(names)]]
    return p.name, p.batches[(h // len(names)) % len(p.batches)]
