"""Opacus under audit (``opacus-whitebox``): Opacus's own PrivacyEngine trains the user's model and privgame's canary
rows, which its sampler, hooks, clipping and noise handle as any other row; the release follows the closed form,
matches privgame's loop under the same contract in distribution, and the errors are one line."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from privgame.analysis.accounting import dpsgd_claim  # noqa: E402
from privgame.data.canaries import canary_data  # noqa: E402
from privgame.engine.cli import main  # noqa: E402
from privgame.mechanisms.dpsgd.opacus_engine import (  # noqa: E402
    LoopWhiteBox,
    OpacusWhiteBox,
    opacus_batch_size,
    opacus_epsilon,
)

MLP = "torch_factories:two_layer_mlp"  # 64 → 16 → 10 on the digits: 1,210 coordinates
_N, _Q, _T, _SIGMA, _LR, _M = 100, 0.1, 20, 0.5, 0.5, 600
_ROWS = _N + _M  # the loop trains on the rows and every canary row (a non-member's gradient is 0)


def digits(bits, train_rows=_N):
    return canary_data(np.asarray(bits), data="digits", train_rows=train_rows, canary=None, canary_seed=0)


def _kw(**kw):
    base = dict(noise_multiplier=_SIGMA, sampling_rate=_Q, steps=_T, learning_rate=_LR, model=MLP)
    base.update(kw)
    return base


def _releases(mech, runs, seed=0):
    data = [digits(np.random.default_rng(seed + k).random(_M) < 0.5) for k in range(runs)]
    values = mech.release_runs(data, rngs=[np.random.default_rng(seed + 1000 + k) for k in range(runs)])
    return np.concatenate(values), np.concatenate([d.membership for d in data])


# ------------------------------------------------------------------------------------------------------ sampling, ε
@pytest.mark.parametrize(
    ("rows", "rate", "batch"), [(100, 0.1, 10), (1000, 0.1, 100), (10, 0.25, 3), (1000, 0.01, 10), (5, 1.0, 5)]
)
def test_the_loader_batch_for_which_opacus_samples_at_the_rate(rows, rate, batch):
    assert opacus_batch_size(rows, rate) == batch
    assert -(-rows // batch) == round(1 / rate)  # Opacus's rate: 1 / len(loader)


@pytest.mark.parametrize(("rows", "rate"), [(100, 0.3), (10, 1 / 6), (3, 0.25)])
def test_a_rate_opacus_cannot_realise_gives_none(rows, rate):
    assert opacus_batch_size(rows, rate) is None


def test_opacus_rdp_epsilon_is_above_the_pld_claim_and_close_to_it():
    """Opacus's RDP accountant is an upper bound on the same mechanism's ε, looser than the PLD's."""
    rdp = opacus_epsilon(1.0, 0.1, 100, 1e-5)
    pld = dpsgd_claim(1.0, 0.1, 100).epsilon(1e-5)
    assert pld < rdp < 1.5 * pld


def test_derived_parameters_show_opacuss_epsilon_beside_sigma():
    derived = OpacusWhiteBox(**_kw(noise_multiplier=1.0, steps=100)).derived_parameters()
    assert derived["opacus_epsilon"] == pytest.approx(opacus_epsilon(1.0, _Q, 100, 1e-5))


# ----------------------------------------------------------------------------------------------------- the release
def test_same_seed_same_release_different_seed_different():
    mech = OpacusWhiteBox(**_kw(steps=5))
    data = digits(np.random.default_rng(3).random(40) < 0.5)
    one, two, other = (mech.release(data, rng=np.random.default_rng(s)) for s in (9, 9, 10))
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, other)


