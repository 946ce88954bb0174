"""Shadow modelling: datasets built from auxiliary data with and without the target, released through the oracle.

Shadow ``i`` is a dataset of n records: n − 1 drawn without replacement from the auxiliary data, plus the target
(``i`` even: label 1) or a reference record drawn from the auxiliary data outside those n − 1 (``i`` odd: label 0),
so both sides have the same size (TAPAS, Houssiau et al. 2022; Krčo et al. 2025); under add/remove neighbours
(``Knowledge.neighbours``) label 0 is the n − 1 records alone.  Its composition and its
mechanism seed come from the ``i``-th child of the attack's seed only, so the first k shadows are the same for any
number of shadows: attacks that use 100 and 1,000 shadows of the same target share the first 100 through the
cache, and so do the two record games that train one attack.  Releases go through
:class:`privgame.attacks.knowledge.BlackBox` in chunks, each stored as soon as it is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numba
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.attacks.knowledge import Knowledge

__all__ = [
    "MAX_SHADOWS",
    "ForestParams",
    "ShadowClassifier",
    "attack_streams",
    "best_threshold",
    "check_forest_params",
    "fit_forest",
    "forest_proba",
    "shadow_dataset",
    "shadow_features",
    "standardise",
]

Featuriser = Callable[[Any], NDArray[Any]]
_CHUNK = 25
MAX_SHADOWS = 1_000_000


class ForestParams(Protocol):
    """The parameters every shadow-classifier attack has: its shadows and its RandomForest."""

    @property
    def n_shadows(self) -> int: ...
    @property
    def n_estimators(self) -> int: ...
    @property
    def max_depth(self) -> int | None: ...
    @property
    def n_jobs(self) -> int: ...


def check_forest_params(attack: ForestParams) -> None:
    """Validate and normalise a frozen attack's ``n_shadows``, ``n_estimators``, ``max_depth`` and ``n_jobs``."""
    object.__setattr__(attack, "n_shadows", check_int("n_shadows", attack.n_shadows, low=2, high=MAX_SHADOWS))
    object.__setattr__(attack, "n_estimators", check_int("n_estimators", attack.n_estimators, low=1, high=100_000))
    if attack.max_depth is not None:
        object.__setattr__(attack, "max_depth", check_int("max_depth", attack.max_depth, low=1))
    object.__setattr__(attack, "n_jobs", check_int("n_jobs", attack.n_jobs, low=1))


def attack_streams(rng: np.random.Generator, n: int) -> list[np.random.SeedSequence]:
    """``n`` streams for a fit from the attack's generator; stream 0 is always the shadows' (so every attack of a
    target, whatever its features, builds the same shadows from the same attack stream and shares them)."""
    return np.random.SeedSequence(int(rng.integers(2**63))).spawn(n)


def fit_featurised(attack: Any, knowledge: Knowledge, rng: np.random.Generator) -> ShadowClassifier:
    """Fit an attack whose ``featuriser(knowledge, rng=...)`` gives a release's features: streams 0 (the shadows),
    1 (the featuriser's own draws) and 2 (the forest) of :func:`attack_streams`."""
    shadow_seed, feature_seed, forest_seed = attack_streams(rng, 3)
    featurise = attack.featuriser(knowledge, rng=np.random.default_rng(feature_seed))
    return ShadowClassifier.from_shadows(knowledge, featurise, attack, shadow_seed=shadow_seed, forest_seed=forest_seed)


def shadow_dataset(
    knowledge: Knowledge, i: int, *, seed: np.random.SeedSequence, target: int = 0
) -> tuple[pd.DataFrame, int, np.random.SeedSequence]:
    """Shadow ``i``: its input dataset, its label (1: the target is in it) and the seed of its release."""
    child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, i), pool_size=seed.pool_size)
    composition, release = child.spawn(2)
    rng = np.random.default_rng(composition)
    aux = knowledge.auxiliary
    n = knowledge.dataset_size
    label = 1 - i % 2
    replace = knowledge.neighbours == "replace"
    picked = rng.choice(len(aux), size=n if label == 0 and replace else n - 1, replace=False)
    if label == 1:
        data = pd.concat([aux.iloc[picked], knowledge.targets.iloc[[target]]], ignore_index=True)
    else:  # replace: the last of the n picked rows plays the reference record; add-remove: n − 1 rows alone
        data = aux.iloc[picked].reset_index(drop=True)
    return data, label, release


