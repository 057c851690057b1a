"""The policy interface: no policy sees the future, what-if checks always undo, parameters are typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simkit import cluster, job, simulate
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.cluster.state import ClusterState
from schedlab.sim.policy import Context, Policy


class ReadsTheFuture(Policy):
    def setup(self, ctx: Context) -> None:
        self.total = len(ctx.workload.jobs)  # the whole trace, arrived or not


class CountsWhatIsLeft(Policy):
    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def on_arrival(self, ctx: Context, job) -> None:
        self.seen.append((ctx.arrived, ctx.arrivals_left))


ROWS = [job("a", 0, 1, 10.0), job("b", 5, 1, 10.0), job("c", 9, 1, 10.0)]


def test_a_policy_cannot_read_jobs_that_have_not_arrived() -> None:
    with pytest.raises(AttributeError, match="workload"):
        simulate(ROWS, cluster([2]), ReadsTheFuture())


def test_the_context_says_how_many_jobs_are_still_to_come() -> None:
    policy = CountsWhatIsLeft()
    simulate(ROWS, cluster([2]), policy)
    assert policy.seen == [(1, 2), (2, 1), (3, 0)]


def test_a_what_if_check_is_undone_even_when_it_raises() -> None:
    state = ClusterState(cluster([4, 4]))
    held = ((0, state.take_whole(0, 3)),)
    before = (list(state.free), state.busy_gpus, [g.free_total for g in state.groups])
    with pytest.raises(RuntimeError):
        with state.what_if() as release:
            release(held, 1000)
            assert state.free[0] == 4
            raise RuntimeError("a placer failed mid-check")
    assert (list(state.free), state.busy_gpus, [g.free_total for g in state.groups]) == before


def test_the_state_version_moves_with_allocations_and_power_but_not_with_a_what_if() -> None:
    state = ClusterState(cluster([4, 4]))
    versions = [state.version]
    held = ((0, state.take_whole(0, 3)),)
    versions.append(state.version)
    with state.what_if() as release:
        release(held, 1000)
    versions.append(state.version)
    state.release(0, held[0][1], 1000)
    versions.append(state.version)
    state.power_off(1)
    versions.append(state.version)
    state.power_on(1)
    versions.append(state.version)
    assert versions[2] == versions[1]  # the what-if left everything as it was
    assert versions[0] < versions[1] < versions[3] < versions[4] < versions[5]


def test_param_sets_a_tiresias_threshold_and_the_summary_shows_it(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["simulate", "--synthetic", "venus", "--jobs", "600", "--policy", "tiresias", "--no-progress"]
    assert runner.invoke(app, [*base, "--out", str(tmp_path / "default")]).exit_code == 0
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "low"), "--param", "thresholds_gpu_s=50,500"])
    assert result.exit_code == 0, result.output
    assert "thresholds_gpu_s=50,500" in result.stdout
    low = json.loads((tmp_path / "low" / "summary.json").read_text())
    default = json.loads((tmp_path / "default" / "summary.json").read_text())
    assert low["params"]["thresholds_gpu_s"] == [50.0, 500.0]
    assert default["params"]["thresholds_gpu_s"] == [3250.0, 7200.0]
    assert low["preemptions"] != default["preemptions"]


@pytest.mark.parametrize(("param", "needle"), [
    ("nope=1", "policy 'tiresias' has no parameter 'nope'"),
    ("promote_knob=abc", "parameter 'promote_knob': expected float, got 'abc'"),
    ("thresholds_gpu_s=9,3", "thresholds must be positive and increasing"),
    ("promote_knob", "--param takes KEY=VALUE"),
])  # fmt: skip
def test_a_bad_param_is_one_line_naming_policy_and_key(tmp_path: Path, param: str, needle: str) -> None:
    result = CliRunner().invoke(app, ["simulate", "--synthetic", "simple", "--jobs", "50", "--policy", "tiresias",
                                      "--param", param, "--out", str(tmp_path / "r"), "--no-progress"])  # fmt: skip
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.output
    assert not (tmp_path / "r").exists()


def test_policies_name_lists_parameters_with_defaults() -> None:
    result = CliRunner().invoke(app, ["policies", "tiresias"])
    assert result.exit_code == 0
    assert "promote_knob" in result.stdout and "3250,7200" in result.stdout
