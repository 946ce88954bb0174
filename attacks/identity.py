"""The identity attack: the score of a canary is the value the mechanism released for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_scores
from privgame.attacks._base import Attack

__all__ = ["Identity"]


@dataclass(frozen=True, slots=True)
class Identity(Attack):
    """Score each canary by its released value (for mechanisms that publish one number per canary).

    Notes
    -----
    For randomized response and the Gaussian mechanism on membership bits the released value is a sufficient
    statistic and monotone in the likelihood ratio, so this is the optimal attack there (Neyman–Pearson).
    """

    name: ClassVar[str] = "identity"
    accepts: ClassVar[frozenset[str]] = frozenset({"per-canary-values"})

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        values = check_scores("release", release)
        return values[np.asarray(targets, dtype=np.intp)]
