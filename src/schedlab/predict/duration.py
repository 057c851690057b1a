"""The job-duration predictor of QSSF (Helios: Hu et al., SC'21, §4.2, Algorithm 1).

Two estimates, both learnt from finished jobs only (see :mod:`schedlab.predict.framework`):

(a) :class:`RollingEstimate`, from the submitter's own past jobs:
    * a new user (no finished job yet, or the trace has no users): the mean duration of past
      jobs with the same GPU demand (all past jobs if none has that demand);
    * a known user with past jobs of similar name (normalised Levenshtein similarity at least
      ``name_similarity``): the exponentially decayed mean of those jobs' durations, the most
      recently finished weighing most (weight ``decay ** k`` for the k-th most recent);
    * otherwise the user's mean duration for that GPU demand (the user's mean if none).
(b) :class:`LightGBMDuration`, a gradient-boosted tree model on job attributes: GPU and CPU
    demand, user, VC (tenant), name cluster (where the trace has names) and the submit
    calendar (month, weekday, hour, minute from ``Workload.origin + submit_s``), fitted to
    ``log1p(duration)``.

:class:`DurationPredictor` blends them: ``duration = w * rolling + (1 - w) * lightgbm`` with
``w = rolling_weight`` (0.1, the weight of the public Helios artifact's combined estimator; the
paper text available here gives no number), and QSSF's priority is GPU demand x duration.

Deviations: where a trace has no job names (all empty) the name rules and the name-cluster
feature are skipped and ``names_used`` is False; LightGBM is used only once
``min_train_rows`` jobs have finished, the rolling estimate alone before that; with no
finished job at all every job gets ``prior_s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedlab.extras import require
from schedlab.predict.names import NameClusters, similar_names
from schedlab.predict.settings import DurationSettings

if TYPE_CHECKING:
    import lightgbm as lgb
else:
    lgb = require("lightgbm", "qssf's duration predictor")

_RECENT = 64  # the decayed mean looks at this many most recent similar jobs (0.5 ** 64 ~ 0)




def has_names(frame: pd.DataFrame) -> bool:
    return bool((frame["name"].astype(str) != "").any())


@dataclass
class _UserJobs:
    durations: np.ndarray  # per finished job, oldest first
    at: dict[str, list[int]]  # each distinct name's positions in ``durations``, ascending
    by_gpus: dict[float, float]
    mean: float

    def recent(self, names: list[str]) -> np.ndarray:
        """Durations of the last :data:`_RECENT` jobs named any of ``names`` (distinct), oldest
        first: read from each name's own last positions, not by scanning the whole history."""
        pos = sorted(p for name in names for p in self.at[name][-_RECENT:])[-_RECENT:]
        return self.durations[pos]


class RollingEstimate:
    """Estimate (a): per-user rolling estimate from similar past jobs (see the module doc)."""

    def __init__(self, *, name_similarity: float = 0.8, decay: float = 0.5, prior_s: float = 3600.0) -> None:
        self.name_similarity = name_similarity
        self.decay = decay
        self.prior_s = prior_s
        self.names_used = False
        self._global = prior_s
        self._by_gpus: dict[float, float] = {}
        self._users: dict[str, _UserJobs] = {}
        self._memo: dict[tuple[str, str, float], float] = {}

    def fit(self, history: pd.DataFrame) -> None:
        frame = history.sort_values("end_s", kind="stable")
        durations = frame["duration_s"].to_numpy(dtype=float)
        gpus = frame["num_gpus"].to_numpy(dtype=float)
        self.names_used = has_names(frame)
        self._global = float(durations.mean()) if durations.size else self.prior_s
        self._by_gpus = pd.Series(durations).groupby(gpus).mean().to_dict()
        names = frame["name"].astype(str).to_numpy(dtype=object)
        self._users = {}
        for user, pos in frame.groupby("user", sort=False).indices.items():
            if user == "":
                continue  # an unknown submitter is treated as a new user
            d = durations[pos]
            at: dict[str, list[int]] = {}
            for i, name in enumerate(names[pos]):
                at.setdefault(name, []).append(i)
            self._users[user] = _UserJobs(
                durations=d, at=at, by_gpus=pd.Series(d).groupby(gpus[pos]).mean().to_dict(), mean=float(d.mean()),
            )  # fmt: skip
        self._memo = {}

    def predict(self, items: pd.DataFrame) -> np.ndarray:
        users = items["user"].astype(str).to_numpy()
        names = items["name"].astype(str).to_numpy()
        gpus = items["num_gpus"].to_numpy(dtype=float)
        return np.array([self._one(u, n, g) for u, n, g in zip(users, names, gpus, strict=True)], dtype=float)

    def _one(self, user: str, name: str, gpus: float) -> float:
        key = (user, name, gpus)
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = self._estimate(user, name, gpus)
        return value

    def _estimate(self, user: str, name: str, gpus: float) -> float:
        past = self._users.get(user)
        if past is None:
            return self._by_gpus.get(gpus, self._global)
        if self.names_used and name:
            similar = similar_names(name, list(past.at), self.name_similarity)
            if similar:
                recent = past.recent(similar)
                weights = self.decay ** np.arange(recent.size - 1, -1, -1, dtype=float)
                return float(np.dot(weights, recent) / weights.sum())
        return past.by_gpus.get(gpus, past.mean)


