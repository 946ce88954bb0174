"""A learned membership classifier: PANORAMIA's MIA and, fed a helper model instead of the target, its baseline.

The adversary holds labelled examples (:class:`LabelledExamples`): encoded records, their task labels, and which
are members (real training records) and which are not (generated, or real records held out).  It trains a
classifier (any trained-model mechanism, gradient-boosted trees by default) on features of each example — the
example itself and a *model signal* computed on it (the model's loss by default, or its logits) — and scores new
examples with the classifier's probability of "member".

Which model gives the signal is what distinguishes PANORAMIA's two classifiers (Kazmi et al. 2024, §4.1):

- the MIA reads the signal of the **target** model (the release under audit);
- the baseline reads the signal of a **helper** model trained on generated data only, which never saw a real
  record, so the baseline learns to tell real from generated without any access to the target.

The same class, fitted twice, gives both, so the two differ in the model they look at and nothing else.

References
----------
.. [1] M. Kazmi et al. PANORAMIA: Privacy Auditing of Machine Learning Models without Retraining. NeurIPS 2024,
   arXiv:2402.09477 (§4.1 and Appendix C: the MIA and the helper-model baseline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.attacks._base import Attack
from privgame.mechanisms._base import Mechanism

__all__ = ["SIGNALS", "ClassifierMIA", "FittedClassifierMIA", "LabelledExamples"]

#: the model signals a classifier can read: the per-example loss, the logits, both, or none (the input only)
SIGNALS = ("loss", "logits", "loss+logits", "none")


def _default_classifier() -> Mechanism:
    from privgame.mechanisms.training.trees import GradientBoostedTrees

    return GradientBoostedTrees(max_iter=100, max_features=1.0)


@dataclass(frozen=True, eq=False)
class LabelledExamples:
    """What a learned membership classifier is fitted on.

    Attributes
    ----------
    x : ndarray of shape (n, d), float32
        The examples, encoded (:mod:`privgame.data.features`).
    y : ndarray of shape (n,), int64
        Their task labels (the target's classes), which the loss needs.
    member : ndarray of shape (n,), bool
        Which examples are members (real training records).
    train : ndarray of int
        The examples to fit on (the game keeps the others to measure on).
    model : ModelRelease
        The model whose signal the classifier reads: the target (the MIA) or a helper (the baseline).
    """

    x: NDArray[np.float32]
    y: NDArray[np.int64]
    member: NDArray[np.bool_]
    train: NDArray[np.intp]
    model: Any


@dataclass(frozen=True, slots=True)
class ClassifierMIA(Attack):
    """A membership classifier on each example and a model's signal on it (PANORAMIA's MIA and baseline).

    Parameters
    ----------
    classifier : Mechanism, default=gradient-boosted-trees (100 rounds, every feature at each split)
        A trained-model mechanism (input ``dataset``), given as a nested table ``[attack.classifier]``; it is
        trained on the features below with "member" as the class.
    signal : {"loss", "logits", "loss+logits", "none"}, default="loss"
        What of the model the features include besides the example: its cross-entropy loss on the example's label,
        its logits, both, or nothing (the input alone).
    use_input : bool, default=True
        Whether the features include the encoded example itself (PANORAMIA's classifiers do; without it the
        classifier is a learned threshold on the signal).

    Notes
    -----
    Knowledge: labelled examples (:class:`LabelledExamples`), which only games that hand them out give (PANORAMIA).
    ``score(release, targets)`` scores examples ``targets`` of the fitted examples with ``release``'s signal (the
    game passes the same model it fitted with).
    """

    name: ClassVar[str] = "classifier-mia"
    accepts: ClassVar[frozenset[str]] = frozenset({"model"})
    needs: ClassVar[str] = "labelled"

    classifier: Mechanism = field(default_factory=_default_classifier)
    signal: str = "loss"
    use_input: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.classifier, Mechanism) or self.classifier.input_kind != "dataset":
            raise ValueError(
                "classifier must be a trained-model mechanism (input 'dataset': gradient-boosted-trees, "
                f"logistic-regression, mlp), got {getattr(self.classifier, 'name', self.classifier)!r}."
            )
        if callable(getattr(self.classifier, "reads_columns", None)) and self.classifier.reads_columns():  # type: ignore[attr-defined]
            raise ValueError(
                "classifier must read the encoded features (its inputs are an example and a model's signal, which "
                f"have no columns of their own), got {self.classifier.name!r} reading the records' own columns "
                "(features = 'raw')."
            )
        if self.signal not in SIGNALS:
            raise ValueError(f"signal must be one of {', '.join(SIGNALS)}, got {self.signal!r}.")
        if not isinstance(self.use_input, bool):
            raise TypeError(f"use_input must be true or false, got {self.use_input!r}.")
        if self.signal == "none" and not self.use_input:
            raise ValueError("signal = 'none' with use_input = false leaves the classifier no feature.")

    def input_width(self, n_features: int, n_classes: int) -> int:
        """How many features the classifier is trained on, for examples of ``n_features`` encoded features and a
        model of ``n_classes`` classes (what :meth:`features` gives)."""
        width = n_features if self.use_input else 0
        if self.signal in ("loss", "loss+logits"):
            width += 1
        if self.signal in ("logits", "loss+logits"):
            width += n_classes
        return width

    def features(self, model: Any, x: NDArray[np.float32], y: NDArray[np.int64]) -> NDArray[np.float32]:
        """The classifier's features of examples ``x`` (labels ``y``) under ``model``: the example and the signal."""
        blocks: list[NDArray[Any]] = [x] if self.use_input else []
        if self.signal in ("loss", "loss+logits"):
            blocks.append(np.asarray(model.losses(x, y), dtype=np.float64)[:, None])
        if self.signal in ("logits", "loss+logits"):
            blocks.append(np.asarray(model.logits(x), dtype=np.float64))
        return np.ascontiguousarray(np.hstack([b.astype(np.float32) for b in blocks]))

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedClassifierMIA:
        """Train the classifier on the examples ``knowledge.train`` (member = class 1).

        Raises
        ------
        TypeError
            If ``knowledge`` is not :class:`LabelledExamples`.
        ValueError
            If the training examples lack members or non-members.
        """
        from privgame.mechanisms.training.data import TrainingData

        if not isinstance(knowledge, LabelledExamples):
            raise TypeError(f"attack 'classifier-mia' is fitted on LabelledExamples, got {type(knowledge).__name__}.")
        train = np.asarray(knowledge.train, dtype=np.intp)
        labels = knowledge.member[train].astype(np.int64)
        if labels.min(initial=1) == labels.max(initial=0):
            raise ValueError("the classifier's training examples must hold both members and non-members.")
        features = self.features(knowledge.model, knowledge.x[train], knowledge.y[train])
        # the classifier is queried on every example's features (score): declared, for a classifier released as
        # its answers on given records (sklearn), computed as score computes them for such a classifier
        every = self.features(knowledge.model, knowledge.x, knowledge.y)
        data = TrainingData(features, labels, np.ones(train.size, dtype=bool), queries=every)
        fitted = self.classifier.release(data, rng=rng)
        return FittedClassifierMIA(self, fitted, knowledge.x, knowledge.y)


@dataclass(frozen=True, eq=False)
class FittedClassifierMIA:
    """A trained membership classifier: scores examples by its probability of "member"."""

    attack: ClassifierMIA
    classifier: Any
    x: NDArray[np.float32]
    y: NDArray[np.int64]

    @property
    def threshold(self) -> float:
        """A probability of 1/2."""
        return 0.5

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        """P(member) of the examples ``targets`` under the signal of ``release`` (higher = member)."""
        from privgame.mechanisms.training.release import LookupRelease

        idx = np.asarray(targets, dtype=np.intp)
        if isinstance(self.classifier, LookupRelease):  # found by their exact bytes: computed as fit declared them
            features = self.attack.features(release, self.x, self.y)[idx]
        else:
            features = self.attack.features(release, self.x[idx], self.y[idx])
        return np.asarray(self.classifier.probabilities(features)[:, 1], dtype=np.float64)
