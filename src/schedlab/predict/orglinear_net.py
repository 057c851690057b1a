"""The torch side of OrgLinear (:mod:`schedlab.predict.orglinear`): the network (eq. 1-7), its
training on the Gaussian NLL (eq. 8) and deterministic torch settings. Imported on use: torch
comes with the 'forecast' extra."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from schedlab.extras import require
from schedlab.predict.orglinear import OrgLinearConfig, SeriesDecomposition

torch = require("torch", "OrgLinear")
nn = torch.nn


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
    """Mean and variance (float64, normalised like ``x``) of the network's forecast."""
    with deterministic_torch(seed, threads), torch.no_grad():
        mean, var = net(torch.tensor(x, dtype=torch.float32), torch.tensor(calendar), torch.tensor(attrs))
    return mean.double().numpy(), var.double().numpy()


def _train(net: OrgLinearNet, tensors: tuple[torch.Tensor, ...], c: OrgLinearConfig) -> list[float]:
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
