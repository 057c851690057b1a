"""The torch side of OrgLinear (:mod:`schedlab.predict.orglinear`): the network of GFS §3.2
eq. 1-7, the loss of eq. 8 (as written, and repaired) and deterministic torch settings.
Imported on use: torch comes with the 'forecast' extra.

Shapes: ``B`` windows, look-back ``L``, horizon ``H``, embedding size ``d``, ``j`` business
attributes. Every input is the normalised look-back of :meth:`.OrgLinear.fit`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from schedlab.extras import require
from schedlab.predict.orglinear import OrgLinearConfig, SeriesDecomposition

if TYPE_CHECKING:
    import torch
    from torch import nn
else:
    torch = require("torch", "OrgLinear")
    nn = torch.nn

# Not from the paper; both keep the NLL finite on idle (all-zero) windows, where it would
# otherwise push sigma to 0 and blow up on the next burst (measured: training loss 1e5-1e6).
SIGMA_FLOOR = 1e-2  # added to softplus(h): 1 % of the organisation's mean demand
CLIP = 1.0  # gradient-norm clip per Adam step


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


class AttributeAttention(nn.Module):
    """Eq. 4, ``c_o = Attention(Emb(v_o1), ..., Emb(v_oj))``: one head of scaled dot-product
    self-attention over the ``j`` attribute embeddings ``A`` (B, j, d),
    ``softmax(A W_q (A W_k)^T / sqrt(d)) A W_v``, mean-pooled over the ``j`` outputs to (B, d).

    The paper names the operator only; single-head self-attention with mean pooling is this
    module's reading (each attribute attends to the others, so pairs of attributes interact,
    the "cross-feature interactions" §3.2.2 motivates)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.query = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.dim = dim

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        scores = self.query(tokens) @ self.key(tokens).transpose(1, 2) / math.sqrt(self.dim)
        attended: torch.Tensor = torch.softmax(scores, dim=-1) @ self.value(tokens)
        return attended.mean(dim=1)


