"""Policy registry: one entry per scheduler name, with its default placer and its parameters.

Adding a policy means one module and one entry in ``POLICIES``; the engine never changes.
Every entry builds the same way, ``build(placer, params, options)``; a policy's parameters are
a frozen dataclass (:mod:`schedlab.policies.params`) that ``--param KEY=VALUE`` sets.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any

from schedlab.errors import ConfigError, did_you_mean
from schedlab.policies.common.placers import PLACERS, Placer, make_placer
from schedlab.policies.params import as_dict, parse

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from schedlab.policies.helios.params import QssfParams
    from schedlab.policies.spot.chronus import ChronusConfig
    from schedlab.sim.policy import Policy
    from schedlab.workload.schema import Workload

Builder = Callable[[Placer, Any, "PolicyOptions"], "Policy"]
Loader = Callable[[], tuple[Builder, "type | None"]]


@dataclass(frozen=True)
class PolicyOptions:
    """What a policy may be built with besides its placer and its parameters: a warm-start
    ``history`` (jobs finished before the
    simulated workload, on its time axis), a ``seed``, and ``submissions``: the run's jobs as
    known when submitted (:data:`~schedlab.workload.schema.SUBMITTED_COLUMNS`, no outcome), for
    predictors that score in batches (QSSF); ``shares``: tenant weights (``--shares``), for the
    fair-share policies (equal weights when None). Without ``submissions``, they are cut from
    ``workload`` (the run's jobs) when a policy asks for them: :meth:`submitted`."""

    history: Workload | None = None
    seed: int = 0
    submissions: pd.DataFrame | None = None
    shares: Mapping[str, float] | None = None
    workload: Workload | None = None

    def submitted(self) -> pd.DataFrame | None:
        """``submissions``, else the workload's :data:`~schedlab.workload.schema.SUBMITTED_COLUMNS`."""
        if self.submissions is not None or self.workload is None:
            return self.submissions
        from schedlab.workload.schema import SUBMITTED_COLUMNS

        return self.workload.jobs.loc[:, list(SUBMITTED_COLUMNS)]


class PolicyInfo:
    """A registered policy: ``build(placer, params, options)``, where ``params`` is an instance
    of its parameter dataclass ``params`` (None for a policy without parameters).

    Give ``build`` and ``params``, or ``load``: a function that returns the two. The registry's
    entries use ``load``, which imports the policy's module on first use of either, so a run
    imports the one policy it builds."""

    def __init__(self, name: str, summary: str, default_placer: str, build: Builder | None = None,
                 params: type | None = None, *, load: Loader | None = None) -> None:  # fmt: skip
        if (build is None) == (load is None):
            raise TypeError(f"policy '{name}': give either build (and params) or load")
        self.name = name
        self.summary = summary
        self.default_placer = default_placer
        self._loaded = (build, params) if build is not None else None
        self._load = load

    def _entry(self) -> tuple[Builder, type | None]:
        if self._loaded is None:
            assert self._load is not None
            self._loaded = self._load()
        return self._loaded

    @property
    def build(self) -> Builder:
        return self._entry()[0]

    @property
    def params(self) -> type | None:
        return self._entry()[1]

    def parse(self, values: Mapping[str, Any]) -> Any:
        """The policy's parameters with ``values`` (text from ``--param KEY=VALUE``, or typed)
        set: the one place they are converted and checked; a policy without any refuses values."""
        if self.params is None:
            if values:
                raise ConfigError(f"policy '{self.name}' has no parameters (got {', '.join(values)})")
            return None
        return parse(self.params, self.name, values)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"schedlab.policies.{name}")


def _from(module: str, entry: Callable[[ModuleType], tuple[Builder, type | None]]) -> Loader:
    """A loader that imports ``schedlab.policies.<module>`` and reads the builder and the
    parameter class off it with ``entry``."""
    return lambda: entry(_module(module))


def _own_placement(cls: type) -> Builder:
    """A policy that places its own jobs, built as ``cls(**params)``; the placer is not used."""
    return lambda placer, params, options: cls(**as_dict(params))


def _plain(make: Callable[[Placer], Policy]) -> Builder:
    """A policy built from its placer alone."""
    return lambda placer, params, options: make(placer)


def _keywords(cls: type) -> Builder:
    """A policy built as ``cls(placer, **params)``."""
    return lambda placer, params, options: cls(placer, **as_dict(params))


def _gfs(variant: str) -> Loader:
    """GFS builds its own placement (PTS); the placer is not used."""

    def entry(gfs: ModuleType) -> tuple[Builder, type | None]:
        build = gfs.build_gfs
        return (lambda placer, params, options: build(variant, as_dict(params), seed=options.seed)), gfs.gfs_params(variant)

    return _from("gfs", entry)


