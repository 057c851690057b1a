"""``sandbox.json``: a sandbox's spec, its supervisor and daemon PIDs and its status, written
atomically so a reader never sees half a file."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

from schedlab.errors import ConfigError
from schedlab.slurm.conf import Layout, SandboxSpec


def read_state(layout: Layout) -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(layout.state_file.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{layout.root}: no Slurm sandbox here (start one with `schedlab slurm up`)") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{layout.state_file}: unreadable sandbox state ({exc})") from exc
    return state


def write_state(layout: Layout, state: dict[str, Any]) -> None:
    tmp = layout.state_file.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(layout.state_file)


def spec_to_state(spec: SandboxSpec) -> dict[str, Any]:
    return {k: [list(x) for x in v] if isinstance(v, tuple) else v for k, v in asdict(spec).items()}


def spec_from_state(state: dict[str, Any]) -> SandboxSpec:
    raw = dict(state["spec"])
    for key in ("partitions", "extra"):
        raw[key] = tuple(tuple(x) for x in raw.get(key, ()))
    return SandboxSpec(**raw)
