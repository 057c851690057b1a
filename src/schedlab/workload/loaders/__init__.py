"""Trace loaders: one module per public trace format, all producing a canonical :class:`Workload`.

``load_trace(path, fmt, **options)`` picks the loader from :data:`LOADERS`. Every loader shifts times
so the earliest submit is 0 (``Workload.origin`` is the wall-clock time of 0 when the trace has
dates), sorts jobs by submit time (stable), counts deliberately skipped rows by reason in
``Workload.skipped`` and raises :class:`~schedlab.errors.InputError` naming the file, the 1-based
data row and the field of bad data.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from schedlab.errors import ConfigError, InputError, did_you_mean
from schedlab.workload.schema import Workload


@dataclass(frozen=True)
class LoaderInfo:
    """A registered trace format: its loader is ``function`` in ``module`` of this package
    (imported when first used: most loaders import pandas); ``folder``: it also reads a folder of files."""

    name: str
    description: str
    module: str
    function_name: str
    folder: bool = False

    @property
    def function(self) -> Callable[..., Workload]:
        """The loader."""
        loader: Callable[..., Workload] = getattr(importlib.import_module(f"{__name__}.{self.module}"), self.function_name)
        return loader

    @property
    def options(self) -> tuple[str, ...]:
        """Names of the keyword options the loader accepts."""
        params = inspect.signature(self.function).parameters.values()
        return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _registry(*infos: LoaderInfo) -> MappingProxyType[str, LoaderInfo]:
    return MappingProxyType({info.name: info for info in infos})


LOADERS: MappingProxyType[str, LoaderInfo] = _registry(
    LoaderInfo("helios", "SenseTime Helios cluster_log.csv (SC '21)", "helios", "load_helios"),
    LoaderInfo(
        "philly",
        "Microsoft Philly cluster_job_log JSON, or a Philly-derived CSV (Tiresias/Chronus, Pollux), detected",
        "philly",
        "load_philly",
    ),
    LoaderInfo("tiresias", "Tiresias / Chronus job CSV (job_id, num_gpu, submit_time, duration)", "tiresias",
               "load_tiresias"),  # fmt: skip
    LoaderInfo("pollux-philly", "Pollux's Philly excerpt philly.csv (timestamp, duration, num_gpus, cluster)", "pollux",
               "load_pollux_philly"),  # fmt: skip
    LoaderInfo(
        "pollux-workload",
        "Pollux's simulator workload-N.csv (name, time, application, num_replicas, batch_size); durations from its traces",
        "pollux_workload",
        "load_pollux_workload",
    ),
    LoaderInfo("gfs", "Alibaba GFS spot-GPU job_info_df.csv (ASPLOS '26)", "gfs", "load_gfs"),
    LoaderInfo("pai", "Alibaba PAI 2020 pai_job_table + pai_task_table (NSDI '22)", "pai", "load_pai", folder=True),
    LoaderInfo("openb", "Alibaba 2023 openb_pod_list_*.csv GPU-sharing pods (ATC '23)", "openb", "load_openb"),
    LoaderInfo("elasticflow", "Microsoft ITP cluster*.csv from ElasticFlow (ASPLOS '23)", "elasticflow",
               "load_elasticflow"),  # fmt: skip
    LoaderInfo("sacct", "Slurm job history: sacct --json, or sacct -P text with a header, detected", "sacct",
               "load_sacct"),  # fmt: skip
    LoaderInfo("csv", "generic CSV with a column mapping to the canonical fields", "generic", "load_csv"),
)


def load_trace(path: str | Path, fmt: str, **options: Any) -> Workload:
    """Load the trace at ``path`` in format ``fmt`` (a key of :data:`LOADERS`)."""
    info = LOADERS.get(fmt)
    if info is None:
        raise ConfigError(f"unknown trace format {fmt!r}{did_you_mean(fmt, LOADERS)}; known formats: {', '.join(LOADERS)}")
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        accepted = ", ".join(info.options) or "none"
        raise ConfigError(f"format {fmt!r} has no option(s) {unknown}; it accepts: {accepted}")
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", file=str(path))
    if path.is_dir() and not info.folder:
        raise InputError(f"is a directory; format {fmt!r} reads a file", file=str(path))
    if not path.is_dir() and not path.is_file():
        return _load_stream(path, info, options)
    try:
        return info.function(path, **options)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", file=str(err.filename or path)) from None


def _load_stream(path: Path, info: LoaderInfo, options: dict[str, Any]) -> Workload:
    """A named pipe or a device (``<(zcat trace.gz)``, ``/dev/stdin``): the loaders read a file
    more than once, so its bytes are first copied into a temporary file of the same name;
    errors and the workload still name ``path``."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="schedlab-trace-") as tmp:
        copy = Path(tmp) / (path.name or "trace")
        try:
            with open(path, "rb") as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst)
            workload = info.function(copy, **options)
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", file=str(path)) from None
        except InputError as err:
            if err.file is not None and str(copy) in str(err.file):
                raise InputError(err.reason, file=str(path), row=err.row, field=err.field) from None
            raise
    return workload.renamed(str(path))


__all__ = ["LOADERS", "LoaderInfo", "load_trace"]
