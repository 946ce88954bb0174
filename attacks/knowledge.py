"""What the adversary knows: a typed object handed to ``Attack.fit`` by the games that give the attacker data.

Threat model (TAPAS, Houssiau et al. 2022; Krčo et al. 2025, SPEC §4 and §7): the adversary

- knows *auxiliary data* drawn from the same population as the private data, disjoint from the released dataset
  and from the challenger's evaluation pool;
- knows the *target record(s)* whose membership it must infer, and the *size* n of the private dataset;
- has *black-box access* to the mechanism under audit: it may run the mechanism (with its public parameters) on
  datasets of its own choice, with randomness from its own stream, as often as it likes — through
  :class:`BlackBox` — but never sees the private data the release was made from, nor the game's seeds.

Nothing in a :class:`Knowledge` is derived from the game's secret bit or from the private dataset beyond the
public facts above; the games construct it (``games/record.py``) and are tested to keep it so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.core.cache import ArtefactCache
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.cached import cached_release_many

__all__ = ["BlackBox", "Knowledge", "require_knowledge"]


@dataclass(frozen=True, eq=False)
class BlackBox:
    """Black-box access to a mechanism: run it on datasets of the attacker's choice.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism under audit; its parameters are public (Kerckhoffs), its private input is not here.
    cache : ArtefactCache or None, default=None
        Where releases are cached by content (:mod:`privgame.mechanisms.cached`); ``None`` recomputes every run.
    progress : callable or None, default=None
        Called with the number of runs finished, for progress lines.

    Notes
    -----
    Every run's randomness comes from a ``SeedSequence`` the attacker supplies (a child of its own stream), so a
    run is reproducible and cacheable, and independent of the game's streams.
    """

    mechanism: Mechanism
    cache: ArtefactCache | None = None
    progress: Callable[[int], None] | None = None

    def release(self, data: Any, *, seed: np.random.SeedSequence) -> Any:
        """One run of the mechanism on ``data`` with randomness from ``seed``."""
        return self.release_many([data], seeds=[seed])[0]

    def release_many(self, data: Sequence[Any], *, seeds: Sequence[np.random.SeedSequence]) -> list[Any]:
        """Independent runs, one per dataset, each seeded by its own ``SeedSequence`` (batched where possible)."""
        for k, s in enumerate(seeds):
            if not isinstance(s, np.random.SeedSequence):
                raise TypeError(f"seeds[{k}] must be a numpy.random.SeedSequence, got {s!r}.")
        return cached_release_many(self.mechanism, data, seeds=seeds, cache=self.cache, progress=self.progress)


@dataclass(frozen=True, eq=False)
class Knowledge:
    """What a game lets the adversary know (see the module docstring for the threat model).

    Parameters
    ----------
    auxiliary : DataFrame
        Records from the population, disjoint from the released dataset and from the evaluation pool.
    targets : DataFrame
        The target records (``score(release, targets)`` indexes their rows by position).
    dataset_size : int
        n, the number of records of the private dataset (public).
    oracle : BlackBox
        Black-box access to the mechanism under audit.
    neighbours : {"replace", "add-remove"}, default="replace"
        The two worlds the adversary must tell apart: the target or a reference record among n (replace), or n
        records with the target against the n − 1 others alone (add-remove); shadows are built to match.
    encoder : callable or None, default=None
        The public encoding of records as model inputs, ``encoder(table) -> (x, y)`` (float32 features, int64
        labels), for attacks on trained models: the games on models give the encoding their mechanism's inputs use
        (:mod:`privgame.data.features`, built from the public domain only).  ``None`` for games on tables.  Its
        ``n_classes`` attribute, where it has one, is the label's public number of classes, which the models of a
        shadow-modelling attack then output whatever labels their records hold.
    raw_columns : callable or None, default=None
        ``raw_columns(table) -> DataFrame``: the records as the data set's own columns, the label left out, as a
        model that does its own preprocessing reads them (``TrainingData.frame``; ``sklearn`` with
        ``features = "raw"``).  Given with ``encoder`` by the games on trained models.
    """

    auxiliary: pd.DataFrame
    targets: pd.DataFrame
    dataset_size: int
    oracle: BlackBox
    neighbours: str = "replace"
    encoder: Callable[[pd.DataFrame], tuple[NDArray[np.float32], NDArray[np.int64]]] | None = None
    raw_columns: Callable[[pd.DataFrame], pd.DataFrame] | None = None

    def __post_init__(self) -> None:
        for name in ("auxiliary", "targets"):
            if not isinstance(getattr(self, name), pd.DataFrame):
                raise TypeError(f"{name} must be a pandas DataFrame, got {type(getattr(self, name)).__name__}.")
        if list(self.auxiliary.columns) != list(self.targets.columns):
            raise ValueError(
                f"targets must have the auxiliary data's columns, got {list(self.targets.columns)!r} and "
                f"{list(self.auxiliary.columns)!r}."
            )
        if len(self.targets) < 1:
            raise ValueError("targets must hold at least one record, got none.")
        check_int("dataset_size", self.dataset_size, low=2)
        if not isinstance(self.oracle, BlackBox):
            raise TypeError(f"oracle must be a BlackBox, got {type(self.oracle).__name__}.")
        if self.encoder is not None and not callable(self.encoder):
            raise TypeError(f"encoder must be callable or None, got {type(self.encoder).__name__}.")
        if self.raw_columns is not None and not callable(self.raw_columns):
            raise TypeError(f"raw_columns must be callable or None, got {type(self.raw_columns).__name__}.")
        if self.neighbours not in ("replace", "add-remove"):
            raise ValueError(f"neighbours must be one of replace, add-remove, got {self.neighbours!r}.")


def require_knowledge(knowledge: Any, attack: str) -> Knowledge:
    """``knowledge`` itself, or a TypeError naming the attack that needs it."""
    if not isinstance(knowledge, Knowledge):
        raise TypeError(
            f"attack {attack!r} needs a privgame.attacks.knowledge.Knowledge (a record-level game gives one), "
            f"got {type(knowledge).__name__}."
        )
    return knowledge
