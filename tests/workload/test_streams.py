"""A trace from a named pipe (``--trace <(zcat trace.csv.gz)``) is read like a file, and its
errors name the pipe."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from schedlab.errors import InputError
from schedlab.workload.loaders import load_trace

MAP = {"columns": {"job_id": "id", "submit_s": "submitted", "duration_s": "runtime", "num_gpus": "gpus"}}


def pipe_with(tmp_path: Path, text: str) -> tuple[Path, threading.Thread]:
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as fh:
            fh.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return fifo, writer


def test_a_named_pipe_is_read_as_the_file_it_carries(tmp_path):
    fifo, writer = pipe_with(tmp_path, "id,submitted,runtime,gpus\na,0,600,1\nb,5,60,2\n")
    workload = load_trace(fifo, "csv", **MAP)
    writer.join(timeout=10)
    assert workload.jobs["job_id"].tolist() == ["a", "b"] and workload.source == str(fifo)


def test_an_error_in_a_piped_trace_names_the_pipe_and_row(tmp_path):
    fifo, writer = pipe_with(tmp_path, "id,submitted,runtime,gpus\na,0,600,1\nb,5,soon,2\n")
    with pytest.raises(InputError) as err:
        load_trace(fifo, "csv", **MAP)
    writer.join(timeout=10)
    assert err.value.file == str(fifo) and err.value.row == 2 and err.value.field == "runtime"
