"""Workload summaries and their Rich rendering."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from schedlab.workload.inspect import describe, render_description
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import Workload


@pytest.fixture()
def workload(tmp_path: Path) -> Workload:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,submit_s,num_gpus,duration_s,user,tenant,priority_class\n"
        "a,0,1,3600,u1,t1,hp\n"
        "b,86400,4,7200,u2,t1,spot\n"
        "c,172800,0.5,1800,u1,t2,spot\n"
        "d,43200,1,3600,u3,t2,hp\n"
    )
    return load_trace(path, "csv")


def test_describe(workload: Workload) -> None:
    d = describe(workload)
    assert d["jobs"] == 4 and d["skipped"] == {}
    assert d["users"] == 3 and d["tenants"] == 2
    assert d["gpu_mix"] == {0.5: 0.25, 1.0: 0.5, 4.0: 0.25}
    assert d["classes"] == {"hp": 2, "spot": 2}
    assert d["final_states"] == {"unknown": 4}
    assert d["duration_s"]["p50"] == 3600 and d["duration_s"]["mean"] == 4050
    assert d["duration_s"]["p10"] == pytest.approx(pd.Series([3600, 7200, 1800, 3600]).quantile(0.1))
    assert d["submit_span_days"] == 2.0
    assert d["gpu_hours"] == pytest.approx(1 + 8 + 0.25 + 1)
    assert d["origin"] is None


def test_describe_empty(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_s,num_gpus,duration_s\na,0,0,10\n")
    d = describe(load_trace(path, "csv", skip=("cpu",)))
    assert d["jobs"] == 0 and d["skipped"] == {"cpu_job": 1} and d["gpu_hours"] == 0


def test_render(workload: Workload) -> None:
    console = Console(record=True, width=120)
    console.print(render_description(describe(workload)))
    text = console.export_text()
    for expected in ("jobs.csv", "GPU-hours", "GPUs per job", "< 1", "25.00%", "spot", "p99"):
        assert expected in text
