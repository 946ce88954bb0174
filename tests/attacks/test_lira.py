"""LiRA: its scores in closed form, its Gaussian fits and their leave-one-out version against brute force, the attack
on a Knowledge over models (reproducibility, the shadows it trains, errors) and a statistical check that it detects
a memorised record."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import mannwhitneyu, norm

from privgame.attacks.knowledge import BlackBox, Knowledge
from privgame.attacks.lira import (
    SIGMA_FLOOR,
    FittedLiRA,
    GaussianFits,
    LiRA,
    _best_threshold,
    fit_gaussians,
    leave_one_out_fits,
    lira_scores,
)
from privgame.core.cache import seed_identity
from privgame.engine.testing import _BUILT_IN, _encode, _knowledge, _small_model, _table, _trained_model_release
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.models import MLPClassifier


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny models gain nothing from threads, and on a loaded 2-core machine OpenMP's spinning threads made each
    training ~50x slower (measured); restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _fits(**kwargs: Any) -> GaussianFits:
    values = {
        "mu_in": np.array([1.0, -2.0, 0.5, 4.0]),
        "sigma_in": np.array([0.5, 2.0, 1.0, 0.1]),
        "mu_out": np.array([0.0, 0.0, 3.0, -4.0]),
        "sigma_out": np.array([1.0, 0.3, 2.0, 3.0]),
        "n_in": np.full(4, 8),
        "n_out": np.full(4, 8),
        "valid": np.ones(4, dtype=bool),
    }
    values.update(kwargs)
    return GaussianFits(**values)


# -- the scores in closed form ----------------------------------------------------------------------------------
def test_online_score_is_the_log_likelihood_ratio():
    fits = _fits()
    t = np.array([0.7, -1.0, 2.0, 3.9])
    want = norm.logpdf(t, fits.mu_in, fits.sigma_in) - norm.logpdf(t, fits.mu_out, fits.sigma_out)
    np.testing.assert_allclose(lira_scores(t, fits), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(lira_scores(t, fits, online=True, offline_test="density"), want, rtol=1e-13)
    # broadcasting: (M, N) observations against (N,) fits
    grid = np.stack([t, t + 1, t - 2])
    want_grid = norm.logpdf(grid, fits.mu_in, fits.sigma_in) - norm.logpdf(grid, fits.mu_out, fits.sigma_out)
    np.testing.assert_allclose(lira_scores(grid, fits), want_grid, rtol=1e-13, atol=1e-13)


def test_offline_one_sided_score_is_the_standardised_distance_above_out():
    fits = _fits()
    t = np.array([0.7, -1.0, 2.0, 3.9])
    got = lira_scores(t, fits, online=False)
    np.testing.assert_allclose(got, (t - fits.mu_out) / fits.sigma_out, rtol=1e-14)
    np.testing.assert_array_equal(got, lira_scores(t, fits, online=False, offline_test="one-sided"))


def test_offline_density_score_is_minus_the_out_log_density():
    fits = _fits()
    t = np.array([0.7, -1.0, 2.0, 3.9])
    got = lira_scores(t, fits, online=False, offline_test="density")
    np.testing.assert_allclose(got, -norm.logpdf(t, fits.mu_out, fits.sigma_out), rtol=1e-13)


def test_a_target_far_below_the_out_mean_looks_like_a_member_only_to_the_density_score():
    """The documented difference (LeakPro #378 confused the two): one-sided is low there, density is high."""
    fits = _fits()
    below = fits.mu_out - 6 * fits.sigma_out
    above = fits.mu_out + 6 * fits.sigma_out
    at = fits.mu_out
    one_sided = {k: lira_scores(v, fits, online=False) for k, v in (("below", below), ("above", above), ("at", at))}
    density = {
        k: lira_scores(v, fits, online=False, offline_test="density")
        for k, v in (("below", below), ("above", above), ("at", at))
    }
    np.testing.assert_allclose(one_sided["below"], -6.0)
    np.testing.assert_allclose(one_sided["above"], 6.0)
    assert np.all(one_sided["below"] < one_sided["at"])  # one-sided: improbably LOW is no evidence of membership
    assert np.all(density["below"] > density["at"] + 17)  # density: 18 nats more surprising, as far ABOVE
    np.testing.assert_allclose(density["below"], density["above"], rtol=1e-14)


def test_invalid_targets_score_zero_never_nan():
    fits = _fits(valid=np.array([True, False, True, False]))
    t = np.array([0.7, -1.0, 2.0, 3.9])
    for online in (True, False):
        for test in ("one-sided", "density"):
            got = lira_scores(t, fits, online=online, offline_test=test)
            assert got[1] == 0.0 and got[3] == 0.0 and np.all(np.isfinite(got))
            assert got[0] != 0.0


def test_unknown_offline_tests_are_refused():
    with pytest.raises(ValueError, match="offline_test must be one of one-sided, density, got 'cdf'"):
        lira_scores(np.zeros(4), _fits(), online=False, offline_test="cdf")
    with pytest.raises(ValueError, match="offline_test must be one of one-sided, density, got 'log-cdf'"):
        LiRA(offline_test="log-cdf")


# -- fit_gaussians ----------------------------------------------------------------------------------------------
def _brute_force(scores: np.ndarray, member: np.ndarray, side: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mu, sigma, n = [], [], []
    for col in range(scores.shape[1]):
        v = scores[member[:, col] == side, col]
        n.append(v.size)
        mu.append(np.median(v) if v.size else 0.0)
        sigma.append(np.std(v, ddof=0) if v.size else 0.0)
    return np.array(mu), np.array(sigma), np.array(n)


def test_fit_gaussians_uses_medians_and_population_standard_deviations():
    rng = np.random.default_rng(0)
    scores = rng.normal(0, 3, size=(11, 30))
    member = rng.random((11, 30)) < 0.5
    member[:3, 0], member[3:, 0] = True, False  # an unbalanced column
    fits = fit_gaussians(scores, member)
    for side, mu, sigma, n in (
        (True, fits.mu_in, fits.sigma_in, fits.n_in),
        (False, fits.mu_out, fits.sigma_out, fits.n_out),
    ):
        want_mu, want_sigma, want_n = _brute_force(scores, member, side)
        np.testing.assert_array_equal(n, want_n)
        np.testing.assert_allclose(mu, want_mu, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(sigma, np.maximum(want_sigma, SIGMA_FLOOR), rtol=1e-12)
    np.testing.assert_array_equal(fits.valid, (fits.n_in >= 2) & (fits.n_out >= 2))
    # the means are medians, not means: one huge score moves the mean but not the median
    outlier = scores.copy()
    outlier[np.argmax(member[:, 1]), 1] = 1e6
    moved = fit_gaussians(outlier, member)
    assert abs(moved.mu_in[1] - fits.mu_in[1]) < 3 * fits.sigma_in[1]


def test_fixed_variance_pools_each_side_from_its_own_scores():
    """Privacy Meter's bug used the IN σ for both sides: here IN and OUT spreads differ 50-fold, and so do the σ's."""
    rng = np.random.default_rng(1)
    m, n = 40, 25
    centre = rng.uniform(-50, 50, size=n)  # very different targets: their spread must not enter either σ
    member = np.arange(m)[:, None].repeat(n, 1) < m // 2
    scores = np.where(member, centre + rng.normal(0, 0.1, (m, n)), centre - 3 + rng.normal(0, 5.0, (m, n)))
    fits = fit_gaussians(scores, member, fix_variance=True)
    var_in = np.var(np.where(member, scores, np.nan), axis=0, where=member)
    var_out = np.var(np.where(~member, scores, np.nan), axis=0, where=~member)
    # one σ per side: the root of the mean per-target variance of that side
    np.testing.assert_allclose(fits.sigma_in, np.sqrt(var_in.mean()), rtol=1e-12)
    np.testing.assert_allclose(fits.sigma_out, np.sqrt(var_out.mean()), rtol=1e-12)
    assert np.ptp(fits.sigma_in) == 0 and np.ptp(fits.sigma_out) == 0
    # 20 scores per side and target, 25 targets: each pooled σ is within a few % of its side's true spread
    # (relative sd of a pooled σ ≈ 1/sqrt(2·500) ≈ 3 %; the bounds below are > 10 sd away)
    assert 0.07 < fits.sigma_in[0] < 0.13 and 3.5 < fits.sigma_out[0] < 6.5
    assert fits.sigma_out[0] > 25 * fits.sigma_in[0]
    # the medians stay per target
    np.testing.assert_allclose(fits.mu_in, _brute_force(scores, member, True)[0], rtol=1e-14)


def test_fixed_variance_pools_only_targets_that_have_the_side():
    """One score on a side is no variance estimate: a target with one is left out of that side's pool."""
    single = fit_gaussians(
        np.array([[1.0, 0.0], [5.0, 4.0], [3.0, 8.0]]),
        np.array([[True, True], [False, True], [False, False]]),
        fix_variance=True,
    )
    np.testing.assert_allclose(single.sigma_in, 2.0)  # only target 1's IN scores (0, 4) pool: target 0 has one

    scores = np.array([[1.0, 5.0, 0.0], [3.0, 9.0, 2.0], [0.0, 0.0, 6.0], [2.0, 4.0, 0.0]])
    member = np.array([[True, True, False], [True, True, False], [False, False, False], [False, False, False]])
    fits = fit_gaussians(scores, member, fix_variance=True)
    # the pooled within-target variance Σ n_i σ_i² / Σ n_i over the targets with two scores or more on the side.
    # IN: targets 0 and 1 (2 scores each, variances 1 and 4); target 2 has no IN score and is left out of the pool
    np.testing.assert_allclose(fits.sigma_in, np.sqrt((2 * 1.0 + 2 * 4.0) / 4))
    out_var = (2 * 1.0 + 2 * 4.0 + 4 * np.var([0.0, 2.0, 6.0, 0.0])) / 8
    np.testing.assert_allclose(fits.sigma_out, np.sqrt(out_var))
    np.testing.assert_array_equal(fits.n_in, [2, 2, 0])
    np.testing.assert_array_equal(fits.valid, [True, True, False])
    np.testing.assert_array_equal(fit_gaussians(scores, member, fix_variance=True, online=False).valid, [True] * 3)


def test_fpc_divides_the_variances():
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(12, 9))
    member = rng.random((12, 9)) < 0.5
    for fix in (False, True):
        plain = fit_gaussians(scores, member, fix_variance=fix)
        corrected = fit_gaussians(scores, member, fix_variance=fix, fpc=0.3)
        np.testing.assert_allclose(corrected.sigma_in**2, plain.sigma_in**2 / 0.3, rtol=1e-12)
        np.testing.assert_allclose(corrected.sigma_out**2, plain.sigma_out**2 / 0.3, rtol=1e-12)
        np.testing.assert_array_equal(corrected.mu_in, plain.mu_in)
        np.testing.assert_array_equal(corrected.mu_out, plain.mu_out)
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"fpc must be in \(0, 1\]"):
            fit_gaussians(scores, member, fpc=bad)
        with pytest.raises(ValueError, match=r"fpc must be in \(0, 1\]"):
            leave_one_out_fits(scores, member, fpc=bad)


def test_the_sigma_floor_keeps_equal_shadow_scores_finite():
    scores = np.full((6, 3), 2.5)
    member = np.arange(6)[:, None].repeat(3, 1) < 3
    for fix in (False, True):
        fits = fit_gaussians(scores, member, fix_variance=fix)
        np.testing.assert_array_equal(fits.sigma_in, SIGMA_FLOOR)
        np.testing.assert_array_equal(fits.sigma_out, SIGMA_FLOOR)
        for t in (2.5, 2.5 + 1e-7, 3.0, -40.0):
            for online, test in ((True, "one-sided"), (False, "one-sided"), (False, "density")):
                got = lira_scores(np.full(3, t), fits, online=online, offline_test=test)
                assert np.all(np.isfinite(got)), (t, online, test)
        loo = leave_one_out_fits(scores, member, fix_variance=fix)
        np.testing.assert_array_equal(loo.sigma_in, SIGMA_FLOOR)
        assert np.all(np.isfinite(lira_scores(scores, loo)))


def test_targets_with_too_few_shadows_are_invalid_and_score_zero():
    # per target: IN counts 0, 1, 2, 3 (of 5 shadows), so OUT counts 5, 4, 3, 2
    member = np.zeros((5, 4), dtype=bool)
    for col, k in enumerate((0, 1, 2, 3)):
        member[:k, col] = True
    scores = np.random.default_rng(3).normal(size=(5, 4))
    per_example = fit_gaussians(scores, member)
    np.testing.assert_array_equal(per_example.valid, [False, False, True, True])  # 2 IN needed
    fixed = fit_gaussians(scores, member, fix_variance=True)
    np.testing.assert_array_equal(fixed.valid, [False, True, True, True])  # 1 IN needed
    np.testing.assert_array_equal(fit_gaussians(scores, member, online=False).valid, [True] * 4)  # OUT only
    # OUT counts 0, 1, 2, 3 (the mask flipped): offline needs 2 OUT per example, 1 with a fixed variance
    np.testing.assert_array_equal(fit_gaussians(scores, ~member, online=False).valid, [False, False, True, True])
    np.testing.assert_array_equal(
        fit_gaussians(scores, ~member, online=False, fix_variance=True).valid, [False, True, True, True]
    )
    for fits in (per_example, fixed):
        assert all(np.all(np.isfinite(getattr(fits, f.name))) for f in dataclasses.fields(fits))
        got = lira_scores(scores, fits)
        assert np.all(np.isfinite(got)) and np.all(got[:, ~fits.valid] == 0.0)


def test_fit_inputs_are_checked():
    """The fits share the calibration's checker (privgame.analysis._checks.check_score_matrix): one line naming the
    field."""
    scores, member = np.zeros((4, 3)), np.zeros((4, 3), dtype=bool)
    for fit in (fit_gaussians, leave_one_out_fits):
        with pytest.raises(
            ValueError, match=r"scores must be a 2-d array of shape \(n_models, n_samples\), got shape \(4,\)"
        ):
            fit(np.zeros(4), np.zeros(4, dtype=bool))
        with pytest.raises(ValueError, match=r"scores must have at least 1 models \(rows\), got 0"):
            fit(np.zeros((0, 3)), np.zeros((0, 3), dtype=bool))
        with pytest.raises(ValueError, match=r"member must hold only 0/1 or booleans, got 2 at \(model 0, sample 0\)"):
            fit(scores, np.full((4, 3), 2))
        with pytest.raises(ValueError, match=r"member must have the shape of scores \(4, 3\), got shape \(3, 4\)"):
            fit(scores, member.T)
        bad = scores.copy()
        bad[1, 2] = np.nan
        with pytest.raises(ValueError, match=r"scores must be finite, got nan at \(model 1, sample 2\)"):
            fit(bad, member)
        # integers 0/1 are a membership matrix too
        np.testing.assert_array_equal(fit(scores, member.astype(np.int64)).n_in, fit(scores, member).n_in)


# -- leave-one-out fits -----------------------------------------------------------------------------------------
def _loo_brute_force(scores: np.ndarray, member: np.ndarray, **kwargs: Any) -> dict[str, np.ndarray]:
    m, n = scores.shape
    out = {f.name: np.zeros((m, n)) for f in dataclasses.fields(GaussianFits)}
    for j in range(m):
        fits = fit_gaussians(np.delete(scores, j, 0), np.delete(member, j, 0), **kwargs)
        for name in out:
            out[name][j] = np.broadcast_to(getattr(fits, name), (n,))
    return out


@pytest.mark.parametrize("m, n", [(2, 3), (3, 5), (4, 4), (5, 7), (8, 6), (9, 11), (16, 5)])
@pytest.mark.parametrize("fix_variance", [False, True])
@pytest.mark.parametrize("online", [True, False])
@pytest.mark.parametrize("ties", [False, True])
def test_leave_one_out_fits_equal_fits_on_the_other_rows(m, n, fix_variance, online, ties):
    rng = np.random.default_rng(1000 * m + n)
    scores = rng.integers(-2, 3, size=(m, n)).astype(float) if ties else rng.normal(0, 2, size=(m, n))
    # unbalanced masks: a share of members from 0 to 1 across the columns, the first all OUT, the last all IN
    member = rng.random((m, n)) < np.linspace(0, 1, n)
    member[:, 0], member[:, -1] = False, True
    fpc = 0.6 if m % 2 else 1.0
    got = leave_one_out_fits(scores, member, online=online, fix_variance=fix_variance, fpc=fpc)
    want = _loo_brute_force(scores, member, online=online, fix_variance=fix_variance, fpc=fpc)
    for name in ("n_in", "n_out", "valid"):
        np.testing.assert_array_equal(getattr(got, name), want[name], err_msg=name)
    for name in ("mu_in", "mu_out"):
        np.testing.assert_allclose(getattr(got, name), want[name], rtol=1e-12, atol=1e-12, err_msg=name)
    for name in ("sigma_in", "sigma_out"):  # from sums of squares: a few ulps of the squares' scale
        np.testing.assert_allclose(getattr(got, name), want[name], rtol=1e-7, atol=1e-7, err_msg=name)
    assert got.mu_in.shape == (m, n)
    scored = lira_scores(scores, got, online=online)
    assert np.all(np.isfinite(scored)) and np.all(scored[~got.valid] == 0.0)


def test_attack_leave_one_out_applies_fpc_only_when_asked():
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(10, 6))
    member = rng.random((10, 6)) < 0.5
    plain, fits = LiRA().leave_one_out(scores, member)
    np.testing.assert_array_equal(fits.sigma_in, leave_one_out_fits(scores, member).sigma_in)
    np.testing.assert_array_equal(plain, lira_scores(scores, fits))
    corrected, cfits = LiRA(fpc=True, online=False, offline_test="density").leave_one_out(scores, member, fpc=0.5)
    want = leave_one_out_fits(scores, member, online=False, fpc=0.5)
    np.testing.assert_array_equal(cfits.sigma_out, want.sigma_out)
    np.testing.assert_array_equal(corrected, lira_scores(scores, want, online=False, offline_test="density"))
    assert LiRA().min_models() == 6 and LiRA(fix_variance=True).min_models() == 4


