"""A user's torch.nn.Module in the DP-SGD engine: the factory contract's refusals, the reserved canary layout's
arithmetic and law, the ensemble equal to single releases, and the per-example path of unsupported layers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")

from privgame.data.canaries import canary_data  # noqa: E402
from privgame.engine.cli import main  # noqa: E402
from privgame.mechanisms.dpsgd.clipping import clipped_gradient_sum, trainable_parameters  # noqa: E402
from privgame.mechanisms.dpsgd.devices import make_generator  # noqa: E402
from privgame.mechanisms.dpsgd.user_model import (  # noqa: E402
    ModelFactory,
    ModelNotice,
    check_model,
    reserved_coordinates,
    reserved_masks,
)
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox  # noqa: E402

MLP = "torch_factories:two_layer_mlp"  # 64 → 16 → 10 on the digits: 1,210 coordinates
GATED = "torch_factories:gated_mlp"
WIDE = "torch_factories:wide_mlp"  # room for the contract checks' 200 canaries on their 6 features


def digits(bits, train_rows=100):
    return canary_data(np.asarray(bits), data="digits", train_rows=train_rows, canary=None, canary_seed=0)


# ----------------------------------------------------------------------------------- the contract, refused in one line
@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("no_such_package_xyz.models:make", "No module named 'no_such_package_xyz'"),
        ("torch_factories:missing", "missing"),
        ("torch_factories:NOT_CALLABLE", "must name a function"),
        ("torch_factories:", "model"),
    ],
)
def test_a_factory_that_cannot_be_imported_is_refused_when_the_mechanism_is_built(model, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        DPSGDWhiteBox(noise_multiplier=1.0, model=model, canary_layout="reserved")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("torch_factories:raises", r"failed for input_shape=\(64,\), n_classes=10: RuntimeError: out of ideas"),
        ("torch_factories:not_a_module", "must return a torch.nn.Module, got str"),
        ("torch_factories:frozen", "must have at least one trainable parameter, got none"),
        ("torch_factories:with_batchnorm", "cannot be clipped per example"),
        ("torch_factories:attention", r"clipped per example: TypeError: module 'attention' must return one tensor"),
        ("torch_factories:wrong_output", r"must map \(B, \*\(64,\)\) to logits \(B, 10\), got \(2, 11\)"),
        ("torch_factories:global_rng", "must draw its initial weights from the generator"),
    ],
)
def test_a_factory_that_breaks_the_contract_is_refused_in_one_line(model, message):
    with pytest.raises(ValueError, match=message) as info:
        check_model(model, (64,), 10, 10)
    assert "\n" not in str(info.value) and model in str(info.value)


def test_more_canaries_than_coordinates_is_refused():
    with pytest.raises(ValueError, match=r"m must be at most the 1,210 trainable coordinates .* got 5,000"):
        check_model(MLP, (64,), 10, 5000)
    with pytest.raises(ValueError, match="m must be at most the model's 3 trainable coordinates, got 4"):
        reserved_coordinates(3, 4, np.random.default_rng(0))


def test_the_dense_layout_is_refused_for_a_user_model():
    with pytest.raises(ValueError, match="canary_layout must be 'reserved' or 'separate' for model"):
        DPSGDWhiteBox(noise_multiplier=1.0, model=MLP)


def _value(v):
    return f'"{v}"' if isinstance(v, str) else repr(v)


@pytest.fixture
def write_config(tmp_path):
    """A small white-box one-run config on 50 digits (mechanism keys overridden), written to a file."""

    def write(m=40, **mechanism):
        sections = {
            "experiment": {"name": "user-model", "seed": 1, "repetitions": 1},
            "game": {"name": "one-run", "m": m, "k_pos": 5, "k_neg": 5, "data": "digits", "train_rows": 50},
            "mechanism": {"name": "dpsgd-whitebox", "noise_multiplier": 1.0, "steps": 2, **mechanism},
            "attack": {"name": "identity"},
            "analysis": {"confidence": 0.95, "delta": 1e-5},
        }
        text = "".join(
            f"[{name}]\n" + "".join(f"{k} = {_value(v)}\n" for k, v in values.items())
            for name, values in sections.items()
        )
        path = tmp_path / "c.toml"
        path.write_text(text)
        return path

    return write


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ({"model": "torch_factories:not_a_module", "canary_layout": "reserved"}, "must return a torch.nn.Module"),
        ({"model": "torch_factories:frozen", "canary_layout": "reserved"}, "at least one trainable parameter"),
        ({"model": "torch_factories:with_batchnorm", "canary_layout": "reserved"}, "cannot be clipped per example"),
        ({"model": "nowhere_xyz:make", "canary_layout": "reserved"}, "No module named 'nowhere_xyz'"),
        ({"model": MLP, "canary_layout": "dense"}, "canary_layout must be 'reserved' or 'separate'"),
        ({"name": "dpsgd-broken", "flaw": "no_clipping"}, "flaw must be one of none, noise_for_mean"),
        ({"name": "dpsgd-broken", "flaw": "none", "score": "loss"}, "score must be one of auto, descent"),
    ],
)
def test_each_config_error_is_one_line_with_exit_status_2(write_config, tmp_path, capsys, mechanism, message):
    out = tmp_path / "out"
    assert main(["run", str(write_config(**mechanism)), "--out", str(out), "--no-progress"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in lines[0]
    assert message in lines[0]
    assert not out.exists()


def test_more_canaries_than_the_models_coordinates_is_refused_by_the_config(write_config, tmp_path, capsys):
    config = write_config(m=2000, model=MLP, canary_layout="reserved")
    assert main(["run", str(config), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "m must be at most the 1,210 trainable coordinates" in err


def test_layers_on_the_per_example_path_and_a_large_reserved_share_are_noticed_once():
    check_model.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert check_model(GATED, (64,), 10, 300) == 64 * 8 + 8 + 8 + 16 + 8 * 10 + 10
        check_model(GATED, (64,), 10, 300)  # cached: no second notice
    notices = [str(w.message) for w in caught if issubclass(w.category, ModelNotice)]
    assert len(notices) == 2, notices
    assert "1 (_Gated), 2 (LayerNorm) take the per-example path" in notices[0]
    assert "its 300 reserved canary coordinates are 47% of its 634 coordinates" in notices[1]


def test_the_per_example_path_of_a_user_layer_equals_a_naive_loop():
    from test_dpsgd_clipping import naive_clipped_sum

    model = ModelFactory(GATED).build((6,), 3, generator=make_generator(3, "cpu"), dtype=torch.float64)
    x = torch.randn(9, 6, dtype=torch.float64, generator=make_generator(4, "cpu"))
    y = torch.arange(9) % 3

    def loss(logits, labels):
        return torch.nn.functional.cross_entropy(logits, labels, reduction="none")

    sums, norms = clipped_gradient_sum(model, loss, x, y, 0.3)
    ref_sums, ref_norms = naive_clipped_sum(model, loss, x, y, 0.3)
    np.testing.assert_allclose(norms.numpy(), ref_norms.numpy(), rtol=1e-10)
    for got, ref in zip(sums, ref_sums, strict=True):
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-14)


# ------------------------------------------------------------------------------------------------ the reserved layout
def test_reserved_coordinates_are_distinct_sorted_and_their_masks_mark_exactly_them():
    coords = reserved_coordinates(1210, 300, np.random.default_rng(0))
    assert coords.unique().numel() == 300 and torch.all(coords[1:] > coords[:-1])
    model = ModelFactory(MLP).build((64,), 10, generator=make_generator(0, "cpu"), dtype=torch.float64)
    params = [p for _, p in trainable_parameters(model)]
    flat = torch.cat([mask.reshape(-1) for mask in reserved_masks(coords, params)])
    assert flat.sum() == 300 and torch.equal(flat.nonzero().squeeze(1), coords)
    stacked = reserved_masks(torch.stack([coords, coords.flip(0)]), params, lead=(2,))
    assert all(mask.shape == (2, *p.shape) for mask, p in zip(stacked, params, strict=True))


@pytest.mark.parametrize("model", [MLP, GATED])
def test_reserved_descent_is_exact_without_noise(model):
    """q = 1: every member canary is inserted every step, so its descent is T·lr·C/N exactly; the others, whose
    coordinates the data would otherwise train, move 0: the data's gradients never reach a reserved coordinate."""
    mech = DPSGDWhiteBox(
        noise_multiplier=1e-300, sampling_rate=1.0, steps=3, learning_rate=0.5, model=model, canary_layout="reserved"
    )
    bits = np.arange(200) % 3 == 0
    descent = mech.release(digits(bits, train_rows=50), rng=np.random.default_rng(0))
    np.testing.assert_allclose(descent[bits], 3 * 0.5 * 1.0 / 50, rtol=1e-12)
    np.testing.assert_allclose(descent[~bits], 0.0, rtol=0, atol=1e-290)  # σ = 1e-300: the noise alone


