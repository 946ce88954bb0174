"""Third-party classifiers for the ``sklearn`` mechanism (tests/plugins/plain_classifiers.py): a class with ``fit``
and ``predict_proba`` is valid input whether or not it declares scikit-learn's parameter constraints or derives
from ``BaseEstimator`` at all; it runs end to end, and one that says it is no classifier is refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from privgame.engine.cli import main
from privgame.engine.store import ResultsStore
from privgame.mechanisms.training import SklearnModel, TrainingData

PLUGINS = Path(__file__).parents[2] / "plugins"
sys.path.insert(0, str(PLUGINS))  # plain_classifiers, named by import path as a user's module

LIRA = (
    '[experiment]\nname = "plain"\nseed = 5\nrepetitions = 1\n'
    '[game]\nname = "lira"\npool_size = 60\nn_models = 6\nn_boot = 40\n'
    '[mechanism]\nname = "sklearn"\nestimator = "{estimator}"\nparams = {{smoothing = 2.0}}\n'
    '[attack]\nname = "lira"\n'
)


@pytest.mark.parametrize("estimator", ["plain_classifiers.Prior", "plain_classifiers.Counts"])
def test_a_classifier_without_parameter_constraints_is_built_and_released(estimator):
    from plain_classifiers import Counts

    mechanism = SklearnModel(estimator=estimator, params={"smoothing": 2.0})
    assert mechanism.build().smoothing == 2.0
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=40)
    data = TrainingData(x, y, rng.random(40) < 0.5, n_classes=2)
    (release,) = mechanism.train(data, data.include[None, :], [np.random.default_rng(1)], sizes=[data.size])
    expected = Counts(smoothing=2.0).fit(x[data.include], y[data.include]).predict_proba(x)
    np.testing.assert_allclose(release.probabilities(x), expected, rtol=1e-6)


@pytest.mark.parametrize("estimator", ["plain_classifiers.Prior", "plain_classifiers.Counts"])
def test_a_plugin_classifier_runs_and_reports_from_the_command_line(estimator, tmp_path, capsys):
    config = tmp_path / "plain.toml"
    config.write_text(LIRA.format(estimator=estimator))
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    assert ResultsStore(out).done() == {0}
    capsys.readouterr()
    assert main(["report", str(out), "--format", "csv"]) == 0
    assert "auc" in capsys.readouterr().out.splitlines()[0].split(",")


def test_a_plugin_class_that_says_it_is_a_regressor_is_refused_in_one_line(run_refused):
    run_refused(LIRA.format(estimator="plain_classifiers.CountsRegressor"), "estimator must be a classifier")
