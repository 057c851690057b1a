"""The Hadar §IV-A synthetic workload: Philly-shaped jobs tagged with the Table II models.

How a job is made (Hadar §IV-A, Table II):

1. its size category uniformly among Small (0-1 GPU-hours), Medium (1-10), Large (10-50) and
   XLarge (60-100), "uniformly sampled the job type from these categories";
2. its model from Table II for that category: S ResNet-18 (CIFAR-10), M CycleGAN (Monet2photo),
   L LSTM (Wikitext-2) or Transformer (Multi30k) with equal odds, XL ResNet-50 (ImageNet);
   the ``model`` column holds the Gavel job type whose throughputs the engine uses
   (:data:`schedlab.sim.throughputs.HADAR_MODELS`);
3. its GPU count and duration from a row of Gavel's Philly job distribution
   (``philly_job_distribution.csv``: duration, GPUs) drawn uniformly among the rows whose GPU-hours
   fall in the category; the duration is the job's run time on a V100 (Gavel's reference type);
4. every job is submitted at time 0 ("all jobs were available at the beginning").

Deviations, stated: the trace's busiest-hours window (hours 3-10) cannot be applied, because the
distribution file has no submit times. The file holds no job under one GPU-hour (its shortest job
runs one hour), so a Small job takes its GPU count from the whole file and its GPU-hours uniform on
(0, 1]. Jobs are not typed: any job may run on any GPU type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError, InputError
from schedlab.workload.schema import Workload, canonical_frame

DEFAULT_DISTRIBUTION = "../shared/data/gavel/philly_job_distribution.csv"

# category -> (GPU-hours low, high, Table II models as (name, Gavel job type))
CATEGORIES = (
    ("S", 0.0, 1.0, (("ResNet-18", "ResNet-18 (batch size 64)"),)),
    ("M", 1.0, 10.0, (("CycleGAN", "CycleGAN"),)),
    ("L", 10.0, 50.0, (("LSTM", "LM (batch size 20)"), ("Transformer", "Transformer (batch size 64)"))),
    ("XL", 60.0, 100.0, (("ResNet-50", "ResNet-50 (batch size 64)"),)),
)


@dataclass(frozen=True)
class HadarProfile:
    """Hadar §IV-A workload; ``distribution_csv`` is Gavel's Philly (duration_s, num_gpus) file,
    relative to the working directory unless absolute."""

    name: str = "hadar"
    distribution_csv: str = DEFAULT_DISTRIBUTION
    default_jobs: int = 480


def read_distribution(path: str | Path) -> pd.DataFrame:
    """The (duration_s, num_gpus) rows of Gavel's Philly job distribution, checked."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"profile 'hadar' draws jobs from Gavel's Philly job distribution, not found at '{path}' "
            "(relative to the working directory; pass distribution_csv=PATH)"
        )
    frame = pd.read_csv(path)
    for col in ("duration_s", "num_gpus"):
        if col not in frame.columns:
            raise InputError("required column is missing", file=str(path), field=col)
        bad = ~(frame[col].to_numpy(dtype=float) > 0)
        if bad.any():
            raise InputError(f"{col} must be positive", file=str(path), row=int(np.flatnonzero(bad)[0]) + 2, field=col)
    return frame


def generate_hadar(n_jobs: int, *, seed: int, profile: HadarProfile = HadarProfile()) -> Workload:
    """``n_jobs`` jobs of the Hadar §IV-A workload, all submitted at 0."""
    if n_jobs < 1:
        raise ConfigError(f"n_jobs must be at least 1 (got {n_jobs})")
    dist = read_distribution(profile.distribution_csv)
    duration = dist["duration_s"].to_numpy(dtype=float)
    gpus = dist["num_gpus"].to_numpy(dtype=float)
    gpu_hours = duration * gpus / 3600.0
    rng = np.random.default_rng(seed)
    category = rng.integers(0, len(CATEGORIES), n_jobs)
    out_gpus = np.empty(n_jobs)
    out_duration = np.empty(n_jobs)
    names: list[str] = [""] * n_jobs
    models: list[str] = [""] * n_jobs
    cats: list[str] = [""] * n_jobs
    for ci, (cat, lo, hi, choices) in enumerate(CATEGORIES):
        idx = np.flatnonzero(category == ci)
        if idx.size == 0:
            continue
        rows = np.flatnonzero((gpu_hours > lo) & (gpu_hours <= hi)) if lo > 0 else np.empty(0, dtype=int)
        if rows.size:
            pick = rows[rng.integers(0, rows.size, idx.size)]
            out_gpus[idx] = gpus[pick]
            out_duration[idx] = duration[pick]
        else:  # no row in range (Small): GPU count from the whole file, GPU-hours uniform on (lo, hi]
            g = gpus[rng.integers(0, gpus.size, idx.size)]
            out_gpus[idx] = g
            out_duration[idx] = (hi - (hi - lo) * rng.random(idx.size)) * 3600.0 / g
        which = rng.integers(0, len(choices), idx.size)
        for i, w in zip(idx.tolist(), which.tolist()):
            names[i], models[i] = choices[w]
            cats[i] = cat
    frame = pd.DataFrame({
        "job_id": [f"hadar-{i}" for i in range(n_jobs)],
        "submit_s": np.zeros(n_jobs),
        "num_gpus": out_gpus,
        "duration_s": out_duration,
        "name": names,
        "model": models,
        "priority_class": cats,
        "final_state": "completed",
    })  # fmt: skip
    source = "synthetic:hadar"
    meta = {"generator": "schedlab.workload.hadar", "profile": "hadar", "seed": seed, "n_jobs": n_jobs,
            "distribution_csv": str(profile.distribution_csv),
            "class_counts": {c[0]: int((category == i).sum()) for i, c in enumerate(CATEGORIES)}}  # fmt: skip
    origin = pd.Timestamp("2017-10-01")  # the Philly trace's period; the distribution file has no dates
    return Workload(jobs=canonical_frame(frame, source=source), source=source, origin=origin, meta=meta)
