"""What the DP-SGD canary mechanisms share: sklearn's digits, the training parameters, σ calibration, the claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from analysis._checks import check_int, check_membership, check_real
from analysis.accounting import PrivacyClaim, dpsgd_claim, dpsgd_noise_multiplier, sampled_probability
from mechanisms._base import Mechanism, check_runs
from mechanisms.dpsgd.models import logistic_regression, mlp
from mechanisms.dpsgd.train import DPSGDConfig

__all__ = ["N_DIGITS", "DigitsDPSGD", "load_digits_tensors"]

N_DIGITS = 1797
_MODELS = ("logistic", "mlp")


def load_digits_tensors(rows: int | None = None) -> tuple[Tensor, Tensor]:
    """scikit-learn's bundled 8×8 digits (1,797 images), pixels scaled to [0, 1], float64; the first ``rows``."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.as_tensor(data.data / 16.0, dtype=torch.float64)
    y = torch.as_tensor(data.target, dtype=torch.long)
    return (x, y) if rows is None else (x[:rows], y[:rows])


@dataclass(frozen=True, slots=True)
class DigitsDPSGD(Mechanism):
    """DP-SGD on sklearn's digits: the parameters and checks every canary mechanism shares (not registered).

    Parameters
    ----------
    epsilon : float or None, default=None
        Target ε at ``delta``: the noise multiplier is the smallest σ whose PLD ε is at most this
        (:func:`analysis.accounting.dpsgd_noise_multiplier`), calibrated when :attr:`sigma` is first needed (the
        runner's analytic-ε step, in the parent, before any trial) and cached on disk, so building the mechanism,
        validating a config or reading results never waits for it.  Exactly one of ``epsilon`` and
        ``noise_multiplier`` is given.
    noise_multiplier : float or None, default=None
        σ directly.
    delta : float, default=1e-5
        The δ at which ``epsilon`` calibrates σ.
    sampling_rate : float, default=0.1
        Poisson sampling rate q.
    steps : int, default=100
        T.
    clip_norm : float, default=1.0
        C.
    learning_rate : float, default=0.5
    momentum : float, default=0.0
    model : {"logistic", "mlp"}, default="logistic"
        Logistic regression (inputs → 10) or an MLP (inputs → 32 → 10).
    train_rows : int, default=1000
        Real training examples: the first rows of the digits, always included.
    """

    epsilon: float | None = None
    noise_multiplier: float | None = None
    delta: float = 1e-5
    sampling_rate: float = 0.1
    steps: int = 100
    clip_norm: float = 1.0
    learning_rate: float = 0.5
    momentum: float = 0.0
    model: str = "logistic"
    train_rows: int = 1000
    # derived from the parameters (equality and hashing ignore it); set on first use of `sigma`, and pickled
    # with the mechanism, so workers receive the σ the parent calibrated
    _sigma: float | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
        q = check_real("sampling_rate", self.sampling_rate, low=0.0, high=1.0, low_open=True)
        steps = check_int("steps", self.steps, low=1)
        check_real("clip_norm", self.clip_norm, low=0.0, low_open=True)
        check_real("learning_rate", self.learning_rate, low=0.0, low_open=True)
        check_real("momentum", self.momentum, low=0.0, high=1.0, high_open=True)
        check_int("train_rows", self.train_rows, low=1, high=N_DIGITS)
        if self.model not in _MODELS:
            raise ValueError(f"model must be one of {', '.join(_MODELS)}, got {self.model!r}.")
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError(
                f"exactly one of epsilon and noise_multiplier must be given, got epsilon={self.epsilon!r}, "
                f"noise_multiplier={self.noise_multiplier!r}."
            )
        if self.epsilon is not None:
            eps = check_real("epsilon", self.epsilon, low=0.0, low_open=True)
            object.__setattr__(self, "epsilon", eps)
            sampled = sampled_probability(q, steps)
            if self.delta >= sampled:  # the one target no σ reaches: refused now, not when σ is calibrated
                raise ValueError(
                    f"delta must be below 1 - (1 - sampling_rate)^steps = {sampled:.6g} (the chance a record is "
                    f"sampled at all) to calibrate the noise for epsilon, got {self.delta}."
                )
        else:
            sigma = check_real("noise_multiplier", self.noise_multiplier, low=0.0, low_open=True)
            object.__setattr__(self, "_sigma", sigma)

    @property
    def sigma(self) -> float:
        """The noise multiplier σ: ``noise_multiplier``, or calibrated from ``epsilon`` on first use."""
        if self._sigma is None:
            target = cast(float, self.epsilon)  # __post_init__: noise_multiplier set _sigma, else epsilon is given
            sigma = dpsgd_noise_multiplier(target, self.delta, self.sampling_rate, self.steps)
            object.__setattr__(self, "_sigma", sigma)
            return sigma
        return self._sigma

    def derived_parameters(self) -> dict[str, float]:
        """``{"sigma": σ}`` when σ is calibrated from ``epsilon`` (calibrating it now, if not done yet)."""
        return {} if self.epsilon is None else {"sigma": self.sigma}

    def run_bits(self, data: Sequence[Any], rngs: Sequence[np.random.Generator]) -> list[NDArray[np.bool_]]:
        """The membership vectors of :meth:`release_runs`, checked (one rng each, the same m in every run)."""
        check_runs(data, rngs)
        bits = [check_membership(f"data[{k}]", d) for k, d in enumerate(data)]
        if len({b.shape[0] for b in bits}) > 1:
            raise ValueError("release_runs needs the same number of canaries in every run.")
        return bits

    def build_model(self, n_inputs: int, generator: torch.Generator) -> nn.Module:
        """The chosen model for ``n_inputs`` features, initialised from ``generator`` (float64)."""
        if self.model == "logistic":
            return logistic_regression(n_inputs, 10, generator=generator, dtype=torch.float64)
        return mlp((n_inputs, 32, 10), generator=generator, dtype=torch.float64)

    def training_config(self, dataset_size: int | None = None) -> DPSGDConfig:
        """The DP-SGD configuration of one release (on the CPU; ``dataset_size`` the public N of qN)."""
        return DPSGDConfig(
            sampling_rate=self.sampling_rate,
            noise_multiplier=self.sigma,
            clip_norm=self.clip_norm,
            steps=self.steps,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            device="cpu",
            dataset_size=dataset_size,
        )

    def memory_bytes(self, n: int) -> int:
        """The training rows and ``n`` canaries as float64 64-pixel inputs, a few copies of each (the data, the
        sampled batch, the per-example activations of ghost clipping)."""
        return 8 * 64 * 4 * (self.train_rows + n)

    def privacy_claim(self) -> PrivacyClaim:
        return dpsgd_claim(self.sigma, self.sampling_rate, self.steps)
