"""The ``sacct`` loader on Slurm 22.05.8 output recorded from a sandbox cluster (samples/slurm-22.05,
see its README), in both forms, and on bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import ConfigError, InputError
from schedlab.workload.loaders import LOADERS, load_trace
from schedlab.workload.schema import COLUMNS, Workload

SAMPLES = Path(__file__).parent / "samples" / "slurm-22.05"
FIRST = ("sacct.json", "sacct-pipe.txt")  # sacct -a: steps, an array, a pending and a running job, CPU jobs
MORE = ("sacct-more.json", "sacct-more-pipe.txt")  # sacct -a -D -j ...: requeue, suspend, het, limits...
PIPE_LINES = (SAMPLES / "sacct-pipe.txt").read_text().splitlines()
HEADER = PIPE_LINES[0]


def load(name: str, **options: object) -> Workload:
    return load_trace(SAMPLES / name, "sacct", **options)


def job(w: Workload, job_id: str) -> pd.Series:
    rows = w.jobs[w.jobs["job_id"] == job_id]
    assert len(rows) == 1, job_id
    return rows.iloc[0]


def pipe(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def sample_row(job_id: str, **fields: str) -> str:
    """The recorded text row of ``job_id`` with some fields replaced."""
    names = HEADER.split("|")
    line = next(line for line in PIPE_LINES[1:] if line.split("|")[0] == job_id)
    values = dict(zip(names, line.split("|")))
    values.update(fields)
    return "|".join(values[n] for n in names)


def sample_json(tmp_path: Path, edit=None, name: str = "sacct.json") -> Path:
    """The recorded JSON with ``edit(document)`` applied."""
    document = json.loads((SAMPLES / name).read_text())
    if edit is not None:
        edit(document)
    path = tmp_path / "sacct.json"
    path.write_text(json.dumps(document))
    return path


def expect_error(path: Path, *, row: int | None, field: str | None, match: str) -> InputError:
    with pytest.raises(InputError, match=match) as info:
        load_trace(path, "sacct")
    err = info.value
    assert (err.file, err.row, err.field) == (str(path), row, field), str(err)
    assert "\n" not in str(err)
    return err


# --- the first recording: sacct -a ------------------------------------------------------------


@pytest.mark.parametrize("name", FIRST)
def test_first_sample_jobs_and_skips(name: str) -> None:
    w = load(name)
    assert list(w.jobs.columns) == list(COLUMNS)
    assert sorted(w.jobs["job_id"]) == ["10", "15", "5", "6", "7", "9_0", "9_1", "9_2"]
    # steps: 5-8, 9_0-9_2, 10 have .batch, 15 has .batch, .0 and .1; 13 PENDING, 8 RUNNING (it timed out
    # after the export); 1-4 ran without a GPU
    assert w.skipped == {"job_step": 11, "pending_at_export": 1, "running_at_export": 1, "cpu_job": 4}
    assert w.origin == pd.Timestamp("2026-11-27 19:40:14")  # Submit of jobs 5-9, the earliest GPU job
    assert w.meta["form"] == ("json" if name.endswith(".json") else "text")
    assert w.meta["zero_duration_floored"] == 2  # 7 (fail) and 10 (canc): Elapsed 00:00:00
    assert w.meta["suspended_jobs"] == 0 and w.meta["gpus_split_unevenly"] == 0


@pytest.mark.parametrize("name", FIRST)
def test_first_sample_big_two_node_job(name: str) -> None:
    big = job(load(name), "6")  # 6|6|big|vc2|...|00:00:03|00:02:00|...gres/gpu:a100=16,gres/gpu=16,node=2|...
    assert big["name"] == "big" and big["tenant"] == "vc2" and big["user"] == "root"
    assert big["num_gpus"] == 16 and big["gpus_per_worker"] == 8 and big["gpu_type"] == "a100"
    assert big["num_cpus"] == 2
    assert big["duration_s"] == 3 and big["queue_s"] == 2  # Start 19:40:16, End 19:40:19, Submit 19:40:14
    assert big["submit_s"] == 0 and big["time_limit_s"] == 120
    assert big["final_state"] == "completed"
    assert big["source_row"] == (6 if name.endswith(".json") else 7)


@pytest.mark.parametrize("name", FIRST)
def test_first_sample_each_job(name: str) -> None:
    w = load(name)
    short = job(w, "5")  # 4 GPUs on one node: typed a100=4 next to gres/gpu=4 counts 4
    assert (short["num_gpus"], short["gpu_type"], short["duration_s"], short["time_limit_s"]) == (4, "a100", 2, 60)
    assert math.isnan(short["gpus_per_worker"])  # one node: the placer may split it (any split)
    fail = job(w, "7")
    assert (fail["final_state"], fail["num_gpus"], fail["duration_s"]) == ("failed", 2, 1)  # 0 s floored to 1 s
    canc = job(w, "10")  # State "CANCELLED by 0"
    assert (canc["final_state"], canc["duration_s"], canc["submit_s"], canc["queue_s"]) == ("cancelled", 1, 1, 1)
    steps = job(w, "15")  # its steps .batch, .0, .1 are not jobs
    assert (steps["name"], steps["tenant"], steps["num_gpus"], steps["duration_s"]) == ("steps", "vc2", 3, 2)
    assert (steps["submit_s"], steps["queue_s"], steps["time_limit_s"]) == (38, 0, 180)
    for task in ("9_0", "9_1", "9_2"):  # array tasks are separate jobs
        t = job(w, task)
        assert (t["name"], t["num_gpus"], t["duration_s"], t["queue_s"], t["final_state"]) == (
            "arr", 1, 1, 2, "completed")  # fmt: skip
    assert set(w.jobs["user"]) == {"root"}


def assert_same_jobs(a: Workload, b: Workload) -> None:
    left = a.jobs.drop(columns="source_row").sort_values("job_id").reset_index(drop=True)
    right = b.jobs.drop(columns="source_row").sort_values("job_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right)
    assert a.skipped == b.skipped and a.origin == b.origin
    assert {k: v for k, v in a.meta.items() if k != "form"} == {k: v for k, v in b.meta.items() if k != "form"}


@pytest.mark.parametrize("pair", [FIRST, MORE])
def test_json_and_text_forms_agree(pair: tuple[str, str]) -> None:
    assert_same_jobs(load(pair[0]), load(pair[1]))


# --- the second recording: sacct -a -D -j ... ---------------------------------------------------


@pytest.mark.parametrize("name", MORE)
def test_more_sample_jobs_and_skips(name: str) -> None:
    w = load(name)
    assert sorted(w.jobs["job_id"]) == ["16", "17", "18", "19", "20", "21", "23+0", "23+1", "26", "27_0", "8"]
    assert w.skipped == {
        "job_step": 12,  # a .batch of each job that ran, the requeued run's included
        "requeued_run": 1,  # 17's first run (REQUEUED); its second run is the job
        "pending_at_export": 2,  # 28 (held), 27_[2-3%1] (array tasks not started)
        "running_at_export": 1,  # 27_1
        "not_started": 2,  # 22 (DEADLINE, Start None), 29 (cancelled while pending: Start == End, no AllocTRES)
    }
    assert w.meta["suspended_jobs"] == 1 and w.meta["gpus_split_unevenly"] == 1
    assert w.meta["zero_duration_floored"] == 0


@pytest.mark.parametrize("name", MORE)
def test_more_sample_each_job(name: str) -> None:
    w = load(name)
    tout = job(w, "8")  # TIMEOUT after 84 s of a 1-minute limit
    assert (tout["final_state"], tout["duration_s"], tout["time_limit_s"]) == ("failed", 84, 60)
    susp = job(w, "16")  # suspended 6 s of its 12 s: Elapsed 6 s is the run time
    assert (susp["duration_s"], susp["queue_s"]) == (6, 0)
    requeued = job(w, "17")  # the second run: submitted again at the requeue (19:43:39), started 19:45:40
    assert (requeued["submit_s"], requeued["queue_s"], requeued["duration_s"]) == (205, 121, 8)
    assert (requeued["num_gpus"], requeued["final_state"]) == (2, "completed")
    assert math.isnan(job(w, "18")["time_limit_s"]) and math.isnan(job(w, "19")["time_limit_s"])  # UNLIMITED
    typed = job(w, "20")  # asked gres/gpu:a100:2
    assert (typed["num_gpus"], typed["gpu_type"]) == (2, "a100")
    uneven = job(w, "21")  # --gpus=3 on 2 nodes: 2 + 1
    assert (uneven["num_gpus"], uneven["num_cpus"]) == (3, 2) and math.isnan(uneven["gpus_per_worker"])
    het = job(w, "23+0"), job(w, "23+1")  # one heterogeneous job, two components
    assert [(h["tenant"], h["num_gpus"], h["duration_s"]) for h in het] == [("vc1", 1, 2), ("vc2", 2, 2)]
    assert (job(w, "26")["duration_s"], job(w, "27_0")["duration_s"]) == (45, 40)


# --- hand-edited rows: states and TRES the sandbox cannot produce -----------------------------


@pytest.mark.parametrize(
    ("state", "final"),
    [("NODE_FAIL", "failed"), ("OUT_OF_MEMORY", "failed"), ("BOOT_FAIL", "failed"), ("DEADLINE", "failed"),
     ("TIMEOUT", "failed"), ("PREEMPTED", "cancelled"), ("CANCELLED by 1000", "cancelled"),
     ("COMPLETED", "completed")],
)  # fmt: skip
def test_final_states(tmp_path: Path, state: str, final: str) -> None:
    w = load_trace(pipe(tmp_path, sample_row("6", State=state)), "sacct")
    assert w.jobs["final_state"].tolist() == [final]


def test_steps_of_every_kind_are_dropped(tmp_path: Path) -> None:
    steps = [sample_row("6.batch", JobID=f"6.{s}") for s in ("batch", "extern", "0", "interactive")]
    w = load_trace(pipe(tmp_path, sample_row("6"), *steps), "sacct")
    assert w.jobs["job_id"].tolist() == ["6"] and w.skipped == {"job_step": 4}


@pytest.mark.parametrize(
    ("tres", "gpus", "gpu_type"),
    [
        ("cpu=2,gres/gpu=8,node=1", 8, ""),  # no typed entry
        ("cpu=2,gres/gpu:a100=8,node=1", 8, "a100"),  # only the typed entry
        ("cpu=2,gres/gpu:a100=2,gres/gpu:v100=2,gres/gpu=4,node=1", 4, ""),  # two types: any
        ("cpu=2,gres/gpu:a100=2,gres/gpu=4,node=1", 4, ""),  # the type holds only some of the GPUs
        ("cpu=2,gres/gpu=4,gres/gpumem=40G,gres/gpuutil=90,gres/shard=3,node=1", 4, ""),  # other gres
    ],
)
def test_tres_gpu_count_and_type(tmp_path: Path, tres: str, gpus: float, gpu_type: str) -> None:
    w = load_trace(pipe(tmp_path, sample_row("5", AllocTRES=tres)), "sacct")
    assert (w.jobs["num_gpus"].iat[0], w.jobs["gpu_type"].iat[0], w.jobs["num_cpus"].iat[0]) == (gpus, gpu_type, 2)


def test_gpus_from_requested_tres_only_when_nothing_was_allocated(tmp_path: Path) -> None:
    # a started job without gres/gpu in AllocTRES ran without GPUs, whatever it asked for
    path = pipe(tmp_path, sample_row("5", AllocTRES="billing=1,cpu=1,node=1"))
    w = load_trace(path, "sacct")
    assert len(w) == 0 and w.skipped == {"cpu_job": 1}


def test_pending_array_and_zero_length_rows(tmp_path: Path) -> None:
    rows = [sample_row("9_0", JobID="9_[3-5%1]", State="PENDING", Start="Unknown", End="Unknown", AllocTRES=""),
            sample_row("7"), sample_row("5", JobID="5", Start="2026-11-27T19:40:18", Elapsed="00:00:00")]  # fmt: skip
    w = load_trace(pipe(tmp_path, *rows), "sacct")
    assert w.skipped == {"pending_at_export": 1}
    assert w.jobs["duration_s"].tolist() == [1.0, 1.0] and w.meta["zero_duration_floored"] == 2


def test_without_elapsed_duration_is_end_minus_start(tmp_path: Path) -> None:
    names = HEADER.split("|")
    keep = [i for i, n in enumerate(names) if n != "Elapsed"]
    cut = ["|".join(line.split("|")[i] for i in keep) for line in PIPE_LINES]
    path = tmp_path / "noelapsed.txt"
    path.write_text("\n".join(cut) + "\n")
    without, with_ = load_trace(path, "sacct"), load("sacct-pipe.txt")
    assert_same_jobs(without, with_)
    assert without.fields["duration_s"] == "End"


def test_parsable_trailing_pipe_and_days_in_times(tmp_path: Path) -> None:
    row = sample_row("6", Elapsed="1-02:03:04", End="2026-11-28T21:43:20", Timelimit="2-00:00:00")
    path = tmp_path / "p.txt"
    path.write_text(f"{HEADER}|\n{row}|\n")  # sacct -p
    big = load_trace(path, "sacct").jobs.iloc[0]
    assert big["duration_s"] == 26 * 3600 + 3 * 60 + 4 and big["time_limit_s"] == 48 * 3600


def test_json_of_later_releases(tmp_path: Path) -> None:
    """Number objects {"set", "infinite", "number"} and a list for state.current (Slurm 23.11 and later)."""

    def later(document: dict) -> None:
        for record in document["jobs"]:
            record["state"]["current"] = [record["state"]["current"]]
            t = record["time"]
            t["limit"] = {"set": True, "infinite": record["name"] == "big", "number": t["limit"]}
            record["array"]["task_id"] = {"set": record["array"]["task_id"] is not None, "infinite": False,
                                          "number": record["array"]["task_id"] or 0}  # fmt: skip

    w = load_trace(sample_json(tmp_path, later), "sacct")
    first = load("sacct.json")
    assert sorted(w.jobs["job_id"]) == sorted(first.jobs["job_id"]) and w.skipped == first.skipped
    assert math.isnan(job(w, "6")["time_limit_s"]) and job(w, "5")["time_limit_s"] == 60


def test_skip_rules_and_time_unit(tmp_path: Path) -> None:
    w = load("sacct.json", skip=("num_gpus>8",), time_unit="s")
    assert "6" not in set(w.jobs["job_id"]) and w.skipped["skip num_gpus>8"] == 1
    with pytest.raises(ConfigError, match="dates"):
        load("sacct.json", time_unit="min")


def test_registered_and_inspect_shows_what_was_skipped() -> None:
    assert LOADERS["sacct"].options == ("time_unit", "skip")
    result = CliRunner().invoke(app, ["traces", "inspect", str(SAMPLES / "sacct-more-pipe.txt"), "--format", "sacct"])
    assert result.exit_code == 0, result.output
    for reason in ("job_step", "requeued_run", "pending_at_export", "running_at_export", "not_started"):
        assert f"skipped: {reason}" in result.output


# --- bad input --------------------------------------------------------------------------------


def test_bad_submit_date(tmp_path: Path) -> None:
    path = pipe(tmp_path, sample_row("5"), sample_row("6", Submit="yesterday"))
    expect_error(path, row=2, field="Submit", match="not a date: 'yesterday'")


def test_bad_end_date_on_a_row_after_steps(tmp_path: Path) -> None:
    path = pipe(tmp_path, sample_row("5"), sample_row("5.batch"), sample_row("6", End="2026-13-45T99:00:00"))
    expect_error(path, row=3, field="End", match="not a date")


@pytest.mark.parametrize(
    ("tres", "match"),
    [("cpu=1,gres/gpu=four,node=1", "gres/gpu must be a whole number, got 'four'"),
     ("cpu=1,gres/gpu,node=1", "'gres/gpu' is not name=count"),
     ("cpu=1,gres/gpu:a100=-2,node=1", "whole number"),
     ("cpu=1.5,gres/gpu=2,node=1", "cpu must be a whole number")],
)  # fmt: skip
def test_bad_tres(tmp_path: Path, tres: str, match: str) -> None:
    expect_error(pipe(tmp_path, sample_row("5"), sample_row("6", AllocTRES=tres)), row=2, field="AllocTRES",
                 match=match)  # fmt: skip


def test_bad_requested_tres_of_a_pending_job(tmp_path: Path) -> None:
    path = pipe(tmp_path, sample_row("13", ReqTRES="gres/gpu=lots"))
    expect_error(path, row=1, field="ReqTRES", match="'lots'")


@pytest.mark.parametrize("column", ["AllocTRES", "JobID", "State", "Submit", "Start", "End"])
def test_missing_required_column(tmp_path: Path, column: str) -> None:
    names = HEADER.split("|")
    keep = [i for i, n in enumerate(names) if n != column]
    path = pipe(tmp_path, *["|".join(r.split("|")[i] for i in keep) for r in PIPE_LINES[1:]],
                header="|".join(names[i] for i in keep))  # fmt: skip
    err = expect_error(path, row=None, field=column, match="required column is missing")
    assert "sacct -P --format" in str(err)


def test_unknown_state(tmp_path: Path) -> None:
    path = pipe(tmp_path, sample_row("5"), sample_row("6", State="EXPLODED"))
    err = expect_error(path, row=2, field="State", match="unknown Slurm job state 'EXPLODED'")
    assert "COMPLETED" in str(err)


def test_bad_durations(tmp_path: Path) -> None:
    expect_error(pipe(tmp_path, sample_row("6", Elapsed="3 s")), row=1, field="Elapsed", match="not a duration")
    expect_error(pipe(tmp_path, sample_row("6", Timelimit="forever")), row=1, field="Timelimit",
                 match="UNLIMITED")  # fmt: skip


def test_finished_job_without_end_or_ending_before_start(tmp_path: Path) -> None:
    expect_error(pipe(tmp_path, sample_row("6", End="Unknown")), row=1, field="End", match="COMPLETED needs an end")
    path = pipe(tmp_path, sample_row("6", End="2026-11-27T19:40:15", Elapsed="00:00:00"))
    expect_error(path, row=1, field="End", match="ends before it starts")


def test_ragged_row_and_headerless_text(tmp_path: Path) -> None:
    path = pipe(tmp_path, sample_row("5"), sample_row("6", JobName="a|b"))
    expect_error(path, row=2, field=None, match="19 fields where the header has 18")
    headerless = tmp_path / "n.txt"
    headerless.write_text("\n".join(PIPE_LINES[1:]) + "\n")  # sacct -n
    expect_error(headerless, row=None, field="JobID", match="required column is missing")
    plain = tmp_path / "plain.txt"
    plain.write_text("JobID JobName State\n1 wrap COMPLETED\n")  # sacct without -P
    expect_error(plain, row=None, field=None, match="not sacct output")


def test_not_utf8_name(tmp_path: Path) -> None:
    path = tmp_path / "bytes.txt"
    path.write_bytes(f"{HEADER}\n{sample_row('5')}\n".encode() + sample_row("6", JobName="b\udcffg").encode(
        "utf-8", "surrogateescape") + b"\n")  # fmt: skip
    expect_error(path, row=2, field="JobName", match=r"not UTF-8 text: b'b\\xffg'")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n \n")
    expect_error(path, row=None, field=None, match="empty")


def test_malformed_json(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text((SAMPLES / "sacct.json").read_text()[:5000])
    expect_error(path, row=None, field=None, match="not valid JSON")


@pytest.mark.parametrize(
    ("edit", "row", "field", "match"),
    [
        (lambda d: d["jobs"][5]["time"].update(start="soon"), 6, "time.start", 'must be a number \\(got "soon"\\)'),
        (lambda d: d["jobs"][5]["time"].pop("submission"), 6, "time.submission", "is missing"),
        (lambda d: d["jobs"][5]["state"].update(current="EXPLODED"), 6, "state.current", "unknown Slurm job state"),
        (lambda d: d["jobs"][5]["tres"]["allocated"][4].update(count=1.5), 6, "tres.allocated", "gres/gpu must be"),
        (lambda d: d["jobs"][5]["tres"].update(allocated="gres/gpu=16"), 6, "tres.allocated", "list of objects"),
        (lambda d: d["jobs"].insert(2, "job 3"), 3, None, "JSON object"),
        (lambda d: d["jobs"][5]["time"].update(end=d["jobs"][5]["time"]["start"] - 5), 6, "time.end", "ends before"),
        (lambda d: d["jobs"][5].update(name=["big"]), 6, "name", "must be text"),
    ],
)
def test_bad_json_records(tmp_path: Path, edit, row: int, field: str | None, match: str) -> None:
    expect_error(sample_json(tmp_path, edit), row=row, field=field, match=match)


def test_json_negative_elapsed_names_the_field(tmp_path: Path) -> None:
    path = sample_json(tmp_path, lambda d: d["jobs"][5]["time"].update(elapsed=-3))
    expect_error(path, row=6, field="time.elapsed", match="positive")


def test_other_slurm_json_is_refused(tmp_path: Path) -> None:
    expect_error(SAMPLES / "squeue.json", row=None, field=None, match="squeue --json")
    expect_error(SAMPLES / "sinfo.json", row=None, field=None, match="sinfo --json")
    path = tmp_path / "list.json"
    path.write_text("[]")
    expect_error(path, row=None, field=None, match='"jobs" list')


def test_duplicate_ids_keep_the_last_submitted_record(tmp_path: Path) -> None:
    # sacct -D lists a requeued job's runs; in JSON the earlier run may come after the later one
    def swap(document: dict) -> None:
        jobs = document["jobs"]
        first, later = [i for i, j in enumerate(jobs) if j["job_id"] == 17]
        jobs[first], jobs[later] = jobs[later], jobs[first]

    w = load_trace(sample_json(tmp_path, swap, name="sacct-more.json"), "sacct")
    assert job(w, "17")["duration_s"] == 8 and w.skipped["requeued_run"] == 1
    assert np.isfinite(w.jobs["queue_s"]).all()
