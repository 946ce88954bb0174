"""Tests of privgame.analysis.accounting: epsilon_for_event and PrivacyClaim against dp_accounting called directly."""

from __future__ import annotations

import dataclasses
import math
import pickle

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from privgame.analysis.accounting import NeighbouringRelation, PrivacyClaim, epsilon_for_event

NR = dp_accounting.NeighboringRelation
DELTA = 1e-5
# Poisson-subsampled Gaussian (DP-SGD-like): both accountants support it under ADD_OR_REMOVE_ONE.
SUBSAMPLED = dp_accounting.SelfComposedDpEvent(
    dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 100
)
# Composed Gaussian: both accountants support it under every relation.
COMPOSED_GAUSSIAN = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(5.0), 10)


def _pld(event: dp_accounting.DpEvent, relation: dp_accounting.NeighboringRelation, delta: float = DELTA) -> float:
    acct = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=1e-4)
    acct.compose(event)
    return float(acct.get_epsilon(delta))


def _rdp(event: dp_accounting.DpEvent, relation: dp_accounting.NeighboringRelation, delta: float = DELTA) -> float:
    acct = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    acct.compose(event)
    return float(acct.get_epsilon(delta))


def test_neighbouring_relation_is_dp_accountings() -> None:
    assert NeighbouringRelation is dp_accounting.NeighboringRelation


# ---------------------------------------------------------------- argument checks


@pytest.mark.parametrize("delta", [-0.1, 1.0, 1.5, math.nan, math.inf])
def test_bad_delta_raises_value_error_naming_delta(delta: float) -> None:
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\), got "):
        epsilon_for_event(dp_accounting.GaussianDpEvent(1.0), delta)


@pytest.mark.parametrize("delta", ["0.1", True, None])
def test_non_real_delta_raises_type_error(delta: object) -> None:
    with pytest.raises(TypeError, match=r"^delta must be a real number"):
        epsilon_for_event(dp_accounting.GaussianDpEvent(1.0), delta)  # type: ignore[arg-type]


@pytest.mark.parametrize("accountant", ["PLD", "moments", "", None])
def test_unknown_accountant_raises_value_error_listing_the_choices(accountant: object) -> None:
    with pytest.raises(ValueError, match=r"^accountant must be one of 'pld', 'rdp', got "):
        epsilon_for_event(SUBSAMPLED, DELTA, accountant=accountant)  # type: ignore[arg-type]


@pytest.mark.parametrize("interval", [0.0, -1e-4, math.nan])
def test_bad_discretization_interval_raises(interval: float) -> None:
    with pytest.raises(ValueError, match=r"^value_discretization_interval must be > 0, got "):
        epsilon_for_event(SUBSAMPLED, DELTA, value_discretization_interval=interval)


def test_unsupported_event_raises_value_error() -> None:
    # dp_accounting's RDP accountant refuses Poisson sampling under REPLACE_ONE.
    with pytest.raises(ValueError, match=r"^the rdp accountant of dp_accounting does not support "):
        epsilon_for_event(SUBSAMPLED, DELTA, neighbouring=NR.REPLACE_ONE, accountant="rdp")


def test_event_unknown_to_pld_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"^the pld accountant of dp_accounting does not support "):
        epsilon_for_event(dp_accounting.UnsupportedDpEvent(), DELTA)


# ---------------------------------------------------------------- values against dp_accounting


