"""RMIA's score (attacks/rmia.py): pinned against the paper's code, the efficient evaluation against a naive loop,
and one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from privgame.attacks.rmia import leave_one_out_rmia, reference_probability, rmia_scores

# Counts of the 50 population samples each of 20 targets dominates, computed ONCE by running the paper's code
# (ML Privacy Meter, research/2024_rmia/main.py at commit d32734161a3395211fe5f3cd461932290b1fafbe,
# aggregate_signals with signal "softmax_relative" at temperature 1, i.e. these probabilities as its signal, 4
# reference models, proportiontocut 0.2 (no trimming at 4), top_k = -1) on the inputs of _inputs().  Online: every
# point IN for models {0, 1} and OUT for {2, 3} (their code needs balanced counts), so p = the mean of the four.
# ML Privacy Meter's current library (commit e384af8f, attacks.py run_rmia, offline, gamma 1, 4 references)
# returns the offline gamma-1 row too.
PAPER_COUNTS = {
    ("offline", 2.0): [19, 12, 7, 19, 1, 7, 14, 12, 21, 24, 9, 4, 21, 28, 21, 29, 0, 4, 14, 0],
    ("offline", 1.0): [37, 29, 19, 37, 6, 19, 29, 28, 39, 44, 24, 8, 41, 47, 40, 49, 1, 9, 29, 0],
    ("online", 2.0): [17, 10, 6, 14, 1, 6, 14, 10, 25, 28, 10, 5, 27, 27, 17, 38, 0, 5, 13, 0],
    ("online", 1.0): [35, 27, 17, 31, 5, 14, 28, 25, 38, 49, 27, 10, 41, 42, 35, 49, 1, 10, 28, 0],
}


def _inputs():
    rng = np.random.default_rng(20240601)
    target_x = rng.uniform(0.05, 0.99, 20)
    target_z = rng.uniform(0.05, 0.99, 50)
    ref_x = rng.uniform(0.05, 0.99, (4, 20))
    ref_z = rng.uniform(0.05, 0.99, (4, 50))
    return target_x, target_z, ref_x, ref_z


@pytest.mark.parametrize(("setting", "gamma"), list(PAPER_COUNTS))
def test_scores_equal_the_paper_codes_on_the_same_inputs(setting, gamma):
    target_x, target_z, ref_x, ref_z = _inputs()
    online = setting == "online"

    def p(ref):
        member = np.zeros(ref.shape, dtype=bool)
        if online:
            member[:2] = True
        return reference_probability(ref, member, online=online, offline_a=0.3)

    got = rmia_scores(target_x, target_z, p(ref_x), p(ref_z), gamma=gamma)
    np.testing.assert_array_equal(np.rint(got * 50).astype(int), PAPER_COUNTS[(setting, gamma)])


def test_the_pinned_comparison_fails_for_another_offline_a():
    """Meta-test: with a = 0.6 the offline scores differ from the paper code's at a = 0.3."""
    target_x, target_z, ref_x, ref_z = _inputs()
    out = np.zeros((4, 20), dtype=bool), np.zeros((4, 50), dtype=bool)
    got = rmia_scores(
        target_x,
        target_z,
        reference_probability(ref_x, out[0], online=False, offline_a=0.6),
        reference_probability(ref_z, out[1], online=False, offline_a=0.6),
    )
    assert not np.array_equal(np.rint(got * 50).astype(int), PAPER_COUNTS[("offline", 2.0)])


def _naive(confidence, member, *, online, gamma, offline_a):
    """Each model j in turn the target: references the others, population j's non-members without the sample."""
    s = special.expit(confidence)
    m, n = s.shape
    scores = np.zeros((m, n))
    for j in range(m):
        others = np.arange(m) != j
        p = reference_probability(s[others], member[others], online=online, offline_a=offline_a)
        for i in range(n):
            z = ~member[j] & (np.arange(n) != i)
            lr = (s[j, i] / p[i]) / (s[j, z] / p[z])
            scores[j, i] = np.mean(lr > gamma)
    return scores


