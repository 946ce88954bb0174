"""Canary audits of trained models: the input (membership bits, the game's rows, its canaries) and the release.

A ``"canary-dataset"`` mechanism (:class:`CanaryMechanism`) trains on data the game gives it, never on a data set
of its own: :class:`CanaryData` holds the secret membership bits of the m canaries, the real training rows (a
:class:`privgame.mechanisms.training.data.TrainingData`, every row included) and, for input-space canaries, the m canary
examples, which the auditor (the game) chooses in advance, independently of the membership.  A mechanism that
releases its model with the canaries (``release_kind = "model-with-canaries"``) returns a
:class:`CanaryModelRelease`: the model answers the :class:`privgame.mechanisms.training.release.ModelRelease` protocol
and the canaries are public, so an attack scores canary i by asking the model about the canary it carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_membership
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.release import ModelRelease

__all__ = ["CanaryData", "CanaryMechanism", "CanaryModelRelease", "as_canary_data", "stack_canary_runs"]


def _canary_examples(
    canary_x: Any, canary_y: Any, m: int, n_features: int, n_classes: int
) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    x = np.asarray(canary_x)
    if x.shape != (m, n_features) or not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise ValueError(
            f"canary_x must be a real array of shape ({m}, {n_features}) (one canary per membership bit, the rows' "
            f"features), got {x.dtype} of shape {x.shape}."
        )
    x = np.ascontiguousarray(x, dtype=np.float32)
    if not np.isfinite(x).all():
        raise ValueError("canary_x must be finite, got NaN or infinite features.")
    y = np.asarray(canary_y)
    if y.shape != (m,) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"canary_y must be an integer array of shape ({m},), got {y.dtype} of shape {y.shape}.")
    if m and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(
            f"canary_y must hold labels in 0..{n_classes - 1} (the rows' n_classes), got "
            f"{int(y.min())}..{int(y.max())}."
        )
    return x, y.astype(np.int64, copy=False)


@dataclass(frozen=True, eq=False)
class CanaryData:
    """The input of a ``"canary-dataset"`` mechanism: m canaries' membership bits over the game's training rows.

    Parameters
    ----------
    membership : ndarray of shape (m,), bool
        The secret: which canaries are inserted (m ≥ 1).
    rows : TrainingData
        The real training rows, every one included (their ``n_classes`` is the model's).
    canary_x : ndarray of shape (m, d), float32, or None, default=None
        The canary examples (input-space canaries), in the rows' feature space; ``None`` for mechanisms whose
        canaries are not examples (white-box gradient canaries).  Chosen by the auditor in advance, so independent
        of ``membership``, and public.
    canary_y : ndarray of shape (m,), int64, or None, default=None
        Their labels, given with ``canary_x``.

    Notes
    -----
    K runs of one audit (``release_runs``) share ``rows`` and the canaries and differ in ``membership`` only
    (:meth:`with_membership`), which lets a mechanism train them in one batched pass (:func:`stack_canary_runs`).
    """

    membership: NDArray[np.bool_]
    rows: TrainingData
    canary_x: NDArray[np.float32] | None = None
    canary_y: NDArray[np.int64] | None = None

    def __post_init__(self) -> None:
        membership = check_membership("membership", self.membership)
        if membership.shape[0] < 1:
            raise ValueError("membership must hold at least one canary, got none.")
        if not isinstance(self.rows, TrainingData):
            raise TypeError(
                f"rows must be a privgame.mechanisms.training.TrainingData, got {type(self.rows).__name__}."
            )
        if not self.rows.include.all():
            raise ValueError(
                f"rows must include every record (the real training rows), got {self.rows.n_train} of {len(self.rows)}."
            )
        object.__setattr__(self, "membership", membership)
        if (self.canary_x is None) != (self.canary_y is None):
            raise ValueError(
                "canary_x and canary_y must be given together (the canary examples and their labels), got "
                f"{'canary_x' if self.canary_y is None else 'canary_y'} alone."
            )
        if self.canary_x is not None:
            x, y = _canary_examples(
                self.canary_x, self.canary_y, membership.shape[0], self.rows.x.shape[1], self.rows.n_classes
            )
            object.__setattr__(self, "canary_x", x)
            object.__setattr__(self, "canary_y", y)

    def __len__(self) -> int:
        """m, the number of canaries."""
        return int(self.membership.shape[0])

    @property
    def m(self) -> int:
        """The number of canaries."""
        return len(self)

    @property
    def has_examples(self) -> bool:
        """Whether the canaries are examples (``canary_x`` and ``canary_y`` given)."""
        return self.canary_x is not None

    def with_membership(self, membership: Any) -> CanaryData:
        """The same rows and canaries with other membership bits (another run of the same audit)."""
        return CanaryData(membership, self.rows, self.canary_x, self.canary_y)

    def shares_canaries(self, other: CanaryData) -> bool:
        """Whether ``other`` has the same rows and canaries (the precondition of batching its runs with these)."""

        def same(a: NDArray[Any] | None, b: NDArray[Any] | None) -> bool:
            return a is b or (a is not None and b is not None and np.array_equal(a, b))

        return (
            self.m == other.m
            and (self.rows is other.rows or self.rows.shares_pool(other.rows))
            and same(self.canary_x, other.canary_x)
            and same(self.canary_y, other.canary_y)
        )

    def examples(self) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """``(canary_x, canary_y)``.

        Raises
        ------
        ValueError
            If the canaries are not examples (the game chose none: its ``canary`` parameter was omitted).
        """
        if self.canary_x is None or self.canary_y is None:
            raise ValueError(
                "data must carry canary examples (canary_x, canary_y) for input-space canaries, got none: the "
                "game's canary parameter chooses them."
            )
        return self.canary_x, self.canary_y

    def pool(self, *, size: int | None = None) -> TrainingData:
        """The real rows followed by the m canary examples; included: every row and the member canaries.

        Parameters
        ----------
        size : int or None, default=None
            The public training-set size of the result (DP-SGD's qN divisor); ``None``: the included count.
        """
        x, y = self.examples()
        include = np.concatenate([np.ones(len(self.rows), dtype=bool), self.membership])
        return TrainingData(
            np.concatenate([self.rows.x, x]),
            np.concatenate([self.rows.y, y]),
            include,
            n_classes=self.rows.n_classes,
            size=size,
        )


def as_canary_data(name: str, data: Any) -> CanaryData:
    """``data`` itself, or a TypeError naming ``name``."""
    if not isinstance(data, CanaryData):
        raise TypeError(
            f"{name} must be a privgame.mechanisms.training.canaries.CanaryData, got {type(data).__name__}."
        )
    return data


def stack_canary_runs(data: Sequence[Any]) -> tuple[CanaryData, NDArray[np.bool_]]:
    """The first input and the (K, m) membership bits of ``data``, after checking that the runs share rows and
    canaries.

    Raises
    ------
    TypeError
        If an element is not a :class:`CanaryData`.
    ValueError
        If ``data`` is empty, or the runs differ in their number of canaries, rows or canaries.
    """
    if len(data) == 0:
        raise ValueError("data must hold at least one CanaryData, got none.")
    runs = [as_canary_data(f"data[{k}]", d) for k, d in enumerate(data)]
    first = runs[0]
    for k, d in enumerate(runs[1:], start=1):
        if d.m != first.m:
            raise ValueError(
                f"release_runs needs the same number of canaries in every run, got {first.m} in data[0] and {d.m} "
                f"in data[{k}]."
            )
        if not first.shares_canaries(d):
            raise ValueError(f"data[{k}] must share data[0]'s rows and canaries to train in one batch.")
    return first, np.stack([d.membership for d in runs])


@dataclass(frozen=True, eq=False)
class CanaryModelRelease:
    """A trained model released together with the audited canaries (chosen by the auditor, so public).

    Parameters
    ----------
    model : ModelRelease
        The trained model (logits, probabilities, losses, confidence of any record of its feature space).
    canary_x : ndarray of shape (m, d), float32
    canary_y : ndarray of shape (m,), int64
    """

    model: ModelRelease
    canary_x: NDArray[np.float32]
    canary_y: NDArray[np.int64]

    def __post_init__(self) -> None:
        if not isinstance(self.model, ModelRelease):
            raise TypeError(
                f"model must be a privgame.mechanisms.training.ModelRelease, got {type(self.model).__name__}."
            )
        y = np.asarray(self.canary_y)
        if y.ndim != 1:
            raise ValueError(f"canary_y must be a 1-d integer array (one label per canary), got shape {y.shape}.")
        x, y = _canary_examples(self.canary_x, y, y.shape[0], self.model.n_features, self.model.n_classes)
        object.__setattr__(self, "canary_x", x)
        object.__setattr__(self, "canary_y", y)

    @property
    def m(self) -> int:
        """The number of canaries."""
        return int(self.canary_y.shape[0])

    def canaries(self, targets: Any) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """The canaries ``targets`` (indices in ``0 .. m − 1``) as ``(x, y)``.

        Raises
        ------
        ValueError
            If ``targets`` is not a 1-d array of indices of canaries.
        """
        index = np.asarray(targets)
        if index.ndim != 1 or not np.issubdtype(index.dtype, np.integer):
            raise ValueError(
                f"targets must be a 1-d array of canary indices, got {index.dtype} of shape {index.shape}."
            )
        if index.size and (index.min() < 0 or index.max() >= self.m):
            raise ValueError(f"targets must be indices in 0..{self.m - 1}, got {index.min()}..{index.max()}.")
        return self.canary_x[index], self.canary_y[index]

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        """The model's arrays (:meth:`ModelRelease.to_arrays`) and the canaries (``canary_x``, ``canary_y``)."""
        return {**self.model.to_arrays(), "canary_x": self.canary_x, "canary_y": self.canary_y}


class CanaryMechanism(Mechanism):
    """A mechanism audited with m canaries that trains on the game's rows (input ``"canary-dataset"``).

    Subclasses say whether they train on canary EXAMPLES the game chooses (``canary_examples = True``: input-space
    canaries, ``CanaryData.canary_x``) or construct canaries of their own (``False``: gradient canaries), and may
    refine :meth:`canary_bytes`, the memory estimate the games use before any trial.
    """

    __slots__ = ()

    input_kind: ClassVar[str] = "canary-dataset"
    canary_examples: ClassVar[bool]

    def canary_problem(self, m: int, *, features: int, classes: int, rows: int | None = None) -> str | None:
        """Why this mechanism cannot run m canaries over ``rows`` real rows (None: not known) of ``features`` features
        and ``classes`` classes (one line, no final full stop), or ``None``; checked with the config, before any
        trial (default: None).
        A DP-SGD mechanism with a user's model checks the model here (:func:`privgame.mechanisms.dpsgd.user_model.
        check_model`)."""
        return None

    def canary_bytes(self, m: int, *, rows: int, features: int, classes: int) -> int:
        """Estimated peak bytes of one release with m canaries over ``rows`` real rows of ``features`` features and
        ``classes`` classes; by default the rows and canaries as float64, four copies, and 64 bytes a canary."""
        return 32 * (rows + m) * features + 64 * m

    def memory_bytes(self, n: int) -> int:
        """The canaries' share of :meth:`canary_bytes` alone (no real rows, one feature, two classes); the games
        ask :meth:`canary_bytes` with their rows' sizes."""
        return self.canary_bytes(n, rows=0, features=1, classes=2)
