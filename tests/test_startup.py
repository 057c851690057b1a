"""A small run pays only for what it uses: what the command imports, and typer's option coercion without pydantic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer._coercion import build_runtime_param, resolve_type_descriptor
from typer.models import OptionInfo

from schedlab.terminal import _plain_value

HEAVY = ("pandas", "pyarrow", "matplotlib", "scipy", "pydantic", "rich.table", "rich.progress")


def _imported(code: str, names: tuple[str, ...], cwd: Path) -> list[str]:
    """The modules of ``names`` that ``code``, run in a fresh interpreter, leaves imported."""
    probe = f"{code}\nimport sys\nprint('imported:', *(n for n in {names!r} if n in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, check=True)
    return done.stdout.splitlines()[-1].split()[1:]


def test_importing_the_command_loads_no_heavy_library(tmp_path: Path) -> None:
    assert _imported("import schedlab.cli", HEAVY, tmp_path) == []


def test_a_small_run_does_not_load_pydantic_for_its_options(tmp_path: Path) -> None:
    run = ("import sys\nfrom schedlab.cli import app\n"
           "sys.argv = ['schedlab', 'simulate', '--synthetic', 'simple', '--jobs', '20', '--load', '0.5', '--horizon', '2', "
           "'-p', 'tiresias', '--param', 'promote_knob=4', '--out', 'run']\n"
           "try:\n    app()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n")  # fmt: skip
    assert _imported(run, ("pydantic", "rich.progress"), tmp_path) == []
    assert (tmp_path / "run" / "summary.json").is_file()


def test_a_trace_run_does_not_load_the_synthetic_generators(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text("id,submitted,runtime,gpus\na,0,600,1\nb,5,60,2\n")
    run = ("import sys\nfrom schedlab.cli import app\n"
           "sys.argv = ['schedlab', 'simulate', '--trace', 'jobs.csv', '--format', 'csv', '--map', 'job_id=id', "
           "'--map', 'submit_s=submitted', '--map', 'duration_s=runtime', '--map', 'num_gpus=gpus', "
           "'--cluster', 'uniform:1x8', '--no-progress', '--out', 'run']\n"
           "try:\n    app()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n")  # fmt: skip
    assert _imported(run, ("schedlab.workload.synthetic", "schedlab.sim.engine"), tmp_path) == ["schedlab.sim.engine"]
    assert (tmp_path / "run" / "summary.json").is_file()


VALUES: list[Any] = ["0", "12", "-3", "007", "-0", "1.5", "0.1", "-2.25", "1.", ".5", "1e3", " 5", "+5", "1_000",
                     "inf", "nan", "", "abc", "1" * 30, 7, 7.5, True, None]  # fmt: skip


@pytest.mark.parametrize("annotation", [int, float])
@pytest.mark.parametrize(("low", "high"), [(None, None), (0, None), (0.01, 1.0), (1, 10)])
@pytest.mark.parametrize("value", VALUES)
def test_a_plain_number_is_coerced_as_typer_would(annotation: type, low: float | None, high: float | None, value: Any) -> None:
    plain = _plain_value(annotation, value, low, high)
    if plain is None:  # typer's own coercion decides
        return
    runtime = build_runtime_param(resolve_type_descriptor(annotation, OptionInfo(min=low, max=high)))
    expected = runtime._coerce_value(value, param=None, ctx=None)  # valid values: no error to report
    assert repr(plain) == repr(expected) and type(plain) is type(expected)


@pytest.mark.parametrize(("annotation", "value"), [(str, "fifo"), (str, ""), (str, "ü x"), (Path, "runs/a"),
                                                   (Path, Path("x")), (list[str], ("a", "b=1")), (list[str], [])])  # fmt: skip
def test_a_plain_text_or_path_is_coerced_as_typer_would(annotation: Any, value: Any) -> None:
    plain = _plain_value(annotation, value, None, None)
    runtime = build_runtime_param(resolve_type_descriptor(annotation, OptionInfo()))
    expected = runtime._coerce_value(value, param=None, ctx=None)  # valid values: no error to report
    assert plain == expected and type(plain) is type(expected)


def test_a_value_that_is_not_plain_is_left_to_typer() -> None:
    assert _plain_value(int, "1.0", None, None) is None
    assert _plain_value(int, "0", 1, None) is None  # out of range: typer's message
    assert _plain_value(float, "1e3", None, None) is None
    assert _plain_value(bool, "yes", None, None) is None
    assert _plain_value(list[str], ("a", 1), None, None) is None


OTHER_POLICIES = ("schedlab.policies.classic.tiresias", "schedlab.policies.hetero.gavel", "schedlab.policies.gfs",
                  "schedlab.policies.castor.build", "schedlab.policies.pollux.build", "schedlab.policies.slurm.builtin",
                  "schedlab.policies.fairness.astraea", "schedlab.policies.spot.chronus")  # fmt: skip


def test_a_run_imports_only_the_policy_it_builds(tmp_path: Path) -> None:
    run = ("from schedlab.policies.registry import POLICIES, make_policy\nimport numpy as np\n"
           "policy = make_policy('fifo', rng=np.random.default_rng(0))\nassert policy.name == 'fifo'\n")  # fmt: skip
    assert _imported(run, OTHER_POLICIES, tmp_path) == []
    listed = "from schedlab.policies.registry import POLICIES\nassert all(info.build for info in POLICIES.values())\n"
    assert _imported(listed, OTHER_POLICIES, tmp_path) == list(OTHER_POLICIES)
