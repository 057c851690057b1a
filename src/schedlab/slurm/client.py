"""Slurm's client commands behind one adapter: every call has a timeout, and the ``--json``
output of ``squeue`` and ``sinfo`` is read into small records here and nowhere else.

The fields read are those of Slurm 22.05 (OpenAPI v0.0.38, the ``--json`` of the Debian 12
packages); recorded samples of each command live in ``tests/workload/samples/slurm-22.05``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError

DEFAULT_TIMEOUT_S = 15.0


class SlurmUnavailable(SchedlabError):
    """slurmctld (or slurmdbd) did not answer in time, or refused the connection."""


class SlurmCommandError(SchedlabError):
    """A Slurm command failed for another reason; the message has its error line."""


@dataclass(frozen=True)
class QueueJob:
    """One job as ``squeue --json`` shows it. Times are epoch seconds (0 = not yet)."""

    job_id: int
    name: str
    state: str
    partition: str
    account: str
    user: str
    submit: int
    start: int
    end: int
    time_limit_min: int | None
    nodes: int
    gpus: int
    priority: int
    reason: str
    node_list: str


@dataclass(frozen=True)
class NodeInfo:
    """One node as ``sinfo --json`` shows it."""

    name: str
    state: str
    flags: tuple[str, ...]
    partitions: tuple[str, ...]
    gpus: int
    gpus_used: int
    gpu_type: str


class SlurmClient:
    """Runs Slurm's commands against one ``slurm.conf``."""

    def __init__(self, conf: Path | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.conf = conf
        self.timeout_s = timeout_s
        self.env = {**os.environ, "SLURM_CONF": str(conf)} if conf is not None else dict(os.environ)

    def run(self, argv: Sequence[str], *, stdin: str | None = None, timeout_s: float | None = None) -> str:
        """Run one command; its stdout. Raises :class:`SlurmUnavailable` when the controller does
        not answer and :class:`SlurmCommandError` on any other failure."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            out = subprocess.run(list(argv), env=self.env, input=stdin, capture_output=True, text=True, timeout=limit,
                                 stdin=None if stdin is not None else subprocess.DEVNULL)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(f"`{argv[0]}` got no answer in {limit:g} s (is slurmctld running?)") from None
        except FileNotFoundError:
            raise SlurmCommandError(f"`{argv[0]}` not found: Slurm's client commands are not installed") from None
        if out.returncode != 0:
            message = (out.stderr.strip() or out.stdout.strip() or f"exit code {out.returncode}").splitlines()[-1]
            if "Unable to contact slurm controller" in out.stderr or "Connection refused" in out.stderr:
                raise SlurmUnavailable(f"`{argv[0]}`: {message}")
            raise SlurmCommandError(f"`{' '.join(argv[:2])}`: {message}")
        return out.stdout

    def json(self, argv: Sequence[str]) -> dict[str, Any]:
        """A command's ``--json`` output. Slurm 22.05 answers a controller it cannot reach with
        exit code 0 and an ``errors`` list (after about 9 s): that raises
        :class:`SlurmUnavailable`, never reads as an empty queue."""
        text = self.run(argv)
        try:
            data: dict[str, Any] = json.loads(text)
        except ValueError as exc:
            raise SlurmCommandError(f"`{argv[0]}` printed no valid JSON ({exc})") from exc
        errors = data.get("errors") if isinstance(data, dict) else None
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {"error": str(errors[0])}
            what = "; ".join(str(first.get(k)) for k in ("description", "error") if first.get(k))
            raise SlurmUnavailable(f"`{argv[0]}` reported: {what or 'an error'}")
        return data

    def queue(self, *, all_states: bool = False) -> list[QueueJob]:
        """``squeue --json``: the jobs slurmctld holds. In 22.05 the JSON form lists the jobs
        that ended within MinJobAge too, with or without ``all_states`` (``--states=all``):
        callers filter by ``state``."""
        argv = ["squeue", "--json"] + (["--states=all"] if all_states else [])
        return [queue_job(j) for j in self.json(argv).get("jobs", [])]

    def nodes(self) -> list[NodeInfo]:
        return [node_info(n) for n in self.json(["sinfo", "--json"]).get("nodes", [])]

    def submit(self, args: Sequence[str]) -> int:
        """``sbatch --parsable ARGS``: the new job's id."""
        out = self.run(["sbatch", "--parsable", *args]).strip()
        try:
            return int(out.split(";", 1)[0])
        except ValueError:
            raise SlurmCommandError(f"sbatch printed {out!r} instead of a job id") from None

    def scontrol_batch(self, commands: Sequence[str]) -> str:
        """Several ``scontrol`` commands in one process, one per line on its standard input."""
        return self.run(["scontrol"], stdin="\n".join(commands) + "\n")

    def config(self) -> dict[str, str]:
        """``scontrol show config``: the running controller's settings."""
        out = {}
        for line in self.run(["scontrol", "show", "config"]).splitlines():
            key, sep, value = line.partition("=")
            if sep:
                out[key.strip()] = value.strip()
        return out


def queue_job(raw: dict[str, Any]) -> QueueJob:
    """One element of ``squeue --json``'s ``jobs``."""
    limit = raw.get("time_limit")
    return QueueJob(
        job_id=int(raw["job_id"]),
        name=str(raw.get("name") or ""),
        state=str(raw.get("job_state") or ""),
        partition=str(raw.get("partition") or ""),
        account=str(raw.get("account") or ""),
        user=str(raw.get("user_name") or ""),
        submit=int(raw.get("submit_time") or 0),
        start=int(raw.get("start_time") or 0),
        end=int(raw.get("end_time") or 0),
        time_limit_min=int(limit) if isinstance(limit, int) and limit < 2**31 - 1 else None,
        nodes=int(raw.get("node_count") or 0),
        gpus=tres_gpus(str(raw.get("tres_alloc_str") or "")) or tres_gpus_per_node(raw),
        priority=int(raw.get("priority") or 0),
        reason=str(raw.get("state_reason") or ""),
        node_list=str(raw.get("nodes") or ""),
    )


def node_info(raw: dict[str, Any]) -> NodeInfo:
    """One element of ``sinfo --json``'s ``nodes``."""
    gres = str(raw.get("gres") or "")
    parts = gres.split(":") if gres.startswith("gpu") else []
    gpus = int(parts[-1].split("(")[0]) if parts and parts[-1].split("(")[0].isdigit() else 0
    used = gres_count(str(raw.get("gres_used") or "")) or tres_gpus(str(raw.get("tres_used") or ""))
    return NodeInfo(
        name=str(raw["name"]),
        state=str(raw.get("state") or ""),
        flags=tuple(str(f) for f in raw.get("state_flags") or ()),
        partitions=tuple(str(p) for p in raw.get("partitions") or ()),
        gpus=gpus,
        gpus_used=used,
        gpu_type=parts[1] if len(parts) == 3 else "",
    )


def gres_count(gres: str) -> int:
    """GPUs in a GRES string such as ``gpu:a100:3(IDX:0-2)`` (``gres_used``; 0 when none)."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(", 1)[0].split(":")
        if parts and parts[0] == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def tres_gpus(tres: str) -> int:
    """GPUs in a TRES string such as ``cpu=1,gres/gpu=4,gres/gpu:a100=4`` (untyped count)."""
    for item in tres.split(","):
        key, _, value = item.partition("=")
        if key == "gres/gpu" and value.isdigit():
            return int(value)
    return 0


def tres_gpus_per_node(raw: dict[str, Any]) -> int:
    """GPUs a pending job asks for: ``tres_per_node`` ``gres:gpu:4`` times its node count."""
    per_node = str(raw.get("tres_per_node") or "")
    count = per_node.rsplit(":", 1)[-1]
    return int(count) * max(1, int(raw.get("node_count") or 1)) if per_node.startswith("gres:gpu") and count.isdigit() else 0
