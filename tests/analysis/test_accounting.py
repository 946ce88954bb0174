"""Tests of analysis.accounting: epsilon_for_event and PrivacyClaim against dp_accounting called directly."""

from __future__ import annotations

import dataclasses
import math
import pickle

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from analysis.accounting import NeighbouringRelation, PrivacyClaim, epsilon_for_event

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
