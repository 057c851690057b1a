"""The prediction report's rank correlation is SciPy's, computed without importing scipy.stats."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from schedlab.predict.framework import accuracy, average_ranks, spearman


@pytest.mark.parametrize("seed", range(5))
def test_ranks_and_correlation_match_scipy_on_tied_values(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(2, 200))
        x = rng.integers(0, int(rng.integers(1, 30)), n) * 0.37
        y = rng.integers(0, 6, n).astype(float) if rng.random() < 0.5 else rng.normal(size=n)
        assert np.array_equal(average_ranks(x), rankdata(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy warns on a constant input
            expected = spearmanr(x, y).statistic
        got = spearman(x, y)
        assert (math.isnan(got) and math.isnan(expected)) or got == expected


def test_a_constant_side_has_no_correlation() -> None:
    assert math.isnan(spearman(np.array([3.0, 3.0, 3.0]), np.array([1.0, 2.0, 3.0])))
    assert accuracy(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 2.0]), np.ones(3))["spearman_gpu_time"] == 0.5


def test_the_predictors_do_not_import_scipy_stats() -> None:
    probe = "import schedlab.predict.framework, sys; print('scipy.stats' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
