"""The Hadar §IV-A synthetic workload: Philly jobs tagged with the Table II models.

§IV-A: "we randomly selected 480 jobs from the busiest hour range (hours 3-10) of the Microsoft
trace ... we categorized the jobs based on their total GPU required time into four groups: Small
(0-1 GPU-hours), Medium (1-10), Large (10-50), and XLarge (60-100). For each training job in the
trace, we uniformly sampled the job type from these categories and specified its model and
dataset accordingly". Table II gives the models: S ResNet-18 (CIFAR-10), M CycleGAN
(Monet2photo), L LSTM (Wikitext-2) or Transformer (Multi30k), XL ResNet-50 (ImageNet); the
``model`` column holds the Gavel job type whose throughputs the engine uses
(:data:`schedlab.sim.throughputs.HADAR_MODELS`). Every job is submitted at time 0 ("all jobs
were available at the beginning"). The sentence reads two ways; both are built:

``reading="trace"`` (profile ``hadar``, the default)
    Each job is a Philly job that keeps its own GPU count and duration (its run time on a V100,
    Gavel's reference type); its GPU-hours give its category ("categorized the jobs based on
    their total GPU required time"), and the category only picks its model (uniformly among the
    category's Table II models). The jobs are drawn uniformly, without replacement, among the
    jobs of Pollux's Philly excerpt (``philly.csv``, which has submit times) submitted in hours
    3-10 of the day (the 8-hour range 03:00-10:59), whose GPU-hours fall in a category and whose
    GPU count the Table II throughputs measure (1, 2, 4 or 8, as in Gavel's Philly distribution).
    480 such jobs hold about a thousand V100 GPU-hours: the scale of the paper's 40 h on 60 GPUs.

``reading="uniform"`` (profile ``hadar-uniform``)
    Each job's category is drawn uniformly among the four ("uniformly sampled the job type from
    these categories"), its model from the category, and its GPU count and duration from a row of
    Gavel's Philly job distribution (``philly_job_distribution.csv``: duration, GPUs) drawn
    uniformly among the rows whose GPU-hours fall in the category. The distribution file has no
    submit times, so the busiest-hours window cannot be applied, and no job under one GPU-hour
    (its shortest job runs one hour), so a Small job takes its GPU count from the whole file and
    its GPU-hours uniform on (0, 1]. Three quarters of the GPU-hours are then XL jobs, about
    14,000 V100 GPU-hours for 480 jobs: no scheduler can finish them in the paper's 40 h on 60
    GPUs (see :func:`schedlab.sim.bounds.fluid_makespan_bound`).

The trace reading is the default because only it gives the paper's scale. Jobs are not typed:
any job may run on any GPU type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from schedlab.errors import ConfigError, InputError
from schedlab.workload.schema import Workload, canonical_frame

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_DISTRIBUTION = "../shared/data/gavel/philly_job_distribution.csv"
DEFAULT_TRACE = "../shared/data/pollux/simulator/traces/philly.csv"
READINGS = ("trace", "uniform")
MEASURED_GPUS = (1, 2, 4, 8)  # the scale factors Gavel measured for the Table II models

# category -> (GPU-hours low, high, Table II models as (name, Gavel job type))
CATEGORIES = (
    ("S", 0.0, 1.0, (("ResNet-18", "ResNet-18 (batch size 64)"),)),
    ("M", 1.0, 10.0, (("CycleGAN", "CycleGAN"),)),
    ("L", 10.0, 50.0, (("LSTM", "LM (batch size 20)"), ("Transformer", "Transformer (batch size 64)"))),
    ("XL", 60.0, 100.0, (("ResNet-50", "ResNet-50 (batch size 64)"),)),
)


@dataclass(frozen=True)
class HadarProfile:
    """Hadar §IV-A workload: Philly jobs at time 0 tagged with the Table II models by GPU-hours.

    ``reading`` is ``trace`` (jobs keep their GPU-hours, drawn from ``trace_csv``, Pollux's Philly
    excerpt, in hours ``busy_hours`` of the day) or ``uniform`` (category drawn uniformly, GPU-hours
    from ``distribution_csv``, Gavel's Philly distribution); paths are relative to the working
    directory unless absolute."""

    name: str = "hadar"
    reading: str = "trace"
    trace_csv: str = DEFAULT_TRACE
    busy_hours: tuple[int, int] = (3, 10)
    distribution_csv: str = DEFAULT_DISTRIBUTION
    default_jobs: int = 480


def read_distribution(path: str | Path) -> pd.DataFrame:
    """The (duration_s, num_gpus) rows of Gavel's Philly job distribution, checked."""
    return _read_checked(path, "Gavel's Philly job distribution", "pass distribution_csv=PATH",
                         ("duration_s", "num_gpus"), positive=("duration_s", "num_gpus"))  # fmt: skip


def read_trace(path: str | Path) -> pd.DataFrame:
    """The (timestamp, duration, num_gpus) rows of Pollux's Philly excerpt, checked."""
    import pandas as pd

    frame = _read_checked(path, "Pollux's Philly trace excerpt", "pass trace_csv=PATH, or use profile 'hadar-uniform'",
                          ("timestamp", "duration", "num_gpus"), positive=("duration", "num_gpus"))  # fmt: skip
    stamp = pd.to_datetime(frame["timestamp"], errors="coerce")
    if stamp.isna().any():
        raise InputError("not a date", file=str(path), row=int(np.flatnonzero(stamp.isna())[0]) + 2, field="timestamp")
    return pd.DataFrame({"hour": stamp.dt.hour.to_numpy(), "duration_s": frame["duration"].to_numpy(dtype=float),
                         "num_gpus": frame["num_gpus"].to_numpy(dtype=float)})  # fmt: skip


def _read_checked(path: str | Path, what: str, hint: str, columns: tuple[str, ...], *,
                  positive: tuple[str, ...]) -> pd.DataFrame:  # fmt: skip
    """The CSV at ``path`` with ``columns`` present and ``positive`` columns > 0, or an error
    naming the file, row and field."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"profile 'hadar' draws jobs from {what}, not found at '{path}' "
                          f"(relative to the working directory; {hint})")  # fmt: skip
    frame = pd.read_csv(path)
    for col in columns:
        if col not in frame.columns:
            raise InputError("required column is missing", file=str(path), field=col)
    for col in positive:
        bad = ~(pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float) > 0)
        if bad.any():
            raise InputError(f"{col} must be positive", file=str(path), row=int(np.flatnonzero(bad)[0]) + 2, field=col)
    return frame


def category_of(gpu_hours: np.ndarray) -> np.ndarray:
    """Index in :data:`CATEGORIES` of each job's GPU-hours; -1 outside every category."""
    out = np.full(len(gpu_hours), -1)
    for ci, (_, lo, hi, _) in enumerate(CATEGORIES):
        out[(gpu_hours > lo) & (gpu_hours <= hi)] = ci
    return out


def generate_hadar(n_jobs: int, *, seed: int, profile: HadarProfile = HadarProfile()) -> Workload:
    """``n_jobs`` jobs of the Hadar §IV-A workload, all submitted at 0, under ``profile.reading``."""
    if n_jobs < 1:
        raise ConfigError(f"n_jobs must be at least 1 (got {n_jobs})")
    if profile.reading not in READINGS:
        raise ConfigError(f"profile {profile.name!r}: reading must be one of {', '.join(READINGS)}, "
                          f"got {profile.reading!r}")  # fmt: skip
    import pandas as pd

    rng = np.random.default_rng(seed)
    if profile.reading == "trace":
        category, out_gpus, out_duration, which, source_file = _from_trace(n_jobs, rng, profile)
    else:
        category, out_gpus, out_duration, which, source_file = _uniform_categories(n_jobs, rng, profile)
    names = [CATEGORIES[c][3][w][0] for c, w in zip(category, which)]
    models = [CATEGORIES[c][3][w][1] for c, w in zip(category, which)]
    cats = [CATEGORIES[c][0] for c in category]
    frame = pd.DataFrame({
        "job_id": [f"{profile.name}-{i}" for i in range(n_jobs)],
        "submit_s": np.zeros(n_jobs),
        "num_gpus": out_gpus,
        "duration_s": out_duration,
        "name": names,
        "model": models,
        "priority_class": cats,
        "final_state": "completed",
    })  # fmt: skip
    source = f"synthetic:{profile.name}"
    meta = {"generator": "schedlab.workload.hadar", "profile": profile.name, "reading": profile.reading,
            "seed": seed, "n_jobs": n_jobs, "source_csv": source_file,
            "gpu_hours": float((out_gpus * out_duration).sum() / 3600),
            "class_counts": {c[0]: int((category == i).sum()) for i, c in enumerate(CATEGORIES)}}  # fmt: skip
    origin = pd.Timestamp("2017-10-01")  # the Philly trace's period; all jobs are submitted at once
    return Workload(jobs=canonical_frame(frame, source=source), source=source, origin=origin, meta=meta)


# (category, GPUs, duration, model choice) per job, and the file they were drawn from
_Draws = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]


