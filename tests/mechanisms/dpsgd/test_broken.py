"""Broken DP-SGD on purpose (``dpsgd-broken``): each flaw does exactly what it says, claims the correct step's ε,
and a one-run audit refutes that claim where the flaw leaks (the correct step is not refuted)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgame.analysis.accounting import dpsgd_claim  # noqa: E402
from privgame.data.canaries import canary_data  # noqa: E402
from privgame.mechanisms.dpsgd.broken import FLAWS, DPSGDBroken  # noqa: E402
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox  # noqa: E402

MLP = "torch_factories:two_layer_mlp"  # 64 → 16 → 10 on the digits: 1,210 coordinates
_N, _Q, _T, _SIGMA, _LR, _M = 100, 0.1, 20, 0.5, 0.5, 1000


def digits(bits, train_rows=_N):
    return canary_data(np.asarray(bits), data="digits", train_rows=train_rows, canary=None, canary_seed=0)


def _releases(mech, runs=6, m=_M):
    data = [digits(np.random.default_rng(k).random(m) < 0.5) for k in range(runs)]
    values = mech.release_runs(data, rngs=[np.random.default_rng(500 + k) for k in range(runs)])
    return np.concatenate(values), np.concatenate([d.membership for d in data])


def _moment_z(values, member, *, signal, noise, steps=_T):
    """z statistics of the sample mean and variance against release = lr/(qN)·(signal·S·Binomial(T, q) + noise·W),
    W ~ N(0, steps) (momentum 0), from its cumulants: signal is the inserted canary gradient, noise its std per step
    on the sum."""
    a = _LR / (_Q * _N)
    k1 = a * member * signal * _T * _Q
    k2 = a**2 * (member * signal**2 * _T * _Q * (1 - _Q) + noise**2 * steps)
    k4 = a**4 * member * signal**4 * _T * _Q * (1 - _Q) * (1 - 6 * _Q * (1 - _Q))
    n = len(values)
    return (values.mean() - k1) / np.sqrt(k2 / n), (values.var(ddof=1) - k2) / np.sqrt((k4 + 2 * k2**2) / n)


def _mech(flaw, **kw):
    base = dict(noise_multiplier=_SIGMA, sampling_rate=_Q, steps=_T, learning_rate=_LR, model=MLP)
    base.update(kw)
    return DPSGDBroken(flaw=flaw, canary_layout="reserved", **base)


# ------------------------------------------------------------------------------------------------- what each flaw is
@pytest.mark.parametrize("layout", ["dense", "reserved"])
def test_flaw_none_is_the_white_box_mechanism_itself(layout):
    model = "mlp" if layout == "dense" else MLP
    kw = dict(noise_multiplier=0.7, sampling_rate=0.2, steps=6, momentum=0.5, model=model, canary_layout=layout)
    data = digits(np.random.default_rng(1).random(50) < 0.5)
    broken = DPSGDBroken(flaw="none", **kw).release(data, rng=np.random.default_rng(2))
    correct = DPSGDWhiteBox(**kw).release(data, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(broken, correct)


@pytest.mark.parametrize(
    ("flaw", "signal", "noise"),
    [
        ("none", 1.0, _SIGMA),
        ("noise_for_mean", 1.0, _SIGMA / (_Q * _N)),  # σ in effect divided by qN
        ("unclipped", 4.0, _SIGMA),  # the canary's raw norm 4C reaches the sum
        ("clip_mismatch", 4.0, _SIGMA),  # clipped at 4C, noise scaled to C
    ],
)
def test_each_flaw_follows_its_closed_form(flaw, signal, noise):
    """Members and non-members of 6 releases of 1,000 canaries: mean and variance z statistics within 4.5 of the
    flaw's closed form (a correct construction exceeds it with probability about 1e-5 per statistic)."""
    values, bits = _releases(_mech(flaw))
    for member in (0, 1):
        z_mean, z_var = _moment_z(values[bits == bool(member)], member, signal=signal, noise=noise)
        assert abs(z_mean) < 4.5 and abs(z_var) < 4.5, (flaw, member, z_mean, z_var)


def test_the_closed_form_check_tells_the_flaws_apart():
    """Meta-test: the correct step's releases fail the noise_for_mean and unclipped closed forms by far."""
    values, bits = _releases(_mech("none"), runs=3)
    _, z_var = _moment_z(values[~bits], 0, signal=1.0, noise=_SIGMA / (_Q * _N))
    assert z_var > 100
    z_mean, _ = _moment_z(values[bits], 1, signal=4.0, noise=_SIGMA)
    assert z_mean < -10


