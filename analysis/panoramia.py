"""PANORAMIA (Kazmi et al., NeurIPS 2024): a privacy measurement with generated non-members and no retraining.

The auditor knows some of a trained model's training data.  A generator G, trained on part of it, supplies
non-members; each test index shows a real member (s_i = 1) or a generated point (s_i = 0) on a fair coin flip.  Two
classifiers score the test examples ("higher = member", i.e. real rather than generated): the *baseline*, which sees
the input only, and the *MIA*, which also sees the target model's loss on it.  If G is c-close to the data
distribution (``P_G(x) >= e^{-c} P_D(x)`` for all x), the baseline's member guesses satisfy the one-run pure-DP tail
of Steinke et al. with ``e^c`` in place of ``e^ε``, and if moreover the target model is ε-DP, the MIA's satisfy it
with ``e^{c+ε}``.  This module turns the two classifiers' test scores into the lower bounds ``c_lb`` and
``{c+ε}_lb`` and the measurement ``ε̃ = max(0, {c+ε}_lb − c_lb)``.

ε̃ is a MEASUREMENT, NOT a lower bound on the model's ε: it is one only when ``c_lb`` is tight (the baseline is as
good as any detector of generated data can be).  ``c_lb`` and ``{c+ε}_lb`` are genuine lower bounds, on c and on
c + ε, under c-closeness.

References
----------
.. [1] M. Kazmi, H. Lautraite, A. Akbari, Q. Tang, M. Soroco, T. Wang, S. Gambs, M. Lécuyer. PANORAMIA: Privacy
   Auditing of Machine Learning Models without Retraining. NeurIPS 2024. arXiv:2402.09477 (Definitions 2-3,
   Propositions 1-2, Corollaries 1-2, §4.2).
.. [2] T. Steinke, M. Nasr, M. Jagielski. Privacy Auditing with One (1) Training Run. NeurIPS 2023.
   arXiv:2305.08846 (Theorem 5.2).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import check_confidence, check_membership, check_scores
from privgame.analysis.one_run import _epsilon_lower_bound
from privgame.analysis.thresholds import (
    Bonferroni,
    Explicit,
    ThresholdChoice,
    ThresholdStrategy,
    check_strategy,
    quantile_thresholds,
)

__all__ = [
    "Curve",
    "PanoramiaResult",
    "measure",
    "members_only_bound",
    "members_only_bounds",
    "members_only_counts",
    "plot_curves",
]

# Candidates of the diagnostic curves when the strategy itself is not a Bonferroni grid (Explicit, Split).
_CURVE_CANDIDATES = 100

_METHOD = "PANORAMIA (Kazmi et al. 2024, arXiv:2402.09477): members-only one-run pure-DP bounds, union bound"


def _thresholds_array(candidates: Sequence[Any] | NDArray[np.float64]) -> NDArray[np.float64]:
    t = np.asarray(candidates, dtype=np.float64)
    if t.ndim != 1:
        raise ValueError(
            "PANORAMIA guesses members only: each candidate threshold must be a single number, "
            f"got candidates of shape {t.shape}."
        )
    if np.any(np.isnan(t)):
        raise ValueError(f"candidate thresholds must not be NaN, got {t.tolist()!r}.")
    return t


def members_only_counts(
    in_scores: ArrayLike, out_scores: ArrayLike, candidates: Sequence[Any] | NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Guesses and correct guesses when "member" is guessed at every score ≥ t, for each candidate t.

    Parameters
    ----------
    in_scores : array-like of shape (n_in,)
        Scores of the members (real examples).
    out_scores : array-like of shape (n_out,)
        Scores of the non-members (generated examples).
    candidates : sequence of float of length G
        Thresholds; ``±inf`` are allowed.

    Returns
    -------
    r : ndarray of shape (G,), dtype int64
        Number of scores ≥ t (the guesses made).
    v : ndarray of shape (G,), dtype int64
        Number of members among them (the correct guesses).

    Notes
    -----
    One sort of each class and a binary search per candidate: O(n log n + G log n).
    """
    t = _thresholds_array(candidates)
    ins = np.sort(np.asarray(in_scores, dtype=np.float64))
    outs = np.sort(np.asarray(out_scores, dtype=np.float64))
    v = ins.size - np.searchsorted(ins, t, side="left")
    r = v + (outs.size - np.searchsorted(outs, t, side="left"))
    return r.astype(np.int64), v.astype(np.int64)


