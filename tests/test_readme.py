"""Every ``schedlab`` command in the README, typed in a terminal exactly as written, works and shows something.

The commands run in a pseudo-terminal in a scratch folder beside the repository (so
``../shared/data`` paths resolve as they do for a user in the repository); a command that
reads the public data is skipped when it is absent. A ``compare`` must show policies that differ.
"""

from __future__ import annotations

import json
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


COMMANDS = readme_commands()


def test_the_readme_starts_with_an_install_and_run_line_and_a_test_line() -> None:
    text = (REPO / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert first[0].startswith("pip install -e . && schedlab simulate --synthetic")
    assert first[1].startswith("pip install -e '.[dev]' && python -m pytest")


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
