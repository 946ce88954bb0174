"""The density-ratio attack on synthetic tables (attacks/density.py): the estimator, its edge cases, a copy found
and an input-blind generator not, and one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from synthetic_worlds import AUX, TARGET, Blind, CopyTable, attack_auc

from privgame.attacks._tables import TableSchema
from privgame.attacks.density import DensityRatio, log_kernel_density
from privgame.attacks.distance import mixed_distances


def test_the_log_density_is_the_mean_kernel_of_the_mixed_distance():
    schema = TableSchema.of(AUX)
    codes = schema.codes(AUX.iloc[:30])
    target = schema.codes(TARGET)[0]
    naive = math.log(np.mean(np.exp(-mixed_distances(codes, target, schema) / 0.7)))
    assert log_kernel_density(codes, target, schema, 0.7) == pytest.approx(naive, rel=1e-12)
    assert log_kernel_density(codes[:0], target, schema, 0.7) == -2 / 0.7  # no row: the kernel's least value


def test_a_copying_generator_is_found_and_an_input_blind_one_is_not():
    """The copy puts the rare target (category d, never in the auxiliary data) in the release: AUC 1.  A generator
    that ignores its input gives the two worlds one law: AUC within 3 standard errors of 1/2 (20 × 20 pairs)."""
    assert attack_auc(DensityRatio(n_shadows=10), CopyTable()) == 1.0
    assert abs(attack_auc(DensityRatio(n_shadows=10), Blind()) - 0.5) < 3 * math.sqrt(1 / 12 * (1 / 20 + 1 / 20))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": float("nan")}, "bandwidth"),
        ({"bandwidth": 1e12}, "bandwidth"),
        ({"n_shadows": 1}, "n_shadows"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        DensityRatio(**kwargs)
    assert "\n" not in str(info.value)


def test_it_needs_the_adversarys_knowledge():
    with pytest.raises(TypeError, match=r"needs a privgame\.attacks\.knowledge\.Knowledge"):
        DensityRatio().fit(None, rng=np.random.default_rng(0))
