"""Start-up cost: user + sys CPU of a whole ``schedlab`` process, for a run that is mostly start-up.

Runs ``schedlab simulate --synthetic simple --jobs 100 --policy fifo --out DIR`` (and
``schedlab --help``) in fresh processes and prints the best of ``--repeat`` runs, in two modes:

- **cached**: Python may write bytecode; one warm-up run first, so every module loads from
  its cache, as in a user's install.
- **no cache**: ``PYTHONDONTWRITEBYTECODE=1`` on a fresh copy of the package, so schedlab's own
  modules are compiled from source on every run (third-party ones still load from their caches),
  as where the environment sets that variable over an editable install.

The package measured is the one ``import schedlab`` finds (set ``PYTHONPATH`` to measure
another checkout). CPU time depends on what else the machine runs: the load average is printed
before and after.

    python benchmarks/bench_startup.py
    python benchmarks/bench_startup.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import schedlab

RUN = ["simulate", "--synthetic", "simple", "--jobs", "100", "--policy", "fifo", "--no-progress"]


def cpu_s(argv: list[str], env: dict[str, str]) -> float:
    """User + sys CPU seconds of one child process running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(src: Path, scratch: Path, *, cached: bool, repeat: int) -> dict[str, list[float]]:
    """CPU seconds of each run of the 100-job simulation and of ``--help``, with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not cached:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    cli = [sys.executable, "-m", "schedlab.cli"]

    def commands(i: int) -> dict[str, list[str]]:
        return {"simulate 100 jobs": [*cli, *RUN, "--out", str(scratch / f"run{i}")], "--help": [*cli, "--help"]}

    if cached:
        for argv in commands(-1).values():
            cpu_s(argv, env)  # warm-up: writes the bytecode caches
    times: dict[str, list[float]] = {name: [] for name in commands(0)}
    for i in range(repeat):  # the commands alternate, so a change in the machine's load hits both
        for name, argv in commands(i).items():
            times[name].append(cpu_s(argv, env))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    args = parser.parse_args()
    package = Path(schedlab.__file__).parent
    print(f"schedlab from {package}; load average {os.getloadavg()[0]:.2f}")
    print("| mode | command | best CPU (s) | all runs (s) |")
    print("|---|---|--:|---|")
    for cached in (True, False):
        with tempfile.TemporaryDirectory(prefix="schedlab-startup-") as tmp:
            src = Path(tmp) / "src"
            shutil.copytree(package, src / "schedlab", ignore=shutil.ignore_patterns("__pycache__"))
            times = measure(src, Path(tmp), cached=cached, repeat=args.repeat)
        for name, runs in times.items():
            print(f"| {'cached' if cached else 'no cache'} | {name} | {min(runs):.2f} | {' '.join(f'{t:.2f}' for t in runs)} |")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