@pytest.mark.parametrize("relation", [NR.ADD_OR_REMOVE_ONE, NR.REPLACE_SPECIAL, NR.REPLACE_ONE])
def test_pld_matches_dp_accounting(relation: dp_accounting.NeighboringRelation) -> None:
    got = epsilon_for_event(SUBSAMPLED, DELTA, neighbouring=relation, accountant="pld")
    assert got == pytest.approx(_pld(SUBSAMPLED, relation), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("relation", [NR.ADD_OR_REMOVE_ONE, NR.REPLACE_SPECIAL])
def test_rdp_matches_dp_accounting_and_is_looser_than_pld(relation: dp_accounting.NeighboringRelation) -> None:
    rdp = epsilon_for_event(SUBSAMPLED, DELTA, neighbouring=relation, accountant="rdp")
    pld = epsilon_for_event(SUBSAMPLED, DELTA, neighbouring=relation, accountant="pld")
    assert rdp == pytest.approx(_rdp(SUBSAMPLED, relation), rel=1e-12, abs=1e-12)
    assert math.isfinite(pld)
    assert rdp >= pld


@pytest.mark.parametrize("event", [COMPOSED_GAUSSIAN, dp_accounting.GaussianDpEvent(1.0)])
def test_rdp_under_replace_one_is_refused_for_gaussian_events(event: dp_accounting.DpEvent) -> None:
    # dp_accounting's RDP accountant keeps sensitivity 1 under REPLACE_ONE for Gaussian events while its PLD
    # accountant uses 2 (SelfComposed(Gaussian(5), 10), δ=1e-5: rdp 2.81 < pld 5.76): refusing beats understating.
    with pytest.raises(ValueError, match="accountant 'rdp' cannot account REPLACE_ONE"):
        epsilon_for_event(event, DELTA, neighbouring=NR.REPLACE_ONE, accountant="rdp")
    got = epsilon_for_event(event, DELTA, neighbouring=NR.REPLACE_ONE, accountant="pld")
    assert got == pytest.approx(_pld(event, NR.REPLACE_ONE), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("relation", [NR.ADD_OR_REMOVE_ONE, NR.REPLACE_SPECIAL])
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_single_gaussian_event_is_exact(relation: dp_accounting.NeighboringRelation, accountant: str) -> None:
    got = epsilon_for_event(dp_accounting.GaussianDpEvent(2.0), DELTA, neighbouring=relation, accountant=accountant)  # type: ignore[arg-type]
    assert got == dp_accounting.get_epsilon_gaussian(2.0, DELTA)


def test_composed_gaussian_matches_single_gaussian_with_scaled_noise() -> None:
    # k Gaussians of noise σ compose to one of noise σ/√k (μ-GDP); PLD is pessimistic by about its interval.
    composed = epsilon_for_event(COMPOSED_GAUSSIAN, DELTA)
    exact = dp_accounting.get_epsilon_gaussian(5.0 / math.sqrt(10), DELTA)
    assert exact <= composed <= exact + 1e-3


def test_gaussian_at_delta_zero_is_infinite() -> None:
    assert epsilon_for_event(dp_accounting.GaussianDpEvent(1.0), 0.0) == math.inf


def test_epsilon_returns_builtin_float() -> None:
    assert type(epsilon_for_event(SUBSAMPLED, DELTA)) is float
    assert type(epsilon_for_event(dp_accounting.GaussianDpEvent(1.0), DELTA)) is float


def test_epsilon_decreases_with_delta() -> None:
    values = [epsilon_for_event(SUBSAMPLED, d) for d in (1e-8, 1e-5, 1e-2)]
    assert values[0] > values[1] > values[2] > 0


# ---------------------------------------------------------------- PrivacyClaim


def test_privacy_claim_defaults() -> None:
    claim = PrivacyClaim(event=SUBSAMPLED, neighbouring=NR.ADD_OR_REMOVE_ONE)
    assert claim.accountant == "pld"
    assert claim.value_discretization_interval == 1e-4


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_privacy_claim_epsilon_delegates_to_epsilon_for_event(accountant: str) -> None:
    claim = PrivacyClaim(
        event=SUBSAMPLED,
        neighbouring=NR.ADD_OR_REMOVE_ONE,
        accountant=accountant,
        value_discretization_interval=1e-3,  # type: ignore[arg-type]
    )
    expected = epsilon_for_event(
        SUBSAMPLED,
        DELTA,
        neighbouring=NR.ADD_OR_REMOVE_ONE,
        accountant=accountant,
        value_discretization_interval=1e-3,  # type: ignore[arg-type]
    )
    assert claim.epsilon(DELTA) == expected


def test_privacy_claim_checks_delta() -> None:
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\)"):
        PrivacyClaim(event=SUBSAMPLED, neighbouring=NR.ADD_OR_REMOVE_ONE).epsilon(1.0)


def test_privacy_claim_is_frozen() -> None:
    claim = PrivacyClaim(event=SUBSAMPLED, neighbouring=NR.ADD_OR_REMOVE_ONE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        claim.accountant = "rdp"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        claim.event = dp_accounting.GaussianDpEvent(1.0)  # type: ignore[misc]
    assert claim.accountant == "pld"


def test_privacy_claim_pickles_and_compares_by_value() -> None:
    claim = PrivacyClaim(event=SUBSAMPLED, neighbouring=NR.ADD_OR_REMOVE_ONE)
    clone = pickle.loads(pickle.dumps(claim))
    assert clone == claim
    assert clone != PrivacyClaim(event=SUBSAMPLED, neighbouring=NR.REPLACE_ONE)


# ---------------------------------------------------------------- accounting helpers (SPEC §6)

# These tests were appended to the module; their imports stay here so that the tests above are left untouched.
from typing import Any  # noqa: E402

from dp_accounting.pld import accountant as pld_accountant  # noqa: E402
from dp_accounting.pld import common as pld_common  # noqa: E402
from scipy import optimize, stats  # noqa: E402

import privgame.mechanisms  # noqa: E402
from privgame.analysis.accounting import (  # noqa: E402
    dpsgd_epsilon,
    gaussian_claim,
    gaussian_epsilon,
    pure_composition_epsilon,
    randomized_response_claim,
    randomized_response_epsilon,
)


def test_dpsgd_reference_value_pld() -> None:
    # SPEC §6: q = 256/60000, σ = 1.1, T = 14062, δ = 1e-5 -> PLD ε = 2.3817 at value discretisation 1e-4.
    assert dpsgd_epsilon(1.1, 256 / 60000, 14062, 1e-5) == pytest.approx(2.3817, abs=2e-3)


def test_dpsgd_reference_value_rdp() -> None:
    rdp = dpsgd_epsilon(1.1, 256 / 60000, 14062, 1e-5, accountant="rdp")
    assert rdp == pytest.approx(2.597, abs=2e-3)
    assert rdp == pytest.approx(_rdp(_dpsgd_event(1.1, 256 / 60000, 14062), NR.ADD_OR_REMOVE_ONE, 1e-5), rel=1e-12)


def _dpsgd_event(sigma: float, q: float, steps: int) -> dp_accounting.DpEvent:
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps
    )


def test_dpsgd_small_case_matches_dp_accounting_pld() -> None:
    got = dpsgd_epsilon(1.0, 0.01, 100, DELTA)
    assert got == pytest.approx(_pld(_dpsgd_event(1.0, 0.01, 100), NR.ADD_OR_REMOVE_ONE), rel=1e-12)
    # More steps, more sampling or less noise cost more privacy.
    assert dpsgd_epsilon(1.0, 0.01, 200, DELTA) > got
    assert dpsgd_epsilon(1.0, 0.02, 100, DELTA) > got
    assert dpsgd_epsilon(2.0, 0.01, 100, DELTA) < got


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((1.1, 0.0, 10), ValueError, r"^sampling_rate must be in \(0, 1\], got 0"),
        ((1.1, -0.1, 10), ValueError, r"^sampling_rate must be in \(0, 1\], got "),
        ((1.1, 1.5, 10), ValueError, r"^sampling_rate must be in \(0, 1\], got 1.5"),
        ((1.1, math.nan, 10), ValueError, r"^sampling_rate must be in \(0, 1\], got nan"),
        ((1.1, 0.01, 0), ValueError, r"^steps must be an integer >= 1, got 0"),
        ((1.1, 0.01, -5), ValueError, r"^steps must be an integer >= 1, got -5"),
        ((1.1, 0.01, 1.5), TypeError, r"^steps must be an integer, got 1.5"),
        ((0.0, 0.01, 10), ValueError, r"^noise_multiplier must be > 0, got 0"),
        ((-1.0, 0.01, 10), ValueError, r"^noise_multiplier must be > 0, got -1"),
        ((math.nan, 0.01, 10), ValueError, r"^noise_multiplier must be > 0, got nan"),
        (("1.1", 0.01, 10), TypeError, r"^noise_multiplier must be a real number"),
    ],
)
def test_dpsgd_bad_arguments_raise_naming_the_field(args: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        dpsgd_epsilon(args[0], args[1], args[2], DELTA)


def test_dpsgd_full_batch_is_accepted() -> None:
    # q = 1: T Gaussian steps of noise σ compose to one of noise σ/√T.
    got = dpsgd_epsilon(4.0, 1.0, 4, DELTA)
    exact = dp_accounting.get_epsilon_gaussian(2.0, DELTA)
    assert exact - 1e-9 <= got <= exact + 2e-3


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_gaussian_epsilon_equals_dp_accounting(sigma: float, delta: float) -> None:
    assert gaussian_epsilon(sigma, delta) == dp_accounting.get_epsilon_gaussian(sigma, delta)


@pytest.mark.parametrize("sigma", [0.0, -1.0, math.nan])
def test_gaussian_epsilon_bad_sigma_raises(sigma: float) -> None:
    with pytest.raises(ValueError, match=r"^sigma must be > 0, got "):
        gaussian_epsilon(sigma, DELTA)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0, 8.0])
