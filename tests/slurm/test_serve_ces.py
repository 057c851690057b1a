"""`schedlab serve slurm --ces` on the real Slurm: a CES cycle powers idle nodes down after
the running nodes fell, a job that needs them wakes them, and a restart repeats no action."""

from __future__ import annotations

import sqlite3
import time

import pytest

from schedlab.energy.ces import CESConfig
from schedlab.errors import ConfigError
from schedlab.slurm import sandbox
from schedlab.slurm.ces_live import check_power_saving
from schedlab.slurm.client import SlurmClient
from schedlab.slurm.service import Service, ServeSettings

from .conftest import require_slurm, start


def wait_for(what, ok, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting until {what}")


@pytest.mark.slow
def test_ces_powers_idle_nodes_down_and_a_job_wakes_them(tmp_path):
    require_slurm()
    # Slurm wakes powered-down nodes itself once it allocates them to a job; a slow background
    # pass for submissions (and no backfill cycle for a minute) lets the service's arrival check
    # come first, as it does for a CES that acts on arrival in a busy cluster.
    box = start(tmp_path / "box", nodes=3, power_saving=True, scheduler_parameters="bf_interval=60,batch_sched_delay=20")
    try:
        client = SlurmClient(box.layout.slurm_conf)
        for _ in range(2):
            client.submit(["--gres=gpu:8", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 3"])
        wait_for("both jobs run", lambda: sum(j.state == "RUNNING" for j in client.queue()) == 2, 45)
        ces = CESConfig(check_s=1.0, history_checks=1, buffer_nodes=1)
        service = Service(client, ServeSettings(policy="fifo", apply=True, ces=ces), tmp_path / "state", print)
        service.cycle()  # records 2 running nodes
        wait_for("the jobs end", lambda: all(j.state == "COMPLETED" for j in client.queue()), 20)
        time.sleep(1.0)
        service.cycle()  # 0 running, down from 2: power down to 0 + buffer 1 = two nodes
        db = sqlite3.connect(tmp_path / "state" / "serve.db")
        actions = db.execute("SELECT node, action, status FROM power ORDER BY rowid").fetchall()
        assert actions == [("gpu-n3", "POWER_DOWN_ASAP", "done"), ("gpu-n2", "POWER_DOWN_ASAP", "done")]
        wait_for("two nodes are powered down",
                 lambda: sum("POWERED_DOWN" in n.flags for n in client.nodes()) == 2, 30)  # fmt: skip
        job = client.submit(["-N", "2", "--gres=gpu:8", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"])
        service.cycle()  # the 2-node job finds 1 idle node: wake 1 + buffer 1
        woke = db.execute("SELECT node, action FROM power WHERE action = 'POWER_UP' ORDER BY rowid").fetchall()
        assert sorted(woke) == [("gpu-n2", "POWER_UP"), ("gpu-n3", "POWER_UP")]
        wait_for("the job ran", lambda: any(j.job_id == job and j.state == "COMPLETED"
                                            for j in client.queue(all_states=True)), 90)  # fmt: skip
        restarted = Service(client, ServeSettings(policy="fifo", apply=True, ces=ces), tmp_path / "state", print)
        restarted.cycle()
        assert db.execute("SELECT COUNT(*) FROM power").fetchone()[0] == 4  # nothing repeated
        service.close()
        restarted.close()
    finally:
        sandbox.down(tmp_path / "box")
        box.supervisor.wait(timeout=30)


def test_ces_is_refused_without_power_saving():
    with pytest.raises(ConfigError, match="--ces needs Slurm's power saving.*SuspendProgram, ResumeProgram"):
        check_power_saving({"SuspendTime": "NONE", "SuspendProgram": "(null)", "ResumeProgram": "(null)"})
    with pytest.raises(ConfigError, match="SuspendTime=INFINITE"):
        check_power_saving({"SuspendTime": "INFINITE", "SuspendProgram": "/x", "ResumeProgram": "/y"})
    check_power_saving({"SuspendTime": "31536000 sec", "SuspendProgram": "/x", "ResumeProgram": "/y"})
