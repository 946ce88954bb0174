"""The loss attack: a target's score is minus its loss under the released model (Yeom et al. 2018)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from attacks._base import Attack

__all__ = ["NegativeLoss"]


@dataclass(frozen=True, slots=True)
class NegativeLoss(Attack):
    """Score each target by minus its loss under the released model (members have lower loss).

    The release must offer ``losses(targets)`` (e.g. :class:`mechanisms.dpsgd.blackbox.ModelRelease`).

    References
    ----------
    .. [1] S. Yeom, I. Giacomelli, M. Fredrikson, S. Jha. Privacy Risk in Machine Learning: Analyzing the
       Connection to Overfitting. CSF 2018, arXiv:1709.01604.
    """

    name: ClassVar[str] = "negative-loss"
    accepts: ClassVar[frozenset[str]] = frozenset({"model-with-canaries"})

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        losses = getattr(release, "losses", None)
        if losses is None:
            raise TypeError(f"the release must offer losses(targets), got {type(release).__name__}.")
        return -np.asarray(losses(targets), dtype=np.float64)
