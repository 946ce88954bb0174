"""Tests for :class:`privgame.mechanisms.synth.synthpop.Synthpop` and its rpart-like CART kernels (:mod:`_cart`)."""

from __future__ import annotations

import itertools
import math
import pickle
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats
from sklearn.tree import DecisionTreeRegressor

from privgame.mechanisms.synth import _cart
from privgame.mechanisms.synth._cart import CartTree, fit_cart
from privgame.mechanisms.synth.synthpop import (
    Synthpop,
    _centre,
    _certified,
    _Column,
    _counting_order,
    _dense_codes,
    _LindepStats,
    _passes,
    _remove_lindep,
    _smooth_density,
    bw_nrd0,
    bw_sj,
)

# ---------------------------------------------------------------------------------------------------------------
# helpers: fit the kernel on (y, list of predictors)
# ---------------------------------------------------------------------------------------------------------------


def _design(columns: list[np.ndarray], kinds: list[str], ncats: list[int]) -> dict[str, Any]:
    n = columns[0].shape[0] if columns else 0
    var_kind, var_pos, xnum, xcat, ncat = [], [], [], [], []
    for col, kind, k in zip(columns, kinds, ncats, strict=True):
        if kind == "num":
            var_kind.append(0)
            var_pos.append(len(xnum))
            xnum.append(np.asarray(col, dtype=np.float64))
        else:
            var_kind.append(1)
            var_pos.append(len(xcat))
            xcat.append(np.asarray(col, dtype=np.int64))
            ncat.append(k)
    xn = np.stack(xnum) if xnum else np.zeros((0, n))
    return {
        "xnum": xn,
        "sidx": np.argsort(xn, axis=1, kind="stable") if xnum else np.zeros((0, n), np.int64),
        "xcat": np.stack(xcat) if xcat else np.zeros((0, n), np.int64),
        "ncat": np.asarray(ncat, dtype=np.int64),
        "var_kind": np.asarray(var_kind, dtype=np.int8),
        "var_pos": np.asarray(var_pos, dtype=np.int64),
    }


def _fit(y, columns, kinds, ncats, *, classification, minbucket=5, minsplit=None, cp=1e-8, **kw) -> CartTree:
    n_classes = int(np.max(y)) + 1 if classification else 0
    return fit_cart(
        np.asarray(y),
        classification=classification,
        n_classes=n_classes,
        minbucket=minbucket,
        minsplit=3 * minbucket if minsplit is None else minsplit,
        cp=cp,
        **_design(columns, kinds, ncats),
        **kw,
    )


def _leaf_sets(tree: CartTree) -> set[frozenset[int]]:
    return {frozenset(tree.leaf_rows(int(k)).tolist()) for k in tree.leaves}


# ---------------------------------------------------------------------------------------------------------------
# an independent, slow reference: rpart's growth with an exhaustive split search
# ---------------------------------------------------------------------------------------------------------------


def _impurity(y: np.ndarray, classification: bool, n_classes: int) -> float:
    """Node impurity as rpart's splitting criteria use it: sum of squares, or n * Gini."""
    if classification:
        p = np.bincount(y, minlength=n_classes) / y.shape[0]
        return float(y.shape[0] * (1.0 - np.sum(p * p)))
    return float(np.sum((y - y.mean()) ** 2))


def _risk(y: np.ndarray, classification: bool, n_classes: int) -> float:
    """rpart's node risk: sum of squares (anova) or misclassified rows (class, default priors, 0/1 loss)."""
    if classification:
        return float(y.shape[0] - np.bincount(y, minlength=n_classes).max())
    return float(np.sum((y - y.mean()) ** 2))


def _candidates(x: np.ndarray, kind: str) -> list[np.ndarray]:
    """Every split of a node's rows on one predictor, as boolean 'goes left' masks (exhaustive)."""
    if kind == "num":
        values = np.unique(x)
        return [x < (a + b) / 2 for a, b in itertools.pairwise(values)]
    present = np.unique(x)
    out = []
    # all 2^(m-1) - 1 groupings: subsets of the first m - 1 present categories (the last one stays right)
    for bits in range(1, 1 << (present.shape[0] - 1)):
        left = [present[i] for i in range(present.shape[0] - 1) if (bits >> i) & 1]
        out.append(np.isin(x, left))
    return out


def _best_split(y, X, kinds, rows, classification, n_classes, edge):
    """Exhaustive search; the best improvement wins, ties go to the first predictor."""
    parent = _impurity(y[rows], classification, n_classes)
    best, best_mask = 0.0, None
    for x, kind in zip(X, kinds, strict=True):
        xs = x[rows]
        var_best, var_mask = 0.0, None
        for mask in _candidates(xs, kind):
            nl = int(mask.sum())
            if nl < edge or rows.shape[0] - nl < edge:
                continue
            gain = (
                parent
                - _impurity(y[rows][mask], classification, n_classes)
                - _impurity(y[rows][~mask], classification, n_classes)
            )
            if gain > var_best * (1 + 1e-12) + 1e-12:
                var_best, var_mask = gain, mask
        if var_mask is not None and var_best > best * (1 + 1e-12) + 1e-12:
            best, best_mask = var_best, var_mask
    return best_mask


