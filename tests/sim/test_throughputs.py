"""Measured throughputs: the built-in table is the published file, and the perf model applies
the slowest-task rule (Hadar (1b)) on a job spread over GPU types."""

from __future__ import annotations

import json
import math

import pytest

from schedlab.errors import InputError
from schedlab.sim.job import Job
from schedlab.sim.perf import PerfModel
from schedlab.sim.throughputs import GAVEL_BUILTIN, HADAR_MODELS, ThroughputTable
from tests.simkit import cluster


def _job(model: str, gpus: int) -> Job:
    return Job(0, "j", 0.0, "", "default", "", "default", gpus, math.nan, "", 100.0, math.inf, model, math.nan)


def test_builtin_table_is_the_published_file(shared_data):
    table = ThroughputTable.from_gavel_json(shared_data / "gavel" / "simulation_throughputs.json", HADAR_MODELS.values())
    assert set(table.rows) == set(GAVEL_BUILTIN.rows)
    for key, row in GAVEL_BUILTIN.rows.items():
        assert table.rows[key] == pytest.approx(row, rel=1e-12)


def test_bad_file_is_an_input_error(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({"v100": {"oops": {}}, "p100": {}, "k80": {}}))
    with pytest.raises(InputError, match="v100 entry 'oops'"):
        ThroughputTable.from_gavel_json(bad)


def test_rate_is_measured_ratio_and_slowest_task_bounds_a_spread_job():
    spec = cluster([4, 4], types=["V100", "K80"])
    perf = PerfModel(spec)
    r50 = "ResNet-50 (batch size 64)"
    one = _job(r50, 1)
    assert perf.rate(one, (0,)) == pytest.approx(1.0)
    assert perf.rate(one, (1,)) == pytest.approx(0.6190282202246573 / 4.394774823323071)
    two = _job(r50, 2)  # scale 2: 7.92 it/s on V100, 1.26 on K80
    spread = perf.rate(two, (0, 1))
    assert spread == pytest.approx(1.2636370655757299 / 7.922054367597505)
    assert spread == perf.rate(two, (1,))


def test_unmeasured_scale_uses_the_largest_measured_below():
    assert GAVEL_BUILTIN.scale_for("CycleGAN", 4) == 1
    assert GAVEL_BUILTIN.scale_for("LM (batch size 20)", 6) == 4
    assert GAVEL_BUILTIN.speedup("LM (batch size 20)", 6, "P100") == pytest.approx(93.81478290324394 / 110.99685986392635)
