"""Sequential, anytime-valid audits: read the trials as they arrive and stop as soon as the claim is refuted.

An audit that is run until its bound looks bad (or good) and then stopped is not a fixed-sample test: checking a
binomial test after every trial and stopping at the first "refuted" inflates its error far above α.  This module
gives a test that may be checked after every trial and stopped at any moment, with its level kept: a nonnegative
supermartingale under the claim (an e-process, "testing by betting"), refuted when it reaches 1/α (Ville's
inequality).  The construction is the betting e-process of González, Dulce-Rubio, Ramdas and Ribero [1]_ (their
Section 3: a wealth process that multiplies, trial by trial, by 1 + λ_t × payoff, with a payoff whose conditional
mean under the null is at most 0), with two choices of ours, stated here because they are what makes it valid for
every estimator privgame has.

The null.  Each trial t of a one-run audit gives, for each estimator k, a lower bound L_{t,k} at confidence c = 1 − α
that, when the claim ε is true, exceeds ε with probability at most α whatever happened in the trials before it (the
trials run on independent seeds, so the past carries no information about trial t's mechanism noise, membership or
guesses).  The exceedance Y_{t,k} = 1{L_{t,k} > ε} (0 for a NaN bound) therefore has E[Y_{t,k} | past] ≤ α: the null
is "every exceedance rate is at most α", a composite null that holds for every mechanism satisfying its claim.

The payoff and the bets (our choice 1: bets on exceedances, not on raw outputs).  González et al. bet on a witness
function of the mechanism's outputs (an MMD witness learnt online); privgame already holds a valid level-α test in
every trial (each estimator's bound), so it bets on its outcome: payoff Y_{t,k} − α, whose conditional mean is ≤ 0
under the null, with bets λ ∈ [0, 1/α] (so that 1 + λ(Y − α) ≥ 1 − λα ≥ 0).  This makes the sequential audit valid
for every guaranteed bound — Steinke et al.'s, the f-DP and order-statistics audits with a matched family — without
a new statistic per mechanism (a "bound" that is not guaranteed, such as an unmatched family's, breaks the null and
is never bet on: :func:`privgame.games.sequential.bound_columns_of`); the price is that a trial contributes one bit
per estimator, not its whole score vector.

Our choice 2: a fixed mixture of bets instead of a learnt one.  Rather than choosing λ_t online (ONS or aGRAPA), the
wealth is the average of :data:`BETS` fixed bets λ_j = b_j/α, b_j from 5 % to 95 % of the largest allowed bet, and,
for several estimators, the average over them too:

    E_t = (1/K)(1/J) Σ_k Σ_j Π_{s ≤ t} (1 + (b_j/α)(Y_{s,k} − α)).

Each product is a nonnegative supermartingale with E_0 = 1 (its factor's conditional mean is 1 + λ(E[Y|past] − α) ≤ 1),
and an average of supermartingales for the same trials is one, so by Ville's inequality

    P(∃ t : E_t ≥ 1/α | claim true) ≤ α:

the claim is refuted at level α the first time E_t ≥ 1/α, and that verdict keeps its level at any stopping time —
after every trial, at a budget, when a person looks, or never.  A fixed mixture needs no tuning, is a deterministic
function of the trials in their order (same seed ⇒ same stopping trial, whatever the workers), and loses little: its
wealth is at least 1/(J K) of the best fixed bet's in hindsight.  When every trial's bound exceeds the claim, two
trials refute at α = 0.05 (the mixture's e-value is 9.4 after one such trial and 127 ≥ 20 after two), where a
fixed-sample binomial test must run all its n trials before it reads them.

Trials are read in their repetition order, from the first; the test stops at the first repetition whose e-value
reaches 1/α, or at the budget (the experiment's repetitions), or it waits where a trial is not finished yet.

References
----------
.. [1] T. González, M. Dulce-Rubio, A. Ramdas, M. Ribero. Sequentially Auditing Differential Privacy. NeurIPS 2025,
   arXiv:2509.07055.
.. [2] T. Kutta, M. Dunsche, Y. Wei, V. Zikas. Sequential Auditing for f-Differential Privacy. arXiv:2602.06518, 2026.
.. [3] G. Shafer. Testing by betting: a strategy for statistical and scientific communication. JRSS A, 2021.
.. [4] J. Ville. Étude critique de la notion de collectif. Gauthier-Villars, 1939.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import check_real

__all__ = ["BETS", "SequentialResult", "e_process", "sequential_test", "ville_threshold"]

#: The fixed bets of the mixture, as fractions of the largest bet 1/α that keeps the wealth nonnegative.
BETS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.95)


@dataclass(frozen=True, slots=True)
class SequentialResult:
    """What a sequential audit read and what it concluded.

    Attributes
    ----------
    trials : int
        The trials the test read: up to and including the one at which it stopped, else every trial it was given.
    stopped : bool
        Whether the e-value reached 1/α (the claim is refuted at level α).
    e_value : float
        The e-value after the last trial read (1.0 before any).
    e_values : ndarray
        The e-value after each trial read, in order.
    """

    trials: int
    stopped: bool
    e_value: float
    e_values: NDArray[np.float64]


def e_process(exceeded: ArrayLike, alpha: float) -> NDArray[np.float64]:
    """The e-value after each trial, from the trials' exceedance indicators (see the module notes).

    Parameters
    ----------
    exceeded : array_like of bool, shape (T,) or (T, K)
        Whether trial t's bound of estimator k exceeds the claim, in trial order (NaN counts as not exceeded).
    alpha : float
        The level, 1 − confidence, in (0, 1): each bound exceeds a true claim with probability at most α.

    Returns
    -------
    ndarray of shape (T,)
        E_1, …, E_T; under the null P(max_t E_t ≥ 1/α) ≤ α.

    Examples
    --------
    >>> e_process([True, True], 0.05).round(2)  # every trial above the claim: refuted after two (E ≥ 20)
    array([  9.41, 126.9 ])
    >>> e_process([False] * 3, 0.05).round(3)  # nothing above it: the wealth only shrinks
    array([0.557, 0.416, 0.341])
    """
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    y = np.asarray(exceeded)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise ValueError(f"exceeded must be a (trials,) or (trials, estimators) array, got shape {y.shape}.")
    y = np.nan_to_num(y.astype(float), nan=0.0) > 0.0  # a NaN bound is no exceedance (conservative)
    t, k = y.shape
    if t == 0:
        return np.zeros(0)
    if k == 0:
        raise ValueError("exceeded must have at least one estimator column, got none.")
    bets = np.asarray(BETS) / alpha  # (J,)
    # log wealth of each (estimator, bet) after each trial: cumulative sums of log(1 + λ (Y − α))
    factors = 1.0 + bets[None, None, :] * (y[:, :, None].astype(float) - alpha)  # (T, K, J)
    log_wealth = np.cumsum(np.log(factors), axis=0)
    top = log_wealth.max(axis=(1, 2), keepdims=True)
    return np.exp(top[:, 0, 0]) * np.exp(log_wealth - top).mean(axis=(1, 2))


def sequential_test(exceeded: ArrayLike, confidence: float) -> SequentialResult:
    """Read the trials' exceedances in order and stop at the first e-value ≥ 1/α (α = 1 − ``confidence``).

    >>> r = sequential_test([[True], [True], [True]], 0.95)
    >>> r.stopped, r.trials
    (True, 2)
    >>> sequential_test([False, True, False], 0.95).stopped
    False
    """
    confidence = check_real("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    alpha = 1.0 - confidence
    e = e_process(exceeded, alpha)
    # Ville's threshold 1/α, with a relative slack of 1e-12 so that a wealth exactly 1/α is not lost to rounding
    crossed = np.flatnonzero(e >= (1.0 / alpha) * (1.0 - 1e-12))
    if crossed.size:
        stop = int(crossed[0]) + 1
        return SequentialResult(stop, True, float(e[stop - 1]), e[:stop])
    return SequentialResult(int(e.size), False, float(e[-1]) if e.size else 1.0, e)


def ville_threshold(confidence: float) -> float:
    """1/α: the e-value at which a claim is refuted at ``confidence``."""
    return 1.0 / (1.0 - confidence) if 0.0 < confidence < 1.0 else math.nan
