"""Synthetic workloads calibrated to published statistics of real GPU-cluster traces.

``generate(profile, n_jobs, seed=...)`` returns a canonical :class:`Workload`. Every profile in
:data:`PROFILES` is a frozen dataclass whose docstring says which statistic each number reproduces
and where it was published; nothing is read from disk at run time, except by ``hadar`` and
``hadar-uniform`` (:mod:`schedlab.workload.hadar`), which draw jobs from Philly trace files.

How a job is made (all steps vectorised, one ``numpy.random.Generator`` passed down):

1. its tenant (VC / organisation) from the tenant shares, its user from a Zipf law inside the
   tenant, and one of the user's name templates;
2. its shape (GPUs, or workers x GPUs per worker, and a GPU type that has nodes big enough);
3. its duration: a lognormal mixture x a per-template factor (so jobs of one user with similar
   names have correlated durations) x ``num_gpus ** size_exponent``;
4. the span of the arrival window, chosen so that the offered load ``sum(num_gpus * duration) /
   (cluster_gpus * span)`` equals ``load``;
5. its submit time from the tenant's non-homogeneous Poisson process (hour-of-week intensity:
   an hour-of-day shape and a weekend factor, with a per-tenant phase and amplitude);
6. its final state, whose odds tilt with the job's GPU-time rank so that both the per-job and the
   per-GPU-second state shares of the source trace are reproduced.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from schedlab import arrow
from schedlab.errors import ConfigError
from schedlab.units import DAY_S, HOUR_S
from schedlab.workload.hadar import HadarProfile, generate_hadar
from schedlab.workload.schema import COLUMNS, Workload, canonical_columns

WEEK_H = 168

_NAME_WORDS = (
    "resnet", "bert", "gpt", "vit", "llama", "swin", "yolo", "ppo", "dit", "t5", "clip", "mae",
    "unet", "lstm", "detr", "moe", "sam", "wav2vec", "deberta", "mask_rcnn", "nerf", "rec", "asr", "ocr",
)
_NAME_STAGES = ("pretrain", "finetune", "eval", "sweep", "debug", "distill", "infer", "ablation")


def _check_probs(probs: tuple[float, ...], what: str, length: int | None = None) -> None:
    if length is not None and len(probs) != length:
        raise ConfigError(f"{what}: expected {length} values, got {len(probs)}")
    if len(probs) == 0 or min(probs) < 0 or abs(sum(probs) - 1.0) > 1e-6:
        raise ConfigError(f"{what}: need non-negative values summing to 1 (got {probs})")


@dataclass(frozen=True)
class LognormalMix:
    """A mixture of lognormals: component weights, medians (s) and log-space standard deviations."""

    weights: tuple[float, ...]
    medians_s: tuple[float, ...]
    sigmas: tuple[float, ...]

    def __post_init__(self) -> None:
        if not len(self.weights) == len(self.medians_s) == len(self.sigmas):
            raise ConfigError("LognormalMix: weights, medians_s and sigmas need the same length")
        _check_probs(self.weights, "LognormalMix.weights")

    def sample(self, rng: np.random.Generator, comp: np.ndarray) -> np.ndarray:
        """One draw per entry of ``comp``, each from the component it names."""
        n = comp.size
        mu = np.log(np.asarray(self.medians_s, dtype=float))[comp]
        draws: np.ndarray = np.exp(mu + np.asarray(self.sigmas, dtype=float)[comp] * rng.standard_normal(n))
        return draws


@dataclass(frozen=True)
class JobClass:
    """One priority class: its share of jobs and the shape of its jobs.

    ``gpu_values``/``gpu_probs`` are GPUs per job, or GPUs per worker when ``per_worker`` (then
    ``gpus_per_worker`` is set, and a ``gang_share`` of the jobs get 2+ workers drawn from
    ``worker_values``/``worker_probs``; gang workers never take a fraction of a GPU).
    ``solo_gpu_probs`` is the mix of the non-gang jobs when it differs from ``gpu_probs`` (see
    :func:`solo_mix`); ``duration`` replaces the profile's duration mixture for this class (same
    number of components).
    """

    name: str = "default"
    share: float = 1.0
    gpu_values: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
    gpu_probs: tuple[float, ...] = (0.5, 0.2, 0.2, 0.1)
    per_worker: bool = False
    gang_share: float = 0.0
    worker_values: tuple[int, ...] = (2, 4, 8, 16, 32)
    worker_probs: tuple[float, ...] = (0.45, 0.30, 0.15, 0.07, 0.03)
    solo_gpu_probs: tuple[float, ...] | None = None
    duration: LognormalMix | None = None

    def __post_init__(self) -> None:
        _check_probs(self.gpu_probs, f"class {self.name!r} gpu_probs", len(self.gpu_values))
        if self.solo_gpu_probs is not None:
            _check_probs(self.solo_gpu_probs, f"class {self.name!r} solo_gpu_probs", len(self.gpu_values))
        _check_probs(self.worker_probs, f"class {self.name!r} worker_probs", len(self.worker_values))
        if self.gang_share > 0 and not self.per_worker:
            raise ConfigError(f"class {self.name!r}: gang_share needs per_worker GPU values")


@dataclass(frozen=True)
class Profile:
    """Parameters of a synthetic workload (the base values form the small ``simple`` profile).

    ``simple``: homogeneous Poisson arrivals, one lognormal duration with sigma 1 (an
    exponential-like spread, median 30 min), 1/2/4/8 GPUs with shares 50/20/20/10 %, 4 tenants,
    64 GPUs at load 0.8. Not calibrated to a trace; meant for quick runs and tests.
    """

    name: str = "simple"
    origin: str = "2024-01-01"  # a Monday at midnight; the start of the arrival window
    cluster_gpus: int = 64
    load: float = 0.8
    classes: tuple[JobClass, ...] = (JobClass(),)
    duration: LognormalMix = LognormalMix((1.0,), (1800.0,), (1.0,))
    size_exponent: float = 0.0  # duration x num_gpus ** size_exponent (num_gpus >= 1)
    min_duration_s: float = 1.0
    max_duration_s: float = 7 * 86400.0
    hourly: tuple[float, ...] = (1.0,) * 24  # relative arrival intensity by hour of day
    weekend_factor: float = 1.0  # Saturday/Sunday intensity relative to weekdays
    tenants: tuple[str, ...] = ("t0", "t1", "t2", "t3")
    tenant_weights: tuple[float, ...] = (0.4, 0.3, 0.2, 0.1)
    tenant_phase_sd_h: float = 0.0  # per-tenant shift of the daily shape (hours, normal sd)
    tenant_amplitude: tuple[float, float] = (1.0, 1.0)  # per-tenant depth of the daily shape, uniform range
    tenant_weekend: tuple[float, float] | None = None  # per-tenant weekend factor range (None: weekend_factor)
    tenant_max_gpus: tuple[float, ...] | None = None  # per-tenant job-size cap (the VC's GPUs)
    tenant_balance: str = "jobs"  # what tenant_weights divide: "jobs" (job counts) or "gpu_time" (see _tenant_table)
    users_per_tenant: int = 4
    user_zipf: float = 1.0  # job share of a tenant's r-th user ~ r ** -user_zipf
    templates_per_user: int = 3
    template_sigma: float = 0.5  # log-sd of the duration factor shared by one name template
    template_affinity: float = 0.8  # chance a job takes its template's duration component (else a random one)
    states: tuple[str, ...] = ("completed",)
    state_weights: tuple[float, ...] = (1.0,)
    state_tilts: tuple[float, ...] = (0.0,)  # odds = state_weights * exp(tilt * GPU-time quantile)
    cpus_per_gpu: float = 4.0
    gpu_types: tuple[str, ...] = ()
    gpu_type_weights: tuple[float, ...] = ()
    gpu_type_max_per_worker: tuple[float, ...] = ()  # GPUs of the type's largest node
    gpu_type_total: tuple[float, ...] = ()  # GPUs of the type in the cluster (caps gang sizes)
    jobs_per_day: float | None = None  # fixed arrival rate: the window is n_jobs / rate and ``load`` is unused

    def __post_init__(self) -> None:
        _check_probs(tuple(c.share for c in self.classes), f"profile {self.name!r} class shares")
        for c in self.classes:
            if c.duration is not None and len(c.duration.weights) != len(self.duration.weights):
                raise ConfigError(f"profile {self.name!r}: class {c.name!r} duration needs "
                                  f"{len(self.duration.weights)} component(s), like the profile's")  # fmt: skip
        if self.jobs_per_day is not None and not self.jobs_per_day > 0:
            raise ConfigError(f"profile {self.name!r}: jobs_per_day must be positive")
        _check_probs(self.tenant_weights, f"profile {self.name!r} tenant_weights", len(self.tenants))
        if len(self.hourly) != 24 or min(self.hourly) <= 0:
            raise ConfigError(f"profile {self.name!r}: hourly needs 24 positive values")
        if not len(self.states) == len(self.state_weights) == len(self.state_tilts):
            raise ConfigError(f"profile {self.name!r}: states, state_weights and state_tilts differ in length")
        if self.gpu_type_total and len(self.gpu_type_total) != len(self.gpu_types):
            raise ConfigError(f"profile {self.name!r}: gpu_type_total needs one entry per GPU type")
        if not len(self.gpu_types) == len(self.gpu_type_weights) == len(self.gpu_type_max_per_worker):
            raise ConfigError(f"profile {self.name!r}: gpu_types, weights and max_per_worker differ in length")
        if self.tenant_balance not in ("jobs", "gpu_time"):
            raise ConfigError(f"profile {self.name!r}: tenant_balance is 'jobs' or 'gpu_time', "
                              f"not {self.tenant_balance!r}")  # fmt: skip
        if self.tenant_balance == "gpu_time" and self.tenant_max_gpus is None:
            raise ConfigError(f"profile {self.name!r}: tenant_balance 'gpu_time' needs tenant_max_gpus")
        if not (0 < self.cluster_gpus < math.inf and 0 < self.load < math.inf):
            raise ConfigError(f"profile {self.name!r}: cluster_gpus and load must be positive finite numbers "
                              f"(got {self.cluster_gpus:g} and {self.load:g})")  # fmt: skip

    def class_counts(self, n_jobs: int) -> tuple[int, ...]:
        """Jobs per class for ``n_jobs`` (largest-remainder rounding of the class shares)."""
        return _apportion(n_jobs, tuple(c.share for c in self.classes))

    def load_weights(self) -> tuple[float, ...]:
        """How much each class's GPU time counts towards the target load."""
        return (1.0,) * len(self.classes)

    def tenant_patterns(self, rng: np.random.Generator, origin: datetime) -> np.ndarray:
        """Arrival intensity of every tenant over the 168 hours of a week from ``origin`` (rows of mean 1)."""
        return _tenant_patterns(rng, self, origin)


