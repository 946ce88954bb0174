"""Your own DP-SGD training loop, audited: the contract, and privgame's and Opacus's loops under it.

The contract (docs/extending.md, "Your own DP-SGD training loop")
-----------------------------------------------------------------
``loop = "package.module:function"`` names a function called once per release as::

    function(run: LoopRun) -> torch.nn.Module | None

:class:`LoopRun` carries everything a DP-SGD loop needs and nothing about the audit:

* ``model``: the ``torch.nn.Module`` to train (on ``run.device``), initialised by privgame;
* ``x``, ``y``: the training rows, (N, ...) and (N,) tensors, every row an example of the claim;
* ``loss_fn``: the per-example loss, ``loss_fn(model(x_batch), y_batch)`` of shape (B,) (an ``nn.Module`` with a
  ``reduction`` attribute, "none" by default, so Opacus's ghost clipping can take it too);
* ``noise_multiplier`` σ, ``sampling_rate`` q, ``steps`` T, ``clip_norm`` C, ``learning_rate``, ``momentum``:
  what the claim is computed for (Poisson sampling at q, T steps, per-example clipping at C, noise N(0, σ²C²) on
  the sum of clipped gradients);
* ``generator``: a ``torch.Generator`` on ``run.device``, the only randomness the loop should use (the same seed
  then gives the same release);
* ``dataset_size``: the public N for a divisor qN (None: ``len(x)``, which is public in a white-box audit; in a
  black-box audit the member canaries make ``len(x)`` depend on the membership).

The loop trains ``run.model`` in place and returns it (or None), or returns another module whose trainable
parameters have ``run.model``'s shapes in the same order (a wrapper such as Opacus's ``GradSampleModule``, or a
copy): privgame then reads the trained values from it.  In a white-box audit the rows include the canaries: rows
whose per-example gradient is a Dirac of norm ``canary_scale · C`` on a canary layer beside the model
(:mod:`privgame.mechanisms.dpsgd.canary_rows`); the loop cannot tell them from data and needs no hook, and the
canaries go through its own sampler, per-example gradients, clipping and noise.  In a black-box audit the rows are
the real rows and the member canary examples, and the attack reads the released model's losses.

Built-in loops: ``"privgame"`` (privgame's engine, :func:`privgame.mechanisms.dpsgd.sgd.train`), ``"opacus"`` and
``"opacus-ghost"`` (Opacus's ``PrivacyEngine`` with Poisson sampling, hooks or fast gradient clipping).

Importing a loop runs its module's code: a loop named in a results directory is imported only with
``--trust-plugins`` (:mod:`privgame.core.trust`, through :func:`privgame.mechanisms._imports.resolve_import`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from privgame.mechanisms._imports import one_line, resolve_import
from privgame.mechanisms.dpsgd.clipping import trainable_parameters
from privgame.mechanisms.dpsgd.devices import make_generator

__all__ = ["BUILTIN_LOOPS", "LoopRun", "TrainingLoop", "opacus_batch_size", "opacus_loop", "privgame_loop"]

LOOP_EXAMPLE = "mypackage.training:dp_sgd"


@dataclass(frozen=True, slots=True, eq=False)
class LoopRun:
    """What privgame hands a DP-SGD training loop (module docstring: the contract)."""

    model: nn.Module
    x: Tensor
    y: Tensor
    loss_fn: nn.Module
    noise_multiplier: float
    sampling_rate: float
    steps: int
    clip_norm: float
    learning_rate: float
    momentum: float
    generator: torch.Generator
    dataset_size: int | None = None

    @property
    def device(self) -> torch.device:
        """Where the model, the rows and the generator live."""
        return self.generator.device


def privgame_loop(run: LoopRun) -> nn.Module:
    """privgame's own DP-SGD (:func:`privgame.mechanisms.dpsgd.sgd.train`) under the loop contract."""
    from privgame.mechanisms.dpsgd.sgd import DPSGDConfig, train

    config = DPSGDConfig(
        sampling_rate=run.sampling_rate,
        noise_multiplier=run.noise_multiplier,
        clip_norm=run.clip_norm,
        steps=run.steps,
        learning_rate=run.learning_rate,
        momentum=run.momentum,
        device=str(run.device),
        dataset_size=run.dataset_size,
    )
    return train(run.model, run.x, run.y, config, generator=run.generator, loss_fn=run.loss_fn)


