"""`schedlab serve slurm` against the real Slurm: it reorders the queue with --apply and only
proposes with a dry run, its SiteFactor survives hold and release, a restart after kill -9
repeats nothing, and it refuses what cannot work."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time

import pandas as pd
import pytest

from schedlab.errors import ConfigError
from schedlab.slurm import sandbox
from schedlab.slurm.client import SlurmClient, SlurmUnavailable
from schedlab.slurm.service import Service, ServeSettings, check_controller

from .conftest import require_slurm, start


@pytest.fixture()
def one_node(tmp_path):
    """A one-node (8 GPU) sandbox whose GPUs are held by a running job for about 6 s, with
    three long jobs queued behind it and a short one submitted last."""
    require_slurm()
    box = start(tmp_path / "box", nodes=1)
    client = SlurmClient(box.layout.slurm_conf)
    client.submit(["-J", "hold", "--gres=gpu:8", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 6"])
    deadline = time.monotonic() + 15
    while not any(j.state == "RUNNING" for j in client.queue()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for i in range(3):
        client.submit(["-J", f"long{i}", "--gres=gpu:8", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 1"])
    client.submit(["-J", "short", "--gres=gpu:8", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"])
    yield box, client
    sandbox.down(tmp_path / "box")
    box.supervisor.wait(timeout=30)


def first_started_after_hold(client: SlurmClient) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        jobs = [j for j in client.queue(all_states=True) if j.name != "hold" and j.start]
        if jobs:
            return min(jobs, key=lambda j: (j.start, j.job_id)).name
        time.sleep(0.3)
    raise AssertionError("no job started after the holding job")


@pytest.mark.slow
@pytest.mark.parametrize("apply", [True, False])
def test_sjf_puts_the_short_job_first_only_with_apply(one_node, tmp_path, apply):
    box, client = one_node
    service = Service(client, ServeSettings(policy="sjf", apply=apply), tmp_path / "state", lambda line: None)
    result = service.cycle()
    service.close()
    assert result.pending == 4 and result.changed == 4 and not result.errors
    assert first_started_after_hold(client) == ("short" if apply else "long0")
    log = pd.read_parquet(tmp_path / "state" / "decisions.parquet")
    assert log["applied"].eq(int(apply)).all()
    assert log.sort_values("rank")["rank"].tolist() == [0, 1, 2, 3]
    from schedlab.slurm.serve_report import draw, is_serve_dir

    assert is_serve_dir(tmp_path / "state")
    assert [p.name for p in draw(tmp_path / "state")] == ["decisions.png"]


def sacct_history(path, now: float) -> None:
    """A ``sacct --json`` export (made from a recorded one) of a day ago: 60 finished jobs
    named "short" that ran 5 s and 60 named "long0" that ran 3000 s, all by root."""
    import copy
    import json
    from pathlib import Path

    sample = Path(__file__).parents[1] / "workload" / "samples" / "slurm-22.05" / "sacct.json"
    doc = json.loads(sample.read_text())
    model = next(j for j in doc["jobs"] if j["name"] == "short")
    jobs = []
    for i in range(120):
        job = copy.deepcopy(model)
        name, ran = ("short", 5) if i % 2 else ("long0", 3000)
        start = int(now) - 86400 + 600 * i
        job.update(job_id=1000 + i, name=name, user="root", steps=[])
        job["time"].update(submission=start, eligible=start, start=start, end=start + ran, elapsed=ran)
        jobs.append(job)
    path.write_text(json.dumps({**doc, "jobs": jobs}))


@pytest.mark.slow
def test_qssf_ranks_by_the_history_it_is_given(one_node, tmp_path):
    # trained on a history where "short" jobs ran 5 s and "long" ones 3000 s, QSSF puts the short
    # job first; without a history every job is predicted alike and the queue order stands
    box, client = one_node
    sacct_history(tmp_path / "history.json", time.time())
    settings = ServeSettings(policy="qssf", apply=True, history_file=tmp_path / "history.json")
    lines: list[str] = []
    service = Service(client, settings, tmp_path / "state", lines.append)
    result = service.cycle()
    service.close()
    assert result.pending == 4 and not result.errors and not any("history" in line for line in lines)
    assert first_started_after_hold(client) == "short"
    assert not (tmp_path / "state" / "history.json").exists()  # the file was read, sacct not asked


@pytest.mark.slow
def test_site_factor_survives_hold_and_release_and_is_not_rewritten(one_node, tmp_path):
    box, client = one_node
    service = Service(client, ServeSettings(policy="sjf", apply=True), tmp_path / "state", lambda line: None)
    service.cycle()
    short = next(j for j in client.queue() if j.name == "short")
    client.run(["scontrol", "hold", str(short.job_id)])
    client.run(["scontrol", "release", str(short.job_id)])
    after = next(j for j in client.queue() if j.name == "short")
    assert after.priority == short.priority == max(j.priority for j in client.queue() if j.state == "PENDING")
    again = service.cycle()
    service.close()
    assert again.changed == 0  # nothing changed, nothing written


@pytest.mark.slow
def test_kill_9_mid_service_and_restart_repeats_nothing(one_node, tmp_path):
    box, client = one_node
    state = tmp_path / "state"
    argv = ["schedlab", "serve", "slurm", "--dir", str(box.layout.root), "--policy", "sjf", "--apply",
            "--interval", "1", "--state", str(state)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (state / "decisions.parquet").exists():
        time.sleep(0.1)
    time.sleep(1.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    written = sqlite3.connect(state / "serve.db").execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    assert written == 4  # one cycle wrote the four factors; later cycles found nothing to change
    rerun = subprocess.run([*argv, "--cycles", "2"], capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    db = sqlite3.connect(state / "serve.db")
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 4
    assert db.execute("SELECT MAX(cycle) FROM decisions").fetchone()[0] == 1
    assert "set job" not in rerun.stdout


@pytest.mark.slow
def test_refusals(tmp_path, monkeypatch):
    require_slurm()
    box = start(tmp_path / "box", nodes=1, extra=(("PriorityType", "priority/basic"),))
    try:
        client = SlurmClient(box.layout.slurm_conf)
        with pytest.raises(ConfigError, match="PriorityType=priority/basic ignores SiteFactor.*priority/multifactor"):
            check_controller(client, apply=False)
        cli = subprocess.run(["schedlab", "serve", "slurm", "--dir", str(box.layout.root), "--cycles", "1"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert cli.returncode == 2 and "priority/multifactor" in cli.stderr
    finally:
        sandbox.down(tmp_path / "box")
        box.supervisor.wait(timeout=30)


@pytest.mark.slow
def test_apply_needs_root_or_slurm_user(slurm_box, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 65534)  # nobody
    client = SlurmClient(slurm_box.layout.slurm_conf)
    with pytest.raises(ConfigError, match=r"only root or SlurmUser \(root\) may set SiteFactor"):
        check_controller(client, apply=True)
    check_controller(client, apply=False)  # a dry run needs no privilege


def test_a_lost_controller_is_retried_with_backoff(tmp_path):
    client = SlurmClient(tmp_path / "absent.conf", timeout_s=2)
    waits, lines = [], []

    def fail():
        raise SlurmUnavailable("no answer")

    service = Service(client, ServeSettings(policy="fifo", interval_s=5), tmp_path / "state", lines.append)
    service.cycle = fail
    calls = {"n": 0}

    def sleep(s):
        waits.append(s)
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        service.run(sleep=sleep)
    assert waits == [5, 10, 20, 40, 60]
    assert all("slurmctld does not answer" in line for line in lines)


@pytest.mark.slow
def test_the_service_outlives_a_slurmctld_restart(one_node, tmp_path):
    box, client = one_node
    state = tmp_path / "state"
    argv = ["schedlab", "serve", "slurm", "--dir", str(box.layout.root), "--policy", "sjf", "--apply",
            "--interval", "1", "--state", str(state), "--cycles", "15"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (state / "decisions.parquet").exists():
        time.sleep(0.1)
    sandbox.stop(box.layout.root, "slurmctld")
    time.sleep(12)  # longer than squeue's own retries (about 9 s), so a cycle fails
    sandbox.start(box.layout.root, "slurmctld")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "slurmctld does not answer" in out and "Traceback" not in out
    db = sqlite3.connect(state / "serve.db")
    assert db.execute("SELECT MAX(cycle) FROM decisions").fetchone()[0] == 1  # written once, before the outage
    assert int(db.execute("SELECT value FROM meta WHERE key = 'cycle'").fetchone()[0]) == 15


def test_site_factors_move_only_the_jobs_whose_place_changed():
    from schedlab.slurm.ranking import FACTOR_STEP, TOP_FACTOR, site_factors

    first = site_factors(["a", "b", "c", "d"])
    assert first == {j: TOP_FACTOR - i * FACTOR_STEP for i, j in enumerate("abcd")}
    kept = {j: first[j] for j in "bcd"}
    assert site_factors(["b", "c", "d"], kept) == kept  # "a" started: nobody moves
    inserted = site_factors(["b", "e", "c", "d"], kept)
    assert {j: inserted[j] for j in "bcd"} == kept and kept["b"] > inserted["e"] > kept["c"]
    assert site_factors(["b", "c", "d", "e"], kept)["e"] < kept["d"]
    swapped = site_factors(["c", "b", "d"], kept)  # the order among written jobs changed: renumbered
    assert swapped["c"] > swapped["b"] > swapped["d"]
