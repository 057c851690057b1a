"""GFS forecast comparison (Duan et al., ASPLOS '26, §4.6.1: Figure 10, Table 7) into docs/gfs-forecast.md.

Runs ``schedlab forecast`` on each data set below with ``--seeds N`` and puts the Markdown it
writes (mean ± std over the seeds, the paper's numbers beside ours) into the doc between the
data set's marker comments ``<!-- gfs-forecast:NAME:begin -->`` / ``<!-- ...:end -->``,
preceded by the command that produced it.

    python benchmarks/gfs_forecast.py                       # both data sets, 5 seeds
    python benchmarks/gfs_forecast.py --only earth --seeds 3
    python benchmarks/gfs_forecast.py --out runs/gfs-forecast  # keep the run directories

``synthetic``: the HP demand of ``--synthetic gfs`` (150,000 jobs; a new trace per seed).
``earth``: the real per-VC GPU demand (running + pending GPUs) of the 15 Helios Earth VCs in
May 2020 (``../shared/data/helios-artifact/Earth_vcs``; fixed data, new training seeds).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "gfs-forecast.md"
DATA = {
    "synthetic": ["--synthetic", "gfs"],
    "earth": ["--vc-sequences", "../shared/data/helios-artifact/Earth_vcs"],
}


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the part between the begin and end markers of ``name`` replaced by ``body``."""
    begin, end = f"<!-- gfs-forecast:{name}:begin -->", f"<!-- gfs-forecast:{name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{DOC}: markers {begin} / {end} not found")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body.rstrip()}\n{end}{tail}"


def run(name: str, seeds: int, out: Path) -> str:
    """Run the command for one data set; return the section's Markdown."""
    args = ["forecast", *DATA[name], "--seeds", str(seeds), "--out", str(out / name), "--force"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from schedlab.cli import app; app()", *args], cwd=ROOT, env=env, check=True)
    wall = time.perf_counter() - t0
    table = (out / name / "forecast_comparison.md").read_text()
    shown = " ".join(a if a != str(out / name) else "DIR" for a in args)
    return f"`schedlab {shown}` (wall time {wall / 60:.0f} min on one shared CPU core per model):\n\n{table}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", choices=sorted(DATA), action="append", help="data set(s) to run (default: all)")
    parser.add_argument("--out", type=Path, help="keep the run directories here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        for name in args.only or list(DATA):
            section = run(name, args.seeds, out)
            DOC.write_text(replace_section(DOC.read_text(), name, section))
            print(f"{DOC.relative_to(ROOT)}: section {name} rewritten")


if __name__ == "__main__":
    main()
