"""Policy registry: one entry per scheduler name, with its default placer and its parameters.

Adding a policy means one module and one entry in ``POLICIES``; the engine never changes.
Every entry builds the same way, ``build(placer, params, options)``; a policy's parameters are
a frozen dataclass (:mod:`schedlab.policies.params`) that ``--param KEY=VALUE`` sets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError, did_you_mean
from schedlab.policies.castor.build import CastorParams, castor_builder, ssf
from schedlab.policies.classic import orders
from schedlab.policies.classic.tiresias import Tiresias, TiresiasParams, TiresiasTwoQueueParams
from schedlab.policies.classic.yarn_cs import YarnCapacity, YarnParams
from schedlab.policies.fairness.astraea import Astraea, AstraeaParams
from schedlab.policies.fairness.fair_share import FairShare, GandivaFair, LeaseParams
from schedlab.policies.fairness.themis import Themis
from schedlab.policies.common.placers import PLACERS, Placer, make_placer
from schedlab.policies.gfs import build_gfs, gfs_params
from schedlab.policies.helios.params import QssfParams
from schedlab.policies.hetero.gavel import Gavel, GavelParams
from schedlab.policies.hetero.hadar import Hadar, HadarParams
from schedlab.policies.hetero.hadare import HadarE, HadarEParams
from schedlab.policies.migration.defrag import DefragParams, defrag_build
from schedlab.policies.lucid.build import LucidParams, build_lucid
from schedlab.policies.params import as_dict, parse
from schedlab.policies.pollux.build import PolluxParams, build_pollux
from schedlab.policies.slurm.backfill import SlurmBackfill
from schedlab.policies.slurm.builtin import SlurmBuiltin
from schedlab.policies.slurm.params import SlurmParams
from schedlab.policies.spot.chronus import Chronus, ChronusConfig
from schedlab.policies.spot.fgd import FGD, FgdParams
from schedlab.policies.spot.lyra import Lyra, LyraParams
from schedlab.policies.spot.spot_fcfs import SpotEvictParams
from schedlab.policies.spot.yarn_cs_preempt import YarnCsPreempt
from schedlab.sim.policy import Policy
from schedlab.workload.schema import Workload


@dataclass(frozen=True)
class PolicyOptions:
    """What a policy may be built with besides its placer and its parameters: a warm-start
    ``history`` (jobs finished before the
    simulated workload, on its time axis), a ``seed``, and ``submissions``: the run's jobs as
    known when submitted (:data:`~schedlab.workload.schema.SUBMITTED_COLUMNS`, no outcome), for
    predictors that score in batches (QSSF); ``shares``: tenant weights (``--shares``), for the
    fair-share policies (equal weights when None)."""

    history: Workload | None = None
    seed: int = 0
    submissions: pd.DataFrame | None = None
    shares: Mapping[str, float] | None = None


@dataclass(frozen=True)
class PolicyInfo:
    """A registered policy: ``build(placer, params, options)``, where ``params`` is an instance
    of its parameter dataclass ``params`` (None for a policy without parameters)."""

    name: str
    summary: str
    default_placer: str
    build: Callable[[Placer, Any, PolicyOptions], Policy]
    params: type | None = None

    def parse(self, values: Mapping[str, Any]) -> Any:
        """The policy's parameters with ``values`` (text from ``--param KEY=VALUE``, or typed)
        set: the one place they are converted and checked; a policy without any refuses values."""
        if self.params is None:
            if values:
                raise ConfigError(f"policy '{self.name}' has no parameters (got {', '.join(values)})")
            return None
        return parse(self.params, self.name, values)


def _own_placement(cls: type) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """A policy that places its own jobs, built as ``cls(**params)``; the placer is not used."""
    return lambda placer, params, options: cls(**as_dict(params))


def _plain(make: Callable[[Placer], Policy]) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """A policy built from its placer alone."""
    return lambda placer, params, options: make(placer)


def _keywords(cls: type) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """A policy built as ``cls(placer, **params)``."""
    return lambda placer, params, options: cls(placer, **as_dict(params))


def _gfs(variant: str) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """GFS builds its own placement (PTS); the placer is not used."""
    return lambda placer, params, options: build_gfs(variant, as_dict(params), seed=options.seed)


def _qssf(placer: Placer, params: QssfParams, options: PolicyOptions) -> Policy:
    from schedlab.policies.helios.qssf import QSSF  # imported on use: it pulls in the predictors
    from schedlab.predict.settings import DurationSettings

    if options.submissions is None:
        raise ConfigError("qssf is built with the run's submissions (PolicyOptions.submissions)")
    settings = {k: v for k, v in as_dict(params).items() if k != "refit_every_s"}
    return QSSF(placer, submissions=options.submissions, history=options.history,
                settings=DurationSettings(**settings), refit_every_s=params.refit_every_s, seed=options.seed)  # fmt: skip


def _weighted(cls: type) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """A policy built as ``cls(placer, **params, shares=options.shares)``."""
    return lambda placer, params, options: cls(placer, **as_dict(params), shares=options.shares)


def _slurm(cls: type) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """A Slurm scheduler: it places its own jobs (select/cons_tres); fair-share shares from
    ``--shares``, else the cluster's tenant weights."""
    return lambda placer, params, options: cls(params, shares=options.shares)


