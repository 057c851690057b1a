"""Start and stop a local Slurm of fake GPU nodes: ``schedlab slurm up`` / ``down`` / ``status``
and the test fixture.

One host runs munged, slurmctld and one slurmd per fake node (each on its own port, with
``SlurmdParameters=config_overrides`` and GPUs that are character devices made with
``mknod``); with accounting also MariaDB and slurmdbd. Everything lives in one directory;
the daemons are children of a supervisor process (:mod:`schedlab.slurm.supervisor`) that
``down`` stops by PID, and ``down`` then checks that no process of the sandbox is left.
:func:`stop`, :func:`start` and :func:`restart` stop and start one daemon through the supervisor
(e.g. slurmctld, to test what survives a controller restart); with ``power_saving`` Slurm
itself powers fake nodes down and up through it (:mod:`schedlab.slurm.power`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.errors import ConfigError
from schedlab.slurm import power
from schedlab.slurm.conf import Layout, SandboxSpec, gres_conf_text, slurm_conf_text
from schedlab.slurm.state import read_state, spec_from_state, spec_to_state, write_state

INSTALL = "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
INSTALL_ACCOUNTING = "apt-get install -y --no-install-recommends slurmdbd mariadb-server"
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "scancel", "sacct")
ACCOUNTING_BINARIES = ("slurmdbd", "mariadbd", "mariadb-install-db", "mariadb", "sacctmgr")
DAEMON_NAMES = ("munged", "slurmctld", "slurmd", "slurmdbd", "mariadbd", "slurmstepd")
MAX_SOCKET_PATH = 100  # a Unix socket path is at most 107 bytes


@dataclass
class Sandbox:
    """A running sandbox as ``up`` returns it. ``supervisor`` is the supervisor's process
    handle when this process started it (a test fixture reaps it through the handle)."""

    layout: Layout
    spec: SandboxSpec
    state: dict[str, Any]
    supervisor: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment for Slurm's client commands against this sandbox."""
        return {**os.environ, "SLURM_CONF": str(self.layout.slurm_conf)}


def missing_binaries(accounting: bool) -> list[str]:
    names = BINARIES + (ACCOUNTING_BINARIES if accounting else ())
    return [b for b in names if shutil.which(b) is None]


def check_can_start(spec: SandboxSpec, root: Path) -> None:
    """Refuse with one line when the sandbox cannot start here, saying what to change."""
    missing = missing_binaries(spec.accounting)
    if missing:
        install = INSTALL + (f" && {INSTALL_ACCOUNTING}" if spec.accounting else "")
        raise ConfigError(f"Slurm is not installed here ({', '.join(missing)} not found); install it with: {install}")
    if os.geteuid() != 0:
        raise ConfigError("the Slurm sandbox must run as root (its slurmd launch jobs and its fake GPUs are "
                          "device files made with mknod); run it with sudo or as root")  # fmt: skip
    if len(str(Layout(root).sockets)) > MAX_SOCKET_PATH - 50:
        raise ConfigError(f"the temporary folder {Layout(root).sockets.parent} is too deep for Unix sockets; "
                          "set TMPDIR to a shorter one")  # fmt: skip
    for daemon, port in spec.ports.items():
        if not port_free(port):
            raise ConfigError(f"port {port} (for {daemon}) is taken, perhaps by another sandbox; "
                              f"choose other ports with --port-base (now {spec.port_base})")  # fmt: skip


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def running_state(root: Path) -> dict[str, Any] | None:
    """The sandbox state in ``root`` if its supervisor is alive, else None."""
    layout = Layout(root)
    if not layout.state_file.exists():
        return None
    state = read_state(layout)
    pid = state.get("supervisor")
    return state if pid and alive(pid) else None