def _reference_leaves(y, X, kinds, *, classification, minbucket=5, minsplit=None, cp=1e-8, max_depth=30):
    """rpart's recursive partition (partition.c) with a brute-force split search; returns the leaves' row sets."""
    minsplit = 3 * minbucket if minsplit is None else minsplit
    n_classes = int(np.max(y)) + 1 if classification else 0
    root_risk = _risk(y, classification, n_classes)
    alpha = cp * root_risk

    def grow(rows, depth, inherited):
        """Returns (node dict, number of splits, subtree risk)."""
        risk = _risk(y[rows], classification, n_classes)
        node = {"rows": rows, "risk": risk, "children": None}
        tempcp = risk if inherited is None else min(risk, inherited)
        mask = None
        if rows.shape[0] >= minsplit and tempcp > alpha and depth < max_depth:
            mask = _best_split(y, X, kinds, rows, classification, n_classes, minbucket)
        if mask is None:
            node["cp"] = alpha
            return node, 0, risk
        left, ls, lr = grow(rows[mask], depth + 1, tempcp - alpha)
        bound = min(max((risk - lr) / (ls + 1), risk - left["risk"]), risk if inherited is None else inherited)
        right, rs, rr = grow(rows[~mask], depth + 1, bound - alpha)
        cp_here = (risk - (lr + rr)) / (ls + rs + 1)
        if right["cp"] > left["cp"]:
            if cp_here > left["cp"]:
                lr, ls = left["risk"], 0
                cp_here = (risk - (lr + rr)) / (ls + rs + 1)
                if cp_here > right["cp"]:
                    rr, rs = right["risk"], 0
        elif cp_here > right["cp"]:
            rr, rs = right["risk"], 0
            cp_here = (risk - (lr + rr)) / (ls + rs + 1)
            if cp_here > left["cp"]:
                lr, ls = left["risk"], 0
        node["cp"] = (risk - (lr + rr)) / (ls + rs + 1)
        if node["cp"] <= alpha:
            return node, 0, risk
        node["children"] = (left, right)
        return node, ls + rs + 1, lr + rr

    root, _, _ = grow(np.arange(y.shape[0]), 0, None)
    leaves: set[frozenset[int]] = set()
    stack = [root]
    while stack:
        nd = stack.pop()
        if nd["children"] is None:
            leaves.add(frozenset(nd["rows"].tolist()))
        else:
            stack.extend(nd["children"])
    return leaves


def _mixed_data(seed: int, n: int, *, classes: int | None):
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rng.integers(0, 12, size=n).astype(float)  # ties
    x3 = rng.integers(0, 5, size=n)  # categorical, 5 levels
    x4 = rng.integers(0, 4, size=n)  # categorical, 4 levels
    signal = x1 + 0.3 * x2 + np.array([0.0, 2.0, -1.0, 0.5, 1.5])[x3] + np.array([0.0, -1.0, 1.0, 0.2])[x4]
    if classes is None:
        y: np.ndarray = signal + rng.normal(size=n)
    else:
        cuts = np.quantile(signal, np.linspace(0, 1, classes + 1)[1:-1])
        y = np.searchsorted(cuts, signal + rng.normal(size=n)).astype(np.int64)
    return y, [x1, x2, x3, x4], ["num", "num", "cat", "cat"], [0, 0, 5, 4]


# ---------------------------------------------------------------------------------------------------------------
# CART kernel tests
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regression_tree_matches_exhaustive_reference(seed: int) -> None:
    y, X, kinds, ncats = _mixed_data(seed, 160, classes=None)
    tree = _fit(y, X, kinds, ncats, classification=False)
    assert len(tree.leaves) > 3
    assert _leaf_sets(tree) == _reference_leaves(y, X, kinds, classification=False)


@pytest.mark.parametrize(("seed", "classes"), [(0, 2), (1, 2), (2, 3), (3, 4)])
def test_classification_tree_matches_exhaustive_reference(seed: int, classes: int) -> None:
    # multi-class y with <= 5 categories: the kernel searches all groupings, as rpart (and the reference)
    y, X, kinds, ncats = _mixed_data(seed, 200, classes=classes)
    tree = _fit(y, X, kinds, ncats, classification=True)
    assert len(tree.leaves) > 1
    assert _leaf_sets(tree) == _reference_leaves(y, X, kinds, classification=True)


@pytest.mark.parametrize("minbucket", [1, 3, 7])
def test_reference_agreement_other_settings(minbucket: int) -> None:
    y, X, kinds, ncats = _mixed_data(10 + minbucket, 120, classes=None)
    for cp in (1e-8, 0.01):
        tree = _fit(y, X, kinds, ncats, classification=False, minbucket=minbucket, cp=cp)
        expected = _reference_leaves(y, X, kinds, classification=False, minbucket=minbucket, cp=cp)
        assert _leaf_sets(tree) == expected
        assert min(len(s) for s in expected) >= minbucket


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_regression_tree_matches_sklearn_on_numeric_predictors(seed: int) -> None:
    # continuous data (no ties): rpart with cp = 1e-8 keeps every improving split, like an unpruned sklearn tree
    rng = np.random.default_rng(seed)
    n = 400
    X = rng.normal(size=(3, n))
    y = 2 * X[0] + np.sin(3 * X[1]) + 0.5 * X[2] ** 2 + rng.normal(scale=0.5, size=n)
    tree = _fit(y, list(X), ["num"] * 3, [0, 0, 0], classification=False)
    sk = DecisionTreeRegressor(min_samples_leaf=5, min_samples_split=15, max_depth=30, random_state=seed)
    sk_leaves = pd.Series(np.arange(n)).groupby(sk.fit(X.T, y).apply(X.T)).apply(lambda s: frozenset(s.tolist()))
    assert len(tree.leaves) > 10
    assert _leaf_sets(tree) == set(sk_leaves)


def test_categorical_split_for_numeric_y_is_the_best_of_all_partitions() -> None:
    # 8 categories: the ordering by mean must find the best of all 2^7 - 1 groupings (Fisher 1958)
    rng = np.random.default_rng(5)
    n, levels = 300, 8
    x = rng.integers(0, levels, size=n)
    y = rng.normal(size=levels)[x] * 2 + rng.normal(size=n)
    tree = _fit(y, [x], ["cat"], [levels], classification=False, minbucket=5)
    assert tree.left[0] >= 0
    chosen = np.isin(x, np.flatnonzero(tree.cat_dir[0] == -1))
    brute = max(
        (_impurity(y, False, 0) - _impurity(y[m], False, 0) - _impurity(y[~m], False, 0), tuple(m))
        for m in _candidates(x, "cat")
        if 5 <= m.sum() <= n - 5
    )
    gain = _impurity(y, False, 0) - _impurity(y[chosen], False, 0) - _impurity(y[~chosen], False, 0)
    assert gain == pytest.approx(brute[0], rel=1e-12)
    assert set(chosen.tolist()) and (tuple(chosen) == brute[1] or tuple(~chosen) == brute[1])


