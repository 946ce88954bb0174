"""White-box Dirac canaries in DP-SGD: exact descent arithmetic, isolation from the data, soundness (slow)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")

from analysis.accounting import dpsgd_epsilon  # noqa: E402
from attacks import Identity  # noqa: E402
from games import AnalysisSettings, OneRunGame  # noqa: E402
from games.datasets.canaries import canary_data  # noqa: E402
from mechanisms.dpsgd.whitebox import DPSGDWhiteBox  # noqa: E402
from mechanisms.training.canaries import CanaryData  # noqa: E402
from mechanisms.training.data import TrainingData  # noqa: E402


def digits(bits, train_rows=1000):
    """The membership bits over the first ``train_rows`` digits, as the games build them."""
    return canary_data(np.asarray(bits), data="digits", train_rows=train_rows, canary=None, canary_seed=0)


def test_validation_names_the_field():
    with pytest.raises(ValueError, match="exactly one of epsilon and noise_multiplier"):
        DPSGDWhiteBox()
    with pytest.raises(ValueError, match="exactly one of epsilon and noise_multiplier"):
        DPSGDWhiteBox(epsilon=1.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match=r"sampling_rate must be in \(0, 1\]"):
        DPSGDWhiteBox(noise_multiplier=1.0, sampling_rate=0.0)
    with pytest.raises(ValueError, match="model must be one of logistic, mlp"):
        DPSGDWhiteBox(noise_multiplier=1.0, model="resnet")
    with pytest.raises(TypeError, match="steps must be an integer"):
        DPSGDWhiteBox(noise_multiplier=1.0, steps=1.5)
    with pytest.raises(TypeError, match="train_rows"):  # the rows are the game's now
        DPSGDWhiteBox(noise_multiplier=1.0, train_rows=100)  # type: ignore[call-arg]


def test_takes_canary_data_not_bits():
    mech = DPSGDWhiteBox(noise_multiplier=1.0, steps=2)
    with pytest.raises(TypeError, match=r"data must be a mechanisms\.training\.canaries\.CanaryData, got ndarray"):
        mech.release(np.zeros(10, dtype=bool), rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"data\[0\] must be a mechanisms\.training\.canaries\.CanaryData"):
        mech.release_runs([np.zeros(10, dtype=bool)], rngs=[np.random.default_rng(0)])


def test_any_rows_and_classes_from_the_game():
    """Two classes and 5 features (not the digits): the Dirac arithmetic holds on whatever rows the game gives."""
    rng = np.random.default_rng(4)
    rows = TrainingData(rng.random((30, 5)), rng.integers(0, 2, 30), np.ones(30, dtype=bool), n_classes=2)
    bits = np.arange(9) % 2 == 0
    mech = DPSGDWhiteBox(noise_multiplier=1e-300, sampling_rate=1.0, steps=2, learning_rate=0.5)
    before = rows.x.copy()
    descent = mech.release(CanaryData(bits, rows), rng=np.random.default_rng(0))
    np.testing.assert_allclose(descent[bits], 2 * 0.5 * 1.0 / 30, rtol=1e-12)
    np.testing.assert_allclose(descent[~bits], 0.0, atol=1e-15)
    mech.release_runs([CanaryData(bits, rows), CanaryData(~bits, rows)], rngs=[rng, np.random.default_rng(1)])
    np.testing.assert_array_equal(rows.x, before)  # the game's rows are never written


def test_memory_estimate_grows_with_the_games_rows_and_canaries():
    mech = DPSGDWhiteBox(noise_multiplier=1.0)
    small = mech.canary_bytes(1000, rows=1000, features=64, classes=10)
    assert mech.canary_bytes(1000, rows=10_000, features=64, classes=10) > 5 * small
    assert mech.canary_bytes(10**9, rows=1000, features=64, classes=10) > 10**12  # a weight per canary
    # two classes make logistic regression 2 wide: 5 times the canary features of 10 classes
    assert mech.canary_bytes(10**6, rows=1000, features=64, classes=2) > 4 * mech.canary_bytes(
        10**6, rows=1000, features=64, classes=10
    )


def test_epsilon_calibrates_sigma_and_claim_matches():
    mech = DPSGDWhiteBox(epsilon=2.0, sampling_rate=1.0, steps=1)
    assert mech.privacy_claim().epsilon(1e-5) <= 2.0
    assert mech.privacy_claim().epsilon(1e-5) == pytest.approx(dpsgd_epsilon(mech.sigma, 1.0, 1, 1e-5))
    assert mech.privacy_claim().epsilon(1e-5) > 1.99


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_descent_is_exact_without_noise(model):
    """q = 1: every member canary is inserted every step, so its descent is T·lr·C/N exactly; others move 0."""
    mech = DPSGDWhiteBox(noise_multiplier=1e-300, sampling_rate=1.0, steps=3, learning_rate=0.5, model=model)
    bits = np.arange(40) % 3 == 0
    descent = mech.release(digits(bits, train_rows=50), rng=np.random.default_rng(0))
    np.testing.assert_allclose(descent[bits], 3 * 0.5 * 1.0 / 50, rtol=1e-12)
    np.testing.assert_allclose(descent[~bits], 0.0, atol=1e-15)


def test_reproducible_and_seed_dependent():
    mech = DPSGDWhiteBox(noise_multiplier=1.0, steps=10)
    bits = digits(np.random.default_rng(1).random(100) < 0.5, train_rows=100)
    a = mech.release(bits, rng=np.random.default_rng(5))
    b = mech.release(bits, rng=np.random.default_rng(5))
    c = mech.release(bits, rng=np.random.default_rng(6))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_members_descend_further():
    mech = DPSGDWhiteBox(noise_multiplier=0.5, sampling_rate=0.2, steps=50)
    bits = np.random.default_rng(2).random(400) < 0.5
    descent = mech.release(digits(bits, train_rows=200), rng=np.random.default_rng(3))
    assert stats.mannwhitneyu(descent[bits], descent[~bits], alternative="greater").pvalue < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_full_batch_single_step_is_sound(confidence):
    """q = 1, T = 1 with Dirac canaries is the Gaussian mechanism on the bits (the audit's worst case): over
    R = 200 audits the count of bounds above the PLD ε passes the binomial test of STYLE.md."""
    mech = DPSGDWhiteBox(epsilon=2.0, delta=1e-5, sampling_rate=1.0, steps=1)
    truth = mech.privacy_claim().epsilon(1e-5)
    # m = 5,000 and k± = 100: the one-run bound on a Gaussian mechanism at ε = 2 reaches about half of ε here
    # (m = 1,000 gives about 0.3 of it: the estimator's limit, Steinke et al. Fig. 2), so violations are possible.
    game = OneRunGame(m=5000, k_pos=100, k_neg=100, data="digits", train_rows=100)
    settings = AnalysisSettings(confidence=confidence, delta=1e-5)
    bounds = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in np.random.SeedSequence(99).spawn(200):
            outcome = game.play(mech, Identity(), seed=seed)
            bounds.append(game.analyse_trial(outcome, settings, seed=seed)["epsilon_lb"])
    violations = int(np.sum(np.array(bounds) > truth))
    assert stats.binomtest(violations, 200, 1 - confidence, alternative="greater").pvalue > 1e-3
    assert np.median(bounds) > 0.4 * truth  # the worst case is audited closely, not vacuously


@pytest.mark.slow
def test_full_batch_check_catches_too_little_noise():
    """Meta-test: the same check rejects a mechanism whose noise is a third of what its claimed ε needs (the bug a
    wrong noise scale or a missing clip would be): its bounds exceed the claimed ε far more often than β allows."""
    honest = DPSGDWhiteBox(epsilon=2.0, delta=1e-5, sampling_rate=1.0, steps=1)
    claimed = honest.privacy_claim().epsilon(1e-5)
    broken = DPSGDWhiteBox(noise_multiplier=honest.sigma / 3, delta=1e-5, sampling_rate=1.0, steps=1)
    game = OneRunGame(m=5000, k_pos=100, k_neg=100, data="digits", train_rows=100)
    settings = AnalysisSettings(confidence=0.95, delta=1e-5)
    violations, r = 0, 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in np.random.SeedSequence(7).spawn(r):
            outcome = game.play(broken, Identity(), seed=seed)
            violations += game.analyse_trial(outcome, settings, seed=seed)["epsilon_lb"] > claimed
    assert stats.binomtest(violations, r, 0.05, alternative="greater").pvalue <= 1e-3


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_release_runs_equals_separate_releases(model):
    """K releases trained at once (train_ensemble) equal K separate releases with the same rngs (float64, 1e-10)."""
    mech = DPSGDWhiteBox(noise_multiplier=0.8, steps=15, sampling_rate=0.2, model=model)
    bits = [digits(np.random.default_rng(k).random(40) < 0.5, train_rows=200) for k in range(4)]
    batched = mech.release_runs(bits, rngs=[np.random.default_rng(50 + k) for k in range(4)])
    for k, b in enumerate(bits):
        alone = mech.release(b, rng=np.random.default_rng(50 + k))
        np.testing.assert_allclose(batched[k], alone, rtol=0, atol=1e-10)
    assert mech.release_runs([], rngs=[]) == []
    short = digits(bits[1].membership[:5], train_rows=200)
    with pytest.raises(ValueError, match=r"same number of canaries in every run, got 40 in data\[0\] and 5 in"):
        mech.release_runs([bits[0], short], rngs=[np.random.default_rng(0), np.random.default_rng(1)])
    other_rows = digits(bits[1].membership, train_rows=100)
    with pytest.raises(ValueError, match=r"data\[1\] must share data\[0\]'s rows and canaries"):
        mech.release_runs([bits[0], other_rows], rngs=[np.random.default_rng(0), np.random.default_rng(1)])
    with pytest.raises(ValueError, match="one rng per input"):
        mech.release_runs(bits, rngs=[np.random.default_rng(0)])
