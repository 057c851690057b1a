"""Run the ``schedlab`` command as a user would: in a pseudo-terminal, or as a process to signal."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

COMMAND = [sys.executable, "-m", "schedlab.cli"]
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(args: list[str], cwd: Path, *, columns: int = 100, timeout: float = 120) -> tuple[int, str]:
    """Run ``schedlab ARGS`` with stdin, stdout and stderr on a pseudo-terminal; (exit code, screen text)."""
    master, slave = os.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "40", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(COMMAND + args, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)  # fmt: skip
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the terminal closed: the process is gone
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise TimeoutError(f"schedlab {' '.join(args)} did not finish in {timeout} s")
    finally:
        os.close(master)
    code = proc.wait(timeout=30)
    return code, screen_text(b"".join(chunks).decode("utf-8", "replace"))


def screen_text(raw: str) -> str:
    """Terminal output without escape sequences, carriage returns as line breaks."""
    return _ESCAPES.sub("", raw).replace("\r\n", "\n").replace("\r", "\n")


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    """Start ``schedlab ARGS`` with output captured (no terminal)."""
    return subprocess.Popen(COMMAND + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.05)