# Hourly GPU-job submissions of Venus, Apr-Sep 2020, relative to their mean (hour 0..23), from
# lucid/data/Venus/cluster_throughput.csv (column submit_gpu_job averaged by hour of day).
_VENUS_HOURLY = (
    0.897, 0.658, 0.600, 0.384, 0.268, 0.205, 0.187, 0.224, 0.374, 0.796, 1.295, 1.474,
    1.164, 1.299, 1.559, 1.656, 1.734, 1.733, 1.282, 1.313, 1.345, 1.364, 1.149, 1.038,
)


@dataclass(frozen=True)
class VenusProfile(Profile):
    """Helios Venus (SenseTime, SC '21), alias ``helios``; origin 2020-09-01 (Lucid's Venus-September window).

    Calibrated to the published Venus statistics (targets, sources and tolerances are checked in
    ``tests/workload/test_venus_calibration.py`` and tabled in ``docs/helios-qssf.md``):

    - cluster_gpus 1,064: Venus VC sizes summed on 2020-09-01 (HeliosData
      ``Venus/cluster_gpu_number.csv``; 16 non-empty VCs, the tenants).
    - job count: 691.8 GPU jobs a day = 20,754 per 30 days (125,214 GPU-job submissions over the
      181 days of Lucid's Venus ``cluster_throughput.csv``; Helios ``gpu_job_num`` 125,303).
      ``load`` 0.741 is what that rate offers: 691.8 x 98,525 GPU-s per job / (1,064 GPUs x 1 day).
    - GPU mix 1: 51 %, 2: 4.8 %, 4: 7 %, 8: 25.44 %, 16: 5.5 %, 24: 1.5 %, 32: 3 %, 64: 1 %,
      128: 0.76 % (mean 6.73, median 1): shape from the 3,109 ten-minute bins of
      ``cluster_throughput.csv`` holding exactly one GPU-job submission (1 GPU: 49.8 %), the
      single-GPU share set just above one half because Helios' ``med_gpu_num`` is 1 and §3.2.1
      says "over 50 % single-GPU jobs in each cluster", the tail so the mean meets ``avg_gpu_num``
      6.736 (``helios_cluster_summary.csv``).
    - durations: a two-lognormal mixture and ``size_exponent`` fitted (through this generator,
      template factors included) to the Venus GPU-job median 204 s, mean 13,041 s and GPU time
      per job 98,525 GPU-s (``helios_cluster_summary.csv``) and to "roughly three-quarters of
      [GPU] jobs last for less than 1000 seconds" (§3.2.1); capped at 4.32e6 s (Helios
      ``max_run_time_gpu`` in AcmeTrace ``cluster_summary.csv``).
    - VCs: ``tenant_balance`` "gpu_time": each VC's expected share of GPU time is its share of
      the GPUs (each VC "dedicated to one group with its demanded resources", §2.1), a job going
      only to VCs that can hold it. Weighting VCs by job count instead sent the 64- and 128-GPU
      jobs, 28 % of the GPU time, to the few VCs big enough and loaded the largest at 1.39.
    - arrivals: hour-of-day shape (peak/trough 9.3) and weekend factor 0.65 (weekend vs weekday
      mean submissions) from Lucid's ``cluster_throughput.csv``.
    - final states: completed 52.6 / cancelled 27.2 / failed 20.2 % of GPU jobs, and 51.6 / 39.9 /
      8.5 % of GPU time (Venus row of ``helios_cluster_summary.csv``); the tilts reproduce both.
    - users (20 per VC, Zipf 1.3), name templates and ``cpus_per_gpu`` are assumptions.
    """

    name: str = "venus"
    origin: str = "2020-09-01"
    cluster_gpus: int = 1064
    load: float = 0.741
    classes: tuple[JobClass, ...] = (
        JobClass(
            gpu_values=(1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 64.0, 128.0),
            gpu_probs=(0.51, 0.048, 0.07, 0.2544, 0.055, 0.015, 0.03, 0.01, 0.0076),
        ),
    )
    duration: LognormalMix = LognormalMix((0.616, 0.384), (104.1, 2189.0), (0.72, 2.245))
    size_exponent: float = 0.0891
    min_duration_s: float = 1.0
    max_duration_s: float = 4.32e6
    hourly: tuple[float, ...] = _VENUS_HOURLY
    weekend_factor: float = 0.654
    tenants: tuple[str, ...] = (
        "vcJsw", "vcvGl", "vcKeu", "vcYVn", "vcefl", "vcEwI", "vcWoR", "vcHvQ",
        "vcLTP", "vc8Gr", "vcKrE", "vchbv", "vchA3", "vcJLV", "vcvlY", "vcgkz",
    )
    tenant_weights: tuple[float, ...] = tuple(
        g / 1064 for g in (200, 160, 96, 88, 80, 72, 64, 64, 64, 48, 32, 32, 24, 16, 16, 8)
    )
    tenant_max_gpus: tuple[float, ...] | None = (200, 160, 96, 88, 80, 72, 64, 64, 64, 48, 32, 32, 24, 16, 16, 8)
    tenant_balance: str = "gpu_time"
    users_per_tenant: int = 20
    user_zipf: float = 1.3
    templates_per_user: int = 8
    template_sigma: float = 0.8
    template_affinity: float = 0.6
    states: tuple[str, ...] = ("completed", "cancelled", "failed")
    state_weights: tuple[float, ...] = (0.4793, 0.1506, 0.3701)
    state_tilts: tuple[float, ...] = (0.0, 0.919, -1.581)
    cpus_per_gpu: float = 6.0