def _qssf(placer: Placer, params: QssfParams, options: PolicyOptions) -> Policy:
    from schedlab.policies.helios.qssf import QSSF  # imported on use: it pulls in the predictors
    from schedlab.predict.settings import DurationSettings

    submissions = options.submitted()
    if submissions is None:
        raise ConfigError("qssf is built with the run's submissions (PolicyOptions.submissions or .workload)")
    settings = {k: v for k, v in as_dict(params).items() if k != "refit_every_s"}
    return QSSF(placer, submissions=submissions, history=options.history,
                settings=DurationSettings(**settings), refit_every_s=params.refit_every_s, seed=options.seed)  # fmt: skip


def _weighted(cls: type) -> Builder:
    """A policy built as ``cls(placer, **params, shares=options.shares)``."""
    return lambda placer, params, options: cls(placer, **as_dict(params), shares=options.shares)


def _slurm(cls: type) -> Builder:
    """A Slurm scheduler: it places its own jobs (select/cons_tres); fair-share shares from
    ``--shares``, else the cluster's tenant weights."""
    return lambda placer, params, options: cls(params, shares=options.shares)


def _spot(cls: type) -> Builder:
    """A spot FCFS baseline built as ``cls(placer, **params, seed=options.seed)`` (the seed
    of the forecaster of ``spot_quota=forecast``)."""
    return lambda placer, params, options: cls(placer, **as_dict(params), seed=options.seed)


def _chronus(module: ModuleType) -> tuple[Builder, type | None]:
    chronus: Callable[[Placer, ChronusConfig], Policy] = module.Chronus

    def build(placer: Placer, params: ChronusConfig, options: PolicyOptions) -> Policy:
        return chronus(placer, params)

    return build, module.ChronusConfig


def _defrag(base: str) -> Loader:
    """Defragmentation by migration around the queue policy ``base``."""
    return _from("migration.defrag", lambda m: (m.defrag_build(POLICIES[base].build), m.DefragParams))


_SPOT_BASELINES = (
    ("yarn-cs-preempt", "FCFS, best fit, HP evicts the newest spot jobs of the best-fitting node",
     _from("spot.yarn_cs_preempt", lambda m: (_spot(m.YarnCsPreempt), _module("spot.spot_fcfs").SpotEvictParams))),
    ("chronus", "leases (HP 20 min, spot 5 min) renewed by a MILP at lease ends (SoCC'21)", _from("spot.chronus", _chronus)),
    ("lyra", "spot only on loaned idle HP nodes, reclaimed by least lost work (EuroSys'23)",
     _from("spot.lyra", lambda m: (_spot(m.Lyra), m.LyraParams))),
    ("fgd", "fragmentation-gradient placement, HP evicts spot (ATC'23)", _from("spot.fgd", lambda m: (_spot(m.FGD), m.FgdParams))),
)  # fmt: skip
_GFS_VARIANTS = (("gfs", ""), ("gfs-e", ", previous-week-peak forecast ablation"), ("gfs-d", ", fixed-eta ablation"),
                 ("gfs-s", ", best-fit placement ablation"), ("gfs-p", ", random-victim preemption ablation"),
                 ("gfs-sp", ", best-fit and random-victim ablation"))  # fmt: skip
_ORDERS = "classic.orders"

