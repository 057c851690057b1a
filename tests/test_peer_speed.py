"""benchmarks/peer_speed.py without the peers: rows, the Helios input written from a Chronus
trace (VCs from the user column, times, estimates) and the schedlab side of each measurement."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.cluster.presets import load_cluster
from schedlab.workload.loaders import load_trace

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def ps():
    spec = importlib.util.spec_from_file_location("peer_speed", BENCHMARKS / "peer_speed.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["peer_speed"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def chronus(rows: list[tuple]) -> pd.DataFrame:
    """A Chronus-format trace (times in minutes) of (job_id, user, num_gpu, submit, duration, model)."""
    t = pd.DataFrame(rows, columns=["job_id", "user", "num_gpu", "submit_time", "duration", "model_name"])
    return t.assign(iterations=100, interval=5)


TRACE = chronus([
    (0, "vc_aa", 1, 30, 10, "resnet50"),
    (1, "vc_bb", 2, 5, 20, "vgg16"),
    (2, "vc_aa", 0, 6, 20, "vgg16"),  # a CPU job: left out
    (3, "vc_bb", 8, 5, 4, "resnet50"),  # same minute as job 1: keeps its place after it
    (4, "vc_aa", 1, 3 * 1440, 7, "vgg16"),  # first minute after the 3 days
])  # fmt: skip
VCS = {"aa": 1, "bb": 2}


def test_rows_and_groups(ps):
    assert ps.select_rows("3day") == ["tiresias-3day", "helios"]
    assert ps.select_rows("helios,fifo") == ["fifo", "helios"]
    assert ps.select_rows("all") == list(ps.ROWS)
    with pytest.raises(SystemExit, match="unknown row"):
        ps.select_rows("fifo,sjf")
    parts = {p.key: p for row in ps.ROWS.values() for p in row[1]}
    assert len(parts) == 11
    matched = parts["tiresias-full-dlas-gpu"].params
    assert ("--placer", "first-fit") == matched[:2] and "promote_knob=inf" in matched and "thresholds_gpu_s=3250,7200" in matched
    assert "promote_knob=8" in parts["tiresias-full-dlas-gpu-8"].params
    assert parts["tiresias-3day-shortest"].policy == "srtf" and "--restore-s" in parts["tiresias-3day-shortest"].params
    assert parts["helios-qssf"].policy == "qssf" and parts["helios-qssf"].params[:2] == ("--placer", "consolidate")


def test_first_days(ps):
    assert list(ps.first_days(TRACE)["job_id"]) == [0, 1, 2, 3]


def test_helios_trace(ps):
    log = ps.helios_trace(ps.first_days(TRACE), VCS)
    assert list(log["job_id"]) == [1, 3, 0]  # GPU jobs by submission, ties in trace order
    assert list(log["vc"]) == ["bb", "bb", "aa"] and list(log["user"]) == ["vc_bb", "vc_bb", "vc_aa"]
    assert list(log["submit_time"]) == ["2017-10-01 00:05:00", "2017-10-01 00:05:00", "2017-10-01 00:30:00"]
    assert list(log["duration"]) == [1200, 240, 600]
    assert list(log["end_time"]) == ["2017-10-01 00:25:00", "2017-10-01 00:09:00", "2017-10-01 00:40:00"]
    assert list(log["node_num"]) == [1, 1, 1] and list(log["jobname"]) == ["vgg16-1", "resnet50-3", "resnet50-0"]
    estimates = ps.name_estimates(log)  # the mean duration of the job's model
    assert dict(zip(estimates["jobname"], estimates["priority"], strict=True)) == {"vgg16-1": 1200, "resnet50-3": 420,
                                                                                   "resnet50-0": 420}
    with pytest.raises(SystemExit, match="VC cc"):
        ps.helios_trace(chronus([(0, "vc_cc", 1, 0, 1, "x")]), VCS)
    with pytest.raises(SystemExit, match="more GPUs than its VC"):
        ps.helios_trace(chronus([(7, "vc_aa", 16, 0, 1, "x")]), VCS)


def test_schedlab_reads_the_helios_input(ps, tmp_path):
    vcs = tmp_path / "philly_vc.csv"
    pd.DataFrame({"vc": list(VCS), "node num": list(VCS.values())}).to_csv(vcs, index=False)
    trace_dir = ps.write_helios_inputs(ps.first_days(TRACE), vcs, tmp_path)
    w = load_trace(trace_dir / "cluster_log.csv", "helios")
    assert sorted(w.jobs["job_id"].astype(int)) == [0, 1, 3]
    assert list(w.jobs.sort_values("job_id")["submit_s"]) == [25 * 60, 0, 0]
    cluster = load_cluster(f"helios:{trace_dir / 'cluster_gpu_number.csv'}@2017-10-01")
    assert cluster.total_gpus == 24
    assert pd.read_pickle(trace_dir / "vc_dict_homo.pkl") == VCS
    assert (tmp_path / "estimators" / "Philly_lgb.csv").exists()


def test_schedlab_side_runs(ps, tmp_path):
    """Each measurement's schedlab options, as the script passes them, run through the CLI."""
    trace = tmp_path / "trace.csv"
    TRACE.to_csv(trace, index=False)
    vcs = tmp_path / "philly_vc.csv"
    pd.DataFrame({"vc": list(VCS), "node num": list(VCS.values())}).to_csv(vcs, index=False)
    parts = [p for row in ps.ROWS.values() for p in row[1] if p.data != "full"]
    inputs = ps.write_inputs(trace, vcs, tmp_path, parts)
    runner = CliRunner()
    # the options of every measurement but the policy name: matched tiresias (knob inf and 8), helios
    chosen = [ps.tiresias_part("dlas-gpu", "3day"), ps.tiresias_part("dlas-gpu-8", "3day"), ps.helios_part("srtf")]
    for part in chosen:
        out = tmp_path / "out" / part.key
        args = ["simulate", *inputs.schedlab_args(part), "--policy", part.policy, *part.params, "--no-progress", "--out", str(out)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (part.key, result.output)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["finished"] == summary["jobs"] == 3  # the GPU jobs of the first 3 days