def shadow_features(
    knowledge: Knowledge,
    featurise: Featuriser,
    n_shadows: int,
    *,
    seed: np.random.SeedSequence,
    target: int = 0,
) -> tuple[NDArray[np.float32], NDArray[np.int8]]:
    """Features (float32) of ``n_shadows`` shadow releases and their labels (half 1, half 0).

    Raises
    ------
    ValueError
        If ``n_shadows < 2`` or the auxiliary data has fewer than n records.
    """
    check_int("n_shadows", n_shadows, low=2, high=MAX_SHADOWS)
    if len(knowledge.auxiliary) < knowledge.dataset_size:
        raise ValueError(
            f"the auxiliary data must hold at least dataset_size = {knowledge.dataset_size} records, "
            f"got {len(knowledge.auxiliary)}."
        )
    rows: list[NDArray[np.float32]] = []
    labels = np.empty(n_shadows, dtype=np.int8)
    for start in range(0, n_shadows, _CHUNK):
        idx = range(start, min(start + _CHUNK, n_shadows))
        made = [shadow_dataset(knowledge, i, seed=seed, target=target) for i in idx]
        releases = knowledge.oracle.release_many([d for d, _, _ in made], seeds=[s for _, _, s in made])
        for i, (_, label, _), release in zip(idx, made, releases, strict=True):
            labels[i] = label
            rows.append(np.asarray(featurise(release), dtype=np.float32))
    return np.vstack(rows), labels


def standardise(
    features: NDArray[np.floating[Any]],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float32]]:
    """Each column's mean and standard deviation (1 where it is 0) and the standardised features, in float32.

    numpy's ``features.mean(axis=0, dtype=np.float64)``, ``features.std(axis=0, dtype=np.float64)`` and
    ``((features - mean) / scale).astype(np.float32)`` to the bit (``tests/attacks/test_shadow.py``), computed by
    :func:`_moments` and :func:`_standardised` without numpy's three temporaries of the features' size in float64
    (a thousand shadows' 32,767 counting queries: 262 MB each, which took seconds to allocate and fill).
    """
    x = np.ascontiguousarray(features)
    if x.ndim != 2 or x.dtype not in (np.float32, np.float64):
        mean = x.mean(axis=0, dtype=np.float64)
        scale = x.std(axis=0, dtype=np.float64)
        scale[scale == 0] = 1.0
        return mean, scale, ((x - mean) / scale).astype(np.float32)
    mean, scale = _moments(x)
    scale[scale == 0] = 1.0
    return mean, scale, _standardised(x, mean, scale)


@numba.njit(cache=True)
def _moments(x):
    """Column means and standard deviations of a C-ordered (n, d) float array in float64, as numpy computes them
    along axis 0: the rows added in order into float64 sums, divided by n; then the squared differences from the
    means, added in order, divided by n, and the square root."""
    n, d = x.shape
    total = np.zeros(d)
    for i in range(n):
        for j in range(d):
            total[j] += x[i, j]
    mean = total / n
    squares = np.zeros(d)
    for i in range(n):
        for j in range(d):
            difference = x[i, j] - mean[j]
            squares[j] += difference * difference
    return mean, np.sqrt(squares / n)


@numba.njit(cache=True)
def _standardised(x, mean, scale):
    """``((x - mean) / scale)`` in float64, rounded to float32, element by element."""
    n, d = x.shape
    out = np.empty((n, d), dtype=np.float32)
    for i in range(n):
        for j in range(d):
            out[i, j] = np.float32((x[i, j] - mean[j]) / scale[j])
    return out


