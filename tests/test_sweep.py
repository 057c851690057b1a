"""schedlab sweep: spec validation, grid expansion, the process pool and Ray giving the same
results, resuming after a killed worker, results.parquet, and the HTML report in a browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import ConfigError
from schedlab.experiments.spec import load_spec, resolve_dates
from schedlab.experiments.sweep import CELLS, cell_dir, is_finished

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

# 2 policies x 2 loads (arrival scale) x 2 seeds: eight cells of 60 jobs each.
GRID = """
name = "grid"
seeds = [0, 1]

[workloads.small]
synthetic = "simple"
jobs = 60
arrival_scale = [1.0, 2.0]
cluster = "uniform:2x4"

[policies.fifo]
[policies.srtf]

[config]
restore_s = 5

[[report.tables]]
title = "JCT by load"
rows = ["policy", "arrival_scale"]
metrics = ["jct_mean_s", "queued_jobs"]
units = { jct_mean_s = "h" }

[[report.tables]]
title = "FIFO JCT over SRTF JCT"
rows = ["policy", "arrival_scale"]
where = { policy = "srtf" }
ratio_to = { policy = "fifo" }
metrics = ["jct_mean_s"]

[[report.tables]]
title = "SRTF JCT over FIFO JCT"
rows = ["policy", "arrival_scale"]
where = { policy = "srtf" }
ratio_to = { policy = "fifo" }
ratio = "row/baseline"
metrics = ["jct_mean_s"]

[[report.tables]]
title = "FIFO JCT over each policy's, every load"
rows = ["policy"]
ratio_to = { policy = "fifo" }
metrics = ["jct_mean_s"]
"""


def _spec(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _sweep(*args: str) -> subprocess.CompletedProcess[str]:
    """The schedlab command in a child process (as a user runs it)."""
    return subprocess.run([sys.executable, "-m", "schedlab.cli", "sweep", *args, "--no-progress"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO / "src")})  # fmt: skip


# --- the spec -------------------------------------------------------------------------------------------


def test_the_grid_has_a_cell_per_combination_with_its_keys_and_settings(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, GRID))
    assert len(spec.cells) == 8
    assert spec.axes == ("arrival_scale",)
    keys = [c.keys for c in spec.cells]
    assert keys[0] == {"workload": "small", "policy": "fifo", "arrival_scale": 1.0, "seed": 0}
    assert {(k["policy"], k["arrival_scale"], k["seed"]) for k in keys} == {
        (p, a, s) for p in ("fifo", "srtf") for a in (1.0, 2.0) for s in (0, 1)
    }
    assert len({c.name for c in spec.cells}) == 8
    last = spec.cells[-1].run
    assert (last.policy, last.seed, last.workload.seed, last.workload.arrival_scale) == ("srtf", 1, 1, 2.0)
    assert (last.workload.jobs, last.cluster, last.config.restore_s) == (60, "uniform:2x4", 5.0)


def test_params_and_config_lists_are_axes_and_a_policy_may_appear_twice(tmp_path: Path) -> None:
    text = """
[workloads.w]
synthetic = "simple"
[policies.tiresias]
params = { promote_knob = [2, 8] }
[policies.tiresias-big]
policy = "tiresias"
params = { promote_knob = 4 }
[config]
checkpoint_s = [0, 20]
"""
    spec = load_spec(_spec(tmp_path, text))
    assert len(spec.cells) == 2 * 2 + 1 * 2
    assert spec.axes == ("param.promote_knob", "config.checkpoint_s")
    knobs = [(c.keys["policy"], c.run.policy, c.run.params.promote_knob, c.run.config.checkpoint_s) for c in spec.cells]
    assert knobs == [("tiresias", "tiresias", 2, 0.0), ("tiresias", "tiresias", 2, 20.0), ("tiresias", "tiresias", 8, 0.0),
                     ("tiresias", "tiresias", 8, 20.0), ("tiresias-big", "tiresias", 4, 0.0), ("tiresias-big", "tiresias", 4, 20.0)]  # fmt: skip


def test_dates_resolve_from_the_trace_origin(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("id,submitted,runtime,gpus\n1,2020-01-01 00:00:00,60,1\n2,2020-01-03 00:00:00,60,1\n")
    text = f"""
