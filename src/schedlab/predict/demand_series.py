"""Per-organisation hourly GPU-demand series, the input of the GFS GPU Demand Estimator.

GFS (Duan et al., ASPLOS '26, arXiv 2509.11134, §3.2) forecasts, per organisation, the GPUs its
high-priority (HP) tasks will ask for in each coming hour. :func:`from_workload` builds that
series from a job table as a *no-queue* demand: a job asks for its ``num_gpus`` from its submit
time to ``submit_s + duration_s`` whether or not a scheduler could have placed it, so the
series is what the organisation wanted, not what it got. The value of an hour is the mean
number of GPUs asked for during it (GPU-seconds in the hour / 3600), so a job running for half
of an hour counts half. Only HP jobs count by default (the GDE forecasts HP demand);
``classes=None`` counts every class.

The series ends with the last complete hour in which jobs were still submitted (after it the
demand would fall only because the trace ends). Calendar features are the hour of day, the
weekday and a holiday flag from a small built-in list (:data:`HOLIDAYS`, public holidays of
China and the USA for 2024-2025) or none; organisation attributes come from
:func:`org_attributes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError, InputError
from schedlab.units import HOUR_S
from schedlab.workload.schema import Workload

NOMINAL_START = pd.Timestamp("2000-01-03")  # a Monday; the calendar origin of a workload without dates


def _days(*spans: tuple[str, str]) -> tuple[str, ...]:
    return tuple(str(d.date()) for a, b in spans for d in pd.date_range(a, b, freq="D"))


# Public holidays (days off). CN: State Council schedules for 2020, 2024 and 2025; US: federal holidays.
HOLIDAYS: dict[str, tuple[str, ...]] = {
    "CN": _days(
        ("2020-01-01", "2020-01-01"), ("2020-01-24", "2020-02-02"), ("2020-04-04", "2020-04-06"),
        ("2020-05-01", "2020-05-05"), ("2020-06-25", "2020-06-27"), ("2020-10-01", "2020-10-08"),
        ("2024-01-01", "2024-01-01"), ("2024-02-10", "2024-02-17"), ("2024-04-04", "2024-04-06"),
        ("2024-05-01", "2024-05-05"), ("2024-06-10", "2024-06-10"), ("2024-09-15", "2024-09-17"),
        ("2024-10-01", "2024-10-07"), ("2025-01-01", "2025-01-01"), ("2025-01-28", "2025-02-04"),
        ("2025-04-04", "2025-04-06"), ("2025-05-01", "2025-05-05"), ("2025-05-31", "2025-06-02"),
        ("2025-10-01", "2025-10-08"),
    ),
    "US": (
        "2024-01-01", "2024-01-15", "2024-02-19", "2024-05-27", "2024-06-19", "2024-07-04", "2024-09-02",
        "2024-10-14", "2024-11-11", "2024-11-28", "2024-12-25", "2025-01-01", "2025-01-20", "2025-02-17",
        "2025-05-26", "2025-06-19", "2025-07-04", "2025-09-01", "2025-10-13", "2025-11-11", "2025-11-27",
        "2025-12-25",
    ),
}  # fmt: skip


def holiday_set(country: str | None) -> frozenset[pd.Timestamp]:
    """The built-in holidays of ``country`` ("CN", "US"), or none for ``None`` / "none"."""
    if country is None or country.lower() == "none":
        return frozenset()
    key = country.upper()
    if key not in HOLIDAYS:
        raise ConfigError(f"no built-in holidays for {country!r}; choose one of {sorted(HOLIDAYS)} or none")
    return frozenset(pd.Timestamp(d) for d in HOLIDAYS[key])


@dataclass(frozen=True)
class DemandSeries:
    """Hourly GPU demand: ``demand`` has a regular hourly DatetimeIndex and one column per
    organisation (GPUs, >= 0); ``holidays`` are the dates flagged in the calendar features."""

    demand: pd.DataFrame
    holidays: frozenset[pd.Timestamp]
    source: str

    def __post_init__(self) -> None:
        idx = self.demand.index
        if not isinstance(idx, pd.DatetimeIndex) or len(idx) < 2:
            raise ConfigError(f"{self.source}: a demand series needs at least two hourly timestamps")
        if (idx[1:] - idx[:-1] != pd.Timedelta(hours=1)).any():
            raise ConfigError(f"{self.source}: the demand series must be hourly without gaps")
        if self.demand.shape[1] == 0:
            raise ConfigError(f"{self.source}: the demand series has no organisation")

    @property
    def orgs(self) -> list[str]:
        return [str(c) for c in self.demand.columns]

    @property
    def values(self) -> np.ndarray:
        """Demand as an (organisations x hours) float array."""
        values: np.ndarray = self.demand.to_numpy(dtype=float).T
        return values

    def __len__(self) -> int:
        return len(self.demand)

    def head(self, hours: int) -> "DemandSeries":
        """The first ``hours`` hours."""
        return DemandSeries(self.demand.iloc[:hours], self.holidays, self.source)

    def hours_after(self, end: int, horizon: int) -> pd.DatetimeIndex:
        """The ``horizon`` hourly timestamps following position ``end`` (exclusive)."""
        return pd.date_range(self.demand.index[0] + pd.Timedelta(hours=end), periods=horizon, freq="h")

    def calendar(self, index: pd.DatetimeIndex) -> pd.DataFrame:
        """Calendar features of ``index``: hour (0-23), weekday (0 = Monday) and holiday (0/1)."""
        return calendar_features(index, self.holidays)


def calendar_features(index: pd.DatetimeIndex, holidays: Iterable[pd.Timestamp]) -> pd.DataFrame:
    """Hour of day, weekday and holiday flag (the day is in ``holidays``) for each timestamp."""
    days = frozenset(pd.Timestamp(h).normalize() for h in holidays)
    return pd.DataFrame(
        {
            "hour": index.hour.to_numpy(dtype=np.int64),
            "weekday": index.day_of_week.to_numpy(dtype=np.int64),
            "holiday": np.fromiter((d in days for d in index.normalize()), dtype=np.int64, count=len(index)),
        },
        index=index,
    )


def from_workload(
    workload: Workload, *, classes: Sequence[str] | None = ("hp",), country: str | None = None
) -> DemandSeries:
    """Hourly no-queue GPU demand per tenant (organisation) of the jobs in ``classes``.

    Every tenant of the workload gets a column, also one with no job of these classes (all
    zeros). Timestamps start at ``workload.origin`` (a nominal Monday when the trace has no
    dates; then only ``country=None`` makes sense).
    """
    jobs = workload.jobs
    if classes is not None:
        jobs = jobs[jobs["priority_class"].isin(list(classes))]
        if jobs.empty:
            have = sorted(workload.jobs["priority_class"].unique())
            raise ConfigError(f"{workload.source}: no job of class {list(classes)} (the trace has {have}); count all classes instead")
    hours = int(np.floor(workload.jobs["submit_s"].max() / HOUR_S))
    if hours < 2:
        raise ConfigError(f"{workload.source}: jobs are submitted over less than two hours; no hourly series")
    orgs = sorted(workload.jobs["tenant"].unique())
    code = pd.Categorical(jobs["tenant"], categories=orgs).codes.astype(np.int64)
    start = jobs["submit_s"].to_numpy(dtype=float)
    end = start + jobs["duration_s"].to_numpy(dtype=float)
    gpus = jobs["num_gpus"].to_numpy(dtype=float)
    demand = _hourly_mean(code, start, end, gpus, len(orgs), hours)
    origin = workload.origin if workload.origin is not None else NOMINAL_START
    index = pd.date_range(pd.Timestamp(origin), periods=hours, freq="h")
    return DemandSeries(pd.DataFrame(demand.T, index=index, columns=orgs), holiday_set(country), workload.source)


def _hourly_mean(code: np.ndarray, start: np.ndarray, end: np.ndarray, gpus: np.ndarray, n: int, hours: int) -> np.ndarray:
    """(n x hours) mean GPUs per hour. F(t), the GPU-seconds up to boundary t, is
    (A - C) t - (B - D) with A, B the sums of g and g*s over jobs started by t and C, D the
    sums of g and g*e over jobs ended by t."""
    k_start = np.clip(np.ceil(start / HOUR_S).astype(np.int64), 0, hours + 1)
    k_end = np.clip(np.ceil(end / HOUR_S).astype(np.int64), 0, hours + 1)

    def cum(k: np.ndarray, w: np.ndarray) -> np.ndarray:
        acc = np.zeros((n, hours + 2))
        np.add.at(acc, (code, k), w)
        return np.cumsum(acc, axis=1)[:, : hours + 1]

    t = np.arange(hours + 1) * HOUR_S
    f: np.ndarray = (cum(k_start, gpus) - cum(k_end, gpus)) * t - (cum(k_start, gpus * start) - cum(k_end, gpus * end))
    return np.maximum(np.diff(f, axis=1) / HOUR_S, 0.0)


def from_csv(path: Path, *, country: str | None = None) -> DemandSeries:
    """Read a demand CSV with columns ``time`` (a date-time), ``org`` and ``gpus``.

    Samples are averaged per hour and organisation; an hour without a row for an
    organisation counts as zero demand.
    """
    src = str(path)
    try:
        raw = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the demand CSV ({exc})", file=src) from exc
    for col in ("time", "org", "gpus"):
        if col not in raw.columns:
            raise InputError("required column is missing (need time, org, gpus)", file=src, field=col)
    times = pd.to_datetime(raw["time"], errors="coerce")
    gpus = pd.to_numeric(raw["gpus"], errors="coerce")
    for bad, col, what in ((times.isna(), "time", "not a date-time"), (~np.isfinite(gpus) | (gpus < 0), "gpus", "not a non-negative number")):
        rows = np.flatnonzero(bad.to_numpy())
        if rows.size:
            i = int(rows[0])
            raise InputError(f"{what}: {raw[col].iloc[i]!r}", file=src, row=i + 1, field=col)
    frame = pd.DataFrame({"hour": times.dt.floor("h"), "org": raw["org"].astype(str), "gpus": gpus})
    table = frame.pivot_table(index="hour", columns="org", values="gpus", aggfunc="mean")
    full = pd.date_range(table.index.min(), table.index.max(), freq="h")
    table = table.reindex(full).fillna(0.0)
    table.columns = [str(c) for c in table.columns]
    return DemandSeries(table.astype(float), holiday_set(country), src)


VC_SEQUENCE = "cluster_sequence_vc.csv"


def from_vc_sequences(folder: Path, *, country: str | None = None) -> DemandSeries:
    """GPU demand per virtual cluster (VC) from Helios per-minute VC states: ``folder`` holds
    one sub-folder per VC with a ``cluster_sequence_vc.csv`` (columns ``time``,
    ``running_gpu_num``, ``pending_gpu_num``; HeliosArtifact's Earth VCs). A VC's demand in a
    minute is the GPUs of its running and pending jobs (what it asked for, placed or not); the
    hourly value is the mean over the hour's minutes. Each VC is an organisation."""
    files = sorted(Path(folder).glob(f"*/{VC_SEQUENCE}"))
    if not files:
        raise InputError(f"no */{VC_SEQUENCE} in the folder", file=str(folder))
    columns = {}
    for path in files:
        try:
            raw = pd.read_csv(path, usecols=["time", "running_gpu_num", "pending_gpu_num"])
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read a VC sequence ({exc}); need columns time, running_gpu_num, pending_gpu_num",
                             file=str(path)) from exc  # fmt: skip
        times = pd.to_datetime(raw["time"], errors="coerce")
        gpus = raw["running_gpu_num"] + raw["pending_gpu_num"]
        for bad, col in ((times.isna(), "time"), (~np.isfinite(gpus) | (gpus < 0), "running_gpu_num")):
            rows = np.flatnonzero(bad.to_numpy())
            if rows.size:
                raise InputError("not a date-time" if col == "time" else "not a non-negative GPU count",
                                 file=str(path), row=int(rows[0]) + 1, field=col)  # fmt: skip
        columns[path.parent.name] = gpus.groupby(times.dt.floor("h").to_numpy()).mean()
    table = pd.DataFrame(columns).sort_index()
    full = pd.date_range(table.index.min(), table.index.max(), freq="h")
    return DemandSeries(table.reindex(full).fillna(0.0).astype(float), holiday_set(country), str(folder))


def org_attributes(values: np.ndarray, orgs: Sequence[str], *, buckets: int = 4) -> pd.DataFrame:
    """Static attributes of each organisation from its (training) demand ``values``
    (organisations x hours): ``org_index``, ``size_bucket`` (quantile bucket of the mean
    demand), ``variability_bucket`` (quantile bucket of the coefficient of variation) and
    ``mean_gpus``. The buckets are the categorical attributes OrgLinear embeds."""
    mean = values.mean(axis=1)
    cv = values.std(axis=1) / np.maximum(mean, 1e-9)

    def bucket(x: np.ndarray) -> np.ndarray:
        rank: np.ndarray = pd.Series(x).rank(method="first").to_numpy() - 1
        return np.minimum((rank * buckets / max(len(x), 1)).astype(np.int64), buckets - 1)

    return pd.DataFrame(
        {"org_index": np.arange(len(orgs)), "size_bucket": bucket(mean), "variability_bucket": bucket(cv), "mean_gpus": mean},
        index=list(orgs),
    )