@dataclass(frozen=True)
class PhillyProfile(Profile):
    """Microsoft Philly (ATC '19 trace, Sep-Dec 2017); origin 2017-09-04, the excerpt's first day.

    - GPU mix 1: 93.17 %, 2: 2.21 %, 4: 2.27 %, 8: 2.00 %, 12/24: 0.0085 %, 16: 0.24 %, 32: 0.08 %,
      64: 0.007 %, 128: 0.004 %; 15 VCs with their job shares: all from the 82,247-job excerpt
      ``pollux/simulator/traces/philly.csv``.
    - durations: a two-lognormal mixture and ``size_exponent`` fitted to that excerpt's median
      1,144 s, p90 11,265 s, p99 254,758 s, mean 13,136 s and GPU time per job 42,811 GPU-s.
    - cluster_gpus 2,816: the 352 eight-GPU nodes of Helios' QSSF Philly setup
      (``helios-artifact/philly_vc.csv``).
    - tenants: the 11 VCs of that setup with their excerpt job shares (the excerpt's 4 other VCs
      hold 18 of its 82,247 jobs and are left out); a job never asks for more than its VC's GPUs.
    - arrivals: hour-of-day shape and weekend factor 0.52 from the excerpt's submit timestamps.
    - final states: completed 60.4 / cancelled 9.0 / failed 30.5 % of jobs and 32.1 / 29.4 / 38.6 %
      of GPU time (Philly row of AcmeTrace ``cluster_summary.csv``).
    - users (60 per VC), name templates and ``cpus_per_gpu`` are assumptions.
    """

    name: str = "philly"
    origin: str = "2017-09-04"
    cluster_gpus: int = 2816
    load: float = 0.8
    classes: tuple[JobClass, ...] = (
        JobClass(
            gpu_values=(1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0, 128.0),
            gpu_probs=(0.931669, 0.022104, 0.022736, 0.019976, 0.000085, 0.002420, 0.000085, 0.000815,
                       0.000073, 0.000037),
        ),
    )
    duration: LognormalMix = LognormalMix((0.848, 0.152), (871.7, 13977.0), (0.792, 1.671))
    size_exponent: float = 0.962
    min_duration_s: float = 1.0
    max_duration_s: float = 4.63e6
    hourly: tuple[float, ...] = (
        1.274, 0.985, 1.119, 1.103, 0.700, 1.153, 1.673, 2.089, 1.109, 1.006, 1.024, 0.869,
        0.749, 0.705, 0.638, 0.649, 0.882, 0.668, 0.801, 0.728, 1.016, 0.917, 1.134, 1.010,
    )
    weekend_factor: float = 0.52
    tenants: tuple[str, ...] = (
        "6214e9", "11cb48", "6c71a0", "b436b2", "103959", "ee9e8c", "0e4a51", "ed69ec",
        "7f04ca", "2869ce", "e13805",
    )
    tenant_weights: tuple[float, ...] = tuple(
        c / 82229 for c in (41226, 16091, 9953, 7423, 1934, 1511, 1435, 1137, 723, 422, 374)
    )
    tenant_max_gpus: tuple[float, ...] | None = (512, 128, 256, 512, 64, 512, 256, 64, 256, 128, 128)
    users_per_tenant: int = 60
    user_zipf: float = 1.0
    templates_per_user: int = 8
    template_sigma: float = 0.6
    template_affinity: float = 0.6
    states: tuple[str, ...] = ("completed", "cancelled", "failed")
    state_weights: tuple[float, ...] = (0.8253, 0.0068, 0.168)
    state_tilts: tuple[float, ...] = (0.0, 4.801, 1.82)
    cpus_per_gpu: float = 6.0


# GPU models of the GFS inventory (alibaba-spot-gpu-v2026/node_info_df.csv): GPUs per model and the
# largest node of each (A10 nodes have 1 GPU; GPU-series-1 has 1-, 4- and 8-GPU nodes; the rest 8).
_GFS_TYPES = ("A100-SXM4-80GB", "A10", "H800", "GPU-series-1", "GPU-series-2", "A800-SXM4-80GB")
_GFS_TYPE_GPUS = (3456, 2494, 1752, 1558, 976, 176)


@dataclass(frozen=True)
class GfsProfile(Profile):
    """Alibaba GFS spot-GPU trace (ASPLOS '26, arXiv 2509.11134); origin 2025-06-02 is nominal.

    - classes: "hp" 83.9 % and "spot" 16.1 % of jobs; multi-worker (gang) jobs are 8.66 % of HP
      and 27.26 % of spot jobs (figures of the paper's trace table as given in the project brief;
      the table itself could not be read here). ``spot_scale`` (1, 2, 4 = low / medium / high spot
      workload) multiplies the number of spot jobs and leaves the HP jobs unchanged.
    - GPUs per worker <1 (0.5), 1, 2, 4, 8 with assumed shares (the paper reports LLM work asking
      for whole cards); gang sizes 2-32 workers, assumed.
    - gpu_type: the six models of ``node_info_df.csv`` in proportion to their GPUs (10,412 in
      all = cluster_gpus); a worker never asks for more GPUs than the model's largest node, a
      gang never for more than the model has.
    - durations: one lognormal through the paper's runtime P90 6.4 h and P99 19.8 days
      (its median, about 2 min, follows; the paper's median was not available), capped at 90 days.
    - tenants: 119 organisations (dataset README) with Zipf(1) shares; each has its own diurnal
      phase (sd 3 h), amplitude and weekend factor around the Venus daily shape (assumption).
    - final states are not in the trace: "unknown". Users and ``cpus_per_gpu`` (16 = 128 vCPUs /
      8 GPUs of an A100 node) are assumptions.
    """

    name: str = "gfs"
    origin: str = "2025-06-02"
    cluster_gpus: int = 10412
    load: float = 0.7
    classes: tuple[JobClass, ...] = (
        JobClass(
            name="hp",
            share=0.839,
            gpu_values=(0.5, 1.0, 2.0, 4.0, 8.0),
            gpu_probs=(0.15, 0.50, 0.10, 0.08, 0.17),
            per_worker=True,
            gang_share=0.0866,
        ),
        JobClass(
            name="spot",
            share=0.161,
            gpu_values=(0.5, 1.0, 2.0, 4.0, 8.0),
            gpu_probs=(0.25, 0.45, 0.10, 0.08, 0.12),
            per_worker=True,
            gang_share=0.2726,
        ),
    )
    duration: LognormalMix = LognormalMix((1.0,), (115.4,), (4.015,))
    size_exponent: float = 0.0
    min_duration_s: float = 1.0
    max_duration_s: float = 90 * 86400.0
    hourly: tuple[float, ...] = _VENUS_HOURLY
    weekend_factor: float = 0.7
    tenants: tuple[str, ...] = tuple(f"org{i:03d}" for i in range(119))
    tenant_weights: tuple[float, ...] = tuple(
        (1.0 / r) / sum(1.0 / k for k in range(1, 120)) for r in range(1, 120)
    )
    tenant_phase_sd_h: float = 3.0
    tenant_amplitude: tuple[float, float] = (0.2, 1.0)
    tenant_weekend: tuple[float, float] | None = (0.4, 1.0)
    users_per_tenant: int = 5
    user_zipf: float = 1.0
    templates_per_user: int = 3
    template_sigma: float = 1.0
    states: tuple[str, ...] = ("unknown",)
    state_weights: tuple[float, ...] = (1.0,)
    state_tilts: tuple[float, ...] = (0.0,)
    cpus_per_gpu: float = 16.0
    gpu_types: tuple[str, ...] = _GFS_TYPES
    gpu_type_weights: tuple[float, ...] = tuple(g / 10412 for g in _GFS_TYPE_GPUS)
    gpu_type_max_per_worker: tuple[float, ...] = (8.0, 1.0, 8.0, 8.0, 8.0, 8.0)
    gpu_type_total: tuple[float, ...] = tuple(map(float, _GFS_TYPE_GPUS))
    spot_scale: float = 1.0

    def class_counts(self, n_jobs: int) -> tuple[int, ...]:
        """HP and spot jobs at ``spot_scale`` 1, then the spot count multiplied by ``spot_scale``."""
        base = super().class_counts(n_jobs)
        return tuple(round(k * self.spot_scale) if c.name == "spot" else k for c, k in zip(self.classes, base))

    def load_weights(self) -> tuple[float, ...]:
        """The target load is met at ``spot_scale`` 1; extra spot jobs add load on top."""
        return tuple(1.0 / self.spot_scale if c.name == "spot" else 1.0 for c in self.classes)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.spot_scale < math.inf:
            raise ConfigError(f"profile {self.name!r}: spot_scale must be a positive finite number (got {self.spot_scale:g})")


