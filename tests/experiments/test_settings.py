"""Named settings (``--setting``): the GFS authors' simulator as engine options, policy
parameters and resident HP tasks; explicit options win."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import ConfigError
from schedlab.experiments.run import WorkloadSpec
from schedlab.experiments.settings import SETTINGS, get_setting
from schedlab.sim.config import SimConfig


def test_gfs_authors_sets_costs_quota_chronus_and_residents() -> None:
    authors = get_setting("gfs-authors")
    config = authors.config({})
    assert (config.checkpoint_interval_s, config.restart_s, config.restore_s, config.checkpoint_s) == (3600.0, 40.0, 120.0, 0.0)
    assert authors.config({"restart_s": 5.0}).restart_s == 5.0  # an explicit option wins
    for baseline in ("yarn-cs-preempt", "lyra", "fgd"):
        assert authors.policy_params(baseline, {}) == {"spot_quota": "forecast", "quota_eta_every_s": "300",
                                                       "quota_wait_reading": "head"}  # fmt: skip
    assert authors.policy_params("chronus", {}) == {"release_all_s": "1200"}
    assert authors.policy_params("gfs", {"wait_reading": "longest"}) == {"eta_every_s": "300", "wait_reading": "longest"}
    assert authors.policy_params("fifo", {}) == {}
    spec = authors.workload(WorkloadSpec(synthetic="gfs-a100-calibrated", options={"spot_scale": 2.0}))
    assert spec.options == {"resident_days": 7.0, "spot_scale": 2.0}
    assert authors.workload(WorkloadSpec(synthetic="gfs-a100", options={"resident_days": 1.0})).options == {"resident_days": 1.0}
    assert authors.workload(WorkloadSpec(synthetic="venus")).options == {}


def test_paper_text_is_the_defaults_and_unknown_names_are_refused() -> None:
    assert get_setting(None) is SETTINGS["paper-text"]
    assert SETTINGS["paper-text"].config({}) == SimConfig()
    with pytest.raises(ConfigError, match="did you mean 'gfs-authors'"):
        get_setting("gfs-author")


def test_cli_setting_reaches_the_run_and_explicit_options_win(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["simulate", "--synthetic", "simple", "--jobs", "40", "-p", "chronus", "--setting", "gfs-authors",
            "--restart-s", "5", "--out", str(out), "--no-progress"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["params"]["release_all_s"] == 1200.0
    assert (settings["config"]["restore_s"], settings["config"]["restart_s"]) == (120.0, 5.0)
    bad = CliRunner().invoke(app, ["simulate", "--synthetic", "simple", "--jobs", "40", "--setting", "nope",
                                   "--out", str(tmp_path / "bad")])  # fmt: skip
    assert bad.exit_code != 0 and "unknown setting 'nope'" in bad.output