def up(spec: SandboxSpec, root: Path, *, timeout_s: float = 240.0,
       on_wait: Callable[[str], None] | None = None) -> Sandbox:  # fmt: skip
    """Write the sandbox's files into ``root``, start its supervisor and wait until every node
    is idle. Raises :class:`ConfigError` with the reason (and the log to read) otherwise."""
    root = root.resolve()
    running = running_state(root)
    if running is not None:
        raise ConfigError(f"a Slurm sandbox is already running in {root} (supervisor pid {running['supervisor']}); "
                          f"stop it with `schedlab slurm down --dir {root}`")  # fmt: skip
    check_can_start(spec, root)
    layout = Layout(root)
    _prepare(spec, layout)
    log = open(layout.logs / "supervisor.out", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen([sys.executable, "-m", "schedlab.slurm.supervisor", str(root)], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    log.close()
    state = read_state(layout)
    state["supervisor"] = proc.pid
    write_state(layout, state)
    deadline = time.monotonic() + timeout_s
    while True:
        state = read_state(layout)
        if state["status"] == "ready":
            return Sandbox(layout, spec, state, proc)
        if state["status"] == "failed" or proc.poll() is not None:
            proc.wait(timeout=30)
            reason = state.get("error") or f"the supervisor exited; see {layout.logs / 'supervisor.out'}"
            raise ConfigError(f"the Slurm sandbox did not start: {reason}")
        if time.monotonic() > deadline:
            _stop(layout, proc.pid, proc)
            raise ConfigError(f"the Slurm sandbox was not ready after {timeout_s:.0f} s; see {layout.logs}")
        if on_wait is not None:
            on_wait(state.get("phase", "starting"))
        time.sleep(0.2)


def _prepare(spec: SandboxSpec, layout: Layout) -> None:
    """A clean directory: old state, spool, logs and database of a stopped sandbox are removed."""
    root = layout.root
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    for sub in ("state", "log", "run", "db", "dev", "requests", "power"):
        shutil.rmtree(root / sub, ignore_errors=True)
        (root / sub).mkdir()
    for folder in dict.fromkeys((layout.spool, layout.munge_socket.parent, layout.munge_key.parent)):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, mode=0o755)
    layout.munge_socket.parent.chmod(0o755)  # munged needs execute on the socket's directory for every user
    layout.munge_key.write_bytes(os.urandom(1024))
    layout.munge_key.chmod(0o600)
    for i in range(spec.gpus_per_node):
        os.mknod(layout.devices / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, i))  # character devices
    layout.slurm_conf.write_text(slurm_conf_text(spec, layout))
    layout.gres_conf.write_text(gres_conf_text(spec, layout))
    if spec.power_saving:
        power.write_programs(layout)
    write_state(layout, {"status": "starting", "spec": spec_to_state(spec), "root": str(layout.root)})


def down(root: Path, *, timeout_s: float = 60.0) -> list[str]:
    """Stop the sandbox in ``root``: its supervisor stops every daemon; then any process left
    from it (jobs, steps) is killed. Returns what had to be killed after the supervisor."""
    layout = Layout(root.resolve())
    state = read_state(layout)
    pid = state.get("supervisor")
    if pid and alive(pid):
        _stop(layout, pid, None, timeout_s=timeout_s)
    leftovers = _sweep(layout)
    if layout.sockets != layout.root:
        shutil.rmtree(layout.sockets, ignore_errors=True)
    state = read_state(layout)
    state["status"] = "stopped"
    state["pids"] = {}
    write_state(layout, state)
    return leftovers


def _stop(layout: Layout, pid: int, proc: subprocess.Popen[bytes] | None, *, timeout_s: float = 60.0) -> None:
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(timeout=10)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def sandbox_processes(layout: Layout) -> list[tuple[int, str]]:
    """Processes that belong to the sandbox: its daemons and job steps (their command line or
    ``SLURM_CONF`` names the sandbox) and everything below a job step."""
    conf = f"SLURM_CONF={layout.slurm_conf}".encode()
    root = str(layout.root)
    found: dict[int, str] = {}
    parents: dict[int, int] = {}
    for pid, cmd, env, ppid in _processes():
        parents[pid] = ppid
        name = cmd.split(" ", 1)[0].rsplit("/", 1)[-1].rstrip(":")
        if root in cmd and name in DAEMON_NAMES or name in DAEMON_NAMES and conf in env:
            found[pid] = cmd
    steps = {pid for pid, cmd in found.items() if cmd.startswith("slurmstepd")}
    for pid, cmd, _, _ in _processes():
        p, seen = pid, 0
        while p in parents and seen < 64:
            p, seen = parents[p], seen + 1
            if p in steps:
                found[pid] = cmd
                break
    found.pop(os.getpid(), None)
    return sorted(found.items())