def _bounds_from_counts(m: int, r: NDArray[np.int64], v: NDArray[np.int64], beta: float) -> NDArray[np.float64]:
    out = np.zeros(r.shape[0], dtype=np.float64)
    # Precision <= 1/2 can never reject ε = 0 at β < 1/2, so the root-find is spent only where it can matter.
    todo = np.flatnonzero((r > 0) & (2 * v > r)) if beta < 0.5 else np.flatnonzero(r > 0)
    with warnings.catch_warnings():
        # Small-r candidates warn one by one that no positive bound is possible; measure() warns once instead.
        warnings.simplefilter("ignore", UserWarning)
        for j in todo:
            out[j] = _epsilon_lower_bound(m, int(r[j]), int(v[j]), 0.0, beta)
    return out


def members_only_bounds(
    in_scores: ArrayLike, out_scores: ArrayLike, candidates: Sequence[Any], beta: float
) -> NDArray[np.float64]:
    """One-run pure-DP lower bound (δ = 0) of the members-only guessing rule at each candidate threshold.

    This is the ``bounds`` function PANORAMIA hands to a :class:`~privgame.analysis.thresholds.ThresholdStrategy`.

    Parameters
    ----------
    in_scores : array-like of shape (n_in,)
        Scores of the members.
    out_scores : array-like of shape (n_out,)
        Scores of the non-members.
    candidates : sequence of float of length G
        Thresholds t: "member" is guessed for every score ≥ t, and nothing else is guessed.
    beta : float
        The significance of EACH test (a strategy passes β / G here when it tries G candidates).

    Returns
    -------
    ndarray of shape (G,)
        ``epsilon_lower_bound(m, r, v, delta=0, confidence=1 - beta)`` at each candidate, with
        ``m = n_in + n_out``, r the number of scores ≥ t and v the members among them; 0 where r = 0.

    Notes
    -----
    Formal guarantee: for one candidate fixed without the labels, if the scores' dependence on membership is that
    of an e^κ-bounded guess (P[s_i = 1 | everything shown before] ≤ e^κ / (1 + e^κ)), the bound exceeds κ with
    probability ≤ ``beta`` (Theorem 5.2 of [2]_, applied as in Propositions 1-2 of [1]_).  κ is c for the
    baseline and c + ε for the MIA.

    References
    ----------
    .. [1] Kazmi et al. PANORAMIA. NeurIPS 2024, arXiv:2402.09477.
    .. [2] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846.
    """
    r, v = members_only_counts(in_scores, out_scores, candidates)
    m = int(np.size(in_scores) + np.size(out_scores))
    return _bounds_from_counts(max(m, 1), r, v, float(beta))


def _readonly(values: Any, dtype: type) -> NDArray[Any]:
    arr: NDArray[Any] = np.array(values, dtype=dtype, copy=True)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class Curve:
    """One classifier's members-only guesses and bounds at each label-free candidate threshold.

    Attributes
    ----------
    threshold : ndarray of shape (G,)
        Candidate thresholds, increasing (quantiles of the classifier's pooled test scores).
    n_guesses : ndarray of shape (G,), dtype int64
        r: scores ≥ threshold.
    n_correct : ndarray of shape (G,), dtype int64
        v: members among them.
    recall : ndarray of shape (G,)
        ``v / n_members``; non-increasing in the threshold.
    precision : ndarray of shape (G,)
        ``v / r`` (NaN where r = 0).
    bound : ndarray of shape (G,)
        The one-run pure-DP lower bound at each threshold, each at significance ``beta_per_test``: a bound on c
        for the baseline, on c + ε for the MIA.
    beta_per_test : float
        The Bonferroni-corrected significance of each point, (1 − confidence) / 2 / G.
    """

    threshold: NDArray[np.float64]
    n_guesses: NDArray[np.int64]
    n_correct: NDArray[np.int64]
    recall: NDArray[np.float64]
    precision: NDArray[np.float64]
    bound: NDArray[np.float64]
    beta_per_test: float

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "beta_per_test":
                dtype = np.int64 if f.name.startswith("n_") else np.float64
                object.__setattr__(self, f.name, _readonly(getattr(self, f.name), dtype))
        lengths = {getattr(self, f.name).shape for f in fields(self) if f.name != "beta_per_test"}
        if len(lengths) != 1 or len(next(iter(lengths))) != 1:
            raise ValueError(f"Curve arrays must be 1-d and of one length, got shapes {sorted(lengths)}.")

    def __len__(self) -> int:
        return int(self.threshold.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Curve):
            return NotImplemented
        return self.beta_per_test == other.beta_per_test and all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name), equal_nan=True)
            for f in fields(self)
            if f.name != "beta_per_test"
        )

    __hash__ = None  # type: ignore[assignment]  # holds arrays, like numpy arrays themselves

    @classmethod
    def from_counts(
        cls,
        threshold: ArrayLike,
        r: NDArray[np.int64],
        v: NDArray[np.int64],
        n_members: int,
        bound: ArrayLike,
        beta_per_test: float,
    ) -> Curve:
        """Build a curve from the counts r, v at each threshold."""
        with np.errstate(invalid="ignore", divide="ignore"):
            precision = np.where(r > 0, v / np.maximum(r, 1), np.nan)
        return cls(
            threshold=np.asarray(threshold, dtype=np.float64),
            n_guesses=r,
            n_correct=v,
            recall=v / n_members,
            precision=precision,
            bound=np.asarray(bound, dtype=np.float64),
            beta_per_test=float(beta_per_test),
        )


