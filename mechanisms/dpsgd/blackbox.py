"""DP-SGD with black-box input-space canaries, for the one-run audit (Steinke, Nasr, Jagielski 2023, §6).

The game chooses m canary examples in advance (mislabelled held-out rows, or out-of-distribution noise with random
labels: its ``canary`` parameter) and hands them over with the real training rows and the membership bits
(:class:`privgame.mechanisms.training.canaries.CanaryData`); each member canary (S_i = 1) joins the training set.
Training is the DP-SGD classifier's (:class:`privgame.mechanisms.dpsgd.classifier.DPSGDClassifier`, the MLP of
:func:`privgame.mechanisms.dpsgd.models.mlp`, or a user's ``torch.nn.Module`` named by its factory, on a pool and
include-masks).  The release is the final model (:class:`privgame.mechanisms.training.release.ModelRelease`) together
with the (public) canaries, a
:class:`privgame.mechanisms.training.canaries.CanaryModelRelease`; the attack scores each canary by its negative loss
under that model (:class:`privgame.attacks.loss.NegativeLoss`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.mechanisms._base import check_runs
from privgame.mechanisms.dpsgd.classifier import DPSGDClassifier, check_factory
from privgame.mechanisms.dpsgd.parameters import DPSGDParameters
from privgame.mechanisms.dpsgd.user_model import check_model
from privgame.mechanisms.training.canaries import CanaryMechanism, CanaryModelRelease, as_canary_data, stack_canary_runs

__all__ = ["DPSGDBlackBox"]


@dataclass(frozen=True, slots=True)
class DPSGDBlackBox(DPSGDParameters, CanaryMechanism):
    """DP-SGD on the game's rows and its member canary examples; releases the model with the canaries.

    The rows and the canary examples are the game's (its ``data`` and ``canary``: the digits in the shipped
    configs; input ``"canary-dataset"``, :class:`privgame.mechanisms.training.canaries.CanaryData`): the mechanism loads
    no data set.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum
        As :class:`privgame.mechanisms.dpsgd.parameters.DPSGDParameters`.
    hidden : tuple of int, default=()
        Hidden widths of the network (``()``: logistic regression; ``(32,)``: the MLP inputs → 32 → classes), as
        :class:`privgame.mechanisms.dpsgd.classifier.DPSGDClassifier`, whose training this is (float32).  Left out with
        ``model``.
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
        Left out with ``model``.
    loop : str or None, default=None
        ``None``: privgame's engine (K releases at once).  Or a DP-SGD training loop, built in or the user's
        ``"package.module:function"`` (:mod:`privgame.mechanisms.dpsgd.loop`): it trains the real rows and the
        member canaries, one release after the other, with ``dataset_size`` = the public N below.
    model : str or None, default=None
        ``None``: the built-in network of ``hidden`` and ``activation``.  Or the researcher's own
        ``torch.nn.Module`` by its factory, ``"package.module:factory"``, called as
        ``factory((d,), n_classes, generator=...)`` for the game's rows of d features (the contract of
        :mod:`privgame.mechanisms.dpsgd.user_model`; importing it runs that module's code, as a plugin).  Checked when
        the mechanism is built (importable, callable; ``hidden`` and ``activation`` refused unless left at their
        defaults) and with the game's config (:meth:`canary_problem`: the whole contract, one line); trained in
        float32 as ``DPSGDClassifier(model=...)`` does and released as a
        :class:`privgame.mechanisms.training.release.ModuleRelease`, whose canaries' losses the attack reads.

    Notes
    -----
    Neighbouring relation: add/remove one training example (a canary); analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The divisor qN uses the public N = n + max(1, ⌊m/2⌋), n the real rows (the expected
    training-set size), never the realised number of member canaries.  Training runs on the real rows followed by
    all m canaries with the non-members excluded (the include-mask), so the random numbers drawn never depend on
    the membership vector; K runs (``release_runs``) train in one batched pass, each equal to its own release.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, §6.
    """

    name: ClassVar[str] = "dpsgd-blackbox"
    input_kind: ClassVar[str] = "canary-dataset"
    release_kind: ClassVar[str] = "model-with-canaries"
    canary_dependence: ClassVar[str | None] = (
        "its canaries are examples trained into one shared model, which couples their outputs"
    )
    canary_examples: ClassVar[bool] = True

    hidden: tuple[int, ...] = ()
    activation: str = "relu"
    model: str | None = None
    loop: str | None = None

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)  # zero-argument super() is unavailable in slotted dataclasses
        check_factory(self.model, {"hidden": (self.hidden, ()), "activation": (self.activation, "relu")})
        # the classifier checks (and normalises) the architecture; σ = 1 stands in for the one not calibrated yet
        trainer = self._trainer(1.0)
        if self.model is None:
            object.__setattr__(self, "hidden", trainer.hidden)

    def canary_problem(self, m: int, *, features: int, classes: int, rows: int | None = None) -> str | None:
        """A user model's contract (:func:`privgame.mechanisms.dpsgd.user_model.check_model`) on the game's rows of
        ``features`` features and ``classes`` classes; ``None`` when it holds (or the network is built in).  The
        canaries are examples: no coordinate of the model is reserved for them (m plays no part)."""
        if self.model is None:
            return None
        try:
            check_model(self.model, (features,), classes, 0)
        except ValueError as exc:
            return str(exc).rstrip(".")
        return None

    def _trainer(self, sigma: float) -> DPSGDClassifier:
        """The DP-SGD classifier with these parameters and the noise multiplier ``sigma``."""
        network: dict[str, Any] = (
            {"hidden": self.hidden, "activation": self.activation} if self.model is None else {"model": self.model}
        )
        return DPSGDClassifier(
            noise_multiplier=sigma,
            delta=self.delta,
            sampling_rate=self.sampling_rate,
            steps=self.steps,
            clip_norm=self.clip_norm,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            device=self.device,
            loop=self.loop,
            **network,
        )

    def release(self, data: Any, *, rng: np.random.Generator) -> CanaryModelRelease:
        """Train once on the real rows plus the member canaries; release the model and the canaries."""
        return self.release_runs([as_canary_data("data", data)], rngs=[rng])[0]

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[CanaryModelRelease]:
        """K independent releases trained at once (:func:`privgame.mechanisms.dpsgd.sgd.train_ensemble`), each equal to
        ``release(d, rng=r)`` up to the rounding of batched float32 products.

        Raises
        ------
        ValueError
            If the runs do not share their rows and canaries, or carry no canary examples.
        """
        check_runs(data, rngs)
        if len(data) == 0:
            return []
        first, bits = stack_canary_runs(data)
        canary_x, canary_y = first.examples()
        n = len(first.rows)
        pool = first.pool()
        masks = np.concatenate([np.ones((len(data), n), dtype=bool), bits], axis=1)
        size = n + max(1, first.m // 2)
        models = self._trainer(self.sigma).train(pool, masks, rngs, sizes=[size] * len(data))
        return [CanaryModelRelease(model, canary_x, canary_y) for model in models]

    def canary_bytes(self, m: int, *, rows: int, features: int, classes: int) -> int:
        """The pool (rows and canaries) as float32 with a few working copies (the data, the sampled batch, the
        per-example activations of ghost clipping), and the network's weights a few times.  A user's model counts
        its trainable coordinates (:func:`privgame.mechanisms.dpsgd.user_model.check_model`) and, for its activations,
        the
        pool's width only: its own layers' widths are unknown here."""
        widths = (features, *self.hidden, classes)
        weights = sum(a * b for a, b in itertools.pairwise(widths))
        if self.model is not None:
            try:
                weights = check_model(self.model, (features,), classes, 0)
            except ValueError:  # refused by canary_problem, with the config
                weights = 0
        return 4 * 4 * (rows + m) * max(widths) + 4 * 8 * weights + 64 * m
