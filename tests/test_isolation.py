"""The package's isolation forest against scikit-learn's, the reference it replaces (for speed, not results)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from l4lite.detect.isolation import IsolationTrees, average_path_length


def _ranks(a: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(a)).astype(float)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(_ranks(a), _ranks(b))[0, 1])


def _matrix(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Sparse count-like rows with one planted outlier (row 0), as a job's node or window vectors look."""
    x = rng.poisson(3.0, size=(n, d)).astype(float)
    x[rng.random((n, d)) < 0.5] = 0.0
    x[0] += 8.0
    return np.log1p(x)


def test_average_path_length_matches_the_closed_form() -> None:
    got = average_path_length(np.array([0, 1, 2, 3, 256]))
    assert got[:3].tolist() == [0.0, 0.0, 1.0]
    assert got[3] == pytest.approx(2 * (np.log(2) + 0.5772156649) - 4 / 3)
    assert got[4] == pytest.approx(2 * (np.log(255) + 0.5772156649) - 2 * 255 / 256)


@pytest.mark.parametrize(("n", "d"), [(8, 5), (40, 12), (300, 30)])
def test_scores_agree_with_scikit_learn_as_closely_as_two_of_its_seeds(n: int, d: int) -> None:
    rng = np.random.default_rng(n)
    x = _matrix(rng, n, d)
    ms = min(256, n)
    ref = IsolationForest(n_estimators=300, max_samples=ms, random_state=0).fit(x).score_samples(x)
    other_seed = IsolationForest(n_estimators=300, max_samples=ms, random_state=1).fit(x).score_samples(x)
    ours = IsolationTrees(300, ms, random_state=0).fit(x).score_samples(x)
    assert _spearman(ref, ours) >= min(0.9, _spearman(ref, other_seed) - 0.05)
    assert abs(float(ref.mean() - ours.mean())) < 0.02
    assert ours.argmin() == ref.argmin() == 0  # the planted row is the most abnormal for both


def test_scores_lie_in_scikit_learns_range_and_identical_rows_score_alike() -> None:
    x = np.vstack([np.zeros((10, 3)), [[5.0, 0.0, 1.0]]])
    s = IsolationTrees(64, 11, random_state=3).fit(x).score_samples(x)
    assert ((s >= -1.0) & (s <= 0.0)).all()
    assert np.allclose(s[:10], s[0])
    assert s[10] < s[0]


def test_seeded_fits_repeat_and_leave_the_input_alone() -> None:
    x = _matrix(np.random.default_rng(7), 50, 6)
    before = x.copy()
    a = IsolationTrees(32, 50, random_state=5).fit(x).score_samples(x)
    b = IsolationTrees(32, 50, random_state=5).fit(x).score_samples(x)
    c = IsolationTrees(32, 50, random_state=6).fit(x).score_samples(x)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(x, before)


def test_trees_stop_at_the_depth_limit_and_subsample_large_inputs() -> None:
    x = np.random.default_rng(0).normal(size=(1000, 4))
    forest = IsolationTrees(4, 256, random_state=0).fit(x)
    assert forest.max_samples_ == 256 and forest.depth_limit_ == 8
    # A tree of depth 8 has at most 511 nodes.
    assert len(forest.feature_) <= 4 * 511
    assert IsolationTrees(4, 256).fit(x).score_samples(x[:3]).shape == (3,)


def test_an_empty_matrix_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty 2-d"):
        IsolationTrees().fit(np.zeros((0, 3)))


def test_a_table_of_many_equal_rows_scores_as_its_rows_one_by_one() -> None:
    """Scoring once per distinct row (``DISTINCT_ROWS`` rows and more) gives every row the score the row-by-row
    path gives it (parts of fewer rows), with zeros of either sign and rows in any order."""
    from l4lite.detect.isolation import DISTINCT_ROWS

    rng = np.random.default_rng(11)
    distinct = _matrix(rng, 40, 4)
    distinct[1] = -0.0
    distinct[2] = 0.0
    picks = rng.integers(0, len(distinct), size=3 * DISTINCT_ROWS)
    x = distinct[picks]
    trees = IsolationTrees(32, 256, random_state=2).fit(x)
    step = DISTINCT_ROWS // 2
    by_parts = np.concatenate([trees.score_samples(x[k:k + step]) for k in range(0, len(x), step)])
    got = trees.score_samples(x)
    assert got.shape == (len(x),)
    assert np.array_equal(got, by_parts)
    assert np.array_equal(got[picks == 1], np.full(int((picks == 1).sum()), got[picks == 1][0]))
    one = np.repeat(distinct[:1], DISTINCT_ROWS, axis=0)  # a single distinct row: scored as it is
    assert np.array_equal(trees.score_samples(one), trees.score_samples(one[:step]).repeat(2))
    two = np.tile(distinct[:2], (DISTINCT_ROWS, 1))
    assert np.array_equal(trees.score_samples(two), np.tile(trees.score_samples(two[:step])[:2], DISTINCT_ROWS))