def best_threshold(scores: NDArray[np.float64], labels: NDArray[Any]) -> float:
    """The threshold t maximising the accuracy of "member iff score ≥ t" on the adversary's own shadows."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    cands = np.unique(s)
    cands = np.concatenate([cands, [np.inf]])
    acc = [np.mean((s >= t) == y) for t in cands]
    return float(cands[int(np.argmax(acc))])


def fit_forest(
    features: NDArray[np.floating[Any]],
    labels: NDArray[Any],
    *,
    n_estimators: int,
    max_depth: int | None,
    rng: np.random.Generator,
    n_jobs: int = 1,
) -> Any:
    """A RandomForest on standardised features, seeded by an int from ``rng`` (sklearn takes no Generator)."""
    from sklearn.ensemble import RandomForestClassifier

    forest = RandomForestClassifier(
        n_estimators=n_estimators,
        max_depth=max_depth,
        random_state=int(rng.integers(2**31 - 1)),
        n_jobs=n_jobs,
    )
    forest.fit(features, np.asarray(labels, dtype=np.int8))
    forest.set_params(n_jobs=1)  # scoring is one table at a time: a thread pool per call costs more than it saves
    return forest


def forest_proba(classifier: Any, x: NDArray[np.floating[Any]]) -> NDArray[np.float64]:
    """``classifier.predict_proba(x)``; for a fitted RandomForest, tree by tree without sklearn's per-call checks.

    The forest's own ``predict_proba`` validates the input and starts a joblib loop on every call (about 13 ms for
    100 trees and one row, five times the trees' own work); the trees' ``predict_proba(check_input=False)`` summed
    in estimator order and divided by their number is the same computation, bit for bit, as the forest's with
    ``n_jobs=1``.
    """
    from sklearn.ensemble import RandomForestClassifier

    if not isinstance(classifier, RandomForestClassifier) or not hasattr(classifier, "estimators_"):
        return np.asarray(classifier.predict_proba(x), dtype=np.float64)
    rows = np.ascontiguousarray(x, dtype=np.float32)
    total = np.zeros((rows.shape[0], len(classifier.classes_)), dtype=np.float64)
    for tree in classifier.estimators_:
        total += tree.predict_proba(rows, check_input=False)
    total /= len(classifier.estimators_)
    return total


@dataclass(eq=False)
class ShadowClassifier:
    """A fitted shadow-modelling attack: features of a release, standardised, into a trained classifier.

    Attributes
    ----------
    featurise : callable
        Release → feature vector (bound to the target at fit time).
    mean, scale : ndarray
        The standardisation learnt on the shadows' features.
    classifier : object
        A fitted scikit-learn classifier with ``predict_proba``.
    threshold : float, default=0.5
        "Member" when the predicted probability is at least this.
    """

    featurise: Featuriser
    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    classifier: Any
    threshold: float = 0.5

    @classmethod
    def fit(
        cls,
        features: NDArray[np.floating[Any]],
        labels: NDArray[Any],
        featurise: Featuriser,
        *,
        n_estimators: int,
        max_depth: int | None,
        rng: np.random.Generator,
        n_jobs: int = 1,
    ) -> ShadowClassifier:
        mean, scale, standardised = standardise(features)
        forest = fit_forest(
            standardised, labels, n_estimators=n_estimators, max_depth=max_depth, rng=rng, n_jobs=n_jobs
        )
        return cls(featurise, mean, scale, forest)

    @classmethod
    def from_shadows(
        cls,
        knowledge: Knowledge,
        featurise: Featuriser,
        forest: ForestParams,
        *,
        shadow_seed: np.random.SeedSequence,
        forest_seed: np.random.SeedSequence,
    ) -> ShadowClassifier:
        """Build ``forest.n_shadows`` shadow releases, featurise them and fit the forest (what every such attack
        does)."""
        features, labels = shadow_features(knowledge, featurise, forest.n_shadows, seed=shadow_seed)
        return cls.fit(
            features,
            labels,
            featurise,
            n_estimators=forest.n_estimators,
            max_depth=forest.max_depth,
            rng=np.random.default_rng(forest_seed),
            n_jobs=forest.n_jobs,
        )

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        if len(targets) != 1 or int(targets[0]) != 0:
            raise ValueError(f"a shadow classifier is fitted for one target (index 0), got targets {targets!r}.")
        x = (self.featurise(release)[None, :] - self.mean) / self.scale
        proba = forest_proba(self.classifier, x)
        column = list(self.classifier.classes_).index(1) if 1 in self.classifier.classes_ else None
        return np.array([proba[0, column] if column is not None else 0.0], dtype=np.float64)
