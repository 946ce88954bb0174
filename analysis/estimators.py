"""The estimators a config names in ``[analysis] estimators``, resolved against the mechanism before any trial.

Each name is one ε lower bound computed from the same stored scores:

========================  ===========================================================================  ==========
name                      bound                                                                        game
========================  ===========================================================================  ==========
``steinke``               Steinke, Nasr, Jagielski (2023), Theorem 5.2 (:mod:`privgame.analysis.one_run`)       one run
``fdp``                   the f-DP audit (:mod:`privgame.analysis.fdp`) with the mechanism's own family         one run
``fdp_pure``              the f-DP audit with the pure (ε, δ) family (sound for every claim)           one run
``fdp_gaussian``          the f-DP audit with the μ-GDP family (the Gaussian mechanism's)              one run
``fdp_pld``               the f-DP audit with DP-SGD's PLD family for its own q and T                  one run
``order_stats``           the order-statistics audit (:mod:`privgame.analysis.order_stats`), the mechanism's    one run,
                          own family; product model only (independent canaries)                        product
``order_stats_pure``      ... with the (ε, δ) "four atoms" family (exact)                              product
``order_stats_gaussian``  ... with the μ-GDP family                                                    product
``order_stats_pld``       ... with DP-SGD's PLD family for its own q and T                             product
``clopper_pearson``       Clopper–Pearson intervals on FPR and FNR (:mod:`privgame.analysis.multi_run`)         runs
``gdp``                   the GDP-derived multi-run bound (Gaussian mechanisms)                        runs
``gauss_fit``             NOT a bound: a parametric estimate, a Gaussian fitted to each side's scores   one run
                          (:mod:`privgame.analysis.gaussian_fit`, Agrawal et al. 2026); columns
                          ``gauss_fit.epsilon_estimate``, no verdict
========================  ===========================================================================  ==========

The mechanism-matched family (``fdp``) comes from the mechanism's ``PrivacyClaim``
(:func:`privgame.analysis.families.matched_family_name`): pure for randomized response and PrivBayes, Gaussian for the
Gaussian mechanism, PLD for DP-SGD.  A named family that does not contain the mechanism's trade-off curve can give
a "bound" above its true ε (SPEC §1: 1.646 at true ε = 1), so it is refused unless ``allow_unmatched_family`` is
set, and then its column says so (``fdp_gaussian_unmatched``).

An estimate (:data:`ESTIMATES`) is not a confidence bound: it has its own columns (``<label>.epsilon_estimate``, no
``epsilon_lb``, ceiling or verdict), needs δ > 0, and is refused as a config's only estimator (the game's
``epsilon_lb`` and its verdict come from a bound).

References
----------
.. [1] T. Steinke, M. Nasr, M. Jagielski. Privacy Auditing with One (1) Training Run. NeurIPS 2023,
   arXiv:2305.08846.
.. [2] S. Mahloujifar, L. Melis, K. Chaudhuri. Auditing f-Differential Privacy in One Run. ICML 2025,
   arXiv:2410.22235.
.. [3] Z. Xiang, T. Wang, H. Xiao, Y. Tian, D. Wang. Tight Privacy Audit in One Run. arXiv:2509.08704, 2025.
.. [4] M. Jagielski, J. Ullman, A. Oprea. Auditing Differentially Private Machine Learning. NeurIPS 2020,
   arXiv:2006.07709.
.. [5] A. Agrawal, Y. Wei, J. Singh, M. Magdon-Ismail, V. Zikas. Let's Ask Gauss: Improved One-Run Privacy
   Auditing. arXiv:2606.12733, 2026.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from privgame.analysis._checks import UNSTATED_DEPENDENCE
from privgame.analysis._result import AuditResult
from privgame.analysis.families import (
    FAMILY_NAMES,
    CurveFamily,
    family_for_claim,
    matched_family_name,
    unmatched_reason,
)

if TYPE_CHECKING:
    from privgame.analysis.gaussian_fit import GaussianFit

__all__ = [
    "ESTIMATES",
    "ESTIMATORS",
    "MULTI_RUN",
    "ONE_RUN",
    "UNSTATED",
    "Estimator",
    "bound_from_counts",
    "bound_from_scores",
    "estimate_from_scores",
    "resolve_estimators",
]

FAMILY_TESTS = ("fdp", "order_stats")  # the estimators that take a family: each name alone, or _<family>
ONE_RUN = ("steinke", *(n for t in FAMILY_TESTS for n in (t, *(f"{t}_{f}" for f in FAMILY_NAMES))))
UNSTATED = UNSTATED_DEPENDENCE  # the dependence assumed where a caller does not say: refused by order_stats
MULTI_RUN = ("clopper_pearson", "gdp")
ESTIMATES = ("gauss_fit",)  # parametric estimates of one run's ε, not confidence bounds: their own columns
ESTIMATORS = (*ONE_RUN, *MULTI_RUN, *ESTIMATES)


@dataclass(frozen=True, slots=True)
class Estimator:
    """A named estimator resolved for one mechanism and δ.

    Attributes
    ----------
    name : str
        As the config names it (``"fdp"``).
    label : str
        The prefix of its report columns (``"fdp_pld"``; ``"..._unmatched"`` when allowed without a match,
        ``"..._dependent"`` for the order-statistics audit allowed on dependent canaries).
    family : CurveFamily or None
        The family of the f-DP or order-statistics audit; None for the other estimators.
    """

    name: str
    label: str
    family: CurveFamily | None = None

    @property
    def test(self) -> str:
        """The test behind the name: ``"steinke"``, ``"fdp"``, ``"order_stats"``, ``"clopper_pearson"``, ``"gdp"``
        (``"gauss_fit"`` for the estimate)."""
        return _test_of(self.name)

    @property
    def is_estimate(self) -> bool:
        """Whether it is a parametric estimate (:data:`ESTIMATES`), not a confidence bound."""
        return self.name in ESTIMATES


def _test_of(name: str) -> str:
    return next((t for t in FAMILY_TESTS if name == t or name.startswith(t + "_")), name)


def resolve_estimators(
    names: Sequence[str],
    claim: Any,
    *,
    delta: float,
    has_runs: bool,
    allow_unmatched_family: bool = False,
    dependence: str | None = UNSTATED,
    allow_dependent_canaries: bool = False,
) -> list[Estimator]:
    """The estimators ``names`` for a mechanism's ``claim`` at ``delta``, or one line saying why one is not valid.

    Parameters
    ----------
    names : sequence of str
        Names from :data:`ESTIMATORS`, at least one, no repeats.
    claim : PrivacyClaim or None
        The mechanism's claim (None: it states none).
    delta : float
        The δ of every bound.
    has_runs : bool
        Whether the game repeats the mechanism (multi-run) rather than running it once on m canaries.
    allow_unmatched_family : bool, default=False
        Run a named f-DP family that does not contain the mechanism's curve (labelled ``_unmatched``).
    dependence : str or None, default=UNSTATED
        Why the mechanism's canaries are not independent channels (``Mechanism.canary_dependence``), or None when
        they are; the order-statistics audit needs None.
    allow_dependent_canaries : bool, default=False
        Run the order-statistics audit anyway (labelled ``_dependent``; its bound is then not guaranteed).

    Raises
    ------
    ValueError
        For an unknown or repeated name, an empty list, an estimator the game cannot feed (one-run estimators need
        a one-run game, ``clopper_pearson`` and ``gdp`` need runs), a Gaussian or GDP bound at δ = 0, a ``pld``
        family for a mechanism that is not DP-SGD, no matched family for ``fdp``, an unmatched family without
        ``allow_unmatched_family``, or an estimate (``gauss_fit``) in the multi-run game, at δ = 0 or named
        without any bound.
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ValueError(f"estimators must be a list of names from {', '.join(ESTIMATORS)}, got {names!r}.")
    if not names:
        raise ValueError(f"estimators must name at least one of {', '.join(ESTIMATORS)}, got an empty list.")
    out: list[Estimator] = []
    for name in names:
        if name not in ESTIMATORS:
            raise ValueError(f"estimators: unknown estimator {name!r}; valid: {', '.join(ESTIMATORS)}.")
        if any(e.name == name for e in out):
            raise ValueError(f"estimators: {name!r} is named twice.")
        if name in ESTIMATES:
            out.append(_resolve_estimate(name, delta, has_runs))
            continue
        if has_runs and name in ONE_RUN:
            raise ValueError(
                f"estimators: {name!r} bounds one run on m canaries; this game repeats the mechanism "
                f"(use {' or '.join(MULTI_RUN)})."
            )
        if not has_runs and name in MULTI_RUN:
            raise ValueError(
                f"estimators: {name!r} needs repeated runs of the mechanism (the multi-run game); this game runs it "
                f"once (use {', '.join(ONE_RUN)})."
            )
        resolved = _resolve(name, claim, delta, allow_unmatched_family)
        if resolved.test == "order_stats" and dependence is not None:
            if not allow_dependent_canaries:
                raise ValueError(
                    f"estimators: {name!r} holds only when every canary is its own independent channel, and here "
                    f"{dependence}; set allow_dependent_canaries = true to run it anyway (its columns are labelled "
                    "_dependent)."
                )
            resolved = Estimator(resolved.name, f"{resolved.label}_dependent", resolved.family)
        twin = next((e for e in out if e.label == resolved.label), None)
        if twin is not None:
            raise ValueError(
                f"estimators: {twin.name!r} and {name!r} are the same bound here ({resolved.label}); name it once."
            )
        out.append(resolved)
    if all(e.is_estimate for e in out):
        raise ValueError(
            f"estimators: {', '.join(repr(e.name) for e in out)} is an estimate (parametric, not a confidence "
            f"bound) and gives no epsilon_lb nor verdict; name a bound as well (one of "
            f"{', '.join(MULTI_RUN if has_runs else ONE_RUN)})."
        )
    return out


