"""Results stay identical across a refactor: a digest of each policy's jobs table on fixed workloads.

Runs fifo, sjf, srtf, tiresias and qssf on 3,000 Venus-like jobs (qssf trained on the first
40 hours), and gfs, yarn-cs-preempt, chronus, lyra and fgd on 20,000 GFS-like jobs (load 0.9, spot
x2, durations capped at 7 days, as benchmarks/gfs_eval.py) on the GFS inventory, every run with seed 0 and the default engine settings, and prints the SHA-256 of
each jobs table's content (values and dtypes; independent of the Parquet writer). ``--policies all``
adds every other registered policy, on 1,000 Venus-like jobs on ``uniform:16x8`` (a policy that
refuses that workload is listed with its error, which must stay the same too). ``--save``
writes the digests with the columns they cover, ``--check`` recomputes each digest over the
saved columns and exits 1 on any difference; columns added since are listed, not compared (a
new column must not change the old ones). A digest saved as a plain string covers every column.

    python benchmarks/check_identical.py --save benchmarks/identical_before.json   # before a change
    python benchmarks/check_identical.py --check benchmarks/identical_before.json  # after it
    python benchmarks/check_identical.py --policies all --save /tmp/all.json          # every policy
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

CLASSIC = ("fifo", "sjf", "srtf", "tiresias", "qssf")
SPOT = ("gfs", "yarn-cs-preempt", "chronus", "lyra", "fgd")


def table_digest(jobs, columns: list[str]) -> str:
    """SHA-256 of ``columns`` of a jobs table: dtypes and values."""
    import pandas as pd

    part = jobs[columns]
    content = pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes()
    types = ",".join(f"{c}:{t}" for c, t in part.dtypes.astype(str).items()).encode()
    return hashlib.sha256(types + content).hexdigest()


def digest(policy: str, columns: list[str] | None = None) -> tuple[str, dict, float]:
    import pandas as pd

    from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run

    cluster = None
    if policy not in CLASSIC + SPOT:
        workload = WorkloadSpec(synthetic="venus", jobs=1000, seed=0)
        cluster = "uniform:16x8"
    elif policy in CLASSIC:
        workload = WorkloadSpec(synthetic="venus", jobs=3000, seed=0,
                                train_until_s=40 * 3600.0 if policy == "qssf" else None)  # fmt: skip
    else:
        workload = WorkloadSpec(synthetic="gfs", jobs=20000, seed=0, load=0.9,
                                options={"spot_scale": 2.0, "max_duration_s": 7 * 86400.0})  # fmt: skip
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        try:
            simulate_run(RunSpec(workload, cluster, policy), Path(out))
        except Exception as exc:  # noqa: BLE001  (a refusal is part of the behaviour compared)
            refusal = f"error: {type(exc).__name__}: {exc}"
            return policy, {"columns": columns or [], "sha256": refusal, "new": []}, time.perf_counter() - t0
        jobs = pd.read_parquet(Path(out) / "jobs.parquet")
    covered = [c for c in (columns or list(jobs.columns)) if c in jobs.columns]
    if columns is not None and len(covered) < len(columns):
        return policy, {"columns": columns, "sha256": "missing " + ",".join(sorted(set(columns) - set(covered))),
                        "new": []}, time.perf_counter() - t0  # fmt: skip
    new = [c for c in jobs.columns if c not in covered]
    return policy, {"columns": covered, "sha256": table_digest(jobs, covered), "new": new}, time.perf_counter() - t0


def _saved(entry, policy: str) -> tuple[list[str] | None, str]:
    """(columns, digest) of a saved entry; a plain string digest covers every column."""
    if isinstance(entry, str):
        return None, entry
    return entry["columns"], entry["sha256"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--save", type=Path, help="write the digests to this JSON file")
    action.add_argument("--check", type=Path, help="compare with the digests in this JSON file")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--policies", help="comma-separated subset (default: the ten above; all: every registered policy)")
    args = parser.parse_args()
    expected = json.loads(args.check.read_text()) if args.check else {}
    policies = args.policies.split(",") if args.policies else CLASSIC + SPOT
    if policies == ["all"]:
        from schedlab.policies.registry import POLICIES

        policies = list(CLASSIC + SPOT) + [p for p in POLICIES if p not in CLASSIC + SPOT]
    columns = [_saved(expected[p], p)[0] if p in expected else None for p in policies]
    with ProcessPoolExecutor(args.processes) as pool:
        results = list(pool.map(digest, policies, columns))
    differ = False
    for policy, value, wall in results:
        verdict = ""
        if expected:
            same = policy in expected and _saved(expected[policy], policy)[1] == value["sha256"]
            differ |= not same
            verdict = "identical" if same else "DIFFERENT"
            if value["new"]:
                verdict += f" (new columns, not compared: {', '.join(value['new'])})"
        print(f"{policy:<16} {value['sha256'][:16]}  {wall:6.1f} s  {verdict}")
    if args.save:
        saved = {policy: {"columns": value["columns"], "sha256": value["sha256"]} for policy, value, _ in results}
        args.save.write_text(json.dumps(saved, indent=2) + "\n")
        print(f"saved {args.save}")
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
