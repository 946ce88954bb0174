"""Your own DP-SGD loop under audit (``dpsgd-loop``, ``dpsgd-blackbox(loop=)``): the canary rows reach the loop as
rows, its own clipping clips them (a clipping bug shows), the docs' example loop runs white-box and black-box, and
every misuse of the contract is one line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgame.data.canaries import canary_data  # noqa: E402
from privgame.engine.cli import main  # noqa: E402
from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox  # noqa: E402
from privgame.mechanisms.dpsgd.loop import LoopRun, TrainingLoop  # noqa: E402
from privgame.mechanisms.dpsgd.opacus_engine import LoopWhiteBox  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
LOOPS = ["privgame", "extending_loop:dp_sgd"]
BITS = np.arange(200) % 3 == 0


@pytest.fixture(autouse=True)
def _examples_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


def digits(bits=BITS, train_rows=50):
    return canary_data(np.asarray(bits), data="digits", train_rows=train_rows, canary=None, canary_seed=0)


def _no_noise(**kw):
    base = dict(noise_multiplier=1e-300, sampling_rate=1.0, steps=3, learning_rate=0.5, clip_norm=0.25, model="mlp")
    return LoopWhiteBox(**{**base, **kw})


def _loops():
    loops = list(LOOPS)
    try:
        import opacus  # noqa: F401

        loops += ["opacus", "opacus-ghost", "extending_loop:opacus_sgd"]
    except ImportError:
        pass
    return loops


@pytest.mark.parametrize("layer", ["weight", "sequence-bias"])
@pytest.mark.parametrize("loop", _loops())
def test_each_loop_clips_the_canary_rows_and_moves_nothing_else(loop, layer):
    """q = 1, σ ≈ 0: every loop sees every row; a member canary's raw gradient 4C is clipped by the loop's own
    clipping to C, so its descent is T·lr·C/(N + m); a non-member's is 0 (the data never reach the canary layer)."""
    descent = _no_noise(loop=loop, canary_layer=layer).release(digits(), rng=np.random.default_rng(0))
    np.testing.assert_allclose(descent[BITS], 3 * 0.5 * 0.25 / 250, rtol=1e-5)
    np.testing.assert_allclose(descent[~BITS], 0.0, atol=1e-290)


def clip_at_four(run: LoopRun):
    """The docs' loop with a clipping bug: it clips at 4C while its noise stays σC (Opacus PR #664's effect)."""
    from extending_loop import dp_sgd

    return dp_sgd(LoopRun(**{**{f: getattr(run, f) for f in run.__slots__}, "clip_norm": 4 * run.clip_norm}))


def test_a_loop_that_clips_wrong_is_seen_by_the_canaries(monkeypatch):
    monkeypatch.setitem(sys.modules, "buggy_loops", sys.modules[__name__])
    good = _no_noise(loop="extending_loop:dp_sgd").release(digits(), rng=np.random.default_rng(0))
    bad = _no_noise(loop="buggy_loops:clip_at_four").release(digits(), rng=np.random.default_rng(0))
    np.testing.assert_allclose(bad[BITS], 4 * good[BITS], rtol=1e-6)  # the raw 4C went through whole


def test_same_seed_same_release():
    mech = LoopWhiteBox(noise_multiplier=1.0, sampling_rate=0.2, steps=4, model="mlp", loop="extending_loop:dp_sgd")
    one, two, other = (mech.release(digits(), rng=np.random.default_rng(s)) for s in (3, 3, 4))
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, other)


def test_the_docs_loop_and_the_engine_agree_in_distribution():
    """Same rows, canaries, σ, q, T: 4 releases of 200 canaries each, the docs' loop against privgame's loop: the
    two-sample KS test on members and non-members (p > 1e-3)."""
    from scipy import stats

    def releases(loop, seed):
        mech = LoopWhiteBox(noise_multiplier=0.8, sampling_rate=0.2, steps=10, model="mlp", loop=loop)
        return np.concatenate([mech.release(digits(), rng=np.random.default_rng(seed + k)) for k in range(4)])

    mine, engine = releases("extending_loop:dp_sgd", 0), releases("privgame", 100)
    bits = np.tile(BITS, 4)
    for member in (True, False):
        assert stats.ks_2samp(mine[bits == member], engine[bits == member]).pvalue > 1e-3


def test_the_docs_loop_trains_a_black_box_release():
    """dpsgd-blackbox with the docs' loop: a model release whose canary losses are finite, and which differs from
    the release of privgame's loop (another loop, other draws) while the same loop and seed repeat it."""
    data = canary_data(BITS, data="digits", train_rows=50, canary="ood", canary_seed=0)

    def losses(loop, seed):
        mech = DPSGDBlackBox(noise_multiplier=1.0, sampling_rate=0.2, steps=5, hidden=(8,), loop=loop)
        release = mech.release(data, rng=np.random.default_rng(seed))
        return release.model.losses(release.canary_x, release.canary_y)

    mine = losses("extending_loop:dp_sgd", 0)
    assert mine.shape == (len(BITS),) and np.isfinite(mine).all()
    np.testing.assert_array_equal(mine, losses("extending_loop:dp_sgd", 0))
    assert not np.array_equal(mine, losses("privgame", 0))


