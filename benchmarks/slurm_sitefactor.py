"""How long writing SiteFactors takes on a real Slurm: N updates through one ``scontrol``
process (what ``schedlab serve slurm`` does) against one process per update.

Starts a one-node sandbox, queues N jobs behind one that holds the node, times both ways, stops the sandbox. Needs
Slurm's Debian packages and root.

    python benchmarks/slurm_sitefactor.py --jobs 300
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from schedlab.slurm import sandbox
from schedlab.slurm.client import SlurmClient
from schedlab.slurm.conf import SandboxSpec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitefactor-") as tmp:
        root = Path(tmp) / "box"
        box = sandbox.up(SandboxSpec(nodes=1, port_base=sandbox.find_port_base(1)), root)
        try:
            client = SlurmClient(box.layout.slurm_conf)
            client.submit(["--gres=gpu:8", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"])  # holds the node
            ids = [client.submit(["--gres=gpu:8", "-t", "1", "-o", "/dev/null", "--wrap", "true"])
                   for _ in range(args.jobs)]  # fmt: skip
            t0 = time.perf_counter()
            out = client.scontrol_batch([f"update JobId={j} SiteFactor={1000 + i}" for i, j in enumerate(ids)])
            batch = time.perf_counter() - t0
            assert "error" not in out.lower(), out
            t0 = time.perf_counter()
            for i, j in enumerate(ids):
                client.run(["scontrol", "update", f"JobId={j}", f"SiteFactor={5000 + i}"])
            single = time.perf_counter() - t0
            check = {q.job_id: q.priority for q in client.queue()}
            assert all(check[j] >= 5000 + i for i, j in enumerate(ids)), "an update did not take"
        finally:
            sandbox.down(root)
            box.supervisor.wait(timeout=30)
    print(f"{args.jobs} SiteFactor updates: one scontrol process {batch:.2f} s; "
          f"one process each {single:.2f} s ({1000 * single / args.jobs:.1f} ms per update)")


if __name__ == "__main__":
    main()
