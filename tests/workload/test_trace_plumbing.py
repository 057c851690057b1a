"""Time units, skip rules and tenant renaming for every trace format, and the Chronus trace on the
``philly`` preset end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from trace_samples import SAMPLES, write_sample
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import ConfigError, InputError
from schedlab.experiments.run import WorkloadSpec
from schedlab.workload.loaders import LOADERS, load_trace
from schedlab.workload.tenant_map import load_tenant_map

NUMERIC_DURATION = [f for f in SAMPLES if f != "philly"]  # the Philly JSON's times are all dates


def test_every_format_takes_time_unit_and_skip() -> None:
    for info in LOADERS.values():
        assert {"time_unit", "skip"} <= set(info.options), info.name


@pytest.mark.parametrize("fmt", NUMERIC_DURATION)
def test_time_unit_scales_the_numeric_time_fields(tmp_path: Path, fmt: str) -> None:
    path = write_sample(fmt, tmp_path)
    seconds = load_trace(path, fmt, **({"skip": ("cpu",)} if fmt == "csv" else {}))
    minutes = load_trace(path, fmt, time_unit="min", **({"skip": ("cpu",)} if fmt == "csv" else {}))
    assert len(seconds) == len(minutes) == 3
    assert minutes.jobs["duration_s"].to_numpy() == pytest.approx(60 * seconds.jobs["duration_s"].to_numpy())
    numeric_submit = SAMPLES[fmt][3]
    factor = 60 if numeric_submit else 1  # dates are dates whatever the unit
    assert minutes.jobs["submit_s"].to_numpy() == pytest.approx(factor * seconds.jobs["submit_s"].to_numpy())


def test_chronus_minutes_scale_deadlines_too(tmp_path: Path) -> None:
    w = load_trace(write_sample("tiresias", tmp_path), "philly", time_unit="h")
    jobs = w.jobs.set_index("job_id")
    assert jobs.loc["1", "submit_s"] == (70 - 10) * 3600.0
    assert jobs.loc["1", "duration_s"] == 60 * 3600.0
    assert jobs.loc["1", "deadline_s"] == (70 - 10 + 200) * 3600.0  # submit + first expected time
    assert jobs.loc["0", "deadline_s"] == 40 * 3600.0
    assert np.isnan(jobs.loc["3", "deadline_s"])  # best effort


@pytest.mark.parametrize("unit", ["days", "sec", ""])
def test_unknown_time_unit_is_a_config_error(tmp_path: Path, unit: str) -> None:
    with pytest.raises(ConfigError, match="unknown time unit"):
        load_trace(write_sample("elasticflow", tmp_path), "elasticflow", time_unit=unit)


def test_philly_json_refuses_a_time_unit_but_takes_seconds(tmp_path: Path) -> None:
    path = write_sample("philly", tmp_path)
    assert len(load_trace(path, "philly", time_unit="s")) == 3
    with pytest.raises(ConfigError, match="dates"):
        load_trace(path, "philly", time_unit="min")


# --- skip rules --------------------------------------------------------------------------------


def test_csv_zero_gpus_is_an_error_unless_skipped(tmp_path: Path) -> None:
    path = write_sample("csv", tmp_path)
    with pytest.raises(InputError, match="--skip cpu") as err:
        load_trace(path, "csv")
    assert err.value.row == 3
    w = load_trace(path, "csv", skip=("cpu",))
    assert w.skipped == {"cpu_job": 1} and len(w) == 3


@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_a_skip_rule_drops_and_counts_rows_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = write_sample(fmt, tmp_path)
    base = load_trace(path, fmt, skip=("cpu",))
    longest = float(base.jobs["duration_s"].max())
    w = load_trace(path, fmt, skip=("cpu", f"duration_s>={longest}"))
    assert w.skipped[f"skip duration_s>={longest}"] == 1
    assert w.skipped["cpu_job"] == 1  # the loader's own CPU skip, or the rule's on csv
    assert len(w) == len(base) - 1 and (w.jobs["duration_s"] < longest).all()
    assert w.jobs["submit_s"].min() == 0  # times shifted after the skip


def test_text_rule_and_missing_column_default(tmp_path: Path) -> None:
    path = write_sample("tiresias", tmp_path)
    w = load_trace(path, "tiresias", skip=("tenant==vc_0e4a51",))
    assert set(w.jobs["tenant"]) == {"vc_6214e9"} and w.skipped == {"cpu_job": 1, "skip tenant==vc_0e4a51": 1}
    # elasticflow has no tenant: every job has the default tenant "default"
    assert load_trace(write_sample("elasticflow", tmp_path), "elasticflow", skip=("tenant!=default",)).skipped == {
        "cpu_job": 1
    }


@pytest.mark.parametrize("rule", ["gpus==0", "duration_s<soon", "tenant<vc", "duration_s", "cpu_jobs"])
def test_bad_skip_rule_is_a_config_error(tmp_path: Path, rule: str) -> None:
    with pytest.raises(ConfigError, match="skip rule"):
        load_trace(write_sample("tiresias", tmp_path), "tiresias", skip=(rule,))


def test_skip_reported_by_inspect(tmp_path: Path) -> None:
    path = write_sample("csv", tmp_path)
    result = CliRunner().invoke(app, ["traces", "inspect", str(path), "--format", "csv", "--skip-cpu-jobs",
                                      "--skip", "duration_s>100"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "skipped: cpu_job" in result.output and "skipped: skip duration_s>100" in result.output


# --- tenant renaming ---------------------------------------------------------------------------


def test_tenant_prefix_and_map(tmp_path: Path) -> None:
    path = write_sample("tiresias", tmp_path)
    (tmp_path / "map.csv").write_text("trace_tenant,cluster_tenant\nvc_6214e9,b436b2\n")
    spec = WorkloadSpec(trace=str(path), fmt="tiresias", tenant_prefix="vc_", tenant_map=str(tmp_path / "map.csv"))
    w = spec.build()
    by_id = w.jobs.set_index("job_id")["tenant"]
    assert by_id["0"] == "b436b2"  # the map wins over the prefix
    assert by_id["1"] == "0e4a51"  # prefix stripped
    assert by_id["0"] != w.jobs.set_index("job_id")["user"]["0"]  # users are left as they were
    record = w.meta["transforms"][-1]
    assert record["op"] == "rename_tenants" and record["jobs_renamed"] == 3
    assert record["renamed"] == {"vc_6214e9": "b436b2", "vc_0e4a51": "0e4a51"}


def test_prefix_leaves_other_names_alone() -> None:
    from schedlab.workload.tenant_map import renamed

    assert renamed("vc_a", {}, "vc_") == "a"
    assert renamed("team", {}, "vc_") == "team"
    assert renamed("vc_", {}, "vc_") == "vc_"  # nothing would be left


def test_tenant_map_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "map.csv"
    path.write_text("trace_tenant,cluster_tenant\na,x\nb,\n")
    with pytest.raises(InputError, match="empty tenant") as err:
        load_tenant_map(path)
    assert (err.value.row, err.value.field) == (2, "cluster_tenant")
    with pytest.raises(InputError, match="not found"):
        load_tenant_map(tmp_path / "absent.csv")


def test_renamed_tenants_meet_the_philly_preset(tmp_path: Path) -> None:
    path = write_sample("tiresias", tmp_path)
    base = ["simulate", "--trace", str(path), "--format", "philly", "--cluster", "philly", "--policy", "fifo",
            "--no-progress"]  # fmt: skip
    refused = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2 and "'vc_0e4a51', 'vc_6214e9'" in refused.stderr
    done = CliRunner().invoke(app, [*base, "--tenant-prefix", "vc_", "--out", str(tmp_path / "b")])
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert set(summary["tenants"]) == {"0e4a51", "6214e9"}


# --- the Chronus Philly trace on the philly preset -----------------------------------------------


def test_chronus_mix2_in_minutes_on_the_philly_preset(shared_data: Path, tmp_path: Path) -> None:
    trace = shared_data / "chronus" / "trace_job_Philly_MIX2.csv"
    out = tmp_path / "x"
    result = CliRunner().invoke(app, ["simulate", "--trace", str(trace), "--format", "philly", "--time-unit", "min",
                                      "--cluster", "philly", "--tenant-prefix", "vc_", "--policy", "fifo",
                                      "--out", str(out), "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    jobs = pd.read_parquet(out / "jobs.parquet")
    span_days = (jobs["submit_s"].max() - jobs["submit_s"].min()) / 86400
    assert 13.9 < span_days < 14.0  # submit_time 1 .. 20,151 minutes
    assert len(jobs) == 30_940 - 194  # the 0-GPU rows are skipped
    assert jobs["finished"].all() and (jobs["end_s"] > jobs["first_start_s"]).all()
    assert jobs["duration_s"].median() == 3600.0  # the median of 60 minutes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cluster"] == "philly" and len(summary["tenants"]) == 11


def test_a_start_before_the_submission_leaves_the_delay_unknown(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_s,num_gpus,duration_s,queue_s\na,0,1,10,5\nb,5,1,10,-3\n")
    w = load_trace(path, "csv")
    assert w.jobs["queue_s"].iloc[0] == 5 and np.isnan(w.jobs["queue_s"].iloc[1])
    assert w.meta["start_before_submit"] == 1