def test_attack_leave_one_out_refuses_an_fpc_it_would_ignore():
    """An fpc given to an attack built without fpc=True was silently ignored; it is refused, and one built with it
    asks for the pool's factor."""
    scores, member = np.zeros((6, 4)), np.eye(6, 4, dtype=bool)
    with pytest.raises(ValueError, match=r"fpc must be left out for a LiRA attack built with fpc=False .* got 0\.5"):
        LiRA().leave_one_out(scores, member, fpc=0.5)
    with pytest.raises(ValueError, match=r"fpc must be given \(the pool's 1 − N/N₊\) to a LiRA attack built with"):
        LiRA(fpc=True).leave_one_out(scores, member)


def test_best_threshold_maximises_the_shadows_accuracy():
    assert _best_threshold(np.array([3.0, 2.0, 1.0, 0.0]), np.array([True, True, False, False])) == 2.0
    assert _best_threshold(np.array([0.0, 2.0, 1.0, 3.0]), np.array([False, True, False, True])) == 2.0
    assert _best_threshold(np.array([1.0, 2.0]), np.array([False, False])) == 3.0  # nobody is a member
    assert _best_threshold(np.array([1.0, 2.0]), np.array([True, True])) == 1.0  # everybody is


# -- the attack on a Knowledge over models ----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _SpyBox(BlackBox):
    """A black box that records the datasets and seeds it is asked to train on."""

    seen: list[tuple[list[Any], list[np.random.SeedSequence]]] = field(default_factory=list)

    def release_many(self, data: Any, *, seeds: Any) -> list[Any]:
        self.seen.append((list(data), list(seeds)))
        return BlackBox.release_many(self, data, seeds=seeds)