[workloads.t]
trace = "{trace}"
format = "csv"
columns = {{ job_id = "id", submit_s = "submitted", duration_s = "runtime", num_gpus = "gpus" }}
window = ":2020-01-02"
train_until = 12
cluster = "uniform:1x8"
[policies.fifo]
"""
    w = resolve_dates(load_spec(_spec(tmp_path, text))).cells[0].run.workload
    assert w.window_s == (0.0, 86400.0)  # the trace starts at its first submission, 2020-01-01
    assert w.train_until_s == 12 * 3600.0


BAD_SPECS = {
    "unknown top key": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\nseed = 1\n", "policies.fifo.seed"),
    "top-level typo": ("sedes = [1]\n[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n", "sedes"),
    "load not a number": ("[workloads.w]\nsynthetic = 'simple'\nload = 'high'\n[policies.fifo]\n", "workloads.w.load"),
    "negative arrival scale": ("[workloads.w]\nsynthetic = 'simple'\narrival_scale = [1, -2]\n[policies.fifo]\n",
                               "workloads.w.arrival_scale"),  # fmt: skip
    "unknown profile": ("[workloads.w]\nsynthetic = 'nope'\n[policies.fifo]\n", "workloads.w.synthetic"),
    "trace without format": ("[workloads.w]\ntrace = 'x.csv'\ncluster = 'philly'\n[policies.fifo]\n", "workloads.w.format"),
    "spot scale off gfs": ("[workloads.w]\nsynthetic = 'venus'\nspot_scale = 2\n[policies.fifo]\n", "workloads.w.spot_scale"),
    "bad window": ("[workloads.w]\nsynthetic = 'simple'\nwindow = '3'\n[policies.fifo]\n", "workloads.w.window"),
    "missing trace file": ("[workloads.w]\ntrace = 'no-such.csv'\nformat = 'csv'\ncluster = 'philly'\n[policies.fifo]\n",
                           "workloads.w.trace"),  # fmt: skip
    "unknown cluster": ("[workloads.w]\nsynthetic = 'simple'\ncluster = ['uniform:2x4', 'uniform:lots']\n[policies.fifo]\n",
                        "workloads.w.cluster"),  # fmt: skip
    "unknown top-level cluster": ("cluster = 'mars'\n[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n", "cluster"),
    "unknown placer": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\nplacer = 'anywhere'\n", "policies.fifo.placer"),
    "no workloads": ("[policies.fifo]\n", "workloads"),
    "unknown policy": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fastest]\n", "policies.fastest"),
    "unknown param": ("[workloads.w]\nsynthetic = 'simple'\n[policies.tiresias]\nparams = { knob = 1 }\n",
                      "policies.tiresias.params.knob"),  # fmt: skip
    "bad param value": ("[workloads.w]\nsynthetic = 'simple'\n[policies.tiresias]\nparams = { promote_knob = 'x' }\n",
                        "policies.tiresias.params.promote_knob"),  # fmt: skip
    "unknown engine setting": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[config]\nrestore = 3\n", "config.restore"),
    "negative engine setting": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[config]\nrestore_s = -3\n",
                                "config.restore_s"),  # fmt: skip
    "unknown checkpoint model": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[config]\ncheckpoint_model = 'cheap'\n",
                                 "config.checkpoint_model"),  # fmt: skip
    "checkpoint model as a number": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[config]\ncheckpoint_model = 3\n",
                                     "config.checkpoint_model"),  # fmt: skip
    "seeds twice": ("seeds = [1, 1]\n[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n", "seeds"),
    "table ratio": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\nmetrics = ['jct_mean_s']\n"
                    "ratio_to = { policy = 'fifo' }\nratio = 'row-baseline'\n", "report.tables[0].ratio"),  # fmt: skip
    "table ratio key not a row": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\n"
                                  "rows = ['workload']\nmetrics = ['jct_mean_s']\nratio_to = { policy = 'fifo' }\n",
                                  "report.tables[0].ratio_to.policy"),  # fmt: skip
    "sized cluster load": ("[workloads.w]\nsynthetic = 'simple'\ncluster = 'helios-vcs@2'\n[policies.fifo]\n",
                           "workloads.w.cluster"),  # fmt: skip
    "fit_cluster on a sized cluster": ("[workloads.w]\nsynthetic = 'simple'\ncluster = 'helios-vcs'\nfit_cluster = true\n"
                                       "[policies.fifo]\n", "workloads.w.fit_cluster"),  # fmt: skip
    "paper row no cell has": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\n"
                              "metrics = ['jct_mean_s']\npaper.w.sjf = { jct_mean_s = 1 }\n", "report.tables[0].paper.w.sjf"),  # fmt: skip
    "paper metric not in the table": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\n"
                                      "metrics = ['jct_mean_s']\npaper.w.fifo = { queue_mean_s = 1 }\n",
                                      "report.tables[0].paper.w.fifo.queue_mean_s"),  # fmt: skip
    "paper value not a number": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\n"
                                 "metrics = ['jct_mean_s']\npaper.w.fifo = { jct_mean_s = 'fast' }\n",
                                 "report.tables[0].paper.w.fifo.jct_mean_s"),  # fmt: skip
    "paper row too short": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\n"
                            "metrics = ['jct_mean_s']\npaper.w = { jct_mean_s = 1 }\n", "report.tables[0].paper.w.jct_mean_s"),  # fmt: skip
    "table unit": ("[workloads.w]\nsynthetic = 'simple'\n[policies.fifo]\n[[report.tables]]\nmetrics = ['jct_mean_s']\n"
                   "units = { jct_mean_s = 'hours' }\n", "report.tables[0].units.jct_mean_s"),  # fmt: skip
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_a_bad_spec_is_refused_naming_the_file_and_the_key(tmp_path: Path, case: str) -> None:
    text, key = BAD_SPECS[case]
    path = _spec(tmp_path, text, "bad-spec.toml")
    with pytest.raises(ConfigError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {key}: "), message


def test_the_command_shows_a_spec_error_on_one_line_and_exits_2(tmp_path: Path) -> None:
    path = _spec(tmp_path, BAD_SPECS["load not a number"][0], "bad-spec.toml")
    result = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 2
    assert "bad-spec.toml: workloads.w.load: expected a positive number, got 'high'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_checkpoint_models_are_an_axis_of_text_values(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, "[workloads.w]\nsynthetic = 'simple'\n[policies.srtf]\n[config]\n"
                                     "checkpoint_model = ['framework', 'kill']\n"))  # fmt: skip
    assert [c.run.config.checkpoint_model for c in spec.cells] == ["framework", "kill"]


def test_a_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"broken\.toml: not valid TOML"):
        load_spec(_spec(tmp_path, "[workloads\n", "broken.toml"))


def test_the_guide_documents_every_spec_key() -> None:
    from schedlab.experiments import spec as keys

    text = (REPO / "docs" / "guide.md").read_text()
    section = text.split("### Spec keys", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", section, re.M))
    names = {n for pair in documented for n in pair if n}
    every = {*keys.TOP_KEYS, *keys.WORKLOAD_KEYS, *keys.POLICY_KEYS, *keys.CONFIG_KEYS, *keys.REPORT_KEYS, *keys.TABLE_KEYS}
    assert every - names == set()
    assert names - every == set()


def test_the_gfs_specs_run_exactly_the_runs_of_the_gfs_benchmark() -> None:
    """Each GFS spec's cells are the runs of ``benchmarks/gfs_paper.py`` for its table with the
    options of docs/gfs.md's tables, setting for setting."""
    import importlib.util

    from schedlab.experiments.run import RunSpec, WorkloadSpec
    from schedlab.policies.registry import POLICIES

    loader = importlib.util.spec_from_file_location("gfs_paper", REPO / "benchmarks" / "gfs_paper.py")
    bench = importlib.util.module_from_spec(loader)
    sys.modules["gfs_paper"] = bench  # its dataclasses look their module up
    try:
        loader.loader.exec_module(bench)
    finally:
        del sys.modules["gfs_paper"]

    def bench_run(cell, jobs: int, seed: int) -> RunSpec:  # as gfs_paper.run_cell builds it
        scale = cell.arrival_scale or 1.0
        w = WorkloadSpec(synthetic="gfs-a100", jobs=jobs, seed=seed, options={"spot_scale": float(cell.spot_scale)},
                         arrival_scale=None if scale == 1 else scale)  # fmt: skip
        return RunSpec(w, "gfs-a100", cell.policy, seed=seed, params=POLICIES[cell.policy].parse(cell.params))

    for name, table, jobs, seeds in (("gfs-table5", "table5", 165038, (0,)), ("gfs-table6", "table6", 165038, (0,)),
                                     ("gfs-ablation", "ablation", 165038, (0,)),
                                     ("gfs-contention", "contention", 20000, (0, 1, 2))):  # fmt: skip
        ours = sorted(repr(c.run) for c in load_spec(REPO / "experiments" / "specs" / f"{name}.toml").cells)
        theirs = sorted(repr(bench_run(c, jobs, s)) for c in bench.cells(table) for s in seeds)
        assert ours == theirs, name


