"""A small CART regression tree (numpy only): the IR predictor of Castor §6.2 without XGBoost.

Each split minimises the summed squared error of the two children over all thresholds
between distinct sorted values of every feature; a node becomes a leaf (the mean of its
targets) at ``max_depth``, below ``2 * min_leaf`` samples, or when no split lowers the error.
Fitting costs O(depth x features x n log n).
"""

from __future__ import annotations

import numpy as np

from schedlab.errors import ConfigError


class RegressionTree:
    def __init__(self, *, max_depth: int = 6, min_leaf: int = 5) -> None:
        if max_depth < 0 or min_leaf < 1:
            raise ConfigError("RegressionTree: max_depth >= 0 and min_leaf >= 1")
        self.max_depth = max_depth
        self.min_leaf = min_leaf
        # flat arrays: feature (-1 = leaf), threshold, left, right, value
        self.nodes: list[tuple[int, float, int, int, float]] = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> "RegressionTree":
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.ndim != 2 or len(x) != len(y) or len(y) == 0:
            raise ConfigError("RegressionTree.fit: x must be (n, features) and y (n,), n > 0")
        self.nodes = []
        self._grow(x, y, 0)
        return self

    def _grow(self, x: np.ndarray, y: np.ndarray, depth: int) -> int:
        idx = len(self.nodes)
        self.nodes.append((-1, 0.0, -1, -1, float(y.mean())))
        split = self._best_split(x, y) if depth < self.max_depth and len(y) >= 2 * self.min_leaf else None
        if split is None:
            return idx
        f, thr = split
        left = x[:, f] <= thr
        lo = self._grow(x[left], y[left], depth + 1)
        hi = self._grow(x[~left], y[~left], depth + 1)
        self.nodes[idx] = (f, thr, lo, hi, float(y.mean()))
        return idx

    def _best_split(self, x: np.ndarray, y: np.ndarray) -> tuple[int, float] | None:
        n = len(y)
        best = float(((y - y.mean()) ** 2).sum()) - 1e-12
        found = None
        m = self.min_leaf
        for f in range(x.shape[1]):
            order = np.argsort(x[:, f], kind="stable")
            xs, ys = x[order, f], y[order]
            csum, csq = np.cumsum(ys), np.cumsum(ys**2)
            k = np.arange(m, n - m + 1)  # left child holds the first k samples
            k = k[xs[k - 1] < xs[np.minimum(k, n - 1)]]  # only between distinct values
            if len(k) == 0:
                continue
            sl, ql = csum[k - 1], csq[k - 1]
            sr, qr = csum[-1] - sl, csq[-1] - ql
            sse = ql - sl**2 / k + qr - sr**2 / (n - k)
            j = int(np.argmin(sse))
            if sse[j] < best:
                best = float(sse[j])
                found = (f, float((xs[k[j] - 1] + xs[k[j]]) / 2))
        return found

    def predict(self, x: np.ndarray) -> np.ndarray:
        if not self.nodes:
            raise ConfigError("RegressionTree.predict before fit")
        x = np.asarray(x, dtype=float)
        out = np.empty(len(x))
        for i, row in enumerate(x):
            node = self.nodes[0]
            while node[0] >= 0:
                node = self.nodes[node[2] if row[node[0]] <= node[1] else node[3]]
            out[i] = node[4]
        return out
