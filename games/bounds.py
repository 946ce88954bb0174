"""The audit games' bounds as ``[analysis]`` chooses them: which estimators, and which guessing rule.

The one-run and multi-run games compute their own single bound by default.  A config may instead name
``estimators`` (:mod:`privgame.analysis.estimators`: each gets its columns ``<label>.epsilon_lb`` and, in the summary,
``<label>.epsilon_lb_median`` and so on; the first is also ``epsilon_lb``) and the ``threshold`` rule:

- ``"top-k"``: the one-run game's k₊ highest scores guessed "member" and k₋ lowest "non-member", fixed in advance;
- ``"bonferroni"`` (or ``{rule = "bonferroni", candidates = 100}``): the best of label-free quantile thresholds,
  the significance divided among them;
- ``"split"`` (or ``{rule = "split", fraction = 0.5, candidates = 100}``): the threshold chosen on a random part,
  the bound on the rest (the split drawn from the trial's seed);
- a number, or ``{rule = "explicit", at = t}`` (``at = [t_low, t_high]`` with ``two_sided = true``): fixed in
  advance, for example 0.5 on released bits, which guesses every canary (Steinke et al.'s idealised experiment).

Each one-run estimator also gets its *ceiling* ``<label>.ceiling``: the bound its guesses would give were every one
of them right (same m, r, δ and per-test confidence, :func:`ceiling`); a summary marks a median bound within 1 % of
the median ceiling (``<label>.at_ceiling``): there the audit (too few canaries or guesses), not the mechanism, is
what limits the bound.

A parametric estimate (``gauss_fit``, :mod:`privgame.analysis.gaussian_fit`) is not a bound and has a column set
of its own: ``<label>.epsilon_estimate`` and ``<label>.epsilon_point`` per trial (from every score, whatever the
rule), and ``<label>.kind`` (:data:`ESTIMATE_KIND`), ``<label>.epsilon_estimate_{median,min,max}``,
``<label>.epsilon_point_median`` and ``<label>.n_undefined`` in the summary: never ``epsilon_lb``, a ceiling, a
tightness or a verdict.

Every choice is checked against each grid point's game and mechanism when the config is read, before any trial.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int, check_real
from privgame.core._memo import BoundedMemo

if TYPE_CHECKING:  # the estimators are imported where bounds are computed: reading results needs none of them
    from privgame.analysis.estimators import Estimator
    from privgame.analysis.families import CurveFamily
    from privgame.analysis.thresholds import ThresholdStrategy

__all__ = [
    "AT_CEILING",
    "ESTIMATE_KIND",
    "THRESHOLD_RULES",
    "bound_columns",
    "ceiling",
    "ceiling_columns",
    "check_threshold",
    "default_ceiling_columns",
    "estimate_columns",
    "estimate_labels",
    "estimate_summary",
    "estimator_labels",
    "pooled_columns",
    "resolved_estimators",
    "settings_problem",
    "summary_columns",
    "threshold_strategy",
    "tightness",
]

THRESHOLD_RULES = ("top-k", "bonferroni", "split", "explicit")
_KEYS = {"top-k": (), "bonferroni": ("candidates",), "split": ("fraction", "candidates"), "explicit": ("at",)}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "bonferroni": {"candidates": 100},
    "split": {"fraction": 0.5, "candidates": 100},
}

Threshold = tuple[tuple[str, Any], ...]

AT_CEILING = 0.99
"""A median bound at least this share of its median ceiling is marked ``at_ceiling``."""

ESTIMATE_KIND = "estimate (parametric, not a confidence bound)"
"""The ``<label>.kind`` of a parametric estimate's summary (:data:`privgame.analysis.gaussian_fit.KIND`)."""

# Ceilings by (test, family, m, r, confidence, δ): a trial's ceiling repeats for every trial with the same guess
# count, and a PLD family's costs a composition per search step (about 1 s each).
_CEILINGS: BoundedMemo[float] = BoundedMemo(4096)


