"""Every ``schedlab`` command in the README, typed in a terminal exactly as written, works and shows something.

The commands run in a pseudo-terminal in a scratch folder beside the repository (so
``../shared/data`` paths resolve as they do for a user in the repository); a command that
reads the public data is skipped when it is absent. A ``compare`` must show policies that differ.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from terminal_kit import in_terminal

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[list[str]]:
    """The ``schedlab`` command lines of the README's bash blocks, continuation lines joined."""
    text = (REPO / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#")[0].strip()
            line = line.rpartition("&& ")[2] if "&&" in line else line
            if line.startswith("schedlab "):
                commands.append(shlex.split(line)[1:])
    return commands


ALL_COMMANDS = readme_commands()
# The real-Slurm lines share one sandbox and the replay's output: they run in order, below.
SLURM_COMMANDS = [a for a in ALL_COMMANDS if a[0] in ("slurm", "serve") or "sacct" in a]
COMMANDS = [a for a in ALL_COMMANDS if a not in SLURM_COMMANDS]


def test_the_readme_starts_with_an_install_and_run_line_and_a_test_line() -> None:
    text = (REPO / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert first[0].startswith("pip install -e . && schedlab simulate --synthetic")
    assert first[1].startswith("pip install -e '.[dev]' && python -m pytest")


@pytest.mark.slow
@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) + f"#{i}" for i, a in enumerate(COMMANDS)])
def test_readme_command_runs_in_a_terminal(args: list[str], tmp_path: Path) -> None:
    if any("../shared/data" in a for a in args) and not (REPO.parent / "shared" / "data").is_dir():
        pytest.skip("needs the public data in ../shared/data")
    work = tmp_path / "work"
    work.mkdir()
    # Paths in the README are relative to the repository root.
    (work / "README.md").symlink_to(REPO / "README.md")
    (work / "experiments").symlink_to(REPO / "experiments")
    shared = tmp_path / "shared"
    if (REPO.parent / "shared").is_dir():
        shared.symlink_to(REPO.parent / "shared")
    if args[0] == "report":
        # report reads a compare directory made by an earlier README line: make a small one here.
        code, screen = in_terminal(["compare", "--synthetic", "simple", "--jobs", "300", "-p", "fifo", "-p", "srtf",
                                    "--out", args[1]], work)  # fmt: skip
        assert code == 0, screen
    code, screen = in_terminal(args, work, timeout=600)
    assert code == 0, screen
    assert "Traceback" not in screen and "error:" not in screen, screen
    assert screen.strip(), "the command printed nothing"
    if args[0] == "compare":
        out = work / args[args.index("--out") + 1]
        rows = [json.loads((out / p / "summary.json").read_text()) for p in _policies(args)]
        headline = [(r["jct_mean_s"], r["queue_mean_s"], r["preemptions"]) for r in rows]
        assert len(set(headline)) == len(headline), f"policies gave the same results: {headline}"
    shutil.rmtree(work)


def _policies(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a in ("-p", "--policy")]


@pytest.mark.slow
def test_readme_slurm_lines_run_in_order_in_a_terminal(tmp_path: Path) -> None:
    """up, replay, inspect of the replay's sacct.json, down: in one folder, as a user types them."""
    from schedlab.slurm import sandbox
    from schedlab.slurm.conf import Layout, SandboxSpec

    if sandbox.missing_binaries(accounting=True):
        pytest.skip(f"Slurm is not installed: {sandbox.INSTALL} && {sandbox.INSTALL_ACCOUNTING}")
    if os.geteuid() != 0:
        pytest.skip("the Slurm sandbox needs root")
    if not all(sandbox.port_free(p) for p in SandboxSpec(accounting=True).ports.values()):
        pytest.skip("the README's sandbox ports (16900 on) are taken on this machine")
    assert [a[:2] for a in SLURM_COMMANDS] == [["slurm", "up"], ["slurm", "replay"], ["traces", "inspect"],
                                               ["serve", "slurm"], ["slurm", "down"]]  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    screens = []
    try:
        for args in SLURM_COMMANDS:
            code, screen = in_terminal(args, work, timeout=600)
            screens.append(screen)
            assert code == 0 and "Traceback" not in screen and "error:" not in screen, screen
    finally:
        if (work / "slurm-sandbox" / "sandbox.json").exists():
            sandbox.down(work / "slurm-sandbox")
    assert "export SLURM_CONF=" in screens[0]
    assert "real Slurm vs simulated slurm-backfill" in screens[1]
    assert "150" in screens[2]
    assert "serving Slurm with sjf" in screens[3] and "CES: a check every" in screens[3]
    assert "no process is left" in screens[4]
    assert sandbox.sandbox_processes(Layout((work / "slurm-sandbox").resolve())) == []
