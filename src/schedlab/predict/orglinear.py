"""OrgLinear, the GPU Demand Estimator (GDE) of GFS (Duan et al., ASPLOS '26, arXiv 2509.11134, §3.2).

For every organisation ``o`` the GDE forecasts a Gaussian ``N(mu, sigma^2)`` of the GPUs its
HP tasks will ask for in each of the next ``H = horizon`` hours from its last ``L = lookback``
hours ``chi``; the spot-quota module (§3.3, eq. 9) sums a high quantile of these forecasts,
which :meth:`OrgForecast.upper_bound` provides. The equations, as implemented in
:class:`schedlab.predict.orglinear_net.OrgLinearNet`:

* eq. 1-2: ``chi_t = K_MA(chi)``, a moving average (odd ``kernel``) over the look-back padded
  by reflection on both ends, so ``chi_t`` keeps length L; ``chi_c = chi - chi_t``
  (:class:`SeriesDecomposition`).
* eq. 3: ``c_t = Emb(hour) ⊕ Emb(weekday) ⊕ Emb(holiday)`` (concatenation, 3 x ``dim``) of the
  timestamp of the forecast, i.e. its first future hour (the hour after the look-back). The
  paper names one timestamp ``t``; the heads map ``c_t`` to all ``H`` hours, so an
  origin-hour embedding can shape the whole horizon.
* eq. 4: ``c_o`` = single-head self-attention over the embeddings of the organisation's ``j``
  business attributes, mean-pooled (:class:`.AttributeAttention`). The paper's attributes
  (cluster, GPU model) are not in a demand series; :func:`.org_attributes` supplies the
  organisation's id, size bucket and variability bucket from its training demand.
* eq. 5-6: ``y_c = W_c^T [chi_c ⊕ c_o ⊕ c_t] + b_c``, ``y_t = W_t^T [chi_t ⊕ c_o ⊕ c_t] + b_t``,
  ``mu = y_c + y_t``.
* eq. 7: ``h = W_v^T [chi ⊕ c_o ⊕ c_t] + b_v``, ``sigma = softplus(h)``, the standard deviation
  (plus a floor of 0.01, see below).
* eq. 8: printed as ``-sum log phi((y - mu) / sigma)``, which lacks the ``-log sigma`` of the
  Gaussian density and so is minimised by ``sigma -> infinity`` (shown by a test). Training
  uses the full Gaussian negative log-likelihood ``(y - mu)^2 / (2 sigma^2) + log sigma``
  (:func:`.gaussian_nll`), averaged instead of summed; ``OrgLinearConfig(loss="eq8")`` trains
  on the printed form.

Not from the paper: each window is divided by the organisation's mean training demand (at
least one GPU) and has its own mean subtracted before the network and added back after it
(level normalisation, so one set of weights serves small and large organisations); one model
is shared by all organisations; Adam on windows taken every ``stride`` hours, for ``epochs``
or at least ``min_steps`` steps. For a stable NLL (with the paper's parametrisation the
training loss reached 1e5-1e6 on the bursty synthetic organisations, whose idle all-zero
windows push sigma to 0): sigma has a floor of 0.01 (1 % of the organisation's mean demand),
``W_v`` starts at zero (sigma starts equal everywhere) and each step's gradient norm is
clipped at 1.
Training is deterministic: a forked torch RNG seeded with ``seed``, deterministic algorithms
and a fixed thread count, restored afterwards. The network is in
:mod:`schedlab.predict.orglinear_net`, imported on use: torch comes with the 'forecast' extra.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.extras import require
from schedlab.predict.demand_series import DemandSeries, org_attributes

if TYPE_CHECKING:
    import torch

    from schedlab.predict.orglinear_net import OrgLinearNet

ATTRIBUTES = ("org_index", "size_bucket", "variability_bucket")


class SeriesDecomposition:
    """Eq. 1-2: trend = moving average of the padded sequence, cycle = input - trend.

    ``mode`` is "reflect" for OrgLinear; "replicate" gives DLinear's edge padding. The output
    keeps the input length; ``x`` is (batch, length) and longer than ``kernel // 2``. It has no
    weights, so it is a plain callable, not a torch module: this module imports without torch.
    """

    def __init__(self, kernel: int, mode: str = "reflect") -> None:
        if kernel < 1 or kernel % 2 == 0:
            raise ConfigError(f"the moving-average kernel must be a positive odd number (got {kernel})")
        self.kernel = kernel
        self.mode = mode

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        functional = require("torch", "OrgLinear").nn.functional
        pad = self.kernel // 2
        padded = functional.pad(x.unsqueeze(1), (pad, pad), mode=self.mode) if pad else x.unsqueeze(1)
        trend = functional.avg_pool1d(padded, self.kernel, stride=1).squeeze(1)
        return trend, x - trend


@dataclass(frozen=True)
class OrgLinearConfig:
    """Shape and training of OrgLinear (look-back and horizon in hours)."""

    lookback: int = 168
    horizon: int = 24
    kernel: int = 25
    dim: int = 16
    epochs: int = 20
    batch_size: int = 1024
    learning_rate: float = 1e-2
    stride: int = 6
    threads: int = 1
    min_steps: int = 0  # raise epochs until training takes at least this many Adam steps
    loss: str = "nll"  # "nll": eq. 8 repaired (full Gaussian NLL); "eq8": as printed (sigma diverges)

    def __post_init__(self) -> None:
        if self.lookback < 2 or self.horizon < 1:
            raise ConfigError("lookback must be at least 2 hours and horizon at least 1")
        if self.kernel // 2 >= self.lookback:
            raise ConfigError(f"the moving-average kernel ({self.kernel}) must be shorter than twice the look-back")
        if self.epochs < 1 or self.batch_size < 1 or self.stride < 1 or self.threads < 1 or self.min_steps < 0:
            raise ConfigError("epochs, batch_size, stride and threads must be positive and min_steps not negative")
        if self.loss not in ("nll", "eq8"):
            raise ConfigError(f"OrgLinear loss must be 'nll' or 'eq8' (got {self.loss!r})")


@dataclass(frozen=True)
class OrgForecast:
    """Gaussian forecasts per organisation: ``mean`` and ``var`` are (organisations x hours)
    arrays in GPUs and GPUs^2 for the timestamps ``index``."""

    orgs: list[str]
    index: pd.DatetimeIndex
    mean: np.ndarray
    var: np.ndarray

    def upper_bound(self, p: float) -> pd.DataFrame:
        """The p-quantile of each Gaussian, ``mean + z_p * sigma``, clipped at 0 GPUs.

        Returns a DataFrame indexed by the forecast hours with one column per organisation;
        GFS's spot-quota module sums it across the columns (``.sum(axis=1)``, eq. 9).
        ``0 < p < 1``; it never decreases as ``p`` grows.
        """
        if not 0.0 < p < 1.0:
            raise ConfigError(f"the quantile level p must lie strictly between 0 and 1 (got {p})")
        q = self.mean + NormalDist().inv_cdf(p) * np.sqrt(self.var)
        return pd.DataFrame(np.maximum(q, 0.0).T, index=self.index, columns=self.orgs)

    def mean_frame(self) -> pd.DataFrame:
        """The means as a DataFrame shaped like :meth:`upper_bound`."""
        return pd.DataFrame(self.mean.T, index=self.index, columns=self.orgs)


def window_starts(length: int, lookback: int, horizon: int, stride: int) -> np.ndarray:
    """Start positions of the (look-back + horizon) windows that fit in ``length`` hours."""
    last = length - lookback - horizon
    if last < 0:
        raise ConfigError(f"the series has {length} hours; a window needs {lookback + horizon}")
    return np.arange(last % stride, last + 1, stride)


@dataclass
class OrgLinear:
    """Train with :meth:`fit` on a :class:`DemandSeries`, forecast with :meth:`forecast`."""

    config: OrgLinearConfig = field(default_factory=OrgLinearConfig)
    seed: int = 0
    net: OrgLinearNet | None = None
    attributes: pd.DataFrame | None = None
    scale: np.ndarray | None = None
    losses: list[float] = field(default_factory=list)
    train_seconds: float = 0.0

    def fit(self, series: DemandSeries) -> "OrgLinear":
        """Train on every window of ``series`` (records the mean loss of each epoch in ``losses``)."""
        from schedlab.predict.orglinear_net import fit_net

        c = self.config
        values = series.values
        starts = window_starts(values.shape[1], c.lookback, c.horizon, c.stride)
        self.attributes = org_attributes(values, series.orgs)
        self.scale = np.maximum(self.attributes["mean_gpus"].to_numpy(), 1.0)
        cal = series.calendar(series.demand.index).to_numpy()
        org_idx, pos = np.meshgrid(np.arange(values.shape[0]), starts, indexing="ij")
        org_idx, pos = org_idx.ravel(), pos.ravel()
        x, y, level = self._inputs(values, org_idx, pos, self.scale)
        target = (y - level) / self.scale[org_idx, None]
        calendar = cal[pos + c.lookback]  # eq. 3: the timestamp of the first forecast hour
        attrs = self.attributes.loc[:, list(ATTRIBUTES)].to_numpy()[org_idx]
        levels = tuple(int(self.attributes[a].max()) + 1 for a in ATTRIBUTES)
        t0 = time.perf_counter()
        self.net, self.losses = fit_net(x, calendar, attrs, target, levels, c, self.seed)
        self.train_seconds = time.perf_counter() - t0
        return self

    def _inputs(self, values: np.ndarray, org_idx: np.ndarray, pos: np.ndarray,
                scale: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
        """Normalised histories (by ``scale``), raw targets (or an empty array past the end) and window levels."""
        c = self.config
        hist = values[org_idx[:, None], pos[:, None] + np.arange(c.lookback)]
        level = hist.mean(axis=1, keepdims=True)
        x = (hist - level) / scale[org_idx, None]
        fut = pos[:, None] + c.lookback + np.arange(c.horizon)
        y = values[org_idx[:, None], fut] if fut.max() < values.shape[1] else np.empty((len(pos), 0))
        return x, y, level

    def forecast(self, series: DemandSeries, end: int | None = None) -> OrgForecast:
        """Forecast the ``horizon`` hours after position ``end`` (default: the end of
        ``series``) from the ``lookback`` hours before it, for the organisations trained on."""
        from schedlab.predict.orglinear_net import run_net

        if self.net is None or self.attributes is None or self.scale is None:
            raise ConfigError("OrgLinear is not trained")
        c = self.config
        end = len(series) if end is None else end
        if not c.lookback <= end <= len(series):
            raise ConfigError(f"a forecast at hour {end} needs {c.lookback} hours of history within the series")
        orgs = list(self.attributes.index)
        missing = sorted(set(orgs) - set(series.orgs))
        if missing:
            raise ConfigError(f"the series lacks organisations the model was trained on: {missing[:5]}")
        values = series.demand.loc[:, orgs].to_numpy(dtype=float).T[:, :end]
        org_idx = np.arange(len(orgs))
        x, _, level = self._inputs(values, org_idx, np.full(len(orgs), end - c.lookback), self.scale)
        index = series.hours_after(end, c.horizon)
        cal = np.repeat(series.calendar(index[:1]).to_numpy(), len(orgs), axis=0)
        attrs = self.attributes.loc[:, list(ATTRIBUTES)].to_numpy()
        mean, sigma = run_net(self.net, x, cal, attrs, self.seed, c.threads)
        s = self.scale[:, None]
        return OrgForecast(orgs, index, mean * s + level, (sigma * s) ** 2)
