"""The realised-batch normalisation's count channel (mechanisms/dpsgd/normalisation_leak.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgame.mechanisms.dpsgd.normalisation_leak import update_norm_audit, update_norm_scores


def test_at_full_batch_the_realised_divisor_refutes_the_claim_and_the_public_ones_do_not():
    """σ = 4 claims ε = 0.93 at δ = 1e-5; the update's norm reads n against n + 1 (μ ≈ √(2d)/n = 7.1): the
    Clopper–Pearson audit of 200 runs a side reaches 3.1.  Dividing by the public qN or by nothing leaves the
    claim standing (a sound audit refutes a true claim with probability at most 5 %)."""
    realised = update_norm_audit("realised", rows=20, features=5000, sigma=4.0, runs=200)
    assert realised.refuted and realised.epsilon_lb > 3.0
    assert realised.claim == pytest.approx(0.926, abs=1e-3)
    for normalisation in ("expected", "none"):
        control = update_norm_audit(normalisation, rows=20, features=5000, sigma=4.0, runs=200)
        assert not control.refuted, (normalisation, control)


@pytest.mark.parametrize("rows", [20, 40])
def test_the_count_channel_is_sqrt_2d_over_n_at_full_batch(rows):
    """The standardised gap of the two worlds' norms is √(2d)/n (d = 2·5000 + 2 parameters); 400 runs a side
    estimate it within about 0.07 + 2 % of itself (the standard error of a standardised difference)."""
    ins, outs = update_norm_scores("realised", rows=rows, features=5000, sigma=4.0, runs=400, seed=3)
    gap = (ins.mean() - outs.mean()) / math.sqrt((ins.var() + outs.var()) / 2)
    predicted = math.sqrt(2 * 10_002) / rows
    assert gap == pytest.approx(predicted, rel=0.08)


def test_subsampling_hides_the_count():
    """At q = 0.5 the count is Bin(n, q): the channel falls to about √(q/(n(1 − q))) = 0.22, below the claim."""
    leak = update_norm_audit("realised", rows=20, features=5000, sigma=4.0, sampling_rate=0.5, runs=200)
    assert leak.count_channel_mu == pytest.approx(math.sqrt(0.5 / 10))
    assert not leak.refuted


def test_the_same_seed_gives_the_same_scores():
    a = update_norm_scores("realised", rows=5, features=10, sigma=1.0, runs=3, seed=7)
    b = update_norm_scores("realised", rows=5, features=10, sigma=1.0, runs=3, seed=7)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"normalisation": "median"}, "normalisation must be one of"),
        ({"rows": 0}, "rows"),
        ({"features": 10**12}, "features"),
        ({"features": 1_000_000, "runs": 100}, "too large"),
        ({"sigma": 0.0}, "sigma"),
        ({"sampling_rate": 1.5}, "sampling_rate"),
        ({"runs": 0}, "runs"),
        ({"confidence": 1.0}, "confidence"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(kwargs, message):
    args = {"normalisation": "realised", "rows": 5, "features": 10, "sigma": 1.0, "runs": 2} | kwargs
    with pytest.raises(ValueError, match=message) as info:
        update_norm_audit(args.pop("normalisation"), **args)
    assert "\n" not in str(info.value)
