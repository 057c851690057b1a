"""Power saving in the sandbox (fake nodes powered down and up by stopping and starting their
slurmd through the supervisor) and restarting one daemon, against the real daemons."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import pytest

from schedlab.errors import ConfigError
from schedlab.slurm import power, sandbox
from schedlab.slurm.client import SlurmClient
from schedlab.slurm.conf import Layout, SandboxSpec, slurm_conf_text

from .conftest import require_slurm, start


def wait_for(what: str, ok: Callable[[], bool], timeout_s: float) -> float:
    """Seconds until ``ok()`` holds; fails naming ``what`` after ``timeout_s``."""
    t0 = time.monotonic()
    while not ok():
        if time.monotonic() - t0 > timeout_s:
            pytest.fail(f"{what}: not after {timeout_s:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - t0


def node_state(client: SlurmClient, node: str) -> str:
    """sinfo's compact state: ``idle``, ``drng!`` (draining, to power down), ``idle~`` (powered down)."""
    return client.run(["sinfo", "-h", "-N", "-n", node, "-o", "%t"]).strip()


def job_state(client: SlurmClient, job: int) -> str:
    return client.run(["squeue", "-h", "--states=all", "-j", str(job), "-o", "%T"]).strip()


def slurmd_pid(box: sandbox.Sandbox, node: str) -> int | None:
    pid = sandbox.status(box.layout.root)["pids"].get(f"slurmd {node}")
    return pid if pid and sandbox.alive(pid) else None


def submit(client: SlurmClient, *args: str) -> int:
    return client.submit([*args, "-o", "/dev/null"])


@pytest.fixture(scope="module")
def power_box(tmp_path_factory):
    """3 nodes with power saving; backfill every 2 s, nodes powered down 3 s after the suspend."""
    require_slurm()
    root = tmp_path_factory.mktemp("power")
    box = start(root, nodes=3, power_saving=True, scheduler_parameters="bf_interval=2",
                extra=(("SuspendTimeout", "3"),))  # fmt: skip
    yield box
    sandbox.down(root)
    box.supervisor.wait(timeout=30)


def test_power_saving_settings(tmp_path):
    layout = Layout(tmp_path)
    conf = slurm_conf_text(SandboxSpec(nodes=2, power_saving=True), layout)
    lines = dict(line.split("=", 1) for line in conf.splitlines() if "=" in line and not line.startswith(("Node", "Part")))
    assert lines["SuspendProgram"] == str(layout.suspend_program)
    assert lines["ResumeProgram"] == str(layout.resume_program)
    assert lines["SuspendTime"] == "31536000"  # INFINITE would turn power saving off
    assert (lines["SuspendRate"], lines["ResumeRate"]) == ("0", "0")
    assert "power_save_interval=1" in lines["SlurmctldParameters"]
    extra = (("SuspendTimeout", "2"), ("SlurmctldParameters", "enable_configless"))
    conf = slurm_conf_text(SandboxSpec(nodes=2, power_saving=True, extra=extra), layout)
    assert "SuspendTimeout=2\n" in conf and "SuspendTimeout=5" not in conf
    assert "SlurmctldParameters=enable_configless,power_save_interval=1\n" in conf
    assert "Suspend" not in slurm_conf_text(SandboxSpec(nodes=2), layout)


def test_the_suspend_program_leaves_a_request(tmp_path):
    layout = Layout(tmp_path)
    layout.requests.mkdir()
    power.write_programs(layout)
    out = subprocess.run([str(layout.suspend_program), "gpu-n[3-4]"], env={}, capture_output=True, timeout=10)
    assert out.returncode == 0, out.stderr
    [(path, request)] = power.pending(layout)
    assert request == {"action": "suspend", "nodes": "gpu-n[3-4]"}
    power.answer(path, request, ok=True)
    assert list(layout.requests.iterdir()) == []


