"""Run directories: checked before the run, replaced only with --force, recorded in run.json, repeatable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app

runner = CliRunner()
SMALL = ["simulate", "--synthetic", "simple", "--jobs", "200", "--policy", "sjf", "--no-progress"]


def _one_job_run(tmp_path: Path) -> Path:
    """A finished simulate run of one job, in ``tmp_path/run``."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("id,submitted,runtime,gpus\na,0,600,1\n")
    out = tmp_path / "run"
    assert runner.invoke(app, _csv_run(trace, out)).exit_code == 0
    return out


def _csv_run(trace: Path, out: Path) -> list[str]:
    """simulate a small generic CSV (id, submitted, runtime, gpus) on one 8-GPU node."""
    return ["simulate", "--trace", str(trace), "--format", "csv", "--map", "job_id=id", "--map", "submit_s=submitted",
            "--map", "duration_s=runtime", "--map", "num_gpus=gpus", "--cluster", "uniform:1x8", "--out", str(out),
            "--no-progress"]  # fmt: skip


def _one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.output
    assert len(lines) == 1, result.output
    return lines[0]


def test_out_that_is_a_file_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    result = runner.invoke(app, [*SMALL, "--out", str(tmp_path / "taken")])
    assert result.exit_code == 2
    assert "exists and is a file" in _one_error_line(result)


def test_out_below_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    result = runner.invoke(app, [*SMALL, "--out", str(tmp_path / "taken" / "run")])
    assert result.exit_code == 2
    assert "is a file, not a directory" in _one_error_line(result)


def test_compare_into_an_unwritable_place_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    args = ["compare", "--synthetic", "simple", "--jobs", "100", "-p", "fifo", "-p", "sjf", "--out", str(locked / "c")]
    try:
        result = runner.invoke(app, args)
    finally:
        locked.chmod(0o700)
    if result.exit_code == 0:
        pytest.skip("running as a user who may write anywhere")
    assert result.exit_code == 2
    assert "cannot write" in _one_error_line(result)


def test_an_existing_run_needs_force_and_force_removes_its_old_files(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, [*SMALL, "--out", str(out)]).exit_code == 0
    (out / "jct_cdf.png").write_bytes(b"a plot of the old run")
    again = runner.invoke(app, [*SMALL, "--out", str(out)])
    assert again.exit_code == 2
    assert "pass --force" in _one_error_line(again)
    forced = runner.invoke(app, [*SMALL, "--out", str(out), "--force", "--policy", "fifo"])
    assert forced.exit_code == 0, forced.output
    assert not (out / "jct_cdf.png").exists()
    assert json.loads((out / "summary.json").read_text())["policy"] == "fifo"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no staging or old copies left beside it


def test_force_never_removes_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    result = runner.invoke(app, [*SMALL, "--out", str(out), "--force"])
    assert result.exit_code == 2
    assert "not a schedlab run" in _one_error_line(result)
    assert (out / "thesis.tex").read_text() == "precious"