# The GFS paper's simulation setup (§4.1): one cluster of 287 eight-GPU A100 nodes, the tasks of Table 3.
GFS_A100_TASKS = {"hp": 138_403, "spot": 26_635}  # Table 3, submitted Apr-Jun 2024
GFS_A100_DAYS = 91  # 2024-04-01 to 2024-06-30
GFS_A100_GPUS = 2296  # §4.1: 287 nodes x 8 A100
GFS_A100_GPU = "A100-SXM4-80GB"  # the A100 model name of the GFS inventory (node_info_df.csv)
_POD_GPUS = (0.5, 1.0, 2.0, 4.0, 8.0)  # Table 3 columns <1, 1, 2, 4, 8 (a "<1" pod asks for half a card)
_HP_POD_PCT = (0.11, 55.11, 13.37, 7.53, 23.69)  # Table 3, HP row (sums to 99.81 %)
_SPOT_POD_PCT = (0.82, 67.35, 5.67, 12.00, 14.04)  # Table 3, spot row (sums to 99.88 %)
_HP_GANG, _SPOT_GANG = 0.0866, 0.2726  # Table 3, "Gang: Yes"
_GANG_PODS = (2, 4, 8, 16)
_GANG_POD_PROBS = (8 / 15, 4 / 15, 2 / 15, 1 / 15)  # each doubling half as frequent (assumption)
# The calibrated profile's pods per gang task: 2, 4, ..., 128 pods, 128 being the first power of two
# above the 94 workers of the largest A100 spot job shown in the released trace's README
# (alibaba/clusterdata, cluster-trace-v2026-spot-gpu), each doubling ``ratio`` times as frequent.
_CALIBRATED_MAX_PODS = 128
# §3.2.2, Fig. 8: Cluster B (about 2,000 A100 GPUs, the nearest in size to the evaluation's 2,296)
# averages a 68.51 % GPU allocation rate; HP + spot x1 offer this much in the calibrated profile.
GFS_CLUSTER_B_ALLOCATION = 0.6851
# Table 5(a), GFS row: JCT and JQT (s). HP tasks are never evicted, so HP work = JCT - JQT; the p99
# JCT (29,304.5 s under GFS and Lyra, 29,308.5 under YARN-CS and FGD) is taken as the work's p99.
_HP_JCT, _HP_JQT, _HP_JCT_P99 = 17_777.1, 28.4, 29_304.5
_SPOT_JCT, _SPOT_JQT = 10_438.7, 323.0  # spot eviction rate 0.74 %: the redone work is neglected
_Z99 = 2.3263478740408408  # standard normal 99th percentile


def normalised(percents: tuple[float, ...]) -> tuple[float, ...]:
    """Shares summing to 1 from published percentages that do not quite (rounding, omitted sizes)."""
    total = sum(percents)
    return tuple(v / total for v in percents)


def solo_mix(values: tuple[float, ...], probs: tuple[float, ...], gang_share: float) -> tuple[float, ...]:
    """The GPUs-per-pod mix of non-gang jobs that keeps the all-job mix at ``probs``.

    Gang pods never take a fraction of a GPU (they draw ``probs`` restricted to whole GPUs), so
    the fractional share moves to the non-gang jobs: with gang share ``g`` and fractional share
    ``f``, a whole-GPU value of share ``p`` gets ``p (1 - g / (1 - f)) / (1 - g)`` among them and
    a fractional one ``p / (1 - g)``.
    """
    frac = sum(p for v, p in zip(values, probs) if v < 1)
    whole = 1.0 - gang_share / (1.0 - frac)
    if whole < 0:
        raise ConfigError(f"a gang share of {gang_share} leaves too few whole-GPU jobs for the GPU mix")
    return tuple(p / (1 - gang_share) if v < 1 else p * whole / (1 - gang_share) for v, p in zip(values, probs))


def lognormal_mean_p99(mean: float, p99: float) -> LognormalMix:
    """The lognormal with this mean and 99th percentile (the narrower of the two that have them).

    With log-sd ``s``: mean = median exp(s^2 / 2) and p99 = median exp(z s), z = 2.326, so
    ``s^2 / 2 - z s + ln(p99 / mean) = 0`` and ``s = z - sqrt(z^2 - 2 ln(p99 / mean))``.
    """
    gap = _Z99**2 - 2.0 * np.log(p99 / mean)
    if not p99 > mean or gap < 0:
        raise ConfigError(f"no lognormal has mean {mean:g} and p99 {p99:g}")
    sigma = _Z99 - float(np.sqrt(gap))
    return lognormal_mean_sigma(mean, sigma)


def lognormal_mean_sigma(mean: float, sigma: float) -> LognormalMix:
    """The lognormal with this mean and log-sd."""
    return LognormalMix((1.0,), (mean * float(np.exp(-sigma**2 / 2)),), (sigma,))


_HP_WORK = lognormal_mean_p99(_HP_JCT - _HP_JQT, _HP_JCT_P99)


_SPOT_WORK = lognormal_mean_sigma(_SPOT_JCT - _SPOT_JQT, _HP_WORK.sigmas[0])


def _gfs_a100_class(name: str, pod_pct: tuple[float, ...], gang: float, duration: LognormalMix,
                    pods: tuple[int, ...], pod_probs: tuple[float, ...]) -> JobClass:  # fmt: skip
    """One priority class of the gfs-a100 profiles: Table 3's task share, pod GPU mix and gang
    share, and a law of pods per gang task (not published)."""
    probs = normalised(pod_pct)
    return JobClass(
        name=name,
        share=GFS_A100_TASKS[name] / sum(GFS_A100_TASKS.values()),
        gpu_values=_POD_GPUS,
        gpu_probs=probs,
        solo_gpu_probs=solo_mix(_POD_GPUS, probs, gang),
        per_worker=True,
        gang_share=gang,
        worker_values=pods,
        worker_probs=pod_probs,
        duration=duration,
    )


def gfs_a100_classes(pods: tuple[int, ...], pod_probs: tuple[float, ...]) -> tuple[JobClass, JobClass]:
    """The HP and spot classes of Table 3 with this law of pods per gang task."""
    return (_gfs_a100_class("hp", _HP_POD_PCT, _HP_GANG, _HP_WORK, pods, pod_probs),
            _gfs_a100_class("spot", _SPOT_POD_PCT, _SPOT_GANG, _SPOT_WORK, pods, pod_probs))  # fmt: skip