@pytest.mark.slow
def test_power_down_asap_waits_for_the_job_then_power_up_brings_the_node_back(power_box):
    client = SlurmClient(power_box.layout.slurm_conf)
    old_pid = slurmd_pid(power_box, "gpu-n3")
    job = submit(client, "-w", "gpu-n3", "--gres=gpu:2", "-t", "1", "--wrap", "sleep 4")
    wait_for("the job runs", lambda: job_state(client, job) == "RUNNING", 20)
    client.run(["scontrol", "update", "NodeName=gpu-n3", "State=POWER_DOWN_ASAP"])
    assert node_state(client, "gpu-n3").startswith(("drng", "mix")), "the node drains while its job runs"
    assert slurmd_pid(power_box, "gpu-n3") == old_pid
    wait_for("the node powers down", lambda: node_state(client, "gpu-n3") == "idle~", 30)
    assert job_state(client, job) == "COMPLETED"
    assert not sandbox.alive(old_pid) and slurmd_pid(power_box, "gpu-n3") is None
    assert sandbox.status(power_box.layout.root)["stopped"] == {"slurmd gpu-n3": "powered down"}
    [node] = [n for n in client.nodes() if n.name == "gpu-n3"]
    assert "POWERED_DOWN" in node.flags

    client.run(["scontrol", "update", "NodeName=gpu-n3", "State=POWER_UP"])
    wait_for("the node is up and idle", lambda: node_state(client, "gpu-n3") == "idle", 30)
    assert slurmd_pid(power_box, "gpu-n3") not in (None, old_pid)
    job = submit(client, "-w", "gpu-n3", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 1")
    wait_for("a job runs on the woken node", lambda: job_state(client, job) == "COMPLETED", 30)


@pytest.mark.slow
def test_a_job_that_needs_a_powered_down_node_wakes_it(power_box):
    client = SlurmClient(power_box.layout.slurm_conf)
    client.run(["scontrol", "update", "NodeName=gpu-n2", "State=POWER_DOWN_ASAP"])
    wait_for("the idle node powers down", lambda: node_state(client, "gpu-n2") == "idle~", 30)
    assert slurmd_pid(power_box, "gpu-n2") is None
    job = submit(client, "-w", "gpu-n2", "--gres=gpu:4", "-t", "1", "--wrap", "sleep 1")
    wait_for("Slurm resumes the node", lambda: slurmd_pid(power_box, "gpu-n2") is not None, 15)
    # the job leaves CONFIGURING at slurmctld's next 30 s check once the node is up
    wait_for("the job runs on the woken node", lambda: job_state(client, job) == "COMPLETED", 50)
    assert node_state(client, "gpu-n2") == "idle"


@pytest.mark.slow
def test_slurmctld_restart_keeps_the_queue(power_box):
    client = SlurmClient(power_box.layout.slurm_conf, timeout_s=5)
    running = submit(client, "-w", "gpu-n1", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 12")
    wait_for("the first job runs", lambda: job_state(client, running) == "RUNNING", 20)
    pending = submit(client, "-w", "gpu-n1", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 1")
    ctld = sandbox.status(power_box.layout.root)["pids"]["slurmctld"]
    sandbox.stop(power_box.layout.root, "slurmctld")
    assert not sandbox.alive(ctld)
    ping = subprocess.run(["scontrol", "ping"], env=power_box.env, capture_output=True, text=True, timeout=20)
    assert ping.returncode != 0 and "DOWN" in ping.stdout
    time.sleep(2)
    sandbox.start(power_box.layout.root, "slurmctld")
    assert sandbox.status(power_box.layout.root)["pids"]["slurmctld"] != ctld
    jobs = {j.job_id: j.state for j in client.queue()}
    assert jobs[running] == "RUNNING" and jobs[pending] == "PENDING"
    wait_for("the running job completes", lambda: job_state(client, running) == "COMPLETED", 20)
    wait_for("the pending job then runs", lambda: job_state(client, pending) == "COMPLETED", 20)


@pytest.mark.slow
def test_restart_refuses_an_unknown_daemon(power_box):
    with pytest.raises(ConfigError, match="no daemon 'slurmxyz'.*slurmctld"):
        sandbox.restart(power_box.layout.root, "slurmxyz")


@pytest.mark.slow
def test_down_after_power_cycles_leaves_no_process(tmp_path):
    require_slurm()
    box = start(tmp_path, nodes=2, power_saving=True, extra=(("SuspendTimeout", "2"),))
    client = SlurmClient(box.layout.slurm_conf)
    try:
        job = submit(client, "-w", "gpu-n2", "--gres=gpu:1", "-t", "5", "--wrap", "sleep 300")
        wait_for("the job runs", lambda: job_state(client, job) == "RUNNING", 20)
        assert power.node_steps(box.layout, "gpu-n2") and not power.node_steps(box.layout, "gpu-n1")
        client.run(["scontrol", "update", "NodeName=gpu-n2", "State=POWER_DOWN_FORCE"])
        wait_for("the node powers down", lambda: node_state(client, "gpu-n2") == "idle~", 30)
        assert power.node_steps(box.layout, "gpu-n2") == []
        assert not any("sleep 300" in cmd for _, cmd in sandbox.sandbox_processes(box.layout))
    finally:
        down = subprocess.run(["schedlab", "slurm", "down", "--dir", str(tmp_path)], capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        box.supervisor.wait(timeout=30)
    assert down.returncode == 0 and "no process is left" in down.stdout, down.stdout + down.stderr
    assert "killed a leftover" not in down.stderr
    assert sandbox.sandbox_processes(box.layout) == []
    assert json.loads(box.layout.state_file.read_text())["stopped"] == {}


def test_requests_need_a_running_sandbox(tmp_path):
    Layout(tmp_path).state_file.write_text(json.dumps({"status": "stopped", "supervisor": 0}))
    with pytest.raises(ConfigError, match="no Slurm sandbox is running"):
        sandbox.stop(tmp_path, "slurmctld")
