"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public data folder ``../shared/data`` next to the repo; skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public data folder not found at {SHARED_DATA} (expected ../shared/data next to the repo)")
    return SHARED_DATA.resolve()



@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that start a real Slurm run one after another on one worker (``--dist loadgroup``)."""
    for item in items:
        if "slurm" in item.nodeid.split("::")[0].split("/") or "slurm" in item.name:
            item.add_marker(pytest.mark.xdist_group("slurm"))