class OrgLinearNet(nn.Module):
    """OrgLinear, GFS §3.2 eq. 1-7. :meth:`forward` returns the mean and the standard deviation
    of the Gaussian forecast of each of the ``H`` future hours."""

    def __init__(self, lookback: int, horizon: int, levels: tuple[int, ...], *, dim: int = 16, kernel: int = 25) -> None:
        super().__init__()
        self.decompose = SeriesDecomposition(kernel, "reflect")
        self.hour = nn.Embedding(24, dim)
        self.weekday = nn.Embedding(7, dim)
        self.holiday = nn.Embedding(2, dim)
        self.attributes = nn.ModuleList(nn.Embedding(n, dim) for n in levels)
        self.attention = AttributeAttention(dim)
        width = lookback + dim + 3 * dim  # [chi (L) ⊕ c_o (d) ⊕ c_t (3d)]
        self.cycle_head = nn.Linear(width, horizon)  # W_c, b_c (eq. 5)
        self.trend_head = nn.Linear(width, horizon)  # W_t, b_t (eq. 5)
        self.var_head = nn.Linear(width, horizon)  # W_v, b_v (eq. 7)
        nn.init.zeros_(self.var_head.weight)  # sigma starts equal for every window (not from the paper)

    def temporal(self, calendar: torch.Tensor) -> torch.Tensor:
        """Eq. 3, ``c_t = Emb(hour) ⊕ Emb(weekday) ⊕ Emb(holiday)``: (B, 3) codes -> (B, 3d)."""
        return torch.cat([self.hour(calendar[:, 0]), self.weekday(calendar[:, 1]), self.holiday(calendar[:, 2])], dim=1)

    def organisation(self, attrs: torch.Tensor) -> torch.Tensor:
        """Eq. 4, ``c_o``: (B, j) attribute codes -> (B, d)."""
        tokens = torch.stack([emb(attrs[:, k]) for k, emb in enumerate(self.attributes)], dim=1)
        pooled: torch.Tensor = self.attention(tokens)
        return pooled

    def forward(self, x: torch.Tensor, calendar: torch.Tensor, attrs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (B, L) history, ``calendar`` (B, 3) hour/weekday/holiday codes of the forecast's
        timestamp, ``attrs`` (B, j) -> mean, standard deviation (B, H)."""
        trend, cycle = self.decompose(x)  # eq. 1-2
        context = torch.cat([self.organisation(attrs), self.temporal(calendar)], dim=1)  # c_o ⊕ c_t
        y_cycle = self.cycle_head(torch.cat([cycle, context], dim=1))  # eq. 5
        y_trend = self.trend_head(torch.cat([trend, context], dim=1))  # eq. 5
        h = self.var_head(torch.cat([x, context], dim=1))  # eq. 7
        return y_cycle + y_trend, nn.functional.softplus(h) + SIGMA_FLOOR  # eq. 6, eq. 7


def eq8_loss(mean: torch.Tensor, sigma: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Eq. 8 as printed, ``-log phi((y - mu) / sigma)``, averaged. It lacks the ``log sigma``
    term of a Gaussian density, so it falls monotonically as sigma grows: minimising it drives
    sigma to infinity. Kept to show that (``OrgLinearConfig(loss="eq8")``), not for use."""
    z = (target - mean) / sigma
    return (0.5 * z**2 + 0.5 * math.log(2 * math.pi)).mean()


def gaussian_nll(mean: torch.Tensor, sigma: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Eq. 8 repaired: the full Gaussian negative log-likelihood
    ``-log(phi((y - mu) / sigma) / sigma) = (y - mu)^2 / (2 sigma^2) + log sigma + log(2 pi) / 2``,
    averaged; the smallest change that makes eq. 8 a maximum-likelihood objective (the
    ``1 / sigma`` of the density of ``y``). For fixed ``mu`` it is smallest at ``sigma = |y - mu|``."""
    z = (target - mean) / sigma
    return (0.5 * z**2 + torch.log(sigma) + 0.5 * math.log(2 * math.pi)).mean()


LOSSES = {"nll": gaussian_nll, "eq8": eq8_loss}


def fit_net(
    x: np.ndarray, calendar: np.ndarray, attrs: np.ndarray, target: np.ndarray, levels: tuple[int, ...],
    c: OrgLinearConfig, seed: int,
) -> tuple[OrgLinearNet, list[float]]:
    """A network trained on windows (see :meth:`.OrgLinear.fit`) and the mean loss of each epoch."""
    with deterministic_torch(seed, c.threads):
        net = OrgLinearNet(c.lookback, c.horizon, levels, dim=c.dim, kernel=c.kernel)
        tensors = (torch.tensor(x, dtype=torch.float32), torch.tensor(calendar), torch.tensor(attrs),
                   torch.tensor(target, dtype=torch.float32))  # fmt: skip
        return net, _train(net, tensors, c)


def run_net(
    net: OrgLinearNet, x: np.ndarray, calendar: np.ndarray, attrs: np.ndarray, seed: int, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (float64, normalised like ``x``) of the network's forecast."""
    with deterministic_torch(seed, threads), torch.no_grad():
        mean, sigma = net(torch.tensor(x, dtype=torch.float32), torch.tensor(calendar), torch.tensor(attrs))
    return mean.double().numpy(), sigma.double().numpy()


def epochs_for(windows: int, batch_size: int, epochs: int, min_steps: int) -> int:
    """``epochs``, raised so that training takes at least ``min_steps`` optimiser steps."""
    return max(epochs, -(-min_steps // -(-windows // batch_size)))


def _train(net: OrgLinearNet, tensors: tuple[torch.Tensor, ...], c: OrgLinearConfig) -> list[float]:
    """Adam on the loss ``c.loss`` (eq. 8 repaired by default); returns the mean loss of each epoch."""
    x, cal, attrs, target = tensors
    loss_fn = LOSSES[c.loss]
    opt = torch.optim.Adam(net.parameters(), lr=c.learning_rate)
    losses = []
    for _ in range(epochs_for(len(x), c.batch_size, c.epochs, c.min_steps)):
        order = torch.randperm(len(x))
        total = 0.0
        for i in range(0, len(x), c.batch_size):
            b = order[i : i + c.batch_size]
            mean, sigma = net(x[b], cal[b], attrs[b])
            loss = loss_fn(mean, sigma, target[b])
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is not annotated
            nn.utils.clip_grad_norm_(net.parameters(), CLIP)
            opt.step()
            total += float(loss.detach()) * len(b)
        losses.append(total / len(x))
    return losses