def test_run_json_records_command_versions_inputs_and_settings(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("id,submitted,runtime,gpus\na,0,600,1\nb,60,1200,2\nc,90,30,8\n")
    out = tmp_path / "run"
    args = [*_csv_run(trace, out), "--checkpoint-s", "12.5"]
    assert runner.invoke(app, args).exit_code == 0
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["command"][0] == "simulate"
    assert manifest["command"][manifest["command"].index("--checkpoint-s") + 1] == "12.5"
    assert "--force" not in manifest["command"]
    assert manifest["schedlab_version"] and manifest["python"]
    assert manifest["compiled_core"] is schedlab.compiled_core()  # which core made the run
    assert list(manifest["inputs"]) == [str(trace)]
    assert set(manifest["outputs"]) == {"jobs.parquet", "timeseries.parquet", "summary.json"}
    assert manifest["settings"]["config"]["checkpoint_s"] == 12.5
    assert manifest["settings"]["workload"]["options"]["columns"]["submit_s"] == "submitted"


def test_rerun_reproduces_the_tables_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["compare", "--synthetic", "venus", "--jobs", "400", "-p", "tiresias", "-p", "fifo", "--seed", "3",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["rerun", str(out)])
    assert result.exit_code == 0, result.output
    again = tmp_path / "run-rerun"
    for table in ("tiresias/jobs.parquet", "fifo/jobs.parquet", "tiresias/timeseries.parquet"):
        assert (again / table).read_bytes() == (out / table).read_bytes()
        assert f"identical {table}" in result.stdout


@pytest.mark.parametrize("edit", [False, True])
def test_rerun_accepts_a_table_of_other_bytes_with_the_same_values_only(tmp_path: Path, edit: bool) -> None:
    """A table written by another Parquet writer (here pandas, with its metadata) repeats if its
    values do; one value changed is still a difference."""
    import pandas as pd

    from schedlab.experiments.manifest import sha256

    out = _one_job_run(tmp_path)
    table = out / "jobs.parquet"
    jobs = pd.read_parquet(table)
    if edit:
        jobs.loc[0, "end_s"] += 1.0
    jobs.to_parquet(table, index=False)
    manifest = json.loads((out / "run.json").read_text())
    manifest["outputs"]["jobs.parquet"] = sha256(table)
    (out / "run.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["rerun", str(out)])
    if edit:
        assert result.exit_code == 1 and "differs   jobs.parquet" in result.stdout
    else:
        assert result.exit_code == 0, result.output
        assert "same values jobs.parquet" in result.stdout and "identical timeseries.parquet" in result.stdout


def test_rerun_refuses_when_an_input_changed(tmp_path: Path) -> None:
    out = _one_job_run(tmp_path)
    (tmp_path / "jobs.csv").write_text("id,submitted,runtime,gpus\na,0,601,1\n")
    result = runner.invoke(app, ["rerun", str(out)])
    assert result.exit_code == 2
    assert "input changed or missing since the run" in _one_error_line(result)


@pytest.mark.parametrize("damage", ["missing", "changed"])
def test_rerun_refuses_when_the_runs_own_table_is_gone_or_edited(tmp_path: Path, damage: str) -> None:
    out = _one_job_run(tmp_path)
    table = next(out.rglob("jobs.parquet"))
    if damage == "missing":
        table.unlink()
    else:
        table.write_bytes(table.read_bytes() + b"\0")
    result = runner.invoke(app, ["rerun", str(out)])
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert f"{table.relative_to(out)} ({damage})" in line and "SHA-256" in line
    assert not (tmp_path / "run-rerun").exists()


def test_rerun_of_a_command_without_out_is_one_line(tmp_path: Path) -> None:
    out = _one_job_run(tmp_path)
    manifest = json.loads((out / "run.json").read_text())
    at = manifest["command"].index("--out")
    del manifest["command"][at : at + 2]
    (out / "run.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["rerun", str(out)])
    assert result.exit_code == 2
    assert "the recorded command has no --out" in _one_error_line(result)


def test_rerun_of_a_folder_without_run_json_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["rerun", str(tmp_path)])
    assert result.exit_code == 2
    assert "no run.json here" in _one_error_line(result)


def test_a_folder_name_with_brackets_is_printed_as_it_is(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("id,submitted,runtime,gpus\na,0,600,1\n")
    out = tmp_path / "run[red]" / "x[1]"
    result = runner.invoke(app, _csv_run(trace, out))
    assert result.exit_code == 0, result.output
    assert f"resultsin{out}" in "".join(result.stdout.split())  # rich folds long lines
    again = runner.invoke(app, ["rerun", str(out)])
    assert again.exit_code == 0, again.output
    assert f"reproduced{out}in{out}-rerun" in "".join(again.stdout.split())


@pytest.mark.parametrize("damage", ["truncated", "not parquet"])
def test_report_on_a_damaged_table_is_one_line_naming_it(tmp_path: Path, damage: str) -> None:
    out = _one_job_run(tmp_path)
    table = out / "jobs.parquet"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2] if damage == "truncated" else b"id,x\n1,2\n")
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert str(table) in "".join(line.split()) and "not a readable Parquet table" in line


@pytest.mark.parametrize("args, hint", [
    (["-p", "tiresas"], "unknown policy 'tiresas' (did you mean 'tiresias'?)"),
    (["--placer", "bestfit"], "unknown placer 'bestfit' (did you mean 'best-fit'?)"),
    (["--cluster", "vnus"], "unknown cluster 'vnus' (did you mean 'venus'?)"),
])  # fmt: skip
def test_a_typo_in_a_name_gets_a_suggestion(tmp_path: Path, args: list[str], hint: str) -> None:
    result = runner.invoke(app, ["simulate", "--synthetic", "simple", "--jobs", "10", *args, "--out",
                                 str(tmp_path / "run"), "--no-progress"])  # fmt: skip
    assert result.exit_code == 2
    assert hint in _one_error_line(result)


def test_every_help_page_fits_80_columns(monkeypatch) -> None:
    # click's plain layout at 80 columns: no line longer, no rich markup or escapes left in the text
    monkeypatch.setenv("COLUMNS", "80")
    pages = [[], ["simulate"], ["compare"], ["rerun"], ["report"], ["characterize"], ["policies"], ["clusters"],
             ["ces"], ["forecast"], ["sweep"], ["traces"], ["traces", "inspect"], ["slurm"], ["slurm", "up"],
             ["slurm", "replay"], ["serve", "slurm"]]  # fmt: skip
    for page in pages:
        result = runner.invoke(app, [*page, "--help"], terminal_width=80)
        assert result.exit_code == 0, page
        lines = result.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, (page, max(lines, key=len))
        assert not any(mark in result.stdout for mark in ("\\[", "[/", "<bool>")), page