def check_threshold(spec: Any) -> Threshold | None:
    """``[analysis] threshold`` in its normal form, the sorted ``(key, value)`` items of a rule, or None (the game's
    own rule).

    Raises
    ------
    ValueError
        One line naming the value and what is allowed.
    """
    if spec is None:
        return None
    if isinstance(spec, tuple) and all(isinstance(item, tuple) and len(item) == 2 for item in spec):
        spec = dict(spec)  # already normal
    if isinstance(spec, bool):
        raise ValueError(f"threshold must be a rule name, a number or a table, got {spec!r}.")
    if isinstance(spec, int | float):
        spec = {"rule": "explicit", "at": spec}
    elif isinstance(spec, str):
        spec = {"rule": spec}
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"threshold must be one of {', '.join(THRESHOLD_RULES)}, a number, or a table with a rule, got {spec!r}."
        )
    rule = spec.get("rule")
    if rule not in THRESHOLD_RULES:
        raise ValueError(f"threshold rule must be one of {', '.join(THRESHOLD_RULES)}, got {rule!r}.")
    extra = sorted(set(spec) - {"rule", *_KEYS[rule]})
    if extra:
        allowed = ", ".join(_KEYS[rule]) or "no other key"
        raise ValueError(f"threshold: the {rule} rule takes {allowed}, got {', '.join(map(repr, extra))}.")
    out: dict[str, Any] = {"rule": rule, **_DEFAULTS.get(rule, {}), **{k: v for k, v in spec.items() if k != "rule"}}
    if rule == "explicit":
        if "at" not in out:
            raise ValueError("threshold: the explicit rule needs at = a number, or [t_low, t_high] when two-sided.")
        at = out["at"]
        if isinstance(at, list | tuple):
            if len(at) != 2:
                raise ValueError(f"threshold: at must be one number or a pair [t_low, t_high], got {at!r}.")
            low, high = (check_real(f"threshold at[{i}]", t) for i, t in enumerate(at))
            if not low < high:
                raise ValueError(f"threshold: at = [t_low, t_high] needs t_low < t_high, got {list(at)!r}.")
            out["at"] = (low, high)
        else:
            out["at"] = check_real("threshold at", at)
    if "candidates" in out and out["candidates"] != "all":
        out["candidates"] = check_int("threshold candidates", out["candidates"], low=1, high=1_000_000)
    if "fraction" in out:
        out["fraction"] = check_real(
            "threshold fraction", out["fraction"], low=0.0, high=1.0, low_open=True, high_open=True
        )
    return tuple(sorted(out.items()))


def threshold_rule(threshold: Threshold | None, default: str) -> str:
    """The rule's name (``default`` when the config gave none)."""
    return default if threshold is None else str(dict(threshold)["rule"])


def threshold_strategy(threshold: Threshold, *, rng: np.random.Generator) -> ThresholdStrategy:
    """The :class:`~privgame.analysis.thresholds.ThresholdStrategy` of a rule other than top-k; a split's mask is drawn
    from ``rng`` (the trial's own stream, so a reanalysis draws the same split)."""
    from privgame.analysis.thresholds import Bonferroni, Explicit, Split

    spec = dict(threshold)
    rule = spec["rule"]
    if rule == "bonferroni":
        return Bonferroni(spec["candidates"])
    if rule == "split":
        return Split(spec["fraction"], seed=int(rng.integers(0, 2**63 - 1)), candidates=spec["candidates"])
    if rule == "explicit":
        return Explicit(spec["at"])
    raise ValueError(f"the {rule} rule is not a threshold strategy.")


def resolved_estimators(settings: Any, *, has_runs: bool) -> list[Estimator]:
    """``settings.estimators`` (the game's default when None) resolved for the bound mechanism claim."""
    from privgame.analysis.estimators import resolve_estimators

    default = ("clopper_pearson",) if has_runs else ("steinke",)
    names = default if settings.estimators is None else settings.estimators
    return resolve_estimators(
        names,
        settings.claim,
        delta=settings.delta,
        has_runs=has_runs,
        allow_unmatched_family=settings.allow_unmatched_family,
        dependence=settings.dependence,
        allow_dependent_canaries=settings.allow_dependent_canaries,
    )


