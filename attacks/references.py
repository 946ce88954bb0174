"""How many reference (shadow) models an attack of the efficient evaluation reads per sample, and which ones.

In the efficient evaluation (``games/lira.py``) each of M models is in turn the target and the other M − 1 its
reference models.  By default an attack reads them all: each sample then has about (M − 2)/2 IN and (M − 2)/2 OUT
references.  Comparing attacks at equal cost needs fewer: ``references = k`` gives each sample of a target model

- **offline** (OUT references only): the first k models after the target, in cyclic model order (j + 1, j + 2, …,
  M − 1, 0, …, j − 1), that did not train on the sample;
- **online**: the first k/2 that trained on it and the first k/2 that did not, in the same order.

This is the count of models whose confidence on x enters x's estimate, which is what a reference model costs an
adversary who trains them for x.  ML Privacy Meter's RMIA code (``research/2024_rmia/main.py`` at d3273416) takes
the first ``num_ref_models // 2`` IN and OUT models of each point in model order, so its "254 reference models"
offline are 127 OUT models per point: privgame's ``references = 127``.  With the game's complementary pairs every
sample is IN exactly M/2 models and OUT of M/2, so the others of a target give every sample M/2 − 1 references on
each side: the game checks ``per side <= M/2 − 1`` with the config (:func:`models_needed`), and no sample is ever
short of references.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_int

__all__ = ["check_references", "gather_references", "models_needed", "per_side"]

#: the most references a sample may be given (the game's models are at most 4096)
MAX_REFERENCES = 4096


def check_references(references: int | None, *, online: bool, least: int, attack: str) -> int | None:
    """``references`` checked: ``None`` (every other model) or an integer >= ``least``, even when ``online``.

    Raises
    ------
    TypeError, ValueError
        With one line naming the attack and what it needs.
    """
    if references is None:
        return None
    k = check_int("references", references, low=1, high=MAX_REFERENCES)
    if online and k % 2:
        raise ValueError(
            f"references must be even for an online {attack} attack (half IN, half OUT reference models per sample), "
            f"got {k}."
        )
    if k < least:
        raise ValueError(
            f"references must be at least {least} for this {attack} attack ({'online' if online else 'offline'}: "
            f"{least // 2 if online else least} reference model(s) per side per sample), got {k}."
        )
    return k


def per_side(references: int, online: bool) -> int:
    """Reference models per sample on each side read: k/2 online (IN and OUT), k offline (OUT)."""
    return references // 2 if online else references


def models_needed(references: int | None, online: bool, least: int) -> int:
    """The fewest models M of a game of complementary pairs that give every sample ``references`` (``least``, the
    attack's own minimum, when ``references`` is None): M/2 − 1 >= the references per side."""
    if references is None:
        return least
    return max(least, 2 * (per_side(references, online) + 1))


def gather_references(
    values: NDArray[np.float64], member: NDArray[np.bool_], target: int, count: int, *, side: bool
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The values of each sample's first ``count`` references on ``side`` (IN when True) after model ``target``.

    Parameters
    ----------
    values, member : ndarray of shape (M, N)
        Every model's value (confidence) on every sample, and whether it trained on it.
    target : int
        The target model, never its own reference.
    count : int
        References per sample.
    side : bool
        Models that trained on the sample (True) or did not (False).

    Returns
    -------
    gathered : ndarray of shape (count, N)
        Row r holds, for each sample, the value of its (r + 1)-th reference in cyclic order after ``target``.
    present : ndarray of shape (count, N), bool
        Where that reference exists (a sample with fewer than ``count`` such models has the rest False).
    """
    m, n = values.shape
    order = (target + 1 + np.arange(m - 1)) % m  # the others, in cyclic order after the target
    on_side = member[order] if side else ~member[order]
    rank = np.cumsum(on_side, axis=0)  # 1-based rank among the sample's models on this side
    chosen = on_side & (rank <= count)
    rows, cols = np.nonzero(chosen)
    gathered = np.zeros((count, n))
    present = np.zeros((count, n), dtype=bool)
    gathered[rank[rows, cols] - 1, cols] = values[order[rows], cols]
    present[rank[rows, cols] - 1, cols] = True
    return gathered, present
