"""The sandbox really starts Slurm, runs GPU jobs on it, and stops without leftovers."""

from __future__ import annotations

import subprocess
import time

import pytest

from schedlab.errors import ConfigError
from schedlab.slurm import sandbox
from schedlab.slurm.client import SlurmClient, SlurmUnavailable
from schedlab.slurm.conf import SandboxSpec

from .conftest import require_slurm, start


@pytest.mark.slow
def test_nodes_register_their_fake_gpus(slurm_box):
    nodes = SlurmClient(slurm_box.layout.slurm_conf).nodes()
    assert sorted(n.name for n in nodes) == ["gpu-n1", "gpu-n2", "gpu-n3", "gpu-n4"]
    assert {n.gpus for n in nodes} == {8}
    assert {n.gpu_type for n in nodes} == {"a100"}
    assert {n.partitions for n in nodes} == {("vc1",), ("vc2",)}


@pytest.mark.slow
def test_a_gpu_job_runs_and_a_two_node_job_takes_whole_nodes(slurm_box):
    client = SlurmClient(slurm_box.layout.slurm_conf)
    small = client.submit(["-p", "vc1", "--gres=gpu:3", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"])
    big = client.submit(["-p", "vc2", "-N", "2", "--gres=gpu:8", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        jobs = {j.job_id: j for j in client.queue(all_states=True)}
        if all(jobs.get(i) and jobs[i].state == "COMPLETED" for i in (small, big)):
            break
        time.sleep(0.5)
    assert jobs[small].state == "COMPLETED" and jobs[big].state == "COMPLETED"
    assert jobs[small].gpus == 3
    assert jobs[big].gpus == 16 and jobs[big].nodes == 2
    assert jobs[big].node_list == "gpu-n[3-4]"


@pytest.mark.slow
def test_a_second_sandbox_on_taken_ports_is_refused(slurm_box, tmp_path):
    spec = SandboxSpec(nodes=4, port_base=slurm_box.spec.port_base)
    with pytest.raises(ConfigError, match=r"port \d+ \(for slurmctld\) is taken.*--port-base"):
        sandbox.up(spec, tmp_path)


@pytest.mark.slow
def test_a_second_up_in_the_same_directory_is_refused(slurm_box):
    with pytest.raises(ConfigError, match="already running"):
        sandbox.up(slurm_box.spec, slurm_box.layout.root)


@pytest.mark.slow
def test_down_leaves_no_process_and_jobs_do_not_outlive_it(tmp_path):
    require_slurm()
    box = start(tmp_path, nodes=2)
    client = SlurmClient(box.layout.slurm_conf)
    client.submit(["--gres=gpu:1", "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"])
    deadline = time.monotonic() + 20
    while not any(j.state == "RUNNING" for j in client.queue()) and time.monotonic() < deadline:
        time.sleep(0.2)
    steps = [cmd for _, cmd in sandbox.sandbox_processes(box.layout) if cmd.startswith("slurmstepd")]
    assert steps, "the job's slurmstepd should run while the job does"
    assert any("sleep 300" in cmd for _, cmd in sandbox.sandbox_processes(box.layout))
    sandbox.down(tmp_path)
    box.supervisor.wait(timeout=30)
    assert sandbox.sandbox_processes(box.layout) == []
    with pytest.raises(SlurmUnavailable):
        SlurmClient(box.layout.slurm_conf, timeout_s=5).queue()


def test_missing_binaries_are_named_with_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="slurmctld.*apt-get install -y --no-install-recommends slurmctld"):
        sandbox.check_can_start(SandboxSpec(nodes=2), tmp_path)


@pytest.mark.slow
def test_cli_up_status_down(tmp_path):
    require_slurm()
    base = str(sandbox.find_port_base(2))
    root = str(tmp_path / "box")
    up = subprocess.run(["schedlab", "slurm", "up", "--nodes", "2", "--port-base", base, "--dir", root],
                        capture_output=True, text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        assert f"export SLURM_CONF={root}/slurm.conf" in up.stdout
        status = subprocess.run(["schedlab", "slurm", "status", "--dir", root], capture_output=True, text=True, timeout=60)
        assert "nodes: 2 idle; GPUs in use 0/16" in status.stdout
        again = subprocess.run(["schedlab", "slurm", "up", "--nodes", "2", "--port-base", base, "--dir", root],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 2 and "already running" in again.stderr
    finally:
        down = subprocess.run(["schedlab", "slurm", "down", "--dir", root], capture_output=True, text=True, timeout=120)
    assert down.returncode == 0 and "no process is left" in down.stdout, down.stdout + down.stderr


def test_json_errors_from_a_lost_controller_are_not_an_empty_queue(monkeypatch):
    # squeue --json with no controller: exit code 0 and an errors list (recorded from 22.05.8).
    import json as _json

    answer = _json.dumps({"meta": {}, "errors": [{"description": "Failed while looking for jobs",
                                                  "error_number": -1, "error": "Unspecified error"}], "jobs": []})
    client = SlurmClient(None)
    monkeypatch.setattr(client, "run", lambda argv, **kw: answer)
    with pytest.raises(SlurmUnavailable, match="Failed while looking for jobs; Unspecified error"):
        client.queue()
