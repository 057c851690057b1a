"""OrgLinear's equations (GFS §3.2, eq. 1-8) on small hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from schedlab.predict.demand_series import DemandSeries
from schedlab.predict.orglinear import OrgLinear, OrgLinearConfig, SeriesDecomposition
from schedlab.predict.orglinear_net import SIGMA_FLOOR, AttributeAttention, OrgLinearNet, eq8_loss, epochs_for, gaussian_nll


def _net(lookback: int = 3, horizon: int = 2, dim: int = 2, kernel: int = 3) -> OrgLinearNet:
    torch.manual_seed(0)
    return OrgLinearNet(lookback, horizon, (3, 2), dim=dim, kernel=kernel)


def test_eq1_2_moving_average_with_reflection_padding() -> None:
    # kernel 5 on [1, 2, 4, 8]: reflect-padded [4, 2, 1, 2, 4, 8, 4, 2]; 5-point means
    trend, cycle = SeriesDecomposition(5)(torch.tensor([[1.0, 2.0, 4.0, 8.0]]))
    expect = torch.tensor([[13 / 5, 17 / 5, 19 / 5, 20 / 5]])
    torch.testing.assert_close(trend, expect)
    torch.testing.assert_close(cycle, torch.tensor([[1.0, 2.0, 4.0, 8.0]]) - expect)
    # edge replication (DLinear) gives another trend: [1, 1, 1, 2, 4, 8, 8, 8] -> first mean 9/5
    assert SeriesDecomposition(5, "replicate")(torch.tensor([[1.0, 2.0, 4.0, 8.0]]))[0][0, 0] == pytest.approx(9 / 5)


def test_eq3_time_feature_is_the_concatenation_of_three_embeddings() -> None:
    net = _net(dim=2)
    with torch.no_grad():
        net.hour.weight.copy_(torch.arange(48.0).reshape(24, 2))
        net.weekday.weight.copy_(100 + torch.arange(14.0).reshape(7, 2))
        net.holiday.weight.copy_(torch.tensor([[-1.0, -2.0], [-3.0, -4.0]]))
    c_t = net.temporal(torch.tensor([[5, 2, 1], [0, 6, 0]]))
    assert c_t.shape == (2, 6)  # 3 x dim, not dim (a sum would be 2 wide)
    torch.testing.assert_close(c_t, torch.tensor([[10.0, 11.0, 104.0, 105.0, -3.0, -4.0], [0.0, 1.0, 112.0, 113.0, -1.0, -2.0]]))


def test_eq4_self_attention_over_the_attribute_embeddings() -> None:
    att = AttributeAttention(2)
    with torch.no_grad():
        for lin in (att.query, att.key, att.value):
            lin.weight.copy_(torch.eye(2))
    a1, a2 = np.array([2.0, 0.0]), np.array([0.0, 1.0])
    # scores A A^T / sqrt(2) = [[4, 0], [0, 1]] / sqrt(2); softmax rows; weighted values; mean over the two
    w1 = np.exp(4 / math.sqrt(2)) / (np.exp(4 / math.sqrt(2)) + 1)
    w2 = 1 / (1 + np.exp(1 / math.sqrt(2)))
    expect = ((w1 * a1 + (1 - w1) * a2) + (w2 * a1 + (1 - w2) * a2)) / 2
    with torch.no_grad():
        out = att(torch.tensor(np.array([[a1, a2]]), dtype=torch.float32))
    np.testing.assert_allclose(out.numpy()[0], expect, rtol=1e-6)
    # through the network: c_o depends on every attribute
    net = _net()
    c_o = net.organisation(torch.tensor([[0, 0], [0, 1], [2, 0]]))
    assert c_o.shape == (3, 2)
    assert not torch.allclose(c_o[0], c_o[1]) and not torch.allclose(c_o[0], c_o[2])


def test_eq5_6_two_heads_on_trend_and_cycle_with_both_contexts() -> None:
    net = _net(lookback=3, horizon=2, dim=2)
    assert net.trend_head.in_features == net.cycle_head.in_features == net.var_head.in_features == 3 + 2 + 6
    x = torch.tensor([[1.0, 2.0, 4.0]])
    cal, attrs = torch.tensor([[5, 2, 1]]), torch.tensor([[1, 0]])
    with torch.no_grad():
        context = torch.cat([net.organisation(attrs), net.temporal(cal)], dim=1)
        for head in (net.trend_head, net.cycle_head):
            head.weight.zero_()
            head.bias.zero_()
        net.trend_head.weight[:, 2] = 1.0  # y_t = last trend value = (2 + 4 + 2) / 3
        net.cycle_head.weight[:, 2] = 1.0  # y_c = last cycle value = 4 - 8 / 3
        net.cycle_head.weight[0, 3] = 1.0  # c_o[0] enters the cycle head
        net.trend_head.weight[1, 10] = 1.0  # c_t[5] (the holiday embedding) enters the trend head
        net.trend_head.bias[:] = 0.5
    with torch.no_grad():
        mean, _ = net(x, cal, attrs)
    expect = torch.tensor([[4.0 + context[0, 0] + 0.5, 4.0 + context[0, 7] + 0.5]])
    torch.testing.assert_close(mean, expect)


def test_eq7_sigma_is_softplus_of_a_linear_map_of_the_whole_history() -> None:
    net = _net(lookback=3, horizon=2, dim=2)
    x = torch.tensor([[1.0, 2.0, 4.0]])
    cal, attrs = torch.tensor([[0, 0, 0]]), torch.tensor([[0, 0]])
    with torch.no_grad():
        net.var_head.weight.zero_()
        net.var_head.bias.copy_(torch.tensor([0.0, 1.0]))
    with torch.no_grad():
        _, sigma = net(x, cal, attrs)
    torch.testing.assert_close(sigma, torch.tensor([[math.log(2.0), math.log(1 + math.e)]]) + SIGMA_FLOOR)
    with torch.no_grad():
        net.var_head.weight[0, 0] = 1.0  # chi itself (first hour = 1), not its cycle
    with torch.no_grad():
        _, sigma = net(x, cal, attrs)
    assert sigma[0, 0].item() == pytest.approx(math.log(1 + math.e) + SIGMA_FLOOR)


def test_eq8_as_printed_falls_with_sigma_and_the_nll_repairs_it() -> None:
    mu, y = torch.zeros(1), torch.full((1,), 2.0)
    sigmas = [0.5, 1.0, 2.0, 4.0, 100.0]
    printed = [eq8_loss(mu, torch.tensor([s]), y).item() for s in sigmas]
    assert printed[1] == pytest.approx(2.0 + 0.5 * math.log(2 * math.pi))  # z^2 / 2 + log(2 pi) / 2
    assert all(b < a for a, b in zip(printed, printed[1:]))  # minimised by sigma -> infinity
    nll = {s: gaussian_nll(mu, torch.tensor([s]), y).item() - 0.5 * math.log(2 * math.pi) for s in (1.0, 2.0, 4.0)}
    assert nll[1.0] == pytest.approx(2.0)
    assert nll[2.0] == pytest.approx(0.5 + math.log(2.0))
    assert nll[4.0] == pytest.approx(0.125 + math.log(4.0))
    assert nll[2.0] < nll[1.0] and nll[2.0] < nll[4.0]  # smallest at sigma = |y - mu|


def _series(days: int = 10) -> DemandSeries:
    rng = np.random.default_rng(0)
    hours = np.arange(24 * days)
    cols = {f"o{k}": 20 + 8 * np.sin(2 * np.pi * (hours - 4 * k) / 24) + rng.normal(0, 1.0, hours.size) for k in range(3)}
    return DemandSeries(pd.DataFrame(cols, index=pd.date_range("2025-06-02", periods=hours.size, freq="h")), frozenset(), "t")


def test_training_on_eq8_as_printed_drives_sigma_up() -> None:
    series = _series()
    base = dict(lookback=48, horizon=12, kernel=5, dim=4, epochs=12, stride=4, batch_size=64, learning_rate=1e-2)
    printed = OrgLinear(OrgLinearConfig(**base, loss="eq8"), seed=0).fit(series)
    repaired = OrgLinear(OrgLinearConfig(**base, loss="nll"), seed=0).fit(series)
    assert all(b < a for a, b in zip(printed.losses, printed.losses[1:]))
    s_printed = np.sqrt(printed.forecast(series).var).mean()
    s_repaired = np.sqrt(repaired.forecast(series).var).mean()
    untrained = OrgLinear(OrgLinearConfig(**{**base, "epochs": 1}, loss="eq8"), seed=0).fit(series)
    assert s_printed > np.sqrt(untrained.forecast(series).var).mean()  # sigma keeps growing with training
    assert s_printed > 3 * s_repaired


def test_min_steps_raise_the_epochs() -> None:
    assert epochs_for(windows=100, batch_size=1024, epochs=20, min_steps=0) == 20
    assert epochs_for(windows=100, batch_size=1024, epochs=20, min_steps=500) == 500  # one batch per epoch
    assert epochs_for(windows=3000, batch_size=1024, epochs=20, min_steps=500) == 167  # three batches per epoch


def test_forecast_calendar_is_the_first_forecast_hour_and_training_is_deterministic() -> None:
    series = _series(days=6)
    config = OrgLinearConfig(lookback=24, horizon=6, kernel=5, dim=4, epochs=2, stride=6)
    a = OrgLinear(config, seed=4).fit(series)
    b = OrgLinear(config, seed=4).fit(series)
    c = OrgLinear(config, seed=5).fit(series)
    fa, fb, fc = (m.forecast(series, 100) for m in (a, b, c))
    np.testing.assert_array_equal(fa.mean, fb.mean)
    np.testing.assert_array_equal(fa.var, fb.var)
    assert not np.array_equal(fa.mean, fc.mean)
    assert fa.index[0] == series.demand.index[100]
    # another first hour (same history values) gives another forecast: c_t enters the heads
    shifted = DemandSeries(series.demand.set_axis(series.demand.index + pd.Timedelta(hours=3)), frozenset(), "t")
    assert not np.allclose(a.forecast(shifted, 100).mean, fa.mean)