@dataclass(frozen=True, slots=True)
class PanoramiaResult:
    """Result of a PANORAMIA measurement.

    Attributes
    ----------
    c_lb : float
        Lower bound on the generator's closeness c, from the baseline; valid at significance (1 − confidence)/2.
    c_plus_eps_lb : float
        Lower bound on c + ε, from the MIA; valid at significance (1 − confidence)/2.
    eps_tilde : float
        ``max(0, c_plus_eps_lb − c_lb)``.  A MEASUREMENT, NOT a lower bound on ε: "PANORAMIA could not reject
        c-closeness of G, and if that claim is tight, the model is not ε̃-DP" (§4.2 of [1]_).
    baseline_threshold, mia_threshold : float
        The thresholds at which ``c_lb`` and ``c_plus_eps_lb`` were attained.
    baseline_beta_per_test, mia_beta_per_test : float
        Significance of each test: (1 − confidence) / 2 divided by the number of thresholds tried.
    baseline_n_tests, mia_n_tests : int
        The number of thresholds tried by the strategy for each classifier.
    n : int
        Number of test examples.
    n_members : int
        Number of real (member) test examples.
    confidence : float
        Confidence of the pair of bounds jointly (each holds at 1 − (1 − confidence)/2).
    thresholds : ThresholdStrategy
        The threshold strategy used.
    strategy : str
        The strategy's description of what it did.
    baseline_curve, mia_curve : Curve
        Recall, precision and bound at each label-free candidate threshold of each classifier (the Bonferroni
        grid; for an ``Explicit`` or ``Split`` strategy, a diagnostic grid of 100 quantiles).
    method : str
        Name of the estimator.

    References
    ----------
    .. [1] Kazmi et al. PANORAMIA. NeurIPS 2024, arXiv:2402.09477.
    """

    c_lb: float
    c_plus_eps_lb: float
    eps_tilde: float
    baseline_threshold: float
    mia_threshold: float
    baseline_beta_per_test: float
    mia_beta_per_test: float
    baseline_n_tests: int
    mia_n_tests: int
    n: int
    n_members: int
    confidence: float
    thresholds: ThresholdStrategy
    strategy: str
    baseline_curve: Curve = field(repr=False)
    mia_curve: Curve = field(repr=False)
    method: str = _METHOD

    @property
    def epsilon(self) -> float:
        """Alias of :attr:`eps_tilde`, so that every estimator has ``.epsilon``.

        This is a MEASUREMENT, NOT a differential-privacy lower bound on ε: it is one only if ``c_lb`` is tight.
        """
        return self.eps_tilde

    def plot(self, path: str | Path) -> Path:
        """Draw the ε-vs-recall and precision-vs-recall curves of both classifiers; see :func:`plot_curves`."""
        return plot_curves(self, path)