def _pairs(m, n, rng):
    """The efficient evaluation's masks: models 2i and 2i + 1 train on complementary random halves."""
    member = np.zeros((m, n), dtype=bool)
    for pair in range(m // 2):
        member[2 * pair, rng.permutation(n)[: n // 2]] = True
        member[2 * pair + 1] = ~member[2 * pair]
    return member


@pytest.mark.parametrize("online", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 2.0])
def test_the_efficient_evaluation_equals_a_loop_over_targets(online, gamma):
    rng = np.random.default_rng(5)
    member = _pairs(6, 40, rng)
    confidence = rng.normal(size=(6, 40)) + 1.5 * member
    got = leave_one_out_rmia(confidence, member, online=online, gamma=gamma, offline_a=0.3)
    assert got.valid.all()
    np.testing.assert_allclose(got.scores, _naive(confidence, member, online=online, gamma=gamma, offline_a=0.3))


def test_members_score_higher_when_models_memorise_and_alike_when_they_do_not():
    """A model whose confidence rises by 2 on its members: members' mean score is far above the non-members'
    (tens of standard errors); with no memorisation the two means agree within 4 standard errors of 3,200 pairs."""
    rng = np.random.default_rng(11)
    member = _pairs(8, 400, rng)
    base = rng.normal(size=(1, 400))  # each sample's own difficulty, shared by the models
    for lift, separated in ((2.0, True), (0.0, False)):
        confidence = base + 0.5 * rng.normal(size=(8, 400)) + lift * member
        scores = leave_one_out_rmia(confidence, member).scores
        gap = scores[member].mean() - scores[~member].mean()
        se = np.sqrt(scores[member].var() / member.sum() + scores[~member].var() / (~member).sum())
        assert (gap > 10 * se) if separated else (abs(gap) < 4 * se), (lift, gap, se)


def test_exact_zero_probabilities_of_a_forest_score_finitely():
    """A confidence below −745 (a forest's clipped zero probability, an overconfident network) makes s = expit(φ)
    exactly 0: a zero ratio dominates nothing and is dominated by every positive one; online, a sample every
    reference gives 0 has p = 0 and is marked, not scored."""
    rng = np.random.default_rng(2)
    member = _pairs(6, 30, rng)
    confidence = rng.normal(size=(6, 30))
    confidence[0, :5] = -1000.0  # the target model gives 5 samples probability 0
    confidence[:, 29] = -1000.0  # every model gives sample 29 probability 0
    for online in (False, True):
        got = leave_one_out_rmia(confidence, member, online=online)
        assert np.isfinite(got.scores).all()
        assert (got.scores[0, :5] == 0.0).all()
        assert got.valid[:, 29].all() != online  # offline p = (1 − a)/2 > 0; online p = 0
    assert rmia_scores([0.5, 0.0], [0.0, 0.5], [0.5, 0.5], [0.5, 0.5], gamma=1.0).tolist() == [0.5, 0.0]


def test_a_side_without_reference_models_is_marked_not_scored():
    member = np.array([[True, False], [True, False]])  # sample 0: no OUT model; sample 1: no IN model
    offline = leave_one_out_rmia(np.zeros((2, 2)), member)
    assert offline.valid.tolist() == [[False, False], [False, False]]  # sample 1 has no other population sample
    assert np.isnan(reference_probability([[0.5, 0.5]], [[True, False]], online=True)).all()
    assert np.isnan(reference_probability([[0.5, 0.5]], [[True, False]], online=False))[0]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rmia_scores([0.5], [0.5], [0.5], [0.5], gamma=0.5), "gamma"),
        (lambda: rmia_scores([0.5], [0.5], [0.5], [0.5], gamma=float("nan")), "gamma"),
        (lambda: rmia_scores([1.5], [0.5], [0.5], [0.5]), "probabilities"),
        (lambda: rmia_scores([0.5], [-0.1], [0.5], [0.5]), "probabilities"),
        (lambda: rmia_scores([0.5], [0.5], [0.5, 0.5], [0.5]), "must match"),
        (lambda: rmia_scores([0.5], [], [0.5], []), "must not be empty"),
        (lambda: rmia_scores([0.5], [0.5], [np.nan], [0.5]), "positive and finite"),
        (lambda: rmia_scores([[0.5]], [0.5], [[0.5]], [0.5]), "one-dimensional"),
        (lambda: reference_probability([[0.5]], [[False]], online=False, offline_a=1.5), "offline_a"),
        (lambda: leave_one_out_rmia(np.zeros((2, 3)), np.zeros((2, 2), dtype=bool)), "shape"),
    ],
)
def test_bad_inputs_are_refused_in_one_line(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("attack", "message"),
    [
        ("gamma = 0.5", "gamma"),
        ("offline_a = 2", "offline_a"),
        ('online = "yes"', "online"),
        ("temperature = 2", "temperature"),
        ("population_size = 0", "population_size"),
        ("references = 3\nonline = true", "even"),
    ],
)
def test_a_bad_rmia_parameter_in_a_config_is_one_line_with_exit_status_2(attack, message, run_refused):
    run_refused(
        '[experiment]\nname = "r"\nseed = 1\nrepetitions = 1\n'
        '[game]\nname = "lira"\ndata = "adult"\npool_size = 200\nn_models = 4\n'
        '[mechanism]\nname = "logistic-regression"\nepochs = 1\n'
        f'[attack]\nname = "rmia"\n{attack}\n',
        message,
    )


def test_a_record_game_config_with_rmia_is_refused_naming_the_games_that_give_reference_models(run_refused):
    run_refused(
        '[experiment]\nname = "r"\nseed = 1\nrepetitions = 1\n'
        '[game]\nname = "record-traditional"\ndata = "adult"\n'
        '[mechanism]\nname = "logistic-regression"\nepochs = 1\n'
        '[attack]\nname = "rmia"\n',
        "models knowledge",
        "lira",
    )


def test_a_population_of_a_given_size_is_drawn_from_each_target_models_non_members():
    from privgame.games.lira import lira_masks

    member = lira_masks(8, 120, 5, 0)
    confidence = np.random.default_rng(1).normal(size=(8, 120)) + member
    full = leave_one_out_rmia(confidence, member)
    np.testing.assert_array_equal(leave_one_out_rmia(confidence, member, population_size=60).scores, full.scores)
    small = leave_one_out_rmia(confidence, member, population_size=10, gamma=1.0)
    again = leave_one_out_rmia(confidence, member, population_size=10, gamma=1.0)
    np.testing.assert_array_equal(small.scores, again.scores)  # its own stream: the same draw every time
    # each score counts among 10 samples (9 for a drawn one, itself left out): a multiple of 1/10 or of 1/9
    tenths, ninths = small.scores * 10, small.scores * 9
    assert np.all(np.isclose(tenths, np.round(tenths)) | np.isclose(ninths, np.round(ninths)))
    assert not np.array_equal(small.scores, leave_one_out_rmia(confidence, member, gamma=1.0).scores)


@pytest.mark.parametrize(
    ("value", "message"), [(0, "population_size"), (10**12, "population_size"), (2.5, "population_size")]
)
def test_a_bad_population_size_is_refused_in_one_line(value, message):
    from privgame.attacks.rmia import RMIA

    with pytest.raises((TypeError, ValueError), match=message) as info:
        RMIA(population_size=value)
    assert "\n" not in str(info.value)