def test_randomized_response_epsilon_is_exact_at_delta_zero(epsilon: float) -> None:
    assert randomized_response_epsilon(epsilon) == pytest.approx(epsilon, abs=1e-6)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_randomized_response_epsilon_at_positive_delta_is_the_exact_hockey_stick(epsilon: float) -> None:
    got = randomized_response_epsilon(epsilon, 1e-3)
    assert got < epsilon
    # δ(ε') = p - e^{ε'} (1 - p) with p = e^ε / (1 + e^ε)  =>  ε' = ln((p - δ) / (1 - p)).
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    assert got == pytest.approx(math.log((p - 1e-3) / (1 - p)), abs=1e-6)


def test_randomized_response_epsilon_extremes() -> None:
    assert randomized_response_epsilon(0.0) == pytest.approx(0.0, abs=1e-9)
    assert randomized_response_epsilon(math.inf) == math.inf


def test_pure_composition_at_delta_zero_is_the_sum() -> None:
    assert pure_composition_epsilon([0.3, 0.7]) == pytest.approx(1.0, abs=1e-6)
    assert pure_composition_epsilon([0.5]) == pytest.approx(0.5, abs=1e-6)
    assert pure_composition_epsilon([0.1] * 10) == pytest.approx(1.0, abs=1e-6)


