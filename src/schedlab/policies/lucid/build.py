"""Lucid's registry entry: its parameters and where its interference data come from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.policies.castor.interference import MeasuredXi, UtilisationXi, read_pairs
from schedlab.policies.common.placers import Placer
from schedlab.policies.lucid.lucid import Lucid
from schedlab.policies.lucid.scores import Scores, analyzer_scores, implied_scores, profiled_scores
from schedlab.policies.params import help_field
from schedlab.sim.colocation import XiSource

SCORES = ("auto", "profiled", "analyzer", "util")


@dataclass(frozen=True)
class LucidParams:
    """Lucid's packing rules (§4.2-4.3 of its paper; defaults of its artifact)."""

    lucid: str = help_field("", "folder with Lucid's data/colocate_info.csv and analyzer/single_data.csv: the "
                                "measured pair speeds and sharing scores; empty = the built-in utilisation model")
    scores: str = help_field("auto", "sharing scores: profiled (single_data.csv's label), analyzer (the analyzer's "
                                     "rule on the measured pairs), util (that rule on the utilisation model); "
                                     "auto = profiled with lucid, util without")
    max_score_sum: int = help_field(2, "pack two jobs only if their sharing scores sum to at most this")
    time_factor: float = help_field(2.0, "pack only if the newcomer's estimated GPU time is <= this x the partner's")
    gpu_mem_gib: float = help_field(48.0, "GPU memory the pair must fit in (the A6000 of Castor §9.1)")
    pas_threshold: float = help_field(2.0, "pack while forecast submissions per 10 min exceed this (0 = always)")
    pas_window_s: float = help_field(3000.0, "seconds of past submissions the persistence forecast averages")

    def __post_init__(self) -> None:
        if self.scores not in SCORES:
            raise ValueError(f"scores must be one of {', '.join(SCORES)}, got {self.scores!r}")
        if self.scores in ("profiled", "analyzer") and not self.lucid:
            raise ValueError(f"scores={self.scores} reads Lucid's data: set lucid=FOLDER")


def lucid_data(params: LucidParams) -> tuple[XiSource, Scores]:
    """(the run's xi, the sharing scores)."""
    if not params.lucid:
        truth: XiSource = UtilisationXi()
        return truth, implied_scores(truth)
    folder = Path(params.lucid)
    pairs = read_pairs(folder / "data" / "colocate_info.csv")
    truth = MeasuredXi(pairs)
    if params.scores == "analyzer":
        return truth, analyzer_scores(pairs)
    if params.scores == "util":
        return truth, implied_scores(UtilisationXi())
    single_path = folder / "analyzer" / "single_data.csv"
    try:
        single = pd.read_csv(single_path)
    except (OSError, pd.errors.ParserError) as exc:
        raise InputError(f"{single_path}: cannot read the single-job profiles: {exc}") from None
    return truth, profiled_scores(single, single_path)


def build_lucid(placer: Placer, params: LucidParams, options: Any) -> Lucid:
    truth, scores = lucid_data(params)
    return Lucid(placer, truth=truth, scores=scores, max_score_sum=params.max_score_sum,
                 time_factor=params.time_factor, gpu_mem_mib=params.gpu_mem_gib * 1024,
                 pas_threshold=params.pas_threshold, pas_window_s=params.pas_window_s, seed=options.seed)  # fmt: skip