class _Recorder:
    """A ``bounds`` function for the strategies that remembers what it was asked and answered."""

    def __init__(self) -> None:
        self.calls: list[tuple[NDArray[np.float64], int, NDArray[np.int64], NDArray[np.int64], float, NDArray[Any]]]
        self.calls = []

    def __call__(
        self,
        in_scores: NDArray[np.float64],
        out_scores: NDArray[np.float64],
        candidates: Sequence[Any],
        beta: float,
    ) -> NDArray[np.float64]:
        t = _thresholds_array(candidates)
        r, v = members_only_counts(in_scores, out_scores, t)
        m = max(1, int(in_scores.shape[0] + out_scores.shape[0]))
        values = _bounds_from_counts(m, r, v, float(beta))
        self.calls.append((t, int(in_scores.shape[0]), r, v, float(beta), values))
        return values


def _measure_one(
    name: str, scores: NDArray[np.float64], is_member: NDArray[np.bool_], strategy: ThresholdStrategy, beta: float
) -> tuple[ThresholdChoice, Curve]:
    in_scores, out_scores = scores[is_member], scores[~is_member]
    recorder = _Recorder()
    choice = strategy.choose(in_scores, out_scores, beta=beta, candidates=quantile_thresholds, bounds=recorder)
    if isinstance(strategy, Bonferroni) and len(recorder.calls) == 1:
        # The strategy's own grid, evaluated on all the data at β / G: reuse it rather than redo the root-finds.
        t, n_in, r, v, beta_per_test, values = recorder.calls[0]
    else:
        grid = strategy if isinstance(strategy, Bonferroni) else Bonferroni(_CURVE_CANDIDATES)
        diagnostic = _Recorder()
        grid.choose(in_scores, out_scores, beta=beta, candidates=quantile_thresholds, bounds=diagnostic)
        t, n_in, r, v, beta_per_test, values = diagnostic.calls[-1]
    n = scores.shape[0]
    if n * math.log(2.0) <= -math.log(choice.beta_per_test):
        warnings.warn(
            f"no positive {name} bound is possible: even {n} correct member guesses out of {n} would not reject "
            f"at the per-test significance {choice.beta_per_test:.3g}; use more test examples, fewer candidate "
            "thresholds or a lower confidence.",
            UserWarning,
            stacklevel=3,
        )
    return choice, Curve.from_counts(t, r, v, n_in, values, beta_per_test)


def _check_strategy(thresholds: Any) -> ThresholdStrategy:
    strategy = check_strategy(thresholds)
    if isinstance(strategy, Explicit) and isinstance(strategy.threshold, tuple):
        raise ValueError(
            "thresholds must be a one-sided threshold for PANORAMIA (it guesses members only: score >= t), "
            f"got {strategy!r}."
        )
    return strategy