def test_the_reserved_coordinates_are_drawn_per_release_and_the_rest_of_the_model_trains():
    mech = DPSGDWhiteBox(noise_multiplier=1e-300, sampling_rate=1.0, steps=3, model=MLP, canary_layout="reserved")
    bits = np.zeros(100, dtype=bool)
    releases = [mech.release(digits(bits, train_rows=50), rng=np.random.default_rng(s)) for s in (0, 0, 1)]
    np.testing.assert_array_equal(releases[0], releases[1])
    from privgame.mechanisms.dpsgd.whitebox import _generators

    chosen = [reserved_coordinates(1210, 100, _generators(np.random.default_rng(s))[3]) for s in (0, 1)]
    assert not torch.equal(*chosen)


@pytest.mark.parametrize("model", [MLP, GATED])
def test_reserved_release_runs_equal_single_releases(model):
    mech = DPSGDWhiteBox(
        noise_multiplier=0.8, steps=12, sampling_rate=0.2, momentum=0.5, model=model, canary_layout="reserved"
    )
    bits = [digits(np.random.default_rng(k).random(60) < 0.5, train_rows=100) for k in range(3)]
    batched = mech.release_runs(bits, rngs=[np.random.default_rng(70 + k) for k in range(3)])
    for k, b in enumerate(bits):
        alone = mech.release(b, rng=np.random.default_rng(70 + k))
        np.testing.assert_allclose(batched[k], alone, rtol=0, atol=1e-10)