class LightGBMDuration:
    """Estimate (b): LightGBM regression of ``log1p(duration)`` on submit-time attributes.

    Deterministic: one thread, ``deterministic=True`` and the given ``seed``.
    """

    CATEGORICAL = ("user", "tenant", "name_cluster")

    def __init__(
        self,
        *,
        origin: pd.Timestamp | None,
        seed: int,
        name_similarity: float = 0.8,
        n_estimators: int = 150,
        learning_rate: float = 0.05,
        num_leaves: int = 31,
    ) -> None:
        self.origin = origin
        self.seed = seed
        self.n_estimators = n_estimators
        self.params = {
            "objective": "regression", "learning_rate": learning_rate, "num_leaves": num_leaves,
            "min_data_in_leaf": 20, "deterministic": True, "force_row_wise": True, "num_threads": 1,
            "seed": seed, "verbose": -1,
        }  # fmt: skip
        self.clusters = NameClusters(name_similarity)
        self.names_used = False
        self.model: lgb.Booster | None = None
        self._vocab: dict[str, dict[str, int]] = {}

    @property
    def calendar_used(self) -> bool:
        return self.origin is not None

    def fit(self, history: pd.DataFrame) -> None:
        self.names_used = has_names(history)
        if self.names_used:
            self.clusters.add(history.sort_values("end_s", kind="stable")["name"].astype(str))
        self._vocab = {c: {v: i for i, v in enumerate(pd.unique(history[c].astype(str)))} for c in ("user", "tenant")}
        features = self._features(history)
        target = np.log1p(history["duration_s"].to_numpy(dtype=float))
        categorical = [c for c in self.CATEGORICAL if c in features.columns]
        data = lgb.Dataset(features, label=target, categorical_feature=categorical, free_raw_data=True)
        self.model = lgb.train(self.params, data, num_boost_round=self.n_estimators)

    def predict(self, items: pd.DataFrame) -> np.ndarray:
        if self.model is None:
            raise RuntimeError("LightGBMDuration.predict before fit")
        return np.maximum(np.expm1(self.model.predict(self._features(items))), 1.0)

    def _features(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame({
            "num_gpus": frame["num_gpus"].to_numpy(dtype=float),
            "num_cpus": frame["num_cpus"].to_numpy(dtype=float),
        })  # fmt: skip
        for col in ("user", "tenant"):
            codes = frame[col].astype(str).map(self._vocab[col])
            out[col] = codes.to_numpy(dtype=float)  # unseen -> NaN: missing for LightGBM
        if self.names_used:
            ids = self.clusters.assign(frame["name"].astype(str)).astype(float)
            out["name_cluster"] = np.where(ids < 0, np.nan, ids)
        if self.origin is not None:
            when = self.origin + pd.to_timedelta(frame["submit_s"].to_numpy(dtype=float), unit="s")
            out["month"] = when.month
            out["weekday"] = when.day_of_week
            out["hour"] = when.hour
            out["minute"] = when.minute
        return out


class DurationPredictor:
    """Blend of :class:`RollingEstimate` and :class:`LightGBMDuration` (module doc)."""

    def __init__(self, settings: DurationSettings | None = None, *, origin: pd.Timestamp | None, seed: int) -> None:
        self.settings = s = settings or DurationSettings()
        self.rolling = RollingEstimate(name_similarity=s.name_similarity, decay=s.decay, prior_s=s.prior_s)
        self.lightgbm = LightGBMDuration(origin=origin, seed=seed, name_similarity=s.name_similarity,
                                         n_estimators=s.n_estimators, learning_rate=s.learning_rate,
                                         num_leaves=s.num_leaves)  # fmt: skip
        self.lightgbm_ready = False

    def fit(self, history: pd.DataFrame) -> None:
        self.rolling.fit(history)
        self.lightgbm_ready = len(history) >= self.settings.min_train_rows
        if self.lightgbm_ready:
            self.lightgbm.fit(history)

    def predict(self, items: pd.DataFrame) -> np.ndarray:
        rolling = self.rolling.predict(items)
        if not self.lightgbm_ready:
            return rolling
        w = self.settings.rolling_weight
        return w * rolling + (1.0 - w) * self.lightgbm.predict(items)

    def info(self) -> dict[str, Any]:
        """What the last fit used: name clustering, LightGBM, calendar features, blend weight."""
        return {
            "names_used": self.rolling.names_used,
            "lightgbm_used": self.lightgbm_ready,
            "calendar_used": self.lightgbm.calendar_used,
            "rolling_weight": self.settings.rolling_weight,
            "name_similarity": self.settings.name_similarity,
        }
