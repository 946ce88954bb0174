"""Any scikit-learn classifier as a trained-model mechanism, released without a pickle.

A fitted scikit-learn estimator can be saved only by pickling it, which privgame never does (a cache directory or
a results directory from elsewhere must hold no code).  So ``sklearn`` releases what the game can ever ask of the
model instead: its ``predict_proba`` on every record of its input, the pool of
:class:`privgame.mechanisms.training.data.TrainingData` and the queries the game declared, stored as a
:class:`privgame.mechanisms.training.release.LookupRelease` (each record's probabilities under the digest of its encoded
features) that goes through the artefact cache as an npz.  A record outside them is refused in one line.

Which records each game queries a released model on, and so puts in its input:

- ``lira``: the pool (every model is scored on all N₊ records);
- the record games (``record``, ``record-traditional``, ``record-model-seeded``): a round's model on its target,
  a record of the released dataset, and the pool of the rounds is the released dataset and the evaluation pool;
  LiRA's shadows on the target, which is in their own pool (the auxiliary records and the targets);
- ``panoramia``: the target on its training pool (the known members, the O(1) candidates) and, declared as
  queries, the generated non-members and the real held-out records (RM;RN, the accuracy); the helper on the audit
  records and the held-out records; ``classifier-mia``'s classifier on the signal features of every audit example.

``estimator`` is an import path: importing it runs that module's code, as a plugin does (docs/config.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.mechanisms._base import Mechanism
from privgame.mechanisms._imports import one_line, resolve_import
from privgame.mechanisms.training.data import TrainingData, as_training_data
from privgame.mechanisms.training.models import TrainedModel
from privgame.mechanisms.training.release import LookupRelease, ModelRelease

__all__ = ["FEATURES", "SklearnModel", "build_estimator", "normalise_params", "resolve_estimator"]

FEATURES = ("encoded", "raw")
DEFAULT_ESTIMATOR = "sklearn.ensemble.RandomForestClassifier"
#: the string that stands for Python's None in ``params`` (TOML has no null)
NONE = "None"
#: bytes per node of a fitted tree (scikit-learn's node record and its value row), for the memory estimate
_TREE_NODE_BYTES = 80


_line = one_line


def resolve_estimator(path: Any) -> Any:
    """The object an import path names: ``"package.module.Name"`` or ``"package.module:Name"``
    (:func:`privgame.mechanisms._imports.resolve_import`; importing the module runs its code, as a plugin's does).

    Raises
    ------
    TypeError
        If ``path`` is not a string.
    ValueError
        If it is not a dotted path, or the module cannot be imported, or has no such attribute (one line).
    """
    return resolve_import(path, field="estimator", example=DEFAULT_ESTIMATOR, what="class", form="package.module.Class")


def _value(key: str, value: Any) -> Any:
    """A parameter value as the estimator gets it: "None" as None, lists as tuples (recursively)."""
    if isinstance(value, str):
        return None if value == NONE else value
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return tuple(_value(key, v) for v in value)
    what = "a table" if isinstance(value, Mapping) else type(value).__name__
    raise ValueError(
        f'params[{key!r}] must be a number, a string, a boolean, "None" or a list of them, got {what} '
        f"{value!r} (an estimator built with nested values belongs in a function of a plugin module, named by "
        "estimator)."
    )


def normalise_params(params: Any) -> tuple[tuple[str, Any], ...]:
    """``params`` (a mapping, or pairs) as sorted ``(name, value)`` pairs, the string "None" as None and lists as
    tuples, so that the mechanism is hashable and equal for equal parameters.

    Raises
    ------
    TypeError
        If ``params`` is not a mapping (or pairs) of string keys.
    ValueError
        If a value is a table or of another type than TOML's scalars and lists.
    """
    if isinstance(params, Mapping):
        items = list(params.items())
    elif isinstance(params, tuple | list) and all(isinstance(p, tuple | list) and len(p) == 2 for p in params):
        items = [tuple(p) for p in params]
    elif isinstance(params, tuple | list) and params and all(isinstance(p, Mapping) for p in params):
        raise TypeError(
            f"params must be one table of the estimator's parameters (a list of tables is not a sweep: sweep "
            f"estimator or features, or write a config per table), got {list(params)!r}."
        )
    else:
        raise TypeError(f"params must be a table of the estimator's parameters, got {params!r}.")
    keys = [k for k, _ in items]
    bad = [k for k in keys if not isinstance(k, str) or not k]
    if bad:
        raise TypeError(f"params must have parameter names as keys, got {bad[0]!r}.")
    if len(set(keys)) != len(keys):
        raise ValueError(f"params must name each parameter once, got {sorted(keys)!r}.")
    return tuple(sorted((k, _value(k, v)) for k, v in items))


def _is_seed_key(key: str) -> bool:
    return key == "random_state" or key.endswith("__random_state")


def build_estimator(path: str, params: Any = ()) -> Any:
    """A fresh, unfitted estimator: the object at ``path`` called without arguments, then ``set_params(**params)``.

    ``path`` names a class (``sklearn.ensemble.RandomForestClassifier``) or a function that returns an unfitted
    estimator (a plugin's ``make_pipeline(...)``); ``params`` may set a nested step's parameter
    (``logisticregression__C``), as ``set_params`` does.  Checked: it is a scikit-learn estimator (``fit``,
    ``get_params``, ``set_params``), a classifier (``sklearn.base.is_classifier``; a class without scikit-learn's
    tags, not derived from ``BaseEstimator``, unless its ``_estimator_type`` says otherwise), it accepts every key of
    ``params`` (its ``get_params(deep=True)``), none of them a ``random_state`` (drawn from each release's seed), it
    has ``predict_proba`` with these parameters, and their values pass the estimator's own parameter validation
    where it declares one (scikit-learn's ``_parameter_constraints``).

    Raises
    ------
    TypeError, ValueError
        One line each, naming ``path`` and what is wrong.
    """
    from sklearn.base import is_classifier

    factory = resolve_estimator(path)
    if not callable(factory):
        raise ValueError(f"estimator must name a class (or a function returning an estimator), got {path!r}.")
    try:
        model = factory()
    except SystemExit as exc:  # a function that exits would otherwise end the command silently, status 0
        raise ValueError(
            f"estimator must build an estimator, got {path!r}, which called sys.exit({exc.code!r})."
        ) from None
    except Exception as exc:  # its constructor's own error
        raise ValueError(
            f"estimator must build without arguments (params are set with set_params), got {path!r}: {_line(exc)}."
        ) from None
    if not all(callable(getattr(model, m, None)) for m in ("fit", "get_params", "set_params")):
        raise ValueError(
            f"estimator must be a scikit-learn estimator (fit, get_params, set_params), got {path!r}, which builds a "
            f"{type(model).__name__}."
        )
    try:
        classifier = is_classifier(model)
    except AttributeError:  # no scikit-learn tags (not a BaseEstimator): a classifier by fit and predict_proba
        classifier = getattr(model, "_estimator_type", "classifier") == "classifier"
    if not classifier:
        kind = getattr(getattr(model, "__sklearn_tags__", lambda: None)(), "estimator_type", None)
        raise ValueError(
            f"estimator must be a classifier (scikit-learn's is_classifier), got {path!r}"
            + (f", a {kind}." if isinstance(kind, str) else ".")
        )
    pairs = dict(normalise_params(params))
    known = model.get_params(deep=True)
    for key, value in pairs.items():
        if _is_seed_key(key):
            raise ValueError(
                f"params must leave out {key!r}: each release draws it from its own seed (the same seed gives the "
                f"same model, another seed another), got {value!r}."
            )
        if key not in known:
            raise ValueError(
                f"params has no key {key!r} for {path}; its parameters (get_params): "
                f"{', '.join(sorted(k for k in known if not _is_seed_key(k)))}."
            )
    try:
        model.set_params(**pairs)
    except Exception as exc:
        raise ValueError(f"params cannot be set on {path}: {_line(exc)}.") from None
    if not callable(getattr(model, "predict_proba", None)):
        raise ValueError(f"estimator must have predict_proba, got {path!r} without it (with these params).")
    for part in [model, *(v for v in model.get_params(deep=True).values() if hasattr(v, "_validate_params"))]:
        check = getattr(part, "_validate_params", None)  # scikit-learn's own check at fit, run when the config is read
        # a third-party class may inherit BaseEstimator's _validate_params without declaring the constraints it
        # reads: it has no parameter validation of its own, so there is nothing to run
        if callable(check) and hasattr(part, "_parameter_constraints"):
            try:
                check()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"params: {' '.join(str(exc).split())}") from None
    return model


@dataclass(frozen=True, slots=True)
class SklearnModel(TrainedModel):
    """Any scikit-learn classifier, named by import path; released as its probabilities on the game's records.

    Parameters
    ----------
    estimator : str, default="sklearn.ensemble.RandomForestClassifier"
        An import path (``"package.module.Class"`` or ``"package.module:function"``) to a classifier with ``fit``
        and ``predict_proba``, or to a function returning one (a Pipeline from a plugin module).  Importing it runs
        that module's code, as a plugin's: name only modules you trust.  Resolved and checked when the mechanism
        is built (:func:`build_estimator`), and in every worker when it trains.
    params : mapping of str to value, default={}
        Given to ``set_params``: keys among its ``get_params(deep=True)`` (nested ``step__param`` too), values
        numbers, strings, booleans, lists (passed as tuples) or the string ``"None"`` for Python's None (TOML has
        no null; the string "None" therefore always means None).  Not a table (a nested value) and not
        ``random_state``.  Stored as sorted (name, value) pairs.
    features : {"encoded", "raw"}, default="encoded"
        What the estimator reads: the game's public-domain encoding (:mod:`privgame.data.features`, the ``x``
        of the input), or the data set's own columns as a DataFrame, the label left out (``TrainingData.frame``),
        for a Pipeline that does its own preprocessing.

    Notes
    -----
    Input: a pool and an include-mask (:class:`privgame.mechanisms.training.data.TrainingData`), with the records beyond
    the pool its game queries (``queries``).  Release: a :class:`privgame.mechanisms.training.release.LookupRelease`,
    the estimator's ``predict_proba`` on every distinct record of the pool and the queries, exactly; any other record
    is refused (see the module docstring for what each game stores).  In raw mode the records are still found by
    their encoding, and two records encoded alike with different columns are refused (none in Adult or COMPAS).
    Randomness: every ``random_state`` of the estimator (its own and its steps', in sorted order) gets an int drawn
    from the release's rng, so the same seed gives the same model.  No privacy claim; K releases train one after
    the other.  The cache key holds the estimator's path and parameters, the queries (and in raw mode the
    frames), and the source of the estimator's module when it is not scikit-learn's (whose version is in every
    key).
    """

    name: ClassVar[str] = "sklearn"
    release_runs = Mechanism.release_runs  # an estimator does not batch: K releases are K fits

    estimator: str = DEFAULT_ESTIMATOR
    params: Mapping[str, Any] | tuple[tuple[str, Any], ...] = ()
    features: str = "encoded"

    def __post_init__(self) -> None:
        if self.features not in FEATURES:
            raise ValueError(f"features must be one of {', '.join(FEATURES)}, got {self.features!r}.")
        object.__setattr__(self, "params", normalise_params(self.params))
        build_estimator(self.estimator, self.params)

    def privacy_claim(self) -> None:
        """None: a non-private model claims nothing."""
        return None

    def reads_columns(self) -> bool:
        return self.features == "raw"

    def build(self, rng: np.random.Generator | None = None) -> Any:
        """A fresh, unfitted estimator with the parameters; with ``rng``, every ``random_state`` drawn from it."""
        model = build_estimator(self.estimator, self.params)
        if rng is not None:
            keys = sorted(k for k in model.get_params(deep=True) if _is_seed_key(k))
            if keys:
                model.set_params(**{k: int(rng.integers(2**31 - 1)) for k in keys})
        return model

    def cache_inputs(self, data: Any) -> dict[str, Any]:
        pool = as_training_data("data", data)
        extra: dict[str, Any] = {"queries": pool.queries_hash}
        if self.features == "raw":
            extra["frame"] = pool.frame_hash
        return extra

    def cache_code(self) -> tuple[str, ...]:
        """The modules of the estimator (the path's, the built object's and its steps'), scikit-learn's left out:
        its version is part of every key already."""
        model = self.build()
        factory = resolve_estimator(self.estimator)
        parts = [model, *(v for v in model.get_params(deep=True).values() if hasattr(v, "get_params"))]
        modules = {getattr(factory, "__module__", None), *(type(p).__module__ for p in parts)}
        return tuple(sorted(m for m in modules if isinstance(m, str) and m.split(".")[0] != "sklearn"))

    def memory_bytes(self, n: int) -> int:
        """The base trainers' pool and copies, the released table (about 64 bytes a record), and for an ensemble
        of trees (an ``n_estimators`` parameter) up to two nodes a training record in each tree."""
        params = self.build().get_params(deep=True)
        trees = sum(
            int(v)
            for k, v in params.items()
            if (k == "n_estimators" or k.endswith("__n_estimators")) and isinstance(v, int) and not isinstance(v, bool)
        )
        return TrainedModel.memory_bytes(self, n) + 64 * n + trees * 2 * _TREE_NODE_BYTES * n

    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        data: TrainingData = as_training_data("data", pool)
        first, inverse, digests = data.scored_rows()
        if self.features == "raw":
            frames = self._frames(data, first, inverse)
            scored: Any = frames.iloc[first].reset_index(drop=True)
        else:
            rows = data.x if data.queries is None else np.concatenate([data.x, data.queries])
            scored = rows[first]
        out: list[ModelRelease] = []
        for mask, rng in zip(masks, rngs, strict=True):
            model = self.build(rng)
            train = np.flatnonzero(mask)
            x = data.frame.iloc[train].reset_index(drop=True) if self.features == "raw" else data.x[train]
            try:
                model.fit(x, data.y[train])
                probabilities = np.asarray(model.predict_proba(scored), dtype=np.float64)
            except (TypeError, ValueError) as exc:
                what = "the records' own columns" if self.features == "raw" else "the encoded features"
                raise ValueError(f"estimator {self.estimator} cannot fit and score {what}: {_line(exc)}") from None
            out.append(self._release(model, probabilities, digests, data))
        return out

    def _frames(self, data: TrainingData, first: np.ndarray, inverse: np.ndarray) -> Any:
        """The pool's and the queries' columns, checked to agree wherever their encodings do."""
        import pandas as pd

        if data.frame is None:
            raise ValueError(
                "features = 'raw' needs the records' own columns (TrainingData.frame), which the games lira, record "
                "and panoramia give; this input has none."
            )
        frames = data.frame if data.query_frame is None else pd.concat([data.frame, data.query_frame])
        frames = frames.reset_index(drop=True)
        hashes = pd.util.hash_pandas_object(frames, index=False).to_numpy()
        clash = np.flatnonzero(hashes != hashes[first[inverse]])
        if clash.size:
            row = int(clash[0])
            raise ValueError(
                f"features = 'raw' needs records encoded alike to have the same columns (a release finds a record "
                f"by its encoding), got rows {int(first[inverse[row]])} and {row} of the pool and queries, which "
                "differ."
            )
        return frames

    def _release(self, model: Any, probabilities: np.ndarray, digests: np.ndarray, data: TrainingData) -> LookupRelease:
        classes = np.asarray(getattr(model, "classes_", np.arange(probabilities.shape[-1])))
        if probabilities.shape != (digests.shape[0], classes.size):
            raise ValueError(
                f"estimator {self.estimator}'s predict_proba must give ({digests.shape[0]}, {classes.size}) "
                f"probabilities, got {probabilities.shape}."
            )
        if not np.issubdtype(classes.dtype, np.integer) or classes.min() < 0 or classes.max() >= data.n_classes:
            raise ValueError(
                f"estimator {self.estimator} must learn the labels 0..{data.n_classes - 1}, got classes_ "
                f"{classes.tolist()!r}."
            )
        table = np.zeros((digests.shape[0], data.n_classes))
        table[:, classes] = probabilities  # a class the training rows lack has probability 0
        return LookupRelease(digests, table, n_features=data.x.shape[1])