def _composed_rr_epsilon(k: int, eps: float, delta: float) -> float:
    """Exact ε at δ of k-fold ε-randomized response: the privacy loss is (k - 2l)ε with l ~ Bin(k, 1 - p)."""
    p = math.exp(eps) / (1 + math.exp(eps))
    flips = range(k + 1)
    losses = [(k - 2 * j) * eps for j in flips]
    weights = [float(stats.binom.pmf(j, k, 1 - p)) for j in flips]

    def excess(x: float) -> float:
        terms = (w * max(0.0, 1.0 - math.exp(x - loss)) for w, loss in zip(weights, losses, strict=True))
        return math.fsum(terms) - delta

    return float(optimize.brentq(excess, 0.0, k * eps, xtol=1e-12))


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_pure_composition_at_positive_delta(delta: float) -> None:
    got = pure_composition_epsilon([0.1] * 50, delta)
    assert 2.0 < got < 5.0
    assert got < 0.1 * 50  # tighter than basic composition
    # Kairouz-Oh-Viswanath optimal composition, as dp_accounting evaluates it on its grid (k - 2i)ε: the exact value
    # lies in (grid - 2ε, grid].
    grid = pld_accountant.advanced_composition(pld_common.DifferentialPrivacyParameters(0.1, 0.0), 50, delta)
    assert grid - 0.2 < got <= grid + 1e-9
    # And the exact hockey-stick divergence of 50-fold randomized response.
    assert got == pytest.approx(_composed_rr_epsilon(50, 0.1, delta), abs=1e-6)


