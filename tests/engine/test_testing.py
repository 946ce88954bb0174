"""privgame.engine.testing, the contract suite a plugin's tests run: every check catches its own fault on a deliberately
broken component, good components (and the plugin example of docs/config.md) pass, and the error says what and
where."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import dp_accounting
import numpy as np
import pandas as pd
import pytest

from privgame.analysis.accounting import NeighbouringRelation, PrivacyClaim, randomized_response_claim
from privgame.attacks import Attack
from privgame.engine.registry import MECHANISMS
from privgame.engine.testing import check_component, checks_for, parametrize_with_checks
from privgame.games import Game, TrialOutcome
from privgame.games._base import role_seeds
from privgame.mechanisms import Mechanism, RandomizedResponse
from privgame.mechanisms.training import ModelRelease, TrainedModel

DOCS = Path(__file__).resolve().parents[2] / "docs" / "config.md"


# -- good components ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Flip(Mechanism):
    """Flips each bit with probability 1/4 (randomized response at ε = ln 3)."""

    name: ClassVar[str] = "test-flip"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    epsilon: float = float(np.log(3.0))

    def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
        return (np.asarray(data) ^ (rng.random(len(data)) < 0.25)).astype(np.float64)

    def privacy_claim(self) -> PrivacyClaim:
        return randomized_response_claim(self.epsilon)


@dataclass(frozen=True, slots=True)
class Values(Attack):
    """Scores each canary by its released value."""

    name: ClassVar[str] = "test-values"
    accepts: ClassVar[frozenset[str]] = frozenset({"per-canary-values"})

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        return np.asarray(release, dtype=np.float64)[targets]


@dataclass(frozen=True, slots=True)
class TwoKinds(Values):
    """Scores per-canary values by value and any table by 0 (an attack accepting several release kinds)."""

    name: ClassVar[str] = "test-two-kinds"
    accepts: ClassVar[frozenset[str]] = frozenset({"per-canary-values", "table"})

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        if isinstance(release, pd.DataFrame):
            return np.zeros(len(targets), dtype=np.float64)
        return Values.score(self, release, targets)


@dataclass(frozen=True, slots=True)
class Tiny(Game):
    """m canaries, each a member with probability 1/2, one release (a minimal one-run game)."""

    name: ClassVar[str] = "test-tiny"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"canary-bits"})

    m: int = 50

    def play(self, mechanism, attack, *, seed, context=None) -> TrialOutcome:
        membership_seed, mechanism_seed, attack_seed = role_seeds(seed, 3)
        membership = np.random.default_rng(membership_seed).random(self.m) < 0.5
        release = mechanism.release(membership, rng=np.random.default_rng(mechanism_seed))
        fitted = attack.fit(None, rng=np.random.default_rng(attack_seed))
        return TrialOutcome(scores=fitted.score(release, np.arange(self.m)), membership=membership)

    def analyse_trial(self, outcome, settings, *, seed) -> dict[str, float | int]:
        return {"accuracy": float(np.mean((outcome.scores >= 0.5) == outcome.membership))}

    def summarise(self, rows, settings, load_outcome) -> dict[str, float | int]:
        return {"accuracy_mean": float(rows["accuracy"].mean()), "n_trials": len(rows)}


# -- broken mechanisms: one fault each --------------------------------------------------------------------------
@dataclass(slots=True)
class NotFrozen(Mechanism):
    """A mutable dataclass."""

    name: ClassVar[str] = "test-not-frozen"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    epsilon: float = 1.0

    def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
        return Flip.release(Flip(), data, rng=rng)

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class NoName(Flip):
    """An empty config name."""

    name: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class NoDocstring(Flip):
    name: ClassVar[str] = "test-no-docstring"


@dataclass(frozen=True, slots=True)
class BadHint(Flip):
    """A parameter whose type hint names nothing."""

    level: NoSuchType = 0  # type: ignore[name-defined]  # noqa: F821


@dataclass(frozen=True, slots=True)
class Unpicklable(Flip):
    """A lambda as a parameter."""

    transform: Callable[[float], float] = lambda x: x


@dataclass(frozen=True, slots=True)
class Unhashable(Flip):
    """A list as a parameter."""

    weights: list[float] = field(default_factory=lambda: [1.0])


@dataclass(frozen=True, slots=True)
class NotIdempotent(Flip):
    """Normalises ε by doubling it, so rebuilding from its fields doubles it again."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", 2 * self.epsilon)


