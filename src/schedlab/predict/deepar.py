"""A small DeepAR-style probabilistic forecaster (Salinas et al., "DeepAR", IJF 2020), the
strongest baseline of GFS's forecast comparison (§4.6.1, Table 7).

As in DeepAR: an LSTM reads, at each hour ``t``, the previous value ``z_{t-1}`` and the lags
``z_{t-24}``, ``z_{t-168}`` (all divided by the window's scale ``nu = 1 + mean`` of the
conditioning range), calendar covariates of hour ``t`` and an embedding of the organisation,
and outputs a Gaussian ``N(mu_t, sigma_t^2)`` (``sigma = softplus``). It is trained by the
Gaussian negative log-likelihood over windows of ``context + horizon`` hours with the true
previous values as inputs (teacher forcing): ``steps`` Adam steps on batches drawn at random
from all windows (a fixed number of steps, as DeepAR's fixed batches per epoch, so that short
and long series get the same training). A forecast conditions on the last ``context``
true hours, then draws ``samples`` paths ancestrally: each sampled value is the next hour's
``z_{t-1}``. The mean is the mean of the paths; the p-quantile is the empirical p-quantile of
the paths, clipped at 0 GPUs as OrgLinear's.

Smaller than the paper's DeepAR (settings not given there): 2 layers of 32 cells, the three
lags above, the calendar as (sin, cos) of hour and weekday plus the holiday flag.
Fits the ``fit(train)`` / ``predict(series, end, levels)`` interface of
:mod:`schedlab.predict.demand_baselines`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from schedlab.errors import ConfigError
from schedlab.extras import require
from schedlab.predict.demand_baselines import QuantileForecast, history_before
from schedlab.predict.demand_series import DemandSeries
from schedlab.predict.orglinear_net import deterministic_torch

if TYPE_CHECKING:
    import torch
    from torch import nn
else:
    torch = require("torch", "the DeepAR baseline")
    nn = torch.nn

LAGS = (1, 24, 168)


def calendar_covariates(cal: np.ndarray) -> np.ndarray:
    """(..., 3) hour/weekday/holiday codes -> (..., 5) sin/cos of hour and weekday, holiday."""
    hour, weekday = 2 * np.pi * cal[..., 0] / 24, 2 * np.pi * cal[..., 1] / 7
    return np.stack([np.sin(hour), np.cos(hour), np.sin(weekday), np.cos(weekday), cal[..., 2]], axis=-1)


class _DeepARNet(nn.Module):
    def __init__(self, orgs: int, hidden: int, layers: int, dim: int) -> None:
        super().__init__()
        self.org = nn.Embedding(orgs, dim)
        self.lstm = nn.LSTM(len(LAGS) + 5 + dim, hidden, layers, batch_first=True)
        self.mu = nn.Linear(hidden, 1)
        self.sigma = nn.Linear(hidden, 1)

    def forward(
        self, lags: torch.Tensor, cov: torch.Tensor, org: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``lags`` (B, T, 3), ``cov`` (B, T, 5), ``org`` (B,) -> mu, sigma (B, T), LSTM state."""
        emb = self.org(org).unsqueeze(1).expand(-1, lags.shape[1], -1)
        out, state = self.lstm(torch.cat([lags, cov, emb], dim=-1), state)
        return self.mu(out).squeeze(-1), nn.functional.softplus(self.sigma(out)).squeeze(-1) + 1e-4, state