def _processes() -> Iterator[tuple[int, str, bytes, int]]:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            env = Path(f"/proc/{pid}/environ").read_bytes()
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if cmd and alive(pid):
            yield pid, cmd, env, ppid


def _sweep(layout: Layout) -> list[str]:
    left = sandbox_processes(layout)
    for pid, _ in left:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid, _ in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, _ in left:
        if alive(pid):
            _signal(pid, signal.SIGKILL)
    return [f"{pid} {cmd}" for pid, cmd in left]


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def status(root: Path) -> dict[str, Any]:
    """The sandbox's state with which of its daemons still run."""
    layout = Layout(root.resolve())
    state = read_state(layout)
    state["alive"] = {name: alive(pid) for name, pid in state.get("pids", {}).items()}
    state["supervisor_alive"] = bool(state.get("supervisor")) and alive(state["supervisor"])
    return state


@contextmanager
def running(spec: SandboxSpec, root: Path, *, timeout_s: float = 240.0) -> Iterator[Sandbox]:
    """A sandbox for the duration of a ``with`` block (tests, scripts); always stopped after."""
    box = up(spec, root, timeout_s=timeout_s)
    try:
        yield box
    finally:
        down(root)
        if box.supervisor is not None:
            box.supervisor.wait(timeout=30)


def stop(root: Path, daemon: str, *, timeout_s: float = 60.0) -> None:
    """Stop one daemon of the running sandbox in ``root`` (``slurmctld``, ``slurmdbd``,
    ``slurmd gpu-n3`` or just ``gpu-n3``) until :func:`start`; the others keep running.
    slurmctld saves its state when stopped and reads it back when started: jobs survive."""
    power.send(Layout(root.resolve()), {"action": "stop", "daemon": daemon}, timeout_s=timeout_s)


def start(root: Path, daemon: str, *, timeout_s: float = 120.0) -> None:
    """Start a daemon stopped with :func:`stop` and wait until it serves (slurmctld answers
    ``scontrol ping``; a slurmd registers on its own). Nothing happens if it runs."""
    power.send(Layout(root.resolve()), {"action": "start", "daemon": daemon}, timeout_s=timeout_s)


def restart(root: Path, daemon: str, *, down_s: float = 0.0, timeout_s: float = 120.0) -> float:
    """Stop ``daemon``, keep it stopped ``down_s`` seconds, start it again; the seconds it was
    not running."""
    stop(root, daemon, timeout_s=timeout_s)
    t0 = time.monotonic()
    time.sleep(down_s)
    start(root, daemon, timeout_s=timeout_s)
    return time.monotonic() - t0


def spec_of(root: Path) -> SandboxSpec:
    return spec_from_state(read_state(Layout(root.resolve())))


def memory_mb(layout: Layout) -> dict[str, float]:
    """Resident memory (MB) of each running process of the sandbox, by PID and command."""
    out = {}
    for pid, cmd in sandbox_processes(layout):
        try:
            rss_kb = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if line.startswith("VmRSS:"))  # fmt: skip
        except (OSError, StopIteration):
            continue
        out[f"{pid} {cmd}"] = rss_kb / 1024.0
    return out


def find_port_base(nodes: int, *, start: int = 20000, stop: int = 60000, step: int = 500) -> int:
    """The first base from ``start`` whose ports (as :class:`SandboxSpec` lays them out) are all free."""
    for base in range(start, stop, step):
        if all(port_free(base + off) for off in (0, 1, 2, *range(10, 10 + nodes))):
            return base
    raise ConfigError(f"no free range of {nodes + 10} ports between {start} and {stop}")
