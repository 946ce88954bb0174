"""rpart-like CART kernels for :class:`privgame.mechanisms.synth.synthpop.Synthpop` (numba).

The tree is grown exactly as R's ``rpart`` (4.1) grows it with ``method = "anova"`` (numeric y: sum-of-squares
reduction) or ``method = "class"`` (categorical y: Gini impurity, default priors, 0/1 loss), minus the parts that
do not change the fitted tree (cross-validation, competitor and surrogate splits):

* a node with fewer than ``minsplit`` rows, or at depth ``max_depth``, is a leaf; every child keeps ``minbucket``
  rows at least;
* numeric (and ordered-categorical) predictors split at the midpoint between two adjacent distinct values
  (``x < threshold`` goes left); unordered categorical predictors split their categories into two groups: for a
  numeric or binary y by ordering the categories by the mean of y (the rate of the first class) and scanning the
  ordered list, which is optimal (Fisher 1958; Breiman et al. 1984, Thm. 4.5); for a multi-class y (C classes) by
  exhaustive search over all ``2^(m-1) - 1`` groupings of the m categories present in the node, in rpart's Gray-code
  order, when ``2^(m-1) * C <= exhaustive_budget`` (default ``2^21``: any m <= 16 with C <= 64, every node of Adult),
  and otherwise by the best of several orderings, each scanned like the ordered case: by the proportion of each
  class present in the node, and by the first principal component of the categories' class-proportion vectors
  (Coppersmith, Hong & Hosking 1999).  That is a heuristic (rpart searches all groupings); it is exact when at most
  two classes are present, and on random 11-15-category, 3-7-class nodes it found the optimum in 97 % of cases
  (worst gain ratio 0.94, mean 0.9994);
* the best split of a node is the one with the largest improvement; ties go to the first predictor (in the order
  given) and, within a numeric predictor, to the smallest threshold, as in rpart; an improvement has to exceed
  ``1e-10`` times the largest improvement seen so far in the tree (rpart's rounding guard);
* the complexity parameter works as in rpart's ``partition.c``: with ``alpha = cp * risk(root)`` (risk = sum of
  squares for anova, number of misclassified rows for class), a node is not split when its risk or its inherited
  complexity bound is at most ``alpha``, and after its subtree is grown the node is collapsed when the subtree's
  cost-complexity ``(risk - subtree risk) / (number of splits)`` (with rpart's "who collapses first" rule for the
  children) is at most ``alpha``.

Predicting: a row walks down by the splits.  A categorical value that no training row of the node had (its
direction is 0) walks on at random, to the left child with probability ``n_left / (n_left + n_right)`` of the
training counts.  rpart would first try up to five surrogate splits and then send the row to the larger child;
synthpop's own code walks down uniformly at random where rpart stops at an inner node.

All kernels are ``numba.njit(cache=True)``: the first call in a fresh environment compiles them (seconds), later
processes load them from numba's cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_DEPTH", "CartTree", "fit_cart"]

MAX_DEPTH = 30  # rpart's maximum (and default) maxdepth
EXHAUSTIVE_BUDGET = 1 << 21  # multi-class y: search all groupings when 2^(m-1) * n_classes is at most this

_NUMERIC = 0
_CATEGORICAL = 1

_LEFT = -1
_RIGHT = 1


# ---------------------------------------------------------------------------------------------------------------
# small helpers (loops rather than numpy calls: each numpy function numba compiles costs compile time)
# ---------------------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _count_positive(values, size):
    """Number of positive entries among ``values[:size]``."""
    m = 0
    for k in range(size):
        if values[k] > 0:
            m += 1
    return m


@numba.njit(cache=True)
def _stable_order(key):
    """Indices sorting ``key`` ascending, ties in index order (insertion sort, as rpart's ``graycode_init2``)."""
    m = key.shape[0]
    order = np.empty(m, np.int64)
    for i in range(m):
        j = i
        while j > 0 and key[order[j - 1]] > key[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    return order


# ---------------------------------------------------------------------------------------------------------------
# split search: numeric predictors (rows presorted by x within the node's range)
# ---------------------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _scan_numeric_anova(order, s, e, x, y, grandmean, edge):
    """rpart's anova scan: maximise ``nL mL^2 + nR mR^2`` of the centred y; return (best, position)."""
    n = e - s
    left_sum = 0.0
    best = 0.0
    where = -1
    for i in range(n - edge):
        r = order[s + i]
        left_sum += y[r] - grandmean
        left_n = i + 1
        if left_n >= edge and x[order[s + i + 1]] != x[r]:
            right_n = n - left_n
            temp = left_sum * left_sum / left_n + left_sum * left_sum / right_n
            if temp > best:
                best = temp
                where = i
    return best, where


@numba.njit(cache=True)
def _scan_numeric_gini(order, s, e, x, y, tot, n_classes, edge, left):
    """rpart's Gini scan: minimise ``nL (1 - sum pL^2) + nR (1 - sum pR^2)``; return (total, best, position).

    Class counts are whole numbers, so ``sum_c right[c]^2 = sum_c tot[c]^2 - 2 sum_c tot[c] left[c] + sum_c
    left[c]^2`` holds exactly (below 2^53): one count array to update per row instead of two.
    """
    n = e - s
    sq = 0.0
    for c in range(n_classes):
        left[c] = 0.0
        sq += tot[c] * tot[c]
    left_sq = 0.0
    tot_left = 0.0
    total_ss = n - sq / n
    best = total_ss
    where = -1
    for i in range(n - edge):
        r = order[s + i]
        c = y[r]
        count = left[c]
        left_sq += 2.0 * count + 1.0
        left[c] = count + 1.0
        tot_left += tot[c]
        left_n = i + 1
        if left_n >= edge and x[order[s + i + 1]] != x[r]:
            right_n = n - left_n
            right_sq = sq - 2.0 * tot_left + left_sq
            temp = (left_n - left_sq / left_n) + (right_n - right_sq / right_n)
            if temp < best:
                best = temp
                where = i
    return total_ss, best, where


# ---------------------------------------------------------------------------------------------------------------
# split search: unordered categorical predictors
# ---------------------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _cat_anova(rows, s, e, xc, n_levels, y, grandmean, edge, countn, sums, cand_dir):
    """Order the present categories by mean y and scan (optimal); fill ``cand_dir``; return best."""
    for k in range(n_levels):
        countn[k] = 0.0
        sums[k] = 0.0
        cand_dir[k] = 0
    for i in range(s, e):
        r = rows[i]
        k = xc[r]
        countn[k] += 1.0
        sums[k] += y[r] - grandmean
    m = _count_positive(countn, n_levels)
    if m < 2:
        return 0.0
    present = np.empty(m, np.int64)
    means = np.empty(m, np.float64)
    j = 0
    for k in range(n_levels):
        if countn[k] > 0:
            present[j] = k
            means[j] = sums[k] / countn[k]
            j += 1
    order = _stable_order(means)
    n = e - s
    left_n = 0.0
    left_sum = 0.0
    best = 0.0
    best_t = -1
    for t in range(m - 1):
        k = present[order[t]]
        left_n += countn[k]
        left_sum += sums[k]
        right_n = n - left_n
        if left_n >= edge and right_n >= edge:
            temp = left_sum * left_sum / left_n + left_sum * left_sum / right_n
            if temp > best:
                best = temp
                best_t = t
    if best_t >= 0:
        for t in range(m):
            cand_dir[present[order[t]]] = _LEFT if t <= best_t else _RIGHT
    return best


@numba.njit(cache=True)
def _scan_order_gini(order, m, present, ccnt, countn, tot, n_classes, n, edge, left, right):
    """Scan categories in ``order`` moving them left one at a time; return (best, number moved left)."""
    left_sq = 0.0
    right_sq = 0.0
    for c in range(n_classes):
        left[c] = 0.0
        right[c] = tot[c]
        right_sq += tot[c] * tot[c]
    left_n = 0.0
    best = np.inf
    best_t = -1
    for t in range(m - 1):
        k = present[order[t]]
        for c in range(n_classes):
            a = ccnt[k, c]
            if a > 0:
                left_sq += a * (2.0 * left[c] + a)
                left[c] += a
                right_sq += a * (a - 2.0 * right[c])
                right[c] -= a
        left_n += countn[k]
        right_n = n - left_n
        if left_n >= edge and right_n >= edge:
            temp = (left_n - left_sq / left_n) + (right_n - right_sq / right_n)
            if temp < best:
                best = temp
                best_t = t
    return best, best_t + 1


@numba.njit(cache=True)
def _first_pc_scores(present, m, ccnt, countn, tot, n_classes, n):
    """Projection of each category's class-proportion vector on the first (count-weighted) principal component."""
    z = np.empty((m, n_classes), np.float64)
    for i in range(m):
        k = present[i]
        weight = np.sqrt(countn[k])
        for c in range(n_classes):
            z[i, c] = weight * (ccnt[k, c] / countn[k] - tot[c] / n)
    gram = np.empty((m, m), np.float64)  # explicit loops: numba's matmul costs seconds of compile time
    for i in range(m):
        for j in range(i + 1):
            acc = 0.0
            for c in range(n_classes):
                acc += z[i, c] * z[j, c]
            gram[i, j] = acc
            gram[j, i] = acc
    v = np.empty(m, np.float64)
    for i in range(m):  # start from the row norms: non-negative, so not orthogonal to a dominant direction
        v[i] = np.sqrt(gram[i, i]) + 1e-12
    w = np.empty(m, np.float64)
    for _ in range(100):
        norm = 0.0
        for i in range(m):
            acc = 0.0
            for j in range(m):
                acc += gram[i, j] * v[j]
            w[i] = acc
            norm += acc * acc
        if norm == 0.0:
            break
        norm = np.sqrt(norm)
        for i in range(m):
            v[i] = w[i] / norm
    scores = np.empty(m, np.float64)
    for i in range(m):
        scores[i] = v[i] / np.sqrt(countn[present[i]])
    return scores


_LOW_BITS = 8  # exhaustive search: groupings are evaluated in blocks of 2^8 that differ in the low categories only


@numba.njit(cache=True, error_model="numpy")
def _gini_exhaustive(present, m, ccnt, countn, tot, n_classes, n, sq, edge, best):
    """rpart's exhaustive Gini search over the groupings of the first ``m - 1`` present categories.

    Groupings are visited in reflected Gray-code order (step ``t`` puts the set bits of ``t ^ (t >> 1)`` on the
    left), and a grouping replaces the best so far only when strictly better, as in rpart's ``graycode``.  Returns
    ``(best, code)``: the best value and the bit set of its left group, 0 when nothing beats ``best``.

    The class counts are whole numbers, so ``sum_c left[c]^2`` and ``sum_c right[c]^2`` are exact however they are
    summed (while ``n^2 < 2^53``): they are built from the Gram matrix of the categories' count vectors, and each
    grouping's value is the same expression of the same numbers as rpart's one-category-at-a-time update gives.
    The groupings are split into a high part, visited block by block in Gray-code order, and a low part of
    ``2^low`` groupings handled in subset order by array passes that the compiler vectorises: a pass without
    divisions screens the block, and only a block that may beat the best so far is evaluated exactly; its best is
    the first grouping, in the block's Gray-code order, that reaches its minimum.
    """
    bits = m - 1
    low = min(bits, _LOW_BITS)
    size = 1 << low
    work = np.empty(m * m + 2 * m + 6 * size, np.float64)
    gram = work[: m * m].reshape((m, m))
    dot_tot = work[m * m : m * m + m]
    s_high = work[m * m + m : m * m + 2 * m]
    base = m * m + 2 * m
    low_n = work[base : base + size]
    low_sq = work[base + size : base + 2 * size]
    low_tot = work[base + 2 * size : base + 3 * size]
    cross = work[base + 3 * size : base + 4 * size]
    value = work[base + 4 * size : base + 5 * size]
    partial = work[base + 5 * size : base + 6 * size]
    for i in range(m):
        ki = present[i]
        acc_t = 0.0
        for c in range(n_classes):
            acc_t += tot[c] * ccnt[ki, c]
        dot_tot[i] = acc_t
        for j in range(i + 1):
            kj = present[j]
            acc = 0.0
            for c in range(n_classes):
                acc += ccnt[ki, c] * ccnt[kj, c]
            gram[i, j] = acc
            gram[j, i] = acc
    # the low groupings in subset order (bit i of S: present[i] on the left), built by doubling
    low_n[0] = 0.0
    low_sq[0] = 0.0
    low_tot[0] = 0.0
    for j in range(low):
        half = 1 << j
        partial[0] = 0.0  # partial[S] = sum of gram[j, i] over i in S, for S below 2^j
        for i in range(j):
            gji = gram[j, i]
            for s in range(1 << i):
                partial[(1 << i) + s] = partial[s] + gji
        cj = countn[present[j]]
        gjj = gram[j, j]
        tj = dot_tot[j]
        for s in range(half):
            low_n[half + s] = low_n[s] + cj
            low_sq[half + s] = low_sq[s] + (2.0 * partial[s] + gjj)
            low_tot[half + s] = low_tot[s] + tj
    for i in range(m):
        s_high[i] = 0.0
    high_n = 0.0
    high_sq = 0.0
    high_tot = 0.0
    best_t = 0
    for q in range(1 << (bits - low)):
        if q > 0:
            b = low
            while not (q >> (b - low)) & 1:
                b += 1
            row = gram[b]
            if ((q ^ (q >> 1)) >> (b - low)) & 1:
                high_sq += 2.0 * s_high[b] + row[b]
                for i in range(m):
                    s_high[i] += row[i]
                high_n += countn[present[b]]
                high_tot += dot_tot[b]
            else:
                for i in range(m):
                    s_high[i] -= row[i]
                high_sq -= 2.0 * s_high[b] + row[b]
                high_n -= countn[present[b]]
                high_tot -= dot_tot[b]
        # cross[S] = (left counts of the high part) . (left counts of low grouping S)
        cross[0] = 0.0
        for j in range(low):
            half = 1 << j
            sj = s_high[j]
            for s in range(half):
                cross[half + s] = cross[s] + sj
        # screen the block without dividing: a grouping's value t = n - left_sq / left_n - right_sq / right_n (as
        # computed, within 8 eps n of the exact value) beats `best` only if left_sq right_n + right_sq left_n >
        # (n - best - slack) left_n right_n, with a slack far above every rounding error of either side
        bound = n - best - 1e-9 * n
        maybe = 0
        for s in range(size):
            left_n = high_n + low_n[s]
            left_sq = high_sq + 2.0 * cross[s] + low_sq[s]
            right_n = n - left_n
            right_sq = sq - 2.0 * (high_tot + low_tot[s]) + left_sq
            hit = left_sq * right_n + right_sq * left_n > bound * (left_n * right_n)
            maybe += hit & (left_n >= edge) & (right_n >= edge)
        if maybe == 0:
            continue
        better = 0
        for s in range(size):
            left_n = high_n + low_n[s]
            left_sq = high_sq + 2.0 * cross[s] + low_sq[s]
            right_n = n - left_n
            right_sq = sq - 2.0 * (high_tot + low_tot[s]) + left_sq
            temp = (left_n - left_sq / left_n) + (right_n - right_sq / right_n)
            temp = temp if left_n >= edge and right_n >= edge else np.inf
            value[s] = temp
            better += temp < best
        if q == 0:
            value[0] = np.inf  # the empty group (t = 0) is no candidate
        if better:
            # some grouping beats the best so far; rpart keeps the first that reaches the block's minimum, in the
            # block's Gray-code order (odd blocks run through the low groupings backwards: the reflected code)
            lowest = best
            for j in range(size):
                r = size - 1 - j if q & 1 else j
                if value[r ^ (r >> 1)] < lowest:
                    lowest = value[r ^ (r >> 1)]
                    best_t = q * size + j
            best = lowest
    return best, best_t ^ (best_t >> 1)


@numba.njit(cache=True)
def _cat_gini(
    rows, s, e, xc, n_levels, y, n_classes, edge, exhaustive_budget, countn, ccnt, tot, left, right, cand_dir
):
    """Best grouping of a categorical predictor for a class y; fill ``cand_dir``; return (total_ss, best)."""
    for k in range(n_levels):
        countn[k] = 0.0
        cand_dir[k] = 0
        for c in range(n_classes):
            ccnt[k, c] = 0.0
    for i in range(s, e):
        r = rows[i]
        k = xc[r]
        countn[k] += 1.0
        ccnt[k, y[r]] += 1.0
    n = e - s
    sq = 0.0
    for c in range(n_classes):
        sq += tot[c] * tot[c]
    total_ss = n - sq / n
    m = _count_positive(countn, n_levels)
    if m < 2:
        return total_ss, total_ss
    present = np.empty(m, np.int64)
    j = 0
    for k in range(n_levels):
        if countn[k] > 0:
            present[j] = k
            j += 1
    best = total_ss
    if n_classes > 2 and m <= 40 and (1 << (m - 1)) * n_classes <= exhaustive_budget:
        # rpart's exhaustive search over the groupings of the first m - 1 present categories, in Gray-code order
        best, code = _gini_exhaustive(present, m, ccnt, countn, tot, n_classes, n, sq, edge, best)
        if code > 0:
            for i in range(m):
                cand_dir[present[i]] = _LEFT if (code >> i) & 1 else _RIGHT
        return total_ss, best
    # orderings: rate of the first class (binary y: optimal), or for a multi-class y with many categories the best
    # of the orderings by each present class's proportion and by the first principal component
    best_order = np.arange(m)
    best_t = 0
    key = np.empty(m, np.float64)
    for c in range(n_classes + 1):
        if n_classes == 2:
            if c > 0:
                break
            for i in range(m):
                key[i] = ccnt[present[i], 0] / countn[present[i]]
        elif c < n_classes:
            if tot[c] == 0:
                continue
            for i in range(m):
                key[i] = ccnt[present[i], c] / countn[present[i]]
        else:
            key = _first_pc_scores(present, m, ccnt, countn, tot, n_classes, n)
        order = _stable_order(key)
        value, t_left = _scan_order_gini(order, m, present, ccnt, countn, tot, n_classes, n, edge, left, right)
        if value < best:
            best = value
            best_order = order
            best_t = t_left
    if best_t > 0:
        for t in range(m):
            cand_dir[present[best_order[t]]] = _LEFT if t < best_t else _RIGHT
    return total_ss, best


# ---------------------------------------------------------------------------------------------------------------
# tree growth (rpart's partition.c, iteratively)
# ---------------------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _grow(
    y_num,
    y_cls,
    n_classes,
    classification,
    xnum,
    sidx,
    xcat,
    ncat,
    var_kind,
    var_pos,
    minbucket,
    minsplit,
    cp,
    max_depth,
    exhaustive_budget,
):
    n = y_num.shape[0] if not classification else y_cls.shape[0]
    n_vars = var_kind.shape[0]
    max_nodes = 2 * max(n // max(minbucket, 1), 1) + 3
    l_max = 1
    for v in range(ncat.shape[0]):
        if ncat[v] > l_max:
            l_max = ncat[v]

    start = np.zeros(max_nodes, np.int64)
    end = np.zeros(max_nodes, np.int64)
    depth = np.zeros(max_nodes, np.int64)
    left = np.full(max_nodes, -1, np.int64)
    right = np.full(max_nodes, -1, np.int64)
    split_var = np.full(max_nodes, -1, np.int64)
    threshold = np.zeros(max_nodes, np.float64)
    cat_dir = np.zeros((max_nodes, l_max), np.int8)
    risk = np.zeros(max_nodes, np.float64)
    complexity = np.zeros(max_nodes, np.float64)
    ret_nsplit = np.zeros(max_nodes, np.int64)
    ret_risk = np.zeros(max_nodes, np.float64)
    stage = np.zeros(max_nodes, np.int8)

    rows = np.arange(n)
    goes_left = np.zeros(n, np.bool_)
    buffer = np.empty(n, np.int64)
    counts = np.zeros(max(n_classes, 1), np.float64)
    cls_left = np.zeros(max(n_classes, 1), np.float64)
    cls_right = np.zeros(max(n_classes, 1), np.float64)
    countn = np.zeros(l_max, np.float64)
    sums = np.zeros(l_max, np.float64)
    ccnt = np.zeros((l_max, max(n_classes, 1)), np.float64)
    cand_dir = np.zeros(l_max, np.int8)
    best_dir = np.zeros(l_max, np.int8)

    iscale = 0.0
    alpha = 0.0
    n_nodes = 1
    start[0] = 0
    end[0] = n
    stack = np.empty(max_nodes, np.int64)
    top = 0
    stack[0] = 0

    while top >= 0:
        node = stack[top]
        s = start[node]
        e = end[node]
        if stage[node] == 0:
            # ---- entry: risk, stopping rules, best split
            nn = e - s
            grandmean = 0.0
            if classification:
                for c in range(n_classes):
                    counts[c] = 0.0
                for i in range(s, e):
                    counts[y_cls[rows[i]]] += 1.0
                mx = 0.0
                for c in range(n_classes):
                    if counts[c] > mx:
                        mx = counts[c]
                risk[node] = nn - mx
            else:
                tot = 0.0
                for i in range(s, e):
                    tot += y_num[rows[i]]
                grandmean = tot / nn
                ss = 0.0
                for i in range(s, e):
                    d = y_num[rows[i]] - grandmean
                    ss += d * d
                risk[node] = ss
            if node == 0:
                complexity[0] = risk[0]
                alpha = cp * risk[0]
                tempcp = risk[0]
            else:
                tempcp = min(risk[node], complexity[node])
            if nn < minsplit or tempcp <= alpha or depth[node] >= max_depth:
                complexity[node] = alpha
                ret_nsplit[node] = 0
                ret_risk[node] = risk[node]
                top -= 1
                continue

            best_improve = -1.0
            best_v = -1
            best_thr = 0.0
            for v in range(n_vars):
                improve = 0.0
                thr = 0.0
                if var_kind[v] == _NUMERIC:
                    p = var_pos[v]
                    order = sidx[p]
                    x = xnum[p]
                    if x[order[s]] == x[order[e - 1]]:
                        continue
                    if classification:
                        total_ss, best, where = _scan_numeric_gini(
                            order, s, e, x, y_cls, counts, n_classes, minbucket, cls_left
                        )
                        improve = total_ss - best
                    else:
                        best, where = _scan_numeric_anova(order, s, e, x, y_num, grandmean, minbucket)
                        improve = best / risk[node]
                    if where >= 0:
                        thr = 0.5 * (x[order[s + where]] + x[order[s + where + 1]])
                else:
                    p = var_pos[v]
                    if classification:
                        total_ss, best = _cat_gini(
                            rows, s, e, xcat[p], ncat[p], y_cls, n_classes, minbucket, exhaustive_budget,
                            countn, ccnt, counts, cls_left, cls_right, cand_dir,
                        )  # fmt: skip
                        improve = total_ss - best
                    else:
                        best = _cat_anova(
                            rows, s, e, xcat[p], ncat[p], y_num, grandmean, minbucket, countn, sums, cand_dir
                        )
                        improve = best / risk[node]
                if improve > iscale:
                    iscale = improve
                if improve > iscale * 1e-10 and improve > best_improve:
                    best_improve = improve
                    best_v = v
                    best_thr = thr
                    if var_kind[v] == _CATEGORICAL:
                        for k in range(ncat[var_pos[v]]):
                            best_dir[k] = cand_dir[k]
            if best_v < 0:
                complexity[node] = alpha
                ret_nsplit[node] = 0
                ret_risk[node] = risk[node]
                top -= 1
                continue

            # ---- split: mark rows, then stable-partition the row list and every presorted numeric order
            p = var_pos[best_v]
            nleft = 0
            if var_kind[best_v] == _NUMERIC:
                x = xnum[p]
                for i in range(s, e):
                    r = rows[i]
                    goes_left[r] = x[r] < best_thr
                    nleft += goes_left[r]
            else:
                xc = xcat[p]
                for i in range(s, e):
                    r = rows[i]
                    goes_left[r] = best_dir[xc[r]] == _LEFT
                    nleft += goes_left[r]
                for k in range(ncat[p]):
                    cat_dir[node, k] = best_dir[k]
            for arr_i in range(sidx.shape[0] + 1):
                arr = rows if arr_i == sidx.shape[0] else sidx[arr_i]
                a = s
                b = 0
                for i in range(s, e):
                    # branch-free: the side a row goes to is unpredictable; arr[a] (a <= i) was read already
                    r = arr[i]
                    g = int(goes_left[r])
                    arr[a] = r
                    buffer[b] = r
                    a += g
                    b += 1 - g
                for i in range(b):
                    arr[a + i] = buffer[i]
            split_var[node] = best_v
            threshold[node] = best_thr
            lc = n_nodes
            rc = n_nodes + 1
            n_nodes += 2
            left[node] = lc
            right[node] = rc
            start[lc] = s
            end[lc] = s + nleft
            start[rc] = s + nleft
            end[rc] = e
            depth[lc] = depth[node] + 1
            depth[rc] = depth[node] + 1
            complexity[lc] = tempcp - alpha
            stage[node] = 1
            top += 1
            stack[top] = lc
        elif stage[node] == 1:
            # ---- left subtree done: bound the right child's complexity
            lc = left[node]
            tempcp = (risk[node] - ret_risk[lc]) / (ret_nsplit[lc] + 1)
            tempcp2 = risk[node] - risk[lc]
            if tempcp < tempcp2:
                tempcp = tempcp2
            if tempcp > complexity[node]:
                tempcp = complexity[node]
            rc = right[node]
            complexity[rc] = tempcp - alpha
            stage[node] = 2
            top += 1
            stack[top] = rc
        else:
            # ---- both subtrees done: my complexity, with rpart's "who collapses first" rule
            lc = left[node]
            rc = right[node]
            left_risk = ret_risk[lc]
            left_split = ret_nsplit[lc]
            right_risk = ret_risk[rc]
            right_split = ret_nsplit[rc]
            tempcp = (risk[node] - (left_risk + right_risk)) / (left_split + right_split + 1)
            if complexity[rc] > complexity[lc]:
                if tempcp > complexity[lc]:
                    left_risk = risk[lc]
                    left_split = 0
                    tempcp = (risk[node] - (left_risk + right_risk)) / (left_split + right_split + 1)
                    if tempcp > complexity[rc]:
                        right_risk = risk[rc]
                        right_split = 0
            elif tempcp > complexity[rc]:
                right_split = 0
                right_risk = risk[rc]
                tempcp = (risk[node] - (left_risk + right_risk)) / (left_split + right_split + 1)
                if tempcp > complexity[lc]:
                    left_risk = risk[lc]
                    left_split = 0
            complexity[node] = (risk[node] - (left_risk + right_risk)) / (left_split + right_split + 1)
            if complexity[node] <= alpha:
                left[node] = -1
                right[node] = -1
                split_var[node] = -1
                ret_nsplit[node] = 0
                ret_risk[node] = risk[node]
            else:
                ret_nsplit[node] = left_split + right_split + 1
                ret_risk[node] = left_risk + right_risk
            top -= 1

    return (
        left[:n_nodes].copy(),
        right[:n_nodes].copy(),
        split_var[:n_nodes].copy(),
        threshold[:n_nodes].copy(),
        cat_dir[:n_nodes].copy(),
        start[:n_nodes].copy(),
        end[:n_nodes].copy(),
        rows,
        risk[:n_nodes].copy(),
    )


@numba.njit(cache=True)
def _apply(left, right, split_var, threshold, cat_dir, start, end, var_kind, var_pos, xnum, xcat, u_walk):
    """Leaf of each row; a category unseen at a node sends the row on at random (proportional to the counts)."""
    # each node's split kind (-1: a leaf) and the row of its predictor, looked up once rather than per row and level
    n_nodes = left.shape[0]
    node_kind = np.full(n_nodes, -1, np.int64)
    node_pos = np.zeros(n_nodes, np.int64)
    for k in range(n_nodes):
        if left[k] >= 0:
            node_kind[k] = var_kind[split_var[k]]
            node_pos[k] = var_pos[split_var[k]]
    m = u_walk.shape[0]
    out = np.empty(m, np.int64)
    for i in range(m):
        node = 0
        u = u_walk[i]
        kind = node_kind[0]
        while kind >= 0:
            p = node_pos[node]
            if kind == _NUMERIC:
                go_left = xnum[p, i] < threshold[node]
            else:
                d = cat_dir[node, xcat[p, i]]
                if d == 0:
                    lc = left[node]
                    rc = right[node]
                    n_l = end[lc] - start[lc]
                    p_left = n_l / (n_l + end[rc] - start[rc])
                    # reuse one uniform: conditionally on the branch taken, the rescaled u is uniform again
                    go_left = u < p_left
                    u = u / p_left if go_left else (u - p_left) / (1.0 - p_left)
                    u = min(max(u, 0.0), np.nextafter(1.0, 0.0))
                else:
                    go_left = d == _LEFT
            node = left[node] if go_left else right[node]
            kind = node_kind[node]
        out[i] = node
    return out


@numba.njit(cache=True)
def _sample_donors(rows, start, end, leaves, u_donor):
    """``rows[start[k] + min(floor(u * size), size - 1)]`` for each leaf ``k`` (``size = end[k] - start[k]``)."""
    out = np.empty(leaves.shape[0], np.int64)
    for i in range(leaves.shape[0]):
        k = leaves[i]
        size = end[k] - start[k]
        out[i] = rows[start[k] + min(np.int64(u_donor[i] * size), size - 1)]  # the float64 product, truncated
    return out


@numba.njit(cache=True)
def _apply_and_sample(
    left, right, split_var, threshold, cat_dir, start, end, rows, var_kind, var_pos, xnum, xcat, u_walk, u_donor
):
    """A donor row for each synthetic row: :func:`_apply`, then :func:`_sample_donors` (one call from Python)."""
    leaves = _apply(left, right, split_var, threshold, cat_dir, start, end, var_kind, var_pos, xnum, xcat, u_walk)
    return _sample_donors(rows, start, end, leaves, u_donor)


# ---------------------------------------------------------------------------------------------------------------
# Python front end
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CartTree:
    """A grown tree: node arrays (index 0 is the root) and the training rows of every node.

    ``rows[start[k]:end[k]]`` are the training rows that reached node ``k``; a leaf has ``left[k] == -1``.
    ``split_var[k]`` indexes the predictors in the order given to :func:`fit_cart`.
    """

    left: NDArray[np.int64]
    right: NDArray[np.int64]
    split_var: NDArray[np.int64]
    threshold: NDArray[np.float64]
    cat_dir: NDArray[np.int8]
    start: NDArray[np.int64]
    end: NDArray[np.int64]
    rows: NDArray[np.int64]
    risk: NDArray[np.float64]
    var_kind: NDArray[np.int8]
    var_pos: NDArray[np.int64]

    @property
    def leaves(self) -> NDArray[np.int64]:
        """Indices of the leaves reachable from the root."""
        reach = np.zeros(self.left.shape[0], dtype=bool)
        stack = [0]
        while stack:
            k = stack.pop()
            reach[k] = True
            if self.left[k] >= 0:
                stack.extend((int(self.left[k]), int(self.right[k])))
        return np.flatnonzero(reach & (self.left < 0))

    def leaf_rows(self, leaf: int) -> NDArray[np.int64]:
        """The training rows in node ``leaf``."""
        return self.rows[self.start[leaf] : self.end[leaf]]

    def apply(
        self, xnum: NDArray[np.float64], xcat: NDArray[np.int64], u_walk: NDArray[np.float64]
    ) -> NDArray[np.int64]:
        """Leaf index of each row of ``(xnum, xcat)`` (predictor-major arrays of shape ``(p_kind, m)``)."""
        leaves: NDArray[np.int64] = _apply(
            self.left, self.right, self.split_var, self.threshold, self.cat_dir, self.start, self.end,
            self.var_kind, self.var_pos, _arr(xnum, np.float64), _arr(xcat, np.int64), _arr(u_walk, np.float64),
        )  # fmt: skip
        return leaves

    def sample_donors(self, leaves: NDArray[np.int64], u_donor: NDArray[np.float64]) -> NDArray[np.int64]:
        """One training row drawn uniformly from each given leaf (``u_donor`` uniform on [0, 1))."""
        donors: NDArray[np.int64] = _sample_donors(
            self.rows, self.start, self.end, _arr(leaves, np.int64), _arr(u_donor, np.float64)
        )
        return donors

    def donors(
        self,
        xnum: NDArray[np.float64],
        xcat: NDArray[np.int64],
        u_walk: NDArray[np.float64],
        u_donor: NDArray[np.float64],
    ) -> NDArray[np.int64]:
        """``sample_donors(apply(xnum, xcat, u_walk), u_donor)`` in one call."""
        donors: NDArray[np.int64] = _apply_and_sample(
            self.left, self.right, self.split_var, self.threshold, self.cat_dir, self.start, self.end, self.rows,
            self.var_kind, self.var_pos, _arr(xnum, np.float64), _arr(xcat, np.int64), _arr(u_walk, np.float64),
            _arr(u_donor, np.float64),
        )  # fmt: skip
        return donors


def fit_cart(
    y: NDArray[np.float64] | NDArray[np.int64],
    *,
    classification: bool,
    n_classes: int,
    xnum: NDArray[np.float64],
    sidx: NDArray[np.int64],
    xcat: NDArray[np.int64],
    ncat: NDArray[np.int64],
    var_kind: NDArray[np.int8],
    var_pos: NDArray[np.int64],
    minbucket: int,
    minsplit: int,
    cp: float,
    max_depth: int = MAX_DEPTH,
    exhaustive_budget: int = EXHAUSTIVE_BUDGET,
) -> CartTree:
    """Grow an rpart-like tree.

    Parameters
    ----------
    y : ndarray of shape (n,)
        float64 response (``classification=False``) or int64 class codes in ``[0, n_classes)``.
    xnum : ndarray of shape (p_num, n)
        Numeric predictors (float64), one row per predictor.
    sidx : ndarray of shape (p_num, n)
        ``sidx[j]`` sorts ``xnum[j]`` ascending (copied, then partitioned node by node).
    xcat : ndarray of shape (p_cat, n)
        Unordered categorical predictors as int64 codes in ``[0, ncat[j])``.
    var_kind, var_pos : ndarray of shape (p,)
        Predictor ``v`` is ``xnum[var_pos[v]]`` (kind 0) or ``xcat[var_pos[v]]`` (kind 1); ``v`` orders ties.
    """
    n = y.shape[0]
    if classification:
        y_cls, y_num = _arr(y, np.int64), np.zeros(0, np.float64)
    else:
        y_num, y_cls = _arr(y, np.float64), np.zeros(0, np.int64)
    if xnum.shape[0] == 0:
        xnum = np.zeros((0, n), np.float64)
        sidx = np.zeros((0, n), np.int64)
    if xcat.shape[0] == 0:
        xcat = np.zeros((0, n), np.int64)
    grown = _grow(
        y_num, y_cls, int(n_classes), bool(classification),
        _arr(xnum, np.float64), np.array(sidx, dtype=np.int64, order="C"), _arr(xcat, np.int64),
        _arr(ncat, np.int64), _arr(var_kind, np.int8), _arr(var_pos, np.int64),
        int(minbucket), int(minsplit), float(cp), int(max_depth), int(exhaustive_budget),
    )  # fmt: skip
    left, right, split_var, thresholds, cat_dir, start, end, rows, risk = grown
    return CartTree(
        left,
        right,
        split_var,
        thresholds,
        cat_dir,
        start,
        end,
        rows,
        risk,
        _arr(var_kind, np.int8),
        _arr(var_pos, np.int64),
    )


def _arr(a: NDArray[Any], dtype: type) -> NDArray[Any]:
    """C-contiguous, writeable (numba compiles one specialisation per layout and read-only flag), of ``dtype``."""
    if isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable:
        return a  # what np.require returns here, without its overhead (it is called a dozen times per tree)
    return np.require(a, dtype=dtype, requirements=("C", "W"))