def _resolve_estimate(name: str, delta: float, has_runs: bool) -> Estimator:
    if has_runs:
        raise ValueError(
            f"estimators: {name!r} is an estimate from one run's member and non-member canary scores; this game "
            f"repeats the mechanism (use {' or '.join(MULTI_RUN)})."
        )
    if delta <= 0.0:
        raise ValueError(
            f"estimators: {name!r} needs [analysis] delta > 0 (two different Gaussians have no finite ε at δ = 0; "
            f"it defaults to 0), got {delta}: set [analysis] delta, for example to the δ at which the mechanism's ε "
            "is claimed."
        )
    return Estimator(name, name)


def bound_from_counts(estimator: Estimator, m: int, r: int, v: int, *, confidence: float, delta: float) -> float:
    """A one-run estimator's ε lower bound from v correct guesses of r, with m canaries (a rule fixed in advance,
    such as top-k or the released bits)."""
    from privgame.analysis import fdp, one_run, order_stats

    if estimator.name in MULTI_RUN:
        raise ValueError(f"{estimator.name!r} bounds repeated runs, not one run's guess counts.")
    if estimator.is_estimate:
        raise ValueError(f"{estimator.name!r} is an estimate from scores, not a bound from guess counts.")
    if estimator.family is None:
        return one_run.epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence)
    test = order_stats if estimator.test == "order_stats" else fdp
    return test.epsilon_lower_bound(m, r, v, family=estimator.family, delta=delta, confidence=confidence).epsilon


