"""Job-name similarity (Helios, Hu et al., SC'21, §4.2): names are compared by normalised
Levenshtein similarity (rapidfuzz), ``1 - distance / max(len)``, in [0, 1]."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from schedlab.extras import require

_rapidfuzz = require("rapidfuzz", "qssf's duration predictor")
process, Levenshtein = _rapidfuzz.process, _rapidfuzz.distance.Levenshtein


def similar_names(name: str, choices: Sequence[str], threshold: float) -> list[str]:
    """The ``choices`` whose similarity to ``name`` is at least ``threshold``."""
    found = process.extract(name, choices, scorer=Levenshtein.normalized_similarity, score_cutoff=threshold,
                            limit=None)  # fmt: skip
    return [choice for choice, _, _ in found]


class NameClusters:
    """Greedy leader clustering of job names: a name joins the cluster of its most similar
    leader when that is at least ``threshold`` similar, else it leads a new cluster. Clusters only grow, so the
    ids given out stay valid as more finished jobs are added."""

    def __init__(self, threshold: float) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"name similarity threshold must be in (0, 1], got {threshold!r}")
        self.threshold = threshold
        self.leaders: list[str] = []
        self._ids: dict[str, int] = {}

    def add(self, names: Iterable[str]) -> None:
        """Cluster the names not seen before, in order of first appearance ("" is skipped)."""
        for name in dict.fromkeys(names):
            if name and name not in self._ids:
                cid = self._nearest(name)
                if cid < 0:
                    cid = len(self.leaders)
                    self.leaders.append(name)
                self._ids[name] = cid

    def assign(self, names: Iterable[str]) -> np.ndarray:
        """Cluster id of each name; -1 for "" and for a new name no leader is similar to."""
        out = []
        for name in names:
            cid = self._ids.get(name)
            out.append(cid if cid is not None else (self._nearest(name) if name else -1))
        return np.asarray(out, dtype=np.int64)

    def _nearest(self, name: str) -> int:
        if not self.leaders:
            return -1
        best = process.extractOne(name, self.leaders, scorer=Levenshtein.normalized_similarity,
                                  score_cutoff=self.threshold)  # fmt: skip
        return -1 if best is None else int(best[2])
