"""The contract every game, mechanism and attack keeps, as checks that a plugin's own tests can run.

One suite for all components, as scikit-learn's ``check_estimator`` and dp_accounting's shared contract tests: the
built-in components pass it (``tests/engine/test_registry_contract.py``), and so must a plugin's::

    from privgame.engine.testing import check_component, parametrize_with_checks

    def test_my_mechanism_keeps_the_contract():
        check_component(MyMechanism(epsilon=1.0))        # AssertionError naming every failed check

    @parametrize_with_checks([MyMechanism(epsilon=1.0), MyAttack()])
    def test_contract(component, check):                 # one pytest test per (component, check)
        check(component)

Pass an instance with small, fast parameters (a class is built with its defaults).  The checks feed components
built-in samples: 200 canary bits for ``input_kind = "canary-bits"``, the same bits over 100 training rows with 200
canary examples for ``"canary-dataset"`` (:class:`privgame.mechanisms.training.canaries.CanaryData`), a 200-row table
for ``"table"``, a pool with an include-mask for ``"dataset"``, releases of randomized response
(``"per-canary-values"``), of black-box DP-SGD (``"model-with-canaries"``, needs torch), of a trained model
(``"model"``) and of Synthpop (``"table"``, with the adversary's :class:`privgame.attacks.knowledge.Knowledge` for
shadow-modelling attacks), and a (mechanism, attack) pair per game input kind (a game plays the first pair, in
the order of its input kinds, that it accepts).  ``data="clinic"`` (any registered data set,
:func:`privgame.data.register_dataset`, or a :class:`privgame.data.Dataset`) builds the table, the model inputs,
the Synthpop and model releases and the knowledge from 200 of that data set's records instead, so a component
written for a user's columns (floats, a label of its own) is checked on them.  A component of a new kind brings
its own samples through the ``inputs``, ``releases`` and ``partners`` keywords; without them the check fails and
says which to pass.

What is checked
---------------
Every component: a frozen dataclass of its kind (:class:`privgame.games.Game`, :class:`privgame.mechanisms.Mechanism`,
:class:`privgame.attacks.Attack`) with a string ``name`` and a docstring of its own; type hints that resolve (the config
reads them); immutable, picklable and hashable (joblib sends components to workers); rebuilt from its fields it
is equal to itself (a stored config replays it).

Mechanisms: declared input and release kinds; the same ``rng`` seed gives the same release and another seed
another — unless the class declares ``deterministic = True`` (it ignores ``rng`` by design, an exact copy), when
every seed must give the same release and ``privacy_claim()`` must be ``None``; the release is what its kind
promises the attacks and the artefact cache (a table: a DataFrame of the input's columns; a model: a
``ModelRelease`` whose ``to_arrays()`` are plain arrays that ``decode_release`` turns back into the same logits; a
model with canaries: a ``CanaryModelRelease`` of one canary per bit; per-canary values: one number per canary);
``release_runs`` equals separate releases; ``privacy_claim()`` is a :class:`privgame.analysis.accounting.PrivacyClaim`
with a ``dp_accounting`` event and neighbouring relation whose ``epsilon(δ)`` is a non-negative number, finite,
and non-increasing in δ — or ``None``, which the method's return annotation must declare (``-> None`` or
``-> PrivacyClaim | None``), so that a forgotten ``return`` is not read as "claims nothing".

Attacks: declared ``accepts`` (a frozenset of release kinds) and ``needs``; for EVERY accepted kind, the fitted
attack scores one finite float64 per target, has a finite threshold, and is reproducible from its ``rng``.

Games: declared input kinds and knowledge; the game accepts its partners; ``play`` is reproducible from its seed
and depends on it; ``analyse_trial`` gives the same row of scalars twice; ``summarise`` turns the trial into
summary scalars.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import pickle
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privgame.analysis.accounting import NeighbouringRelation, PrivacyClaim
from privgame.attacks._base import KNOWLEDGE_KINDS, Attack, FittedAttack
from privgame.games._base import AnalysisSettings, Game, TrialOutcome
from privgame.mechanisms._base import Mechanism

__all__ = ["Check", "check_component", "checks_for", "parametrize_with_checks"]

N_CANARIES = 200
CLAIM_DELTAS = (1e-8, 1e-5, 1e-2)
_KINDS: tuple[tuple[str, type], ...] = (("game", Game), ("mechanism", Mechanism), ("attack", Attack))
_SEED, _OTHER_SEED = 2026, 2027


# -- samples ----------------------------------------------------------------------------------------------------
def _bits() -> np.ndarray:
    return np.random.default_rng(0).random(N_CANARIES) < 0.5


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, N_CANARIES),
            "sex": pd.Categorical(rng.choice(["Female", "Male"], N_CANARIES), categories=["Female", "Male"]),
            "grade": pd.Categorical(rng.choice(list("abcd"), N_CANARIES), categories=list("abcde")),
        }
    )


def _encode(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The sample table as model inputs: age scaled and the grade one-hot; the label is the sex."""
    grade = np.eye(5, dtype=np.float32)[table["grade"].cat.codes.to_numpy()]
    x = np.column_stack([(table["age"].to_numpy(dtype=np.float32) - 17) / 73, grade]).astype(np.float32)
    return x, table["sex"].cat.codes.to_numpy().astype(np.int64)


@dataclass(frozen=True)
class _Records:
    """Where the samples' records come from: the built-in sample table, or a registered data set.

    ``table()`` gives N_CANARIES records (a DataFrame, rows 0..N_CANARIES-1); ``encode(table)`` gives them as model
    inputs ``(x, y)`` with labels in ``0 .. n_classes - 1`` (``None``: the records have no label, so no model input
    or release can be built from them).
    """

    name: str
    table: Callable[[], pd.DataFrame]
    encode: Callable[[pd.DataFrame], tuple[np.ndarray, np.ndarray]] | None
    n_classes: int = 2

    def encoded(self, table: pd.DataFrame, kind: str) -> tuple[np.ndarray, np.ndarray]:
        if self.encode is None:
            raise AssertionError(
                f"the data set {self.name!r} has no label column, so it gives no sample of kind {kind!r}: register "
                f"it with a label (serves features), or pass that sample yourself"
            )
        return self.encode(table)