def _from_trace(n_jobs: int, rng: np.random.Generator, profile: HadarProfile) -> _Draws:
    """The ``trace`` reading: (category, GPUs, duration, model choice, file) of jobs drawn from the busy hours."""
    trace = read_trace(profile.trace_csv)
    lo, hi = profile.busy_hours
    gpus = trace["num_gpus"].to_numpy()
    duration = trace["duration_s"].to_numpy()
    category = category_of(gpus * duration / 3600.0)
    keep = np.flatnonzero((trace["hour"].to_numpy() >= lo) & (trace["hour"].to_numpy() <= hi) & (category >= 0)
                          & np.isin(gpus, MEASURED_GPUS))  # fmt: skip
    if keep.size < n_jobs:
        raise ConfigError(f"profile {profile.name!r}: {n_jobs} jobs asked, {keep.size} in the trace qualify")
    pick = np.sort(rng.choice(keep, n_jobs, replace=False))
    category = category[pick]
    which = np.zeros(n_jobs, dtype=int)
    for ci, (_, _, _, choices) in enumerate(CATEGORIES):  # the category picks the model
        idx = np.flatnonzero(category == ci)
        which[idx] = rng.integers(0, len(choices), idx.size)
    return category, gpus[pick], duration[pick], which, str(profile.trace_csv)


def _uniform_categories(n_jobs: int, rng: np.random.Generator, profile: HadarProfile) -> _Draws:
    """The ``uniform`` reading: (category, GPUs, duration, model choice, file), the category drawn uniformly."""
    dist = read_distribution(profile.distribution_csv)
    duration = dist["duration_s"].to_numpy(dtype=float)
    gpus = dist["num_gpus"].to_numpy(dtype=float)
    gpu_hours = duration * gpus / 3600.0
    category = rng.integers(0, len(CATEGORIES), n_jobs)
    out_gpus = np.empty(n_jobs)
    out_duration = np.empty(n_jobs)
    which = np.zeros(n_jobs, dtype=int)
    for ci, (_, lo, hi, choices) in enumerate(CATEGORIES):
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
        which[idx] = rng.integers(0, len(choices), idx.size)
    return category, out_gpus, out_duration, which, str(profile.distribution_csv)