def _spot(cls: type) -> Callable[[Placer, Any, PolicyOptions], Policy]:
    """A spot FCFS baseline built as ``cls(placer, **params, seed=options.seed)`` (the seed
    of the forecaster of ``spot_quota=forecast``)."""
    return lambda placer, params, options: cls(placer, **as_dict(params), seed=options.seed)


def _chronus(placer: Placer, params: ChronusConfig, options: PolicyOptions) -> Policy:
    return Chronus(placer, params)


_SPOT_BASELINES = (
    ("yarn-cs-preempt", "FCFS, best fit, HP evicts the newest spot jobs of the best-fitting node",
     _spot(YarnCsPreempt), SpotEvictParams),
    ("chronus", "leases (HP 20 min, spot 5 min) renewed by a MILP at lease ends (SoCC'21)", _chronus, ChronusConfig),
    ("lyra", "spot only on loaned idle HP nodes, reclaimed by least lost work (EuroSys'23)", _spot(Lyra), LyraParams),
    ("fgd", "fragmentation-gradient placement, HP evicts spot (ATC'23)", _spot(FGD), FgdParams),
)  # fmt: skip
_GFS_VARIANTS = (("gfs", ""), ("gfs-e", ", previous-week-peak forecast ablation"), ("gfs-d", ", fixed-eta ablation"),
                 ("gfs-s", ", best-fit placement ablation"), ("gfs-p", ", random-victim preemption ablation"),
                 ("gfs-sp", ", best-fit and random-victim ablation"))  # fmt: skip