@pytest.mark.parametrize("mode", ["hooks", "ghost"])
@pytest.mark.parametrize("clip_norm", [1.0, 0.25])
def test_without_noise_each_member_canary_moves_by_its_clipped_insertions_and_nothing_else(mode, clip_norm):
    """q = 1 (every row and every canary row in every batch), σ ≈ 0: a member canary's raw gradient 4C is clipped
    by Opacus to C (up to its 10⁻⁶ in the factor), so its descent is T·lr·C/(N + m) (Opacus divides the sum by its
    expected batch size int((N + m)·q)); a non-member's is 0: the data's gradients never reach the canary layer."""
    mech = OpacusWhiteBox(
        **_kw(noise_multiplier=1e-300, sampling_rate=1.0, steps=3, clip_norm=clip_norm), grad_sample_mode=mode
    )
    bits = np.arange(200) % 3 == 0
    descent = mech.release(digits(bits, train_rows=50), rng=np.random.default_rng(0))
    np.testing.assert_allclose(descent[bits], 3 * 0.5 * clip_norm / 250, rtol=1e-5)
    np.testing.assert_allclose(descent[~bits], 0.0, atol=1e-290)


def _moment_z(values, member, sigma=_SIGMA):
    """As the engine's test, with Opacus's divisor: release = lr/(q(N + m))·(C·S·Binomial(T, q) + σC√T·N(0, 1))."""
    a = _LR / (_Q * _ROWS)
    k1 = a * member * _T * _Q
    k2 = a**2 * (member * _T * _Q * (1 - _Q) + sigma**2 * _T)
    k4 = a**4 * member * _T * _Q * (1 - _Q) * (1 - 6 * _Q * (1 - _Q))
    n = len(values)
    return (values.mean() - k1) / np.sqrt(k2 / n), (values.var(ddof=1) - k2) / np.sqrt((k4 + 2 * k2**2) / n)


def test_opacus_release_follows_the_closed_form_and_the_engines_law():
    """Members and non-members of 6 Opacus releases of 600 canaries: mean and variance z statistics within 4.5 of
    the closed form (about 1e-5 for a correct construction per statistic), and the two-sample KS test against
    privgame's loop at the same model, rows, canary rows, σ, q, T (p > 1e-3): Opacus and the engine are the same
    mechanism, so their audits agree."""
    values, bits = _releases(OpacusWhiteBox(**_kw()), runs=6)
    engine, engine_bits = _releases(LoopWhiteBox(**_kw()), runs=6, seed=50)
    for member in (0, 1):
        group = values[bits == bool(member)]
        z_mean, z_var = _moment_z(group, member)
        assert abs(z_mean) < 4.5 and abs(z_var) < 4.5, (member, z_mean, z_var)
        assert stats.ks_2samp(group, engine[engine_bits == bool(member)]).pvalue > 1e-3


def test_the_closed_form_check_catches_opacus_at_another_noise():
    """Meta-test: Opacus releases at 1.5 σ fail the variance statistic at σ by far."""
    values, bits = _releases(OpacusWhiteBox(**_kw(noise_multiplier=1.5 * _SIGMA)), runs=3)
    assert _moment_z(values[~bits], 0)[1] > 10


def _audits(mech, runs, seed):
    """Per run, Steinke's one-run audit with k₊ = k₋ = 60 guesses; the pooled (r, v) and the median ε_lb."""
    from privgame.analysis.one_run import count_correct, epsilon_lower_bound, guesses_top_k

    values, bits = _releases(mech, runs=runs, seed=seed)
    r_all = v_all = 0
    bounds = []
    for k in range(runs):
        run = slice(k * _M, (k + 1) * _M)
        guesses = guesses_top_k(values[run], 60, 60, rng=np.random.default_rng(k))
        r, v = count_correct(guesses, bits[run])
        r_all, v_all = r_all + r, v_all + v
        bounds.append(epsilon_lower_bound(_M, r, v, confidence=0.95))
    return r_all, v_all, float(np.median(bounds))


def _same_accuracy(a, b):
    """Fisher's exact test of equal guess accuracy (correct of made) between two pooled audits."""
    return stats.fisher_exact([[a[1], a[0] - a[1]], [b[1], b[0] - b[1]]]).pvalue


