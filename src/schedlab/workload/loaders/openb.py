"""Alibaba 2023 "openb" pod lists ``openb_pod_list_*.csv`` (FGD, USENIX ATC '23).

Schema: github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2023`` — columns ``name, cpu_milli,
memory_mib, num_gpu, gpu_milli`` (share of one GPU in 1/1000 when ``num_gpu == 1``), ``gpu_spec``
(allowed GPU types joined by ``|``; empty = any), ``qos, pod_phase, creation_time, deletion_time,
scheduled_time`` (seconds, no calendar date).

A pod is one worker on one node: ``num_gpus`` = ``num_gpu``, or ``gpu_milli / 1000`` for a fractional
single-GPU pod, and ``gpus_per_worker`` = ``num_gpus``. Submit = ``creation_time``; duration =
``deletion_time − scheduled_time`` (run time; pods still running when the trace ended are cut there).
``gpu_type`` is the one allowed type, or "" when any of several may serve (counted in
``meta["multi_type_pods"]``). ``priority_class`` is the lower-cased ``qos``. Skipped: CPU pods,
pods never scheduled. ``queue_s`` = ``scheduled_time − creation_time``; ``time_unit`` scales the three
times.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.workload.loaders._common import (
    apply_skips,
    blank,
    finish,
    lower_str,
    map_states,
    numbers,
    per_value,
    read_csv,
)
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

_REQUIRED = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time")
_OPTIONAL = ("cpu_milli", "gpu_spec", "qos", "pod_phase")
_STATES = {"succeeded": "completed", "failed": "failed"}


def load_openb(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load an openb pod list: GPU pods that were scheduled, with fractional GPU shares."""
    source = str(path)
    scale = seconds_per(time_unit)
    raw = read_csv(path, required=_REQUIRED, optional=_OPTIONAL)
    rows = np.arange(1, len(raw) + 1)
    gpus = numbers(raw["num_gpu"], source=source, rows=rows, field="num_gpu")
    raw, rows, skipped = apply_skips(
        raw.assign(num_gpu=gpus),
        rows,
        [("cpu_job", gpus == 0), ("never_scheduled", blank(raw["scheduled_time"]))],
    )
    milli = numbers(raw["gpu_milli"], source=source, rows=rows, field="gpu_milli")
    whole = raw["num_gpu"].to_numpy()
    num_gpus = np.where((whole == 1) & (milli < 1000), milli / 1000.0, whole)
    scheduled = numbers(raw["scheduled_time"], source=source, rows=rows, field="scheduled_time") * scale
    deleted = numbers(raw["deletion_time"], source=source, rows=rows, field="deletion_time") * scale
    created = numbers(raw["creation_time"], source=source, rows=rows, field="creation_time") * scale
    jobs = pd.DataFrame(
        {
            "job_id": raw["name"],
            "submit_s": created,
            "num_gpus": num_gpus,
            "gpus_per_worker": num_gpus,
            "duration_s": deleted - scheduled,
            "queue_s": scheduled - created,
        }
    )
    meta: dict[str, object] = {}
    if "gpu_spec" in raw.columns:
        jobs["gpu_type"] = per_value(raw["gpu_spec"], _only_type)
        several = per_value(raw["gpu_spec"], lambda spec: len(_allowed_types(spec)) > 1)
        meta["multi_type_pods"] = int(several.astype(bool).sum())
    if "cpu_milli" in raw.columns:
        jobs["num_cpus"] = numbers(raw["cpu_milli"], source=source, rows=rows, field="cpu_milli") / 1000.0
    if "qos" in raw.columns:
        qos = lower_str(raw["qos"])
        jobs["priority_class"] = np.where(qos == "", "default", qos)
    if "pod_phase" in raw.columns:
        jobs["final_state"] = map_states(raw["pod_phase"], _STATES)
    return finish(
        jobs,
        source=source,
        rows=rows,
        skipped=skipped,
        meta=meta,
        fields={
            "job_id": "name",
            "submit_s": "creation_time",
            "num_gpus": "gpu_milli",
            "gpus_per_worker": "gpu_milli",
            "gpu_type": "gpu_spec",
            "duration_s": "deletion_time",
            "priority_class": "qos",
            "num_cpus": "cpu_milli",
            "final_state": "pod_phase",
            "queue_s": "scheduled_time",
        },
        skip=skip,
    )


def _allowed_types(spec: object) -> tuple[str, ...]:
    """The distinct GPU types of a ``|``-joined spec (empty = any type)."""
    if spec is None:
        return ()
    return tuple(sorted({part.strip() for part in str(spec).split("|") if part.strip()}))


def _only_type(spec: object) -> str:
    """The GPU type when the spec allows exactly one, else ""."""
    types = _allowed_types(spec)
    return types[0] if len(types) == 1 else ""
