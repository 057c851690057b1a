"""--shares: tenant weights from a file add the fairness metrics to a run; bad weights are one line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()
RUN = ["simulate", "--synthetic", "simple", "--jobs", "300", "--no-progress"]


def test_shares_add_the_fairness_metrics(tmp_path: Path) -> None:
    weights = tmp_path / "w.csv"
    weights.write_text("tenant,weight\nt0,1\nt1,2\nt2,3\nt3,4\n")
    result = runner.invoke(app, [*RUN, "--shares", str(weights), "--out", str(tmp_path / "with")])
    assert result.exit_code == 0, result.output
    assert "fairness: tenant LTGF" in result.stdout
    summary = json.loads((tmp_path / "with" / "summary.json").read_text())
    assert 0 < summary["jain_tenants"] <= 1
    assert summary["tenant_fairness"]["t3"]["weight"] == 4.0
    plain = runner.invoke(app, [*RUN, "--out", str(tmp_path / "plain")])
    assert "jain_tenants" not in json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert "fairness:" not in plain.stdout


def test_weights_lacking_a_tenant_are_refused_before_the_run(tmp_path: Path) -> None:
    weights = tmp_path / "w.csv"
    weights.write_text("tenant,weight\nt0,1\n")
    result = runner.invoke(app, [*RUN, "--shares", str(weights), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "lack 3 tenant(s) of the workload: t1, t2, t3" in lines[0]
    assert not (tmp_path / "r").exists()


def test_a_bad_weight_names_file_row_and_field(tmp_path: Path) -> None:
    weights = tmp_path / "w.csv"
    weights.write_text("tenant,weight\nt0,-1\n")
    result = runner.invoke(app, [*RUN, "--shares", str(weights), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "w.csv" in result.stderr and "row 1" in result.stderr and "weight" in result.stderr
