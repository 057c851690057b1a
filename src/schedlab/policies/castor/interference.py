"""Interference ratios xi (Castor §3.2, §6) and where Castor gets them.

``xi_A`` is how much longer an iteration of job A takes while it shares its GPUs with job B
(Eq. 4: ``t_hat_A = t_A * xi_A``). Three sources, each an :class:`~schedlab.sim.colocation.XiSource`:

* :class:`MeasuredXi` - the measured table: Lucid's ``colocate_info.csv`` (1,388 pairs of
  jobs sharing one GPU, each job's speed normalised to its exclusive speed), ``xi = 1/speed``
  averaged over the mixed-precision variants of a (model, batch, partner, partner batch) cell.
  A batch that was not profiled takes the nearest profiled one (log2 distance); a model pair
  that was never measured falls back to :class:`UtilisationXi`. Noise below 1 is clamped to 1.
* :class:`TreeXi` - the paper's predictor (§6.2): a regression tree on per-job profile
  features of both jobs, here our own CART (:mod:`schedlab.policies.castor.tree`) instead of
  XGBoost, on the features Lucid's profiles have (GPU utilisation, GPU-memory utilisation,
  memory, batch, mixed precision) instead of the 14 DCGM counters of Table 2, which no public
  data set holds.
* :class:`UtilisationXi` - the built-in fallback when no table is given: GPU contention only
  (``xi_A = max(1, (u_A + u_B) / 100) ** UTIL_EXPONENT``) from the catalogue's profiled
  utilisations; ``benchmarks/castor_eval.py`` reports its error on the measured pairs.

:class:`ScaledXi` stretches a source's range (``xi_max``, the paper's 6 in
:data:`PAPER_XI_MAX`); it is applied to the run's ratios and the decisions alike.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.policies.castor.tree import RegressionTree
from schedlab.sim.colocation import XiSource
from schedlab.sim.iteration import CATALOGUE

UTIL_EXPONENT = 1.0

PAIR_COLUMNS = ("model1", "batchsize1", "amp1", "speed1", "model2", "batchsize2", "amp2", "speed2")
SINGLE_COLUMNS = ("model", "batchsize", "amp", "gpu_util", "gmem_util", "gmem")
FEATURES = ("gpu_util", "gmem_util", "gmem", "log2_batch", "amp")


def _nearest(batch: float, batches: list[float]) -> float:
    return min(batches, key=lambda b: (abs(math.log2(b) - math.log2(batch)), b))


class UtilisationXi:
    """GPU contention from the catalogue's profiled utilisations (no measurement needed)."""

    largest = 2.0 ** UTIL_EXPONENT  # two jobs at 100 % each

    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float:
        ua = CATALOGUE[model_a].features(batch_a)[0] if model_a in CATALOGUE else 100.0
        ub = CATALOGUE[model_b].features(batch_b)[0] if model_b in CATALOGUE else 100.0
        return float(max(1.0, (ua + ub) / 100.0) ** UTIL_EXPONENT)


# Castor §3.3 (Fig. 3): "the interference ratios of different cases exhibit a wide range of up
# to 6 in our experiments". Lucid's measured table reaches 2.25 (median 1.05).
PAPER_XI_MAX = 6.0


class ScaledXi:
    """``xi' = 1 + k (xi - 1)``: a source's interference made ``k`` times stronger (or weaker);
    :meth:`to_range` picks ``k`` so that the source's largest ratio becomes ``xi_max``."""

    def __init__(self, source: XiSource, k: float) -> None:
        if not k >= 0:
            raise ValueError(f"interference scale must be >= 0, got {k!r}")
        self.source, self.k = source, k

    @classmethod
    def to_range(cls, source: XiSource, largest: float, xi_max: float) -> "ScaledXi":
        """Scale ``source``, whose largest ratio is ``largest``, so that it reaches ``xi_max``."""
        if not xi_max >= 1:
            raise ValueError(f"xi_max must be >= 1, got {xi_max!r}")
        return cls(source, (xi_max - 1) / (largest - 1) if largest > 1 else 0.0)

    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float:
        return 1 + self.k * (self.source.xi(model_a, batch_a, model_b, batch_b) - 1)