def test_reused_noise_descent_carries_T_times_one_noise_draw():
    """The descent of a reused-noise release: one draw z added T times, so its noise has std T·σC, not √T·σC."""
    values, bits = _releases(_mech("reused_noise", score="descent"))
    for member in (0, 1):
        z_mean, z_var = _moment_z(values[bits == bool(member)], member, signal=1.0, noise=_SIGMA, steps=_T**2)
        assert abs(z_mean) < 4.5 and abs(z_var) < 4.5, (member, z_mean, z_var)


@pytest.mark.parametrize("momentum", [0.0, 0.6])
def test_reused_noise_step_changes_read_the_insertions_exactly(momentum):
    """With the noise reused, Σ_t |u_t − u_{t−1}| is 0 for a canary never inserted (to rounding) and positive for a
    member inserted in some but not all steps; under the correct step it is noise for everyone."""
    mech = _mech("reused_noise", momentum=momentum)
    assert mech.statistic == "step_changes"
    values, bits = _releases(mech, runs=2)
    assert np.all(np.abs(values[~bits]) < 1e-12)
    assert np.mean(values[bits] > 1e-6) > 0.8  # P(sampled in some but not all of 20 steps) = 1 − 0.9²⁰ − 0.1²⁰
    control, _ = _releases(_mech("none", score="step_changes"), runs=1)
    assert np.all(control > 1e-6)


def test_realised_batch_divides_by_the_realised_batch_size():
    """q = 1, no noise: every member canary is in every batch, so each step divides by N + (number of members)."""
    mech = DPSGDBroken(
        flaw="realised_batch", noise_multiplier=1e-300, sampling_rate=1.0, steps=3, learning_rate=0.5, model=MLP,
        canary_layout="reserved",
    )  # fmt: skip
    bits = np.arange(200) % 4 == 0
    descent = mech.release(digits(bits, train_rows=50), rng=np.random.default_rng(0))
    np.testing.assert_allclose(descent[bits], 3 * 0.5 * 1.0 / (50 + bits.sum()), rtol=1e-12)
    np.testing.assert_allclose(descent[~bits], 0.0, atol=1e-290)


def test_every_flaw_claims_the_correct_steps_epsilon():
    """The claim the broken code would report: DP-SGD's PLD at (q, σ, T), whatever the flaw (the correct engine
    with the realised normalisation claims nothing instead).  σ = 2 keeps the accountant fast."""
    expected = dpsgd_claim(2.0, _Q, _T).epsilon(1e-5)
    for flaw in FLAWS:
        assert _mech(flaw, noise_multiplier=2.0).privacy_claim().epsilon(1e-5) == pytest.approx(expected, rel=1e-12)
    assert DPSGDWhiteBox(noise_multiplier=_SIGMA, normalisation="realised").privacy_claim() is None


@pytest.mark.parametrize("flaw", sorted(FLAWS))
def test_release_runs_equal_single_releases_for_every_flaw(flaw):
    mech = _mech(flaw, steps=8, sampling_rate=0.3, momentum=0.4)
    data = [digits(np.random.default_rng(k).random(40) < 0.5, train_rows=60) for k in range(3)]
    batched = mech.release_runs(data, rngs=[np.random.default_rng(70 + k) for k in range(3)])
    for k, d in enumerate(data):
        np.testing.assert_allclose(batched[k], mech.release(d, rng=np.random.default_rng(70 + k)), atol=1e-10)


def test_same_seed_same_release_different_seed_different():
    mech = _mech("reused_noise", steps=5)
    data = digits(np.random.default_rng(3).random(30) < 0.5)
    one, two, other = (mech.release(data, rng=np.random.default_rng(s)) for s in (9, 9, 10))
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, other)