POLICIES: dict[str, PolicyInfo] = {
    p.name: p
    for p in (
        PolicyInfo("fifo", "first in, first out; non-preemptive; blocks at the queue head (Helios)", "consolidate",
                   load=_from(_ORDERS, lambda m: (_plain(m.fifo), None))),
        PolicyInfo("fifo-backfill", "FIFO where a job that cannot be placed lets later jobs pass", "consolidate",
                   load=_from(_ORDERS, lambda m: (_plain(partial(m.fifo, backfill=True)), None))),
        PolicyInfo("sjf", "shortest job first (oracle duration); non-preemptive; blocks at the head (Helios)",
                   "consolidate", load=_from(_ORDERS, lambda m: (_plain(m.sjf), None))),
        PolicyInfo("sjf-backfill", "SJF where a job that cannot be placed lets shorter-ranked jobs pass",
                   "consolidate", load=_from(_ORDERS, lambda m: (_plain(partial(m.sjf, backfill=True)), None))),
        PolicyInfo("srtf", "shortest remaining time first (oracle); preemptive", "consolidate",
                   load=_from(_ORDERS, lambda m: (_plain(m.srtf), None))),
        PolicyInfo("srsf", "shortest remaining GPU service first (oracle); preemptive", "consolidate",
                   load=_from(_ORDERS, lambda m: (_plain(m.srsf), None))),
        PolicyInfo("tiresias", "discretised 2D-LAS, no duration needed; preemptive (NSDI'19)", "consolidate",
                   load=_from("classic.tiresias", lambda m: (_keywords(m.Tiresias), m.TiresiasParams))),
        PolicyInfo("tiresias-2q", "Tiresias with two queues (threshold 3,600 GPU-s) and PromoteKnob disabled: "
                   "the Hadar §IV-B baseline", "consolidate",
                   load=_from("classic.tiresias", lambda m: (_keywords(m.Tiresias), m.TiresiasTwoQueueParams))),
        PolicyInfo("yarn-cs", "YARN capacity scheduler: per-tenant FIFO within capacity", "best-fit",
                   load=_from("classic.yarn_cs", lambda m: (_keywords(m.YarnCapacity), m.YarnParams))),
        PolicyInfo("astraea", "long-term GPU-time fairness: lowest tenant, then lowest job LTGF index first; "
                   "leases, starvation threshold (--shares weights)", "consolidate",
                   load=_from("fairness.astraea", lambda m: (_weighted(m.Astraea), m.AstraeaParams))),
        PolicyInfo("fair-share", "weighted max-min (single-resource DRF) GPU share per tenant, re-balanced at "
                   "lease ends; FIFO in a tenant (--shares weights)", "consolidate",
                   load=_from("fairness.fair_share", lambda m: (_weighted(m.FairShare), m.LeaseParams))),
        PolicyInfo("gandiva-fair", "stride scheduling of GPU-time over tenant tickets, least-attained job first; "
                   "leases (--shares weights)", "consolidate",
                   load=_from("fairness.fair_share", lambda m: (_weighted(m.GandivaFair), m.LeaseParams))),
        PolicyInfo("themis", "largest estimated finish-time fairness rho first at lease ends (NSDI'20, auction "
                   "left out)", "consolidate",
                   load=_from("fairness.themis", lambda m: (_keywords(m.Themis), _module("fairness.fair_share").LeaseParams))),
        *(PolicyInfo(name, f"GFS baseline (ASPLOS'26 §4.1): {text}", "best-fit", load=load)
          for name, text, load in _SPOT_BASELINES),
        PolicyInfo("qssf", "quasi-shortest-service-first: predicted GPU time from past jobs; non-preemptive; "
                   "blocks at the head (Helios)", "consolidate", load=_from("helios.params", lambda m: (_qssf, m.QssfParams))),
        PolicyInfo("gavel", "heterogeneity-aware max-min fairness (LP) realised by round priorities (OSDI'20); "
                   "own placement", "best-fit", load=_from("hetero.gavel", lambda m: (_own_placement(m.Gavel), m.GavelParams))),
        PolicyInfo("hadar", "task-level heterogeneity-aware primal-dual rounds, DP allocation (Hadar §III); "
                   "own placement", "best-fit", load=_from("hetero.hadar", lambda m: (_own_placement(m.Hadar), m.HadarParams))),
        PolicyInfo("hadare", "Hadar with jobs forked into copies on separate nodes, progress merged each round "
                   "(HadarE §V); own placement", "best-fit",
                   load=_from("hetero.hadare", lambda m: (_own_placement(m.HadarE), m.HadarEParams))),
        *(PolicyInfo(name, f"GFS spot/HP scheduler (ASPLOS'26){text}; own placement (PTS)", "best-fit", load=_gfs(name))
          for name, text in _GFS_VARIANTS),
        PolicyInfo("castor", "SJF with best-sharing-benefit-first GPU colocation and batch scaling (Castor)",
                   "consolidate", load=_from("castor.build", lambda m: (m.castor_builder("bsbf"), m.CastorParams))),
        PolicyInfo("sjf-ffs", "SJF that colocates first-fit whenever GPUs are short (Castor's baseline)",
                   "consolidate", load=_from("castor.build", lambda m: (m.castor_builder("ffs"), m.CastorParams))),
        PolicyInfo("ssf", "shortest GPU service (GPUs x duration) first; non-preemptive; blocks at the head",
                   "consolidate", load=_from("castor.build", lambda m: (_plain(m.ssf), None))),
        PolicyInfo("lucid", "estimated-GPU-time order with affine-pair packing by sharing score (Lucid, ASPLOS'23)",
                   "consolidate", load=_from("lucid.build", lambda m: (m.build_lucid, m.LucidParams))),
        PolicyInfo("pollux", "goodput-driven elastic GPU reallocation every 60 s with batch-size adaptation "
                   "(Pollux, OSDI'21); own placement", "consolidate",
                   load=_from("pollux.build", lambda m: (m.build_pollux, m.PolluxParams))),
        PolicyInfo("slurm", "Slurm 22.05 sched/builtin: multifactor priority order, each partition blocked at its "
                   "first job left pending; own placement (cons_tres)", "best-fit",
                   load=_from("slurm.builtin", lambda m: (_slurm(m.SlurmBuiltin), m.SlurmParams))),
        PolicyInfo("slurm-backfill", "Slurm 22.05 sched/backfill: the main scheduler plus a backfill cycle every "
                   "bf_interval s reserving whole nodes by time limits; own placement (cons_tres)", "best-fit",
                   load=_from("slurm.backfill", lambda m: (_slurm(m.SlurmBackfill), m.SlurmParams))),
    )
}  # fmt: skip
# Defragmentation by migration (policies/migration/defrag.py) around the parameterless queue policies.
POLICIES.update({
    f"{base}+defrag": PolicyInfo(f"{base}+defrag", f"{POLICIES[base].summary}; migrates small jobs to place a "
                                 "blocked gang job when the gain exceeds the cost", POLICIES[base].default_placer,
                                 load=_defrag(base))
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