def _opacus() -> Any:
    """The ``opacus`` package, or one line saying how to install it."""
    try:
        import opacus
    except ImportError:
        raise ValueError("loop 'opacus' needs Opacus: pip install 'privgame[opacus]' (opacus 1.6).") from None
    return opacus


def opacus_steps(sampling_rate: float) -> int | None:
    """k when ``sampling_rate`` is 1/k for an integer k (Opacus samples at 1/len(loader)), else ``None``."""
    steps = round(1.0 / sampling_rate)
    if steps < 1 or not math.isclose(1.0 / steps, sampling_rate, rel_tol=1e-12):
        return None
    return steps


def opacus_batch_size(n_rows: int, sampling_rate: float) -> int | None:
    """The ``batch_size`` of the DataLoader for which Opacus samples at exactly ``sampling_rate`` (its rate is
    1 / len(loader) = 1 / ⌈N / batch_size⌉), or ``None`` when no batch size gives it."""
    steps = opacus_steps(sampling_rate)
    if steps is None:
        return None
    for batch in (n_rows // steps, -(-n_rows // steps)):
        if batch >= 1 and -(-n_rows // batch) == steps:
            return batch
    return None


def opacus_loop(run: LoopRun, *, grad_sample_mode: str = "hooks") -> nn.Module:
    """Opacus's ``PrivacyEngine.make_private`` (Poisson sampling, ``secure_mode`` off so that seeds hold) and T of
    its steps; ``grad_sample_mode`` "hooks" (per-sample gradients) or "ghost" (fast gradient clipping).

    Opacus samples each row with probability 1/len(loader): ``sampling_rate`` must be 1/k for a k it can realise
    on the rows (:func:`opacus_batch_size`).  Its loader and its noise get generators of their own, drawn from
    ``run.generator``.  An empty Poisson batch is a step of zero clipped gradients and Opacus's noise.
    """
    opacus = _opacus()
    n = run.x.shape[0]
    batch = opacus_batch_size(n, run.sampling_rate)
    if batch is None:
        raise ValueError(
            f"sampling_rate must be 1/k for an integer k that Opacus realises on {n} rows (its rate is "
            f"1/len(loader)), got {run.sampling_rate}."
        )
    seeds = torch.randint(0, 2**62, (2,), generator=run.generator, device=run.device).tolist()
    loader_gen, noise_gen = make_generator(int(seeds[0]), "cpu"), make_generator(int(seeds[1]), run.device)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(run.x, run.y), batch_size=batch, generator=loader_gen
    )
    optimizer = torch.optim.SGD(run.model.parameters(), lr=run.learning_rate, momentum=run.momentum)
    with warnings.catch_warnings():  # secure_mode off is the point here: seeded, reproducible releases
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        engine = opacus.PrivacyEngine(accountant="rdp", secure_mode=False)
    common: dict[str, Any] = {
        "module": run.model,
        "optimizer": optimizer,
        "data_loader": loader,
        "noise_multiplier": run.noise_multiplier,
        "max_grad_norm": run.clip_norm,
        "poisson_sampling": True,
        "noise_generator": noise_gen,
    }
    loss_fn: Any = run.loss_fn  # Opacus reads and sets its reduction
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        warnings.filterwarnings("ignore", message=".*[Gg]host.*")
        if grad_sample_mode == "ghost":
            loss_fn.reduction = "mean"
            private, dp_optimizer, criterion, dp_loader = engine.make_private(
                **common, criterion=loss_fn, grad_sample_mode="ghost"
            )
        else:
            private, dp_optimizer, dp_loader = engine.make_private(**common, grad_sample_mode=grad_sample_mode)
            loss_fn.reduction = "mean"
            criterion = loss_fn
        private.train()
        step = 0
        while step < run.steps:
            for xb, yb in dp_loader:
                if step == run.steps:
                    break
                dp_optimizer.zero_grad()
                if xb.shape[0] > 0:
                    criterion(private(xb.to(run.device)), yb.to(run.device)).backward()
                else:
                    _empty_batch(dp_optimizer, ghost=grad_sample_mode == "ghost")
                dp_optimizer.step()
                step += 1
    loss_fn.reduction = "none"
    return run.model


def _empty_batch(optimizer: Any, *, ghost: bool) -> None:
    """Zero gradients of an empty batch, where Opacus reads them: per-sample ((0, *shape)) or summed (ghost)."""
    for p in optimizer.params:
        if ghost:
            p.grad = torch.zeros_like(p)
        else:
            p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype, device=p.device)