@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        (
            {"flaw": "no_noise"},
            ValueError,
            "flaw must be one of none, noise_for_mean, unclipped, clip_mismatch, reused_noise",
        ),
        ({"flaw": 3}, ValueError, "flaw must be one of"),
        ({"score": "loss"}, ValueError, "score must be one of auto, descent, step_changes, got 'loss'"),
        ({"canary_scale": 0.5}, ValueError, "canary_scale"),
        ({"canary_scale": 1.0, "flaw": "clip_mismatch"}, ValueError, "canary_scale must be above 1 for flaw"),
        ({"canary_scale": float("nan")}, ValueError, "canary_scale"),
        ({"canary_layout": "separate"}, ValueError, "canary_layout must be 'dense' or 'reserved' for dpsgd-broken"),
        ({"normalisation": "realised"}, ValueError, "normalisation must stay 'expected' for dpsgd-broken"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kw, error, message):
    base = dict(noise_multiplier=1.0, model="mlp")
    base.update(kw)
    with pytest.raises(error, match=message) as info:
        DPSGDBroken(**base)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------------------------------- the audit catches
def _catch_config(flaw: str | list[str], *, repetitions: int, **analysis: object) -> dict:
    """White-box one-run audits of ``flaw``: 1,000 canaries, 100 + 100 guesses, σ = 2 over 20 steps at q = 0.1,
    canaries of raw norm 10C (a claim of ε ≈ 1.08 at δ = 1e-5)."""
    return {
        "experiment": {"name": "catch", "seed": 5, "repetitions": repetitions},
        "game": {"name": "one-run", "m": 1000, "k_pos": 100, "k_neg": 100, "data": "digits", "train_rows": 100},
        "mechanism": {
            "name": "dpsgd-broken",
            "flaw": flaw,
            "noise_multiplier": 2.0,
            "sampling_rate": 0.1,
            "steps": 20,
            "learning_rate": 0.5,
            "canary_scale": 10.0,
        },
        "attack": {"name": "identity"},
        "analysis": {"confidence": 0.95, "delta": 1e-5, **analysis},
    }


def test_one_audit_refutes_each_leaking_flaw_and_not_the_correct_step():
    """One white-box one-run audit each (1,000 canaries, 100 + 100 guesses, σ = 2 over 20 steps at q = 0.1,
    canaries of raw norm 10C: a claim of ε ≈ 1.08 at δ = 1e-5): noise_for_mean, unclipped, clip_mismatch and
    reused_noise are refuted at 95 %; the correct step is not (its bound stays below its claim: a seeded run, whose
    failure would mean a bound above a true ε)."""
    import privgame

    config = _catch_config(["none", "noise_for_mean", "unclipped", "clip_mismatch", "reused_noise"], repetitions=1)
    with privgame.run(config, cache=False) as results:
        summary = results.summary().set_index("mechanism.flaw")
    print(summary[["epsilon_analytic", "epsilon_lb_median", "over_claim", "verdict"]])
    assert summary["epsilon_analytic"].nunique() == 1 and 1.0 < summary["epsilon_analytic"].iloc[0] < 1.2
    leaking = ["noise_for_mean", "unclipped", "clip_mismatch", "reused_noise"]
    assert summary.loc[leaking, "over_claim"].tolist() == [1, 1, 1, 1]
    assert summary.loc[leaking, "verdict"].tolist() == ["refuted at 95 %"] * 4  # one trial: its own test
    assert (summary.loc["none", "over_claim"], summary.loc["none", "verdict"]) == (0, "not refuted")


@pytest.mark.slow
def test_a_sequential_audit_refutes_reused_noise_in_fewer_trials_than_the_fixed_sample_audit():
    """The settings above, 20 repetitions: the fixed-sample audit reads all 20 trials of reused_noise before its
    verdict; the sequential audit ([analysis] sequential = true, the same level) stops refuted after 2, and plays
    only those.  The correct step runs its whole budget and is not refuted."""
    import privgame

    config = _catch_config(["reused_noise", "none"], repetitions=20, sequential=True)
    with privgame.run(config, cache=False) as results:
        sequential = results.summary().set_index("mechanism.flaw")
        played = results.trials().groupby("mechanism.flaw").size()
    assert sequential.loc["reused_noise", "verdict"] == "refuted at 95 %"
    assert sequential.loc["reused_noise", "sequential_trials"] == 2 == played["reused_noise"]
    assert (sequential.loc["none", "verdict"], played["none"]) == ("not refuted", 20)
    with privgame.run(_catch_config("reused_noise", repetitions=20), cache=False) as results:
        fixed = results.summary().iloc[0]
    assert (fixed["verdict"], fixed["n_trials"]) == ("refuted at 95 %", 20)
