"""Policy registry: one entry per scheduler name, with its default placer.

Adding a policy means one module and one entry in ``POLICIES``; the engine never changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.errors import ConfigError
from schedlab.policies import classic
from schedlab.policies.base import Policy
from schedlab.policies.placers import PLACERS, Placer, make_placer
from schedlab.policies.tiresias import Tiresias
from schedlab.policies.yarn_cs import YarnCapacity
from schedlab.workload.schema import Workload


@dataclass(frozen=True)
class PolicyOptions:
    """What a policy may be built with besides its placer: a warm-start ``history`` (jobs
    finished before the simulated workload, on its time axis), a ``seed`` and ``params``."""

    history: Workload | None = None
    seed: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PolicyInfo:
    """A registered policy; ``build(placer)``, or ``build(placer, options)`` when ``takes_options``."""

    name: str
    summary: str
    default_placer: str
    build: Callable[..., Policy]
    takes_options: bool = False


def _gfs(variant: str) -> Callable[[Placer, PolicyOptions], Policy]:
    """GFS builds its own placement (PTS); the placer is not used."""

    def build(placer: Placer, options: PolicyOptions) -> Policy:
        from schedlab.policies.gfs import build_gfs

        return build_gfs(variant, dict(options.params), seed=options.seed)

    return build


def _qssf(placer: Placer, options: PolicyOptions) -> Policy:
    from schedlab.policies.qssf import QSSF  # imported on use: it pulls in the predictors
    from schedlab.predict.duration import DurationSettings

    params = dict(options.params)
    refit = float(params.pop("refit_every_s", 86400.0))
    try:
        settings = DurationSettings(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"qssf: {exc}") from exc
    return QSSF(placer, history=options.history, settings=settings, refit_every_s=refit, seed=options.seed)


def _baseline(name: str) -> Callable[[Placer, PolicyOptions], Policy]:
    """The GFS paper's baselines (§4.1); ``chronus`` takes :class:`ChronusConfig` fields and
    ``fgd`` a ``window`` as params, the others none."""

    def build(placer: Placer, options: PolicyOptions) -> Policy:
        params = dict(options.params)
        try:
            if name == "chronus":
                from schedlab.policies.chronus import Chronus, ChronusConfig

                return Chronus(placer, ChronusConfig(**params))
            if name == "fgd":
                from schedlab.policies.fgd import FGD

                return FGD(placer, **params)
            if params:
                raise TypeError(f"takes no options (got {', '.join(params)})")
            if name == "lyra":
                from schedlab.policies.lyra import Lyra

                return Lyra(placer)
            from schedlab.policies.yarn_cs_preempt import YarnCsPreempt

            return YarnCsPreempt(placer)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{name}: {exc}") from exc

    return build


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
        *(PolicyInfo(name, f"GFS baseline (ASPLOS'26 §4.1): {text}", "best-fit", _baseline(name), takes_options=True)
          for name, text in (
              ("yarn-cs-preempt", "FCFS, best fit, HP evicts the newest spot jobs of the best-fitting node"),
              ("chronus", "leases (HP 20 min, spot 5 min) renewed by a MILP at lease ends (SoCC'21)"),
              ("lyra", "spot only on loaned idle HP nodes, reclaimed by least lost work (EuroSys'23)"),
              ("fgd", "fragmentation-gradient placement, HP evicts spot (ATC'23)"))),
        PolicyInfo("qssf", "quasi-shortest-service-first: predicted GPU time from past jobs; non-preemptive; "
                   "blocks at the head (Helios)", "consolidate", _qssf, takes_options=True),
        *(PolicyInfo(name, f"GFS spot/HP scheduler (ASPLOS'26){text}; own placement (PTS)", "best-fit",
                     _gfs(name), takes_options=True)
          for name, text in (("gfs", ""), ("gfs-e", ", peak-forecast ablation"), ("gfs-d", ", fixed-eta ablation"),
                             ("gfs-s", ", no eviction awareness"), ("gfs-p", ", newest-victim preemption"),
                             ("gfs-sp", ", no eviction or preemption awareness"))),
    )
}  # fmt: skip


def policy_names() -> list[str]:
    return list(POLICIES)


def make_policy(
    name: str, *, placer: str | None = None, rng: np.random.Generator, options: PolicyOptions | None = None
) -> Policy:
    """Build a registered policy with its default placer, or with ``placer``; ``options``
    reach the policies that take them (others refuse ``params``, ignore the history)."""
    info = POLICIES.get(name)
    if info is None:
        raise ConfigError(f"unknown policy '{name}'; choose one of {', '.join(POLICIES)}")
    if placer is not None and placer not in PLACERS:
        raise ConfigError(f"unknown placer '{placer}'; choose one of {', '.join(PLACERS)}")
    built = make_placer(placer or info.default_placer, rng)
    if info.takes_options:
        return info.build(built, options or PolicyOptions())
    if options is not None and options.params:
        raise ConfigError(f"policy '{name}' takes no options (got {', '.join(options.params)})")
    return info.build(built)
