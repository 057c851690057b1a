"""The sandbox's supervisor: one process that starts every daemon as its own child in the
foreground (``-D``/``-F``), waits until each is ready, records their PIDs, reaps them, and
on SIGTERM stops them in reverse order (SIGTERM, then SIGKILL after a grace period).

While the sandbox runs it also serves requests (:mod:`schedlab.slurm.power`): stop or start
one daemon, and power fake nodes down (stop their slurmd) and up (start it as freshly booted)
for Slurm's power saving. A request is a file in ``DIR/requests``; SIGUSR1 wakes the
supervisor to serve it at once (it also looks every half second).

``schedlab slurm up`` starts it detached; ``schedlab slurm down`` signals it. Run as
``python -m schedlab.slurm.supervisor DIR``. What it is doing is in ``DIR/sandbox.json``
(``status``: starting, ready, failed, stopped; ``pids`` of the running daemons, ``stopped``
those stopped on request) and its log in ``DIR/log/supervisor.log``.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from schedlab.errors import SchedlabError
from schedlab.slurm import power
from schedlab.slurm.conf import Layout, SandboxSpec, dbd_conf_text, expand_hostlist
from schedlab.slurm.state import read_state, spec_from_state, write_state

GRACE_S = 10.0
TICK_S = 0.5  # how often the running sandbox is looked at without a signal


class StartFailed(SchedlabError):
    """A daemon did not come up; the message names it and its log."""


class Supervisor:
    def __init__(self, root: Path) -> None:
        self.layout = Layout(root)
        self.spec: SandboxSpec = spec_from_state(read_state(self.layout))
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.argv: dict[str, list[str]] = {}
        self.stopped: dict[str, str] = {}  # daemon -> why: "powered down" or "stopped"
        self.stopping = False
        self.log = open(self.layout.logs / "supervisor.log", "a", buffering=1)  # noqa: SIM115 - lives as long as the process
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    # ----- lifecycle -------------------------------------------------------------------------
    def run(self) -> int:
        # The daemons inherit the signal mask (a daemon with SIGTERM blocked would not stop):
        # start them from an empty one, whoever started this process.
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGUSR1, lambda signum, frame: None)  # wakes the select below
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.layout.supervisor_pid.write_text(f"{os.getpid()}\n")
        self.layout.requests.mkdir(exist_ok=True)
        t0 = time.monotonic()
        try:
            self._start_all()
        except (StartFailed, OSError, subprocess.SubprocessError) as exc:
            self.say(f"start failed: {exc}")
            self._update(status="failed", error=str(exc))
            self._stop_all()
            return 1
        if self.stopping:
            self._stop_all()
            return 0
        self._update(status="ready", startup_s=round(time.monotonic() - t0, 2))
        self.say(f"ready in {time.monotonic() - t0:.1f} s")
        while not self.stopping:
            self._serve()
            self._watch()
            self._sleep(TICK_S)
        self._stop_all()
        return 0

    def _sleep(self, seconds: float) -> None:
        """Sleep until ``seconds`` pass or a signal arrives (SIGUSR1: a request; SIGTERM: stop)."""
        try:
            select.select([self.wake_r], [], [], seconds)
            while os.read(self.wake_r, 512):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def say(self, line: str) -> None:
        self.log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")

    def _update(self, **fields: object) -> None:
        state = read_state(self.layout)
        state.update(fields)
        state["pids"] = {name: p.pid for name, p in self.children if p.poll() is None}
        state["stopped"] = dict(self.stopped)
        write_state(self.layout, state)

    def _watch(self) -> None:
        """Note a daemon that exited on its own (the sandbox stays up, degraded)."""
        for name, p in self.children:
            code = p.poll()
            if name in self.stopped:
                continue
            if code is not None and name not in read_state(self.layout).get("exited", {}):
                self.say(f"{name} exited with code {code}")
                state = read_state(self.layout)
                state.setdefault("exited", {})[name] = code
                write_state(self.layout, state)
                self._update()

    # ----- starting ----------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str], *, fresh_boot: bool = False) -> subprocess.Popen[bytes]:
        """Start ``name``; a daemon started before (stopped on request) keeps its place in the
        stopping order. ``fresh_boot``: a slurmd that reports its node as just booted."""
        out = open(self.layout.logs / f"{name.replace(' ', '-')}.out", "ab")  # noqa: SIM115 - the child keeps it
        env = {**os.environ, "SLURM_CONF": str(self.layout.slurm_conf)}
        run = power.fresh_boot_argv(argv) if fresh_boot else argv
        proc = subprocess.Popen(run, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        out.close()
        self.argv[name] = argv
        at = next((i for i, (n, _) in enumerate(self.children) if n == name), None)
        if at is None:
            self.children.append((name, proc))
            self.say(f"started {name} (pid {proc.pid}): {' '.join(run)}")
            self._update(phase=f"starting {name.split()[0]}")
        else:
            self.children[at] = (name, proc)
            self.stopped.pop(name, None)
            self.say(f"started {name} again (pid {proc.pid}): {' '.join(run)}")
            state = read_state(self.layout)
            state.get("exited", {}).pop(name, None)
            write_state(self.layout, state)
            self._update()
        return proc

    def _wait(self, name: str, ready: Callable[[], bool], timeout: float) -> None:
        """Wait until ``ready()`` holds; fail if the daemon exits or time runs out."""
        proc = dict(self.children).get(name)
        deadline = time.monotonic() + timeout
        while True:
            if self.stopping:
                return
            if proc is not None and proc.poll() is not None:
                raise StartFailed(f"{name} exited with code {proc.returncode}; see {self._log_of(name)}")
            if ready():
                return
            if time.monotonic() > deadline:
                raise StartFailed(f"{name} not ready after {timeout:.0f} s; see {self._log_of(name)}")
            time.sleep(0.1)

    def _log_of(self, name: str) -> Path:
        return self.layout.logs / f"{name.replace(' ', '-')}.out"

    def _start_all(self) -> None:
        lay, spec = self.layout, self.spec
        self._spawn("munged", [
            "munged", "-F", "--force", f"--socket={lay.munge_socket}", f"--key-file={lay.munge_key}",
            f"--pid-file={lay.root / 'run' / 'munged.pid'}", f"--log-file={lay.logs / 'munged.log'}",
            f"--seed-file={lay.root / 'munge' / 'seed'}", "--num-threads=10",
        ])  # fmt: skip
        self._wait("munged", lambda: lay.munge_socket.exists(), 20)
        if spec.accounting:
            self._start_accounting()
        if self.stopping:
            return
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(lay.slurm_conf)])
        self._wait("slurmctld", lambda: _command_ok(["scontrol", "ping"], lay), 60)
        for name in spec.node_names:
            (lay.spool / name).mkdir(parents=True, exist_ok=True)
            self._spawn(f"slurmd {name}", ["slurmd", "-D", "-N", name, "-f", str(lay.slurm_conf)])
        self._wait("slurmctld", lambda: _nodes_idle(lay, spec.nodes), 120)

    def _start_accounting(self) -> None:
        lay, spec = self.layout, self.spec
        data = lay.root / "db" / "data"
        if not (data / "mysql").exists():
            subprocess.run(
                ["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                 "--auth-root-authentication-method=normal"],
                stdin=subprocess.DEVNULL, stdout=open(lay.logs / "mariadb-install.out", "wb"),
                stderr=subprocess.STDOUT, timeout=120, check=True,
            )  # fmt: skip
        self._spawn("mariadb", [
            "mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={lay.db_socket}",
            f"--port={spec.port_base + 2}", "--bind-address=127.0.0.1", f"--pid-file={lay.root / 'run' / 'mariadb.pid'}",
            "--user=root", f"--log-error={lay.logs / 'mariadb.log'}", "--innodb-buffer-pool-size=64M",
        ])  # fmt: skip
        self._wait("mariadb", lambda: _port_open(spec.port_base + 2), 60)
        password = secrets.token_hex(12)
        sql = (
            "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1'; "
            f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
        )
        subprocess.run(["mariadb", "--no-defaults", "-S", str(lay.db_socket), "-uroot", "-e", sql],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=True)  # fmt: skip
        lay.dbd_conf.write_text(dbd_conf_text(spec, lay, password))
        lay.dbd_conf.chmod(0o600)
        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        self._wait("slurmdbd", lambda: _port_open(spec.port_base + 1), 60)
        accounts = [name for name in spec.partition_nodes()]
        for args in (["add", "cluster", spec.cluster_name], ["add", "account", *accounts],
                     ["add", "user", "root", f"account={accounts[0]}"]):  # fmt: skip
            _sacctmgr(lay, args)

    # ----- requests ----------------------------------------------------------------------------
    def _serve(self) -> None:
        """Serve every waiting request, oldest first."""
        for path, request in power.pending(self.layout):
            if self.stopping:
                return
            action = request.get("action")
            try:
                if action in ("suspend", "resume"):
                    nodes = expand_hostlist(str(request.get("nodes", "")))
                    unknown = [n for n in nodes if f"slurmd {n}" not in self.argv]
                    if unknown or not nodes:
                        raise StartFailed(f"{action}: no such node in this sandbox: {', '.join(unknown) or '(none)'}")
                    self.say(f"{action} {request.get('nodes')}")
                    if action == "suspend":
                        self._power_down(nodes)
                    else:
                        self._power_up(nodes)
                elif action == "stop":
                    self._stop_daemon(self._daemon(str(request.get("daemon", ""))), "stopped")
                elif action == "start":
                    self._start_daemon(self._daemon(str(request.get("daemon", ""))))
                else:
                    raise StartFailed(f"unknown request {action!r}")
            except Exception as exc:  # noqa: BLE001 - one bad request must not take the sandbox down
                self.say(f"request {path.name} failed: {exc}")
                power.answer(path, request, ok=False, error=str(exc))
            else:
                power.answer(path, request, ok=True, pids=read_state(self.layout).get("pids", {}))

    def _daemon(self, name: str) -> str:
        """A daemon's name as in ``pids``; a node's name stands for its slurmd."""
        for candidate in (name, f"slurmd {name}"):
            if candidate in self.argv:
                return candidate
        raise StartFailed(f"no daemon {name!r} in this sandbox (one of: {', '.join(self.argv)})")

    def _running(self, name: str) -> subprocess.Popen[bytes] | None:
        proc = dict(self.children).get(name)
        return proc if proc is not None and proc.poll() is None else None

    def _stop_daemon(self, name: str, why: str) -> None:
        proc = self._running(name)
        if proc is not None:
            proc.terminate()
            self._reap(name, proc)
            self.say(f"stopped {name} (pid {proc.pid}, exit code {proc.returncode}): {why}")
        self.stopped[name] = why
        self._update()

    def _start_daemon(self, name: str) -> None:
        """Start a stopped daemon and wait until it serves (a slurmd registers on its own)."""
        if self._running(name) is not None:
            return
        self._spawn(name, self.argv[name])
        lay, port_base = self.layout, self.spec.port_base
        nodes_up = [n for n in self.spec.node_names if self._running(f"slurmd {n}") is not None]
        ready = {
            "munged": lambda: lay.munge_socket.exists(),
            # answering, and every node whose slurmd runs has registered again
            "slurmctld": lambda: _command_ok(["scontrol", "ping"], lay) and _nodes_known(lay, nodes_up),
            "slurmdbd": lambda: _port_open(port_base + 1),
            "mariadb": lambda: _port_open(port_base + 2),
        }.get(name)
        if ready is not None:
            self._wait(name, ready, 60)

    def _power_down(self, nodes: list[str]) -> None:
        """A fake node powers off: its slurmd stops and whatever ran on it is killed."""
        for node in nodes:
            self._stop_daemon(f"slurmd {node}", "powered down")
            for pid in power.node_steps(self.layout, node):
                try:
                    os.kill(pid, signal.SIGKILL)
                    self.say(f"killed pid {pid}, left on {node}")
                except ProcessLookupError:
                    pass

    def _power_up(self, nodes: list[str]) -> None:
        """A fake node boots: its slurmd reports a boot time after the resume request, so
        slurmctld, which waits for a boot at or after the request, takes the node as up."""
        for node in nodes:
            if self._running(f"slurmd {node}") is not None:
                self._stop_daemon(f"slurmd {node}", "rebooting")
        for node in nodes:
            (self.layout.spool / node).mkdir(parents=True, exist_ok=True)
            self._spawn(f"slurmd {node}", self.argv[f"slurmd {node}"], fresh_boot=True)

    # ----- stopping -----------------------------------------------------------------------------
    def _stop_all(self) -> None:
        """SIGTERM every child in reverse start order (slurmd first, munged last), then SIGKILL."""
        self._update(status="stopping")
        if any(name == "slurmctld" and p.poll() is None for name, p in self.children):
            self._cancel_jobs()
        for name, proc in reversed(self.children):
            if proc.poll() is None:
                proc.terminate()
                if name.startswith("slurmd "):
                    continue  # the nodes stop together; wait for them below
            self._reap(name, proc)
        for name, proc in reversed(self.children):
            self._reap(name, proc)
        self.stopped.clear()
        self._update(status="stopped")
        self.say("stopped")

    def _cancel_jobs(self) -> None:
        """Cancel every job, so that no job step outlives its slurmd."""
        env = _env(self.layout)
        try:
            ids = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                 text=True, timeout=10).stdout.split()  # fmt: skip
            if ids:
                subprocess.run(["scancel", *ids], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and subprocess.run(
                    ["squeue", "-h", "-t", "RUNNING,COMPLETING", "-o", "%i"], env=env, stdin=subprocess.DEVNULL,
                    capture_output=True, text=True, timeout=10,
                ).stdout.strip():  # fmt: skip
                    time.sleep(0.2)
        except subprocess.TimeoutExpired:
            self.say("slurmctld did not answer while cancelling jobs")

    def _reap(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            self.say(f"{name} ignored SIGTERM for {GRACE_S:.0f} s; killing it")
            proc.kill()
            proc.wait()


def _env(layout: Layout) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(layout.slurm_conf)}


def _command_ok(argv: list[str], layout: Layout) -> bool:
    try:
        return subprocess.run(argv, env=_env(layout), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=5).returncode == 0  # fmt: skip
    except subprocess.TimeoutExpired:
        return False


def _nodes_idle(layout: Layout, count: int) -> bool:
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=_env(layout), stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=5)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    idle = {line.split()[0] for line in out.stdout.splitlines() if line.split()[-1] == "idle"}
    return len(idle) >= count


def _nodes_known(layout: Layout, names: list[str]) -> bool:
    """True when slurmctld knows the state of each of ``names`` (none is ``unknown``)."""
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=_env(layout), stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=5)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    states = dict(line.split()[:2] for line in out.stdout.splitlines() if len(line.split()) >= 2)
    return out.returncode == 0 and all(n in states and not states[n].startswith("unk") for n in names)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _sacctmgr(layout: Layout, args: list[str]) -> None:
    out = subprocess.run(["sacctmgr", "-i", *args], env=_env(layout), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    if out.returncode != 0 and "Nothing new added" not in out.stdout + out.stderr:
        raise StartFailed(f"sacctmgr {' '.join(args)} failed: {(out.stderr or out.stdout).strip()[:200]}")


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    return Supervisor(root).run()


if __name__ == "__main__":
    sys.exit(main())