def test_fit_is_reproducible_and_scores_one_finite_float_per_target():
    knowledge = _knowledge(_BUILT_IN, "model")
    release, targets = _trained_model_release(_BUILT_IN)
    for attack in (LiRA(n_shadows=4), LiRA(n_shadows=4, online=False), LiRA(n_shadows=2, fix_variance=True)):
        a = attack.fit(knowledge, rng=np.random.default_rng(0))
        b = attack.fit(knowledge, rng=np.random.default_rng(0))
        c = attack.fit(knowledge, rng=np.random.default_rng(1))
        assert isinstance(a, FittedLiRA)
        for f in dataclasses.fields(GaussianFits):
            np.testing.assert_array_equal(getattr(a.fits, f.name), getattr(b.fits, f.name))
        assert a.threshold == b.threshold and np.isfinite(a.threshold) and isinstance(a.threshold, float)
        assert not np.array_equal(a.fits.mu_out, c.fits.mu_out)
        s = a.score(release, targets)
        assert s.dtype == np.float64 and s.shape == targets.shape and np.all(np.isfinite(s))
        np.testing.assert_array_equal(s, b.score(release, targets))
        # the score is LiRA's of the release's confidence on the target
        x, y = _encode(knowledge.targets)
        want = lira_scores(release.confidence(x, y), a.fits, online=attack.online)
        np.testing.assert_array_equal(s, want)


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_shadows_hold_the_target_in_half_and_have_the_public_size(neighbours):
    table = _table()
    box = _SpyBox(_small_model())
    targets = table.iloc[[197, 199]]
    knowledge = Knowledge(table.iloc[:150], targets, 20, box, neighbours=neighbours, encoder=_encode)
    fitted = LiRA(n_shadows=6).fit(knowledge, rng=np.random.default_rng(3))
    assert len(box.seen) == 2  # one batch per target
    identities = set()
    for t, (datasets, seeds) in enumerate(box.seen):
        assert len(datasets) == 6
        for s, (d, seed) in enumerate(zip(datasets, seeds, strict=True)):
            assert isinstance(d, TrainingData) and len(d) == 152 and d.public_size == 20
            holds = bool(d.include[150 + t])
            assert holds == (s < 3)
            assert not d.include[150 + (1 - t)]  # the other target never
            assert d.n_train == (20 if holds or neighbours == "replace" else 19)
            identities.add(str(seed_identity(seed)))
        x, y = _encode(pd.concat([table.iloc[:150], targets]))
        np.testing.assert_array_equal(datasets[0].x, x)
        np.testing.assert_array_equal(datasets[0].y, y)
    assert len(identities) == 12  # every shadow has its own stream
    assert fitted.fits.mu_in.shape == (2,) and np.all(fitted.fits.valid)
    np.testing.assert_array_equal(fitted.fits.n_in, [3, 3])