def _cat_gini_gain(x, y, levels, n_classes, exhaustive_budget):
    n = x.shape[0]
    cand = np.zeros(levels, np.int8)
    tot = np.bincount(y, minlength=n_classes).astype(np.float64)
    total, best = _cart._cat_gini(
        np.arange(n), 0, n, x, levels, y, n_classes, 1, exhaustive_budget,
        np.zeros(levels), np.zeros((levels, n_classes)), tot, np.zeros(n_classes), np.zeros(n_classes), cand,
    )  # fmt: skip
    return total - best, cand


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multiclass_heuristic_is_exact_with_two_classes_present_and_never_beats_the_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    levels, n = 14, 400
    x = rng.integers(0, levels, size=n)
    rates = rng.dirichlet(np.ones(3), size=levels)
    y3 = np.array([rng.choice(3, p=rates[k]) for k in x])
    optimum3 = max(
        _impurity(y3, True, 3) - _impurity(y3[m], True, 3) - _impurity(y3[~m], True, 3) for m in _candidates(x, "cat")
    )
    heuristic3, cand = _cat_gini_gain(x, y3, levels, 3, exhaustive_budget=0)
    exhaustive3, _ = _cat_gini_gain(x, y3, levels, 3, exhaustive_budget=1 << 40)
    assert exhaustive3 == pytest.approx(optimum3, rel=1e-9)
    assert 0 < heuristic3 <= optimum3 * (1 + 1e-9)
    assert heuristic3 >= 0.8 * optimum3  # the PC / class-proportion orderings are close on random data
    assert set(np.unique(cand[np.unique(x)])) == {-1, 1}
    # only classes 0 and 2 present (of 3): ordering by a class proportion is optimal (Breiman et al. Thm 4.5)
    y2 = np.where(y3 == 1, 2, y3)
    optimum2 = max(
        _impurity(y2, True, 3) - _impurity(y2[m], True, 3) - _impurity(y2[~m], True, 3) for m in _candidates(x, "cat")
    )
    heuristic2, _ = _cat_gini_gain(x, y2, levels, 3, exhaustive_budget=0)
    assert heuristic2 == pytest.approx(optimum2, rel=1e-9)


def _graycode_reference(x, y, levels, n_classes, edge):
    """rpart's Gray-code search one category at a time, class counts updated in place (the first implementation)."""
    n = x.shape[0]
    ccnt = np.zeros((levels, n_classes))
    np.add.at(ccnt, (x, y), 1.0)
    countn, tot = ccnt.sum(axis=1), ccnt.sum(axis=0)
    sq = 0.0
    for c in range(n_classes):
        sq += tot[c] * tot[c]
    present = np.flatnonzero(countn > 0)
    left, right = np.zeros(n_classes), tot.copy()
    left_sq, right_sq, left_n = 0.0, sq, 0.0
    in_left = np.zeros(present.shape[0], dtype=bool)
    best, best_set = n - sq / n, None
    for t in range(1, 1 << (present.shape[0] - 1)):
        b = (t & -t).bit_length() - 1
        k = present[b]
        sign = -1.0 if in_left[b] else 1.0
        in_left[b] = not in_left[b]
        for c in range(n_classes):
            a = ccnt[k, c]
            if a > 0:
                a = sign * a
                left_sq += a * (2.0 * left[c] + a)
                left[c] += a
                right_sq += a * (a - 2.0 * right[c])
                right[c] -= a
        left_n += sign * countn[k]
        right_n = n - left_n
        if left_n >= edge and right_n >= edge:
            temp = (left_n - left_sq / left_n) + (right_n - right_sq / right_n)
            if temp < best:
                best, best_set = temp, in_left.copy()
    return best, (None if best_set is None else present[best_set])


@pytest.mark.parametrize("seed", range(12))
def test_exhaustive_gini_search_is_rpart_graycode_bit_for_bit(seed: int) -> None:
    # the blocked search must return the same float and, among equal values, the grouping that comes first in
    # Gray-code order; repeated categories (equal count vectors) make exact ties, absent classes and minbucket vary
    rng = np.random.default_rng(seed)
    levels, n_classes = int(rng.integers(2, 14) if seed % 2 else rng.integers(10, 14)), int(rng.integers(3, 8))
    n = int(rng.choice([12, 60, 300, 2000]))
    x = rng.choice(levels, n, p=rng.dirichlet(np.ones(levels)))
    y = rng.choice(n_classes, n, p=rng.dirichlet(np.full(n_classes, 0.5)))
    if seed % 3 != 1:  # categories 0/1 and 2/3 with identical rows of counts
        base = rng.choice(n_classes, 20)
        x = np.concatenate([x, np.repeat([0, 1, 2, 3], 20) % levels])
        y = np.concatenate([y, np.tile(base, 4)])
        n = x.shape[0]
    edge = int(rng.choice([1, 5, 20]))
    cand = np.zeros(levels, np.int8)
    tot = np.bincount(y, minlength=n_classes).astype(np.float64)
    _, best = _cart._cat_gini(
        np.arange(n), 0, n, x, levels, y, n_classes, edge, 1 << 40,
        np.zeros(levels), np.zeros((levels, n_classes)), tot, np.zeros(n_classes), np.zeros(n_classes), cand,
    )  # fmt: skip
    expected, left = _graycode_reference(x, y, levels, n_classes, edge)
    assert best == expected
    if left is None:
        assert not cand.any()
    else:
        assert set(np.flatnonzero(cand == -1)) == set(left.tolist())
        assert set(np.flatnonzero(cand == 1)) == set(np.unique(x).tolist()) - set(left.tolist())