@dataclass
class DeepAR:
    """DeepAR-style LSTM with a Gaussian output, autoregressive sampling (see the module doc)."""

    horizon: int = 24
    context: int = 48
    hidden: int = 32
    layers: int = 2
    dim: int = 8
    steps: int = 800
    batch_size: int = 128
    learning_rate: float = 3e-3
    stride: int = 1
    samples: int = 200
    seed: int = 0
    name: str = "DeepAR (LSTM)"
    train_seconds: float = 0.0
    net: _DeepARNet | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.horizon <= min(LAGS[1:]):
            raise ConfigError(f"DeepAR's horizon must be 1-{min(LAGS[1:])} hours: its lags must be known (got {self.horizon})")

    @property
    def history(self) -> int:
        """Hours needed before a forecast: the conditioning range and the longest lag."""
        return self.context + max(LAGS)

    def _windows(self, values: np.ndarray, org_idx: np.ndarray, start: np.ndarray,
                 steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """Scaled lag inputs (B, steps, 3), targets (B, steps) and scales (B,) of windows whose
        conditioning range starts at ``start``; targets past the series end are NaN."""
        t = start[:, None] + np.arange(steps)
        nu = 1.0 + values[org_idx[:, None], start[:, None] + np.arange(self.context)].mean(axis=1)
        lags = np.stack([values[org_idx[:, None], t - lag] for lag in LAGS], axis=-1) / nu[:, None, None]
        inside = t < values.shape[1]
        target = np.where(inside, values[org_idx[:, None], np.minimum(t, values.shape[1] - 1)], np.nan) / nu[:, None]
        return lags, target, nu

    def fit(self, train: DemandSeries) -> None:
        values = train.values
        steps = self.context + self.horizon
        last = values.shape[1] - steps
        if last < max(LAGS):
            raise ConfigError(f"DeepAR needs {max(LAGS) + steps} training hours; the series has {values.shape[1]}")
        starts = np.arange(max(LAGS) + (last - max(LAGS)) % self.stride, last + 1, self.stride)
        org_idx, start = (a.ravel() for a in np.meshgrid(np.arange(values.shape[0]), starts, indexing="ij"))
        lags, target, _ = self._windows(values, org_idx, start, steps)
        cal = train.calendar(train.demand.index).to_numpy()
        cov = calendar_covariates(cal[start[:, None] + np.arange(steps)])
        t0 = time.perf_counter()
        with deterministic_torch(self.seed):
            self.net = _DeepARNet(values.shape[0], self.hidden, self.layers, self.dim)
            tensors = [torch.tensor(a, dtype=torch.float32) for a in (lags, cov, target)]
            orgs = torch.tensor(org_idx)
            opt = torch.optim.Adam(self.net.parameters(), lr=self.learning_rate)
            for _ in range(self.steps):
                b = torch.randint(len(orgs), (self.batch_size,))
                mu, sigma, _ = self.net(tensors[0][b], tensors[1][b], orgs[b])
                y = tensors[2][b]
                loss = (0.5 * ((y - mu) / sigma) ** 2 + torch.log(sigma)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.train_seconds = time.perf_counter() - t0

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        if self.net is None:
            raise ConfigError("DeepAR is not trained")
        hist = history_before(series, end, self.history)
        n, s = hist.shape[0], self.samples
        org_idx = np.arange(n)
        lags, _, nu = self._windows(hist, org_idx, np.full(n, end - self.context), self.context)
        cal = series.calendar(series.hours_after(end - self.context, self.context + self.horizon)).to_numpy()
        cov = torch.tensor(calendar_covariates(cal), dtype=torch.float32)
        paths = np.empty((n, s, self.horizon))
        with deterministic_torch(self.seed), torch.no_grad():
            orgs = torch.tensor(org_idx).repeat_interleave(s)
            cond = torch.tensor(lags, dtype=torch.float32).repeat_interleave(s, dim=0)
            _, _, state = self.net(cond, cov[: self.context].expand(n * s, -1, -1), orgs)
            prev = torch.tensor(hist[:, end - 1] / nu, dtype=torch.float32).repeat_interleave(s)
            scaled = torch.tensor(hist / nu[:, None], dtype=torch.float32).repeat_interleave(s, dim=0)
            for k in range(self.horizon):
                lag_in = torch.stack([prev, *(scaled[:, end + k - lag] for lag in LAGS[1:])], dim=-1)
                step_cov = cov[self.context + k].expand(n * s, 1, -1)
                mu, sigma, state = self.net(lag_in.unsqueeze(1), step_cov, orgs, state)
                prev = (mu + sigma * torch.randn_like(mu)).squeeze(1)
                paths[:, :, k] = prev.double().numpy().reshape(n, s)
        paths *= nu[:, None, None]
        quantiles = {p: np.maximum(np.quantile(paths, p, axis=1), 0.0) for p in levels}
        return QuantileForecast(paths.mean(axis=1), quantiles)