def test_the_helios_spec_holds_the_setup_of_the_docs_tables(monkeypatch) -> None:
    """helios-table3: Philly evaluated 1 Oct - 30 Nov 2017 (history before) on helios-vcs at the
    three sizing loads and the philly preset; venus 40,000 jobs, 30 training days, preset and sized."""
    monkeypatch.chdir(REPO)
    if not (REPO.parent / "shared" / "data" / "pollux").is_dir():
        pytest.skip("needs ../shared/data/pollux")
    spec = resolve_dates(load_spec(REPO / "experiments" / "specs" / "helios-table3.toml"))
    runs = {(c.keys["workload"], c.keys["policy"]): c for c in spec.cells}
    assert len(runs) == 6 * 4
    clusters = {w: runs[w, "qssf"].run.cluster for w, _ in runs}
    assert clusters == {"philly": "helios-vcs", "philly@0.6": "helios-vcs@0.6", "philly@0.5": "helios-vcs@0.5",
                        "venus": "venus", "venus@0.741": "helios-vcs@0.741", "philly-vcs": "philly"}  # fmt: skip
    from schedlab.workload.loaders import load_trace

    origin = load_trace(runs["philly", "qssf"].run.workload.trace, "pollux-philly").origin
    for w in ("philly", "philly@0.6", "philly@0.5", "philly-vcs"):
        wl = runs[w, "qssf"].run.workload
        assert wl.window_s == (0.0, (pd.Timestamp("2017-12-01") - origin).total_seconds())
        assert wl.train_until_s == (pd.Timestamp("2017-10-01") - origin).total_seconds()
        assert runs[w, "qssf"].fit_cluster == (w == "philly-vcs")
    for w in ("venus", "venus@0.741"):
        wl = runs[w, "qssf"].run.workload
        assert (wl.synthetic, wl.jobs, wl.seed, wl.train_until_s) == ("venus", 40000, 0, 30 * 86400.0)