@dataclass(frozen=True, slots=True)
class NoKinds(Flip):
    """Declares no release kind."""

    release_kind: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class FreshEntropy(Flip):
    """Draws from a fresh generator instead of rng."""

    def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
        return Flip.release(self, data, rng=np.random.default_rng())


@dataclass(frozen=True, slots=True)
class IgnoresRng(Flip):
    """Always the same noise."""

    def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
        return Flip.release(self, data, rng=np.random.default_rng(0))


@dataclass(frozen=True, slots=True)
class BadBatch(Flip):
    """Batches K runs with the first run's generator."""

    def release_runs(self, data, *, rngs) -> list[Any]:
        return [self.release(d, rng=rngs[0]) for d in data]


@dataclass(frozen=True, slots=True)
class ForgotReturn(Flip):
    """Computes its claim and forgets to return it (None, which the old check accepted)."""

    def privacy_claim(self) -> PrivacyClaim:
        randomized_response_claim(self.epsilon)  # type: ignore[return-value]  # the fault under test


@dataclass(frozen=True, slots=True)
class EpsilonAsClaim(Flip):
    """Returns ε itself instead of a claim."""

    def privacy_claim(self) -> Any:
        return self.epsilon


@dataclass(frozen=True, slots=True)
class NotAnEvent(Flip):
    """A claim whose event is a string."""

    def privacy_claim(self) -> PrivacyClaim:
        return PrivacyClaim(event="randomized response", neighbouring=NeighbouringRelation.REPLACE_ONE)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class GrowingClaim(PrivacyClaim):
    """ε that grows with δ."""

    def epsilon(self, delta: float) -> float:
        return 1.0 + 100 * delta


@dataclass(frozen=True, slots=True)
class NanClaim(PrivacyClaim):
    """ε that is NaN."""

    def epsilon(self, delta: float) -> float:
        return float("nan")


@dataclass(frozen=True, slots=True)
class Growing(Flip):
    """A claim whose ε grows with δ."""

    def privacy_claim(self) -> PrivacyClaim:
        return GrowingClaim(event=dp_accounting.NoOpDpEvent(), neighbouring=NeighbouringRelation.REPLACE_ONE)


@dataclass(frozen=True, slots=True)
class NanEpsilon(Flip):
    """A claim whose ε is NaN."""

    def privacy_claim(self) -> PrivacyClaim:
        return NanClaim(event=dp_accounting.NoOpDpEvent(), neighbouring=NeighbouringRelation.REPLACE_ONE)


@dataclass(frozen=True, slots=True)
class InfiniteClaim(Flip):
    """A claim of no privacy at all (ε = inf at every δ): that is no claim."""

    def privacy_claim(self) -> PrivacyClaim:
        return PrivacyClaim(event=dp_accounting.NonPrivateDpEvent(), neighbouring=NeighbouringRelation.REPLACE_ONE)


@dataclass(frozen=True, slots=True)
class ChangingClaim(Flip):
    """A different claim on every call."""

    def privacy_claim(self) -> PrivacyClaim:
        return randomized_response_claim(float(np.random.default_rng().uniform(1, 2)))


