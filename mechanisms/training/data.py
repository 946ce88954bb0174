"""What a trained-model mechanism takes: a pool of records (features and labels) and which of them to train on, and
the records beyond the pool its game will query the model on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_int

__all__ = ["TrainingData", "as_training_data", "stack_masks"]


@dataclass(frozen=True, eq=False)
class TrainingData:
    """A pool of N labelled records and the include-mask of the ones a model trains on.

    Parameters
    ----------
    x : ndarray of shape (N, d), float32
        The pool's features (a game encodes its records, e.g. :func:`privgame.data.features.model_arrays`).
    y : ndarray of shape (N,), int64
        Class labels in ``0 .. n_classes - 1``.
    include : ndarray of shape (N,), bool
        Which records the model trains on (at least one).
    n_classes : int, default=2
        Number of classes (≥ 2); the model's outputs have this many logits whatever the labels included.
    size : int or None, default=None
        The public training-set size (DP-SGD divides by q·size): ``None`` is ``include.sum()``.  A game whose
        worlds differ in size (add/remove) gives the public n here, so that the scaling reveals nothing.
    queries : ndarray of shape (Q, d), float32, or None, default=None
        Records beyond the pool that the game will query a released model on (PANORAMIA's generated non-members
        and held-out records).  A model that scores any record ignores them; one released as its answers on a
        finite set of records (:class:`privgame.mechanisms.training.release.LookupRelease`, the ``sklearn`` mechanism)
        answers on the pool and these, and refuses any other record.
    frame : DataFrame or None, default=None
        The pool's records as the data set's own columns, the label left out, one row per record of ``x`` in its
        order: what a model that does its own preprocessing reads (``sklearn`` with ``features = "raw"``).
    query_frame : DataFrame or None, default=None
        The same for ``queries`` (required with ``frame`` when there are queries), with ``frame``'s columns.

    Notes
    -----
    K releases on one pool (``release_runs``) share ``x`` and ``y`` and differ in ``include`` only, which is what
    lets a mechanism train the K models in one batched pass (:func:`stack_masks`).  The queries and frames travel
    with the pool (:meth:`with_include` keeps them) and enter a release's cache key only for a mechanism that
    reads them (``TrainedModel.cache_inputs``).
    """

    x: NDArray[np.float32]
    y: NDArray[np.int64]
    include: NDArray[np.bool_]
    n_classes: int = 2
    size: int | None = None
    queries: NDArray[np.float32] | None = None
    frame: Any = None
    query_frame: Any = None
    # the content hash of the pool (x, y, n_classes), computed once and shared by with_include's copies, so that
    # caching a thousand releases on one pool hashes its features once; the same for the queries and the frames,
    # and for the digests of the records a lookup release scores
    # what is computed once per pool (its hashes, its distinct records): one dict that :meth:`with_include`'s copies
    # share, so whichever copy computes an entry first computes it for all of them
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        x = np.asarray(self.x)
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"x must be a 2-D array of at least one record and one feature, got shape {x.shape}.")
        if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
            raise TypeError(f"x must be a real array, got dtype {x.dtype}.")
        x = np.ascontiguousarray(x, dtype=np.float32)
        if not np.isfinite(x).all():
            raise ValueError("x must be finite, got NaN or infinite features.")
        n = x.shape[0]
        k = check_int("n_classes", self.n_classes, low=2)
        y = np.asarray(self.y)
        if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"y must be an integer array of shape ({n},), got {y.dtype} of shape {y.shape}.")
        if n and (y.min() < 0 or y.max() >= k):
            raise ValueError(f"y must hold labels in 0..{k - 1} (n_classes = {k}), got {int(y.min())}..{int(y.max())}.")
        include = np.asarray(self.include)
        if include.dtype != np.bool_ or include.shape != (n,):
            raise ValueError(f"include must be a boolean array of shape ({n},), got {include.dtype} {include.shape}.")
        if not include.any():
            raise ValueError("include must select at least one record to train on, got none.")
        if self.size is not None:
            # the public size is the n of the worlds compared: the included records, or one more (add/remove)
            object.__setattr__(self, "size", check_int("size", self.size, low=1, high=n + 1))
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y.astype(np.int64, copy=False))
        object.__setattr__(self, "include", include)
        object.__setattr__(self, "n_classes", k)
        self._check_queries()

    def _check_queries(self) -> None:
        n, d = self.x.shape
        if self.queries is not None:
            q = np.asarray(self.queries)
            if q.ndim != 2 or q.shape[1] != d:
                raise ValueError(f"queries must have shape (Q, {d}) (the pool's features), got {q.shape}.")
            if not np.issubdtype(q.dtype, np.number) or np.issubdtype(q.dtype, np.complexfloating):
                raise TypeError(f"queries must be a real array, got dtype {q.dtype}.")
            q = np.ascontiguousarray(q, dtype=np.float32)
            if not np.isfinite(q).all():
                raise ValueError("queries must be finite, got NaN or infinite features.")
            object.__setattr__(self, "queries", q)
        if self.frame is None and self.query_frame is None:
            return
        import pandas as pd

        if not isinstance(self.frame, pd.DataFrame):
            raise TypeError(f"frame must be a pandas DataFrame of the pool's rows, got {type(self.frame).__name__}.")
        if len(self.frame) != n:
            raise ValueError(f"frame must have one row per record of the pool ({n}), got {len(self.frame)}.")
        n_queries = 0 if self.queries is None else self.queries.shape[0]
        if n_queries and self.query_frame is None:
            raise ValueError(f"query_frame must give the {n_queries} queries' rows beside frame, got None.")
        if self.query_frame is not None:
            if not isinstance(self.query_frame, pd.DataFrame):
                raise TypeError(f"query_frame must be a pandas DataFrame, got {type(self.query_frame).__name__}.")
            if len(self.query_frame) != n_queries or list(self.query_frame.columns) != list(self.frame.columns):
                raise ValueError(
                    f"query_frame must have one row per query ({n_queries}) and frame's columns, got "
                    f"{len(self.query_frame)} rows of {list(self.query_frame.columns)!r}."
                )

    def __len__(self) -> int:
        """N, the pool's size."""
        return int(self.x.shape[0])

    @property
    def n_train(self) -> int:
        """How many records the model trains on."""
        return int(self.include.sum())

    @property
    def public_size(self) -> int:
        """``size``, or the number of included records."""
        return self.size if self.size is not None else self.n_train

    @property
    def pool_hash(self) -> str:
        """SHA-256 of the pool's content (features, labels, classes), computed on first use."""
        if "pool" not in self._memo:
            from privgame.core.cache import content_hash, make_key

            self._memo["pool"] = make_key(x=content_hash(self.x), y=content_hash(self.y), n_classes=self.n_classes)
        return str(self._memo["pool"])

    @property
    def n_queries(self) -> int:
        """Q, the records beyond the pool the game declared."""
        return 0 if self.queries is None else int(self.queries.shape[0])

    @property
    def queries_hash(self) -> str:
        """SHA-256 of the queries' features (of none: an empty set), computed on first use."""
        if "queries" not in self._memo:
            from privgame.core.cache import content_hash, make_key

            q = np.zeros((0, self.x.shape[1]), dtype=np.float32) if self.queries is None else self.queries
            self._memo["queries"] = make_key(queries=content_hash(q))
        return str(self._memo["queries"])

    @property
    def frame_hash(self) -> str | None:
        """SHA-256 of ``frame`` and ``query_frame`` (values, column names, dtypes), or None without a frame."""
        if self.frame is None:
            return None
        if "frame" not in self._memo:
            from privgame.core.cache import content_hash, make_key

            parts = {"frame": content_hash(self.frame)}
            if self.query_frame is not None:
                parts["query_frame"] = content_hash(self.query_frame)
            self._memo["frame"] = make_key(**parts)
        return str(self._memo["frame"])

    def scored_rows(self) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.uint8]]:
        """The distinct records of the pool and the queries, for a model released as its answers on them.

        Returns
        -------
        first : ndarray of shape (R,), intp
            The position of each distinct record's first occurrence in ``x`` followed by ``queries`` (N + Q rows).
        inverse : ndarray of shape (N + Q,), intp
            For each of those rows, its distinct record's index in ``first``.
        digests : ndarray of shape (R, 16), uint8
            The distinct records' digests (:func:`privgame.mechanisms.training.release.row_digests`).

        Computed once per pool and shared by :meth:`with_include`'s copies.
        """
        if "scored" not in self._memo:
            from privgame.mechanisms.training.release import DIGEST_BYTES, row_digests

            rows = self.x if self.queries is None else np.concatenate([self.x, self.queries])
            digests = row_digests(rows)
            view = digests.view(np.dtype((np.void, DIGEST_BYTES))).ravel()
            _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")  # distinct records in order of first occurrence
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            first = first[order].astype(np.intp)
            self._memo["scored"] = (first, rank[inverse.ravel()].astype(np.intp), digests[first])
        scored: tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.uint8]] = self._memo["scored"]
        return scored

    def with_include(self, include: Any, *, size: int | None = None) -> TrainingData:
        """The same pool (and queries and frames) with another include-mask and public size; what is computed once
        per pool (its hashes, its distinct records) is shared with this one, whichever computes it first."""
        other = TrainingData(
            self.x,
            self.y,
            include,
            n_classes=self.n_classes,
            size=size,
            queries=self.queries,
            frame=self.frame,
            query_frame=self.query_frame,
        )
        object.__setattr__(other, "_memo", self._memo)
        return other

    def shares_pool(self, other: TrainingData) -> bool:
        """Whether ``other`` has the same pool (features, labels, classes): the precondition of batching."""
        if self._memo is other._memo or self._memo.get("pool", "") == other._memo.get("pool"):
            return True
        return (
            self.n_classes == other.n_classes
            and (self.x is other.x or np.array_equal(self.x, other.x))
            and (self.y is other.y or np.array_equal(self.y, other.y))
        )


def stack_masks(data: Sequence[Any]) -> tuple[TrainingData, NDArray[np.bool_]]:
    """The first dataset and the (K, N) include-masks of ``data``, after checking that they share one pool.

    Raises
    ------
    TypeError
        If an element is not a :class:`TrainingData`.
    ValueError
        If ``data`` is empty or the datasets do not share their pool (features, labels and classes).
    """
    if len(data) == 0:
        raise ValueError("data must hold at least one TrainingData, got none.")
    for k, d in enumerate(data):
        if not isinstance(d, TrainingData):
            raise TypeError(f"data[{k}] must be a privgame.mechanisms.training.TrainingData, got {type(d).__name__}.")
    first = data[0]
    for k, d in enumerate(data[1:], start=1):
        if not first.shares_pool(d):
            raise ValueError(f"data[{k}] must share data[0]'s pool (x, y, n_classes) to train in one batch.")
    return first, np.stack([d.include for d in data])


def as_training_data(name: str, data: Any) -> TrainingData:
    """``data`` itself, or a TypeError naming ``name``."""
    if not isinstance(data, TrainingData):
        raise TypeError(f"{name} must be a privgame.mechanisms.training.TrainingData, got {type(data).__name__}.")
    return data