def test_class_tree_prunes_splits_that_do_not_change_the_majority_class() -> None:
    # rpart's class risk is the misclassification count: a split whose children predict the same class has
    # complexity 0 <= cp * risk and is collapsed (rpart returns only the root), although the Gini improves
    n = 2000
    x = np.repeat([0.0, 1.0], n // 2)  # the only possible split is x < 0.5
    rate_one = np.concatenate([np.arange(n // 2) < 50, np.arange(n // 2) < 350])  # 5 % and 35 % of ones
    y = rate_one.astype(np.int64)
    tree = _fit(y, [x], ["num"], [0], classification=True)
    assert tree.left[0] == -1
    assert _reference_leaves(y, [x], ["num"], classification=True) == {frozenset(range(n))}
    # a numeric y with the same values is split (any sum-of-squares reduction counts), and so is a class y whose
    # majority changes (5 % vs 65 % of ones)
    assert _fit(y.astype(float), [x], ["num"], [0], classification=False).left[0] >= 0
    y2 = np.concatenate([np.arange(n // 2) < 50, np.arange(n // 2) < 650]).astype(np.int64)
    assert len(_fit(y2, [x], ["num"], [0], classification=True).leaves) == 2


def test_tree_respects_minbucket_minsplit_and_max_depth() -> None:
    rng = np.random.default_rng(1)
    n = 3000
    x = rng.normal(size=n)
    y = x + rng.normal(scale=0.01, size=n)
    tree = _fit(y, [x], ["num"], [0], classification=False, minbucket=4, minsplit=30)
    sizes = tree.end - tree.start
    assert sizes[tree.leaves].min() >= 4
    inner = np.flatnonzero(tree.left >= 0)
    assert sizes[inner].min() >= 30
    shallow = _fit(y, [x], ["num"], [0], classification=False, max_depth=3)
    assert len(shallow.leaves) == 8
    assert _leaf_sets(shallow) == _reference_leaves(y, [x], ["num"], classification=False, max_depth=3)


def test_donors_come_from_the_leaf_each_row_reaches() -> None:
    y, X, kinds, ncats = _mixed_data(3, 300, classes=None)
    tree = _fit(y, X, kinds, ncats, classification=False)
    rng = np.random.default_rng(0)
    m = 500
    syn = [rng.normal(size=m), rng.integers(0, 12, m).astype(float), rng.integers(0, 5, m), rng.integers(0, 4, m)]
    design = _design(syn, kinds, ncats)
    leaves = tree.apply(design["xnum"], design["xcat"], rng.random(m))
    donors = tree.sample_donors(leaves, rng.random(m))
    assert set(leaves.tolist()) <= set(tree.leaves.tolist())
    for leaf, donor in zip(leaves, donors, strict=True):
        assert donor in set(tree.leaf_rows(int(leaf)).tolist())
    # a row routed by hand (numeric: x < threshold goes left; categorical: the node's direction) agrees
    for i in range(m):
        node = 0
        while tree.left[node] >= 0:
            v = tree.split_var[node]
            if kinds[v] == "num":
                go_left = syn[v][i] < tree.threshold[node]
            else:
                direction = tree.cat_dir[node, syn[v][i]]
                if direction == 0:
                    break
                go_left = direction == -1
            node = tree.left[node] if go_left else tree.right[node]
        else:
            assert leaves[i] == node
    # the training rows reach their own leaves
    train = _design(X, kinds, ncats)
    own = tree.apply(train["xnum"], train["xcat"], np.full(300, 0.5))
    for leaf in tree.leaves:
        assert set(np.flatnonzero(own == leaf).tolist()) == set(tree.leaf_rows(int(leaf)).tolist())
    # donors() is apply() then sample_donors(), in one call
    u_walk, u_donor = rng.random(m), rng.random(m)
    both = tree.donors(design["xnum"], design["xcat"], u_walk, u_donor)
    assert np.array_equal(both, tree.sample_donors(tree.apply(design["xnum"], design["xcat"], u_walk), u_donor))


def test_unseen_category_walks_down_in_proportion_to_the_training_counts() -> None:
    # node 0 splits on x (numeric); below, category 2 of c occurs only where x > 0, so at the x < 0 node it is unseen
    rng = np.random.default_rng(2)
    n = 400
    x = rng.normal(size=n)
    c = np.where(x > 0, rng.integers(0, 3, n), rng.integers(0, 2, n))
    y = 10.0 * (x > 0) + np.where(c == 0, 0.0, 3.0) + rng.normal(scale=0.1, size=n)
    tree = _fit(y, [x, c], ["num", "cat"], [0, 3], classification=False)
    node = int(tree.left[0]) if tree.threshold[0] == pytest.approx(0, abs=0.1) else -1
    assert node > 0 and tree.split_var[node] == 1 and tree.cat_dir[node, 2] == 0
    m = 40_000
    design = _design([np.full(m, -1.0), np.full(m, 2)], ["num", "cat"], [0, 3])
    leaves = tree.apply(design["xnum"], design["xcat"], rng.random(m))
    left_leaves = set(_subtree_leaves(tree, int(tree.left[node])))
    went_left = np.isin(leaves, list(left_leaves)).mean()
    size = tree.end - tree.start
    p = size[tree.left[node]] / size[node]
    assert abs(went_left - p) < 5 * math.sqrt(p * (1 - p) / m)  # 5 sigma: fails w.p. < 1e-6
    assert set(leaves.tolist()) <= set(tree.leaves.tolist())


def _subtree_leaves(tree: CartTree, node: int) -> list[int]:
    if tree.left[node] < 0:
        return [node]
    return _subtree_leaves(tree, int(tree.left[node])) + _subtree_leaves(tree, int(tree.right[node]))


# ---------------------------------------------------------------------------------------------------------------
# Synthpop on Adult
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    from privgame.data import load_adult

    return load_adult("train").iloc[:1000].reset_index(drop=True)


def _binned(df: pd.DataFrame, ref: pd.DataFrame) -> dict[str, np.ndarray]:
    """Categorical codes, or numeric values cut at the real data's deciles (the issue's fidelity binning)."""
    out = {}
    for c in ref.columns:
        if isinstance(ref[c].dtype, pd.CategoricalDtype):
            out[c] = df[c].cat.codes.to_numpy()
        else:
            edges = np.unique(np.quantile(ref[c], np.linspace(0.1, 0.9, 9)))
            out[c] = np.searchsorted(edges, df[c].to_numpy(), side="right")
    return out


def _tvd(a: np.ndarray, b: np.ndarray) -> float:
    k = int(max(a.max(), b.max())) + 1
    return 0.5 * float(np.abs(np.bincount(a, minlength=k) / a.size - np.bincount(b, minlength=k) / b.size).sum())


def _cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    _, a = np.unique(a, return_inverse=True)
    _, b = np.unique(b, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)
    n = table.sum()
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / n
    k = min(table.shape) - 1
    return 0.0 if k == 0 else math.sqrt(float(((table - expected) ** 2 / expected).sum()) / n / k)


def _fidelity(real: pd.DataFrame, syn: pd.DataFrame) -> tuple[float, float, float]:
    r, s = _binned(real, real), _binned(syn, real)
    tvd = max(_tvd(r[c], s[c]) for c in real.columns)
    dv = [abs(_cramers_v(r[a], r[b]) - _cramers_v(s[a], s[b])) for a, b in itertools.combinations(real.columns, 2)]
    return tvd, max(dv), float(np.mean(dv))


def test_adult_marginals_and_associations_are_close(adult: pd.DataFrame) -> None:
    # Tolerances from 20 seeds (0..19) on these 1,000 rows: max-over-columns TVD 0.044-0.080 (mean 0.054, sd 0.008),
    # max-over-pairs |ΔV| 0.078-0.153 (mean 0.107, sd 0.020), mean-over-pairs |ΔV| 0.015-0.025 (mean 0.020, sd
    # 0.002).  The bounds are about 1.5x the worst of the 20 runs and 5.7-9 standard deviations above the mean, so a
    # correct implementation fails them with negligible probability; sampling every column independently gives max
    # |ΔV| ≈ 0.87 and mean |ΔV| ≈ 0.087, and a broken tree would move these far past the bounds.
    for seed in (100, 101, 102):
        tvd, max_dv, mean_dv = _fidelity(adult, Synthpop().release(adult, rng=np.random.default_rng(seed)))
        assert tvd < 0.12
        assert max_dv < 0.22
        assert mean_dv < 0.04
    shuffle = np.random.default_rng(0)
    independent = adult.apply(lambda s: s.iloc[shuffle.integers(0, len(s), len(s))].reset_index(drop=True))
    assert _fidelity(adult, independent)[2] > 0.04  # the check can fail


def test_output_keeps_columns_dtypes_categories_and_copies_real_values(adult: pd.DataFrame) -> None:
    out = Synthpop().release(adult, rng=np.random.default_rng(0))
    assert list(out.columns) == list(adult.columns)
    assert out.dtypes.equals(adult.dtypes)
    assert out.shape == adult.shape
    assert isinstance(out.index, pd.RangeIndex)
    for c in adult.columns:
        if isinstance(adult[c].dtype, pd.CategoricalDtype):
            assert list(out[c].cat.categories) == list(adult[c].cat.categories)
        assert set(out[c].unique()) <= set(adult[c].unique())  # donors' values, copied exactly
    # synthetic education_num follows education as in the data (pure leaves), up to merged tiny categories
    pairs = pd.crosstab(out["education"], out["education_num"]) > 0
    assert (pairs.sum(axis=1) <= 2).all()


@pytest.mark.parametrize("n_rows", [1, 37, 2500])
def test_n_rows(adult: pd.DataFrame, n_rows: int) -> None:
    out = Synthpop(n_rows=n_rows).release(adult.iloc[:300], rng=np.random.default_rng(1))
    assert out.shape == (n_rows, adult.shape[1])
    assert out.dtypes.equals(adult.dtypes)


def test_same_rng_same_output_and_different_rng_different_output(adult: pd.DataFrame) -> None:
    mech = Synthpop()
    a = mech.release(adult, rng=np.random.default_rng(7))
    b = mech.release(adult, rng=np.random.default_rng(7))
    c = mech.release(adult, rng=np.random.default_rng(8))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    pd.testing.assert_frame_equal(adult, adult.copy())  # the input is not modified


def test_visit_sequence_predictor_matrix_and_methods() -> None:
    rng = np.random.default_rng(0)
    n = 600
    a = rng.integers(0, 4, n)
    df = pd.DataFrame(
        {
            "a": pd.Categorical.from_codes(a, categories=["p", "q", "r", "s"]),
            "b": (a * 10 + rng.integers(0, 3, n)).astype(np.int64),
            "c": rng.normal(size=n),
        }
    )
    matches = lambda out: float(np.mean(out["b"].to_numpy() // 10 == out["a"].cat.codes.to_numpy()))  # noqa: E731
    # default: b is predicted from a, the mapping a -> b // 10 survives
    assert matches(Synthpop().release(df, rng=np.random.default_rng(1))) == 1.0
    # reversed visit sequence: a is predicted from b (and b is the bootstrapped first column)
    assert matches(Synthpop(visit_sequence=("c", "b", "a")).release(df, rng=np.random.default_rng(1))) == 1.0
    # b without predictors, or sampled: a and b become independent (agreement ~ 1/4; < 0.4 w.p. > 1 - 1e-12)
    for mech in (Synthpop(predictor_matrix={"b": ()}), Synthpop(methods={"b": "sample"})):
        assert matches(mech.release(df, rng=np.random.default_rng(2))) < 0.4
    # the first visited column is always sampled, even when "cart" is asked for
    assert Synthpop(methods={"a": "cart"}).release(df, rng=np.random.default_rng(3)).shape == df.shape


def test_unseen_category_in_a_predictor_is_handled() -> None:
    # real data: category 'z' of a occurs only with b > 50; b is sampled independently of a, so synthetic rows
    # pair 'z' with b <= 50, where c's tree splits on a without any 'z' among its training rows
    rng = np.random.default_rng(4)
    n = 800
    b = rng.integers(0, 100, n)
    a = np.where(b > 50, rng.integers(0, 3, n), rng.integers(0, 2, n))
    c = np.where(b > 50, 100.0, 0.0) + np.array([0.0, 5.0, 9.0])[a] + rng.normal(scale=0.1, size=n)
    df = pd.DataFrame({"a": pd.Categorical.from_codes(a, categories=["x", "y", "z"]), "b": b, "c": c})
    mech = Synthpop(methods={"b": "sample"})
    out = mech.release(df, rng=np.random.default_rng(5))
    unseen = (out["a"] == "z") & (out["b"] <= 50)
    assert unseen.sum() > 20
    assert out["c"][unseen].isin(df["c"]).all()
    pd.testing.assert_frame_equal(out, mech.release(df, rng=np.random.default_rng(5)))


def test_other_dtypes_ordered_bool_float_and_unused_categories() -> None:
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame(
        {
            "grade": pd.Categorical(
                rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi", "top"], ordered=True
            ),
            "flag": rng.random(n) < 0.3,
            "nullable_flag": pd.array(rng.random(n) < 0.5, dtype="boolean"),
            "x": rng.normal(size=n).astype(np.float32),
            "k": rng.integers(0, 5, n).astype(np.int16),
            "u": rng.integers(0, 1000, n).astype(np.uint32),
        }
    )
    out = Synthpop().release(df, rng=np.random.default_rng(0))
    assert out.dtypes.equals(df.dtypes)
    assert out["grade"].cat.ordered and list(out["grade"].cat.categories) == ["lo", "mid", "hi", "top"]
    assert "top" not in set(out["grade"])
    assert set(out["x"]) <= set(df["x"])


def test_a_single_row_is_synthesised_without_warnings() -> None:
    # remove.lindep.syn on one row: R's var() is NA (predictor dropped); numpy's ddof=1 variance used to warn
    df = pd.DataFrame({"a": pd.Categorical(["x"], categories=["x", "y"]), "b": [3], "c": [0.5]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = Synthpop(n_rows=4).release(df, rng=np.random.default_rng(0))
    pd.testing.assert_frame_equal(out, df.iloc[[0] * 4].reset_index(drop=True))


@pytest.mark.parametrize("seed", range(6))
def test_remove_lindep_shortcut_gives_the_full_answer(seed: int) -> None:
    # the release's column statistics (computed once) must drop exactly the predictors the per-column test drops:
    # constant, y-duplicating and collinear ones
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 40, 500]))
    a, b = rng.normal(size=n), rng.normal(size=n)
    df = pd.DataFrame(
        {
            "a": a,
            "b": b,
            "c": pd.Categorical(rng.integers(0, 4, n)),
            "a2": 3 * a - 1,
            "sum": a + b + 1e-9 * rng.normal(size=n),
            "const": np.full(n, 7.0),
            "flag": rng.random(n) < 0.4,
            "k": rng.integers(0, 1000, n),
        }
    )
    real = {col: _Column(df[col]) for col in df.columns}
    stats = _LindepStats(real, list(df.columns))
    for _ in range(15):
        cols = list(rng.permutation(df.columns))
        target, predictors = cols[0], cols[1 : int(rng.integers(2, len(cols) + 1))]
        full = _remove_lindep(real, list(predictors), real[target])
        assert _remove_lindep(real, list(predictors), real[target], stats) == full


@pytest.mark.parametrize("seed", range(4))
def test_lindep_statistics_are_numpys_to_the_bit(seed: int) -> None:
    # _centre and _passes promise numpy's float operations (their results decide which predictors are dropped)
    rng = np.random.default_rng(seed)
    n, p = int(rng.choice([2, 3, 57, 1000])), int(rng.integers(2, 12))
    x = rng.normal(size=(p, n)) * 10.0 ** rng.integers(-3, 6, size=(p, 1)) + rng.choice([0.0, 1e6], size=(p, 1))
    x[: p // 3] = np.round(x[: p // 3])
    x[-1] = 3.0  # a constant column
    xs = np.ascontiguousarray(x.T)
    xc_np = xs - xs.mean(axis=0)
    sumsq_np = (xc_np * xc_np).sum(axis=0)
    xc, xct, sumsq = _centre(x)
    assert np.array_equal(xc, xc_np) and np.array_equal(xct, xc_np.T) and np.array_equal(sumsq, sumsq_np)
    assert np.array_equal(sumsq / (n - 1), xs.var(axis=0, ddof=1))
    y = rng.normal(size=(3, n))
    y[1] = x[0] * 2 + 1  # a predictor's copy
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.empty((3, p), dtype=bool)
        for t in range(3):
            yc = y[t] - y[t].mean()
            cor = (xc_np * yc[:, None]).sum(axis=0) / np.sqrt(sumsq_np * (yc * yc).sum())
            expected[t] = (sumsq_np / (n - 1) > 1e-5) & ~(cor >= 0.99999)
    yc_all = y - y.mean(axis=1)[:, None]
    assert np.array_equal(_passes(xc, yc_all, (yc_all * yc_all).sum(axis=1), sumsq, sumsq / (n - 1)), expected)
    assert not expected[1, 0] and not expected[:, -1].any()


def test_eigenvalue_certificate_never_certifies_what_the_eigenvalues_refuse() -> None:
    # _certified(corr) must imply min eigenvalue > 2e-5 * max eigenvalue (what remove_lindep's shortcut relies on)
    rng = np.random.default_rng(0)
    certified = 0
    for _ in range(2000):
        p, n = int(rng.integers(2, 25)), int(rng.integers(30, 200))
        x = rng.normal(size=(n, p))
        k = int(rng.integers(0, p))
        if k:  # a column (nearly) spanned by others
            x[:, k] = x[:, :k] @ rng.normal(size=k) + rng.normal(size=n) * 10.0 ** rng.uniform(-8, 0)
        corr = np.corrcoef(x, rowvar=False)
        w = np.linalg.eigvalsh(corr)
        if _certified(corr):
            certified += 1
            assert w[0] > 2e-5 * w[-1]
    assert 300 < certified < 2000  # both answers occur
    assert not _certified(np.array([[1.0, np.nan], [np.nan, 1.0]]))


def test_counting_order_is_numpys_stable_argsort() -> None:
    rng = np.random.default_rng(0)
    cases = [
        rng.integers(17, 91, 1000).astype(float),  # ages: counted
        rng.choice([0.0, -0.0, 1.0, 3.0], 500),  # the two zeros tie
        rng.integers(0, 100, 300) + 2.0**53,  # large whole numbers, short range
        np.full(7, 4.0),
        rng.choice([0.3, 1.3, 1.3000000000000003], 200),  # not whole: sorted by numpy instead
        rng.integers(0, 10**6, 1000).astype(float),  # too long a range: likewise
    ]
    for i, x in enumerate(cases):
        order = _counting_order(x)
        assert order.shape[0] == (x.shape[0] if i < 4 else 0)
        if order.shape[0]:
            assert np.array_equal(order, np.argsort(x, kind="stable"))


def test_dense_codes_are_numpys_unique_inverse() -> None:
    rng = np.random.default_rng(0)
    for levels in (1, 2, 5, 40):
        codes = rng.choice(rng.permutation(levels)[: max(1, levels // 2)], size=200).astype(np.int64)
        for values in (codes, np.arange(levels, dtype=np.int64)):
            present, inverse = np.unique(values, return_inverse=True)
            dense, n_present = _dense_codes(values, levels)
            assert n_present == present.shape[0] and np.array_equal(dense, inverse)


def test_constant_and_duplicated_columns() -> None:
    rng = np.random.default_rng(0)
    n = 200
    x = rng.normal(size=n)
    df = pd.DataFrame(
        {"const": np.full(n, 3, dtype=np.int64), "x": x, "x_copy": x.copy(), "cat1": pd.Categorical(["a"] * n)}
    )
    out = Synthpop().release(df, rng=np.random.default_rng(1))
    assert (out["const"] == 3).all() and (out["cat1"] == "a").all()
    assert set(out["x_copy"]) <= set(x)


# ---------------------------------------------------------------------------------------------------------------
# smoothing
# ---------------------------------------------------------------------------------------------------------------


def _sj_exact(x: np.ndarray) -> float:
    """Sheather-Jones 'solve-the-equation' bandwidth from exact pairwise Gaussian derivative sums (no binning)."""
    n = x.shape[0]
    diff = (x[:, None] - x[None, :])[np.triu_indices(n, 1)]

    def phi(h: float, order: int) -> float:
        u = (diff / h) ** 2
        if order == 4:
            s = 2 * np.sum(np.exp(-u / 2) * (u * u - 6 * u + 3)) + 3 * n
            return s / (n * (n - 1) * h**5 * math.sqrt(2 * math.pi))
        s = 2 * np.sum(np.exp(-u / 2) * (u**3 - 15 * u**2 + 45 * u - 15)) - 15 * n
        return s / (n * (n - 1) * h**7 * math.sqrt(2 * math.pi))

    q75, q25 = np.quantile(x, [0.75, 0.25])
    scale = min(np.std(x, ddof=1), (q75 - q25) / 1.349)
    a, b = 1.24 * scale * n ** (-1 / 7), 1.23 * scale * n ** (-1 / 9)
    td = -phi(b, 6)
    alph2 = 1.357 * (phi(a, 4) / td) ** (1 / 7)
    c1 = 1 / (2 * math.sqrt(math.pi) * n)
    hmax = 1.144 * scale * n ** (-1 / 5)
    return float(optimize.brentq(lambda h: (c1 / phi(alph2 * h ** (5 / 7), 4)) ** 0.2 - h, 0.01 * hmax, 10 * hmax))


@pytest.mark.parametrize(("n", "seed"), [(150, 0), (400, 1), (1500, 2)])
def test_bw_sj_agrees_with_an_exact_sheather_jones_solution(n: int, seed: int) -> None:
    # R bins the pairwise distances (1000 bins) and solves to a tolerance of 1 % of hmax: a few percent at most
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(size=n - n // 3), rng.normal(4, 0.5, size=n // 3)])
    assert bw_sj(x) == pytest.approx(_sj_exact(x), rel=0.04)
    assert bw_nrd0(x) > 0
    with pytest.raises(ValueError, match="constant"):
        bw_sj(np.ones(10))


def test_density_smoothing(adult: pd.DataFrame) -> None:
    plain = Synthpop().release(adult, rng=np.random.default_rng(0))
    smooth = Synthpop(smoothing="density").release(adult, rng=np.random.default_rng(0))
    assert smooth.dtypes.equals(adult.dtypes)
    # fnlwgt: smoothed, new values, inside [min, max + bandwidth]
    assert smooth["fnlwgt"].isin(adult["fnlwgt"]).mean() < 0.2
    assert smooth["fnlwgt"].min() >= adult["fnlwgt"].min()
    assert smooth["fnlwgt"].max() <= adult["fnlwgt"].max() * 1.2
    # capital_gain: zero (> 70 % of rows) is never smoothed
    assert (smooth["capital_gain"] == 0).mean() == pytest.approx((plain["capital_gain"] == 0).mean(), abs=0.05)
    # categorical columns are not smoothed and fidelity holds
    tvd, _, mean_dv = _fidelity(adult, smooth)
    assert tvd < 0.15 and mean_dv < 0.05


def test_smoothing_rules_mode_top_coding_bounds_and_decimals() -> None:
    rng = np.random.default_rng(0)
    # > 70 % zeros stay zero; the top-coded maximum (many rows at 500, few just below) is not smoothed and caps
    # the rest; the other values get noise and stay integers within [min, max]
    values = np.concatenate([np.zeros(800), rng.integers(1, 400, 150), np.full(50, 500.0)]).astype(np.int64)
    target = _Column(pd.Series(values))
    out = _smooth_density(values, target, rng)
    assert out.dtype == np.int64
    assert np.array_equal(out[:800], values[:800]) and np.array_equal(out[950:], values[950:])
    assert (out[800:950] != values[800:950]).mean() > 0.5
    assert out.min() >= 0 and out.max() <= 500
    # no mode above 70 %, no top-coding: clipped to [min, max + bandwidth], rounded to the data's 1 decimal
    x = np.round(rng.normal(10, 2, 600), 1)
    column = _Column(pd.Series(x))
    assert column.decimals == 1
    smoothed = _smooth_density(x, column, rng)
    bandwidth = bw_sj(x)
    assert smoothed.min() >= x.min() and smoothed.max() <= x.max() + bandwidth + 1e-9
    assert np.allclose(smoothed, np.round(smoothed, 1)) and (smoothed != x).mean() > 0.5
    assert np.std(smoothed - x) == pytest.approx(bandwidth, rel=0.15)  # Gaussian noise of sd = bandwidth
    assert _Column(pd.Series([1.25, 3.0, 2.125])).decimals == 3


# ---------------------------------------------------------------------------------------------------------------
# the mechanism object and its errors
# ---------------------------------------------------------------------------------------------------------------


def test_mechanism_is_hashable_picklable_and_claims_nothing() -> None:
    mech = Synthpop(predictor_matrix={"b": ("a",)}, methods={"c": "sample"}, visit_sequence=["a", "b", "c"])
    assert mech.predictor_matrix == (("b", ("a",)),)
    assert mech.methods == (("c", "sample"),)
    assert mech.visit_sequence == ("a", "b", "c")
    assert hash(mech) == hash(pickle.loads(pickle.dumps(mech)))
    assert mech == Synthpop(
        predictor_matrix=(("b", ["a"]),), methods=(("c", "sample"),), visit_sequence=("a", "b", "c")
    )
    assert mech.privacy_claim() is None
    assert (Synthpop.name, Synthpop.input_kind, Synthpop.release_kind) == ("synthpop", "table", "table")
    assert Synthpop().effective_minsplit == 15 and Synthpop(minbucket=2, minsplit=4).effective_minsplit == 4


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_rows": 0}, ValueError, "n_rows"),
        ({"n_rows": 2.5}, TypeError, "n_rows"),
        ({"minbucket": 0}, ValueError, "minbucket"),
        ({"minsplit": 0}, ValueError, "minsplit"),
        ({"cp": -0.1}, ValueError, "cp"),
        ({"cp": float("nan")}, ValueError, "cp"),
        ({"smoothing": "spline"}, ValueError, "smoothing"),
        ({"visit_sequence": "abc"}, TypeError, "visit_sequence"),
        ({"visit_sequence": {"a": 0}}, TypeError, "visit_sequence must be a tuple of column names"),  # a TOML table
        ({"visit_sequence": {"a", "b"}}, TypeError, "visit_sequence"),  # unordered
        ({"visit_sequence": ("a", False)}, TypeError, r"visit_sequence must hold column names \(strings\)"),
        ({"visit_sequence": ("a", 0)}, TypeError, "visit_sequence must hold column names"),
        ({"methods": ((0, "cart"),)}, TypeError, "methods must name columns by strings, got 0"),
        ({"visit_sequence": ("a", 1.5)}, TypeError, "visit_sequence must hold column names"),
        ({"predictor_matrix": {"b": {"a": 1}}}, TypeError, r"predictor_matrix\['b'\]"),
        ({"visit_sequence": ("a", "a")}, ValueError, "repeat"),
        ({"visit_sequence": ()}, ValueError, "at least one"),
        ({"predictor_matrix": {"a": ("a",)}}, ValueError, "itself"),
        ({"predictor_matrix": {"a": "b"}}, TypeError, "predictor_matrix"),
        ({"predictor_matrix": (("a",),)}, TypeError, "pairs"),
        ({"predictor_matrix": 3}, TypeError, "predictor_matrix"),
        ({"methods": {"a": "norm"}}, ValueError, "methods"),
        ({"methods": (("a", "cart"), ("a", "sample"))}, ValueError, "once"),
        ({"maxfaclevels": 0}, ValueError, "maxfaclevels"),
    ],
)
def test_bad_parameters(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Synthpop(**kwargs)


def _small() -> pd.DataFrame:
    return pd.DataFrame({"a": pd.Categorical(list("xyzx" * 5)), "b": np.arange(20), "c": np.linspace(0, 1, 20)})


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (np.zeros((3, 2)), TypeError, "DataFrame"),
        (pd.DataFrame(), ValueError, "at least one row"),
        (_small().iloc[:0], ValueError, "at least one row"),
        (_small().assign(d=pd.date_range("2020-01-01", periods=20)), TypeError, "dtype"),
        (_small().assign(d=["t"] * 20), TypeError, "category"),
        (_small().assign(d=pd.Series(["t"] * 20, dtype="string")), TypeError, "category"),
        (_small().assign(d=pd.array(range(20), dtype="Int64")), TypeError, "nullable"),
        (_small().assign(d=np.arange(20) * 1j), TypeError, "dtype"),
        (_small().assign(c=[np.nan] + [0.0] * 19), ValueError, "finite"),
        (_small().assign(c=[np.inf] + [0.0] * 19), ValueError, "finite"),
        (_small().assign(a=pd.Categorical([None] + ["x"] * 19)), ValueError, "missing"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), ValueError, "distinct"),
    ],
)
def test_bad_data(data: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Synthpop().release(data, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"visit_sequence": ("a", "b", "zzz")}, "not in the data"),
        ({"visit_sequence": ("a", "b")}, "every column"),
        ({"predictor_matrix": {"zzz": ("a",)}}, "not in the data"),
        ({"predictor_matrix": {"b": ("zzz",)}}, "not in the data"),
        ({"predictor_matrix": {"a": ("b",)}}, "visited before"),
        ({"methods": {"zzz": "cart"}}, "not in the data"),
    ],
)
def test_bad_plan_for_the_data(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Synthpop(**kwargs).release(_small(), rng=np.random.default_rng(0))


def test_categorical_with_too_many_levels_is_refused_as_synthpop_does() -> None:
    df = pd.DataFrame({"a": pd.Categorical([str(i % 70) for i in range(200)]), "b": np.arange(200)})
    with pytest.raises(ValueError, match="maxfaclevels"):
        Synthpop(visit_sequence=("b", "a")).release(df, rng=np.random.default_rng(0))
    # allowed when the column is sampled (as the first visited column always is), or with a higher limit
    for mech in (Synthpop(), Synthpop(visit_sequence=("b", "a"), maxfaclevels=70)):
        assert mech.release(df, rng=np.random.default_rng(0)).shape == df.shape


def test_statistical_check_on_donor_sampling_is_uniform_within_a_leaf() -> None:
    # a root-only tree (constant predictor): donors uniform over all rows (chi-square, p > 1e-4 for this seed)
    n, m = 50, 100_000
    tree = _fit(np.arange(n, dtype=float), [np.zeros(n)], ["num"], [0], classification=False)
    assert tree.left[0] == -1
    donors = tree.sample_donors(np.zeros(m, np.int64), np.random.default_rng(0).random(m))
    assert stats.chisquare(np.bincount(donors, minlength=n)).pvalue > 1e-4