BUILTIN_LOOPS: dict[str, Callable[[LoopRun], nn.Module | None]] = {
    "privgame": privgame_loop,
    "opacus": opacus_loop,
    "opacus-ghost": lambda run: opacus_loop(run, grad_sample_mode="ghost"),
}


@dataclass(frozen=True, slots=True)
class TrainingLoop:
    """A DP-SGD training loop by name: one of :data:`BUILTIN_LOOPS`, or ``"package.module:function"``.

    Raises
    ------
    TypeError, ValueError
        One line: not a string, not a built-in loop nor importable, not callable.
    """

    name: str

    def __post_init__(self) -> None:
        self.function()

    def function(self) -> Callable[[LoopRun], Any]:
        """The loop the name gives (a user's loop is imported, through privgame's trust rules)."""
        if not isinstance(self.name, str):
            raise TypeError(f"loop must be a string, got {self.name!r}.")
        if self.name in BUILTIN_LOOPS:
            return BUILTIN_LOOPS[self.name]
        if ":" not in self.name:
            raise ValueError(
                f"loop must be one of {', '.join(BUILTIN_LOOPS)} or a function 'package.module:function', got "
                f"{self.name!r}."
            )
        found = resolve_import(self.name, field="loop", example=LOOP_EXAMPLE, what="function")
        if not callable(found):
            raise ValueError(f"loop must name a function (run) -> model, got {self.name!r}.")
        return found

    def run(self, run: LoopRun) -> nn.Module:
        """Call the loop; return ``run.model``, trained (the loop's values copied in when it returned another
        module), checked against the contract.

        Raises
        ------
        ValueError
            One line: the loop failed, or returned something other than None or a module with ``run.model``'s
            trainable parameters (names and shapes).
        """
        try:
            out = self.function()(run)
        except ValueError as exc:
            if self.name in BUILTIN_LOOPS:
                raise
            raise ValueError(f"loop {self.name!r} failed: {one_line(exc)}.") from None
        except Exception as exc:  # the user's own error, as one line
            raise ValueError(f"loop {self.name!r} failed: {one_line(exc)}.") from None
        if out is None:
            return run.model
        if not isinstance(out, nn.Module):
            raise ValueError(
                f"loop {self.name!r} must return the trained torch.nn.Module (or None), got {type(out).__name__}."
            )
        if out is run.model:
            return out
        mine = [p for _, p in trainable_parameters(run.model)]
        theirs = [p for _, p in trainable_parameters(out)]
        if [p.shape for p in theirs] != [p.shape for p in mine]:
            raise ValueError(
                f"loop {self.name!r} must return the model it was given (trained), got a module with other "
                f"parameters ({len(theirs)} trainable tensors, expected {len(mine)})."
            )
        with torch.no_grad():  # a wrapper or a copy: its trained values, in the given model
            for p, q in zip(mine, theirs, strict=True):
                if p is not q:
                    p.copy_(q.detach().to(p.device, p.dtype))
        return run.model
