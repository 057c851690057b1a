"""Policy registry: one entry per scheduler name, with its default placer.

Adding a policy means one module and one entry in ``POLICIES``; the engine never changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from schedlab.errors import ConfigError
from schedlab.policies import classic
from schedlab.policies.base import Policy
from schedlab.policies.placers import PLACERS, Placer, make_placer
from schedlab.policies.tiresias import Tiresias
from schedlab.policies.yarn_cs import YarnCapacity


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    summary: str
    default_placer: str
    build: Callable[[Placer], Policy]


POLICIES: dict[str, PolicyInfo] = {
    p.name: p
    for p in (
        PolicyInfo("fifo", "first in, first out; non-preemptive; blocks at the queue head (Helios)", "consolidate",
                   classic.fifo),
        PolicyInfo("fifo-backfill", "FIFO where a job that cannot be placed lets later jobs pass", "consolidate",
                   lambda placer: classic.fifo(placer, backfill=True)),
        PolicyInfo("sjf", "shortest job first (oracle duration); non-preemptive; blocks at the head (Helios)",
                   "consolidate", classic.sjf),
        PolicyInfo("sjf-backfill", "SJF where a job that cannot be placed lets shorter-ranked jobs pass",
                   "consolidate", lambda placer: classic.sjf(placer, backfill=True)),
        PolicyInfo("srtf", "shortest remaining time first (oracle); preemptive", "consolidate", classic.srtf),
        PolicyInfo("srsf", "shortest remaining GPU service first (oracle); preemptive", "consolidate", classic.srsf),
        PolicyInfo("tiresias", "discretised 2D-LAS, no duration needed; preemptive (NSDI'19)", "consolidate",
                   lambda placer: Tiresias(placer)),
        PolicyInfo("yarn-cs", "YARN capacity scheduler: per-tenant FIFO within capacity", "best-fit",
                   lambda placer: YarnCapacity(placer)),
    )
}  # fmt: skip


def policy_names() -> list[str]:
    return list(POLICIES)


def make_policy(name: str, *, placer: str | None = None, rng: np.random.Generator) -> Policy:
    """Build a registered policy with its default placer, or with ``placer``."""
    info = POLICIES.get(name)
    if info is None:
        raise ConfigError(f"unknown policy '{name}'; choose one of {', '.join(POLICIES)}")
    if placer is not None and placer not in PLACERS:
        raise ConfigError(f"unknown placer '{placer}'; choose one of {', '.join(PLACERS)}")
    return info.build(make_placer(placer or info.default_placer, rng))
