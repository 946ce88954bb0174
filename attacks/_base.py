"""The interface every attack implements, and what a fitted attack is.

An attack is a frozen, picklable dataclass of its parameters only.  ``fit(knowledge, rng=...)`` learns from what
the game lets the adversary know (an :class:`privgame.attacks.knowledge.Knowledge`: auxiliary data, the target, the
released dataset's size, black-box access to the mechanism; ``None`` when the game offers nothing) and returns a
*fitted attack*, a separate object holding what was learned (a trained classifier, per-target statistics).
Attacks with nothing to learn are their own fitted attack: ``fit`` returns ``self``.

A fitted attack answers ``score(release, targets)``: one float64 per target, higher meaning "more likely a
member"; and ``threshold``: the score at or above which it guesses "member" (fixed at fit time, from the
adversary's own data, never from the game's secret), used by games that report an accuracy.

Class attributes checked before any work runs: ``accepts`` (the mechanisms' ``release_kind`` values it can score)
and ``needs`` (the knowledge it requires: ``"nothing"``; ``"auxiliary"`` for shadow-modelling attacks, which
only games that hand out auxiliary data and black-box access can play; ``"labelled"`` for learned classifiers fitted
on labelled members and non-members, which PANORAMIA's game hands out).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = ["KNOWLEDGE_KINDS", "Attack", "FittedAttack", "LeaveOneOutAttack"]

KNOWLEDGE_KINDS = ("nothing", "auxiliary", "labelled", "models")


@runtime_checkable
class FittedAttack(Protocol):
    """What ``Attack.fit`` returns: a scorer with a decision threshold."""

    @property
    def threshold(self) -> float:
        """Guess "member" when the score is at least this."""
        ...

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        """Scores of shape ``(len(targets),)``, float64, higher = member."""
        ...


class Attack(ABC):
    """A membership-inference (or reconstruction) attack scoring targets from a release."""

    __slots__ = ()

    name: ClassVar[str]
    accepts: ClassVar[frozenset[str]]
    needs: ClassVar[str] = "nothing"

    @property
    def threshold(self) -> float:
        """The decision threshold of an attack that is its own fitted attack (scores ≥ 0.5 guess "member")."""
        return 0.5

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedAttack:
        """Learn from the adversary's knowledge; the default has nothing to learn and returns ``self``."""
        return self

    #: whether ``fit`` builds ``n_shadows`` shadow tables through :func:`privgame.attacks.shadow.shadow_features`
    #: from stream 0 of :func:`~privgame.attacks.shadow.attack_streams` (shadow ``i`` is then
    #: :func:`~privgame.attacks.shadow.shadow_dataset` ``i``, whatever else the attack does), so that a game can make
    #: those runs apart, before the fit reads them from the cache (:meth:`shadow_runs`)
    shadow_tables: ClassVar[bool] = False

    def shadow_runs(self) -> int:
        """How many shadow releases ``fit`` makes as :attr:`shadow_tables` says (0: none a game may make apart)."""
        return int(getattr(self, "n_shadows", 0)) if self.shadow_tables else 0

    def memory_bytes(self, n_releases: int, n_columns: int) -> int:
        """Estimated peak memory in bytes of fitting on ``n_releases`` shadow releases of ``n_columns`` columns.

        Checked with the config, before anything runs (see :meth:`privgame.mechanisms._base.Mechanism.memory_bytes`);
        attacks with nothing to learn need none beyond the game's own arrays.
        """
        return 0

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        """Score without fitting: only attacks with nothing to learn (``needs == "nothing"``) implement this."""
        raise TypeError(f"attack {self.name!r} must be fitted first: call fit(knowledge, rng=...) and score with that.")


class LeaveOneOutAttack(Attack):
    """An attack the efficient evaluation plays (``games/lira.py``): M models on random halves of a pool, each model
    in turn the target and the M − 1 others its reference (shadow) models, scored from their confidences alone.

    Implementations: :class:`privgame.attacks.lira.LiRA` and :class:`privgame.attacks.rmia.RMIA`.
    """

    __slots__ = ()

    @abstractmethod
    def min_models(self) -> int:
        """The fewest models M of an efficient evaluation this attack can score every pair of."""

    @abstractmethod
    def efficient_scores(
        self, confidence: NDArray[np.float64], member: NDArray[np.bool_], *, fpc: float
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_], float]:
        """Scores (M, N) of every (model, sample) pair from the other models' logit-scaled confidences ``confidence``
        (M, N) and training masks ``member`` (M, N); where they exist (``valid``, M × N); and the finite-population
        factor the scores applied (``fpc``, 1 − N/N₊ of the pool, or 1.0 where the attack applies none)."""
