"""End-to-end tests of the ``schedlab`` command through Typer's runner."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()
CONTRACT_KEYS = {
    "policy", "jobs", "finished", "jct_mean_s", "jct_p50_s", "jct_p99_s", "queue_mean_s", "makespan_s",
    "gpu_alloc_rate", "preemptions", "sim_wall_s", "peak_rss_mb", "classes",
}  # fmt: skip


def test_simulate_writes_the_contract_files(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["simulate", "--synthetic", "simple", "--jobs", "300", "--policy", "sjf",
                                 "--out", str(out), "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert CONTRACT_KEYS <= summary.keys()
    assert summary["policy"] == "sjf" and summary["jobs"] == 300 and summary["finished"] == 300
    jobs = pd.read_parquet(out / "jobs.parquet")
    assert len(jobs) == 300 and jobs["finished"].all()
    ts = pd.read_parquet(out / "timeseries.parquet")
    assert (ts["gpus_busy"] <= ts["gpus_total"]).all()
    assert "JCT mean" in result.output


def test_same_seed_gives_the_same_results(tmp_path: Path) -> None:
    tables = []
    for name in ("a", "b"):
        out = tmp_path / name
        args = ["simulate", "--synthetic", "venus", "--jobs", "400", "--policy", "tiresias", "--seed", "5",
                "--out", str(out), "--no-progress"]  # fmt: skip
        assert runner.invoke(app, args).exit_code == 0
        tables.append(pd.read_parquet(out / "jobs.parquet"))
    pd.testing.assert_frame_equal(*tables)


def test_compare_runs_policies_in_processes_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["compare", "--synthetic", "simple", "--jobs", "300", "-p", "fifo", "-p", "srtf", "-j", "2",
            "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "comparison.csv")
    assert list(table["policy"]) == ["fifo", "srtf"]
    for policy in ("fifo", "srtf"):
        assert json.loads((out / policy / "summary.json").read_text())["policy"] == policy
    # SRTF preempts on this loaded cluster; FIFO never does.
    assert table.set_index("policy").loc["fifo", "preemptions"] == 0
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    assert (out / "jct_cdf.png").stat().st_size > 1000


def test_compare_without_out_shows_the_comparison_and_keeps_nothing(tmp_path: Path, monkeypatch) -> None:
    # the Castor issue's command, as written (no --out), with its colocation and elastic baselines
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    args = ["compare", "--synthetic", "philly", "--jobs", "60", "--cluster", "uniform:16x8", "-p", "castor",
            "-p", "sjf", "-p", "sjf-ffs", "-p", "lucid", "-p", "pollux", "-p", "tiresias", "-p", "fifo", "-j", "1",
            "--no-progress"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "lucid" in result.output and "pollux" in result.output and "JCT mean" in result.output
    assert list(tmp_path.iterdir()) == []


def test_traces_inspect_reports_what_was_read_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(
        "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval\n"
        "1,vc_a,1,10,5,resnet,100,1\n"
        "2,vc_a,0,20,5,resnet,100,1\n"
        "3,vc_b,4,30,5,resnet,200,1\n"
    )
    result = runner.invoke(app, ["traces", "inspect", str(path), "--format", "tiresias"])
    assert result.exit_code == 0, result.output
    assert "cpu_job" in result.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["simulate", "--synthetic", "simple", "--policy", "nope"], "unknown policy 'nope'"),
        (["simulate", "--synthetic", "nope"], "unknown synthetic profile"),
        (["simulate", "--synthetic", "simple", "--cluster", "moon"], "unknown cluster 'moon'"),
        (["simulate", "--trace", "missing.csv", "--format", "helios", "--cluster", "venus"], "missing.csv"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert needle in result.output
    assert "Traceback" not in result.output


def test_bad_row_names_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval\n"
        "1,vc_a,1,10,5,resnet,100,1\n"
        "2,vc_a,2,20,5,resnet,-5,1\n"
    )
    args = ["simulate", "--trace", str(path), "--format", "tiresias", "--cluster", "uniform:2x8",
            "--out", str(tmp_path / "o")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "bad.csv" in message and "row 2" in message and "duration" in message


def test_generic_csv_with_column_mapping_and_time_unit(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("id,t,gpus,runtime_min\na,0,1,10\nb,1,2,5\n")
    out = tmp_path / "run"
    args = ["simulate", "--trace", str(path), "--format", "csv", "--map", "job_id=id", "--map", "submit_s=t",
            "--map", "num_gpus=gpus", "--map", "duration_s=runtime_min", "--time-unit", "min",
            "--cluster", "uniform:1x8", "--out", str(out), "--no-progress"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    jobs = pd.read_parquet(out / "jobs.parquet").set_index("job_id")
    assert jobs.loc["a", "end_s"] == 600.0 and jobs.loc["b", "end_s"] == 60.0 + 300.0


def test_horizon_reports_jobs_that_never_arrived_apart(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["simulate", "--synthetic", "simple", "--jobs", "400", "--horizon", "2", "--out", str(out), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    summary = json.loads((out / "summary.json").read_text())
    jobs = pd.read_parquet(out / "jobs.parquet")
    late = jobs["submit_s"] > 2 * 3600
    assert summary["not_arrived"] == int(late.sum()) > 0
    assert jobs.loc[late, "queue_s"].isna().all()
    assert summary["unfinished"] >= summary["not_arrived"]


def test_version_says_which_core_runs_without_importing_the_simulator() -> None:
    import platform
    import subprocess
    import sys

    import schedlab

    out = subprocess.run([sys.executable, "-c", "import sys; from schedlab.cli import main; sys.argv = ['schedlab', '--version']; "
                          "main()"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    core = "compiled" if schedlab.compiled_core() else "interpreted"  # tests/test_compiled_core.py checks both
    assert out.stdout.strip() == f"schedlab {schedlab.__version__} ({core} core), Python {platform.python_version()}"
    check = "import sys, schedlab; schedlab.compiled_core(); print('schedlab.sim.engine' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", check], capture_output=True, text=True).stdout.strip() == "False"


def test_console_script_runs_main_with_one_blas_thread_and_no_final_collection(monkeypatch) -> None:
    import atexit
    import gc
    import os
    from importlib.metadata import entry_points

    import schedlab.cli as cli

    (script,) = entry_points(group="console_scripts", name="schedlab")
    assert script.value == "schedlab.cli:main"
    registered: list[object] = []
    ran: list[bool] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(cli, "app_for", lambda args: lambda: ran.append(True))
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "")  # restored after the test
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    cli.main()
    assert ran == [True]
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert registered == [gc.freeze]
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # a user's setting stands
    cli.main()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2"


def test_the_console_script_builds_only_the_command_it_runs() -> None:
    import typer.main
    from typer.testing import CliRunner

    from schedlab.cli import app, app_for

    def names(t) -> list[str]:
        return sorted(typer.main.get_command(t).commands)  # type: ignore[attr-defined]

    assert names(app_for(["simulate", "--jobs", "5"])) == ["simulate"]
    assert names(app_for(["ces"])) == ["ces"]  # a command registered under another name
    assert names(app_for(["slurm", "up"])) == ["slurm"]
    for args in ([], ["--help"], ["--version"], ["simulat"]):  # the whole app, its help and its spelling hints
        assert app_for(args) is app
    assert len(names(app)) > 10
    runner = CliRunner()
    for args in (["simulate", "--help"], ["simulate", "--jobz", "5"], ["slurm", "--help"]):
        whole, alone = runner.invoke(app, args), runner.invoke(app_for(args), args)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
