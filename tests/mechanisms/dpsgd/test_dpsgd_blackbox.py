"""Black-box input-space canaries in DP-SGD and the negative-loss attack."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")

from attacks import NegativeLoss  # noqa: E402
from mechanisms.dpsgd.blackbox import DPSGDBlackBox  # noqa: E402


def test_validation_names_the_field():
    with pytest.raises(ValueError, match="canary must be one of mislabel, ood"):
        DPSGDBlackBox(noise_multiplier=1.0, canary="poison")
    with pytest.raises(ValueError, match="exactly one of epsilon and noise_multiplier"):
        DPSGDBlackBox()
    with pytest.raises(ValueError, match="canary_seed must be an integer >= 0"):
        DPSGDBlackBox(noise_multiplier=1.0, canary_seed=-1)
    with pytest.raises(ValueError, match=r"m must be at most 797 mislabelled canaries"):
        DPSGDBlackBox(noise_multiplier=1.0).release(np.zeros(800, dtype=bool), rng=np.random.default_rng(0))


def test_canaries_are_fixed_in_advance_and_mislabelled():
    mech = DPSGDBlackBox(noise_multiplier=1.0, train_rows=1000)
    x1, y1 = mech.canaries(50)
    x2, y2 = mech.canaries(50)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    from mechanisms.dpsgd.whitebox import load_digits_tensors

    x, y = load_digits_tensors()
    rows = [int(torch.nonzero((x == row).all(dim=1))[0]) for row in x1[:10]]
    assert all(r >= 1000 for r in rows)  # never a training row
    assert all(int(y1[i]) == (int(y[r]) + 1) % 10 for i, r in enumerate(rows))


def test_reproducible_and_members_have_lower_loss():
    mech = DPSGDBlackBox(noise_multiplier=0.5, sampling_rate=0.2, steps=300, train_rows=100, canary="ood",
                         learning_rate=2.0, model="mlp")  # fmt: skip
    bits = np.random.default_rng(1).random(300) < 0.5
    a = NegativeLoss().score(mech.release(bits, rng=np.random.default_rng(2)), np.arange(300))
    b = NegativeLoss().score(mech.release(bits, rng=np.random.default_rng(2)), np.arange(300))
    np.testing.assert_array_equal(a, b)
    assert stats.mannwhitneyu(a[bits], a[~bits], alternative="greater").pvalue < 1e-6


def test_negative_loss_needs_a_model_release():
    with pytest.raises(TypeError, match="must offer losses"):
        NegativeLoss().score(np.zeros(3), np.arange(3))


def test_release_runs_equals_separate_releases():
    """K models trained at once on their own subsets (include) equal K separate releases (float64, 1e-10)."""
    mech = DPSGDBlackBox(noise_multiplier=0.8, steps=15, train_rows=200, sampling_rate=0.2, model="mlp")
    bits = [np.random.default_rng(k).random(30) < 0.5 for k in range(3)]
    batched = mech.release_runs(bits, rngs=[np.random.default_rng(70 + k) for k in range(3)])
    targets = np.arange(30)
    for k, b in enumerate(bits):
        alone = mech.release(b, rng=np.random.default_rng(70 + k))
        np.testing.assert_allclose(batched[k].losses(targets), alone.losses(targets), rtol=0, atol=1e-10)
        for p, q in zip(alone.model.parameters(), batched[k].model.parameters(), strict=True):
            torch.testing.assert_close(q.detach(), p.detach(), rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="same number of canaries in every run"):
        mech.release_runs([bits[0], bits[1][:5]], rngs=[np.random.default_rng(0), np.random.default_rng(1)])


def test_non_member_canaries_never_change_the_random_stream():
    """Training draws one Poisson uniform per real row and per canary whatever the membership: flipping one canary
    out changes the model only through that canary (so with it out of every batch, the runs agree exactly)."""
    mech = DPSGDBlackBox(noise_multiplier=1.0, steps=10, train_rows=100, sampling_rate=0.2)
    none = np.zeros(20, dtype=bool)
    a = mech.release(none, rng=np.random.default_rng(3))
    b = mech.release(none.copy(), rng=np.random.default_rng(3))
    for p, q in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(p, q)
