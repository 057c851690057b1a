"""A run leaves a complete run directory or nothing: on an error in the run, on losing the race
for --out, on Ctrl-C or SIGTERM at any moment; a symlinked --out stands for its target."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import ConfigError
from schedlab.experiments.outdir import staged


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_an_error_in_the_run_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), staged(tmp_path / "run", force=False) as stage:
        (stage / "jobs.parquet").write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_losing_the_race_for_out_leaves_the_winner_and_nothing_else(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=f"--out {out}: a run is already there"):
        with staged(out, force=False) as stage:
            (stage / "summary.json").write_text("{}")
            out.mkdir()
            (out / "summary.json").write_text('{"winner": true}')  # another run finished first
    assert (out / "summary.json").read_text() == '{"winner": true}' and leftovers(tmp_path) == []


def test_force_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    target, link = tmp_path / "target", tmp_path / "link"
    link.symlink_to(target)  # dangling until the first run
    for text in ("first", "second"):
        with staged(link, force=True) as stage:
            (stage / "summary.json").write_text(text)
    assert link.is_symlink() and (target / "summary.json").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "target"]


def test_runs_killed_at_random_moments_leave_a_whole_run_or_nothing(tmp_path):
    # from start-up to deep in the run (12,000 jobs take several seconds): most kills land mid-run
    rng = np.random.default_rng(7)
    killed = 0
    for i, (sig, delay) in enumerate(zip([signal.SIGTERM, signal.SIGINT] * 3, rng.uniform(0.3, 4.0, size=6))):
        parent = tmp_path / f"try{i}"
        parent.mkdir()
        proc = subprocess.Popen(["schedlab", "simulate", "--synthetic", "philly", "--jobs", "12000", "--policy",
                                 "tiresias", "--out", str(parent / "run"), "--no-progress"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(delay)
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        assert leftovers(parent) == [], (sig, delay)
        names = [p.name for p in parent.iterdir()]
        if code == 0:
            assert names == ["run"] and (parent / "run" / "run.json").is_file()
        else:
            assert code in (130, 143) and names == [], (sig, delay, code, names)
            killed += 1
    assert killed >= 4
