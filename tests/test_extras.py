"""The core install: without the 'forecast' extra (torch, lightgbm, rapidfuzz) core commands
run, and the commands that need it exit 2 with one line naming the extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Runs the schedlab command with the heavy libraries unimportable, as in a core install.
WITHOUT_EXTRAS = """
import sys
for name in ("torch", "lightgbm", "rapidfuzz"):
    sys.modules[name] = None  # any import of it raises ModuleNotFoundError
sys.argv = ["schedlab", *sys.argv[1:]]
from schedlab.cli import main
main()
"""
VENUS = ["--synthetic", "venus", "--jobs", "500", "--no-progress"]


def _schedlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *args], capture_output=True, text=True, timeout=300)


def test_fifo_runs_without_the_forecast_extra(tmp_path: Path) -> None:
    result = _schedlab("simulate", *VENUS, "--policy", "fifo", "--out", str(tmp_path / "fifo"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "fifo" / "summary.json").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", *VENUS, "--policy", "qssf", "--train-until", "2"],
        ["simulate", *VENUS, "--policy", "fifo", "--ces"],
        ["simulate", "--synthetic", "gfs", "--jobs", "500", "--policy", "gfs", "--no-progress"],
        ["forecast", "--synthetic", "gfs"],
    ],
    ids=["qssf", "ces", "gfs", "forecast"],
)
def test_forecast_features_name_the_extra(tmp_path: Path, args: list[str]) -> None:
    result = _schedlab(*args, "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: ") and "pip install 'schedlab[forecast]'" in lines[0]
    assert not (tmp_path / "out").exists()
