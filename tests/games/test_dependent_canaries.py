"""The order-statistics audit and the canaries' independence, through configs, runs and reanalysis.

A mechanism declares whether its canaries are independent channels (``canary_dependence``); ``order_stats`` is
refused when the config is read, in one line quoting the mechanism's reason, where they are not — unless
``allow_dependent_canaries = true``, and then its columns say ``_dependent``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from numpy.typing import NDArray

from privgame.analysis.accounting import PrivacyClaim, randomized_response_claim
from privgame.engine.config import ConfigError, load_config
from privgame.engine.registry import MECHANISMS
from privgame.engine.report import summarise_results
from privgame.engine.runner import run_experiment
from privgame.mechanisms import RandomizedResponse
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox


@dataclass(frozen=True, slots=True)
class SharedCoinResponse(Mechanism):
    """Randomized response at ``epsilon`` whose flips are all one shared coin: every canary flipped or none."""

    name: ClassVar[str] = "test-shared-coin-response"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = "one coin flips every canary's bit at once"

    epsilon: float = 1.0

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        bits = np.asarray(data, dtype=bool)
        flip = rng.random() < 1.0 / (1.0 + np.exp(self.epsilon))
        return (bits ^ flip).astype(np.float64)

    def privacy_claim(self) -> PrivacyClaim:
        return randomized_response_claim(self.epsilon)


@dataclass(frozen=True, slots=True)
class Undeclared(Mechanism):
    """Per-canary randomized response that does not say whether its canaries are independent."""

    name: ClassVar[str] = "test-undeclared-response"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    epsilon: float = 1.0

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        return RandomizedResponse(epsilon=self.epsilon).release(data, rng=rng)

    def privacy_claim(self) -> PrivacyClaim:
        return randomized_response_claim(self.epsilon)


@pytest.fixture(autouse=True)
def _registered():
    for cls in (SharedCoinResponse, Undeclared):
        MECHANISMS.register(cls)
    yield
    for cls in (SharedCoinResponse, Undeclared):
        MECHANISMS.unregister(cls.name)


def test_the_built_ins_declare_what_holds_by_construction():
    assert RandomizedResponse.canary_dependence is None
    assert DPSGDWhiteBox.canary_dependence is None
    assert "one shared model" in str(DPSGDBlackBox.canary_dependence)
    assert "does not declare" in str(Undeclared.canary_dependence)


@pytest.mark.parametrize(
    ("mechanism", "reason"),
    [
        ("test-shared-coin-response", "one coin flips every canary's bit at once"),
        ("test-undeclared-response", "does not declare its canaries independent"),
    ],
)
def test_order_stats_on_dependent_canaries_is_refused_when_the_config_is_read(write_config, mechanism, reason):
    overrides = {"mechanism": {"name": mechanism, "epsilon": 1.0}, "analysis": {"estimators": ["order_stats"]}}
    with pytest.raises(ConfigError, match="allow_dependent_canaries = true") as info:
        load_config(write_config(overrides))
    message = str(info.value)
    assert message.startswith("[analysis]") and reason in message and "\n" not in message
    # the other estimators do not need independent canaries
    load_config(write_config({**overrides, "analysis": {"estimators": ["steinke", "fdp"]}}))


def test_allowed_it_runs_labelled_dependent_and_the_label_keeps_runs_apart(write_config, tmp_path):
    overrides = {
        "experiment": {"repetitions": 4},
        "mechanism": {"name": "test-shared-coin-response", "epsilon": 1.0},
        "analysis": {"estimators": ["steinke", "order_stats"], "allow_dependent_canaries": True},
    }
    config = load_config(write_config(overrides))
    assert config.normalised["analysis"]["allow_dependent_canaries"] is True
    plain = load_config(write_config({"mechanism": overrides["mechanism"]}, name="plain"))
    assert config.hash != plain.hash
    store = run_experiment(config, tmp_path / "out", progress=False)
    assert {"steinke.epsilon_lb", "order_stats_pure_dependent.epsilon_lb"} <= set(store.rows().columns)
    summary, _ = summarise_results(str(store.root))
    assert "order_stats_pure_dependent.epsilon_lb_median" in summary.columns


def test_on_independent_canaries_it_runs_and_is_steinkes_bound_at_delta_zero(write_config, tmp_path):
    overrides = {"experiment": {"repetitions": 3}, "analysis": {"estimators": ["steinke", "order_stats"]}}
    store = run_experiment(load_config(write_config(overrides)), tmp_path / "out", progress=False)
    rows = store.rows()
    np.testing.assert_allclose(rows["order_stats_pure.epsilon_lb"], rows["steinke.epsilon_lb"], atol=1e-6)


def test_reanalysis_refuses_it_for_dependent_canaries_and_takes_the_flag(write_config, tmp_path, capsys):
    from privgame.engine.cli import main

    overrides = {"experiment": {"repetitions": 2}, "mechanism": {"name": "test-shared-coin-response", "epsilon": 1.0}}
    store = run_experiment(load_config(write_config(overrides)), tmp_path / "out", progress=False)
    argv = ["reanalyse", str(store.root), "--out", str(tmp_path / "again"), "--estimators", "steinke", "order_stats"]
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "one coin flips every canary's bit at once" in err and "allow_dependent_canaries" in err
    assert not (tmp_path / "again").exists()
    assert main([*argv, "--no-progress", "--allow-dependent-canaries"]) == 0
    summary, _ = summarise_results(str(tmp_path / "again"))
    assert "order_stats_pure_dependent.epsilon_lb_median" in summary.columns
