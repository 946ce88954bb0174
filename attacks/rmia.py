"""RMIA's score (Zarifzadeh, Liu, Xiao, Shokri, ICML 2024): the target model's likelihood ratio against population
samples.

For a record x with label y a model θ gives the signal ``s(x, θ)``, the probability of the true label (here the
softmax at temperature 1: ``s = expit(φ)`` of the logit-scaled confidence φ of
:meth:`privgame.mechanisms.training.release.ModelRelease.confidence`).  Reference models estimate the probability of x
under the training distribution:

- **offline** (reference models that did not train on x): ``p(x) = (1 + a)/2 · p̄_OUT(x) + (1 − a)/2``, the paper's
  linear approximation of the mean of IN and OUT from the OUT mean alone (``offline_a`` = a in [0, 1]);
- **online**: ``p(x) = (p̄_IN(x) + p̄_OUT(x)) / 2``, the mean over as many IN as OUT reference models.

``p(z)`` of a population sample z is computed the same way.  With ``ratio(v) = s(v, θ_target) / p(v)``, the score
of x is the share of population samples z that x dominates, ``LR(x, z) = ratio(x) / ratio(z) > γ``:

    Score(x) = #{z ∈ Z, z ≠ x : ratio(x) / ratio(z) > γ} / #{z ∈ Z, z ≠ x}

(γ ≥ 1, so the pair (x, x), whose ratio is 1, never counts; it is left out of the denominator too).

Conventions checked against the paper's code (ML Privacy Meter, ``research/2024_rmia/main.py`` at commit
d3273416, ``aggregate_signals``; reference values computed once by running that code and pinned in
``tests/attacks/test_rmia.py``): the target is never a reference model; offline uses the OUT reference models
only, online IN and OUT alike; ``p(z)`` is ``p(x)``'s formula; the comparison is strict; no constant is added to
any denominator.  Where privgame differs: the paper's code averages with a 20 % trimmed mean (the same as the mean
with at most 4 reference models) and its configs use a Taylor soft-margin signal (temperature 2) with 18 augmented
queries voted; its ``x ∈ Z`` correction adds one pseudo-win to each non-member instead of removing the self-pair.
ML Privacy Meter's current library is offline only with γ = 1, and averages the largest OUT values for z
(``attacks.py``), biasing ``p(z)`` upward.

References
----------
.. [1] S. Zarifzadeh, P. Liu, X. Xiao, R. Shokri. Low-Cost High-Power Membership Inference Attacks. ICML 2024,
   arXiv:2312.03262.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privgame.analysis._checks import check_int, check_real, check_score_matrix
from privgame.attacks._base import LeaveOneOutAttack
from privgame.attacks.references import check_references, gather_references, models_needed, per_side

_TAG_POPULATION = 0x2A7E
#: the most population samples a score may compare against
MAX_POPULATION = 10**8  # the stream of the population samples' draw in the efficient evaluation

__all__ = [
    "RMIA",
    "FittedRMIA",
    "RMIAScores",
    "ReferenceModels",
    "leave_one_out_rmia",
    "reference_probability",
    "rmia_scores",
]


def _check_gamma(gamma: float) -> float:
    return check_real("gamma", gamma, low=1.0)


def _check_a(offline_a: float) -> float:
    return check_real("offline_a", offline_a, low=0.0, high=1.0)


def reference_probability(
    signals: ArrayLike, member: ArrayLike, *, online: bool, offline_a: float = 0.3
) -> NDArray[np.float64]:
    """``p(v)`` of each column from the reference models' signals.

    Parameters
    ----------
    signals : array-like of shape (K, n)
        Reference model k's probability of the true label of sample v, in [0, 1].
    member : array-like of bool, shape (K, n)
        Whether reference model k trained on sample v.
    online : bool
        ``(p̄_IN + p̄_OUT)/2``, or offline ``(1 + a)/2 · p̄_OUT + (1 − a)/2`` (IN models ignored).
    offline_a : float, default=0.3
        a in [0, 1] (the paper's CIFAR-10 setting).

    Returns
    -------
    ndarray of shape (n,)
        NaN where a needed side has no reference model.
    """
    values, mask = check_score_matrix(signals, member, min_models=1)
    a = _check_a(offline_a)
    _check_signals(values)
    n_out = (~mask).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(~mask, values, 0.0).sum(axis=0) / n_out
        if not online:
            return np.where(n_out > 0, (1.0 + a) / 2.0 * out + (1.0 - a) / 2.0, np.nan)
        n_in = mask.sum(axis=0)
        inside = np.where(mask, values, 0.0).sum(axis=0) / n_in
    return np.where((n_in > 0) & (n_out > 0), 0.5 * (inside + out), np.nan)


def _check_signals(values: NDArray[np.float64]) -> None:
    """Probabilities in [0, 1]: a forest's ``predict_proba`` gives exact zeros (φ = −∞, s = 0)."""
    if not np.all((values >= 0.0) & (values <= 1.0)):
        bad = values[~((values >= 0.0) & (values <= 1.0))].flat[0]
        raise ValueError(f"signals must be probabilities in [0, 1], got {float(bad)!r}.")


def _dominated(ratio_x: NDArray[np.float64], ratio_z_sorted: NDArray[np.float64], gamma: float) -> NDArray[np.int64]:
    """#{z : ratio_x / ratio_z > γ} for each x, from the population's sorted ratios (all positive)."""
    return np.searchsorted(ratio_z_sorted, ratio_x / gamma, side="left").astype(np.int64)


def rmia_scores(
    target_x: ArrayLike,
    target_z: ArrayLike,
    p_x: ArrayLike,
    p_z: ArrayLike,
    *,
    gamma: float = 2.0,
) -> NDArray[np.float64]:
    """RMIA's score of each x against a population Z that does not contain it.

    Parameters
    ----------
    target_x, target_z : array-like of shape (n_x,), (n_z,)
        The target model's signals on the records scored and on the population, in [0, 1] (a ratio of 0 dominates
        nothing; every positive ratio dominates a population sample whose ratio is 0).
    p_x, p_z : array-like of shape (n_x,), (n_z,)
        Their reference probabilities (:func:`reference_probability`), positive and finite.
    gamma : float, default=2.0
        γ ≥ 1 (the paper's configs: 2).

    Returns
    -------
    ndarray of shape (n_x,)
        ``#{z : ratio(x)/ratio(z) > γ} / n_z``, in [0, 1], higher = member.

    Examples
    --------
    Ratios 1.8 and 0.4 against a population's 1, 1, 1 and 0.2:

    >>> rmia_scores([0.9, 0.2], [0.5, 0.5, 0.5, 0.1], [0.5, 0.5], [0.5, 0.5, 0.5, 0.5], gamma=1.0).tolist()
    [1.0, 0.25]
    >>> rmia_scores([0.9, 0.2], [0.5, 0.5, 0.5, 0.1], [0.5, 0.5], [0.5, 0.5, 0.5, 0.5], gamma=2.0).tolist()
    [0.25, 0.0]
    """
    g = _check_gamma(gamma)
    arrays = [np.asarray(v, dtype=np.float64) for v in (target_x, target_z, p_x, p_z)]
    for name, v in zip(("target_x", "target_z", "p_x", "p_z"), arrays, strict=True):
        if v.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {v.shape}.")
    tx, tz, px, pz = arrays
    if tx.shape != px.shape or tz.shape != pz.shape:
        raise ValueError(
            f"target_x and p_x, target_z and p_z must match, got {tx.shape}, {px.shape}, {tz.shape}, {pz.shape}."
        )
    if tz.size == 0:
        raise ValueError("the population Z must not be empty.")
    _check_signals(np.concatenate([tx, tz]))
    if not np.all(np.isfinite(np.concatenate([px, pz])) & (np.concatenate([px, pz]) > 0.0)):
        raise ValueError("p_x and p_z must be positive and finite (a reference side without models gives NaN).")
    ratio_z = np.sort(tz / pz)
    return _dominated(tx / px, ratio_z, g) / tz.size


@dataclass(frozen=True, slots=True)
class RMIAScores:
    """The efficient evaluation's RMIA scores (M, N) and where they exist (``valid``: every needed side had a
    reference model and the population had another sample)."""

    scores: NDArray[np.float64]
    valid: NDArray[np.bool_]


def leave_one_out_rmia(
    confidence: ArrayLike,
    member: ArrayLike,
    *,
    online: bool = False,
    gamma: float = 2.0,
    offline_a: float = 0.3,
    references: int | None = None,
    population_size: int | None = None,
) -> RMIAScores:
    """RMIA in the efficient evaluation: model j, each in turn, is the target of the M − 1 others.

    ``confidence`` (M, N) holds model j's logit-scaled confidence φ on pool sample i and ``member`` (M, N) whether
    j trained on i, as for :func:`privgame.attacks.lira.leave_one_out_fits`.  For target j the reference models are the
    others (their IN/OUT counts at i leave j out), or with ``references = k`` each sample's first k of them
    (:mod:`privgame.attacks.references`); the population Z_j is the pool samples j did not train on (the paper's
    choice), or ``population_size`` of them drawn without replacement by a stream of their own
    (:func:`population_draw`), and each sample is scored against Z_j without itself.

    Returns
    -------
    RMIAScores
        Scores (M, N) in [0, 1] (0 where not ``valid``: a needed reference side without models, p = 0, or no other
        population sample).
    """
    phi, mask = check_score_matrix(confidence, member, min_models=2)
    g, a = _check_gamma(gamma), _check_a(offline_a)
    s = special.expit(phi)
    _check_signals(s)
    if references is None:
        own_in, own_out = mask.astype(np.float64), (~mask).astype(np.float64)
        n_in = mask.sum(axis=0)[None, :] - own_in
        n_out = (~mask).sum(axis=0)[None, :] - own_out
        sum_in = np.where(mask, s, 0.0).sum(axis=0)[None, :] - own_in * s
        sum_out = np.where(~mask, s, 0.0).sum(axis=0)[None, :] - own_out * s
    else:
        k = per_side(check_int("references", references, low=1), online)
        n_in, n_out, sum_in, sum_out = (np.zeros_like(s) for _ in range(4))
        for j in range(s.shape[0]):
            for side, n_side, sum_side in ((False, n_out, sum_out), (True, n_in, sum_in))[: 2 if online else 1]:
                values, present = gather_references(s, mask, j, k, side=side)
                n_side[j], sum_side[j] = present.sum(axis=0), np.where(present, values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_out = sum_out / n_out
        p = 0.5 * (sum_in / n_in + mean_out) if online else (1.0 + a) / 2.0 * mean_out + (1.0 - a) / 2.0
    valid = (n_out > 0) & ((n_in > 0) if online else True)
    valid &= np.where(valid, p, 0.0) > 0.0  # online, every reference may give an exact 0 (a forest's probability)
    ratio = np.where(valid, s / np.where(valid, p, 1.0), 0.0)
    scores = np.zeros_like(s)
    size_z = None if population_size is None else check_int("population_size", population_size, low=1)
    for j in range(s.shape[0]):
        population = ~mask[j] & valid[j]
        if size_z is not None:
            population = population_draw(population, size_z, np.random.default_rng([_TAG_POPULATION, j]))
        ratio_z = np.sort(ratio[j, population])
        count = _dominated(ratio[j], ratio_z, g)  # γ ≥ 1: a sample never dominates itself
        size = population.sum() - population  # Z_j without the sample itself
        valid[j] &= size > 0
        scores[j] = np.where(valid[j], count / np.maximum(size, 1), 0.0)
    return RMIAScores(scores=scores, valid=np.asarray(valid, dtype=bool))


def population_draw(population: NDArray[np.bool_], size: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """``size`` of the ``population`` samples (a mask), drawn without replacement; all of them when there are no
    more.  The efficient evaluation draws target model j's with the stream ``[_TAG_POPULATION, j]``: the same
    samples for every attack played on the same models."""
    chosen = np.flatnonzero(population)
    if chosen.size <= size:
        return population
    out = np.zeros_like(population)
    out[rng.choice(chosen, size=size, replace=False)] = True
    return out


# --------------------------------------------------------------------------------------------- the attack


@dataclass(frozen=True)
class ReferenceModels:
    """What RMIA's adversary knows (``needs = "models"``): records, K reference models' confidences on them and
    which model trained on which.

    Attributes
    ----------
    x : ndarray of shape (n, d), float32
        The records, encoded (:mod:`privgame.data.features`): the targets a fitted RMIA scores (by index) and the
        population Z.
    y : ndarray of shape (n,), int64
        Their labels.
    confidence : ndarray of shape (K, n)
        Reference model k's logit-scaled confidence on record i.
    member : ndarray of shape (K, n), bool
        Whether reference model k trained on record i.
    population : ndarray of shape (n,), bool
        The records serving as population samples z (the released model's non-members, when the adversary knows
        them; otherwise records drawn from the population).
    """

    x: NDArray[np.float32]
    y: NDArray[np.int64]
    confidence: NDArray[np.float64]
    member: NDArray[np.bool_]
    population: NDArray[np.bool_]

    def __post_init__(self) -> None:
        values, _ = check_score_matrix(self.confidence, self.member, min_models=1)
        n = values.shape[1]
        x, y = np.asarray(self.x), np.asarray(self.y)
        population = np.asarray(self.population)
        if x.shape[0] != n or y.shape != (n,) or population.shape != (n,) or population.dtype != bool:
            raise ValueError(
                f"x, y and population (bool) must describe the n = {n} records of confidence, got x {x.shape}, "
                f"y {y.shape}, population {population.shape} {population.dtype}."
            )


@dataclass(frozen=True, slots=True)
class FittedRMIA:
    """RMIA fitted on its reference models: scores a released model on the knowledge's records."""

    x: NDArray[np.float32]
    y: NDArray[np.int64]
    p: NDArray[np.float64]
    population: NDArray[np.bool_]
    gamma: float
    decision: float

    @property
    def threshold(self) -> float:
        return self.decision

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        """Each target's share of the OTHER population records it dominates under ``release`` (0 where ``p`` is NaN:
        a reference side without models)."""
        from privgame.mechanisms.training.release import ModelRelease

        if not isinstance(release, ModelRelease):
            raise TypeError(f"RMIA scores a trained model (a ModelRelease), got {type(release).__name__}.")
        index = np.asarray(targets, dtype=np.intp)
        s = special.expit(np.asarray(release.confidence(self.x, self.y), dtype=np.float64))
        usable = np.isfinite(self.p) & (np.nan_to_num(self.p) > 0.0)
        ratio = np.where(usable, s / np.where(usable, self.p, 1.0), 0.0)
        population = self.population & usable
        ratio_z = np.sort(ratio[population])
        count = _dominated(ratio[index], ratio_z, self.gamma)
        size = population.sum() - population[index]
        ok = usable[index] & (size > 0)
        return np.where(ok, count / np.maximum(size, 1), 0.0).astype(np.float64)


@dataclass(frozen=True, slots=True)
class RMIA(LeaveOneOutAttack):
    """RMIA (Zarifzadeh et al. 2024): the target model's likelihood ratio against population samples.

    Parameters
    ----------
    online : bool, default=False
        p(x) from IN and OUT reference models alike, or offline from the OUT ones with ``offline_a``.
    gamma : float, default=2.0
        γ ≥ 1: x dominates z when its likelihood ratio against z exceeds γ (the paper's configs: 2).
    offline_a : float, default=0.3
        a in [0, 1], the offline approximation's slope (the paper's CIFAR-10 value; 0.6 for CIFAR-100, 0.2 for
        Purchase-100).
    references : int or None, default=None
        Reference models per sample in the efficient evaluation: offline its first k OUT models, online its first
        k/2 IN and k/2 OUT (k even), in cyclic model order after the target (:mod:`privgame.attacks.references`);
        ``None``: every other model.
    population_size : int or None, default=None
        How many population samples z each score compares against: a draw without replacement from the target
        model's non-members (efficient evaluation) or the knowledge's population (fitted); ``None``: all.

    Notes
    -----
    Threat model: the adversary of the efficient evaluation (``games/lira.py``): the other M − 1 models of the
    pool, with their training sets, are its reference models, and the target model's non-members in the pool
    are its population Z (the paper's protocol).  Fitted directly (:meth:`fit`) it takes a
    :class:`ReferenceModels`.  Cost: no model beyond LiRA's; the scores of a target model are one sort of its
    population's ratios and one binary search per sample.

    References
    ----------
    .. [1] S. Zarifzadeh, P. Liu, X. Xiao, R. Shokri. Low-Cost High-Power Membership Inference Attacks. ICML 2024.
    """

    name: ClassVar[str] = "rmia"
    accepts: ClassVar[frozenset[str]] = frozenset({"model"})
    needs: ClassVar[str] = "models"

    online: bool = False
    gamma: float = 2.0
    offline_a: float = 0.3
    references: int | None = None
    population_size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.online, bool):
            raise TypeError(f"online must be true or false, got {self.online!r}.")
        object.__setattr__(self, "gamma", _check_gamma(self.gamma))
        object.__setattr__(self, "offline_a", _check_a(self.offline_a))
        least = 2 if self.online else 1
        k = check_references(self.references, online=self.online, least=least, attack="rmia")
        object.__setattr__(self, "references", k)
        if self.population_size is not None:
            size = check_int("population_size", self.population_size, low=1, high=MAX_POPULATION)
            object.__setattr__(self, "population_size", size)

    def min_models(self) -> int:
        """4 (two pairs of complementary models give every sample an IN and an OUT reference beside the target), or
        what ``references`` per sample need (:func:`privgame.attacks.references.models_needed`)."""
        return models_needed(self.references, self.online, 4)

    def efficient_scores(
        self, confidence: NDArray[np.float64], member: NDArray[np.bool_], *, fpc: float
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_], float]:
        """:func:`leave_one_out_rmia`; RMIA fits no variance, so the finite-population factor is not applied (1.0)."""
        got = leave_one_out_rmia(
            confidence,
            member,
            online=self.online,
            gamma=self.gamma,
            offline_a=self.offline_a,
            references=self.references,
            population_size=self.population_size,
        )
        return got.scores, got.valid, 1.0

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedRMIA:
        """p(v) of every record from the reference models; the decision threshold is the best accuracy on the
        reference models' own leave-one-out scores."""
        from privgame.attacks.lira import _best_threshold

        if not isinstance(knowledge, ReferenceModels):
            raise TypeError(
                f"attack 'rmia' needs reference models (privgame.attacks.rmia.ReferenceModels), "
                f"got {type(knowledge).__name__}."
            )
        s = special.expit(np.asarray(knowledge.confidence, dtype=np.float64))
        p = reference_probability(s, knowledge.member, online=self.online, offline_a=self.offline_a)
        decision = 0.5
        if knowledge.confidence.shape[0] >= 2:
            own = leave_one_out_rmia(
                knowledge.confidence, knowledge.member, online=self.online, gamma=self.gamma, offline_a=self.offline_a
            )
            if own.valid.any():
                decision = _best_threshold(own.scores[own.valid], np.asarray(knowledge.member)[own.valid])
        population = np.asarray(knowledge.population, dtype=bool)
        if self.population_size is not None:
            population = population_draw(population, self.population_size, rng)
        return FittedRMIA(
            x=np.asarray(knowledge.x),
            y=np.asarray(knowledge.y),
            p=p,
            population=population,
            gamma=self.gamma,
            decision=decision,
        )
