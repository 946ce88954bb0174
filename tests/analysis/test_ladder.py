"""The estimator ladder: every estimator on the same scores, and its figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privgame.analysis.accounting import gaussian_epsilon
from privgame.analysis.ladder import LADDER, PRODUCT_MODEL, gaussian_ladder, ladder, plot_ladder


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return gaussian_ladder((1.0, 2.0), n=4000, seed=3)


def test_every_estimator_on_every_setting(table):
    assert set(table["estimator"]) == set(LADDER)
    assert list(dict.fromkeys(table["setting"])) == ["μ = 1", "μ = 2"]
    truth = table.groupby("setting")["epsilon_true"].first()
    assert truth["μ = 1"] == pytest.approx(gaussian_epsilon(1.0, 1e-5))


def test_bounds_are_below_the_truth_and_grow_with_mu(table):
    # on Gaussian scores every estimator here is valid (the GDP-derived ones included): none exceeds the truth
    assert (table["epsilon"] <= table["epsilon_true"]).all()
    wide = table.pivot(index="estimator", columns="setting", values="epsilon")
    assert (wide["μ = 2"] > wide["μ = 1"]).all()


def test_same_seed_same_ladder():
    a = gaussian_ladder((1.0,), n=2000, seed=1)
    b = gaussian_ladder((1.0,), n=2000, seed=1)
    pd.testing.assert_frame_equal(a, b)


def test_gdp_estimators_do_not_apply_at_delta_zero():
    rng = np.random.default_rng(0)
    values = ladder(rng.normal(1, 1, 500), rng.normal(0, 1, 500), delta=0.0)
    assert math.isnan(values["multi-run GDP (GDP-derived)"])
    assert math.isnan(values["f-DP one-run, Gaussian (GDP-derived)"])
    assert math.isnan(values["order-stats one-run, Gaussian (GDP-derived, product model)"])
    assert values["one-run (Steinke)"] >= 0.0
    assert values["order-stats one-run, pure (product model)"] >= 0.0


def test_plot(table, tmp_path):
    png = plot_ladder(table, tmp_path / "ladder.png", title="t")
    assert png.read_bytes()[:4] == b"\x89PNG"
    pdf = plot_ladder(table.drop(columns="epsilon_true"), tmp_path / "ladder.pdf")
    assert pdf.read_bytes()[:4] == b"%PDF"
    with pytest.raises(ValueError, match=r"must end in \.png"):
        plot_ladder(table, tmp_path / "x.gif")
    with pytest.raises(ValueError, match="must have the columns"):
        plot_ladder(table.drop(columns="estimator"), tmp_path / "y.png")


def test_idealised_gaussian_scores_are_a_product_model_so_the_order_statistics_audit_is_on_the_ladder(table):
    assert set(PRODUCT_MODEL) <= set(LADDER)
    wide = table.pivot(index="estimator", columns="setting", values="epsilon")
    for name in PRODUCT_MODEL:
        assert (wide.loc[name] > 0.0).all()
    # the order-statistics test is the sharper one on the same guesses (Xiang et al. 2025)
    gaussian = wide.loc["order-stats one-run, Gaussian (GDP-derived, product model)"]
    assert (gaussian >= wide.loc["f-DP one-run, Gaussian (GDP-derived)"]).all()


def test_the_order_statistics_audit_is_not_computed_where_the_canaries_interact():
    rng = np.random.default_rng(0)
    a, b = rng.normal(2, 1, 1000), rng.normal(0, 1, 1000)
    free = ladder(a, b)
    tied = ladder(a, b, dependence="its canaries are examples trained into one shared model")
    for name in LADDER:
        if name in PRODUCT_MODEL:
            assert free[name] > 0.0 and math.isnan(tied[name])
        else:
            assert tied[name] == free[name] or (math.isnan(tied[name]) and math.isnan(free[name]))


def test_an_unknown_ladder_estimator_is_named():
    with pytest.raises(ValueError, match="got 'order-stats'"):
        ladder([1.0, 2.0], [0.0, 1.0], estimators=["order-stats"])
