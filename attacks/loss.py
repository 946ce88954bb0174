"""The loss attack: a target's score is minus its loss under the released model (Yeom et al. 2018)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.attacks._base import Attack

__all__ = ["NegativeLoss"]


@dataclass(frozen=True, slots=True)
class NegativeLoss(Attack):
    """Score each target by minus its loss under the released model (members have lower loss).

    The release is a model released with its canaries
    (:class:`privgame.mechanisms.training.canaries.CanaryModelRelease`, e.g. of ``dpsgd-blackbox``); target i is canary
    i, and its loss is the model's cross-entropy on it through the
    :class:`privgame.mechanisms.training.release.ModelRelease` protocol (``losses(x, y)``).

    References
    ----------
    .. [1] S. Yeom, I. Giacomelli, M. Fredrikson, S. Jha. Privacy Risk in Machine Learning: Analyzing the
       Connection to Overfitting. CSF 2018, arXiv:1709.01604.
    """

    name: ClassVar[str] = "negative-loss"
    accepts: ClassVar[frozenset[str]] = frozenset({"model-with-canaries"})

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        from privgame.mechanisms.training.canaries import CanaryModelRelease

        if not isinstance(release, CanaryModelRelease):
            raise TypeError(
                "the release must be a model released with its canaries (privgame.mechanisms.training.canaries."
                f"CanaryModelRelease), got {type(release).__name__}."
            )
        x, y = release.canaries(targets)
        return -np.asarray(release.model.losses(x, y), dtype=np.float64)