@pytest.mark.parametrize(
    ("epsilons", "error", "match"),
    [
        ([], ValueError, r"^epsilons must hold at least one"),
        ([0.0], ValueError, r"^epsilon must be > 0, got 0"),
        ([0.5, -1.0], ValueError, r"^epsilon must be > 0, got -1"),
        ([0.5, math.nan], ValueError, r"^epsilon must be > 0, got nan"),
        ([0.5, "1"], TypeError, r"^epsilon must be a real number"),
    ],
)
def test_pure_composition_bad_epsilons_raise(epsilons: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        pure_composition_epsilon(epsilons)


def test_mechanisms_claims_are_the_accounting_claims() -> None:
    rr = privgame.mechanisms.RandomizedResponse(epsilon=2).privacy_claim()
    assert rr == randomized_response_claim(2)
    assert rr.neighbouring == NR.REPLACE_ONE
    assert rr.epsilon(0.0) == pytest.approx(2.0, abs=1e-6)
    gauss = privgame.mechanisms.GaussianMechanism(sigma=1).privacy_claim()
    assert gauss == gaussian_claim(1)
    assert gauss.neighbouring == NR.ADD_OR_REMOVE_ONE
    assert gauss.epsilon(DELTA) == dp_accounting.get_epsilon_gaussian(1.0, DELTA)
    assert privgame.mechanisms.RandomizedResponse(epsilon=1).privacy_claim() != randomized_response_claim(2)


def test_dpsgd_noise_multiplier_meets_the_target_from_the_safe_side() -> None:
    from privgame.analysis.accounting import dpsgd_noise_multiplier

    sigma = dpsgd_noise_multiplier(1.0, 1e-5, 1.0, 1, tol=1e-4)  # one full-batch step: the Gaussian mechanism
    assert dpsgd_epsilon(sigma, 1.0, 1, 1e-5) <= 1.0
    assert dpsgd_epsilon(sigma - 2e-4, 1.0, 1, 1e-5) > 1.0  # and it is the smallest σ to within tol
    with pytest.raises(ValueError, match="target_epsilon must be > 0"):
        dpsgd_noise_multiplier(0.0, 1e-5, 0.1, 10)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        dpsgd_noise_multiplier(1.0, 0.0, 0.1, 10)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.5, 1e-5), (1.0, 1e-5), (1.0, 1e-2), (4.0, 1e-6), (10.0, 1e-9)])
def test_zcdp_rho_inverts_zcdp_delta_and_agrees_with_dp_accountings_rdp_conversion(
    epsilon: float, delta: float
) -> None:
    from privgame.analysis.accounting import zcdp_claim, zcdp_delta, zcdp_rho

    rho = zcdp_rho(epsilon, delta)
    assert zcdp_delta(rho, epsilon) == pytest.approx(delta, rel=1e-6)
    assert zcdp_delta(rho * 1.01, epsilon) > delta  # the largest such ρ
    # dp_accounting turns (α, αρ)-RDP into (ε, δ) by its own conversion: the same ε, or within its grid of orders
    assert zcdp_claim(rho, NeighbouringRelation.ADD_OR_REMOVE_ONE).epsilon(delta) == pytest.approx(epsilon, rel=5e-3)


def test_zcdp_delta_matches_the_closed_form_at_its_optimal_order() -> None:
    from privgame.analysis.accounting import zcdp_delta

    rho, eps = 0.1, 1.0
    alphas = np.linspace(1.001, 60.0, 200_001)
    brute = np.exp((alphas - 1) * (alphas * rho - eps) + alphas * np.log1p(-1 / alphas)) / (alphas - 1)
    assert zcdp_delta(rho, eps) == pytest.approx(brute.min(), rel=1e-6)


def test_pure_and_zcdp_claims_keep_the_stated_relation() -> None:
    from privgame.analysis.accounting import pure_composition_claim, zcdp_claim

    for relation in (NeighbouringRelation.REPLACE_ONE, NeighbouringRelation.ADD_OR_REMOVE_ONE):
        pure = pure_composition_claim([2.0], relation)
        assert pure.neighbouring == relation and pure.epsilon(0.0) == pytest.approx(2.0)
        assert zcdp_claim(0.2, relation).neighbouring == relation
    with pytest.raises(ValueError, match="rho"):
        zcdp_claim(0.0, NeighbouringRelation.REPLACE_ONE)