def settings_problem(settings: Any, *, kind: str | None, game: str, examples: int | None = None) -> str | None:
    """Why these settings cannot analyse this game's trials (one line), or None; ``kind`` is the game's
    ``bound_kind`` (``"one-run"``, ``"runs"`` or None for games that do not bound ε this way), ``examples`` the
    number of scores one audit has when the game fixes it (the one-run game's m)."""
    if not settings.custom and not settings.two_sided:
        return None
    if kind is None:
        return f"estimators, threshold and two_sided apply to the one-run and multi-run games, not to {game!r}"
    rule = threshold_rule(settings.threshold, "top-k" if kind == "one-run" else "bonferroni")
    if rule == "top-k" and kind != "one-run":
        return (
            f"threshold 'top-k' is the one-run game's rule (k_pos, k_neg); the {game} game takes bonferroni, split "
            "or explicit"
        )
    if settings.two_sided and (kind != "one-run" or rule == "top-k"):
        why = "top-k guesses both ways through k_neg" if rule == "top-k" else "the multi-run bound is one-sided"
        return f"two_sided = true does not apply here ({why})"
    if rule == "split" and examples is not None and examples < 2:
        return (
            f"threshold 'split' needs at least 2 canaries (one to choose the threshold on, one to bound on), got "
            f"m = {examples}"
        )
    if rule == "explicit":
        pair = isinstance(dict(settings.threshold)["at"], tuple)
        if pair != settings.two_sided:
            return "threshold at must be a pair [t_low, t_high] when two_sided = true and one number otherwise"
    try:
        resolved_estimators(settings, has_runs=kind == "runs")
    except ValueError as exc:
        return str(exc).rstrip(".")
    return None


def bound_columns(
    settings: Any,
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    has_runs: bool,
    rng: np.random.Generator,
    top_k: tuple[int, int] | None = None,
    default: Threshold | None = None,
) -> dict[str, float | int]:
    """Every chosen estimator's bound on one set of scores: ``<label>.epsilon_lb`` (and, under a threshold rule,
    its ``<label>.r`` and ``<label>.v``), ``epsilon_lb`` for the first; with ``top_k``, the shared m, r, v.

    ``default`` is the game's own threshold rule, used when the config names none (top-k when ``top_k`` is given).
    """
    estimators = resolved_estimators(settings, has_runs=has_runs)
    return _columns(estimators, settings, scores, membership, rng=rng, top_k=top_k, default=default)


def pooled_columns(
    settings: Any,
    rows: pd.DataFrame,
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    rng: np.random.Generator,
    default: Threshold | None = None,
) -> dict[str, float | int]:
    """The multi-run estimators of stored rows (their labels) pooled over all the runs' ``scores``.

    The estimators are those of the rows' columns, so a report needs no mechanism (the claim matters only to the
    refusal, done when the config was read)."""
    from privgame.analysis.estimators import Estimator

    estimators = [Estimator(label.removesuffix("_unmatched"), label) for label in estimator_labels(list(rows.columns))]
    if not estimators:
        raise ValueError("the rows hold no estimator columns (<label>.epsilon_lb) to pool.")
    columns = _columns(estimators, settings, scores, membership, rng=rng, top_k=None, default=default)
    return {k: v for k, v in columns.items() if not k.endswith((".r", ".v", ".ceiling")) and k != "m"}