# ------------------------------------------------------------------------------------------ misuse, in one line
def returns_a_number(run):
    return 3


def returns_another_model(run):
    return torch.nn.Linear(2, 2)


def raises(run):
    raise KeyError("boom")


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        ("buggy_loops:returns_a_number", "must return the trained torch.nn.Module .or None., got int"),
        ("buggy_loops:returns_another_model", "must return the model it was given"),
        ("buggy_loops:raises", r"failed: KeyError: 'boom'"),
    ],
)
def test_a_loop_breaking_the_contract_is_one_line(monkeypatch, loop, message):
    monkeypatch.setitem(sys.modules, "buggy_loops", sys.modules[__name__])
    with pytest.raises(ValueError, match=message) as info:
        _no_noise(loop=loop).release(digits(), rng=np.random.default_rng(0))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"loop": "tensorflow"}, "loop must be one of privgame, opacus, opacus-ghost or a function"),
        ({"loop": "nowhere_xyz:train"}, "No module named 'nowhere_xyz'"),
        ({"loop": 3}, "loop must be a string"),
        ({"canary_layer": "bias"}, "canary_layer must be one of weight, sequence-bias"),
        ({"canary_positions": 0}, "canary_positions"),
        ({"canary_positions": 4097}, "canary_positions"),
        ({"canary_scale": 0.5}, "canary_scale"),
        ({"normalisation": "realised"}, "normalisation must be 'expected' for dpsgd-loop"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kw, message):
    with pytest.raises((TypeError, ValueError), match=message) as info:
        _no_noise(**kw)
    assert "\n" not in str(info.value)


def test_a_config_naming_a_missing_loop_exits_2_in_one_line(tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(
        '[experiment]\nname = "l"\nseed = 1\nrepetitions = 1\n'
        '[game]\nname = "one-run"\nm = 20\nk_pos = 5\nk_neg = 5\ndata = "digits"\ntrain_rows = 50\n'
        '[mechanism]\nname = "dpsgd-loop"\nloop = "nowhere_xyz:train"\nnoise_multiplier = 1.0\n'
        '[attack]\nname = "identity"\n'
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nowhere_xyz" in err, err


def test_training_loop_names_built_ins():
    assert TrainingLoop("privgame").function().__name__ == "privgame_loop"


# ------------------------------------------------------------------------------- refused before any trial, one line
@pytest.mark.parametrize("loop", ["opacus", "opacus-ghost"])
def test_opacus_loops_are_refused_where_the_row_count_depends_on_membership(loop):
    """Black-box and record audits hand a loop the rows included (the member canaries, the target): Opacus's loops
    sample at 1/len(loader) over them, so its rate and divisor would follow the membership."""
    with pytest.raises(ValueError, match=r"loop must be 'privgame' or your own in black-box and record audits") as info:
        DPSGDBlackBox(noise_multiplier=1.0, hidden=(8,), loop=loop)
    assert "\n" not in str(info.value)


def test_a_row_count_opacus_cannot_sample_at_the_rate_is_refused_with_the_config(tmp_path, capsys):
    pytest.importorskip("opacus")
    config = tmp_path / "c.toml"
    config.write_text(
        '[experiment]\nname = "l"\nseed = 1\nrepetitions = 1\n'
        '[game]\nname = "one-run"\nm = 12\nk_pos = 2\nk_neg = 2\ndata = "digits"\ntrain_rows = 50\n'
        '[mechanism]\nname = "opacus-whitebox"\nnoise_multiplier = 1.0\nsampling_rate = 0.1\nmodel = "mlp"\n'
        '[attack]\nname = "identity"\n'
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Opacus realises on the 62 rows" in err, err


def test_canary_rows_must_be_in_the_models_dtype():
    from privgame.mechanisms.dpsgd.canary_rows import CanaryRows
    from privgame.mechanisms.dpsgd.models import mlp

    rows = CanaryRows(np.zeros((3, 4)), np.zeros(3, dtype=int), np.ones(2, dtype=bool), 4.0)
    with pytest.raises(ValueError, match=r"dtype must be the model's \(torch.float32\)"):
        rows.model(mlp((4, 2), generator=torch.Generator()))


def test_a_users_loop_declares_its_canaries_dependent_and_opacus_does_not():
    """privgame cannot check that a loop it does not run clips and noises each example and coordinate apart: the
    order-statistics bound needs allow_dependent_canaries for dpsgd-loop, not for opacus-whitebox."""
    from privgame.mechanisms.dpsgd.opacus_engine import OpacusWhiteBox

    assert LoopWhiteBox.canary_dependence is not None and OpacusWhiteBox.canary_dependence is None