_N, _Q, _T, _SIGMA, _LR, _M = 100, 0.1, 20, 0.5, 0.5, 1000


def _reserved_releases(sigma, runs=8):
    mech = DPSGDWhiteBox(
        noise_multiplier=sigma, sampling_rate=_Q, steps=_T, learning_rate=_LR, model=MLP, canary_layout="reserved"
    )
    data = [digits(np.random.default_rng(k).random(_M) < 0.5, train_rows=_N) for k in range(runs)]
    values = mech.release_runs(data, rngs=[np.random.default_rng(900 + k) for k in range(runs)])
    return np.concatenate(values), np.concatenate([d.membership for d in data])


def test_reserved_layout_follows_the_closed_form():
    """Members and non-members of 8 releases of 1,000 canaries on the user MLP: the sample mean and variance
    against release = lr/(qN)·(C·Binomial(T, q)·S + σC√T·N(0, 1)) (z within 4.5, as the dense layout's test), and
    a KS test against the closed form's law for non-members (a pure Gaussian)."""
    from test_dpsgd_whitebox import _moment_z

    values, bits = _reserved_releases(_SIGMA)
    for member in (0, 1):
        group = values[bits == bool(member)]
        assert len(group) > 3800
        z_mean, z_var = _moment_z(group, member, _SIGMA)
        assert abs(z_mean) < 4.5 and abs(z_var) < 4.5, (member, z_mean, z_var)
    scale = _LR / (_Q * _N) * _SIGMA * np.sqrt(_T)
    assert stats.kstest(values[~bits], "norm", args=(0.0, scale)).pvalue > 1e-3


def test_the_closed_form_check_catches_a_wrong_noise_scale():
    """Meta-test: releases with 1.5 times the noise fail the variance statistic and the KS test by far."""
    from test_dpsgd_whitebox import _moment_z

    values, bits = _reserved_releases(1.5 * _SIGMA, runs=4)
    _, z_var = _moment_z(values[~bits], 0, _SIGMA)
    assert z_var > 10
    scale = _LR / (_Q * _N) * _SIGMA * np.sqrt(_T)
    assert stats.kstest(values[~bits], "norm", args=(0.0, scale)).pvalue < 1e-4


def test_a_user_model_keeps_the_component_contract():
    from privgame.engine.testing import check_component

    check_component(DPSGDWhiteBox(noise_multiplier=3.0, steps=5, model=WIDE, canary_layout="reserved"))