@dataclass(frozen=True, slots=True)
class SaysDeterministic(Flip):
    """Declares itself deterministic but draws noise from rng."""

    deterministic: ClassVar[bool] = True

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class DeterministicWithClaim(Flip):
    """Deterministic (the bits as they are) and claims ε = ln 3 all the same."""

    deterministic: ClassVar[bool] = True

    def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(data, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class DeterministicAsText(Flip):
    """A deterministic flag that is not a bool."""

    deterministic: ClassVar[Any] = "yes"


@dataclass(frozen=True, slots=True)
class DependenceAsFlag(Flip):
    """A canary-dependence declaration that is neither None nor a reason."""

    canary_dependence: ClassVar[Any] = False


@dataclass(frozen=True, slots=True)
class OneValueShort(Flip):
    """Releases one value fewer than there are canaries."""

    def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
        return Flip.release(self, data, rng=rng)[:-1]


@dataclass(frozen=True, slots=True)
class TableAsArray(Mechanism):
    """A generator that releases its shuffled rows' values as an array, not a DataFrame."""

    name: ClassVar[str] = "test-table-as-array"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    def release(self, data: Any, *, rng: np.random.Generator) -> Any:
        return data.iloc[rng.permutation(len(data))].to_numpy()

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, eq=False)
class DotRelease(ModelRelease):
    """A linear model of a kind of its own (the artefact cache cannot decode it)."""

    kind: ClassVar[str] = "test-dot"

    w: np.ndarray
    n_features: int = 6
    n_classes: int = 2

    def logits(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float64) @ self.w

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"kind": np.array(self.kind), "w": self.w}


@dataclass(frozen=True, slots=True)
class OwnModelRelease(TrainedModel):
    """Trains a random linear model and releases it as a ModelRelease of its own kind."""

    name: ClassVar[str] = "test-own-model-release"

    def train(self, pool: Any, masks: np.ndarray, rngs: Any, *, sizes: Any) -> list[ModelRelease]:
        return [DotRelease(rng.normal(size=(pool.x.shape[1], pool.n_classes))) for rng in rngs]

    def privacy_claim(self) -> None:
        return None


# -- broken attacks -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StrAccepts(Values):
    """accepts is a string, not a frozenset."""

    accepts: ClassVar[Any] = "per-canary-values"


@dataclass(frozen=True, slots=True)
class UnknownNeeds(Values):
    """needs a kind of knowledge no game gives."""

    needs: ClassVar[str] = "everything"


@dataclass(frozen=True, slots=True)
class Float32(Values):
    """float32 scores."""

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        return Values.score(self, release, targets).astype(np.float32)