def _columns(
    estimators: Sequence[Estimator],
    settings: Any,
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    rng: np.random.Generator,
    top_k: tuple[int, int] | None,
    default: Threshold | None,
) -> dict[str, float | int]:
    from privgame.analysis.estimators import ONE_RUN, bound_from_counts, bound_from_scores
    from privgame.analysis.one_run import count_correct, guesses_top_k

    common = {"confidence": settings.confidence, "delta": settings.delta}
    out: dict[str, float | int] = {}
    threshold = settings.threshold if settings.threshold is not None else default
    rule = threshold_rule(threshold, "top-k")
    bounds = [e for e in estimators if not e.is_estimate]
    if rule == "top-k":
        assert top_k is not None
        guesses = guesses_top_k(scores, top_k[0], top_k[1], rng=rng)
        r, v = count_correct(guesses, membership)
        for e in bounds:
            out[f"{e.label}.epsilon_lb"] = bound_from_counts(e, scores.shape[0], r, v, **common)
            out[f"{e.label}.ceiling"] = ceiling(e, scores.shape[0], r, **common)
        out.update({"m": int(scores.shape[0]), "r": r, "v": v})
    else:
        assert threshold is not None
        strategy = threshold_strategy(threshold, rng=rng)
        ins, outs = scores[membership], scores[~membership]
        for e in bounds:
            result = bound_from_scores(e, ins, outs, threshold=strategy, two_sided=settings.two_sided, **common)
            out[f"{e.label}.epsilon_lb"] = result.epsilon
            if e.name in ONE_RUN:  # at the chosen threshold, on the part bounded, at its per-test significance
                out[f"{e.label}.ceiling"] = ceiling(
                    e,
                    int(result.details["m"]),
                    int(result.details["r"]),
                    confidence=1.0 - result.beta_per_test,
                    delta=settings.delta,
                )
            for key in ("r", "v"):
                if key in result.details:
                    out[f"{e.label}.{key}"] = int(result.details[key])
        out["m"] = int(scores.shape[0])
    for e in estimators:
        if e.is_estimate:  # every score, whatever the guessing rule; never epsilon_lb
            out.update(estimate_columns(e, scores, membership, **common))
    return {"epsilon_lb": out[f"{bounds[0].label}.epsilon_lb"], **out}


def estimate_columns(
    estimator: Estimator, scores: np.ndarray, membership: np.ndarray, *, confidence: float, delta: float
) -> dict[str, float]:
    """A parametric estimate's trial columns (``gauss_fit``: :func:`privgame.analysis.gaussian_fit.gaussian_fit` of
    the member and non-member scores): ``<label>.epsilon_estimate`` (at ``confidence``, the paper's figure) and
    ``<label>.epsilon_point`` (the plug-in).  Both NaN when a side has fewer than 2 scores (no Gaussian to fit; a
    trial of few canaries can draw that): the summary counts them (``<label>.n_undefined``)."""
    from privgame.analysis.estimators import estimate_from_scores

    ins, outs = scores[membership], scores[~membership]
    if min(ins.size, outs.size) < 2:
        estimate = point = math.nan
    else:
        fit = estimate_from_scores(estimator, ins, outs, confidence=confidence, delta=delta)
        estimate, point = fit.epsilon_estimate, fit.epsilon_point
    return {f"{estimator.label}.epsilon_estimate": estimate, f"{estimator.label}.epsilon_point": point}


def estimator_labels(columns: Sequence[str]) -> list[str]:
    """The estimator labels of stored trial rows, in column order (``fdp_pld`` of ``fdp_pld.epsilon_lb``)."""
    return [c.removesuffix(".epsilon_lb") for c in columns if c.endswith(".epsilon_lb")]


def tightness(bound: float, analytic: float) -> float:
    """A bound over the analytic ε; NaN where the mechanism claims no finite positive ε."""
    return bound / analytic if math.isfinite(analytic) and analytic > 0 else math.nan


#: The label endings of estimators whose bound is not guaranteed (an f-DP family that does not contain the
#: mechanism's curve; the order-statistics audit on dependent canaries): no verdict rests on them.
NOT_GUARANTEED = ("_unmatched", "_dependent")


def guaranteed(label: str) -> bool:
    """Whether the estimator labelled ``label`` gives a guaranteed bound (not :data:`NOT_GUARANTEED`)."""
    return not label.endswith(NOT_GUARANTEED)


