"""What the DP-SGD canary mechanisms share: sklearn's digits, the training parameters, σ calibration, the claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from analysis._checks import check_int, check_membership
from mechanisms._base import check_runs
from mechanisms.dpsgd.models import logistic_regression, mlp
from mechanisms.dpsgd.parameters import DPSGDParameters

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
class DigitsDPSGD(DPSGDParameters):
    """DP-SGD on sklearn's digits: the parameters and checks every canary mechanism shares (not registered).

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum
        As :class:`mechanisms.dpsgd.parameters.DPSGDParameters`.
    model : {"logistic", "mlp"}, default="logistic"
        Logistic regression (inputs → 10) or an MLP (inputs → 32 → 10).
    train_rows : int, default=1000
        Real training examples: the first rows of the digits, always included.
    """

    model: str = "logistic"
    train_rows: int = 1000

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)
        check_int("train_rows", self.train_rows, low=1, high=N_DIGITS)
        if self.model not in _MODELS:
            raise ValueError(f"model must be one of {', '.join(_MODELS)}, got {self.model!r}.")

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

    def memory_bytes(self, n: int) -> int:
        """The training rows and ``n`` canaries as float64 64-pixel inputs, a few copies of each (the data, the
        sampled batch, the per-example activations of ghost clipping)."""
        return 8 * 64 * 4 * (self.train_rows + n)
