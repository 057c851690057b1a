"""Pollux's simulator workloads ``simulator/workloads*/workload-N.csv`` (OSDI '21 artifact).

Schema: github.com/petuum/adaptdl, branch ``osdi21-artifact`` — columns ``name`` (job id),
``time`` (submission, seconds from the start of the 8-hour window), ``application`` (one of the
six of ``simulator/traces``: bert, cifar10, deepspeech2, imagenet, ncf, yolov3),
``num_replicas`` (GPUs) and ``batch_size`` (global batch). ``application`` becomes ``model``.

The files have no duration. A job's work is derived from the per-application traces of the same
artifact (``traces/<application>/``, by default the ``traces`` folder beside the workload's
folder), the way Pollux's simulator runs a job at the fixed GPU count and batch of the file (its
Tiresias baseline, ``Job.update_local_bsz`` and ``Application.get_configurations``, read, not
copied):

* **Target iterations** ``I(B)``: the ``iteration`` of the last row of ``validation-<B>.csv``.
  Pollux trains every job for ``max_epochs`` epochs, and its ``max_epochs`` (bert 2, cifar10
  100, ncf 10, imagenet 90, deepspeech2 80, yolov3 50) is the row count of each application's
  validation files. A ``B`` between two validated batch sizes interpolates linearly
  (``get_iteration``).
* **Time per iteration**: local batch ``ceil(B / G)``; gradient accumulation when it exceeds
  the largest profiled local batch (``accum = ceil(local / max_local) - 1``; Pollux also
  accumulates at least once on one GPU when ``B`` exceeds the smallest validated batch), atomic
  batch ``ceil(local / (accum + 1))``; ``t = step + accum (step - sync)``, with ``step`` and
  ``sync`` from ``placements.csv`` at the job's placement packed four GPUs per node (Pollux's
  testbed nodes, the packing ``get_configurations`` assumes), normalised to its smallest
  rotation as Pollux does, or from ``scalability.csv`` at ``(nodes, replicas)`` when the
  placement was not profiled; linear in the atomic batch between profiled batches.
* ``duration_s = I(B) * t``: the job's run time alone at its requested size.

Unlike Pollux's simulator there is no statistical-efficiency gain: a job runs at its fixed
batch (Castor never changes a job's batch, only splits it by accumulation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.workload.loaders._common import finish, numbers, read_csv
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

REQUIRED = ("name", "time", "application", "num_replicas", "batch_size")
GPUS_PER_NODE = 4  # Pollux's testbed: 16 nodes x 4 GPUs
# Applications whose largest local batch Pollux sets by hand (``applications.py``); the others
# take the largest profiled local batch of their placements.csv.
MAX_LOCAL_BSZ = {"yolov3": 8}


@dataclass(frozen=True)
class Application:
    """One application's traces: iterations per validated batch, step times per placement."""

    name: str
    iterations: dict[int, float]  # validated global batch -> iterations to the target epoch
    placements: pd.DataFrame  # placement (str), local_bsz, step_time, sync_time
    scalability: pd.DataFrame  # num_nodes, num_replicas, local_bsz, step_time, sync_time
    max_local_bsz: float

    @property
    def min_batch(self) -> int:
        return min(self.iterations)

    def target_iterations(self, batch: float) -> float:
        """I(B): iterations to Pollux's target epoch, linear between validated batch sizes."""
        sizes = sorted(self.iterations)
        if not sizes[0] <= batch <= sizes[-1]:
            raise ValueError(f"batch size {batch:g} is outside the validated {sizes[0]}-{sizes[-1]} of {self.name}")
        return float(np.interp(batch, sizes, [self.iterations[b] for b in sizes]))

    def iteration_time(self, gpus: int, batch: float) -> float:
        """Seconds per iteration at global ``batch`` on ``gpus`` GPUs (accumulation included)."""
        local = math.ceil(batch / gpus - 1e-8)
        accum = math.ceil(local / self.max_local_bsz - 1e-8) - 1
        if gpus == 1 and batch > self.min_batch:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        step, sync = self.step_time(gpus, atomic)
        return step + accum * (step - sync)

    def step_time(self, gpus: int, local_bsz: float) -> tuple[float, float]:
        """(step, sync) seconds at ``local_bsz`` per GPU, packed GPUS_PER_NODE per node."""
        nodes = [GPUS_PER_NODE] * (gpus // GPUS_PER_NODE) + ([gpus % GPUS_PER_NODE] if gpus % GPUS_PER_NODE else [])
        key = "".join(map(str, min(tuple(nodes[i:] + nodes[:i]) for i in range(len(nodes)))))
        rows = self.placements[self.placements["placement"] == key]
        if rows.empty:
            s = self.scalability
            rows = s[(s["num_nodes"] == len(nodes)) & (s["num_replicas"] == gpus)]
        if rows.empty:
            raise ValueError(f"no step time of {self.name} profiled on {gpus} GPUs (placement {key})")
        rows = rows.groupby("local_bsz", as_index=False)[["step_time", "sync_time"]].mean()
        lo, hi = rows["local_bsz"].min(), rows["local_bsz"].max()
        if not lo <= local_bsz <= hi:
            raise ValueError(f"local batch {local_bsz:g} of {self.name} on {gpus} GPUs is outside the profiled {lo:g}-{hi:g}")
        x = rows["local_bsz"].to_numpy(dtype=float)
        return float(np.interp(local_bsz, x, rows["step_time"])), float(np.interp(local_bsz, x, rows["sync_time"]))


def read_application(folder: Path) -> Application:
    """The traces of one application (``traces/<name>/``), checked."""
    name = folder.name
    iterations: dict[int, np.ndarray] = {}
    lengths = []
    for path in sorted(folder.glob("validation-*.csv")):
        frame = read_csv(path, required=("iteration",))
        its = numbers(frame["iteration"], source=str(path), rows=np.arange(1, len(frame) + 1), field="iteration")
        iterations[int(path.stem.split("-")[-1])] = its
        lengths.append(len(its))
    if not iterations:
        raise InputError(f"no validation-<batch>.csv files for application {name!r}", file=str(folder))
    epochs = min(lengths)  # Pollux's max_epochs: the rows of every application's validation files
    placements = read_csv(folder / "placements.csv", required=("placement", "local_bsz", "step_time", "sync_time"))
    placements["placement"] = placements["placement"].astype(str)
    scalability = read_csv(
        folder / "scalability.csv", required=("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
    )
    max_local = MAX_LOCAL_BSZ.get(name, float(placements["local_bsz"].max()))
    return Application(name, {b: float(its[epochs - 1]) for b, its in iterations.items()}, placements, scalability,
                       max_local)  # fmt: skip


def load_pollux_workload(path: Path, *, traces: str = "", time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load a Pollux simulator workload; durations from the application traces in ``traces``
    (default: ``../traces`` from the workload's folder, the artifact's layout). ``time_unit``
    scales ``time``; the durations are in seconds (the traces' step times)."""
    source = str(path)
    raw = read_csv(path, required=REQUIRED)
    rows = np.arange(1, len(raw) + 1)
    submit = numbers(raw["time"], source=source, rows=rows, field="time") * seconds_per(time_unit)
    gpus = numbers(raw["num_replicas"], source=source, rows=rows, field="num_replicas")
    batch = numbers(raw["batch_size"], source=source, rows=rows, field="batch_size")
    apps = raw["application"].astype(str).str.strip()
    folder = Path(traces) if traces else path.resolve().parent.parent / "traces"
    if not folder.is_dir():
        raise InputError(f"application traces folder not found: {folder} (set the 'traces' option)", file=source)
    duration = np.empty(len(raw))
    read: dict[str, Application] = {}
    known_durations: dict[tuple[str, float, float], float] = {}
    for i, (app, g, b) in enumerate(zip(apps, gpus, batch)):
        row = int(rows[i])
        if not (g >= 1 and g == int(g)):
            raise InputError(f"expected a whole number of GPUs >= 1, got {raw['num_replicas'].iat[i]!r}", file=source,
                             row=row, field="num_replicas")  # fmt: skip
        if not b > 0:
            raise InputError(f"expected a positive batch size, got {raw['batch_size'].iat[i]!r}", file=source, row=row,
                             field="batch_size")  # fmt: skip
        if not app or not (folder / app).is_dir():
            known = sorted(p.name for p in folder.iterdir() if p.is_dir())
            raise InputError(f"no traces for application {app!r} in {folder} (known: {', '.join(known)})",
                             file=source, row=row, field="application")  # fmt: skip
        if (app, g, b) not in known_durations:
            application = read[app] if app in read else read.setdefault(app, read_application(folder / app))
            try:
                known_durations[app, g, b] = application.target_iterations(b) * application.iteration_time(int(g), b)
            except ValueError as err:
                raise InputError(str(err), file=source, row=row, field="batch_size") from None
        duration[i] = known_durations[app, g, b]
    jobs = pd.DataFrame(
        {"job_id": raw["name"].astype(str), "submit_s": submit, "num_gpus": gpus, "duration_s": duration, "model": apps}
    )
    fields = {"job_id": "name", "submit_s": "time", "num_gpus": "num_replicas", "model": "application"}
    return finish(jobs, source=source, rows=rows, fields=fields, skip=skip)