@dataclass(frozen=True, slots=True)
class AllCanaries(Values):
    """Scores every canary, not the targets."""

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        return np.asarray(release, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class NanScores(Values):
    """NaN scores."""

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        return np.full(len(targets), np.nan)


@dataclass(frozen=True, slots=True)
class NanThreshold(Values):
    """A NaN threshold."""

    @property
    def threshold(self) -> float:
        return float("nan")


@dataclass(frozen=True, slots=True)
class Noisy(Values):
    """Fitting draws from a fresh generator: scores differ between two fits with the same rng."""

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> Any:
        return Shifted(float(np.random.default_rng().random()))


@dataclass(frozen=True)
class Shifted:
    """A fitted attack: released value plus an offset."""

    offset: float
    threshold: float = 0.5

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        return np.asarray(release, dtype=np.float64)[targets] + self.offset


@dataclass(frozen=True, slots=True)
class FitReturnsNone(Values):
    """fit returns nothing."""

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> Any:
        return None


@dataclass(frozen=True, slots=True)
class TwoKindsBrokenOnTables(TwoKinds):
    """Accepts two kinds, scores tables in float32: only a check of every accepted kind sees it."""

    name: ClassVar[str] = "test-two-kinds-broken"

    def score(self, release: Any, targets: np.ndarray) -> np.ndarray:
        return TwoKinds.score(self, release, targets).astype(np.float32 if isinstance(release, pd.DataFrame) else float)


# -- broken games ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RunsNowhere(Tiny):
    """Says two runs can be made apart, and make_runs makes nothing play could read."""

    def separate_runs(self, mechanism, attack) -> int:
        return 2

    def run_batch(self, mechanism, attack) -> int:
        return 2

    def make_runs(self, mechanism, attack, *, seed, runs, context) -> None:
        mechanism.release(np.zeros(3, dtype=bool), rng=np.random.default_rng(0))  # not through the cache


@dataclass(frozen=True, slots=True)
class NoInputKinds(Tiny):
    """Takes no input kind."""

    input_kinds: ClassVar[frozenset[str]] = frozenset()


@dataclass(frozen=True, slots=True)
class ZeroTrials(Tiny):
    """Fixes zero trials per grid point."""

    def trials_per_point(self) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class Refuses(Tiny):
    """Refuses every mechanism."""

    def incompatibility(self, mechanism, attack) -> str:
        return "never plays"


@dataclass(frozen=True, slots=True)
class GameFreshEntropy(Tiny):
    """Draws membership from a fresh generator."""

    def play(self, mechanism, attack, *, seed, context=None) -> TrialOutcome:
        return Tiny.play(self, mechanism, attack, seed=np.random.SeedSequence())


@dataclass(frozen=True, slots=True)
class GameIgnoresSeed(Tiny):
    """Plays seed 0 whatever the seed."""

    def play(self, mechanism, attack, *, seed, context=None) -> TrialOutcome:
        return Tiny.play(self, mechanism, attack, seed=np.random.SeedSequence(0))


@dataclass(frozen=True, slots=True)
class ListRow(Tiny):
    """A row holding a list."""

    def analyse_trial(self, outcome, settings, *, seed) -> Any:
        return {"scores": outcome.scores.tolist()}


@dataclass(frozen=True, slots=True)
class NoisyRow(Tiny):
    """A row that changes from one analysis to the next."""

    def analyse_trial(self, outcome, settings, *, seed) -> dict[str, float | int]:
        return {"accuracy": float(np.random.default_rng().random())}


@dataclass(frozen=True, slots=True)
class FrameSummary(Tiny):
    """summarise returns a DataFrame."""

    def summarise(self, rows, settings, load_outcome) -> Any:
        return rows


BROKEN = [
    (NotFrozen(), "check_dataclass", "must be a frozen dataclass"),
    (NotFrozen(), "check_frozen", r"NotFrozen\.epsilon can be assigned"),
    (NoName(), "check_dataclass", "non-empty string class attribute 'name'"),
    (NoDocstring(), "check_dataclass", "needs a docstring"),
    (BadHint(), "check_type_hints", "type hints of BadHint do not resolve: NameError"),
    (Unpicklable(), "check_picklable_hashable", "cannot be pickled"),
    (Unhashable(), "check_picklable_hashable", "is not hashable"),
    (NotIdempotent(), "check_rebuilt_from_fields", r"NotIdempotent\(\*\*its own fields\) gives"),
    (NoKinds(), "check_mechanism_kinds", "release_kind must be a non-empty string"),
    (FreshEntropy(), "check_release_reproducible", "two releases with rng seeded 7 differ"),
    (IgnoresRng(), "check_release_reproducible", "release ignores rng"),
    (SaysDeterministic(), "check_release_reproducible", "declares deterministic = True, but releases with rng seeded"),
    (DeterministicAsText(), "check_mechanism_kinds", "deterministic must be True or False, got 'yes'"),
    (DependenceAsFlag(), "check_mechanism_kinds", "canary_dependence must be None .* got False"),
    (DeterministicWithClaim(), "check_privacy_claim", "declares deterministic = True and claims privacy"),
    (OneValueShort(), "check_release_kind", r"must release one number per canary, shape \(200,\), got ndarray"),
    (TableAsArray(), "check_release_kind", r"\(release_kind 'table'\) must release a pandas DataFrame, got ndarray"),
    (OwnModelRelease(), "check_release_kind", "the artefact cache cannot rebuild the release from its to_arrays"),
    (BadBatch(), "check_release_runs", "release_runs' run 1 differs"),
    (ForgotReturn(), "check_privacy_claim", r"returned None but its return annotation \(.*PrivacyClaim.*\) does not"),
    (
        EpsilonAsClaim(),
        "check_privacy_claim",
        "must return a privgame.analysis.accounting.PrivacyClaim or None, got 1.0",
    ),
    (NotAnEvent(), "check_privacy_claim", "needs a dp_accounting DpEvent"),
    (Growing(), "check_privacy_claim", r"ε must not grow with δ, got epsilon\(1e-08\) = 1\.000001 < epsilon\(1e-05\)"),
    (NanEpsilon(), "check_privacy_claim", r"epsilon\(1e-08\) must be a number >= 0, got nan"),
    (InfiniteClaim(), "check_privacy_claim", r"epsilon\(0\.01\) is inf: a claim with no finite ε is no claim"),
    (ChangingClaim(), "check_privacy_claim", "different claim on a second call"),
    (StrAccepts(), "check_attack_kinds", "accepts must be a non-empty frozenset"),
    (
        UnknownNeeds(),
        "check_attack_kinds",
        "needs must be one of nothing, auxiliary, labelled, models, got 'everything'",
    ),
    (Float32(), "check_attack_scores", r"score must return float64 of shape \(67,\), got ndarray float32"),
    (AllCanaries(), "check_attack_scores", r"of shape \(67,\), got ndarray float64 of shape \(200,\)"),
    (NanScores(), "check_attack_scores", "scores must be finite"),
    (NanThreshold(), "check_attack_scores", "threshold must be finite"),
    (Noisy(), "check_attack_scores", "fitted twice with rng seeded 0, it scores differently"),
    (FitReturnsNone(), "check_attack_scores", "fit must return a fitted attack"),
    (TwoKindsBrokenOnTables(), "check_attack_scores", "on a 'table' release: score must return float64"),
    (NoInputKinds(), "check_game_kinds", "input_kinds must be a non-empty frozenset"),
    (ZeroTrials(), "check_game_kinds", r"trials_per_point\(\) must be None or an int >= 1, got 0"),
    (Refuses(), "check_game_play", "refuses its partners .*: never plays"),
    (GameFreshEntropy(), "check_game_play", "two plays with the same seed differ"),
    (GameIgnoresSeed(), "check_game_play", "play ignores its seed"),
    (ListRow(), "check_game_play", r"analyse_trial must map str to scalars"),
    (NoisyRow(), "check_game_play", "analyse_trial gives a different row"),
    (FrameSummary(), "check_game_play", "summarise must return a non-empty dict"),
    (RunsNowhere(), "check_game_runs", "make_runs made 0 cache entries for its 2 runs and play read 0"),
]


def _check(component: Any, name: str) -> Any:
    return {c.name: c for c in checks_for(component)}[name]


@pytest.mark.parametrize(("component", "name", "match"), BROKEN, ids=[f"{type(c).__name__}-{n}" for c, n, _ in BROKEN])
def test_each_check_catches_its_fault(component, name, match):
    with pytest.raises(AssertionError, match=match):
        _check(component, name)(component)


def test_every_check_is_shown_to_catch_a_fault():
    names = {c.name for component in (Flip(), Values(), Tiny()) for c in checks_for(component)}
    assert {name for _, name, _ in BROKEN} == names


@pytest.mark.parametrize("component", [Flip(), Values(), TwoKinds(), Tiny()], ids=lambda c: type(c).__name__)
def test_good_components_pass(component):
    check_component(component)


@parametrize_with_checks([Flip(), Values()])
def test_parametrize_with_checks_makes_one_test_per_check(component, check):
    check(component)


def test_parametrize_with_checks_ids_and_count():
    mark = parametrize_with_checks([Flip(), TwoKinds()])
    assert mark.args[0] == ("component", "check")
    ids = [p.id for p in mark.args[1]]
    assert ids[0] == "mechanism:test-flip-check_dataclass"
    assert "attack:test-two-kinds-check_attack_scores" in ids
    assert len(ids) == len(checks_for(Flip())) + len(checks_for(TwoKinds()))


def test_check_component_lists_every_failure_and_counts_a_crash_as_one():
    @dataclass(frozen=True, slots=True)
    class Crashes(Flip):
        """Crashes on release."""

        def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
            raise RuntimeError("boom")

    with pytest.raises(AssertionError) as info:
        check_component(Crashes())
    message = str(info.value)
    assert message.startswith("mechanism 'test-flip' breaks the component contract:")
    assert "check_release_reproducible: raised RuntimeError: boom" in message
    assert "check_release_runs: raised RuntimeError: boom" in message
    assert "check_picklable_hashable: " in message  # a class local to a function cannot be pickled
    assert "check_privacy_claim" not in message  # the claim is fine


def test_classes_instances_and_other_objects():
    check_component(Flip)  # a class whose parameters all have defaults is built with them
    with pytest.raises(AssertionError, match="pass an instance of RandomizedResponse"):
        check_component(RandomizedResponse)
    with pytest.raises(AssertionError, match="is not a game, mechanism or attack"):
        check_component(object())


def test_a_new_kind_brings_its_samples():
    @dataclass(frozen=True, slots=True)
    class Counts(Flip):
        """Releases a noisy count of an integer array (a new input kind)."""

        name: ClassVar[str] = "test-counts"
        input_kind: ClassVar[str] = "integers"

        def release(self, data: Any, *, rng: np.random.Generator) -> np.ndarray:
            return np.asarray(data, dtype=np.float64) + rng.normal(size=len(data))

    with pytest.raises(
        AssertionError, match=r"no sample input of kind 'integers' .*; pass inputs=\{'integers': \.\.\.\}"
    ):
        _check(Counts(), "check_release_reproducible")(Counts())
    given = [c for c in checks_for(Counts(), inputs={"integers": np.arange(10)}) if c.name.startswith("check_release")]
    assert len(given) == 3
    for c in given:  # with the sample given, the release checks pass
        c(Counts())

    @dataclass(frozen=True, slots=True)
    class Models(Values):
        """Scores releases of a new kind."""

        accepts: ClassVar[frozenset[str]] = frozenset({"weights"})  # ("model" is a built-in kind now)

    with pytest.raises(AssertionError, match=r"no sample release of kind 'weights'"):
        _check(Models(), "check_attack_scores")(Models())
    given = checks_for(Models(), releases={"weights": (np.linspace(0, 1, 5), [0, 2])})
    next(c for c in given if c.name == "check_attack_scores")(Models())

    @dataclass(frozen=True, slots=True)
    class OnIntegers(Tiny):
        """Plays a mechanism of the new kind."""

        input_kinds: ClassVar[frozenset[str]] = frozenset({"integers"})

    with pytest.raises(AssertionError, match=r"no sample \(mechanism, attack\) of kind 'integers'"):
        _check(OnIntegers(), "check_game_play")(OnIntegers())


def _docs_plugin_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("\n## Plugins") :]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return next(b for b in blocks if "@MECHANISMS.register" in b)


