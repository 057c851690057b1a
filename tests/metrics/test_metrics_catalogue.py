"""The metric catalogue: well formed, complete for a real run, and in step with the guide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.metrics.catalogue import BY_KEY, METRICS, Unit

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def _guide_summary_rows() -> list[tuple[set[str], set[str]]]:
    """The guide's ``summary.json`` table: per row, the keys it defines and the names its
    definition mentions."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("**`summary.json`**"))
    rows = []
    for line in lines[start + 1 :]:
        if rows and not line.startswith("|"):
            break
        if line.startswith("| `"):
            keys, definition = line.strip("|").split("|", 1)
            rows.append((set(re.findall(r"`([^`]+)`", keys)), set(re.findall(r"`([^`]+)`", definition))))
    return rows


@pytest.fixture(scope="module")
def run_summary() -> dict[str, Any]:
    return simulate_run(RunSpec(WorkloadSpec(synthetic="simple", jobs=40), None, "fifo"), None)


def test_catalogue_is_well_formed() -> None:
    assert len(BY_KEY) == len(METRICS)
    for metric in METRICS:
        assert metric.better in ("lower", "higher", None), metric.key
        assert metric.summary in (0, 1, 2) and metric.compare in (0, 1, 2), metric.key
        if metric.summary or metric.compare or metric.better:
            assert metric.unit not in (Unit.NAME, Unit.BREAKDOWN), metric.key


def test_guide_table_lists_the_catalogue(run_summary: dict[str, Any]) -> None:
    rows = _guide_summary_rows()
    documented = set().union(*(keys for keys, _ in rows))
    assert documented - set(BY_KEY) == set(), "keys in the guide but not in the catalogue"
    assert set(run_summary) - documented == set(), "a run's keys without a row in the guide"
    # a key without a row of its own lives inside a breakdown, whose row names it
    inside = set().union(*(names for keys, names in rows if any(BY_KEY[k].unit is Unit.BREAKDOWN for k in keys)))
    assert set(BY_KEY) - documented - inside == set(), "catalogued keys missing from the guide"


def test_a_runs_summary_is_catalogued_in_catalogue_order(run_summary: dict[str, Any]) -> None:
    assert list(run_summary) == [key for key in BY_KEY if key in run_summary]
