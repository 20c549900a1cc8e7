"""An isolation forest for the small matrices a job gives: all trees grown together, level by level, in numpy.

The rows are nodes or windows (tens to a few hundred) and the columns a few informative templates. For such
inputs scikit-learn's ``IsolationForest`` spends about 2 ms per tree on parameter validation, cloning and
seeding, whatever the data: two thirds of a small job's analysis. Here every tree of the forest is grown in one
pass per depth level (a node's split is drawn from the per-node minimum and maximum of each column, computed with
``reduceat`` over all nodes of that level at once), and scored by walking all trees together, so a fit costs a
few milliseconds.

The algorithm is Liu et al.'s, as scikit-learn implements it: each tree sees ``max_samples`` rows drawn without
replacement, is grown to depth ``ceil(log2(max_samples))``, splits a node on a column drawn uniformly among the
columns not constant in that node at a threshold drawn uniformly between their minimum and maximum, and a row's
path length is its leaf's depth plus the average path length of the rows left in that leaf. ``score_samples``
returns the opposite of the anomaly score, as scikit-learn does, so lower is more abnormal. Random draws differ
from scikit-learn's; tests/test_isolation.py holds scikit-learn as the reference the scores must agree with.
"""

from __future__ import annotations

import math

import numpy as np

EULER_GAMMA = 0.5772156649015329
DISTINCT_ROWS = 1024  # rows from which scoring looks for equal rows first (np.unique costs less than the trees)


def average_path_length(n: np.ndarray) -> np.ndarray:
    """Average path length of an unsuccessful search in a binary search tree of ``n`` rows (the leaf's unbuilt
    subtree): 0 for one row, 1 for two, ``2 H(n - 1) - 2 (n - 1) / n`` beyond."""
    n = np.asarray(n, dtype=float)
    out = np.zeros_like(n)
    two = n == 2
    many = n > 2
    out[two] = 1.0
    m = n[many]
    out[many] = 2.0 * (np.log(m - 1.0) + EULER_GAMMA) - 2.0 * (m - 1.0) / m
    return out


class IsolationTrees:
    """A seeded isolation forest with scikit-learn's ``fit`` / ``score_samples`` interface."""

    def __init__(self, n_estimators: int = 48, max_samples: int = 256, random_state: int = 0) -> None:
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.random_state = random_state

    def fit(self, x: np.ndarray) -> IsolationTrees:
        """Grow every tree on its own sample of the rows of ``x`` (not modified)."""
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"an isolation forest needs a non-empty 2-d matrix, got shape {x.shape}")
        rng = np.random.default_rng(self.random_state)
        n = x.shape[0]
        trees = self.n_estimators
        m = max(1, min(self.max_samples, n))
        depth_limit = math.ceil(math.log2(max(m, 2)))
        # Each tree's rows: a random subset of size m (all rows when m == n), drawn per tree so that a heatmap's
        # many cells never cost a trees x cells matrix.
        sample = np.stack([rng.choice(n, size=m, replace=False) for _ in range(trees)]) if m < n \
            else np.tile(np.arange(n), (trees, 1))
        rows = sample.ravel()
        where = np.repeat(np.arange(trees), m)  # the node each sampled row sits in; tree t's root is node t
        capacity = trees * (2 * m - 1) + trees
        feature = np.full(capacity, -1, dtype=np.int64)
        threshold = np.zeros(capacity)
        left = np.zeros(capacity, dtype=np.int64)
        right = np.zeros(capacity, dtype=np.int64)
        value = np.zeros(capacity)
        used = trees
        for level in range(depth_limit + 1):
            if rows.size == 0:
                break
            order = np.argsort(where, kind="stable")
            rows, where = rows[order], where[order]
            nodes, start, count = np.unique(where, return_index=True, return_counts=True)
            xs = x[rows]
            low = np.minimum.reduceat(xs, start, axis=0)
            high = np.maximum.reduceat(xs, start, axis=0)
            varied = high > low
            split = (count >= 2) & varied.any(axis=1) & (level < depth_limit)
            value[nodes[~split]] = level + average_path_length(count[~split])
            # A column drawn uniformly among those that vary in the node, a threshold uniform in its range.
            keys = rng.random(varied.shape)
            keys[~varied] = -1.0
            col = keys.argmax(axis=1)
            pick = np.arange(len(nodes))
            lo, hi = low[pick, col], high[pick, col]
            cut = lo + rng.random(len(nodes)) * (hi - lo)
            cut = np.where(cut >= hi, lo, cut)
            k = int(split.sum())
            parents = nodes[split]
            feature[parents] = col[split]
            threshold[parents] = cut[split]
            left[parents] = used + 2 * np.arange(k)
            right[parents] = used + 2 * np.arange(k) + 1
            used += 2 * k
            # Rows of split nodes move to a child; rows of leaves are done.
            slot = np.repeat(pick, count)
            keep = split[slot]
            go_left = xs[np.arange(len(rows)), col[slot]] <= cut[slot]
            child = np.where(go_left, left[nodes[slot]], right[nodes[slot]])
            rows, where = rows[keep], child[keep]
        self.feature_ = feature[:used]
        self.threshold_ = threshold[:used]
        self.left_ = left[:used]
        self.right_ = right[:used]
        self.value_ = value[:used]
        self.max_samples_ = m
        self.depth_limit_ = depth_limit
        return self

    def score_samples(self, x: np.ndarray) -> np.ndarray:
        """The opposite of each row's anomaly score ``2 ** (-mean path length / c(max_samples))``: in [-1, 0].

        A row's score depends on the row alone, so a table of many equal rows (the heatmap's node x window cells
        of a long job: 15,000 rows of a few dozen distinct count vectors) is scored once per distinct row."""
        x = np.asarray(x, dtype=float)
        if x.ndim == 2 and x.shape[0] >= DISTINCT_ROWS and x.shape[1]:
            # rows as byte strings: equal bytes are equal rows (rows equal but for the sign of a zero score apart,
            # alike), and sorting them is cheaper than ``np.unique(axis=0)``'s
            rows = np.ascontiguousarray(x)
            _, first, back = np.unique(rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).reshape(-1),
                                       return_index=True, return_inverse=True)
            # (one distinct row alone is scored as the table is: numpy sums one column's path lengths pairwise, not
            # in the order it sums those of several columns, and the last bit of the score could differ)
            if len(first) >= 2 and 2 * len(first) <= x.shape[0]:
                return self._path_scores(rows[first])[back.reshape(-1)]
        return self._path_scores(x)

    def _path_scores(self, x: np.ndarray) -> np.ndarray:
        """``score_samples`` of every row, row by row (through all trees at once)."""
        trees = self.n_estimators
        at = np.repeat(np.arange(trees)[:, None], x.shape[0], axis=1)  # every row at every tree's root
        cols = np.arange(x.shape[0])[None, :]
        for _ in range(self.depth_limit_ + 1):
            f = self.feature_[at]
            inner = f >= 0
            if not inner.any():
                break
            v = x[cols, np.where(inner, f, 0)]
            step = np.where(v <= self.threshold_[at], self.left_[at], self.right_[at])
            at = np.where(inner, step, at)
        depth = self.value_[at].sum(axis=0)
        scale = trees * float(average_path_length(np.array([self.max_samples_]))[0])
        return -np.power(2.0, -depth / scale) if scale > 0 else -np.ones(x.shape[0])