POLICIES: dict[str, PolicyInfo] = {
    p.name: p
    for p in (
        PolicyInfo("fifo", "first in, first out; non-preemptive; blocks at the queue head (Helios)", "consolidate",
                   _plain(orders.fifo)),
        PolicyInfo("fifo-backfill", "FIFO where a job that cannot be placed lets later jobs pass", "consolidate",
                   _plain(partial(orders.fifo, backfill=True))),
        PolicyInfo("sjf", "shortest job first (oracle duration); non-preemptive; blocks at the head (Helios)",
                   "consolidate", _plain(orders.sjf)),
        PolicyInfo("sjf-backfill", "SJF where a job that cannot be placed lets shorter-ranked jobs pass",
                   "consolidate", _plain(partial(orders.sjf, backfill=True))),
        PolicyInfo("srtf", "shortest remaining time first (oracle); preemptive", "consolidate", _plain(orders.srtf)),
        PolicyInfo("srsf", "shortest remaining GPU service first (oracle); preemptive", "consolidate",
                   _plain(orders.srsf)),
        PolicyInfo("tiresias", "discretised 2D-LAS, no duration needed; preemptive (NSDI'19)", "consolidate",
                   _keywords(Tiresias), TiresiasParams),
        PolicyInfo("tiresias-2q", "Tiresias with two queues (threshold 3,600 GPU-s) and PromoteKnob disabled: "
                   "the Hadar §IV-B baseline", "consolidate", _keywords(Tiresias), TiresiasTwoQueueParams),
        PolicyInfo("yarn-cs", "YARN capacity scheduler: per-tenant FIFO within capacity", "best-fit",
                   _keywords(YarnCapacity), YarnParams),
        PolicyInfo("astraea", "long-term GPU-time fairness: lowest tenant, then lowest job LTGF index first; "
                   "leases, starvation threshold (--shares weights)", "consolidate", _weighted(Astraea), AstraeaParams),
        PolicyInfo("fair-share", "weighted max-min (single-resource DRF) GPU share per tenant, re-balanced at "
                   "lease ends; FIFO in a tenant (--shares weights)", "consolidate", _weighted(FairShare), LeaseParams),
        PolicyInfo("gandiva-fair", "stride scheduling of GPU-time over tenant tickets, least-attained job first; "
                   "leases (--shares weights)", "consolidate", _weighted(GandivaFair), LeaseParams),
        PolicyInfo("themis", "largest estimated finish-time fairness rho first at lease ends (NSDI'20, auction "
                   "left out)", "consolidate", _keywords(Themis), LeaseParams),
        *(PolicyInfo(name, f"GFS baseline (ASPLOS'26 §4.1): {text}", "best-fit", build, params)
          for name, text, build, params in _SPOT_BASELINES),
        PolicyInfo("qssf", "quasi-shortest-service-first: predicted GPU time from past jobs; non-preemptive; "
                   "blocks at the head (Helios)", "consolidate", _qssf, QssfParams),
        PolicyInfo("gavel", "heterogeneity-aware max-min fairness (LP) realised by round priorities (OSDI'20); "
                   "own placement", "best-fit", _own_placement(Gavel), GavelParams),
        PolicyInfo("hadar", "task-level heterogeneity-aware primal-dual rounds, DP allocation (Hadar §III); "
                   "own placement", "best-fit", _own_placement(Hadar), HadarParams),
        PolicyInfo("hadare", "Hadar with jobs forked into copies on separate nodes, progress merged each round "
                   "(HadarE §V); own placement", "best-fit", _own_placement(HadarE), HadarEParams),
        *(PolicyInfo(name, f"GFS spot/HP scheduler (ASPLOS'26){text}; own placement (PTS)", "best-fit",
                     _gfs(name), gfs_params(name))
          for name, text in _GFS_VARIANTS),
        PolicyInfo("castor", "SJF with best-sharing-benefit-first GPU colocation and batch scaling (Castor)",
                   "consolidate", castor_builder("bsbf"), CastorParams),
        PolicyInfo("sjf-ffs", "SJF that colocates first-fit whenever GPUs are short (Castor's baseline)",
                   "consolidate", castor_builder("ffs"), CastorParams),
        PolicyInfo("ssf", "shortest GPU service (GPUs x duration) first; non-preemptive; blocks at the head",
                   "consolidate", _plain(ssf)),
        PolicyInfo("lucid", "estimated-GPU-time order with affine-pair packing by sharing score (Lucid, ASPLOS'23)",
                   "consolidate", build_lucid, LucidParams),
        PolicyInfo("pollux", "goodput-driven elastic GPU reallocation every 60 s with batch-size adaptation "
                   "(Pollux, OSDI'21); own placement", "consolidate", build_pollux, PolluxParams),
        PolicyInfo("slurm", "Slurm 22.05 sched/builtin: multifactor priority order, each partition blocked at its "
                   "first job left pending; own placement (cons_tres)", "best-fit", _slurm(SlurmBuiltin), SlurmParams),
        PolicyInfo("slurm-backfill", "Slurm 22.05 sched/backfill: the main scheduler plus a backfill cycle every "
                   "bf_interval s reserving whole nodes by time limits; own placement (cons_tres)", "best-fit",
                   _slurm(SlurmBackfill), SlurmParams),
    )
}  # fmt: skip
# Defragmentation by migration (policies/migration/defrag.py) around the parameterless queue policies.
POLICIES.update({
    f"{base}+defrag": PolicyInfo(f"{base}+defrag", f"{POLICIES[base].summary}; migrates small jobs to place a "
                                 "blocked gang job when the gain exceeds the cost", POLICIES[base].default_placer,
                                 defrag_build(POLICIES[base].build), DefragParams)
    for base in ("fifo", "fifo-backfill", "sjf", "sjf-backfill", "srtf")
})  # fmt: skip


def policy_names() -> list[str]:
    return list(POLICIES)


def make_policy(
    name: str,
    *,
    placer: str | None = None,
    rng: np.random.Generator,
    params: Any = None,
    options: PolicyOptions | None = None,
) -> Policy:
    """Build a registered policy with its default placer, or with ``placer``, and ``params``: an
    instance of its parameter dataclass, as :meth:`PolicyInfo.parse` returns it (None: the
    defaults)."""
    info = POLICIES.get(name)
    if info is None:
        raise ConfigError(f"unknown policy '{name}'{did_you_mean(name, POLICIES)}; choose one of {', '.join(POLICIES)}")
    if placer is not None and placer not in PLACERS:
        raise ConfigError(f"unknown placer '{placer}'{did_you_mean(placer, PLACERS)}; choose one of {', '.join(PLACERS)}")
    if params is None:
        params = info.parse({})
    elif info.params is None or not isinstance(params, info.params):
        expected = info.params.__name__ if info.params is not None else "no parameters"
        raise ConfigError(f"policy '{name}' takes {expected}, got {type(params).__name__}")
    return info.build(make_placer(placer or info.default_placer, rng), params, options or PolicyOptions())