def measure(
    baseline_scores: ArrayLike,
    mia_scores: ArrayLike,
    is_member: ArrayLike,
    *,
    confidence: float = 0.95,
    thresholds: ThresholdStrategy = Bonferroni(100),  # noqa: B008  # frozen, immutable default
) -> PanoramiaResult:
    """PANORAMIA's privacy measurement from the test scores of the baseline and the MIA.

    Parameters
    ----------
    baseline_scores : array-like of shape (n,)
        The baseline classifier's scores on the test examples (input only, never the target model), higher =
        "member" (real rather than generated).  Must be finite.
    mia_scores : array-like of shape (n,)
        The MIA's scores on the same test examples, in the same order (input plus target-model features).
    is_member : array-like of shape (n,)
        True for a real member, False for a generated non-member; both must occur.
    confidence : float, default=0.95
        Joint confidence ``1 − β`` of the two bounds, in (0, 1).  Each bound is computed at significance β/2.
    thresholds : ThresholdStrategy, default=Bonferroni(100)
        How the threshold of each classifier is chosen (:mod:`privgame.analysis.thresholds`).  ``Bonferroni(G)`` tries G
        quantiles of each classifier's pooled test scores (label-free) at β/2/G each; ``Explicit(t)`` one fixed
        threshold at β/2; ``Split`` chooses on one part of the test set and bounds on the rest at β/2.

    Returns
    -------
    PanoramiaResult
        ``c_lb``, ``c_plus_eps_lb``, ``eps_tilde`` (= ``epsilon``), the chosen thresholds, per-test significances,
        and each classifier's recall / precision / bound curve.

    Raises
    ------
    TypeError
        If ``thresholds`` is not a ThresholdStrategy, a score array does not hold real numbers, or ``confidence`` is
        not a real number.
    ValueError
        If a score is NaN or infinite, the arrays are not 1-d, are empty or differ in length, ``is_member`` is not
        0/1 or lacks members or non-members, ``confidence`` is outside (0, 1), or an explicit threshold is a pair.

    Warns
    -----
    UserWarning
        When the test set is too small for any positive bound at the per-test significance.

    Notes
    -----
    For each threshold t on a classifier's score the auditor guesses "member" for every score ≥ t and makes no
    non-member guess (c-closeness is one-sided, so only member guesses are tested); r is the number of guesses, v
    the members among them, and the bound is Steinke et al.'s one-run pure-DP lower bound (δ = 0) from (n, r, v).

    Formal guarantee (Corollaries 1-2 of [1]_): if the test examples come from the game of Definition 2 (a fair
    coin per index chooses a real member or a generated point, independently of everything else) and G is
    c-close to the data distribution, then ``P[c_lb > c] ≤ β/2``; if moreover the target model is the output of an
    ε-DP training mechanism, ``P[c_plus_eps_lb > c + ε] ≤ β/2``; both hold together with probability ≥ 1 − β.  The
    Bonferroni candidates are quantiles of the pooled scores, fixed without the labels, and each is tested at
    β/2/G.  **ε̃ = max(0, {c+ε}_lb − c_lb) is a measurement, NOT a DP lower bound**: a difference of a lower bound
    and a lower bound bounds nothing; it approaches a lower bound on ε only when the baseline is strong enough that
    ``c_lb`` is close to the true c.  The released reference code reports ``c_lb − {c+ε}_lb`` and drops δ; this
    implementation follows the paper instead.

    References
    ----------
    .. [1] M. Kazmi et al. PANORAMIA: Privacy Auditing of Machine Learning Models without Retraining. NeurIPS 2024.
       arXiv:2402.09477 (Definition 2-3, Propositions 1-2, Corollaries 1-2, §4.2).
    .. [2] T. Steinke, M. Nasr, M. Jagielski. Privacy Auditing with One (1) Training Run. NeurIPS 2023.
       arXiv:2305.08846 (Theorem 5.2).

    Examples
    --------
    A baseline that cannot tell generated points from real ones, and an MIA that separates them perfectly
    (1000 members, 1000 generated points; the two distinct scores give two candidate thresholds):

    >>> member = np.arange(2000) % 2 == 0
    >>> result = measure(np.full(2000, 0.5), member.astype(float), member)
    >>> result.c_lb, round(result.c_plus_eps_lb, 2), result.mia_n_tests
    (0.0, 5.43, 2)
    >>> result.epsilon == result.eps_tilde == max(0.0, result.c_plus_eps_lb - result.c_lb)
    True
    """
    strategy = _check_strategy(thresholds)
    conf = check_confidence(confidence)
    base = check_scores("baseline_scores", baseline_scores)
    mia = check_scores("mia_scores", mia_scores)
    if base.shape[0] == 0:
        raise ValueError(f"baseline_scores must be non-empty, got an array of shape {base.shape}.")
    if mia.shape[0] != base.shape[0]:
        raise ValueError(
            f"mia_scores must have the length of baseline_scores ({base.shape[0]}), got length {mia.shape[0]}."
        )
    member = check_membership("is_member", is_member, base.shape[0])
    n = int(base.shape[0])
    n_members = int(np.count_nonzero(member))
    if not 0 < n_members < n:
        raise ValueError(
            f"is_member must contain both members (True) and non-members (False), got {n_members} members out of {n}."
        )
    half_beta = (1.0 - conf) / 2.0  # union bound over the two tests (Corollary 1)
    base_choice, base_curve = _measure_one("c", base, member, strategy, half_beta)
    mia_choice, mia_curve = _measure_one("c+ε", mia, member, strategy, half_beta)
    c_lb, c_eps_lb = float(base_choice.bound), float(mia_choice.bound)
    return PanoramiaResult(
        c_lb=c_lb,
        c_plus_eps_lb=c_eps_lb,
        eps_tilde=max(0.0, c_eps_lb - c_lb),
        baseline_threshold=float(base_choice.threshold),
        mia_threshold=float(mia_choice.threshold),
        baseline_beta_per_test=float(base_choice.beta_per_test),
        mia_beta_per_test=float(mia_choice.beta_per_test),
        baseline_n_tests=int(base_choice.n_tests),
        mia_n_tests=int(mia_choice.n_tests),
        n=n,
        n_members=n_members,
        confidence=conf,
        thresholds=strategy,
        strategy=base_choice.strategy,
        baseline_curve=base_curve,
        mia_curve=mia_curve,
    )