def read_pairs(path: Path) -> pd.DataFrame:
    """Lucid's ``colocate_info.csv``, checked: one row per measured pair (``row`` = 1-based data row)."""
    try:
        df = pd.read_csv(path, index_col=0)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the colocation table: {exc}") from None
    missing = [c for c in PAIR_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    df = df.reset_index(drop=True)
    df["row"] = np.arange(1, len(df) + 1)
    for col in ("batchsize1", "batchsize2", "speed1", "speed2"):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = ~(values > 0)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{path}: row {i + 1}, field '{col}': expected a positive number, got {df[col].iat[i]!r}")
        df[col] = values
    return df


class MeasuredXi:
    """The measured table, looked up symmetrically (either job of a row may be A)."""

    def __init__(self, pairs: pd.DataFrame) -> None:
        both = pd.concat([
            pd.DataFrame({"a": pairs.model1, "ba": pairs.batchsize1, "b": pairs.model2, "bb": pairs.batchsize2,
                          "xi": 1.0 / pairs.speed1}),
            pd.DataFrame({"a": pairs.model2, "ba": pairs.batchsize2, "b": pairs.model1, "bb": pairs.batchsize1,
                          "xi": 1.0 / pairs.speed2}),
        ])  # fmt: skip
        cells = both.groupby(["a", "b", "ba", "bb"])["xi"].mean()
        self.cells: dict[tuple[str, str], dict[tuple[float, float], float]] = {}
        for (a, b, ba, bb), xi in cells.items():
            self.cells.setdefault((a, b), {})[(float(ba), float(bb))] = max(1.0, float(xi))
        self.fallback = UtilisationXi()

    @classmethod
    def from_csv(cls, path: str | Path) -> "MeasuredXi":
        return cls(read_pairs(Path(path)))

    @property
    def largest(self) -> float:
        """The largest measured ratio (after clamping)."""
        return max(max(cell.values()) for cell in self.cells.values())

    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float:
        cell = self.cells.get((model_a, model_b))
        if cell is None:
            return self.fallback.xi(model_a, batch_a, model_b, batch_b)
        ba = _nearest(batch_a, sorted({k[0] for k in cell}))
        bb = _nearest(batch_b, sorted(k[1] for k in cell if k[0] == ba))
        return cell[(ba, bb)]


def pair_features(pairs: pd.DataFrame, single: pd.DataFrame) -> pd.DataFrame:
    """Per-pair features (both jobs' profiles, joined from Lucid's ``single_data.csv`` by
    model, batch and mixed precision) with targets ``xi1``, ``xi2`` and the unordered ``pair``."""
    prof = single[list(SINGLE_COLUMNS)].drop_duplicates(["model", "batchsize", "amp"])
    out = pairs[["row"]].copy()
    for n in ("1", "2"):
        side = pairs[[f"model{n}", f"batchsize{n}", f"amp{n}"]].set_axis(["model", "batchsize", "amp"], axis=1)
        joined = side.merge(prof, on=["model", "batchsize", "amp"], how="left")
        for f in ("gpu_util", "gmem_util", "gmem"):
            out[f"{f}{n}"] = joined[f].to_numpy()
        out[f"log2_batch{n}"] = np.log2(side["batchsize"].to_numpy(dtype=float))
        out[f"amp{n}"] = side["amp"].to_numpy(dtype=float)
        out[f"xi{n}"] = 1.0 / pairs[f"speed{n}"].to_numpy()
    out["pair"] = [" + ".join(sorted(p)) for p in zip(pairs.model1, pairs.model2)]
    return out.dropna()


def job_columns(first: str, second: str) -> list[str]:
    """Feature columns with job ``first`` as A (whose xi is predicted) and ``second`` as B."""
    return [f"{f}{first}" for f in FEATURES] + [f"{f}{second}" for f in FEATURES]


def training_matrix(feats: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each pair twice, once per job as A: the tree predicts A's xi from (A, B) features."""
    x = np.vstack([feats[job_columns("1", "2")].to_numpy(), feats[job_columns("2", "1")].to_numpy()])
    y = np.concatenate([feats["xi1"].to_numpy(), feats["xi2"].to_numpy()])
    return x, y


class TreeXi:
    """xi from a regression tree over both jobs' profile features (catalogue profiles, fp32)."""

    def __init__(self, tree: RegressionTree) -> None:
        self.tree = tree

    @classmethod
    def train(cls, feats: pd.DataFrame, *, max_depth: int = 6, min_leaf: int = 5) -> "TreeXi":
        x, y = training_matrix(feats)
        return cls(RegressionTree(max_depth=max_depth, min_leaf=min_leaf).fit(x, y))

    def xi(self, model_a: str, batch_a: float, model_b: str, batch_b: float) -> float:
        row = [*self._features(model_a, batch_a), *self._features(model_b, batch_b)]
        return max(1.0, float(self.tree.predict(np.array([row]))[0]))

    @staticmethod
    def _features(model: str, batch: float) -> tuple[float, ...]:
        gpu, mem, gmem = CATALOGUE[model].features(batch)
        return gpu, mem, gmem, math.log2(batch), 0.0
