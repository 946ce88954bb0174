"""Curve families (privgame.analysis.families): the registry, the family matched to a mechanism's claim, and bad input.

The matched family is pure for randomized response and PrivBayes, Gaussian for the Gaussian mechanism and DP-SGD's
own PLD (its q and T) for DP-SGD.
"""

from __future__ import annotations

import pytest

from privgame.analysis.families import (
    FAMILIES,
    CurveFamily,
    dpsgd_family,
    family_for_claim,
    gaussian_family,
    matched_family_name,
    pure_family,
    unmatched_reason,
)
from privgame.analysis.tradeoff import GaussianCurve
from tests.analysis.conftest import DPSGD, GAUSSIAN, PRIVBAYES, RR


def test_registry_lists_the_named_families():
    assert sorted(FAMILIES) == ["gaussian", "pure"]
    assert FAMILIES["pure"] is pure_family and FAMILIES["gaussian"] is gaussian_family


@pytest.mark.parametrize(
    ("claim", "family"), [(RR, "pure"), (PRIVBAYES, "pure"), (GAUSSIAN, "gaussian"), (DPSGD, "pld"), (None, None)]
)
def test_the_matched_family_is_the_mechanisms_own(claim, family):
    assert matched_family_name(claim) == family
    if family is not None:
        assert unmatched_reason(family, claim) is None


def test_the_pld_family_is_built_from_the_claims_own_sampling_rate_and_steps():
    fam = family_for_claim("pld", DPSGD, 1e-5)
    assert fam.name == "dpsgd(q=0.01, T=200)" and fam.delta == 1e-5
    # its member at the claim's own noise multiplier has the claim's ε
    assert fam.to_epsilon(1 / 1.1) == pytest.approx(DPSGD.epsilon(1e-5), rel=2e-2)
    with pytest.raises(ValueError, match="pld family is DP-SGD's own"):
        family_for_claim("pld", RR, 1e-5)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: dpsgd_family(0.1, 10, delta=0.0), ValueError, "delta must be in"),
        (lambda: CurveFamily(name="", curve=GaussianCurve), TypeError, "name must be"),
        (
            lambda: CurveFamily(name="x", curve=1.0),  # type: ignore[arg-type]
            TypeError,
            "curve must be a callable",
        ),
        (lambda: CurveFamily(name="x", curve=GaussianCurve, max_parameter=float("nan")), ValueError, "max_parameter"),
        (lambda: CurveFamily(name="x", curve=GaussianCurve, xtol=0.0), ValueError, "xtol must be"),
    ],
)
def test_bad_inputs_raise(call, error, match):
    with pytest.raises(error, match=match):
        call()
