"""The command typed in a terminal: progress bars that move, and Ctrl-C / SIGTERM that leave nothing behind."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest
from terminal_kit import in_terminal, start, wait_for


def test_simulate_in_a_terminal_shows_progress_through_the_run(tmp_path: Path) -> None:
    code, screen = in_terminal(["simulate", "--synthetic", "venus", "--jobs", "20000", "--out", "runs/q"], tmp_path)
    assert code == 0, screen
    assert "Traceback" not in screen
    done = [int(m.replace(",", "")) for m in re.findall(r"([\d,]+)/20,000 jobs done", screen)]
    # The bar moves with finished jobs, so it shows values between the first arrivals and the end.
    assert any(0 < d < 20000 for d in done), screen
    assert done == sorted(done)
    assert "JCT mean" in screen and "results in" in screen
    assert json.loads((tmp_path / "runs/q/summary.json").read_text())["finished"] == 20000


def test_compare_in_a_terminal_shows_each_policy_and_its_result(tmp_path: Path) -> None:
    args = ["compare", "--synthetic", "venus", "--jobs", "3000", "-p", "fifo", "-p", "sjf", "--out", "cmp", "-j", "2"]
    code, screen = in_terminal(args, tmp_path)
    assert code == 0, screen
    assert "Traceback" not in screen
    for policy in ("fifo", "sjf"):
        assert re.search(rf"^{policy}\s.*jobs done", screen, re.M), screen
        assert re.search(rf"✓ {policy} JCT mean", screen), screen
    assert (tmp_path / "cmp/comparison.csv").is_file()


def test_errors_in_a_terminal_are_one_line(tmp_path: Path) -> None:
    code, screen = in_terminal(["simulate", "--synthetic", "nope", "--out", "x"], tmp_path)
    assert code == 2
    lines = [line for line in screen.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: unknown synthetic profile 'nope'"), screen


@pytest.mark.parametrize("command", ["simulate", "compare"])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_leaves_nothing_that_looks_finished(tmp_path: Path, command, signum, code) -> None:
    policies = ["--policy", "srtf"] if command == "simulate" else ["-p", "fifo", "-p", "srtf", "-j", "2"]
    proc = start([command, "--synthetic", "venus", "--jobs", "150000", *policies, "--out", "run"], tmp_path)
    # Interrupt once a simulation is under way: its staging directory exists and holds no summary yet.
    wait_for(lambda: any(tmp_path.glob(".run.partial-*")) or proc.poll() is not None)
    time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
