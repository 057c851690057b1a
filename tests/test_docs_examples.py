"""The Python code of docs/write-a-policy.md runs against the real API and prints what the page shows.

The block of "The contract" builds a scheduler that runs. The blocks of "The example" are one
module: it must define a policy that schedules exactly as examples/my_policy.py. The blocks of
"Run it" run in order, in a scratch folder (with ``examples`` linked in, as from the repository
root), and the registered script must print the ``text`` block that follows it.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.policies.registry import POLICIES
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.workload.synthetic import generate

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "write-a-policy.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def section(title: str) -> list[tuple[str, str]]:
    """(language, code) of the fenced blocks under the level-2 heading starting with ``title``."""
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)
    body = next(p for p in parts if p.startswith(title))
    return BLOCK.findall(body)


def doc_module() -> types.ModuleType:
    """The module the example's code blocks make."""
    source = "\n".join(code for lang, code in section("The example") if lang == "python")
    module = types.ModuleType("doc_policy")
    exec(compile(source, str(PAGE), "exec"), module.__dict__)
    return module


def jobs_table(policy) -> pd.DataFrame:
    cluster = load_cluster("uniform:8x8")
    workload = generate("simple", 400, seed=3, cluster_gpus=cluster.total_gpus)
    return Simulation(workload, cluster, policy, config=SimConfig(restore_s=30), seed=3).run().jobs


def test_the_pages_policy_schedules_as_the_example_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "examples"))
    from my_policy import SmallFirstCapped as Example

    Documented = doc_module().SmallFirstCapped
    tables = [jobs_table(Documented(cap=cap)) for cap in (0.25, 0.5)]
    assert not tables[0].equals(tables[1])  # the workload is one where the cap decides
    for cap, table in zip((0.25, 0.5), tables, strict=True):
        pd.testing.assert_frame_equal(table, jobs_table(Example(cap=cap)))


def test_the_run_it_scripts_run_and_print_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = section("Run it")
    python = [code for lang, code in blocks if lang == "python"]
    shown = [code for lang, code in blocks if lang == "text"]
    assert len(python) == 2 and len(shown) == 1
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    namespace: dict = {"__name__": "__main__"}
    try:
        exec(compile(python[0], str(PAGE), "exec"), namespace)
        capsys.readouterr()
        exec(compile(python[1], str(PAGE), "exec"), namespace)  # registers small-first-capped
    finally:
        POLICIES.pop("small-first-capped", None)  # the registry is shared by every test
    assert capsys.readouterr().out == shown[0]
    assert (tmp_path / "runs" / "mine" / "small-first-capped" / "jobs.parquet").is_file()


def test_the_one_line_queue_scheduler_runs() -> None:
    (code,) = [code for lang, code in section("The contract") if lang == "python"]
    namespace: dict = {}
    exec(compile(code, str(PAGE), "exec"), namespace)
    assert jobs_table(namespace["largest_first"])["finished"].all()
