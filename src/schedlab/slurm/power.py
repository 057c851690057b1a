"""Requests to the sandbox's supervisor: stop or start one of its daemons, and power fake nodes
down and up for Slurm's power saving.

Every daemon of a sandbox is a child of its supervisor (the machine's PID 1 reaps orphans only
lazily), so whoever wants a daemon stopped or started asks the supervisor: a request is one
JSON file in ``DIR/requests`` (written atomically, named by the time it was made so they are
served in order), and a SIGUSR1 to the supervisor (its PID in ``DIR/run/supervisor.pid``)
wakes it. The supervisor serves the request and, when asked for a reply, writes
``NAME.done`` beside it with the outcome.

Slurm's ``SuspendProgram`` and ``ResumeProgram`` are two shell scripts in ``DIR/power`` that
make such a request for the host list Slurm gives them (``gpu-n[3-4]``) and return at once.
Powering a fake node down stops its slurmd (and kills any job step left on it); powering it up
starts its slurmd as if the node had just booted. slurmctld takes a node it resumed as up only
when the node's boot time (the registration time minus the uptime the slurmd reports) is not
before the resume request; a fake node's machine booted long ago, so a plain slurmd is never
taken as booted and the node goes DOWN after ``ResumeTimeout``. ``slurmd -b`` reports the
uptime since the slurmd started (0 at its first registration), which puts the boot time at
the registration: the node is up at once.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import time
from pathlib import Path
from typing import Any

from schedlab.errors import ConfigError
from schedlab.slurm.conf import Layout

PROGRAM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Slurm runs the programs with no PATH


# ----- Slurm's suspend and resume programs --------------------------------------------------------
def program_text(layout: Layout, action: str) -> str:
    """The shell script Slurm runs as ``SuspendProgram`` (``action`` suspend) or ``ResumeProgram``
    (resume) with a host list: it leaves a request for the supervisor and wakes it."""
    requests = shlex.quote(str(layout.requests))
    pid_file = shlex.quote(str(layout.supervisor_pid))
    verb = "stop" if action == "suspend" else "start"
    return "\n".join([
        "#!/bin/sh",
        f"# Slurm's {'Suspend' if action == 'suspend' else 'Resume'}Program for this sandbox: asks the "
        f"supervisor to {verb} the slurmd of the nodes in $1.",
        f"PATH={PROGRAM_PATH}",
        f"name={requests}/$(date +%s%N)-$$",
        f"printf '{{\"action\": \"{action}\", \"nodes\": \"%s\"}}\\n' \"$1\" > \"$name.tmp\" || exit 1",
        'mv "$name.tmp" "$name.json" || exit 1',
        f"pid=$(cat {pid_file} 2>/dev/null) && kill -USR1 \"$pid\" 2>/dev/null",
        "exit 0",
    ]) + "\n"  # fmt: skip


def write_programs(layout: Layout) -> None:
    for action, path in (("suspend", layout.suspend_program), ("resume", layout.resume_program)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(program_text(layout, action))
        path.chmod(0o755)


def fresh_boot_argv(argv: list[str]) -> list[str]:
    """A slurmd's ``argv`` that reports the node as booted when the slurmd started."""
    return [*argv, "-b"] if "-b" not in argv else argv


# ----- requests -------------------------------------------------------------------------------------
def send(layout: Layout, request: dict[str, Any], *, timeout_s: float = 120.0) -> dict[str, Any]:
    """Hand ``request`` to the supervisor and wait for its reply. Raises :class:`ConfigError`
    when no supervisor runs, when it does not answer in time, or with the reason it refused."""
    pid = _supervisor_pid(layout)
    layout.requests.mkdir(exist_ok=True)
    name = layout.requests / f"{time.time_ns()}-{os.getpid()}"
    tmp, path, done = name.with_suffix(".tmp"), name.with_suffix(".json"), name.with_suffix(".done")
    tmp.write_text(json.dumps({**request, "reply": True}))
    tmp.replace(path)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout_s
    while not done.exists():
        if not _alive(pid):
            path.unlink(missing_ok=True)
            raise ConfigError(f"the sandbox's supervisor (pid {pid}) exited before serving {request['action']}")
        if time.monotonic() > deadline:
            path.unlink(missing_ok=True)
            raise ConfigError(f"the sandbox's supervisor did not serve {request['action']} in {timeout_s:.0f} s; "
                              f"see {layout.logs / 'supervisor.log'}")  # fmt: skip
        time.sleep(0.05)
    reply: dict[str, Any] = json.loads(done.read_text())
    done.unlink(missing_ok=True)
    if not reply.get("ok"):
        raise ConfigError(reply.get("error") or f"the supervisor refused {request['action']}")
    return reply


def pending(layout: Layout) -> list[tuple[Path, dict[str, Any]]]:
    """Requests waiting for the supervisor, oldest first."""
    if not layout.requests.is_dir():
        return []
    out = []
    for path in sorted(layout.requests.glob("*.json")):
        try:
            out.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            out.append((path, {"action": "unreadable"}))
    return out


def answer(path: Path, request: dict[str, Any], *, ok: bool, error: str = "", **fields: object) -> None:
    """Retire a served request; write its reply when the sender waits for one."""
    if request.get("reply"):
        tmp = path.with_suffix(".donetmp")
        tmp.write_text(json.dumps({"ok": ok, "error": error, **fields}))
        tmp.replace(path.with_suffix(".done"))
    path.unlink(missing_ok=True)


def _supervisor_pid(layout: Layout) -> int:
    from schedlab.slurm.state import read_state

    pid = read_state(layout).get("supervisor")
    if not pid or not _alive(pid):
        raise ConfigError(f"no Slurm sandbox is running in {layout.root} (start one with `schedlab slurm up`)")
    return int(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# ----- a powered-down node's leftovers ---------------------------------------------------------------
def node_steps(layout: Layout, node: str) -> list[int]:
    """The job steps (``slurmstepd``) of ``node`` and every process below them. A step keeps its
    node's slurmd log open, which is how it is told from the steps of other nodes."""
    log = str(layout.logs / f"slurmd-{node}.log")
    parents: dict[int, int] = {}
    steps: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            parents[pid] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"slurmstepd"):
                continue
            if any(os.readlink(fd.path) == log for fd in os.scandir(f"/proc/{pid}/fd")):
                steps.add(pid)
        except (OSError, ValueError, IndexError):
            continue
    found = set(steps)
    for pid in parents:
        p, hops = pid, 0
        while p in parents and hops < 64:
            p, hops = parents[p], hops + 1
            if p in steps:
                found.add(pid)
                break
    return sorted(found)