def members_only_bound(
    scores: ArrayLike,
    is_member: ArrayLike,
    *,
    confidence: float = 0.95,
    thresholds: ThresholdStrategy = Bonferroni(100),  # noqa: B008  # frozen, immutable default
) -> float:
    """The one-run pure-DP lower bound of one classifier's member guesses at the full significance 1 − confidence.

    PANORAMIA's "RM;RN" comparison (real members against real non-members, the same learned MIA, c = 0), and any
    single members-only test: the guesses are "member" for every score ≥ t, t chosen by ``thresholds`` without the
    labels; the bound is Steinke et al.'s (δ = 0) from (n, r, v) at the chosen threshold.

    Raises
    ------
    ValueError
        As :func:`measure` for one score array.
    """
    strategy = _check_strategy(thresholds)
    conf = check_confidence(confidence)
    values = check_scores("scores", scores)
    member = check_membership("is_member", is_member, values.shape[0])
    n_members = int(np.count_nonzero(member))
    if not 0 < n_members < values.shape[0]:
        raise ValueError(
            f"is_member must contain both members (True) and non-members (False), got {n_members} members out of "
            f"{values.shape[0]}."
        )
    choice, _ = _measure_one("ε", values, member, strategy, 1.0 - conf)
    return float(choice.bound)


_PLOT_FORMATS = (".png", ".pdf")


def plot_curves(result: PanoramiaResult, path: str | Path, *, title: str | None = None) -> Path:
    """Draw ε-vs-recall and precision-vs-recall for the baseline and the MIA (Figures 3-4 of Kazmi et al.).

    Parameters
    ----------
    result : PanoramiaResult
        The measurement to draw.
    path : str or Path
        Output file; ``.png`` or ``.pdf`` (the format follows the suffix).
    title : str or None, default=None
        A title above both panels (e.g. the experiment and the grid point).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    TypeError
        If ``result`` is not a PanoramiaResult.
    ValueError
        If the suffix is neither ``.png`` nor ``.pdf``.

    Notes
    -----
    Left: the bound at each threshold against its recall (c for the baseline, c + ε for the MIA), dashed at the
    reported maxima.  Right: precision against recall, dashed at the precision ``e^b / (1 + e^b)`` that the reported
    bound b implies.  Drawn on a bare ``matplotlib.figure.Figure`` (Agg), so pyplot's global state is untouched.
    """
    if not isinstance(result, PanoramiaResult):
        raise TypeError(f"result must be a PanoramiaResult, got {type(result).__name__}.")
    out = Path(path)
    if out.suffix.lower() not in _PLOT_FORMATS:
        raise ValueError(f"path must end in one of {', '.join(_PLOT_FORMATS)}, got {str(path)!r}.")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax_eps, ax_prec = fig.subplots(1, 2)
    if title:
        fig.suptitle(title)
    series = (
        ("baseline (c)", result.baseline_curve, result.c_lb, "tab:blue"),
        ("MIA (c + ε)", result.mia_curve, result.c_plus_eps_lb, "tab:red"),
    )
    for label, curve, best, colour in series:
        ax_eps.plot(curve.recall, curve.bound, marker=".", color=colour, label=f"{label}: max {best:.3g}")
        ax_eps.axhline(best, color=colour, linestyle="--", linewidth=0.8)
        ax_prec.plot(curve.recall, curve.precision, marker=".", color=colour, label=label)
        ax_prec.axhline(1.0 / (1.0 + math.exp(-best)), color=colour, linestyle="--", linewidth=0.8)
    ax_eps.set_xlabel("recall")
    ax_eps.set_ylabel("lower bound at each threshold")
    ax_eps.set_title(f"ε̃ = {result.eps_tilde:.3g} (a measurement, not a DP lower bound)")
    ax_prec.set_xlabel("recall")
    ax_prec.set_ylabel("precision")
    ax_prec.set_title(f"n = {result.n}, confidence {result.confidence:g}")
    for ax in (ax_eps, ax_prec):
        ax.set_xlim(0.0, 1.0)
        ax.legend(loc="best", fontsize="small")
    from privgame.core.outputs import atomic_output

    with atomic_output(out, what="the figure") as tmp:  # a kill leaves the old figure or the new one
        fig.savefig(tmp)
    return out
