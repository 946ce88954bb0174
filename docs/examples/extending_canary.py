"""A canary mechanism of your own, as a config plugin: ``sk-mlp-canaries``, for the one-run and multi-run games.

It trains the MLP of ``extending_model`` on the game's training rows and the member canary examples, and releases
the model with the canaries (public: the auditor chose them), which ``negative-loss`` scores by their loss.
Registered when imported: ``[experiment] plugins = ["extending_canary"]``.  docs/extending.md, section 4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from extending_model import check_mlp, fit_mlp  # the plugin's folder is on sys.path: its modules import each other

from privgame.engine.registry import MECHANISMS
from privgame.mechanisms.training import CanaryData, CanaryMechanism, CanaryModelRelease


@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class SklearnMLPCanaries(CanaryMechanism):
    """scikit-learn's MLP on the game's rows and its member canaries; releases the model with the canaries.

    Parameters
    ----------
    hidden : tuple of int, default=(64,)
        Hidden layer widths.
    epochs : int, default=200
        Passes over the training records.
    alpha : float, default=1e-4
        L2 penalty.
    """

    name: ClassVar[str] = "sk-mlp-canaries"
    release_kind: ClassVar[str] = "model-with-canaries"
    canary_examples: ClassVar[bool] = True  # trains on canary EXAMPLES: the game must choose them (its `canary`)

    hidden: tuple[int, ...] = (64,)
    epochs: int = 200
    alpha: float = 1e-4

    def __post_init__(self) -> None:
        hidden, epochs, alpha = check_mlp(self.hidden, self.epochs, self.alpha)  # as sk-mlp's
        object.__setattr__(self, "hidden", hidden)
        object.__setattr__(self, "epochs", epochs)
        object.__setattr__(self, "alpha", alpha)

    def release(self, data: CanaryData, *, rng: np.random.Generator) -> CanaryModelRelease:
        pool = data.pool()  # the real rows, then the m canaries; included: every row and the member canaries
        x, y = pool.x[pool.include], pool.y[pool.include]
        model = fit_mlp(x, y, pool.n_classes, hidden=self.hidden, epochs=self.epochs, alpha=self.alpha, rng=rng)
        canary_x, canary_y = data.examples()
        return CanaryModelRelease(model, canary_x, canary_y)

    def privacy_claim(self) -> None:
        return None  # non-private; a DP trainer returns its PrivacyClaim (privgame.analysis.accounting.dpsgd_claim)