def test_fpc_divides_the_shadows_variance_by_one_minus_n_over_the_pool():
    knowledge = _knowledge(_BUILT_IN, "model")
    plain = LiRA(n_shadows=4).fit(knowledge, rng=np.random.default_rng(4))
    corrected = LiRA(n_shadows=4, fpc=True).fit(knowledge, rng=np.random.default_rng(4))
    factor = 1 - 20 / (150 + 1)  # n = 20 drawn from the 150 auxiliary records and the target
    np.testing.assert_allclose(corrected.fits.sigma_in**2 * factor, plain.fits.sigma_in**2, rtol=1e-12)
    np.testing.assert_allclose(corrected.fits.sigma_out**2 * factor, plain.fits.sigma_out**2, rtol=1e-12)


def test_attack_errors():
    table = _table()
    no_encoder = Knowledge(table.iloc[:150], table.iloc[[199]], 20, BlackBox(_small_model()))
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match=r"attack 'lira' needs the public feature encoding of the records"):
        LiRA(n_shadows=4).fit(no_encoder, rng=rng)
    with pytest.raises(
        TypeError, match=r"attack 'lira' needs a privgame\.attacks\.knowledge\.Knowledge .*got DataFrame"
    ):
        LiRA(n_shadows=4).fit(table, rng=rng)
    small = Knowledge(table.iloc[:10], table.iloc[[199]], 20, BlackBox(_small_model()), encoder=_encode)
    with pytest.raises(ValueError, match="LiRA needs at least dataset_size = 20 auxiliary records, got 10"):
        LiRA(n_shadows=4).fit(small, rng=rng)
    with pytest.raises(ValueError, match=r"n_shadows must be even \(half of the shadows train on the target\), got 5"):
        LiRA(n_shadows=5)
    with pytest.raises(ValueError, match=r"n_shadows must be an integer in \[4, 1000000\], got 2\."):
        LiRA(n_shadows=2)
    with pytest.raises(ValueError, match=r"n_shadows must be an integer in \[2, 1000000\], got 0\."):
        LiRA(n_shadows=0, fix_variance=True)
    with pytest.raises(TypeError, match=r"n_shadows must be an integer, got 4\.0\."):
        LiRA(n_shadows=4.0)
    assert LiRA(n_shadows=2, fix_variance=True).n_shadows == 2
    with pytest.raises(ValueError, match="offline_test must be one of one-sided, density, got 'two-sided'"):
        LiRA(offline_test="two-sided")
    for name in ("online", "fix_variance", "fpc"):
        for bad in (1, "yes", None, np.True_):
            with pytest.raises(TypeError, match=rf"{name} must be true or false, got {bad!r}\."):
                LiRA(**{name: bad})
    fitted = LiRA(n_shadows=4).fit(_knowledge(_BUILT_IN, "model"), rng=rng)
    with pytest.raises(TypeError, match=r"LiRA scores a trained model \(a ModelRelease\), got DataFrame"):
        fitted.score(table, np.zeros(1, dtype=np.intp))
    with pytest.raises(TypeError, match=r"LiRA scores a trained model \(a ModelRelease\), got ndarray"):
        fitted.score(np.zeros((1, 6)), np.zeros(1, dtype=np.intp))


