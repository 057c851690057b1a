"""Loading a large trace: schedlab's loader against pandas' own read of the same CSV.

Writes a Helios-format ``cluster_log.csv`` of N rows (default 5 million) with realistic values,
then, each in a fresh process, measures wall time and peak memory (max RSS) of
``pandas.read_csv(engine="pyarrow")`` and of ``schedlab.workload.loaders.load_trace(path, "helios")``
(which parses, validates, skips and sorts). Target: the loader within 2x pandas' time and
under 3 GB. The two alternate ``--repeat`` times; the table shows each one's best wall time
(the machine may be shared) and its largest peak.

    python benchmarks/bench_load.py --rows 5000000
    python benchmarks/bench_load.py --rows 5000000 --trace /tmp/helios5m.csv   # keep the file for reruns
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

_MEASURE = """
import json, resource, sys, time
t0 = time.perf_counter()
if sys.argv[2] == "pandas":
    import pandas as pd
    n = len(pd.read_csv(sys.argv[1], engine="pyarrow"))
else:
    from schedlab.workload.loaders import load_trace
    n = len(load_trace(sys.argv[1], "helios"))
print(json.dumps({"rows": n, "wall_s": time.perf_counter() - t0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_trace(path: Path, rows: int, seed: int) -> None:
    """A Helios cluster_log.csv: 10 % CPU jobs, 2 % never started, durations lognormal."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 180 * 86400, rows)).astype(np.int64)
    queue = rng.exponential(600, rows).astype(np.int64)
    duration = np.maximum(1, rng.lognormal(7, 2, rows)).astype(np.int64)
    gpus = rng.choice([0, 1, 2, 4, 8, 16, 32], rows, p=[0.1, 0.5, 0.12, 0.12, 0.1, 0.04, 0.02])
    base = pd.Timestamp("2020-04-01")
    start = pd.to_datetime(base + pd.to_timedelta(submit + queue, unit="s")).strftime("%Y-%m-%d %H:%M:%S")
    start = np.where(rng.random(rows) < 0.02, "", start)
    frame = pd.DataFrame({
        "job_id": np.char.add("job", np.arange(rows).astype(str)),
        "user": np.char.add("u", rng.integers(0, 2000, rows).astype(str)),
        "vc": np.char.add("vc", rng.integers(0, 30, rows).astype(str)),
        "gpu_num": gpus,
        "cpu_num": gpus * 4 + 1,
        "node_num": np.maximum(1, gpus // 8),
        "state": rng.choice(["COMPLETED", "CANCELLED", "FAILED"], rows, p=[0.6, 0.25, 0.15]),
        "submit_time": pd.to_datetime(base + pd.to_timedelta(submit, unit="s")).strftime("%Y-%m-%d %H:%M:%S"),
        "start_time": start,
        "end_time": "",
        "duration": duration,
        "queue": queue,
    })  # fmt: skip
    frame.to_csv(path, index=False)


def run(path: Path, reader: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(path), reader], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout)


def summary(runs: list[dict]) -> dict:
    """Best wall time and largest peak over runs of one reader."""
    return {
        "rows": runs[0]["rows"],
        "wall_s": min(r["wall_s"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", type=Path, help="use this file, writing it first if it does not exist")
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs of each reader")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace or Path(tmp) / "cluster_log.csv"
        if not path.exists():
            t0 = time.perf_counter()
            write_trace(path, args.rows, args.seed)
            print(f"wrote {args.rows:,} rows in {time.perf_counter() - t0:.1f} s")
        print(f"trace {path} ({path.stat().st_size / 2**20:,.0f} MiB)")
        runs = [(run(path, "pandas"), run(path, "schedlab")) for _ in range(args.repeat)]
    pandas, ours = (summary(list(r)) for r in zip(*runs))
    print(f"{'reader':<28}{'rows':>12}{'wall s':>10}{'peak RSS MB':>14}")
    print(f"{'pandas.read_csv (pyarrow)':<28}{pandas['rows']:>12,}{pandas['wall_s']:>10.2f}{pandas['peak_rss_mb']:>14,.0f}")
    print(f"{'schedlab load_trace helios':<28}{ours['rows']:>12,}{ours['wall_s']:>10.2f}{ours['peak_rss_mb']:>14,.0f}")
    print(f"time ratio {ours['wall_s'] / pandas['wall_s']:.2f}x (target <= 2), peak {ours['peak_rss_mb'] / 1024:.2f} GB (target < 3)")


if __name__ == "__main__":
    main()
