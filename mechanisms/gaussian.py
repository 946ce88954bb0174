"""The idealised Gaussian mechanism on each canary's membership bit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_membership, check_real
from privgame.analysis.accounting import PrivacyClaim, gaussian_claim
from privgame.mechanisms._base import Mechanism

__all__ = ["GaussianMechanism"]


@dataclass(frozen=True, slots=True)
class GaussianMechanism(Mechanism):
    """Release each canary's membership bit plus independent N(0, σ²) noise.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, ``> 0``; the sensitivity is 1 (one bit).

    Notes
    -----
    Neighbouring relation: adding or removing one canary changes one coordinate by 1, so the release is
    μ-GDP with μ = 1/σ and (ε, δ)-DP with δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) [1]_.  The claim is
    ``dp_accounting.GaussianDpEvent(noise_multiplier=σ)``; its ε at the experiment's δ comes from
    ``dp_accounting.get_epsilon_gaussian`` (exact).  At δ = 0 no finite ε holds (ε = inf).  This is the
    idealised form of one DP-SGD step seen through a white-box canary (SPEC §1, §6).

    References
    ----------
    .. [1] B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential Privacy. ICML 2018,
       arXiv:1805.06530.
    """

    name: ClassVar[str] = "gaussian"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = None  # each coordinate: its own bit plus its own noise

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_real("sigma", self.sigma, low=0.0, low_open=True))

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``bits + N(0, σ²)`` for the membership bits in ``data``."""
        bits = check_membership("data", data)
        return bits.astype(np.float64) + rng.normal(0.0, self.sigma, size=bits.shape[0])

    def privacy_claim(self) -> PrivacyClaim:
        return gaussian_claim(self.sigma)
