"""The data a canary game gives a ``"canary-dataset"`` mechanism: its rows and the canaries the auditor chose.

The one-run and multi-run games take four parameters for it (the auditor's choices, so the game's, not the
mechanism's):

- ``data``: a data set that serves features (:func:`privgame.data.check_data`): ``"digits"`` (scikit-learn's
  bundled 8×8 digits, pixels divided by their public maximum 16 so they lie in [0, 1]; 10 classes),
  ``"adult"``/``"compas"`` (2 classes) or one a plugin registered, encoded from its public domain
  (:meth:`privgame.data.Dataset.features`); ``None`` for canary-bits mechanisms, which take no data;
- ``train_rows``: the real training rows are the first ``train_rows`` records, always included;
- ``canary``: the canary examples, for mechanisms that train on them (``canary_examples``): ``"mislabel"``, m of
  the records after the training rows (chosen by a permutation), each with label + 1 mod C, so never a training
  row; ``"ood"``, uniform noise in [0, 1]^d with uniformly random labels; ``None`` for mechanisms whose canaries
  are not examples (white-box gradient canaries);
- ``canary_seed``: the seed of that choice.

The canaries are a function of these parameters and m only, fixed before any membership bit is drawn, so they are
independent of the membership, the same in every trial, and public.  They are built once per process.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.mechanisms._base import Mechanism

__all__ = [
    "CANARIES",
    "canary_data",
    "canary_incompatibility",
    "canary_trial_bytes",
    "check_canary_parameters",
    "data_shape",
]

CANARIES = ("mislabel", "ood")


def data_shape(data: str) -> tuple[int, int, int]:
    """``(records, features, classes)`` of ``data``, from its public domain and size (nothing is loaded)."""
    from privgame.data.catalogue import get_dataset

    dataset = get_dataset(data)
    return dataset.size, dataset.feature_count(), dataset.n_classes


def _feature_sets() -> str:
    from privgame.data.catalogue import dataset_names

    return ", ".join(dataset_names("features"))


def check_canary_parameters(
    data: Any, train_rows: Any, canary: Any, canary_seed: Any, *, m: int, what: str | None = "m"
) -> tuple[str | None, int, str | None, int]:
    """Check a game's ``data``, ``train_rows``, ``canary`` and ``canary_seed`` for m canaries; return them normalised.

    ``what`` names m in the error that too many mislabelled canaries get; ``None`` (m is no parameter: the
    multi-run game's one canary) blames ``train_rows`` instead.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter, its value and the rule: an unknown ``data`` or ``canary``, a ``canary`` without
        ``data``, ``train_rows`` beyond the data set, or more mislabelled canaries than held-out rows.
    """
    if data is not None:
        from privgame.data.catalogue import dataset_names

        if not isinstance(data, str) or data not in dataset_names("features"):
            raise ValueError(
                f"data must be one of {_feature_sets()} (or omitted for canary-bits mechanisms), got {data!r}."
            )
    if canary is not None and canary not in CANARIES:
        raise ValueError(f"canary must be one of {', '.join(CANARIES)} (or omitted), got {canary!r}.")
    seed = check_int("canary_seed", canary_seed, low=0)
    if data is None:
        if canary is not None:
            raise ValueError(f"canary must be omitted when data is (there are no canary examples), got {canary!r}.")
        return None, check_int("train_rows", train_rows, low=1), None, seed
    records = data_shape(data)[0]
    rows = check_int("train_rows", train_rows, low=1, high=records)
    if canary == "mislabel" and m > records - rows:
        if what is None:  # m is no parameter of the game
            raise ValueError(
                f"train_rows must be at most {records - m:,} to leave {m} of the {records:,} records of {data} "
                f"to mislabel as canaries, got {rows:,}."
            )
        raise ValueError(
            f"{what} must be at most {records - rows:,} mislabelled canaries (the {records:,} records of {data} "
            f"after its train_rows = {rows:,} training rows), got {m:,}."
        )
    return data, rows, canary, seed


def canary_incompatibility(
    game: str, mechanism: Mechanism, *, data: str | None, canary: str | None, m: int = 1, rows: int | None = None
) -> str | None:
    """Why a canary game with ``data``, ``canary`` and m canaries cannot play ``mechanism``, or ``None`` if it can
    (the mechanism's own :meth:`privgame.mechanisms.training.canaries.CanaryMechanism.canary_problem` included)."""
    from privgame.mechanisms.training.canaries import CanaryMechanism

    if mechanism.input_kind == "canary-bits":
        if data is not None:
            return (
                f"mechanism '{mechanism.name}' takes canary bits, not data: game.data must be omitted for it, got "
                f"{data!r}"
            )
        return None
    if mechanism.input_kind != "canary-dataset":
        return None
    if not isinstance(mechanism, CanaryMechanism):
        return (
            f"mechanism '{mechanism.name}' takes 'canary-dataset' but is no privgame.mechanisms.training.canaries."
            "CanaryMechanism (which says whether it trains on canary examples)"
        )
    if data is None:
        return (
            f"mechanism '{mechanism.name}' trains on the game's data: game '{game}' needs data (one of "
            f"{_feature_sets()}), got None"
        )
    if mechanism.canary_examples and canary is None:
        return (
            f"mechanism '{mechanism.name}' trains on canary examples: game '{game}' needs canary (one of "
            f"{', '.join(CANARIES)}), got None"
        )
    if not mechanism.canary_examples and canary is not None:
        return (
            f"mechanism '{mechanism.name}' takes no canary examples (its canaries are gradients): game.canary must "
            f"be omitted for it, got {canary!r}"
        )
    _, features, classes = data_shape(data)
    return mechanism.canary_problem(m, features=features, classes=classes, rows=rows)


def canary_trial_bytes(mechanism: Mechanism, m: int, *, data: str | None, train_rows: int) -> int:
    """Memory of one release with m canaries: the mechanism's estimate on the game's rows, and the data."""
    from privgame.mechanisms.training.canaries import CanaryMechanism

    if data is None or not isinstance(mechanism, CanaryMechanism):
        return mechanism.memory_bytes(m)
    records, features, classes = data_shape(data)
    loaded = 8 * records * features + 4 * (train_rows + m) * features  # the data set, the rows and canaries
    return loaded + mechanism.canary_bytes(m, rows=train_rows, features=features, classes=classes)


def canary_data(
    membership: NDArray[np.bool_], *, data: str, train_rows: int, canary: str | None, canary_seed: int
) -> Any:
    """The :class:`privgame.mechanisms.training.canaries.CanaryData` of one run: ``membership`` over the chosen rows and
    canaries (built once per process for the same parameters and m)."""
    from privgame.data.catalogue import get_dataset
    from privgame.mechanisms.training.canaries import CanaryData

    # keyed by the data set object: one registered again under its name is read anew
    rows, canary_x, canary_y = _rows_and_canaries(
        get_dataset(data), train_rows, canary, canary_seed, int(membership.shape[0])
    )
    return CanaryData(membership, rows, canary_x, canary_y)


def _population(data: Any) -> tuple[NDArray[np.float32], NDArray[np.int64], int]:
    """Every record of ``data`` as (features, labels, classes), encoded from its public domain (the digits' pixels
    divided by their public maximum 16)."""
    from privgame.data.catalogue import get_dataset

    arrays = get_dataset(data).features()
    return arrays.x, arrays.y, arrays.n_classes


@functools.lru_cache(maxsize=8)
def _rows_and_canaries(
    data: Any, train_rows: int, canary: str | None, canary_seed: int, m: int
) -> tuple[Any, NDArray[np.float32] | None, NDArray[np.int64] | None]:
    from privgame.mechanisms.training.data import TrainingData

    x, y, classes = _population(data)
    include = np.ones(train_rows, dtype=bool)
    rows = TrainingData(x[:train_rows].copy(), y[:train_rows].copy(), include, n_classes=classes)
    for array in (rows.x, rows.y, rows.include):
        array.setflags(write=False)  # shared by every trial of the process
    if canary is None:
        return rows, None, None
    rng = np.random.default_rng(canary_seed)
    if canary == "mislabel":
        spare = y.shape[0] - train_rows
        if m > spare:  # the games refuse this before any trial (check_canary_parameters)
            raise ValueError(f"m must be at most {spare} mislabelled canaries, got {m}.")
        pick = train_rows + rng.permutation(spare)[:m]
        canary_x, canary_y = x[pick], (y[pick] + 1) % classes
    else:
        canary_x = rng.random((m, x.shape[1])).astype(np.float32)
        canary_y = rng.integers(0, classes, m).astype(np.int64)
    canary_x, canary_y = np.ascontiguousarray(canary_x, dtype=np.float32), canary_y.astype(np.int64)
    canary_x.setflags(write=False)
    canary_y.setflags(write=False)
    return rows, canary_x, canary_y
