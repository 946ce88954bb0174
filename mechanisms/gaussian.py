"""The idealised Gaussian mechanism on each canary's membership bit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_membership, check_real
from privgame.analysis.accounting import PrivacyClaim, gaussian_claim, gaussian_noise_for_epsilon
from privgame.mechanisms._base import Mechanism

__all__ = ["GaussianMechanism"]


@dataclass(frozen=True, slots=True)
class GaussianMechanism(Mechanism):
    """Release each canary's membership bit plus independent N(0, σ²) noise.

    Parameters
    ----------
    sigma : float or None, default=None
        Noise standard deviation, ``> 0``; the sensitivity is 1 (one bit).
    epsilon : float or None, default=None
        Instead of ``sigma``: the ε the mechanism is to satisfy at ``delta``.  Its noise is the smallest σ that does,
        by the analytic Gaussian mechanism of Balle and Wang [1]_
        (:func:`privgame.analysis.accounting.gaussian_noise_for_epsilon`: exact, cached on disk), calibrated when the
        mechanism is built; :attr:`noise` is that σ, and the report shows it as ``mechanism.sigma``.  Exactly one
        of ``sigma`` and ``epsilon`` is given.
    delta : float or None, default=None
        The δ of ``epsilon``, in (0, 1); only with ``epsilon``.

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

    sigma: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    # the σ used: ``sigma``, or calibrated from ``epsilon`` (equality and hashing ignore it: the fields decide)
    _noise: float = field(init=False, default=0.0, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.sigma is None) == (self.epsilon is None):
            raise ValueError(
                f"exactly one of sigma and epsilon must be given, got sigma={self.sigma!r}, epsilon={self.epsilon!r}."
            )
        if self.sigma is not None:
            if self.delta is not None:
                raise ValueError(f"delta is the δ of epsilon; with sigma it must be left out, got {self.delta!r}.")
            noise = check_real("sigma", self.sigma, low=0.0, low_open=True)
            object.__setattr__(self, "sigma", noise)
        else:
            eps = check_real("epsilon", self.epsilon, low=0.0, low_open=True)
            if self.delta is None:
                raise ValueError(
                    "delta must be given with epsilon (the Gaussian mechanism satisfies no finite epsilon at delta = "
                    "0), got none."
                )
            delta = check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
            object.__setattr__(self, "epsilon", eps)
            object.__setattr__(self, "delta", delta)
            noise = gaussian_noise_for_epsilon(eps, delta)
        object.__setattr__(self, "_noise", noise)

    @property
    def noise(self) -> float:
        """The noise standard deviation σ released with: ``sigma``, or calibrated from ``epsilon``."""
        return self._noise

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``bits + N(0, σ²)`` for the membership bits in ``data``."""
        bits = check_membership("data", data)
        return bits.astype(np.float64) + rng.normal(0.0, self._noise, size=bits.shape[0])

    def privacy_claim(self) -> PrivacyClaim:
        return gaussian_claim(self._noise)

    def derives_parameters(self) -> bool:
        """True when σ is calibrated from ``epsilon``."""
        return self.epsilon is not None

    def derived_parameters(self) -> dict[str, float]:
        """``{"sigma": σ}`` when σ is calibrated from ``epsilon`` (the report's ``mechanism.sigma``)."""
        return {} if self.epsilon is None else {"sigma": self._noise}
