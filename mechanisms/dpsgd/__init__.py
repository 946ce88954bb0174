"""DP-SGD (Abadi et al. 2016) exactly as ``dp_accounting`` analyses it, in PyTorch.

This sub-package is the only part of privgame that imports torch; the rest of the package imports without it,
and importing the sub-package itself imports nothing until a name is used (:mod:`privgame.core._lazy`).

The step
--------
Poisson sampling with rate q (each of the N examples independently; variable-size and empty batches), per-example
clipping to norm C, Gaussian noise N(0, σ²C²) on the SUM of clipped gradients, division by the EXPECTED batch size
qN, then an SGD step (momentum and weight decay allowed: post-processing).  T steps.  Analytic guarantee:
``DPSGDConfig.privacy_claim()`` = :func:`privgame.analysis.accounting.dpsgd_claim` (PLD by default), add/remove-one.

API
---
Models (``privgame.mechanisms.dpsgd.models``), all initialised from an explicit generator::

    logistic_regression(n_features, n_classes=2, *, generator, dtype=torch.float32) -> nn.Module
    mlp(sizes, *, generator, activation="relu", dtype=torch.float32) -> nn.Sequential   # e.g. (108, 256, 256, 2)
    digits_cnn(*, generator, channels=(16, 32), activation="tanh", dtype=torch.float32) -> nn.Sequential  # 8×8 digits
    init_parameters(model, *, generator) -> model          # PyTorch's default init, drawn from `generator`

Clipping (``privgame.mechanisms.dpsgd.clipping``)::

    clipped_gradient_sum(model, loss_fn, x, y, clip_norm, *, weights=None) -> (sums, norms)
        # sums: list of Σ_i min(1, C/‖∇ℓ_i‖)·∇ℓ_i, one per trainable parameter (trainable_parameters order);
        # norms: (B,) per-example gradient norms before clipping.  One forward + one backward pass; Linear
        # layers by ghost norms, Conv2d by unfold (Gram trick or materialised, whichever is cheaper), any other
        # layer by torch.func (vmap of vjp).
    cross_entropy(output, target) -> (B,) per-example losses   # the default loss_fn (no reduction!)
    trainable_parameters(model) -> [(name, parameter)]

Training (``privgame.mechanisms.dpsgd.sgd``)::

    DPSGDConfig(sampling_rate, noise_multiplier, clip_norm, steps, learning_rate, momentum=0.0,
                weight_decay=0.0, device="auto")       # frozen, validated; .privacy_claim(), .expected_batch_size(N)
        # device "auto": train where the run's generator lives (make_generator(seed, "auto"): CUDA when present)
    train(model, x, y, config, *, generator, loss_fn=cross_entropy, callback=None) -> model
        # callback(step, model, batch_mask) after each update; batch_mask: (N,) bool Poisson sample
    train_ensemble(make_model, x, y, config, *, generators, loss_fn=cross_entropy, callback=None) -> [model] * K
        # make_model(generator) -> nn.Module (or a sequence of K models); K models at once (vmap over stacked
        # parameters), model k == train(make_model(generators[k]), ..., generator=generators[k]);
        # callback(step, params: {name: (K, ...)}, batch_masks: (K, N))
    poisson_mask(n_examples, sampling_rate, generator) -> (N,) bool

Devices and randomness (``privgame.mechanisms.dpsgd.devices``)::

    resolve_device("auto" | "cpu" | "cuda" | ...) -> torch.device   # "auto": CUDA when available, else CPU
    same_device(a, b) -> bool          # type and index (cuda = the current cuda:N); check_generator uses it
    make_generator(seed: int | SeedSequence, device="cpu") -> torch.Generator

Mechanisms (each loads no data set: its data come from the game)::

    DPSGDParameters                  # parameters.py: (ε or σ, δ, q, T, C, step), σ calibration, the claim
    DPSGDClassifier(hidden, ...)     # classifier.py, "dpsgd-mlp": input "dataset" (TrainingData), releases a model
                                     # (model="package.module:factory": a user's torch model, a ModuleRelease)
    DPSGDWhiteBox(model, ...)        # whitebox.py, "dpsgd-whitebox": input "canary-dataset" (CanaryData), Dirac
                                     # gradient canaries on extra zero features; releases each canary's descent
    DPSGDBlackBox(hidden, ...)       # blackbox.py, "dpsgd-blackbox": input "canary-dataset", the game's canary
                                     # examples join the training set (DPSGDClassifier's training, a user's model
                                     # too); releases the model with the canaries (CanaryModelRelease)

The canary mechanisms' input, :class:`privgame.mechanisms.training.canaries.CanaryData`, holds the membership bits, the
real training rows (a ``TrainingData``) and, for input-space canaries, the canary examples; the one-run and multi-run
games build it from their ``data``, ``train_rows``, ``canary`` and ``canary_seed`` parameters.

Every random draw comes from an explicit ``torch.Generator`` on the training device (never the global RNG).  A
trial seeds it from its role stream, e.g.::

    from privgame.mechanisms.dpsgd import DPSGDConfig, make_generator, mlp, resolve_device, train
    device = resolve_device(config.device)
    gen = make_generator(mechanism_seed, device)          # mechanism_seed: the trial's SeedSequence for this role
    model = train(mlp((d, 256, 256, 2), generator=gen), x, y, config, generator=gen)

Per step the generator gives, in order, the N uniforms of the Poisson sample and then the noise of all trainable
parameters (one vector, in ``named_parameters`` order); the same seed gives bitwise the same run on one device type.

Performance (2-core CPU, float32, MLP 108 → 256 → 256 → 2, N = 30,000, q = 256/N, one epoch = 117 steps):
non-private SGD ≈ 0.11 s, :func:`train` ≈ 0.19 s (≈ 1.8×); ``python benchmarks/bench_dpsgd.py`` measures it beside
Opacus, a naive ``vmap`` loop and the K-model ensembles.
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.mechanisms.dpsgd.clipping import (
        GhostClipper,
        LossFn,
        clipped_gradient_sum,
        cross_entropy,
        trainable_parameters,
    )
    from privgame.mechanisms.dpsgd.devices import make_generator, resolve_device
    from privgame.mechanisms.dpsgd.models import digits_cnn, init_parameters, logistic_regression, mlp
    from privgame.mechanisms.dpsgd.sgd import (
        DPSGDConfig,
        EnsembleCallback,
        StepCallback,
        poisson_mask,
        train,
        train_ensemble,
    )

__all__ = [
    "DPSGDConfig",
    "EnsembleCallback",
    "GhostClipper",
    "LossFn",
    "StepCallback",
    "clipped_gradient_sum",
    "cross_entropy",
    "digits_cnn",
    "init_parameters",
    "logistic_regression",
    "make_generator",
    "mlp",
    "poisson_mask",
    "resolve_device",
    "train",
    "train_ensemble",
    "trainable_parameters",
]

_MODULES = {
    "clipping": ("GhostClipper", "LossFn", "clipped_gradient_sum", "cross_entropy", "trainable_parameters"),
    "devices": ("make_generator", "resolve_device"),
    "models": ("digits_cnn", "init_parameters", "logistic_regression", "mlp"),
    "sgd": ("DPSGDConfig", "EnsembleCallback", "StepCallback", "poisson_mask", "train", "train_ensemble"),
}
__getattr__, __dir__ = attach(
    __name__,
    {name: f"privgame.mechanisms.dpsgd.{module}:{name}" for module, names in _MODULES.items() for name in names},
)