# -- a statistical check: LiRA sees a memorised record ----------------------------------------------------------
def _population(rng: np.random.Generator, n: int) -> pd.DataFrame:
    label = rng.integers(0, 2, n)
    a = np.where(label == 1, 2.0, -2.0) + rng.normal(0, 0.5, n)
    return pd.DataFrame({"a": a, "b": rng.normal(0, 1, n), "label": label})


def _encode_ab(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return table[["a", "b"]].to_numpy(np.float32), table["label"].to_numpy(np.int64).copy()


def _in_and_out_scores(seed: int, k: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """LiRA (16 shadows) fitted for a mislabelled record deep inside the other class, then its online scores under
    k IN and k OUT target models (an MLP trained 150 full-batch epochs on 40 private records)."""
    rng = np.random.default_rng(seed)
    n = 40
    mech = MLPClassifier(hidden=(32,), epochs=150, batch_size=n, learning_rate=0.02)
    target = pd.DataFrame({"a": [2.0], "b": [0.0], "label": [0]})
    knowledge = Knowledge(_population(rng, 200), target, n, BlackBox(mech), encoder=_encode_ab)
    fitted = LiRA(n_shadows=16).fit(knowledge, rng=rng)
    x, y = _encode_ab(pd.concat([_population(rng, n), target], ignore_index=True))
    with_target = np.ones(n + 1, dtype=bool)
    with_target[n - 1] = False  # 39 private records and the target
    without = np.ones(n + 1, dtype=bool)
    without[n] = False  # the 40 private records
    data = [TrainingData(x, y, with_target if i < k else without) for i in range(2 * k)]
    seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()).spawn(2 * k)
    releases = mech.release_runs(data, rngs=[np.random.default_rng(s) for s in seeds])
    scores = np.array([fitted.score(r, np.zeros(1, dtype=np.intp))[0] for r in releases])
    return scores[:k], scores[k:]


def test_online_lira_scores_a_memorised_record_higher_under_in_models():
    """The IN models memorise the mislabelled record, and LiRA's online score under them exceeds that under OUT
    models on average.

    Checks: Welch's t-statistic of the mean difference ≥ 3.1 (the one-sided 1e-3 point of N(0, 1)), and the
    one-sided Mann–Whitney p-value < 1e-3 (16 against 16).  An attack that cannot tell (IN and OUT scores
    exchangeable) passes each with probability about 1e-3.  Sizing for a correct implementation, measured over
    seeds 0-99 and 2026 of this very setup: t ≥ 12.9 (mean 36), and the IN and OUT scores fully separated in every
    seed (lowest IN score 0.38, highest OUT score −27; Mann–Whitney p = 1/C(32, 16) = 8e-7), so no seed of 101
    came near either bound.
    """
    s_in, s_out = _in_and_out_scores(2026)
    assert np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))
    se = np.sqrt(s_in.var(ddof=1) / s_in.size + s_out.var(ddof=1) / s_out.size)
    assert s_in.mean() - s_out.mean() >= 3.1 * se, (s_in, s_out)
    assert mannwhitneyu(s_in, s_out, alternative="greater").pvalue < 1e-3
