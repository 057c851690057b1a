"""Castor's registry entries: parameters, where the interference ratios come from, and SSF."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.policies.castor.interference import (
    MeasuredXi,
    ScaledXi,
    TreeXi,
    UtilisationXi,
    pair_features,
    read_pairs,
)
from schedlab.policies.castor.sjf_bsbf import SjfBsbf
from schedlab.policies.common.placers import Placer
from schedlab.policies.common.queues import QueueScheduler
from schedlab.policies.params import help_field
from schedlab.sim.colocation import XiSource
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

PREDICTORS = ("table", "tree", "util")


@dataclass(frozen=True)
class CastorParams:
    """Where castor and sjf-ffs get interference ratios, and the GPU memory of the pair check."""

    lucid: str = help_field("", "folder with Lucid's data/colocate_info.csv and analyzer/single_data.csv: the "
                                "measured xi that set the run's rates; empty = the built-in utilisation model")
    predictor: str = help_field("table", "xi the policy decides with: table (the run's own xi), tree (regression "
                                         "tree trained on Lucid's pairs; needs lucid), util (utilisation model)")
    gpu_mem_gib: float = help_field(48.0, "GPU memory for the pair feasibility check (the A6000 of Castor §9.1)")
    xi_max: float = help_field(0.0, "stretch every xi (the run's and the decisions') linearly, 1 + k (xi - 1), so "
                                    "the source's largest becomes xi_max; Castor §3.3 measures up to 6 (Lucid's "
                                    "table: 2.25); 0 = the source as is")

    def __post_init__(self) -> None:
        if self.predictor not in PREDICTORS:
            raise ValueError(f"predictor must be one of {', '.join(PREDICTORS)}, got {self.predictor!r}")
        if self.predictor == "tree" and not self.lucid:
            raise ValueError("predictor=tree trains on Lucid's pairs: set lucid=FOLDER")
        if self.xi_max != 0 and not self.xi_max >= 1:
            raise ValueError(f"xi_max must be 0 (off) or >= 1, got {self.xi_max!r}")


def xi_sources(params: CastorParams) -> tuple[XiSource, XiSource]:
    """(the run's xi, the xi the policy decides with), both stretched to ``xi_max`` when set:
    ``k`` is fixed by the run's source, so a predictor is stretched by the same factor."""
    truth, decide = _unscaled_sources(params)
    if not params.xi_max:
        return truth, decide
    scaled = ScaledXi.to_range(truth, truth.largest, params.xi_max)
    return scaled, scaled if decide is truth else ScaledXi(decide, scaled.k)


def _unscaled_sources(params: CastorParams) -> tuple[MeasuredXi | UtilisationXi, XiSource]:
    if not params.lucid:
        truth: MeasuredXi | UtilisationXi = UtilisationXi()
        return truth, truth
    folder = Path(params.lucid)
    pairs = read_pairs(folder / "data" / "colocate_info.csv")
    truth = MeasuredXi(pairs)
    if params.predictor == "table":
        return truth, truth
    if params.predictor == "util":
        return truth, UtilisationXi()
    single_path = folder / "analyzer" / "single_data.csv"
    try:
        single = pd.read_csv(single_path)
    except (OSError, pd.errors.ParserError) as exc:
        raise InputError(f"{single_path}: cannot read the single-job profiles: {exc}") from None
    return truth, TreeXi.train(pair_features(pairs, single))


def castor_builder(sharing: str) -> Callable[[Placer, CastorParams, Any], SjfBsbf]:
    def build(placer: Placer, params: CastorParams, options: Any) -> SjfBsbf:
        truth, decide = xi_sources(params)
        return SjfBsbf(placer, truth=truth, decide=decide, sharing=sharing, gpu_mem_mib=params.gpu_mem_gib * 1024,
                       seed=options.seed)  # fmt: skip

    return build


def _service(ctx: Context, job: Job) -> float:
    return job.num_gpus * job.work


def ssf(placer: Placer) -> QueueScheduler:
    """Shortest service first (Castor §9.1): smallest GPUs x duration first, non-preemptive,
    blocking at the head like ``sjf``."""
    return QueueScheduler("ssf", _service, placer)