def bound_from_scores(
    estimator: Estimator,
    in_scores: Any,
    out_scores: Any,
    *,
    confidence: float,
    delta: float,
    threshold: Any = None,
    two_sided: bool = False,
) -> AuditResult:
    """An estimator's bound from member and non-member scores, the threshold chosen by ``threshold``
    (:mod:`privgame.analysis.thresholds`; Bonferroni over 100 label-free candidates by default)."""
    from privgame.analysis import fdp, multi_run, one_run, order_stats

    if estimator.is_estimate:
        raise ValueError(f"{estimator.name!r} is an estimate, not a bound: use estimate_from_scores.")
    common = {"confidence": confidence, "delta": delta, "threshold": threshold}
    if estimator.name == "clopper_pearson":
        return multi_run.audit_scores(in_scores, out_scores, **common)
    if estimator.name == "gdp":
        return multi_run.gdp_audit_scores(in_scores, out_scores, **common)
    if estimator.family is None:
        return one_run.audit_scores(in_scores, out_scores, two_sided=two_sided, **common)
    test = order_stats if estimator.test == "order_stats" else fdp
    return test.audit_scores(in_scores, out_scores, family=estimator.family, two_sided=two_sided, **common)


def estimate_from_scores(
    estimator: Estimator, in_scores: Any, out_scores: Any, *, confidence: float, delta: float
) -> GaussianFit:
    """An estimate's fit of member and non-member scores (:func:`privgame.analysis.gaussian_fit.gaussian_fit`): an
    estimate, not a confidence bound; it uses every score, whatever the threshold rule."""
    from privgame.analysis.gaussian_fit import gaussian_fit

    if not estimator.is_estimate:
        raise ValueError(f"{estimator.name!r} is a bound: use bound_from_scores or bound_from_counts.")
    return gaussian_fit(in_scores, out_scores, delta=delta, confidence=confidence)


def _resolve(name: str, claim: Any, delta: float, allow: bool) -> Estimator:
    if name in ("steinke", "clopper_pearson"):
        return Estimator(name, name)
    test = _test_of(name)
    own = name in FAMILY_TESTS
    family = "gaussian" if name == "gdp" else (matched_family_name(claim) if own else name[len(test) + 1 :])
    if family is None:
        raise ValueError(
            f"estimators: {name!r} uses the mechanism's own family, and none is known for this mechanism (its claim "
            f"is not pure, Gaussian or DP-SGD); name one of {', '.join(f'{test}_{f}' for f in FAMILY_NAMES)}."
        )
    if family == "gaussian" and delta <= 0.0:
        raise ValueError(
            f"estimators: {name!r} needs [analysis] delta > 0 (μ-GDP gives no finite ε at δ = 0; it defaults to 0), "
            f"got {delta}: set [analysis] delta, for example to the δ at which the mechanism's ε is claimed."
        )
    label = f"{name}_{family}" if own else name
    reason = unmatched_reason(family, claim) if not own else None
    if reason is not None:
        if not allow:
            raise ValueError(
                f"estimators: {name!r} may bound above the true ε: {reason}; set allow_unmatched_family = true to "
                "run it anyway (its columns are labelled _unmatched)."
            )
        label = f"{label}_unmatched"
    if name == "gdp":
        return Estimator(name, label)
    try:
        fam = family_for_claim(family, claim, delta)
    except ValueError as exc:
        raise ValueError(f"estimators: {name!r}: {exc}") from None
    return Estimator(name, label, fam)