def unguaranteed_verdict(columns: dict[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """The verdict columns of a bound that is not guaranteed: its exceedance count kept, no test (a "bound" that may
    exceed a true claim in most trials refutes nothing): ``over_claim_allowed`` and ``verdict_p`` NaN, ``verdict``
    :data:`privgame.analysis.verdict.NOT_GUARANTEED`."""
    from privgame.analysis.verdict import NOT_GUARANTEED as NO_TEST

    out = dict(columns)
    out[f"{prefix}over_claim_allowed"] = math.nan
    out[f"{prefix}verdict_p"] = math.nan
    out[f"{prefix}verdict"] = NO_TEST
    return out


def summary_columns(rows: pd.DataFrame, analytic: float, confidence: float) -> dict[str, Any]:
    """Each estimator's summary over a grid point's trials: ``<label>.epsilon_lb_{mean,median,min,max}``, its
    ``<label>.tightness`` (median over the analytic ε), its verdict on the claim (``<label>.over_claim``,
    ``.over_claim_allowed``, ``.verdict_p``, ``.verdict``: :func:`privgame.analysis.verdict.verdict_columns`, each
    trial's bound at ``confidence``) and, where the rows have its ceilings, ``<label>.ceiling`` (their median) and
    ``<label>.at_ceiling`` (:func:`ceiling_columns`)."""
    from privgame.analysis.verdict import verdict_columns

    out: dict[str, Any] = {}
    for label in estimator_labels(list(rows.columns)):
        lb = rows[f"{label}.epsilon_lb"].to_numpy(dtype=float)
        median = float(np.median(lb))
        out[f"{label}.epsilon_lb_mean"] = float(np.mean(lb))
        out[f"{label}.epsilon_lb_median"] = median
        out[f"{label}.epsilon_lb_min"] = float(np.min(lb))
        out[f"{label}.epsilon_lb_max"] = float(np.max(lb))
        out[f"{label}.tightness"] = tightness(median, analytic)
        verdict = verdict_columns(lb, analytic, confidence, prefix=f"{label}.")
        out.update(verdict if guaranteed(label) else unguaranteed_verdict(verdict, prefix=f"{label}."))
        if f"{label}.ceiling" in rows.columns:  # rows stored before ceilings existed have none: no marker
            ceilings = rows[f"{label}.ceiling"].to_numpy(dtype=float)
            out.update(ceiling_columns(median, ceilings, prefix=f"{label}."))
    for label in estimate_labels(list(rows.columns)):
        out.update(estimate_summary(rows, label))
    return out


def estimate_labels(columns: Sequence[str]) -> list[str]:
    """The parametric estimates of stored trial rows, in column order (``gauss_fit`` of
    ``gauss_fit.epsilon_estimate``): not bounds, so :func:`estimator_labels` leaves them out."""
    return [c.removesuffix(".epsilon_estimate") for c in columns if c.endswith(".epsilon_estimate")]


def estimate_summary(rows: pd.DataFrame, label: str) -> dict[str, Any]:
    """A parametric estimate's summary over a grid point's trials: ``<label>.kind`` (:data:`ESTIMATE_KIND`, so that
    every table that shows it says it is no bound), ``<label>.epsilon_estimate_{median,min,max}`` and
    ``<label>.epsilon_point_median`` over the trials where it is defined, and ``<label>.n_undefined`` (trials with
    fewer than 2 scores on a side).  No tightness, ceiling or verdict: those are a bound's."""
    estimate = rows[f"{label}.epsilon_estimate"].to_numpy(dtype=float)
    defined = estimate[~np.isnan(estimate)]
    point = rows[f"{label}.epsilon_point"].to_numpy(dtype=float) if f"{label}.epsilon_point" in rows else estimate
    point = point[~np.isnan(point)]

    def stat(f: Any, values: np.ndarray) -> float:
        return float(f(values)) if values.size else math.nan

    return {
        f"{label}.kind": ESTIMATE_KIND,
        f"{label}.epsilon_estimate_median": stat(np.median, defined),
        f"{label}.epsilon_estimate_min": stat(np.min, defined),
        f"{label}.epsilon_estimate_max": stat(np.max, defined),
        f"{label}.epsilon_point_median": stat(np.median, point),
        f"{label}.n_undefined": int(estimate.size - defined.size),
    }


def ceiling_columns(median: float, ceilings: np.ndarray, *, prefix: str = "") -> dict[str, float]:
    """``<prefix>ceiling``, the median of the trials' ``ceilings`` (NaN where none is finite), and
    ``<prefix>at_ceiling``: whether the median bound is at least :data:`AT_CEILING` of it.

    A ceiling of 0 (guesses too few for any positive bound at that confidence) with a bound of 0 is at its ceiling:
    there too more canaries or guesses, not a weaker mechanism, are what a larger bound needs.
    """
    finite = ceilings[np.isfinite(ceilings)]
    top = float(np.median(finite)) if finite.size else math.nan
    at = bool(math.isfinite(top) and math.isfinite(median) and median >= AT_CEILING * top)
    return {f"{prefix}ceiling": top, f"{prefix}at_ceiling": at}


def default_ceiling_columns(rows: pd.DataFrame) -> dict[str, float]:
    """The ceiling of the one-run game's own bound (Steinke's, on its top-k guesses: no ``[analysis] estimators``)
    over a grid point's stored rows, from their ``ceiling`` column (:func:`top_k_ceiling`, stored when each trial
    was analysed): ``ceiling`` and ``at_ceiling`` as :func:`ceiling_columns` gives them; empty for rows stored
    before ceilings existed (a report imports no estimator: reading results stays fast)."""
    if not {"epsilon_lb", "ceiling"} <= set(rows.columns) or rows.empty:
        return {}
    return ceiling_columns(
        float(np.median(rows["epsilon_lb"].to_numpy(dtype=float))), rows["ceiling"].to_numpy(dtype=float)
    )


def top_k_ceiling(m: int, r: int, *, confidence: float, delta: float) -> float:
    """The ceiling of the one-run game's own bound: Steinke's with all r of its top-k guesses right."""
    from privgame.analysis.estimators import Estimator

    return ceiling(Estimator("steinke", "steinke"), m, r, confidence=confidence, delta=delta)


def ceiling(estimator: Estimator, m: int, r: int, *, confidence: float, delta: float) -> float:
    """The largest bound a one-run estimator can give from r guesses among m canaries: every guess right (v = r).

    Parameters
    ----------
    estimator : Estimator
        A one-run estimator (:data:`privgame.analysis.estimators.ONE_RUN`).
    m : int
        Canaries of the part bounded (the held-out part under a split).
    r : int
        Guesses made (k₊ + k₋ under top-k; those at the chosen threshold under a threshold rule).
    confidence : float
        The confidence of the test at that threshold: ``1 − beta_per_test`` of the threshold strategy.
    delta : float

    Returns
    -------
    float
        ``bound_from_counts(estimator, m, r, r, ...)``; 0 when r = 0.  Remembered per process by (the estimator's
        test, its family's name and parameters, m, r, confidence, δ), so a grid point's trials compute it once.

    Raises
    ------
    ValueError
        For a multi-run estimator, or counts, confidence or δ that
        :func:`privgame.analysis.estimators.bound_from_counts` refuses.
    """
    from privgame.analysis.estimators import MULTI_RUN, bound_from_counts

    if estimator.name in MULTI_RUN:
        raise ValueError(f"{estimator.name!r} bounds repeated runs: it has no one-run ceiling.")
    m_ = check_int("m", m, low=1)
    r_ = check_int("r", r, low=0, high=m_)
    if r_ == 0:
        return 0.0

    def compute() -> float:
        with warnings.catch_warnings():  # "no positive bound is possible": the ceiling says so itself (0)
            warnings.simplefilter("ignore", UserWarning)
            return float(bound_from_counts(estimator, m_, r_, r_, confidence=confidence, delta=delta))

    key = (estimator.test, _family_key(estimator.family), m_, r_, float(confidence), float(delta))
    return _CEILINGS.get(key, compute)


def _family_key(family: CurveFamily | None) -> Hashable:
    """What makes a family's bounds: its name and parameters (a DP-SGD family's q and T are its curve's keywords)."""
    if family is None:
        return None
    return (
        family.name,
        family.parameter_name,
        family.max_parameter,
        family.xtol,
        family.delta,
        _callable_key(family.curve),
        _callable_key(family.epsilon),
    )


def _callable_key(f: Any) -> Hashable:
    # a partial compares by identity; its function and arguments do not (a class or function is itself the key)
    if isinstance(f, functools.partial):
        return (_callable_key(f.func), f.args, tuple(sorted(f.keywords.items())))
    return f
