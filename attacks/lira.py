"""The likelihood-ratio attack (LiRA) of Carlini et al. (2022): per-example Gaussians of the shadow models' scores.

For a target x with label y, a model's *score* is its logit-scaled confidence φ = log p_y − log Σ_{y'≠y} p_{y'}
(:meth:`privgame.mechanisms.training.release.ModelRelease.confidence`).  Shadow models trained with x (IN) and without
it (OUT) give two sets of scores; LiRA fits a Gaussian to each, N(μ_in, σ²_in) and N(μ_out, σ²_out), with the means
estimated by medians, as the reference code does, and scores the target model's φ:

- **online** (both sides): log N(φ; μ_in, σ_in) − log N(φ; μ_out, σ_out), the log likelihood ratio;
- **offline**, ``offline_test = "one-sided"`` (the paper's test, default): (φ − μ_out)/σ_out, large when φ is
  improbably HIGH for a non-member (its p-value is 1 − Φ of it);
- **offline**, ``offline_test = "density"`` (the reference code's score): −log N(φ; μ_out, σ_out), large when φ is
  improbable on EITHER side of μ_out — a target scored far below the OUT models also looks like a member.

Variance: per example (σ of each target's own IN and OUT scores), or ``fix_variance``: one σ for the IN side and
one for the OUT side, each pooled from its own side's scores (the pooled within-target variance Σ n_i σ_i² / Σ n_i
over the targets with two scores or more on that side; the reference's ``np.std`` of all scores at once would add
the spread of the targets' means).  Two
other tools got this wrong: Privacy Meter used the IN σ for both sides (copied from the reference plotting
code), and LeakPro scored offline LiRA with a log-CDF where the reference uses the density (SPEC §8).

Finite-population correction (SPEC §5): shadow training sets of size N drawn without replacement from a pool of
N₊ records overlap, so the spread of their outcomes is underestimated by FPC = 1 − N/N₊; ``fpc = True`` divides
the variances by it (σ² / FPC).

How many shadows a target needs: a per-example σ needs at least two scores on its side (σ of one score is
undefined); a fixed σ needs one.  A target with fewer is *not scored*: it is marked in the ``valid`` mask with a
warning, and never enters a table as NaN.

Standard deviations are population ones (``ddof = 0``, as the reference's ``np.std``), floored at 1e-6 so a
side whose shadows all scored the same (a deterministic trainer on the same data) gives a finite, very sharp
Gaussian instead of a division by zero.

References
----------
.. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis, F. Tramèr. Membership Inference Attacks From First
   Principles. IEEE S&P 2022, arXiv:2112.03570.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_int, check_real, check_score_matrix
from privgame.attacks._base import LeaveOneOutAttack
from privgame.attacks.knowledge import Knowledge, require_knowledge
from privgame.attacks.references import check_references, gather_references, models_needed, per_side

__all__ = [
    "OFFLINE_TESTS",
    "FittedLiRA",
    "GaussianFits",
    "LiRA",
    "fit_gaussians",
    "leave_one_out_fits",
    "lira_scores",
    "reference_fits",
]

OFFLINE_TESTS = ("one-sided", "density")
SIGMA_FLOOR = 1e-6
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class GaussianFits:
    """Per-target Gaussian parameters of the shadows' scores (arrays broadcastable to the scores scored).

    Attributes
    ----------
    mu_in, sigma_in, mu_out, sigma_out : ndarray of float64
    n_in, n_out : ndarray of int
        The shadow scores each fit used.
    valid : ndarray of bool
        Where the attack could fit what it needs (see the module docstring).
    """

    mu_in: NDArray[np.float64]
    sigma_in: NDArray[np.float64]
    mu_out: NDArray[np.float64]
    sigma_out: NDArray[np.float64]
    n_in: NDArray[np.int64]
    n_out: NDArray[np.int64]
    valid: NDArray[np.bool_]


def _log_normal(x: NDArray[np.float64], mu: NDArray[np.float64], sigma: NDArray[np.float64]) -> NDArray[np.float64]:
    z = (x - mu) / sigma
    return -0.5 * z * z - np.log(sigma) - _LOG_SQRT_2PI


def lira_scores(
    observed: NDArray[np.float64], fits: GaussianFits, *, online: bool = True, offline_test: str = "one-sided"
) -> NDArray[np.float64]:
    """LiRA's score of the observed confidences under ``fits`` (higher = member); 0 where ``fits.valid`` is False.

    Parameters
    ----------
    observed : ndarray of float64
        The target model's logit-scaled confidences, broadcastable with the fits.
    fits : GaussianFits
    online : bool, default=True
        The likelihood ratio of the two Gaussians, or an offline test against the OUT Gaussian only.
    offline_test : {"one-sided", "density"}, default="one-sided"
        The offline score: the paper's one-sided statistic (φ − μ_out)/σ_out, or the reference code's −log density.

    Returns
    -------
    ndarray of float64
    """
    if offline_test not in OFFLINE_TESTS:
        raise ValueError(f"offline_test must be one of {', '.join(OFFLINE_TESTS)}, got {offline_test!r}.")
    obs = np.asarray(observed, dtype=np.float64)
    if online:
        score = _log_normal(obs, fits.mu_in, fits.sigma_in) - _log_normal(obs, fits.mu_out, fits.sigma_out)
    elif offline_test == "one-sided":
        score = (obs - fits.mu_out) / fits.sigma_out
    else:
        score = -_log_normal(obs, fits.mu_out, fits.sigma_out)
    return np.where(fits.valid, score, 0.0)


def _side_stats(
    values: NDArray[np.float64], mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Per-column median, population variance and count of ``values`` (S, n) where ``mask``."""
    count = mask.sum(axis=0)
    masked = np.where(mask, values, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: the count says so
        median = np.nanmedian(masked, axis=0)
        var = np.nanvar(masked, axis=0)
    return np.nan_to_num(median), np.nan_to_num(var), count.astype(np.int64)


def _finish(
    mu_in: NDArray[np.float64],
    var_in: NDArray[np.float64],
    n_in: NDArray[np.int64],
    mu_out: NDArray[np.float64],
    var_out: NDArray[np.float64],
    n_out: NDArray[np.int64],
    *,
    online: bool,
    fix_variance: bool,
    fpc: float,
    axis: int | None,
) -> GaussianFits:
    need = 1 if fix_variance else 2
    valid = (n_out >= need) & ((n_in >= need) if online else True)
    if fix_variance:
        # one σ per side: the pooled within-target variance Σ n_i σ_i² / Σ n_i of the targets whose side has two
        # scores or more (a single score's variance is 0, not an estimate)
        def pooled(var: NDArray[np.float64], n: NDArray[np.int64]) -> NDArray[np.float64]:
            weight = np.where(n >= 2, n, 0).astype(np.float64)
            keep = axis is not None
            total = np.sum(weight * var, axis=axis, keepdims=keep) / np.maximum(
                np.sum(weight, axis=axis, keepdims=keep), 1
            )
            return np.broadcast_to(total, var.shape)

        var_in, var_out = pooled(var_in, n_in), pooled(var_out, n_out)
    sigma_in = np.maximum(np.sqrt(var_in / fpc), SIGMA_FLOOR)
    sigma_out = np.maximum(np.sqrt(var_out / fpc), SIGMA_FLOOR)
    return GaussianFits(mu_in, sigma_in, mu_out, sigma_out, n_in, n_out, np.asarray(valid, dtype=bool))


def fit_gaussians(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    *,
    online: bool = True,
    fix_variance: bool = False,
    fpc: float = 1.0,
) -> GaussianFits:
    """Per-target Gaussians from S shadow models' scores ``scores`` (S, n) and who trained on whom ``member`` (S, n).

    ``fpc`` (in (0, 1]) divides the variances (the finite-population correction; 1: none).
    """
    values, mask = check_score_matrix(scores, member, min_models=1)
    fpc = check_real("fpc", fpc, low=0.0, high=1.0, low_open=True)
    mu_in, var_in, n_in = _side_stats(values, mask)
    mu_out, var_out, n_out = _side_stats(values, ~mask)
    return _finish(
        mu_in, var_in, n_in, mu_out, var_out, n_out, online=online, fix_variance=fix_variance, fpc=fpc, axis=None
    )


def _loo_median(sorted_values: NDArray[np.float64], count: NDArray[np.int64], rank: NDArray[np.int64]) -> Any:
    """Median of each column's ``count`` sorted values without the one at ``rank`` (per pair; arrays broadcast)."""
    m = count - 1  # values left

    def at(i: NDArray[np.int64]) -> NDArray[np.float64]:  # the i-th remaining value: skip the removed rank
        j = np.where(i < rank, i, i + 1)
        return np.take_along_axis(sorted_values, np.clip(j, 0, sorted_values.shape[0] - 1), axis=0)

    lo, hi = at((m - 1) // 2), at(m // 2)
    return np.where(m >= 1, 0.5 * (lo + hi), 0.0)


def leave_one_out_fits(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    *,
    online: bool = True,
    fix_variance: bool = False,
    fpc: float = 1.0,
) -> GaussianFits:
    """Efficient LiRA's fits: for each (model j, sample x), the Gaussians of the OTHER models' scores at x.

    ``scores`` and ``member`` are (M, N): model j's confidence on sample x and whether j trained on x.  Each pair's
    fit leaves model j out (it is the target; the other M − 1 are its shadows), computed for all pairs at once:
    a leave-one-out median is read from each column's sorted values, variances from sums and sums of squares.

    Returns
    -------
    GaussianFits
        Arrays of shape (M, N).
    """
    values, mask = check_score_matrix(scores, member, min_models=1)
    fpc = check_real("fpc", fpc, low=0.0, high=1.0, low_open=True)
    sides = {}
    for side, own in (("in", mask), ("out", ~mask)):
        keyed = np.where(own, values, np.inf)  # the side's values first, in increasing order
        order = np.argsort(keyed, axis=0, kind="stable")
        sorted_values = np.take_along_axis(keyed, order, axis=0)
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(values.shape[0])[:, None].repeat(values.shape[1], 1), axis=0)
        count = own.sum(axis=0)[None, :]
        full_median = _loo_median(sorted_values, count + 1, np.full_like(rank, values.shape[0] + 1))
        loo = _loo_median(sorted_values, count, rank)
        n = np.where(own, count - 1, count)
        mu = np.where(own, loo, full_median)
        total = np.where(own, values, 0.0).sum(axis=0)[None, :]
        squares = np.where(own, values * values, 0.0).sum(axis=0)[None, :]
        s1 = np.where(own, total - values, total)
        s2 = np.where(own, squares - values * values, squares)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(n >= 1, np.maximum(s2 / np.maximum(n, 1) - (s1 / np.maximum(n, 1)) ** 2, 0.0), 0.0)
        sides[side] = (np.where(n >= 1, mu, 0.0), var, n.astype(np.int64))
    mu_in, var_in, n_in = sides["in"]
    mu_out, var_out, n_out = sides["out"]
    return _finish(
        mu_in, var_in, n_in, mu_out, var_out, n_out, online=online, fix_variance=fix_variance, fpc=fpc, axis=1
    )


def reference_fits(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    references: int,
    *,
    online: bool = True,
    fix_variance: bool = False,
    fpc: float = 1.0,
) -> GaussianFits:
    """:func:`leave_one_out_fits` with ``references`` shadow models per sample instead of all M − 1 others: each
    sample's first k OUT (offline) or k/2 IN and k/2 OUT (online) after the target model
    (:mod:`privgame.attacks.references`).

    Returns
    -------
    GaussianFits
        Arrays of shape (M, N); a fixed σ is pooled over each target model's samples, as in
        :func:`leave_one_out_fits`.
    """
    values, mask = check_score_matrix(scores, member, min_models=1)
    fpc = check_real("fpc", fpc, low=0.0, high=1.0, low_open=True)
    count = per_side(check_int("references", references, low=1), online)
    parts: list[GaussianFits] = []
    empty = np.zeros(values.shape[1])
    for j in range(values.shape[0]):
        out = _side_stats(*gather_references(values, mask, j, count, side=False))
        side_in = _side_stats(*gather_references(values, mask, j, count, side=True)) if online else None
        mu_in, var_in, n_in = side_in if side_in is not None else (empty, empty, np.zeros_like(out[2]))
        parts.append(_finish(mu_in, var_in, n_in, *out, online=online, fix_variance=fix_variance, fpc=fpc, axis=None))
    return GaussianFits(*(np.stack([getattr(f, name) for f in parts]) for name in GaussianFits.__dataclass_fields__))


# --------------------------------------------------------------------------------------------- the attack


@dataclass(frozen=True, slots=True)
class FittedLiRA:
    """LiRA fitted on its shadow models for given targets: scores a released model's confidence on them."""

    target_x: NDArray[np.float32]
    target_y: NDArray[np.int64]
    fits: GaussianFits
    online: bool
    offline_test: str
    decision: float

    @property
    def threshold(self) -> float:
        return self.decision

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        from privgame.mechanisms.training.release import ModelRelease

        if not isinstance(release, ModelRelease):
            raise TypeError(f"LiRA scores a trained model (a ModelRelease), got {type(release).__name__}.")
        index = np.asarray(targets, dtype=np.intp)
        observed = release.confidence(self.target_x[index], self.target_y[index])
        fits = GaussianFits(*(np.asarray(getattr(self.fits, f))[index] for f in GaussianFits.__dataclass_fields__))
        return lira_scores(observed, fits, online=self.online, offline_test=self.offline_test)


def _best_threshold(scores: NDArray[np.float64], labels: NDArray[np.bool_]) -> float:
    """The threshold (a score value) with the best accuracy on the adversary's own shadows."""
    order = np.argsort(-scores, kind="stable")
    s, b = scores[order], labels[order]
    # guessing "member" for the first k scores: correct = members among them + non-members after them
    correct = np.concatenate([[np.sum(~b)], np.sum(~b) + np.cumsum(np.where(b, 1, -1))])
    k = int(np.argmax(correct))
    return float(s[k - 1]) if k > 0 else float(s[0]) + 1.0


@dataclass(frozen=True, slots=True)
class LiRA(LeaveOneOutAttack):
    """Carlini et al.'s likelihood-ratio attack on trained models, online or offline, with optional FPC.

    Parameters
    ----------
    online : bool, default=True
        Fit IN and OUT Gaussians (the likelihood ratio), or OUT only (offline).
    offline_test : {"one-sided", "density"}, default="one-sided"
        The offline score (see the module docstring): the paper's one-sided test, or the reference code's density.
    fix_variance : bool, default=False
        One σ per side for all targets, instead of per-example σ's.
    fpc : bool, default=False
        Divide the shadows' variances by FPC = 1 − N/N₊ (N: a shadow's training size, N₊: the pool it is drawn
        from).
    n_shadows : int, default=64
        Shadow models per target in the record-level games (half with the target); the efficient evaluation
        (``games/lira.py``) uses the game's M models instead.  At least 4 (2 per side) for per-example variance.
    references : int or None, default=None
        Shadow models per sample in the efficient evaluation: offline its first k OUT models, online its first k/2
        IN and k/2 OUT (k even), in cyclic model order after the target (:mod:`privgame.attacks.references`); ``None``:
        every other model.  A per-example σ needs 2 per side read, a fixed σ 1.

    Notes
    -----
    Threat model (record-level games): the adversary of :mod:`privgame.attacks.knowledge`, with the public feature
    encoding of the records (``Knowledge.encoder``); its shadows are datasets of n auxiliary records, half with the
    target in place of one of them (or added, under add/remove), trained through the black box.  See the module
    docstring for the scores and the number of shadows a target needs.

    References
    ----------
    .. [1] N. Carlini et al. Membership Inference Attacks From First Principles. arXiv:2112.03570.
    """

    name: ClassVar[str] = "lira"
    accepts: ClassVar[frozenset[str]] = frozenset({"model"})
    needs: ClassVar[str] = "auxiliary"

    online: bool = True
    offline_test: str = "one-sided"
    fix_variance: bool = False
    fpc: bool = False
    n_shadows: int = 64
    references: int | None = None

    def __post_init__(self) -> None:
        for name in ("online", "fix_variance", "fpc"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be true or false, got {getattr(self, name)!r}.")
        if self.offline_test not in OFFLINE_TESTS:
            raise ValueError(f"offline_test must be one of {', '.join(OFFLINE_TESTS)}, got {self.offline_test!r}.")
        low = 2 if self.fix_variance else 4
        check_int("n_shadows", self.n_shadows, low=low, high=1_000_000)
        if self.n_shadows % 2:
            raise ValueError(f"n_shadows must be even (half of the shadows train on the target), got {self.n_shadows}.")
        need = 1 if self.fix_variance else 2  # scores per side read
        least = 2 * need if self.online else need
        k = check_references(self.references, online=self.online, least=least, attack="lira")
        object.__setattr__(self, "references", k)

    def min_models(self) -> int:
        """The fewest models of an efficient evaluation (each target model's others give each sample enough IN and
        OUT scores): 4 with a fixed variance, 6 with per-example variance, or what ``references`` per sample need
        (:func:`privgame.attacks.references.models_needed`)."""
        return models_needed(self.references, self.online, 4 if self.fix_variance else 6)

    def leave_one_out(self, scores: NDArray[np.float64], member: NDArray[np.bool_], *, fpc: float | None = None) -> Any:
        """The efficient evaluation's (M, N) LiRA scores and their ``valid`` mask (:func:`leave_one_out_fits`).

        ``fpc`` is the factor 1 − N/N₊ of the game's pool, which divides the variances: required when the attack
        was built with ``fpc=True``, refused when it was not (it would otherwise be silently ignored).

        Raises
        ------
        ValueError
            If ``fpc`` is given to an attack built with ``fpc=False``, or missing for one built with ``fpc=True``.
        """
        if self.fpc and fpc is None:
            raise ValueError("fpc must be given (the pool's 1 − N/N₊) to a LiRA attack built with fpc=True.")
        if not self.fpc and fpc is not None:
            raise ValueError(
                f"fpc must be left out for a LiRA attack built with fpc=False (it would not be applied), got {fpc!r}; "
                "build LiRA(fpc=True) to apply it."
            )
        factor = 1.0 if fpc is None else fpc
        if self.references is None:
            fits = leave_one_out_fits(scores, member, online=self.online, fix_variance=self.fix_variance, fpc=factor)
        else:
            fits = reference_fits(
                scores,
                member,
                self.references,
                online=self.online,
                fix_variance=self.fix_variance,
                fpc=factor,
            )
        return lira_scores(scores, fits, online=self.online, offline_test=self.offline_test), fits

    def efficient_scores(
        self, confidence: NDArray[np.float64], member: NDArray[np.bool_], *, fpc: float
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_], float]:
        """:meth:`leave_one_out`, with the pool's ``fpc`` applied when the attack was built with ``fpc=True``."""
        applied = fpc if self.fpc else None
        scores, fits = self.leave_one_out(confidence, member, fpc=applied)
        return scores, np.asarray(fits.valid, dtype=bool), 1.0 if applied is None else applied

    def memory_bytes(self, n_releases: int, n_columns: int) -> int:
        """A shadow model's parameters (about 64 kB) and a few numbers per shadow."""
        return n_releases * (1 << 16)

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedLiRA:
        """Train ``n_shadows`` shadow models on auxiliary datasets with and without each target; fit the Gaussians."""
        import pandas as pd

        from privgame.mechanisms.training.data import TrainingData

        know: Knowledge = require_knowledge(knowledge, self.name)
        if know.encoder is None:
            raise TypeError(
                f"attack {self.name!r} needs the public feature encoding of the records (Knowledge.encoder), which "
                "the games on trained models give."
            )
        encoder = know.encoder
        aux_x, aux_y = encoder(know.auxiliary)
        t_x, t_y = encoder(know.targets)
        n = know.dataset_size
        n_aux = aux_x.shape[0]
        add_remove = know.neighbours == "add-remove"
        others = n - 1  # auxiliary records beside the target in an IN shadow
        if n_aux < others + (0 if add_remove else 1):
            raise ValueError(f"LiRA needs at least dataset_size = {n} auxiliary records, got {n_aux}.")
        pool_x = np.concatenate([aux_x, t_x])
        pool_y = np.concatenate([aux_y, t_y])
        # the public classes where the encoding states them, so that the shadows have the target model's outputs
        # even when the auxiliary records miss a class
        n_classes = int(getattr(encoder, "n_classes", None) or max(pool_y.max() + 1, 2))
        n_t = t_x.shape[0]
        half = self.n_shadows // 2
        root = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
        # a shadow is queried on its target, which is in its pool (a model released on given records answers)
        frame = None
        if know.raw_columns is not None:
            frame = know.raw_columns(pd.concat([know.auxiliary, know.targets], ignore_index=True))
        base = TrainingData(
            pool_x, pool_y, np.ones(pool_x.shape[0], dtype=bool), n_classes=n_classes, size=n, frame=frame
        )
        own = np.empty((self.n_shadows, n_t))
        member = np.arange(self.n_shadows)[:, None].repeat(n_t, 1) < half  # shadows 0 .. S/2 − 1 hold the target
        for t, target_seed in enumerate(root.spawn(n_t)):
            datasets, seeds = [], []
            for s, seed in enumerate(target_seed.spawn(self.n_shadows)):
                data_seed, release_seed = seed.spawn(2)
                pick = np.random.default_rng(data_seed).permutation(n_aux)
                include = np.zeros(pool_x.shape[0], dtype=bool)
                if s < half:
                    include[pick[:others]] = True
                    include[n_aux + t] = True
                else:
                    include[pick[: others if add_remove else others + 1]] = True
                datasets.append(base.with_include(include, size=n))
                seeds.append(release_seed)
            releases = know.oracle.release_many(datasets, seeds=seeds)
            own[:, t] = [r.confidence(t_x[t : t + 1], t_y[t : t + 1])[0] for r in releases]
        fits = fit_gaussians(
            own,
            member,
            online=self.online,
            fix_variance=self.fix_variance,
            fpc=1.0 - n / (n_aux + 1) if self.fpc else 1.0,
        )
        if not fits.valid.all():
            warnings.warn(
                f"LiRA could not fit {int((~fits.valid).sum())} of {n_t} targets (too few shadows on a side); their "
                "scores are 0 and they are marked.",
                RuntimeWarning,
                stacklevel=2,
            )
        shadow_scores = lira_scores(own, fits, online=self.online, offline_test=self.offline_test)
        return FittedLiRA(
            target_x=t_x,
            target_y=t_y,
            fits=fits,
            online=self.online,
            offline_test=self.offline_test,
            decision=_best_threshold(shadow_scores.ravel(), member.ravel()),
        )
