"""slurmctld's log read back to the millisecond (lines as Slurm 22.05 writes them at info level)."""

from __future__ import annotations

import math

import pytest

from schedlab.slurm.ctld_log import read_events

LOG = """\
[2026-11-27T20:41:47.010] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=1 usec=1538
[2026-11-27T20:41:47.060] _slurm_rpc_submit_batch_job: JobId=2 InitPrio=1 usec=1679
[2026-11-27T20:41:47.562] sched: Allocate JobId=1 NodeList=gpu-n1 #CPUs=1 Partition=gpu
[2026-11-27T20:41:47.564] sched: Allocate JobId=2 NodeList=gpu-n1 #CPUs=1 Partition=gpu
[2026-11-27T20:41:49.697] _job_complete: JobId=1 WEXITSTATUS 0
[2026-11-27T20:41:49.697] _job_complete: JobId=1 done
[2026-11-27T20:42:13.359] _slurm_rpc_submit_batch_job: JobId=232 InitPrio=1 usec=1106
[2026-11-27T20:42:14.377] sched/backfill: _start_job: Started JobId=232 in gpu on gpu-n10
[2026-11-27T20:42:16.184] _job_complete: JobId=232 WEXITSTATUS 0
[2026-11-27T20:42:16.184] _job_complete: JobId=232 done
[2026-11-27T20:42:16.190] error: something else entirely, JobId=999 is only mentioned
"""


def test_submit_start_end_and_who_started_each_job(tmp_path):
    path = tmp_path / "slurmctld.log"
    path.write_text(LOG)
    events = read_events(path)
    assert sorted(events.index) == [1, 2, 232]
    one, two, late = events.loc[1], events.loc[2], events.loc[232]
    assert one["start"] - one["submit"] == pytest.approx(0.552)
    assert one["end"] - one["start"] == pytest.approx(2.135)
    assert (one["started_by"], late["started_by"]) == ("main", "backfill")
    assert late["start"] - late["submit"] == pytest.approx(1.018)
    assert math.isnan(two["end"])  # still running when the log was read