def doubling_law(ratio: float, max_pods: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Pods 2, 4, ..., ``max_pods`` (a power of two), each doubling ``ratio`` times as frequent
    as the one before (``ratio`` 0.5 gives every gang size the same share of gang GPU time)."""
    pods = tuple(2**k for k in range(1, int(math.log2(max_pods)) + 1))
    weights = [ratio**i for i in range(len(pods))]
    return pods, tuple(w / sum(weights) for w in weights)


def mean_gpus_per_task(jc: JobClass) -> float:
    """Expected GPUs of one task of a per-worker class: non-gang tasks draw the solo mix, gang
    tasks their pods times the mix restricted to whole GPUs (as the generator draws them)."""
    values = np.asarray(jc.gpu_values, dtype=float)
    solo = np.asarray(jc.solo_gpu_probs or jc.gpu_probs)
    whole = np.where(values >= 1, jc.gpu_probs, 0.0)
    pods = float(np.dot(jc.worker_values, jc.worker_probs))
    return float((1 - jc.gang_share) * solo @ values + jc.gang_share * pods * (whole @ values) / whole.sum())


def mean_work_s(duration: LognormalMix) -> float:
    """Mean of a lognormal mixture (before the profile's clipping, which hardly binds here)."""
    return sum(w * m * math.exp(s**2 / 2) for w, m, s in zip(duration.weights, duration.medians_s, duration.sigmas))


def offered_gpus(classes: Sequence[JobClass], tasks_per_day: Mapping[str, float]) -> float:
    """Mean GPUs the classes' tasks would hold, each running from its submission: the sum over
    classes of arrival rate x mean work x mean GPUs per task (Little's law)."""
    return sum(tasks_per_day[c.name] / DAY_S * mean_work_s(c.duration or _HP_WORK) * mean_gpus_per_task(c)
               for c in classes)  # fmt: skip


def calibrated_gang_ratio(allocation: float, max_pods: int = _CALIBRATED_MAX_PODS) -> float:
    """The ``ratio`` of :func:`doubling_law` at which Table 3's HP and spot (x1) tasks offer
    ``allocation`` of the 2,296 GPUs. The offered GPUs are linear in the mean pods per gang
    task, which grows with the ratio: two laws give the line, bisection the ratio."""
    rates = {name: count / GFS_A100_DAYS for name, count in GFS_A100_TASKS.items()}
    laws = [doubling_law(r, max_pods) for r in (0.0, 1.0)]
    means = [float(np.dot(*law)) for law in laws]
    offered = [offered_gpus(gfs_a100_classes(*law), rates) for law in laws]
    pods = means[0] + (allocation * GFS_A100_GPUS - offered[0]) * (means[1] - means[0]) / (offered[1] - offered[0])
    if not means[0] <= pods <= means[1]:
        raise ConfigError(f"no doubling ratio up to {max_pods} pods offers {allocation:.2%} of the GPUs")
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.dot(*doubling_law(mid, max_pods)) < pods else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class GfsA100Profile(GfsProfile):
    """The GFS paper's simulated A100 cluster (ASPLOS '26, §4.1, Tables 3 and 5); origin 2024-04-01.

    Every number and the figure it comes from (``benchmarks/gfs_workload.py`` checks them on a
    generated trace and writes ``docs/gfs-workload.md``):

    - classes and rate: 138,403 "hp" and 26,635 "spot" tasks submitted 2024-04-01 to 06-30
      (Table 3; 91 days): ``jobs_per_day`` = 165,038 / 91, so ``n_jobs`` 165,038 is the paper's
      three months and fewer jobs keep the rate over a shorter window (20,000 jobs = 11.0 days).
      ``spot_scale`` 1 / 2 / 4 multiplies the spot jobs over the same window: the low / medium /
      high spot workloads of §4.1 ("Workloads").
    - GPUs per pod <1 / 1 / 2 / 4 / 8: HP 0.11 / 55.11 / 13.37 / 7.53 / 23.69 %, spot 0.82 / 67.35 /
      5.67 / 12.00 / 14.04 % of tasks (Table 3; renormalised, the rows sum to 99.81 and 99.88 %);
      "<1" is half a card (the value is not published).
    - gang tasks (2+ pods, all-or-nothing): 8.66 % of HP and 27.26 % of spot tasks (Table 3). Gang
      pods take whole GPUs, so the non-gang mix carries the "<1" share (:func:`solo_mix`) and the
      all-task mix stays Table 3's. Pods per gang task are not published: we take 2, 4, 8 or 16
      pods, each doubling half as frequent (8 : 4 : 2 : 1, mean 4.27), independent of the pod's
      GPUs. Data-parallel replicas come in powers of two; with this law each gang size holds the
      same share of gang GPU time, and the largest gang (16 x 8 = 128 GPUs) fits in 16 of the 287
      nodes. The HP load this implies is measured in ``docs/gfs-workload.md``.
    - HP work: the lognormal with mean 17,748.7 s and p99 29,304.5 s (log-sd 0.227). HP tasks are
      never evicted, so their work is JCT - JQT: Table 5(a), GFS row, 17,777.1 - 28.4 s; the p99 is
      the HP JCT-p99 of GFS and Lyra (queueing at the tail is not published and is ignored).
    - spot work: mean 10,115.7 s = Table 5(a) GFS spot JCT 10,438.7 - JQT 323.0 s (eviction rate
      0.74 %, so redone work is neglected); the spread is not published and is taken equal to
      HP's (log-sd 0.227).
    - organisations: the four of Observation 2 (§2, Figure 4) that share the A100 GPUs, equal
      job shares (not published). All peak from 10:00 to 24:00: a two-level daily intensity whose
      peak/off-peak ratio is each organisation's max/min GPU demand in Figure 4 (orgA 86 / 74, orgB
      90 / 67; with 5 h tasks, shorter than either phase, occupancy follows the arrival rate, so the
      demand range bounds the arrival ratio). orgC has the 35.7 % weekend drop (weekend factor
      0.643); orgA has none. orgC's and orgD's daily ratio, and orgB's and orgD's weekend, are not
      published: the mean of orgA and orgB's ratios, and no weekend drop.
    - checkpoints: the paper gives no interval, so ``checkpoint_interval_s`` is left empty and the
      engine's ``--checkpoint-interval-s`` (default 1,800 s) applies.
    - ``resident_days`` (default 0): HP tasks submitted over that many days before the window,
      at the same rates, so the window opens on a loaded cluster and a trained forecaster, as in
      the authors' simulator, which runs the HP tasks of the months before its scored window. Their
      class is ``hp-resident``: they load the cluster and count as HP demand, and the ``hp``
      metrics leave them out. The window's tasks are the same as without them, ``resident_days``
      later.
    - one GPU type (``A100-SXM4-80GB``, the GFS inventory's name); 16 CPUs per GPU (an A100 node's
      128 vCPUs / 8) and 5 users with 3 name templates per organisation are assumptions; durations
      do not depend on the template or the GPU count (nothing published). Final state "unknown".
    """

    name: str = "gfs-a100"
    origin: str = "2024-04-01"
    cluster_gpus: int = GFS_A100_GPUS
    jobs_per_day: float | None = sum(GFS_A100_TASKS.values()) / GFS_A100_DAYS
    classes: tuple[JobClass, ...] = gfs_a100_classes(_GANG_PODS, _GANG_POD_PROBS)
    duration: LognormalMix = _HP_WORK
    max_duration_s: float = 7 * 86400.0
    tenants: tuple[str, ...] = ("orgA", "orgB", "orgC", "orgD")
    tenant_weights: tuple[float, ...] = (0.25, 0.25, 0.25, 0.25)
    # The shared daily shape and random per-tenant variations of the base profile are not used:
    # ``tenant_patterns`` builds each organisation's week from the three fields below.
    hourly: tuple[float, ...] = (1.0,) * 24
    weekend_factor: float = 1.0
    tenant_phase_sd_h: float = 0.0
    tenant_amplitude: tuple[float, float] = (1.0, 1.0)
    tenant_weekend: tuple[float, float] | None = None
    peak_hours: tuple[int, int] = (10, 24)  # Observation 2: every organisation peaks from 10:00 to 24:00
    org_peak_ratio: tuple[float, ...] = (86 / 74, 90 / 67, (86 / 74 + 90 / 67) / 2, (86 / 74 + 90 / 67) / 2)
    org_weekend: tuple[float, ...] = (1.0, 1.0, 1 - 0.357, 1.0)
    users_per_tenant: int = 5
    templates_per_user: int = 3
    template_sigma: float = 0.0
    gpu_types: tuple[str, ...] = (GFS_A100_GPU,)
    gpu_type_weights: tuple[float, ...] = (1.0,)
    gpu_type_max_per_worker: tuple[float, ...] = (8.0,)
    gpu_type_total: tuple[float, ...] = (float(GFS_A100_GPUS),)
    resident_days: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.resident_days < math.inf:
            raise ConfigError(f"profile {self.name!r}: resident_days must be a finite number >= 0 (got {self.resident_days:g})")
        n_t = len(self.tenants)
        if len(self.org_peak_ratio) != n_t or len(self.org_weekend) != n_t:
            raise ConfigError(f"profile {self.name!r}: org_peak_ratio and org_weekend need one value per tenant")
        if min(self.org_peak_ratio) <= 0 or min(self.org_weekend) <= 0:
            raise ConfigError(f"profile {self.name!r}: org_peak_ratio and org_weekend must be positive")
        start, end = self.peak_hours
        if not 0 <= start < end <= 24:
            raise ConfigError(f"profile {self.name!r}: peak_hours must be (start, end) with 0 <= start < end <= 24")

    def tenant_patterns(self, rng: np.random.Generator, origin: datetime) -> np.ndarray:
        """Each organisation's two-level day (``org_peak_ratio`` inside ``peak_hours``) times its
        weekend factor on Saturday and Sunday; deterministic (``rng`` is not used)."""
        if origin != _whole_hour(origin):
            raise ConfigError(f"profile {self.name!r}: origin must fall on a whole hour (got {self.origin})")
        hours = np.arange(WEEK_H) + origin.weekday() * 24 + origin.hour  # hours since a Monday 00:00
        start, end = self.peak_hours
        peak = ((hours % 24) >= start) & ((hours % 24) < end)
        weekend = (hours % WEEK_H) >= 120
        ratio = np.asarray(self.org_peak_ratio)[:, None]
        weekend_factor = np.asarray(self.org_weekend)[:, None]
        rate = np.where(peak[None, :], ratio, 1.0) * np.where(weekend[None, :], weekend_factor, 1.0)
        relative: np.ndarray = rate / rate.mean(axis=1, keepdims=True)
        return relative


PROFILES: Mapping[str, Profile | HadarProfile] = MappingProxyType(
    {
        "simple": Profile(),
        "uniform": Profile(),
        "venus": VenusProfile(),
        "helios": VenusProfile(),
        "philly": PhillyProfile(),
        "gfs": GfsProfile(),
        "gfs-a100": GfsA100Profile(),
        "gfs-a100-calibrated": GfsA100Profile(
            name="gfs-a100-calibrated",
            classes=gfs_a100_classes(*doubling_law(calibrated_gang_ratio(GFS_CLUSTER_B_ALLOCATION), _CALIBRATED_MAX_PODS)),
        ),
        "hadar": HadarProfile(),
        "hadar-uniform": HadarProfile(name="hadar-uniform", reading="uniform"),
    }
)


def generate(
    profile: str,
    n_jobs: int,
    *,
    seed: int,
    cluster_gpus: int | None = None,
    load: float | None = None,
    **overrides: object,
) -> Workload:
    """Generate ``n_jobs`` jobs of a named profile; the same arguments give the same jobs.

    ``cluster_gpus`` and ``load`` set the target offered load; ``overrides`` replace any other
    profile field (e.g. ``spot_scale=2`` for ``gfs``). For ``gfs`` and ``gfs-a100`` ``n_jobs``
    counts the jobs at ``spot_scale`` 1. A profile with ``jobs_per_day`` (``gfs-a100``) has a
    fixed arrival rate instead of a target load: its window is ``n_jobs / jobs_per_day`` days and
    ``load`` is refused. Job ids are ``"<profile>-<i>"`` in submit order.
    """
    base = PROFILES.get(profile)
    if base is None:
        raise ConfigError(f"unknown workload profile {profile!r}; known: {sorted(PROFILES)}")
    if isinstance(base, HadarProfile):
        if load is not None:
            raise ConfigError(f"profile {profile!r} submits every job at time 0: a load does not apply")
        return generate_hadar(n_jobs, seed=seed, profile=_replaced(base, overrides))
    params = _resolve(base, cluster_gpus, load, overrides)
    if n_jobs < 1:
        raise ConfigError(f"n_jobs must be at least 1 (got {n_jobs})")
    if params.jobs_per_day is not None and load is not None:
        raise ConfigError(f"profile {profile!r} has a fixed arrival rate ({params.jobs_per_day:,.1f} jobs a day); "
                          "a target load does not apply (scale the arrivals instead)")  # fmt: skip
    rng = np.random.default_rng(seed)
    shared_rng, *class_rngs = rng.spawn(1 + len(params.classes))
    origin = _parse_origin(params)
    patterns = params.tenant_patterns(shared_rng, origin)
    n_keys = _n_template_keys(params)
    templates = (
        shared_rng.normal(0.0, params.template_sigma, n_keys),
        _categorical(shared_rng, params.duration.weights, n_keys),
    )
    counts = params.class_counts(n_jobs)
    parts = [
        _class_jobs(r, params, ci, k, templates) for ci, (r, k) in enumerate(zip(class_rngs, counts))
    ]
    if params.jobs_per_day is not None:
        span_s = n_jobs / params.jobs_per_day * DAY_S
    else:
        weights = params.load_weights()
        base_work = sum(w * float(np.sum(p["num_gpus"] * p["duration_s"])) for w, p in zip(weights, parts))
        span_s = base_work / (params.load * params.cluster_gpus)
    for r, p in zip(class_rngs, parts):
        p["submit_s"] = _arrival_times(r, p["tenant"], patterns, span_s)
    jobs = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    jobs["state"] = _final_states(shared_rng, params, jobs["num_gpus"] * jobs["duration_s"])
    work = float(np.sum(jobs["num_gpus"] * jobs["duration_s"]))
    class_names = [c.name for c in params.classes]
    resident_s = params.resident_days * DAY_S if isinstance(params, GfsA100Profile) else 0.0
    if resident_s > 0:
        origin -= timedelta(seconds=resident_s)
        residents = _residents(rng.spawn(1)[0], params, origin, resident_s, counts[0] / span_s, templates)
        jobs["submit_s"] = jobs["submit_s"] + resident_s
        jobs = {key: np.concatenate([residents[key], jobs[key]]) for key in jobs}
        class_names.append(RESIDENT)
    columns = _columns(params, jobs, class_names)
    meta: dict[str, Any] = {
        "generator": "schedlab.workload.synthetic",
        "profile": params.name,
        "seed": seed,
        "n_jobs": len(columns["source_row"]),
        "class_counts": dict(zip(class_names, np.bincount(jobs["class"], minlength=len(class_names)).tolist())),
        "cluster_gpus": params.cluster_gpus,
        "load": params.load,
        "span_s": span_s,
        "offered_load": work / (params.cluster_gpus * span_s) if span_s > 0 else float("nan"),
        "params": dataclasses.asdict(params),
    }
    if resident_s > 0:
        meta["window_start_s"] = resident_s  # offered_load and span_s are the window's
    return Workload(columns=columns, source=f"synthetic:{params.name}", origin=origin, meta=meta)


def _resolve(base: Profile, cluster_gpus: int | None, load: float | None, overrides: dict[str, object]) -> Profile:
    changes = dict(overrides)
    if cluster_gpus is not None:
        changes["cluster_gpus"] = cluster_gpus
    if load is not None:
        changes["load"] = load
    return _replaced(base, changes)


_P = TypeVar("_P", Profile, HadarProfile)


def _replaced(base: _P, changes: Mapping[str, Any]) -> _P:
    """``base`` with ``changes``; an unknown field is a :class:`ConfigError`."""
    known = {f.name for f in dataclasses.fields(base)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise ConfigError(f"profile {base.name!r} has no parameter {unknown[0]!r}; parameters: {sorted(known)}")
    return dataclasses.replace(base, **changes)


def _class_jobs(
    rng: np.random.Generator, p: Profile, class_index: int, n: int, templates: tuple[np.ndarray, np.ndarray]
) -> dict[str, np.ndarray]:
    """Tenant, user, template, shape and duration of the ``n`` jobs of one class.

    ``templates`` holds, per template key, the log duration factor and the preferred mixture
    component (taken with probability ``template_affinity``; the mixture weights are kept).
    """
    jc = p.classes[class_index]
    num_gpus, per_worker, gpu_type = _shapes(rng, p, jc, n)
    tenant = _tenants_that_fit(rng, p, num_gpus)
    user = tenant * p.users_per_tenant + _categorical(rng, _zipf(p.users_per_tenant, p.user_zipf), n)
    template = _categorical(rng, _zipf(p.templates_per_user, 1.0), n)
    key = _template_key(p, user, template, num_gpus)
    effect, preferred = templates
    mix = jc.duration or p.duration
    comp = np.where(rng.random(n) < p.template_affinity, preferred[key], _categorical(rng, mix.weights, n))
    base = mix.sample(rng, comp) * np.exp(effect[key])
    duration = np.clip(base * np.maximum(num_gpus, 1.0) ** p.size_exponent, p.min_duration_s, p.max_duration_s)
    return {
        "tenant": tenant,
        "user": user,
        "template": key,
        "num_gpus": num_gpus,
        "gpus_per_worker": per_worker,
        "gpu_type": gpu_type,
        "duration_s": np.round(duration, 3),
        "class": np.full(n, class_index),
    }


def _tenants_that_fit(rng: np.random.Generator, p: Profile, num_gpus: np.ndarray) -> np.ndarray:
    """Tenant of each job by the tenant shares; with ``tenant_max_gpus`` a job is drawn only
    among the tenants whose VC can hold it (big jobs go to big VCs; the GPU mix is kept).
    With ``tenant_balance == "gpu_time"`` the draw for each job size is a row of :func:`_tenant_table`."""
    if p.tenant_balance == "gpu_time":
        tenant = np.empty(num_gpus.size, dtype=int)
        sizes, inverse = np.unique(num_gpus, return_inverse=True)
        table = _tenant_table(p, sizes)
        for i in range(sizes.size):
            rows = np.flatnonzero(inverse == i)
            tenant[rows] = _categorical(rng, table[i], rows.size)
        return tenant
    tenant = _categorical(rng, p.tenant_weights, num_gpus.size)
    if p.tenant_max_gpus is None:
        return tenant
    caps = np.asarray(p.tenant_max_gpus, dtype=float)
    weights = np.asarray(p.tenant_weights, dtype=float)
    for size in np.unique(num_gpus[num_gpus > caps[tenant]]):
        rows = np.flatnonzero((num_gpus == size) & (caps[tenant] < size))
        allowed = np.where(caps >= size, weights, 0.0)
        if allowed.sum() == 0:
            raise ConfigError(f"profile {p.name!r}: no tenant can hold a {size:g}-GPU job")
        tenant[rows] = _categorical(rng, tuple(allowed / allowed.sum()), rows.size)
    return tenant


def _tenant_table(p: Profile, sizes: np.ndarray, rounds: int = 200) -> np.ndarray:
    """P(tenant | job size) so that each tenant's expected share of GPU time is its weight.

    A job of g GPUs goes to tenant v with probability proportional to ``a_v`` among the tenants
    whose cap is at least g; the ``a_v`` are scaled by iterative proportional fitting until
    sum_g P(g) E[GPU time | g] P(v | g) is proportional to ``tenant_weights`` (the VC sizes).
    E[GPU time | g] is proportional to g ** (1 + size_exponent): the other duration factors do not
    depend on the size. Over all classes, P(g) is the class-share-weighted GPU mix (``sizes``
    outside that mix keep weight 0 in the fit and still get a row)."""
    caps = np.asarray(p.tenant_max_gpus, dtype=float)
    target = np.asarray(p.tenant_weights, dtype=float)
    fits = sizes[:, None] <= caps[None, :]
    if not fits.any(axis=1).all():
        raise ConfigError(f"profile {p.name!r}: no tenant can hold a {sizes[~fits.any(axis=1)][0]:g}-GPU job")
    mass = np.zeros(sizes.size)
    for c in p.classes:
        for g, prob in zip(c.gpu_values, c.gpu_probs):
            mass[sizes == g] += c.share * prob * max(g, 1.0) ** (1.0 + p.size_exponent)
    scale = np.ones(caps.size)
    for _ in range(rounds):
        table = fits * scale[None, :]
        table = table / table.sum(axis=1, keepdims=True)
        demand = mass @ table
        scale *= np.where(demand > 0, target / np.maximum(demand / demand.sum(), 1e-300), 1.0)
        scale /= scale.max()
    table = fits * scale[None, :]
    shares: np.ndarray = table / table.sum(axis=1, keepdims=True)
    return shares


def _shapes(rng: np.random.Generator, p: Profile, jc: JobClass, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Total GPUs, GPUs per worker (NaN unless per-worker) and GPU-type index (-1 = any)."""
    if p.gpu_types:
        gpu_type = _categorical(rng, p.gpu_type_weights, n)
        node_max = np.asarray(p.gpu_type_max_per_worker, dtype=float)[gpu_type]
    else:
        gpu_type = np.full(n, -1)
        node_max = np.full(n, np.inf)
    values = np.asarray(jc.gpu_values, dtype=float)
    if not jc.per_worker:
        return values[_categorical(rng, jc.gpu_probs, n)], np.full(n, np.nan), gpu_type
    gang = rng.random(n) < jc.gang_share
    per_worker = np.empty(n)
    for limit in np.unique(node_max):
        for is_gang in (False, True):
            rows = np.flatnonzero((node_max == limit) & (gang == is_gang))
            allowed = (values <= limit) & ((values >= 1.0) | (not is_gang))
            mix = jc.gpu_probs if is_gang or jc.solo_gpu_probs is None else jc.solo_gpu_probs
            probs = np.where(allowed, mix, 0.0)
            if rows.size and probs.sum() == 0:
                raise ConfigError(f"class {jc.name!r}: no GPUs-per-worker value fits nodes of {limit:g} GPUs")
            if rows.size:
                per_worker[rows] = values[_categorical(rng, tuple(probs / probs.sum()), rows.size)]
    workers = np.where(gang, np.asarray(jc.worker_values)[_categorical(rng, jc.worker_probs, n)], 1)
    if p.gpu_type_total:  # a gang never asks for more GPUs than its model has
        room = np.floor(np.asarray(p.gpu_type_total, dtype=float)[gpu_type] / per_worker)
        workers = np.minimum(workers, np.maximum(room, 1))
    return workers * per_worker, per_worker, gpu_type


def _n_template_keys(p: Profile) -> int:
    return len(p.tenants) * p.users_per_tenant * p.templates_per_user * _N_SIZE_CLASSES


_N_SIZE_CLASSES = 16  # GPU-count classes 2**-3 .. 2**12 that split a user's template by job size


def _template_key(p: Profile, user: np.ndarray, template: np.ndarray, num_gpus: np.ndarray) -> np.ndarray:
    """One key per (user, template, GPU-count class): jobs sharing it share a name and a duration factor."""
    size_class = np.clip(np.floor(np.log2(num_gpus)).astype(int) + 3, 0, _N_SIZE_CLASSES - 1)
    key: np.ndarray = (user * p.templates_per_user + template) * _N_SIZE_CLASSES + size_class
    return key


def _tenant_patterns(rng: np.random.Generator, p: Profile, origin: datetime) -> np.ndarray:
    """Arrival intensity of every tenant over the 168 hours of a week starting at ``origin``.

    Rows are normalised to mean 1 (a tenant's job count is set by its share, its timing by the row).
    """
    if origin != _whole_hour(origin):
        raise ConfigError(f"profile {p.name!r}: origin must fall on a whole hour (got {p.origin})")
    n_t = len(p.tenants)
    shape = np.asarray(p.hourly, dtype=float) / np.mean(p.hourly)
    phase = np.rint(rng.normal(0.0, p.tenant_phase_sd_h, n_t)).astype(int) if p.tenant_phase_sd_h > 0 else np.zeros(n_t, int)
    amplitude = rng.uniform(*p.tenant_amplitude, n_t)
    lo, hi = p.tenant_weekend if p.tenant_weekend is not None else (p.weekend_factor, p.weekend_factor)
    weekend = rng.uniform(lo, hi, n_t)
    hours = np.arange(WEEK_H) + origin.weekday() * 24 + origin.hour  # hours since a Monday 00:00
    daily = shape[(hours[None, :] - phase[:, None]) % 24]
    rate = (1.0 + amplitude[:, None] * (daily - 1.0)) * np.where((hours % WEEK_H) >= 120, weekend[:, None], 1.0)
    relative: np.ndarray = rate / rate.mean(axis=1, keepdims=True)
    return relative


def _arrival_times(rng: np.random.Generator, tenant: np.ndarray, patterns: np.ndarray, span_s: float) -> np.ndarray:
    """Submit times in [0, span_s): each job's tenant process, conditioned on the job count.

    Given the count, the points of a Poisson process are i.i.d. with density proportional to the
    intensity; they are drawn by inverting the cumulative intensity (piecewise linear by hour).
    """
    n_t = patterns.shape[0]
    cum = np.concatenate([np.zeros((n_t, 1)), np.cumsum(patterns, axis=1)], axis=1)  # in rate-hours
    per_week = cum[:, -1]
    span_h = span_s / HOUR_S
    full_weeks, rest_h = divmod(span_h, WEEK_H)
    grid = np.arange(WEEK_H + 1, dtype=float)
    total = full_weeks * per_week + np.array([np.interp(rest_h, grid, row) for row in cum])
    u = rng.random(tenant.size) * total[tenant]
    weeks = np.floor(u / per_week[tenant])
    frac = np.minimum((u - weeks * per_week[tenant]) / per_week[tenant], np.nextafter(1.0, 0.0))
    flat = (cum / per_week[:, None] + np.arange(n_t)[:, None]).ravel()
    pos = np.clip(np.searchsorted(flat, frac + tenant, side="right") - 1, 0, flat.size - 2)
    slot = pos - tenant * (WEEK_H + 1)
    inside = (frac + tenant - flat[pos]) / (flat[pos + 1] - flat[pos])
    hours = weeks * WEEK_H + slot + inside
    return np.minimum(hours * HOUR_S, np.nextafter(span_s, 0.0)) if span_s > 0 else np.zeros(tenant.size)


def _final_states(rng: np.random.Generator, p: Profile, gpu_time: np.ndarray) -> np.ndarray:
    """State index per job: odds ``state_weights * exp(state_tilts * q)``, q = GPU-time quantile."""
    n = gpu_time.size
    q = np.empty(n)
    q[np.argsort(gpu_time, kind="stable")] = (np.arange(n) + 0.5) / n
    odds = np.asarray(p.state_weights)[None, :] * np.exp(np.asarray(p.state_tilts)[None, :] * q[:, None])
    cum = np.cumsum(odds, axis=1)
    u = rng.random(n) * cum[:, -1]
    states: np.ndarray = np.minimum((cum < u[:, None]).sum(axis=1), len(p.states) - 1)
    return states


RESIDENT = "hp-resident"  # the class of the HP tasks submitted before the window (``resident_days``)


def _residents(rng: np.random.Generator, p: Profile, origin: datetime, span_s: float, rate_per_s: float,
               templates: tuple[np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:  # fmt: skip
    """HP tasks over the ``span_s`` before the window at the window's HP rate (the first class),
    each organisation's week read from the earlier ``origin``; class index = one past the profile's."""
    n = round(rate_per_s * span_s)
    jobs = _class_jobs(rng, p, 0, n, templates)
    jobs["submit_s"] = _arrival_times(rng, jobs["tenant"], p.tenant_patterns(rng, origin), span_s)
    jobs["class"] = np.full(n, len(p.classes))
    jobs["state"] = _final_states(rng, p, jobs["num_gpus"] * jobs["duration_s"])
    return jobs


def _parse_origin(p: Profile) -> datetime:
    """The profile's ``origin`` as a date and time (ISO 8601, e.g. ``2024-01-01`` or ``2024-01-01 08:00``)."""
    try:
        return datetime.fromisoformat(p.origin)
    except (TypeError, ValueError):
        raise ConfigError(f"profile {p.name!r}: origin must be an ISO date or date and time (got {p.origin!r})") from None


def _whole_hour(when: datetime) -> datetime:
    return when.replace(minute=0, second=0, microsecond=0)


def _columns(p: Profile, jobs: dict[str, np.ndarray], class_names: Sequence[str]) -> dict[str, Any]:
    """The canonical columns (all of them, canonical dtypes) in submit order, with ids and names."""
    order = np.argsort(jobs["submit_s"], kind="stable")
    jobs = {k: v[order] for k, v in jobs.items()}
    n = order.size
    users = [f"{t}/u{u:02d}" for t in p.tenants for u in range(p.users_per_tenant)]
    nan = np.full(n, np.nan)
    columns: dict[str, object] = {
        "job_id": _numbered(arrow.repeat(f"{p.name}-", n), np.arange(n)),
        "submit_s": jobs["submit_s"],
        "user": _take(users, jobs["user"]),
        "tenant": _take(p.tenants, jobs["tenant"]),
        "name": _names(jobs["template"]),
        "num_gpus": jobs["num_gpus"],
        "gpus_per_worker": jobs["gpus_per_worker"],
        "gpu_type": _take([*p.gpu_types, ""], jobs["gpu_type"] % (len(p.gpu_types) + 1)),
        "duration_s": jobs["duration_s"],
        "priority_class": _take(list(class_names), jobs["class"]),
        "num_cpus": np.maximum(1.0, np.ceil(jobs["num_gpus"] * p.cpus_per_gpu)),
        "checkpoint_interval_s": nan,
        "model": _take([""], np.zeros(n, dtype=int)),
        "batch_size": nan,
        "final_state": _take(p.states, jobs["state"]),
        "deadline_s": nan,
        "queue_s": nan,
        "gpu_mem_gib": nan,
        "time_limit_s": nan,
        "source_row": np.arange(1, n + 1),
    }
    return canonical_columns(columns, source=f"synthetic:{p.name}")


def _names(template: np.ndarray) -> pa.Array:
    """``<model>_<stage>_v<k>-<seq>``: a fixed stem per template key and a running number within it."""
    keys, inverse = np.unique(template, return_inverse=True)
    mixed = (keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)  # Fibonacci hashing
    words, stages = len(_NAME_WORDS), len(_NAME_STAGES)
    stems = [
        f"{_NAME_WORDS[h % words]}_{_NAME_STAGES[h // words % stages]}_v{h // (words * stages) % 10}-"
        for h in mixed.tolist()
    ]
    order = np.argsort(inverse, kind="stable")
    sorted_keys = inverse[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, sorted_keys.size]))
    seq = np.empty(template.size, dtype=np.int64)
    seq[order] = np.arange(template.size) - run_start
    return _numbered(arrow.take(arrow.text(stems), inverse), seq)


def _numbered(prefixes: pa.Array, numbers: np.ndarray) -> pa.Array:
    """Element-wise ``prefix + str(number)`` as an Arrow ``large_string`` array."""
    text = arrow.as_text(arrow.from_numpy(numbers.astype(np.int64)))
    return arrow.call("binary_join_element_wise", prefixes, text, arrow.repeat("", len(text)))


def _take(values: Sequence[str], index: np.ndarray) -> pa.Array:
    """``values[index]`` as an Arrow ``large_string`` array (cheap for a small vocabulary)."""
    return arrow.take(arrow.text(list(values)), index)


def _categorical(rng: np.random.Generator, probs: tuple[float, ...] | np.ndarray, n: int) -> np.ndarray:
    """``n`` draws of an index with the given probabilities (inverse CDF on uniforms)."""
    cum = np.cumsum(np.asarray(probs, dtype=float))
    return np.minimum(np.searchsorted(cum / cum[-1], rng.random(n), side="right"), cum.size - 1)


def _zipf(n: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, n + 1, dtype=float) ** -exponent
    probs: np.ndarray = weights / weights.sum()
    return probs


def _apportion(n: int, shares: tuple[float, ...]) -> tuple[int, ...]:
    """Split ``n`` by ``shares`` into integers summing to ``n`` (largest remainders)."""
    exact = np.asarray(shares, dtype=float) * n
    counts = np.floor(exact).astype(int)
    counts[np.argsort(counts - exact, kind="stable")[: n - counts.sum()]] += 1
    return tuple(int(c) for c in counts)
