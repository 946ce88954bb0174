"""Randomized response on each canary's membership bit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy import special

from privgame.analysis._checks import check_membership, check_real
from privgame.analysis.accounting import PrivacyClaim, randomized_response_claim
from privgame.mechanisms._base import Mechanism

__all__ = ["RandomizedResponse"]


@dataclass(frozen=True, slots=True)
class RandomizedResponse(Mechanism):
    """Report each canary's membership bit truthfully with probability e^ε / (1 + e^ε), flipped otherwise.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, ``>= 0`` (``inf`` is allowed and reports the truth).

    Notes
    -----
    Neighbouring relation: adding or removing one canary flips its bit, which changes only that canary's
    output; for each canary the output is binary randomized response, so the release is exactly (ε, 0)-DP
    [1]_.  In ``dp_accounting`` terms this is ``RandomizedResponseDpEvent(noise_parameter=2/(1+e^ε),
    num_buckets=2)`` under ``REPLACE_ONE`` (replacing the bit), accounted with the PLD accountant at
    discretisation 1e-9.  It is the worst case of the one-run audit with δ = 0, where the audit is tight [2]_.

    References
    ----------
    .. [1] S. L. Warner. Randomized response. JASA 60(309), 1965.
    .. [2] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, §5.

    Examples
    --------
    >>> mech = RandomizedResponse(epsilon=1.0)
    >>> out = mech.release(np.array([True, False, True]), rng=np.random.default_rng(0))
    >>> out.shape
    (3,)
    """

    name: ClassVar[str] = "randomized-response"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = None  # each canary: its own bit, its own coin

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, low=0.0, allow_inf=True))

    @property
    def truth_probability(self) -> float:
        """Probability that a canary's bit is reported unchanged, ``e^ε / (1 + e^ε)``."""
        return float(special.expit(self.epsilon))

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return the randomized bits (as float64 0/1) for the membership bits in ``data``."""
        bits = check_membership("data", data)
        flip_probability = float(special.expit(-self.epsilon))
        flip = rng.random(bits.shape[0]) < flip_probability
        return (bits ^ flip).astype(np.float64)

    def privacy_claim(self) -> PrivacyClaim:
        return randomized_response_claim(self.epsilon)
