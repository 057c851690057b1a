"""The compiled core (setup.py, ``SCHEDLAB_COMPILE=1``) decides exactly as the interpreted one.

Builds a wheel of this checkout with its core compiled by mypyc (about a minute), then runs every
registered policy on the small cases of the strict-context test in two processes, one importing
the wheel and one this checkout's sources, and compares the jobs tables (and one strict run, whose
guards hand compiled methods their real arguments)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import hashlib, json, sys
import schedlab
from schedlab.policies.registry import POLICIES
from tests.sim.test_strict_context import _run

digests = {name: hashlib.sha256(_run(name, strict=False).to_csv(index=False).encode()).hexdigest()
           for name in POLICIES}
digests["tiresias, strict"] = hashlib.sha256(_run("tiresias", strict=True).to_csv(index=False).encode()).hexdigest()
print(json.dumps({"compiled": schedlab.compiled_core(), "digests": digests}))
"""


def _digests(path: Path) -> dict[str, object]:
    """Run :data:`CHILD` with ``path`` first on the import path (the tests from this checkout)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(REPO)])}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_the_compiled_core_decides_as_the_interpreted_one(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(source)],
                   env={**os.environ, "SCHEDLAB_COMPILE": "1"}, check=True)  # fmt: skip
    (wheel,) = wheels.glob("schedlab-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)

    compiled, interpreted = _digests(site), _digests(REPO / "src")
    assert compiled["compiled"] is True and interpreted["compiled"] is False
    assert compiled["digests"] == interpreted["digests"]
