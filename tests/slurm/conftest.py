"""The real Slurm sandbox as a fixture: started once per module, stopped after it.

Tests that need it skip, saying why, where Slurm's Debian packages are not installed or the
suite does not run as root; `.ci/run` installs them, so CI runs these tests for real."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schedlab.slurm import sandbox
from schedlab.slurm.conf import SandboxSpec


def require_slurm(accounting: bool = False) -> None:
    missing = sandbox.missing_binaries(accounting)
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing): {sandbox.INSTALL}")
    if os.geteuid() != 0:
        pytest.skip("the Slurm sandbox needs root")


def start(tmp: Path, **fields) -> sandbox.Sandbox:
    """A sandbox in ``tmp`` on free ports, with ``fields`` of :class:`SandboxSpec`."""
    nodes = fields.get("nodes", 4)
    spec = SandboxSpec(**{"nodes": nodes, "port_base": sandbox.find_port_base(nodes), **fields})
    return sandbox.up(spec, tmp)


@pytest.fixture(scope="module")
def slurm_box(tmp_path_factory):
    """A 4-node sandbox (8 GPUs each, two partitions of 2 nodes) without accounting."""
    require_slurm()
    root = tmp_path_factory.mktemp("slurm")
    box = start(root, partitions=(("vc1", 2), ("vc2", 2)), scheduler_parameters="bf_interval=2")
    yield box
    sandbox.down(root)
    box.supervisor.wait(timeout=30)
