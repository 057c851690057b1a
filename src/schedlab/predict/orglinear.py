"""OrgLinear, the GPU Demand Estimator (GDE) of GFS (Duan et al., ASPLOS '26, arXiv 2509.11134, §3.2).

For every organisation ``o`` the GDE forecasts a Gaussian ``N(mu, sigma^2)`` of the GPUs its HP
tasks will ask for in each of the next ``horizon`` hours from its last ``lookback`` hours; the
spot-quota module (§3.3, eq. 9) sums a high quantile of these forecasts over organisations,
which :meth:`OrgForecast.upper_bound` provides.

What was read and what is assumed. Only a summary of §3.2 could be read here: OrgLinear splits
the look-back sequence ``x_o`` of an organisation into a trend and a cyclical part with a
moving average over a reflection-padded sequence, forecasts each part with a linear layer,
adds embeddings of the hour, the weekday and holidays and of the organisation's attributes
(combined by attention), and outputs a mean and a softplus variance trained by the Gaussian
negative log-likelihood. The exact form of eq. 1-8 could not be read, so this module writes
them as follows (the numbering is ours):

1. ``x_t = AvgPool_k(ReflectPad_{(k-1)/2}(x))`` (trend; ``k = kernel``, odd)
2. ``x_c = x - x_t`` (cycle), so ``x_t + x_c = x`` exactly
3. ``y_t = W_t x_t + b_t``, ``y_c = W_c x_c + b_c`` (two linear heads, ``lookback -> horizon``)
4. ``e_h = E_hour[hour_h] + E_wd[weekday_h] + E_hol[holiday_h]`` for each future hour ``h``
5. ``a_j = E_j[attr_j(o)]`` for the attributes org id, size bucket, variability bucket;
   ``alpha = softmax(A q / sqrt(d))`` with ``q = W_q x`` and ``A = [a_1 .. a_m]``; ``a = sum_j alpha_j a_j``
6. ``z_h = tanh(e_h + a)``
7. ``mu_h = y_t,h + y_c,h + w_mu . z_h``; ``sigma^2_h = softplus(V |x_c| + w_s . z_h + b_s)_h + eps``
8. loss = mean Gaussian NLL ``(log sigma^2 + (y - mu)^2 / sigma^2) / 2`` (``torch.nn.GaussianNLLLoss``)

Further choices of this module, not from the paper: each window is scaled by the
organisation's mean training demand (at least one GPU) and its own mean is subtracted before
the network and added back after it (level normalisation, so one set of weights serves small
and large organisations and a rising level does not bias the forecast); one model is shared
by all organisations; training uses Adam on windows taken every ``stride`` hours.
Training is deterministic: a forked torch RNG seeded with ``seed``, deterministic algorithms
and a fixed thread count, restored afterwards.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import pandas as pd
import torch
from torch import nn

from schedlab.errors import ConfigError
from schedlab.predict.demand_series import DemandSeries, org_attributes

ATTRIBUTES = ("org_index", "size_bucket", "variability_bucket")


@contextmanager
def deterministic_torch(seed: int, threads: int = 1) -> Iterator[None]:
    """Seed a forked torch RNG, force deterministic algorithms and ``threads`` threads; restore all on exit."""
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    was_threads = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was_deterministic)
            torch.set_num_threads(was_threads)


class SeriesDecomposition(nn.Module):
    """Trend = moving average of the padded sequence, cycle = input - trend (eq. 1-2).

    ``mode`` is "reflect" for OrgLinear; "replicate" gives DLinear's edge padding. The output
    keeps the input length; ``x`` is (batch, length) and longer than ``kernel // 2``.
    """

    def __init__(self, kernel: int, mode: str = "reflect") -> None:
        super().__init__()
        if kernel < 1 or kernel % 2 == 0:
            raise ConfigError(f"the moving-average kernel must be a positive odd number (got {kernel})")
        self.kernel = kernel
        self.mode = mode
        self.pool = nn.AvgPool1d(kernel, stride=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pad = self.kernel // 2
        padded = nn.functional.pad(x.unsqueeze(1), (pad, pad), mode=self.mode) if pad else x.unsqueeze(1)
        trend = self.pool(padded).squeeze(1)
        return trend, x - trend


class OrgLinearNet(nn.Module):
    """The OrgLinear network (eq. 1-7): returns the mean and variance per future hour."""

    def __init__(self, lookback: int, horizon: int, levels: tuple[int, ...], *, dim: int = 16, kernel: int = 25) -> None:
        super().__init__()
        self.decompose = SeriesDecomposition(kernel, "reflect")
        self.trend_head = nn.Linear(lookback, horizon)
        self.cycle_head = nn.Linear(lookback, horizon)
        self.hour = nn.Embedding(24, dim)
        self.weekday = nn.Embedding(7, dim)
        self.holiday = nn.Embedding(2, dim)
        self.attributes = nn.ModuleList(nn.Embedding(n, dim) for n in levels)
        self.query = nn.Linear(lookback, dim)
        self.mean_out = nn.Linear(dim, 1, bias=False)
        self.var_context = nn.Linear(lookback, horizon)
        self.var_out = nn.Linear(dim, 1)
        self.dim = dim

    def forward(
        self, x: torch.Tensor, calendar: torch.Tensor, attrs: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (B, L) normalised history, ``calendar`` (B, H, 3) hour/weekday/holiday codes,
        ``attrs`` (B, m) attribute codes -> mean, variance (B, H)."""
        trend, cycle = self.decompose(x)
        base = self.trend_head(trend) + self.cycle_head(cycle)
        time_emb = self.hour(calendar[..., 0]) + self.weekday(calendar[..., 1]) + self.holiday(calendar[..., 2])
        keys = torch.stack([emb(attrs[:, j]) for j, emb in enumerate(self.attributes)], dim=1)
        scores = torch.einsum("bmd,bd->bm", keys, self.query(x)) / math.sqrt(self.dim)
        org = torch.einsum("bm,bmd->bd", torch.softmax(scores, dim=1), keys)
        z = torch.tanh(time_emb + org.unsqueeze(1))
        mean = base + self.mean_out(z).squeeze(-1)
        var = nn.functional.softplus(self.var_context(cycle.abs()) + self.var_out(z).squeeze(-1)) + 1e-6
        return mean, var


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

    def __post_init__(self) -> None:
        if self.lookback < 2 or self.horizon < 1:
            raise ConfigError("lookback must be at least 2 hours and horizon at least 1")
        if self.kernel // 2 >= self.lookback:
            raise ConfigError(f"the moving-average kernel ({self.kernel}) must be shorter than twice the look-back")
        if self.epochs < 1 or self.batch_size < 1 or self.stride < 1 or self.threads < 1:
            raise ConfigError("epochs, batch_size, stride and threads must be positive")


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
        c = self.config
        values = series.values
        starts = window_starts(values.shape[1], c.lookback, c.horizon, c.stride)
        self.attributes = org_attributes(values, series.orgs)
        self.scale = np.maximum(self.attributes["mean_gpus"].to_numpy(), 1.0)
        cal = series.calendar(series.demand.index).to_numpy()
        org_idx, pos = np.meshgrid(np.arange(values.shape[0]), starts, indexing="ij")
        org_idx, pos = org_idx.ravel(), pos.ravel()
        x, y, level = self._inputs(values, org_idx, pos)
        target = (y - level) / self.scale[org_idx, None]
        future = pos[:, None] + c.lookback + np.arange(c.horizon)
        calendar = cal[future]
        attrs = self.attributes.loc[:, list(ATTRIBUTES)].to_numpy()[org_idx]
        levels = tuple(int(self.attributes[a].max()) + 1 for a in ATTRIBUTES)
        t0 = time.perf_counter()
        with deterministic_torch(self.seed, c.threads):
            self.net = OrgLinearNet(c.lookback, c.horizon, levels, dim=c.dim, kernel=c.kernel)
            tensors = (torch.tensor(x, dtype=torch.float32), torch.tensor(calendar), torch.tensor(attrs),
                       torch.tensor(target, dtype=torch.float32))  # fmt: skip
            self.losses = _train(self.net, tensors, c)
        self.train_seconds = time.perf_counter() - t0
        return self

    def _inputs(self, values: np.ndarray, org_idx: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, ...]:
        """Normalised histories, raw targets (or an empty array past the end) and window levels."""
        c = self.config
        hist = values[org_idx[:, None], pos[:, None] + np.arange(c.lookback)]
        level = hist.mean(axis=1, keepdims=True)
        x = (hist - level) / self.scale[org_idx, None]
        fut = pos[:, None] + c.lookback + np.arange(c.horizon)
        y = values[org_idx[:, None], fut] if fut.max() < values.shape[1] else np.empty((len(pos), 0))
        return x, y, level

    def forecast(self, series: DemandSeries, end: int | None = None) -> OrgForecast:
        """Forecast the ``horizon`` hours after position ``end`` (default: the end of
        ``series``) from the ``lookback`` hours before it, for the organisations trained on."""
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
        x, _, level = self._inputs(values, org_idx, np.full(len(orgs), end - c.lookback))
        index = series.hours_after(end, c.horizon)
        cal = np.broadcast_to(series.calendar(index).to_numpy(), (len(orgs), c.horizon, 3))
        attrs = self.attributes.loc[:, list(ATTRIBUTES)].to_numpy()
        with deterministic_torch(self.seed, c.threads), torch.no_grad():
            mean, var = self.net(torch.tensor(x, dtype=torch.float32), torch.tensor(np.ascontiguousarray(cal)),
                                 torch.tensor(attrs))  # fmt: skip
        s = self.scale[:, None]
        return OrgForecast(orgs, index, mean.double().numpy() * s + level, var.double().numpy() * s**2)


def _train(net: nn.Module, tensors: tuple[torch.Tensor, ...], c: OrgLinearConfig) -> list[float]:
    """Adam on the Gaussian NLL (eq. 8); returns the mean loss of each epoch."""
    x, cal, attrs, target = tensors
    loss_fn = nn.GaussianNLLLoss(eps=1e-6)
    opt = torch.optim.Adam(net.parameters(), lr=c.learning_rate)
    losses = []
    for _ in range(c.epochs):
        order = torch.randperm(len(x))
        total = 0.0
        for i in range(0, len(x), c.batch_size):
            b = order[i : i + c.batch_size]
            mean, var = net(x[b], cal[b], attrs[b])
            loss = loss_fn(mean, target[b], var)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(b)
        losses.append(total / len(x))
    return losses