def test_every_shipped_spec_is_valid(monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # their trace paths are relative to the repository root
    have_data = (REPO.parent / "shared" / "data").is_dir()
    specs = [p for p in sorted((REPO / "experiments" / "specs").glob("*.toml"))
             if have_data or "../shared/data" not in p.read_text()]  # fmt: skip
    assert specs
    for path in specs:
        spec = load_spec(path)
        assert spec.cells, path


# --- running: the pool, Ray, results.parquet, resuming ------------------------------------------------


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory) -> Path:
    """The 2x2x2 grid run on the local process pool."""
    root = tmp_path_factory.mktemp("pool")
    spec = _spec(root, GRID, "grid.toml")
    done = _sweep(str(spec), "--out", str(root / "out"), "--workers", "2")
    assert done.returncode == 0, done.stderr
    return root / "out"


def test_results_hold_one_row_per_cell_with_its_keys_and_summary(pool_sweep: Path) -> None:
    results = pd.read_parquet(pool_sweep / "results.parquet")
    assert len(results) == 8
    assert list(results.columns[:5]) == ["workload", "policy", "arrival_scale", "seed", "cell"]
    for _, row in results.iterrows():
        summary = json.loads((pool_sweep / CELLS / row["cell"] / "summary.json").read_text())
        assert (summary["policy"], summary["seed"]) == (row["policy"], row["seed"])
        assert row["jct_mean_s"] == summary["jct_mean_s"]
        assert row["duration_buckets.short.jobs"] == summary["duration_buckets"]["short"]["jobs"]
    assert "sim_wall_s" not in results.columns  # machine timings stay in summary.json only
    fifo, srtf = (results[results["policy"] == p]["jct_mean_s"].mean() for p in ("fifo", "srtf"))
    assert srtf < fifo
    command = json.loads((pool_sweep / "run.json").read_text())["command"]
    assert command[:4] == ["sweep", str(pool_sweep.parent / "grid.toml"), "--out", str(pool_sweep)]