def test_the_audits_of_opacus_and_the_engine_agree_and_the_check_sees_twice_the_noise():
    """Same model, data, σ, q, T: 6 audited releases each (720 guesses).  Their accuracies agree (Fisher p > 1e-3;
    measured 599 and 593 correct, p = 0.73; median Steinke bounds 1.20 and 1.22).  Meta-test: Opacus at 2σ is
    told apart from the engine at σ by the same check (p < 1e-3)."""
    engine = _audits(LoopWhiteBox(**_kw()), runs=6, seed=50)
    opacus = _audits(OpacusWhiteBox(**_kw()), runs=6, seed=0)
    assert _same_accuracy(engine, opacus) > 1e-3, (engine, opacus)
    assert abs(engine[2] - opacus[2]) < 0.5, (engine, opacus)
    noisier = _audits(OpacusWhiteBox(**_kw(noise_multiplier=2 * _SIGMA)), runs=6, seed=0)
    assert _same_accuracy(engine, noisier) < 1e-3, (engine, noisier)


def test_an_empty_poisson_batch_still_adds_the_noise():
    """q small enough that most batches are empty: Opacus still adds its noise (the non-members' descents have the
    closed form's spread), and the member canaries sampled alone still move."""
    mech = OpacusWhiteBox(**_kw(sampling_rate=0.02, steps=10, noise_multiplier=1.0))  # one row a batch on average
    values, bits = _releases(mech, runs=2)
    scale = _LR / (0.02 * _ROWS) * 1.0 * np.sqrt(10)
    assert stats.kstest(values[~bits], "norm", args=(0.0, scale)).pvalue > 1e-3


def test_opacus_keeps_the_component_contract():
    from privgame.engine.testing import check_component

    check_component(OpacusWhiteBox(noise_multiplier=3.0, sampling_rate=0.5, steps=5, model="mlp"))


# ----------------------------------------------------------------------------------------------- errors, in one line
@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        ({"normalisation": "realised"}, ValueError, "normalisation must be 'expected' for opacus-whitebox"),
        ({"model": "resnet"}, ValueError, "model must be one of logistic, mlp or a factory"),
        ({"model": "nowhere_xyz:make"}, ValueError, "No module named 'nowhere_xyz'"),
        ({"sampling_rate": 0.3}, ValueError, r"sampling_rate must be 1/k for an integer k .* got 0.3"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kw, error, message):
    with pytest.raises(error, match=message) as info:
        OpacusWhiteBox(**_kw(**kw))
    assert "\n" not in str(info.value)


def test_rows_on_which_opacus_cannot_realise_the_rate_are_refused_at_release():
    mech = OpacusWhiteBox(**_kw(sampling_rate=0.25))
    with pytest.raises(ValueError, match=r"sampling_rate must be 1/k for an integer k that Opacus realises on 3 rows"):
        mech.release(
            digits(np.ones(1, dtype=bool), train_rows=2), rng=np.random.default_rng(0)
        )  # 2 rows + 1 canary row


def test_without_opacus_the_mechanism_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "opacus", None)  # import opacus now raises ImportError
    with pytest.raises(ValueError, match=r"needs Opacus: pip install 'privgame\[opacus\]'") as info:
        OpacusWhiteBox(**_kw())
    assert "\n" not in str(info.value)


def test_without_opacus_a_config_fails_in_one_line_with_exit_status_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "opacus", None)
    config = tmp_path / "c.toml"
    config.write_text(
        '[experiment]\nname = "o"\nseed = 1\nrepetitions = 1\n'
        '[game]\nname = "one-run"\nm = 20\nk_pos = 5\nk_neg = 5\ndata = "digits"\ntrain_rows = 50\n'
        '[mechanism]\nname = "opacus-whitebox"\nnoise_multiplier = 1.0\nsampling_rate = 0.1\nsteps = 2\n'
        '[attack]\nname = "identity"\n'
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs Opacus" in lines[0]
    assert not (tmp_path / "out").exists()