_BUILT_IN = _Records("built-in sample", _table, _encode)


def _records(data: Any) -> _Records:
    """The samples' records drawn from the registered data set ``data`` (a name or a ``Dataset``): N_CANARIES of its
    rows, chosen by a permutation seeded 0 (the rows' order in a file may be sorted, by class say), encoded for
    models from its public domain (:meth:`privgame.data.Dataset.encode`)."""
    from privgame.data.catalogue import get_dataset

    dataset = get_dataset(data)
    if dataset.size < N_CANARIES:
        raise ValueError(
            f"data must have at least {N_CANARIES} records to build the samples from, got {dataset.size} in "
            f"{dataset.name!r}."
        )
    picked = np.sort(np.random.default_rng(0).permutation(dataset.size)[:N_CANARIES])

    def table() -> pd.DataFrame:
        return dataset.table().iloc[picked].reset_index(drop=True)  # a copy: callers may change it

    def encode(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        arrays = dataset.encode(rows)
        return arrays.x, arrays.y

    labelled = dataset.label is not None
    return _Records(dataset.name, table, encode if labelled else None, dataset.n_classes if labelled else 2)


def _table_release(records: _Records) -> tuple[Any, np.ndarray]:
    from privgame.mechanisms.synth import Synthpop

    release = Synthpop().release(records.table().iloc[150:170].reset_index(drop=True), rng=np.random.default_rng(1))
    return release, np.zeros(1, dtype=np.intp)  # a record game scores its one target, row 0 of the knowledge's


def _rr_release() -> tuple[Any, np.ndarray]:
    from privgame.mechanisms import RandomizedResponse

    return RandomizedResponse(epsilon=1.0).release(_bits(), rng=np.random.default_rng(1)), np.arange(0, N_CANARIES, 3)


def _canary_data(records: _Records) -> Any:
    """The canary bits over the first 100 sample records (encoded), with 200 noise canary examples."""
    from privgame.mechanisms.training.canaries import CanaryData
    from privgame.mechanisms.training.data import TrainingData

    x, y = records.encoded(records.table().iloc[:100], "canary-dataset")
    rng = np.random.default_rng(0)
    canary_x = rng.random((N_CANARIES, x.shape[1])).astype(np.float32)
    canary_y = rng.integers(0, records.n_classes, N_CANARIES)
    rows = TrainingData(x, y, np.ones(len(y), dtype=bool), n_classes=records.n_classes)
    return CanaryData(_bits(), rows, canary_x, canary_y)


def _model_release(records: _Records) -> tuple[Any, np.ndarray]:
    from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox  # needs the torch extra

    model = DPSGDBlackBox(noise_multiplier=3.0, steps=5)
    return model.release(_canary_data(records), rng=np.random.default_rng(1)), np.arange(0, N_CANARIES, 3)


def _dataset(records: _Records) -> Any:
    from privgame.mechanisms.training.data import TrainingData

    x, y = records.encoded(records.table(), "dataset")
    return TrainingData(x, y, np.arange(N_CANARIES) < N_CANARIES // 2, n_classes=records.n_classes)


def _small_model() -> Mechanism:
    from privgame.mechanisms.training.models import LogisticRegressionClassifier

    return LogisticRegressionClassifier(epochs=2, batch_size=32, learning_rate=0.05)


def _trained_model_release(records: _Records) -> tuple[Any, np.ndarray]:
    return _small_model().release(_dataset(records), rng=np.random.default_rng(1)), np.zeros(1, dtype=np.intp)


def _knowledge(records: _Records, kind: str = "table") -> Any:
    from privgame.attacks.knowledge import BlackBox, Knowledge
    from privgame.mechanisms.synth import Synthpop

    table = records.table()
    aux, target = table.iloc[:150], table.iloc[[N_CANARIES - 1]]
    if kind == "model":
        encoder = records.encode
        if encoder is None:
            records.encoded(table, kind)  # raises: no model knowledge without a label
        return Knowledge(aux, target, 20, BlackBox(_small_model()), encoder=encoder)
    return Knowledge(aux, target, 20, BlackBox(Synthpop()))


def _labelled(records: _Records, kind: str = "model") -> Any:
    """Labelled examples for a learned classifier (``needs = "labelled"``): the sample dataset, its include-mask as
    membership, every other record to fit on, and the sample trained model's signal."""
    from privgame.attacks.classifier import LabelledExamples

    data = _dataset(records)
    release, _ = _trained_model_release(records)
    return LabelledExamples(data.x, data.y, data.include, np.arange(0, len(data), 2), release)


def _reference_models(records: _Records, kind: str = "model") -> Any:
    """Reference models for RMIA (``needs = "models"``): four small models on two pairs of complementary halves of
    the sample dataset, their confidences on every record, every record a population sample."""
    from privgame.attacks.rmia import ReferenceModels

    data = _dataset(records)
    n = len(data)
    rng = np.random.default_rng(0)
    member = np.zeros((4, n), dtype=bool)
    for pair in range(2):
        member[2 * pair, rng.permutation(n)[: n // 2]] = True
        member[2 * pair + 1] = ~member[2 * pair]
    confidence = np.array(
        [
            _small_model()
            .release(data.with_include(member[k], size=n // 2), rng=np.random.default_rng(k))
            .confidence(data.x, data.y)
            for k in range(4)
        ]
    )
    return ReferenceModels(data.x, data.y, confidence, member, np.ones(n, dtype=bool))


def _labelled_partners() -> tuple[Mechanism, Attack]:
    from privgame.attacks.classifier import ClassifierMIA
    from privgame.mechanisms.training.trees import GradientBoostedTrees

    return _small_model(), ClassifierMIA(classifier=GradientBoostedTrees(max_iter=5))


def _canary_partners() -> tuple[Mechanism, Attack]:
    from privgame.attacks import Identity
    from privgame.mechanisms import RandomizedResponse

    return RandomizedResponse(epsilon=1.0), Identity()


def _canary_dataset_partners() -> tuple[Mechanism, Attack]:
    from privgame.attacks import Identity
    from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox  # needs the torch extra

    return DPSGDWhiteBox(noise_multiplier=3.0, steps=5), Identity()


def _dataset_partners() -> tuple[Mechanism, Attack]:
    from privgame.attacks.lira import LiRA

    return _small_model(), LiRA(n_shadows=4)


def _table_partners() -> tuple[Mechanism, Attack]:
    from privgame.attacks import ClosestDistance
    from privgame.mechanisms.synth import BayNet

    return BayNet(k=1), ClosestDistance(n_shadows=4)


def _inputs(records: _Records) -> dict[str, Callable[[], Any]]:
    return {
        "canary-bits": _bits,
        "canary-dataset": functools.partial(_canary_data, records),
        "table": records.table,
        "dataset": functools.partial(_dataset, records),
    }


def _releases(records: _Records) -> dict[str, Callable[[], tuple[Any, np.ndarray]]]:
    return {
        "per-canary-values": _rr_release,
        "model-with-canaries": functools.partial(_model_release, records),
        "model": functools.partial(_trained_model_release, records),
        "table": functools.partial(_table_release, records),
    }


_PARTNERS: dict[str, Callable[[], tuple[Mechanism, Attack]]] = {
    "canary-bits": _canary_partners,
    "canary-dataset": _canary_dataset_partners,
    "table": _table_partners,
    "dataset": _dataset_partners,
    "labelled": _labelled_partners,  # for games whose knowledge is labelled examples (PANORAMIA)
}


@dataclass(frozen=True)
class _Samples:
    """What the checks feed a component, by kind: each a zero-argument function (built only when needed)."""

    inputs: Mapping[str, Callable[[], Any]]
    releases: Mapping[str, Callable[[], tuple[Any, np.ndarray]]]
    partners: Mapping[str, Callable[[], tuple[Mechanism, Attack]]]
    knowledge: Callable[[str], Any]  # by release kind: a table attack's black box runs a generator, a model's trains
    labelled: Callable[[str], Any]  # by release kind: what a learned classifier is fitted on
    models: Callable[[str], Any]  # by release kind: reference models (RMIA)


def _samples(
    inputs: Mapping[str, Any] | None,
    releases: Mapping[str, tuple[Any, Any]] | None,
    partners: Mapping[str, tuple[Mechanism, Attack]] | None,
    knowledge: Any,
    data: Any = None,
) -> _Samples:
    def const(value: Any) -> Callable[[], Any]:
        return lambda: value

    records = _BUILT_IN if data is None else _records(data)
    return _Samples(
        inputs={**_inputs(records), **{k: const(v) for k, v in (inputs or {}).items()}},
        releases={
            **_releases(records),
            **{k: const((r, np.asarray(t, dtype=np.intp))) for k, (r, t) in (releases or {}).items()},
        },
        partners={**_PARTNERS, **{k: const(v) for k, v in (partners or {}).items()}},
        knowledge=functools.partial(_knowledge, records) if knowledge is None else (lambda kind: knowledge),
        labelled=functools.partial(_labelled, records) if knowledge is None else (lambda kind: knowledge),
        models=functools.partial(_reference_models, records) if knowledge is None else (lambda kind: knowledge),
    )


def _sample(table: Mapping[str, Callable[[], Any]], kind: str, what: str, keyword: str) -> Any:
    if kind not in table:
        raise AssertionError(
            f"no sample {what} of kind {kind!r} (built-in: {', '.join(sorted(table))}); "
            f"pass {keyword}={{{kind!r}: ...}}"
        )
    try:
        return table[kind]()
    except ImportError as exc:
        raise AssertionError(
            f"the sample {what} of kind {kind!r} needs {exc.name or 'an optional dependency'}, which is not "
            f"installed; install it or pass {keyword}={{{kind!r}: ...}}"
        ) from exc


# -- helpers ------------------------------------------------------------------------------------------------------
def _kind(component: Any) -> str:
    for kind, base in _KINDS:
        if isinstance(component, base):
            return kind
    raise AssertionError(
        f"{component!r} is not a game, mechanism or attack (subclass privgame.games.Game, Mechanism or Attack)"
    )


def _label(component: Any) -> str:
    return f"{_kind(component)} {getattr(type(component), 'name', type(component).__name__)!r}"


def _comparable(release: Any, n: int) -> np.ndarray:
    """A numeric view of a release: a table's values (category codes), a trained model's arrays, a model's losses
    on the n canaries."""
    from privgame.mechanisms.training.canaries import CanaryModelRelease
    from privgame.mechanisms.training.release import ModelRelease

    if isinstance(release, ModelRelease | CanaryModelRelease):
        arrays = release.to_arrays().values()
        return np.concatenate([np.ravel(v).astype(np.float64) for v in arrays if v.dtype.kind in "fiub"])
    if isinstance(release, pd.DataFrame):
        return np.column_stack(
            [release[c].cat.codes if isinstance(release[c].dtype, pd.CategoricalDtype) else release[c] for c in release]
        ).astype(np.float64)
    if hasattr(release, "losses"):
        return np.asarray(release.losses(np.arange(n)), dtype=np.float64)
    return np.asarray(release, dtype=np.float64)


def _is_float32_model(release: Any) -> bool:
    from privgame.mechanisms.training.canaries import CanaryModelRelease
    from privgame.mechanisms.training.release import ModelRelease

    if isinstance(release, CanaryModelRelease):
        release = release.model
    return isinstance(release, ModelRelease) and any(v.dtype == np.float32 for v in release.to_arrays().values())


def _same_outcome(a: TrialOutcome, b: TrialOutcome) -> bool:
    if set(a.arrays) != set(b.arrays):
        return False
    pairs = [(a.scores, b.scores), (a.membership, b.membership), *((a.arrays[k], b.arrays[k]) for k in a.arrays)]
    return all(np.array_equal(x, y, equal_nan=x.dtype.kind == "f") for x, y in pairs)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float | str | np.bool_ | np.integer | np.floating)


def _same_row(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    def same(x: Any, y: Any) -> bool:
        both_nan = isinstance(x, float | np.floating) and isinstance(y, float | np.floating) and x != x and y != y
        return bool(both_nan or x == y)

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


def _check_row(row: Any, what: str) -> None:
    if not isinstance(row, Mapping) or not row:
        raise AssertionError(f"{what} must return a non-empty dict of str to scalars, got {row!r}")
    bad = {k: v for k, v in row.items() if not isinstance(k, str) or not _is_scalar(v)}
    if bad:
        raise AssertionError(f"{what} must map str to scalars (bool, int, float, str), got {bad!r}")


def _admits_none(hint: Any) -> bool:
    if hint is None or hint is type(None):
        return True
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return type(None) in typing.get_args(hint)
    return False


# -- the checks ---------------------------------------------------------------------------------------------------
def check_dataclass(component: Any, samples: _Samples) -> None:
    """A frozen dataclass of its kind, with a string ``name`` and a docstring of its own."""
    cls = type(component)
    kind = _kind(component)
    params = getattr(cls, "__dataclass_params__", None)
    if not dataclasses.is_dataclass(cls) or params is None or not params.frozen:
        raise AssertionError(f"{cls.__name__} must be a frozen dataclass: @dataclass(frozen=True, slots=True)")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise AssertionError(f"{cls.__name__} needs a non-empty string class attribute 'name' (its config name)")
    doc = (cls.__doc__ or "").strip()
    first = doc.splitlines()[0] if doc else ""
    if not first or first.startswith(f"{cls.__name__}("):  # dataclass writes the signature where there is no doc
        raise AssertionError(f"{cls.__name__} needs a docstring whose first line says what the {kind} is")


def check_type_hints(component: Any, samples: _Samples) -> None:
    """Every parameter has a type hint that resolves (the config reads them to tell a sweep from a value)."""
    cls = type(component)
    try:
        hints = typing.get_type_hints(cls)
    except Exception as exc:  # NameError, TypeError, ...: whatever a broken annotation raises
        raise AssertionError(f"the type hints of {cls.__name__} do not resolve: {type(exc).__name__}: {exc}") from exc
    missing = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in hints]
    if missing:
        raise AssertionError(f"parameters of {cls.__name__} without a type hint: {', '.join(missing)}")


def check_frozen(component: Any, samples: _Samples) -> None:
    """No parameter can be changed after construction."""
    for field in dataclasses.fields(component):
        try:
            setattr(component, field.name, getattr(component, field.name))
        except dataclasses.FrozenInstanceError:
            continue
        raise AssertionError(f"{type(component).__name__}.{field.name} can be assigned: the dataclass must be frozen")


def check_picklable_hashable(component: Any, samples: _Samples) -> None:
    """Survives pickling (joblib sends it to workers) as an equal object with the same hash."""
    try:
        clone = pickle.loads(pickle.dumps(component))
    except Exception as exc:  # PicklingError, AttributeError, TypeError: whatever pickling a field raises
        raise AssertionError(f"{component!r} cannot be pickled: {type(exc).__name__}: {exc}") from exc
    if clone != component:
        raise AssertionError(f"{component!r} unpickles as a different object: {clone!r}")
    try:
        same = hash(clone) == hash(component)
    except TypeError as exc:
        raise AssertionError(f"{component!r} is not hashable (a field holds a mutable value?): {exc}") from exc
    if not same:
        raise AssertionError(f"{component!r} and its unpickled copy have different hashes")


def check_rebuilt_from_fields(component: Any, samples: _Samples) -> None:
    """Built again from its own field values (what a stored config does), it is equal to itself."""
    cls = type(component)
    values = {f.name: getattr(component, f.name) for f in dataclasses.fields(cls) if f.init}
    try:
        rebuilt = cls(**values)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{cls.__name__}(**its own fields) is refused: {exc}") from exc
    if rebuilt != component:
        raise AssertionError(
            f"{cls.__name__}(**its own fields) gives {rebuilt!r}, not {component!r}: __post_init__ must normalise "
            "idempotently"
        )


def check_mechanism_kinds(mechanism: Mechanism, samples: _Samples) -> None:
    """``input_kind`` and ``release_kind`` are non-empty strings (games check them before any work); ``deterministic``
    is a bool; ``canary_dependence`` is None or one line saying why the canaries interact (the order-statistics
    audit's refusal quotes it)."""
    for attr in ("input_kind", "release_kind"):
        value = getattr(type(mechanism), attr, None)
        if not isinstance(value, str) or not value:
            raise AssertionError(f"{type(mechanism).__name__}.{attr} must be a non-empty string, got {value!r}")
    deterministic = getattr(type(mechanism), "deterministic", False)
    if not isinstance(deterministic, bool):
        raise AssertionError(f"{type(mechanism).__name__}.deterministic must be True or False, got {deterministic!r}")
    dependence = getattr(type(mechanism), "canary_dependence", None)
    if dependence is not None and (not isinstance(dependence, str) or not dependence.strip() or "\n" in dependence):
        raise AssertionError(
            f"{type(mechanism).__name__}.canary_dependence must be None (independent canaries) or one non-empty line "
            f"saying why they interact, got {dependence!r}"
        )


def check_release_reproducible(mechanism: Mechanism, samples: _Samples) -> None:
    """The same ``rng`` seed gives the same release; another seed gives another (all randomness from ``rng``) —
    or, for a mechanism that declares ``deterministic = True``, the same release for every seed."""
    data = _sample(samples.inputs, mechanism.input_kind, "input", "inputs")
    n = len(data)
    a = _comparable(mechanism.release(data, rng=np.random.default_rng(7)), n)
    b = _comparable(mechanism.release(data, rng=np.random.default_rng(7)), n)
    c = _comparable(mechanism.release(data, rng=np.random.default_rng(8)), n)
    if not np.array_equal(a, b, equal_nan=True):
        raise AssertionError(
            f"{_label(mechanism)}: two releases with rng seeded 7 differ: draw every random number from rng"
        )
    same = np.array_equal(a, c, equal_nan=True)
    if getattr(type(mechanism), "deterministic", False):
        if not same:
            raise AssertionError(
                f"{_label(mechanism)} declares deterministic = True, but releases with rng seeded 7 and 8 differ: "
                "a deterministic release ignores rng (or drop the declaration and draw its randomness from rng)"
            )
    elif same:
        raise AssertionError(
            f"{_label(mechanism)}: releases with rng seeded 7 and 8 are equal: the release ignores rng (declare "
            "deterministic = True if it is deterministic by design)"
        )


def check_release_kind(mechanism: Mechanism, samples: _Samples) -> None:
    """The release is what ``release_kind`` promises the attacks and the artefact cache: a table a DataFrame of
    its input's columns, a model a ``ModelRelease`` that the cache rebuilds from its plain arrays, a model with
    canaries a ``CanaryModelRelease`` of one canary per bit, per-canary values one number per canary."""
    kind = mechanism.release_kind
    if kind not in ("table", "model", "model-with-canaries", "per-canary-values"):
        return  # a kind of its own: its attacks say what they need
    data = _sample(samples.inputs, mechanism.input_kind, "input", "inputs")
    release = mechanism.release(data, rng=np.random.default_rng(7))
    where = f"{_label(mechanism)} (release_kind {kind!r})"
    if kind == "table":
        if not isinstance(release, pd.DataFrame):
            raise AssertionError(f"{where} must release a pandas DataFrame, got {type(release).__name__}")
        if isinstance(data, pd.DataFrame) and list(release.columns) != list(data.columns):
            raise AssertionError(
                f"{where} must release a table of its input's columns {list(data.columns)}, got {list(release.columns)}"
            )
    elif kind == "model":
        _check_model_release(where, release, getattr(data, "x", None))
    elif kind == "model-with-canaries":
        from privgame.mechanisms.training.canaries import CanaryModelRelease

        if not isinstance(release, CanaryModelRelease):
            raise AssertionError(
                f"{where} must release a privgame.mechanisms.training.canaries.CanaryModelRelease (the model and the "
                f"canaries), got {type(release).__name__}"
            )
        if release.m != len(data):
            raise AssertionError(
                f"{where} must release its {len(data)} canaries, one per membership bit, got {release.m}"
            )
    else:
        values = np.asarray(release)
        if values.shape != (len(data),) or values.dtype.kind not in "biuf":
            raise AssertionError(
                f"{where} must release one number per canary, shape ({len(data)},), got {type(release).__name__} "
                f"{getattr(values, 'dtype', '')} of shape {values.shape}"
            )


def _check_model_release(where: str, release: Any, x: Any) -> None:
    """A model release the artefact cache can store and rebuild: plain arrays, decoded to the same logits."""
    from privgame.mechanisms.training.release import ModelRelease, decode_release

    if not isinstance(release, ModelRelease):
        raise AssertionError(
            f"{where} must release a privgame.mechanisms.training.release.ModelRelease, got {type(release).__name__}"
        )
    arrays = release.to_arrays()
    objects = [k for k, v in arrays.items() if np.asarray(v).dtype == object]
    if objects:
        raise AssertionError(
            f"{where}: to_arrays() must give plain arrays (the cache stores an npz, never a pickle), got dtype object "
            f"in {objects[0]!r}"
        )
    try:
        decoded = decode_release(arrays)
    except Exception as exc:  # whatever a foreign release's arrays make the decoder raise
        raise AssertionError(
            f"{where}: the artefact cache cannot rebuild the release from its to_arrays() "
            f"({type(exc).__name__}: {exc}); release one of the kinds "
            "privgame.mechanisms.training.release.decode_release "
            "rebuilds (a NetworkRelease of one layer is a linear model), built from the fitted parameters"
        ) from exc
    if x is not None and not np.array_equal(decoded.logits(x), release.logits(x), equal_nan=True):
        raise AssertionError(f"{where}: the release rebuilt from its to_arrays() gives other logits than the release")


def check_release_runs(mechanism: Mechanism, samples: _Samples) -> None:
    """``release_runs`` (the multi-run game's batched path) equals separate releases, up to rounding."""
    from privgame.mechanisms.training.canaries import CanaryData
    from privgame.mechanisms.training.data import TrainingData

    first = _sample(samples.inputs, mechanism.input_kind, "input", "inputs")
    if isinstance(first, pd.DataFrame):
        second: Any = first.iloc[::-1].reset_index(drop=True)
    elif isinstance(first, np.ndarray) and first.dtype == bool:
        second = ~first
    elif isinstance(first, CanaryData):  # another run of the same audit: the other canaries inserted
        second = first.with_membership(~first.membership)
    elif isinstance(first, TrainingData):  # a pool: the other half of it
        second = TrainingData(first.x, first.y, ~first.include, n_classes=first.n_classes)
    else:
        second = first
    data = [first, second]
    batched = mechanism.release_runs(data, rngs=[np.random.default_rng(3), np.random.default_rng(4)])
    if len(batched) != 2:
        raise AssertionError(f"{_label(mechanism)}: release_runs on 2 inputs returned {len(batched)} releases")
    for k, (d, seed, release) in enumerate(zip(data, (3, 4), batched, strict=True)):
        alone = _comparable(mechanism.release(d, rng=np.random.default_rng(seed)), len(d))
        got = _comparable(release, len(d))
        # float32 models (the trained networks) round in the batched products at about 1e-6
        atol = 1e-4 if _is_float32_model(release) else 1e-10
        if got.shape != alone.shape or not np.allclose(got, alone, rtol=0, atol=atol, equal_nan=True):
            raise AssertionError(f"{_label(mechanism)}: release_runs' run {k} differs from release() with its rng")


def check_privacy_claim(mechanism: Mechanism, samples: _Samples) -> None:
    """A claim with a ``dp_accounting`` event whose ε(δ) is ≥ 0, finite and non-increasing, or a declared ``None``."""
    cls = type(mechanism)
    claim = mechanism.privacy_claim()
    if claim is not None and getattr(cls, "deterministic", False):
        raise AssertionError(
            f"{cls.__name__} declares deterministic = True and claims privacy ({claim!r}): a deterministic release "
            "that depends on its input is not differentially private (return None)"
        )
    if claim is None:
        try:
            hints = typing.get_type_hints(cls.privacy_claim)
        except Exception:  # an annotation that does not resolve declares nothing
            hints = {}
        hint = hints.get("return", "missing")
        if not _admits_none(hint):
            raise AssertionError(
                f"{cls.__name__}.privacy_claim() returned None but its return annotation ({hint}) does not declare "
                "that it may claim nothing (a forgotten return?): annotate it '-> None' (no claim) or "
                "'-> PrivacyClaim | None' and say when in its docstring"
            )
        return
    if not isinstance(claim, PrivacyClaim):
        raise AssertionError(
            f"{cls.__name__}.privacy_claim() must return a privgame.analysis.accounting.PrivacyClaim or None, "
            f"got {claim!r}"
        )
    import dp_accounting

    if not isinstance(claim.event, dp_accounting.DpEvent):
        raise AssertionError(f"{cls.__name__}'s claim needs a dp_accounting DpEvent, got {claim.event!r}")
    if not isinstance(claim.neighbouring, NeighbouringRelation):
        raise AssertionError(
            f"{cls.__name__}'s claim needs a dp_accounting NeighboringRelation, got {claim.neighbouring!r}"
        )
    if claim != mechanism.privacy_claim():
        raise AssertionError(f"{cls.__name__}.privacy_claim() gives a different claim on a second call")
    epsilons = [claim.epsilon(delta) for delta in CLAIM_DELTAS]
    for delta, eps in zip(CLAIM_DELTAS, epsilons, strict=True):
        if not isinstance(eps, float | int) or isinstance(eps, bool) or not eps >= 0:
            raise AssertionError(f"{cls.__name__}'s claim: epsilon({delta:g}) must be a number >= 0, got {eps!r}")
    if not math.isfinite(epsilons[-1]):
        raise AssertionError(
            f"{cls.__name__}'s claim: epsilon({CLAIM_DELTAS[-1]:g}) is {epsilons[-1]}: a claim with no finite ε is "
            "no claim (return None), or pass an example whose claim is finite"
        )
    for (d0, e0), (d1, e1) in itertools.pairwise(zip(CLAIM_DELTAS, epsilons, strict=True)):
        if e1 > e0 * (1 + 1e-9) + 1e-12:
            raise AssertionError(
                f"{cls.__name__}'s claim: ε must not grow with δ, got epsilon({d0:g}) = {e0} < epsilon({d1:g}) = {e1}"
            )


def check_attack_kinds(attack: Attack, samples: _Samples) -> None:
    """``accepts`` is a non-empty frozenset of release kinds and ``needs`` a known kind of knowledge."""
    cls = type(attack)
    accepts = getattr(cls, "accepts", None)
    if not isinstance(accepts, frozenset) or not accepts or not all(isinstance(k, str) and k for k in accepts):
        raise AssertionError(
            f"{cls.__name__}.accepts must be a non-empty frozenset of release kinds (e.g. frozenset({{'table'}})), "
            f"got {accepts!r}"
        )
    if getattr(cls, "needs", None) not in KNOWLEDGE_KINDS:
        raise AssertionError(f"{cls.__name__}.needs must be one of {', '.join(KNOWLEDGE_KINDS)}, got {cls.needs!r}")


def check_attack_scores(attack: Attack, samples: _Samples) -> None:
    """For every accepted release kind: one finite float64 per target, a finite threshold, reproducible fitting."""
    for kind in sorted(attack.accepts):
        knowledge = (
            samples.knowledge(kind)
            if attack.needs == "auxiliary"
            else samples.labelled(kind)
            if attack.needs == "labelled"
            else samples.models(kind)
            if attack.needs == "models"
            else None
        )
        release, targets = _sample(samples.releases, kind, "release", "releases")
        where = f"{_label(attack)} on a {kind!r} release"
        scores = []
        for _ in range(2):
            fitted = attack.fit(knowledge, rng=np.random.default_rng(0))
            if not isinstance(fitted, FittedAttack):
                raise AssertionError(f"{where}: fit must return a fitted attack (score, threshold), got {fitted!r}")
            s = fitted.score(release, targets)
            if not isinstance(s, np.ndarray) or s.dtype != np.float64 or s.shape != targets.shape:
                shape = getattr(s, "shape", None)
                raise AssertionError(
                    f"{where}: score must return float64 of shape {targets.shape}, got {type(s).__name__} "
                    f"{getattr(s, 'dtype', '')} of shape {shape}"
                )
            if not np.all(np.isfinite(s)):
                raise AssertionError(f"{where}: scores must be finite, got {s[~np.isfinite(s)][:3]!r}")
            threshold = fitted.threshold
            if isinstance(threshold, bool) or not isinstance(threshold, float | int | np.floating | np.integer):
                raise AssertionError(f"{where}: threshold must be a number, got {threshold!r}")
            if not math.isfinite(float(threshold)):
                raise AssertionError(f"{where}: threshold must be finite, got {threshold!r}")
            scores.append(s)
        if not np.array_equal(scores[0], scores[1]):
            raise AssertionError(f"{where}: fitted twice with rng seeded 0, it scores differently")


def check_game_kinds(game: Game, samples: _Samples) -> None:
    """``input_kinds`` is a non-empty frozenset of mechanism input kinds, ``knowledge`` a set of known kinds."""
    cls = type(game)
    kinds = getattr(cls, "input_kinds", None)
    if not isinstance(kinds, frozenset) or not kinds or not all(isinstance(k, str) and k for k in kinds):
        raise AssertionError(f"{cls.__name__}.input_kinds must be a non-empty frozenset of input kinds, got {kinds!r}")
    knowledge = getattr(cls, "knowledge", None)
    if not isinstance(knowledge, frozenset) or not knowledge or not knowledge <= set(KNOWLEDGE_KINDS):
        raise AssertionError(
            f"{cls.__name__}.knowledge must be a non-empty frozenset of {', '.join(KNOWLEDGE_KINDS)}, got {knowledge!r}"
        )
    per_point = game.trials_per_point()
    if per_point is not None and (isinstance(per_point, bool) or not isinstance(per_point, int) or per_point < 1):
        raise AssertionError(f"{cls.__name__}.trials_per_point() must be None or an int >= 1, got {per_point!r}")


def check_game_play(game: Game, samples: _Samples) -> None:
    """Plays its partners reproducibly from the seed (and differently for another), with a row of scalars."""
    kinds = sorted(game.input_kinds)
    if "labelled" in game.knowledge and "nothing" not in game.knowledge:
        kinds = ["labelled", *kinds]  # its attack is a learned classifier: the labelled partners first
    known = [k for k in kinds if k in samples.partners] or kinds[:1]
    # the first pair the game accepts (a game's parameters may choose among its input kinds: the canary games'
    # data), or, when it accepts none, the first pair's refusal
    refusals = []
    for kind in known:
        mechanism, attack = _sample(samples.partners, kind, "(mechanism, attack)", "partners")
        reason = game.incompatibility(mechanism, attack)
        if reason is None:
            break
        refusals.append(f"{mechanism!r}, {attack!r}: {reason}")
    else:
        raise AssertionError(f"{_label(game)} refuses its partners {refusals[0]}")
    seed = np.random.SeedSequence(_SEED, spawn_key=(0, 0))
    outcome = game.play(mechanism, attack, seed=seed)
    if not isinstance(outcome, TrialOutcome):
        raise AssertionError(f"{_label(game)}.play must return a TrialOutcome, got {type(outcome).__name__}")
    if not _same_outcome(outcome, game.play(mechanism, attack, seed=np.random.SeedSequence(_SEED, spawn_key=(0, 0)))):
        raise AssertionError(f"{_label(game)}: two plays with the same seed differ: draw every random number from it")
    other = game.play(mechanism, attack, seed=np.random.SeedSequence(_OTHER_SEED, spawn_key=(0, 0)))
    if _same_outcome(outcome, other):
        raise AssertionError(
            f"{_label(game)}: plays with seeds {_SEED} and {_OTHER_SEED} are equal: play ignores its seed"
        )
    settings = AnalysisSettings()
    row = game.analyse_trial(outcome, settings, seed=seed)
    _check_row(row, f"{_label(game)}.analyse_trial")
    if not _same_row(row, game.analyse_trial(outcome, settings, seed=seed)):
        raise AssertionError(f"{_label(game)}.analyse_trial gives a different row for the same outcome and seed")
    claim = mechanism.privacy_claim()
    rows = pd.DataFrame(
        [
            {
                "trial": 0,
                "grid_point": 0,
                "repetition": 0,
                "epsilon_analytic": math.nan if claim is None else claim.epsilon(settings.delta),
                **row,
            }
        ]
    )
    _check_row(game.summarise(rows, settings, lambda trial: outcome), f"{_label(game)}.summarise")


def check_game_runs(game: Game, samples: _Samples) -> None:
    """A game that makes runs apart (``separate_runs``) makes, in ``make_runs``, the runs its ``play`` reads: made
    in two pieces into a cache, at least one entry per run (a run's release, and what the trial reads of it where
    the game stores that too), ``play`` with that cache reads at least one entry per run and gives the outcome of a
    play without a cache (privgame.engine.tasks)."""
    import tempfile
    from pathlib import Path

    from privgame.core.cache import ArtefactCache
    from privgame.games._base import TrialContext

    kinds = [k for k in sorted(game.input_kinds) if k in samples.partners]
    pairs = [_sample(samples.partners, kind, "(mechanism, attack)", "partners") for kind in kinds]
    pairs = [(m, a) for m, a in pairs if game.incompatibility(m, a) is None]
    if not pairs:
        return  # check_game_play reports a game that refuses its partners
    mechanism, attack = pairs[0]
    total = game.separate_runs(mechanism, attack)
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise AssertionError(f"{_label(game)}.separate_runs must be an int >= 0, got {total!r}")
    if total == 0:
        return
    limit = game.run_batch(mechanism, attack)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise AssertionError(f"{_label(game)}.run_batch must be an int >= 1, got {limit!r}")
    seed = np.random.SeedSequence(_SEED, spawn_key=(0, 0))
    with tempfile.TemporaryDirectory() as folder:
        cache = ArtefactCache(folder)
        for runs in (range(0, (total + 1) // 2), range((total + 1) // 2, total)):
            if runs:
                game.make_runs(mechanism, attack, seed=seed, runs=runs, context=TrialContext(cache=cache))
        made = len(list(Path(folder).rglob("*.sha256")))
        hits = cache.hits
        read = game.play(mechanism, attack, seed=seed, context=TrialContext(cache=cache))
        read_back = cache.hits - hits
    if made < total or read_back < total:
        raise AssertionError(
            f"{_label(game)}: make_runs made {made} cache entries for its {total} runs and play read {read_back} "
            "cache entries: make_runs must make each run (its input and seed) exactly as play makes it"
        )
    if not _same_outcome(read, game.play(mechanism, attack, seed=seed)):
        raise AssertionError(f"{_label(game)}: a play reading the runs make_runs made differs from a play alone")


# -- the public API -----------------------------------------------------------------------------------------------
_COMMON = (check_dataclass, check_type_hints, check_frozen, check_picklable_hashable, check_rebuilt_from_fields)
_BY_KIND: dict[str, tuple[Callable[[Any, _Samples], None], ...]] = {
    "mechanism": (
        check_mechanism_kinds,
        check_release_reproducible,
        check_release_kind,
        check_release_runs,
        check_privacy_claim,
    ),
    "attack": (check_attack_kinds, check_attack_scores),
    "game": (check_game_kinds, check_game_play, check_game_runs),
}


@dataclass(frozen=True)
class Check:
    """One check of the contract, with its samples bound: ``check(component)`` raises AssertionError on a fault."""

    name: str
    func: Callable[[Any, _Samples], None] = dataclasses.field(repr=False)
    samples: _Samples = dataclasses.field(repr=False)

    def __call__(self, component: Any) -> None:
        self.func(component, self.samples)


def _instance(component: Any) -> Any:
    if not isinstance(component, type):
        return component
    try:
        return component()
    except TypeError as exc:
        raise AssertionError(f"pass an instance of {component.__name__} (it has required parameters: {exc})") from exc


def checks_for(
    component: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    releases: Mapping[str, tuple[Any, Any]] | None = None,
    partners: Mapping[str, tuple[Mechanism, Attack]] | None = None,
    knowledge: Any = None,
    data: Any = None,
) -> list[Check]:
    """The checks that apply to ``component`` (see the module docstring), in order.

    Parameters
    ----------
    component : Game, Mechanism or Attack instance (or a class whose parameters all have defaults)
    inputs : mapping of str to object, optional
        A mechanism input per ``input_kind``, beside (or instead of) the built-in canary bits and table.
    releases : mapping of str to (release, targets), optional
        A release per ``release_kind`` and the target indices an attack scores on it.
    partners : mapping of str to (Mechanism, Attack), optional
        The mechanism and attack a game of that input kind plays in its check.
    knowledge : privgame.attacks.knowledge.Knowledge or privgame.attacks.classifier.LabelledExamples, optional
        What a shadow-modelling attack (``needs = "auxiliary"``) or a learned classifier (``needs = "labelled"``)
        is fitted on.
    data : str or privgame.data.Dataset, optional
        Build the samples from this registered data set instead of the built-in sample table: 200 of its records
        (a permutation seeded 0) are the ``"table"`` input, the records of the knowledge and of the sample
        Synthpop release, and, encoded from its public domain (:meth:`privgame.data.Dataset.encode`; a data set
        with a label), the ``"dataset"`` and ``"canary-dataset"`` inputs and the sample model releases.  The
        canary bits and the games' partners do not depend on it (a game plays its own ``data``).

    Returns
    -------
    list of Check

    Raises
    ------
    TypeError, ValueError
        If ``data`` names no registered data set, or it has fewer than 200 records.
    """
    component = _instance(component)
    samples = _samples(inputs, releases, partners, knowledge, data)
    funcs = (*_COMMON, *_BY_KIND[_kind(component)])
    return [Check(f.__name__, f, samples) for f in funcs]


def check_component(component: Any, **samples: Any) -> None:
    """Run every applicable check on ``component``; raise one AssertionError listing every check it fails.

    Parameters
    ----------
    component : Game, Mechanism or Attack instance (or a class whose parameters all have defaults)
    **samples
        ``inputs``, ``releases``, ``partners``, ``knowledge``, ``data``: as :func:`checks_for`
        (``check_component(MyGenerator(), data="clinic")`` feeds it 200 rows of the data set ``clinic``).

    Raises
    ------
    AssertionError
        Naming the component and, for each failed check, the check and what is wrong.  An exception other than
        AssertionError raised inside a check (the component crashed on a sample) counts as that check's failure.

    Examples
    --------
    >>> from privgame.mechanisms import RandomizedResponse
    >>> check_component(RandomizedResponse(epsilon=1.0))  # passes: returns None
    """
    instance = _instance(component)
    failures = []
    for check in checks_for(instance, **samples):
        try:
            check(instance)
        except AssertionError as exc:
            failures.append(f"{check.name}: {exc}")
        except Exception as exc:  # the component crashed on a sample: report it as this check's failure
            failures.append(f"{check.name}: raised {type(exc).__name__}: {exc}")
    if failures:
        raise AssertionError(f"{_label(instance)} breaks the component contract:\n  " + "\n  ".join(failures))


def parametrize_with_checks(components: Iterable[Any], **samples: Any) -> Any:
    """A ``pytest.mark.parametrize`` over every (component, check) pair, as scikit-learn's of the same name.

    The decorated test takes ``component`` and ``check`` and calls ``check(component)``; each pair is its own test,
    with an id such as ``mechanism:gaussian-check_privacy_claim``.

    Parameters
    ----------
    components : iterable of Game, Mechanism or Attack instances
    **samples
        As :func:`checks_for`.
    """
    import pytest  # only the tests need it

    params = []
    for component in components:
        instance = _instance(component)
        label = f"{_kind(instance)}:{type(instance).name}"
        params += [pytest.param(instance, c, id=f"{label}-{c.name}") for c in checks_for(instance, **samples)]
    return pytest.mark.parametrize(("component", "check"), params)