def test_rerun_repeats_a_sweep_byte_for_byte(pool_sweep: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    result = subprocess.run([sys.executable, "-m", "schedlab.cli", "rerun", str(pool_sweep), "--out", str(again)],
                            capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO / "src")})  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "17 tables byte for byte the same" in " ".join(result.stdout.split())  # 8 cells x 2 tables, results.parquet


def test_a_rerun_skips_every_finished_cell(pool_sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(pool_sweep, out)
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("cells/*/jobs.parquet")}
    done = _sweep(str(pool_sweep.parent / "grid.toml"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "0 ran, 8 finished before, 0 failed" in done.stdout
    assert {p: p.stat().st_mtime_ns for p in out.glob("cells/*/jobs.parquet")} == stamps


def test_a_grown_spec_runs_only_its_new_cells_and_a_changed_one_is_refused(pool_sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(pool_sweep, out)
    grown = _spec(tmp_path, GRID.replace("seeds = [0, 1]", "seeds = [0, 1, 2]"), "grown.toml")
    done = _sweep(str(grown), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "4 ran, 8 finished before, 0 failed; 12 rows" in done.stdout
    changed = _spec(tmp_path, GRID.replace("restore_s = 5", "restore_s = 6"), "changed.toml")
    refused = _sweep(str(changed), "--out", str(out))
    assert refused.returncode == 2
    assert "8 finished cell(s) were run with other settings" in refused.stderr


def test_a_folder_that_is_not_a_sweep_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["sweep", str(_spec(tmp_path, GRID)), "--out", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 2
    assert "not a schedlab sweep" in result.stderr
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


def test_the_grid_on_ray_gives_the_pool_results(pool_sweep: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'schedlab[ray]')")
    out = tmp_path / "ray"
    done = _sweep(str(pool_sweep.parent / "grid.toml"), "--out", str(out), "--ray", "local", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "8 ran" in done.stdout
    pd.testing.assert_frame_equal(pd.read_parquet(out / "results.parquet"), pd.read_parquet(pool_sweep / "results.parquet"))
    assert (out / "results.parquet").read_bytes() == (pool_sweep / "results.parquet").read_bytes()
    for jobs in pool_sweep.glob("cells/*/jobs.parquet"):
        assert (out / CELLS / jobs.parent.name / "jobs.parquet").read_bytes() == jobs.read_bytes()


# Cells slow enough (a second or more) that a worker can be killed while it runs.
SLOW = """
seeds = [0, 1, 2]
[workloads.busy]
synthetic = "simple"
jobs = 1500
cluster = "uniform:2x4"
[policies.srtf]
"""


def _alive(pid: int) -> bool:
    """Running, not a finished process waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(p) for p in text.split()]
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the worker processes")
def test_a_cell_whose_worker_is_killed_fails_alone_and_a_rerun_runs_only_it(tmp_path: Path) -> None:
    spec = _spec(tmp_path, SLOW)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    sweep = subprocess.Popen([sys.executable, "-m", "schedlab.cli", "sweep", str(spec), "--out", str(out), "--workers", "1",
                              "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    cells = load_spec(spec).cells
    deadline = time.monotonic() + 300
    first, killed = set(), None
    while killed is None and time.monotonic() < deadline and sweep.poll() is None:
        workers = _children(sweep.pid)
        if not is_finished(out, cells[0]):
            first.update(workers)  # the first cell's worker: not the one to kill
        else:
            later = [pid for pid in workers if pid not in first and _alive(pid)]
            if later:  # the second cell's worker, while it runs
                os.kill(later[0], signal.SIGKILL)
                killed = later[0]
        time.sleep(0.02)
    stdout, stderr = sweep.communicate(timeout=300)
    assert killed is not None, "the sweep ended before a worker could be killed"
    assert sweep.returncode == 1, stderr
    assert "its worker died (exit code -9)" in stderr
    assert "1 failed" in stdout
    unfinished = [c for c in cells if not is_finished(out, c)]
    assert len(unfinished) == 1  # only the killed cell; the one after it ran
    assert not cell_dir(out, unfinished[0]).exists()  # no half-written cell in place
    assert not (out / "run.json").exists()  # the sweep is not complete
    first = (cell_dir(out, cells[0]) / "jobs.parquet").stat().st_mtime_ns
    again = _sweep(str(spec), "--out", str(out), "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert "1 ran, 2 finished before, 0 failed" in again.stdout
    assert all(is_finished(out, c) for c in cells)
    assert (cell_dir(out, cells[0]) / "jobs.parquet").stat().st_mtime_ns == first
    assert not list((out / CELLS).glob(".*partial*"))  # the killed worker's staging folder is gone
    assert (out / "run.json").is_file()


@pytest.mark.parametrize("stop, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_stopped_sweep_keeps_its_finished_cells_and_resumes(tmp_path: Path, stop, code: int, word: str) -> None:
    spec = _spec(tmp_path, SLOW)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    sweep = subprocess.Popen([sys.executable, "-m", "schedlab.cli", "sweep", str(spec), "--out", str(out), "--workers", "1",
                              "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    cells = load_spec(spec).cells
    deadline = time.monotonic() + 300
    while not is_finished(out, cells[0]) and time.monotonic() < deadline and sweep.poll() is None:
        time.sleep(0.05)
    sweep.send_signal(stop)
    _, stderr = sweep.communicate(timeout=300)
    assert sweep.returncode == code, stderr
    finished = [c for c in cells if is_finished(out, c)]
    assert f"{word}: {len(finished)} of 3 cells are finished and kept" in stderr
    assert 1 <= len(finished) < 3
    unfinished = [c for c in cells if c not in finished]
    assert not any(cell_dir(out, c).exists() for c in unfinished)  # the stopped cell left no folder that looks done
    again = _sweep(str(spec), "--out", str(out), "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert f"{3 - len(finished)} ran, {len(finished)} finished before, 0 failed" in again.stdout
    assert not list((out / CELLS).glob(".*partial*"))


# --- the report -----------------------------------------------------------------------------------------


def test_the_spec_tables_are_written_as_markdown(pool_sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(pool_sweep, out)
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    results = pd.read_parquet(out / "results.parquet")
    text = (out / "tables.md").read_text()
    fifo1 = results[(results.policy == "fifo") & (results.arrival_scale == 1.0)]["jct_mean_s"].mean()
    srtf1 = results[(results.policy == "srtf") & (results.arrival_scale == 1.0)]["jct_mean_s"].mean()
    assert f"| fifo | 1.0 | {fifo1 / 3600:.2f} |" in text
    assert f"| srtf | 1.0 | {fifo1 / srtf1:.2f}x |" in text
    assert f"| srtf | 1.0 | {srtf1 / fifo1:.2f}x |" in text
    fifo, srtf = (results[results.policy == p]["jct_mean_s"].mean() for p in ("fifo", "srtf"))
    assert "| fifo | 1.00x |" in text and f"| srtf | {fifo / srtf:.2f}x |" in text


def test_the_report_renders_in_a_headless_browser(pool_sweep: Path, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless browser check needs Chromium (Debian: apt-get install chromium)")
    out = tmp_path / "copy"
    shutil.copytree(pool_sweep, out)
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    page = out / "report.html"
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#|data:)""", page.read_text())  # self-contained: no outside file
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    assert "<table class=\"comparison\">" in dom
    assert dom.count("<svg") == 3  # JCT/queueing CDFs at each of the 2 loads, metrics against load
    assert "JCT by load" in dom and "FIFO JCT over SRTF JCT" in dom
    assert "against arrival_scale" in dom
    assert re.search(r"\d \[[\d.,]+, [\d.,]+\]", dom)  # two seeds: the lowest and highest beside the mean
    shot = tmp_path / "page.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'profile2'}", f"--screenshot={shot}", "--window-size=1200,2000",
                    page.as_uri()], capture_output=True, timeout=120)  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_fit_cluster_drops_jobs_of_unknown_tenants_and_jobs_larger_than_their_pool() -> None:
    from simkit import cluster, job, workload

    from schedlab.experiments.sweep import fit_to_cluster

    # Pools: x has two 4-GPU nodes (8 GPUs), y one 2-GPU node.
    spec = cluster([4, 4, 2], pools=["x", "x", "y"], tenants={"x": None, "y": None}, partitioned=True)
    jobs = [job("fits-x", 0, 8, 9, tenant="x"), job("too-big-for-x", 0, 9, 9, tenant="x"),
            job("fits-y", 0, 2, 9, tenant="y"), job("too-big-for-y", 0, 4, 9, tenant="y"),
            job("no-pool", 0, 1, 9, tenant="z")]  # fmt: skip
    kept, dropped = fit_to_cluster(workload(jobs), spec)
    assert list(kept.jobs["job_id"]) == ["fits-x", "fits-y"]
    assert dropped == 3
    shared = cluster([4, 4])
    kept, dropped = fit_to_cluster(workload(jobs), shared)  # one pool of 8 GPUs: only size matters
    assert list(kept.jobs["job_id"]) == ["fits-x", "fits-y", "too-big-for-y", "no-pool"]
    assert dropped == 1


# --- published values beside ours ------------------------------------------------------------------------

PAPER = """
[workloads.w]
synthetic = "simple"
[workloads."w@2"]
synthetic = "simple"
[policies.fifo]
[policies.sjf]

[[report.tables]]
title = "beside"
metrics = ["jct_mean_s", "queued_jobs", "jobs"]
units = { jct_mean_s = "h" }
paper.w.fifo = { jct_mean_s = 7200, queued_jobs = 12 }
paper."w@2".sjf = { jct_mean_s = 1800 }

[[report.tables]]
title = "ratios"
where = { policy = "sjf" }
ratio_to = { policy = "fifo" }
metrics = ["jct_mean_s"]
paper.w.sjf = { jct_mean_s = 2.5 }
"""


def test_paper_values_show_in_a_column_beside_each_metric_that_has_them(tmp_path: Path) -> None:
    from schedlab.experiments.report_html import spec_table, to_markdown

    spec = load_spec(_spec(tmp_path, PAPER))
    assert spec.tables[0].paper == {("w", "fifo"): {"jct_mean_s": 7200.0, "queued_jobs": 12.0},
                                    ("w@2", "sjf"): {"jct_mean_s": 1800.0}}  # fmt: skip
    results = pd.DataFrame({"workload": ["w", "w", "w@2", "w@2"], "policy": ["fifo", "sjf", "fifo", "sjf"],
                            "jct_mean_s": [9000.0, 4500.0, 360.0, 180.0], "queued_jobs": [10, 5, 1, 0],
                            "jobs": [20, 20, 3, 3]})  # fmt: skip
    # Hand-checked: the paper's 7,200 s is 2.00 h (the metric's unit), 1,800 s 0.50 h; no paper column for jobs.
    assert to_markdown(spec_table(results, spec.tables[0])).splitlines() == [
        "| workload | policy | jct_mean_s (h) | jct_mean_s (h), paper | queued_jobs | queued_jobs, paper | jobs |",
        "|---|---|---:|---:|---:|---:|---:|",
        "| w | fifo | 2.50 | 2.00 | 10 | 12 | 20 |",
        "| w | sjf | 1.25 | - | 5 | - | 20 |",
        "| w@2 | fifo | 0.10 | - | 1 | - | 3 |",
        "| w@2 | sjf | 0.05 | 0.50 | 0 | - | 3 |",
    ]
    # In a ratio table the paper's value is the ratio itself: FIFO 9,000 / SJF 4,500 = 2.00x beside 2.50x.
    ratios = spec_table(results, spec.tables[1])
    assert ratios.to_dict("records") == [
        {"workload": "w", "policy": "sjf", "jct_mean_s": "2.00x", "jct_mean_s, paper": "2.50x"},
        {"workload": "w@2", "policy": "sjf", "jct_mean_s": "2.00x", "jct_mean_s, paper": "-"},
    ]


# --- VCs sized to the evaluation jobs (helios-vcs@LOAD) ----------------------------------------------------

SIZED_TRACE = """job_id,submit_s,duration_s,num_gpus,tenant
h1,0,1800,64,a
e1,3600,3600,8,a
e2,39600,3600,8,a
e3,7200,36000,8,b
e4,7200,36000,8,b
e5,7200,36000,8,b
"""


def test_a_sized_cluster_is_sized_to_the_evaluation_jobs_and_its_vc_loads_are_recorded(tmp_path: Path) -> None:
    from schedlab.experiments.sweep import prepare_out, run_sweep, write_results

    trace = tmp_path / "jobs.csv"
    trace.write_text(SIZED_TRACE)
    text = f"""
[workloads.t]
trace = "{trace}"
format = "csv"
train_until = 1
cluster = "helios-vcs@0.6"
[policies.fifo]
"""
    spec = resolve_dates(load_spec(_spec(tmp_path, text)))
    out = prepare_out(tmp_path / "out", spec, force=False)
    assert [o.status for o in run_sweep(spec, out, workers=1)] == ["done"]
    write_results(spec, out)
    row = pd.read_parquet(out / "results.parquet").iloc[0]
    # Evaluation = e1..e5 (h1 finished before the split at 1 h), arrival window 3,600..39,600 s = 36,000 s.
    # VC a: 2 x 8 GPUs x 3,600 s / 36,000 s = 1.6 GPUs -> ceil(1.6 / (0.6 x 8)) = 1 node (its largest job: 1 node).
    # VC b: 3 x 8 GPUs x 36,000 s / 36,000 s = 24 GPUs -> ceil(24 / 4.8) = 5 nodes. Sized from every job
    # (h1 included) VC a would need 8 nodes for h1's 64 GPUs.
    assert (row["cluster"], row["cluster_gpus"], row["history_jobs"], row["jobs"]) == ("helios-vcs@0.6", 48, 1, 5)
    assert row["vc_offered_load_min"] == pytest.approx(1.6 / 8)  # VC a: 1.6 GPUs of 8
    assert row["vc_offered_load_max"] == pytest.approx(24 / 40)  # VC b: 24 GPUs of 40


def test_the_spread_is_min_max_for_few_seeds_and_a_clipped_interval_for_many() -> None:
    from schedlab.experiments.report_html import MIN_SEEDS_FOR_CI, mean_spread, metric_range

    queue = np.array([0.0, 95.5, 1.0, 0.5])  # four seeds, one far off: a t-interval would go below 0
    assert len(queue) < MIN_SEEDS_FOR_CI
    assert mean_spread(queue, metric_range("queue_mean_s")) == (queue.mean(), 0.0, 95.5)
    many = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 500.0])
    mean, low, high = mean_spread(many, metric_range("jct_mean_s"))
    assert low == 0.0 and high > mean > 0  # the interval reaches below 0 and is clipped there
    rates = np.array([0.99, 0.2, 0.95, 0.97, 0.98, 0.99])
    assert mean_spread(rates, metric_range("gpu_alloc_rate"))[2] == 1.0  # no allocation above 100 %
    assert np.isnan(mean_spread(np.array([3.0]))[1])  # one seed: no spread
