"""Lucid's sharing scores: each job's interference class (Hu et al., ASPLOS'23, §4.2).

Lucid profiles every job briefly (GPU utilisation, GPU-memory utilisation, memory; the
Non-intrusive Job Profiler) and its Packing Analyze Model puts it in one of three classes of
*sharing score*: 0 (Tiny: hardly slowed, hardly slows others), 1 (Medium), 2 (Jumbo). The
artifact's analyzer (``simulation/analyzer/analyzer.py``) defines the classes from the measured
pairs: a profiled job's mean normalised speed over every colocation it was measured in is
``< 0.85`` -> 2, ``< 0.95`` -> 1, else 0 (:data:`THRESHOLDS`), and its simulator reads the
resulting ``label`` column of ``analyzer/single_data.csv``.

Three sources, all on the catalogue's fp32 profiles (:mod:`schedlab.sim.iteration`; a batch
that was not profiled takes the nearest profiled one):

* ``profiled`` - the ``label`` column of Lucid's ``single_data.csv`` (amp = 0 rows): what
  Lucid's own simulator packs with;
* ``analyzer`` - the analyzer's rule re-applied to ``colocate_info.csv`` (fp32 and mixed-
  precision partners alike, as the analyzer does, the job itself at amp = 0);
* ``util`` (no Lucid folder) - the analyzer's rule applied to the speeds ``1/xi`` of an
  :class:`~schedlab.sim.colocation.XiSource` against every catalogue profile: the class the
  built-in utilisation model implies.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from schedlab.errors import InputError
from schedlab.sim.colocation import XiSource
from schedlab.sim.iteration import CATALOGUE

THRESHOLDS = (0.85, 0.95)  # mean colocated speed below the first: score 2; below the second: 1
Scores = dict[tuple[str, int], int]  # (model, profiled batch) -> sharing score


def score_of_speed(mean_speed: float) -> int:
    """The analyzer's rule: 2 below 0.85, 1 below 0.95, else 0."""
    if mean_speed < THRESHOLDS[0]:
        return 2
    if mean_speed < THRESHOLDS[1]:
        return 1
    return 0


def lookup(scores: Scores, model: str, batch: float) -> int:
    """The score of ``model`` at the profiled batch nearest ``batch`` (log2 distance); an
    unprofiled model is Jumbo (2), so it is packed only with Tiny jobs."""
    batches = [b for m, b in scores if m == model]
    if not batches:
        return 2
    nearest = min(batches, key=lambda b: (abs(math.log2(b) - math.log2(batch)), b))
    return scores[(model, nearest)]


def profiled_scores(single: pd.DataFrame, path: Path) -> Scores:
    """The ``label`` column of ``single_data.csv`` for the catalogue's models (amp = 0 rows)."""
    missing = [c for c in ("model", "batchsize", "amp", "label") if c not in single.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    out: Scores = {}
    for i, row in enumerate(single.itertuples(index=False), start=1):
        if row.model not in CATALOGUE or row.amp != 0:
            continue
        if row.label not in (0, 1, 2):
            raise InputError(f"{path}: row {i}, field 'label': expected 0, 1 or 2, got {row.label!r}")
        out[(row.model, int(row.batchsize))] = int(row.label)
    return out


def analyzer_scores(pairs: pd.DataFrame) -> Scores:
    """The analyzer's rule on the measured pairs (:func:`schedlab.policies.castor.interference.read_pairs`):
    the mean of the job's normalised speed over every row where it (amp = 0) is either job."""
    sides = [pairs[[f"model{n}", f"batchsize{n}", f"amp{n}", f"speed{n}"]].set_axis(["m", "b", "amp", "speed"], axis=1)
             for n in ("1", "2")]  # fmt: skip
    both = pd.concat(sides)
    both = both[(both["amp"] == 0) & both["m"].isin(list(CATALOGUE))]
    means = both.groupby(["m", "b"])["speed"].mean()
    return {(m, int(b)): score_of_speed(float(s)) for (m, b), s in means.items()}


def implied_scores(xi: XiSource) -> Scores:
    """The analyzer's rule on the speeds ``1/xi`` an interference model gives each catalogue
    profile against every catalogue profile (each model's profiled batches)."""
    partners = [(p.name, b) for p in CATALOGUE.values() for b in p.batches]
    out: Scores = {}
    for model, batch in partners:
        speeds = [1.0 / xi.xi(model, batch, other, other_batch) for other, other_batch in partners]
        out[(model, batch)] = score_of_speed(sum(speeds) / len(speeds))
    return out