def test_the_documented_plugin_example_keeps_the_contract(tmp_path, monkeypatch):
    (tmp_path / "docs_plugin_example.py").write_text(_docs_plugin_example(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(MECHANISMS.names())
    module = importlib.import_module("docs_plugin_example")  # registers its mechanism, as a plugin does
    try:
        (name,) = set(MECHANISMS.names()) - before
        check_component(MECHANISMS.get(name)())
        assert MECHANISMS.get(name).__module__ == module.__name__
    finally:
        MECHANISMS.unregister(name)
        sys.modules.pop("docs_plugin_example", None)


# -- deterministic mechanisms --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Copy(Mechanism):
    """Releases its input table unchanged (an exact copy: deterministic by design)."""

    name: ClassVar[str] = "test-copy"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"
    deterministic: ClassVar[bool] = True

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        return data.reset_index(drop=True).copy()

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class CopyUndeclared(Copy):
    """The same exact copy, without declaring that it ignores rng."""

    deterministic: ClassVar[bool] = False


def test_copy_generators_keep_the_contract():
    """An exact copy that declares itself deterministic passes, as does the record tests' CopyTable (which shuffles
    its rows with rng); the same copy undeclared fails with the way out in the message."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "plugins"))
    try:
        from known_risk_mechanisms import CopyTable
    finally:
        sys.path.pop(0)
    check_component(Copy())
    check_component(CopyTable())
    with pytest.raises(AssertionError, match=r"the release ignores rng \(declare deterministic = True if it is"):
        check_component(CopyUndeclared())
    assert not Mechanism.deterministic and not RandomizedResponse.deterministic  # randomised unless declared


# -- samples from a registered data set ----------------------------------------------------------------------------
def _ward_rows() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 400
    return pd.DataFrame(
        {
            "weight": np.round(rng.uniform(40.0, 120.0, n), 1),  # float
            "stay": rng.integers(1, 31, n),  # int
            "ward": pd.Categorical.from_codes(rng.integers(0, 3, n), categories=["a", "b", "c"]),
            "readmitted": pd.Categorical.from_codes(rng.integers(0, 2, n), categories=["no", "yes"]),
        }
    )


def _ward(name: str = "test-ward", *, label: str | None = "readmitted", rows: Callable[[], pd.DataFrame] = _ward_rows):
    from privgame.data import Dataset, PublicDomain, register_dataset

    domain = PublicDomain(
        name,
        ("weight", "stay", "ward", "readmitted"),
        (("ward", ("a", "b", "c")), ("readmitted", ("no", "yes"))),
        (("weight", 30.0, 150.0), ("stay", 1, 60)),
        floats=("weight",),
    )
    serves = frozenset({"table", "features"}) if label else frozenset({"table"})
    size = len(rows())
    return register_dataset(
        Dataset(name, domain, size, rows, label=label, positive="yes" if label else None, serves=serves)
    )


@dataclass(frozen=True, slots=True)
class WardNoise(Mechanism):
    """Adds Gaussian noise to the ward data set's float column ``weight`` (refuses a table without it)."""

    name: ClassVar[str] = "test-ward-noise"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        if data["weight"].dtype != np.float64 or data["stay"].dtype != np.int64:
            raise TypeError("weight must be float64 and stay int64")
        return data.assign(weight=data["weight"] + rng.normal(0.0, 1.0, len(data))).reset_index(drop=True)

    def privacy_claim(self) -> None:
        return None


def test_samples_from_a_registered_data_set_with_float_and_int_columns():
    from privgame.attacks import ClosestDistance
    from privgame.attacks.lira import LiRA
    from privgame.mechanisms.training import GradientBoostedTrees

    dataset = _ward()
    with pytest.raises(AssertionError, match=r"check_release_reproducible: raised KeyError: 'weight'"):
        check_component(WardNoise())  # the built-in sample table has no such column
    check_component(WardNoise(), data="test-ward")
    check_component(WardNoise(), data=dataset)  # the Dataset itself works too
    check_component(GradientBoostedTrees(max_iter=5), data="test-ward")  # "dataset" input: its encoded records
    check_component(ClosestDistance(n_shadows=4), data="test-ward")  # a Synthpop release of its rows
    check_component(LiRA(n_shadows=4), data="test-ward")  # a model trained on its encoding, its encoder

    (table_check,) = [c for c in checks_for(WardNoise(), data="test-ward") if c.name == "check_release_reproducible"]
    sample = table_check.samples.inputs["table"]()
    assert len(sample) == 200 and sample.dtypes.to_dict() == dataset.table().dtypes.to_dict()
    assert sample.merge(dataset.table(), how="left", indicator=True)["_merge"].eq("both").all()  # its own rows
    pool = table_check.samples.inputs["dataset"]()
    assert pool.x.shape == (200, dataset.feature_count()) and set(np.unique(pool.y)) == {0, 1}


def test_samples_from_a_data_set_say_what_is_missing():
    from privgame.mechanisms.training import GradientBoostedTrees

    with pytest.raises(ValueError, match=r"data must be one of adult, .*, got 'no-such-set'"):
        check_component(WardNoise(), data="no-such-set")

    def few() -> pd.DataFrame:
        return _ward_rows().iloc[:50]

    _ward("test-ward-few", rows=few)
    with pytest.raises(ValueError, match=r"data must have at least 200 records .*, got 50 in 'test-ward-few'"):
        check_component(WardNoise(), data="test-ward-few")
    _ward("test-ward-unlabelled", label=None)
    check_component(WardNoise(), data="test-ward-unlabelled")  # a table needs no label
    with pytest.raises(AssertionError, match=r"'test-ward-unlabelled' has no label column, so it gives no sample"):
        check_component(GradientBoostedTrees(max_iter=5), data="test-ward-unlabelled")
