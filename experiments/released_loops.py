"""Opacus training loops as researchers wrote them for each released Opacus, under privgame's loop contract.

``experiments/released_bugs.py`` audits these loops with ``dpsgd-loop`` (canary rows: privgame's canaries are rows
of the training set, handed to Opacus's sampler, per-sample gradients, clipping and noise), each in an environment
holding one released Opacus.  The loops use only the public API of the installed version, as its tutorials did:

``ghost``
    Fast gradient clipping.  Opacus 1.5 to 1.5.2: ``make_private(..., grad_sample_mode="ghost", clipping="ghost")``
    and the two backward passes by hand (the 1.5 tutorial: a first backward of the mean loss with the norms'
    hooks on, then the per-sample losses weighted by ``get_coeff()`` with the hooks off); from 1.5.3:
    ``make_private(..., criterion=loss, grad_sample_mode="ghost")``, whose criterion does both passes.
``closure``
    Per-sample gradients by hooks and ``optimizer.step(closure)``, as PyTorch Lightning's automatic optimisation
    calls it.
``hooks``
    Per-sample gradients by hooks, ``loss.backward(); optimizer.step()``.
``shuffled``
    ``hooks`` with ``poisson_sampling=False`` and a shuffling loader (each row once per epoch).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import torch

from privgame.mechanisms.dpsgd.devices import make_generator
from privgame.mechanisms.dpsgd.loop import LoopRun, opacus_batch_size

_MANUAL_GHOST = ("1.5", "1.5.0", "1.5.1", "1.5.2")


def _setup(run: LoopRun, *, shuffle: bool = False, **extra: Any) -> tuple[Any, ...]:
    """Opacus's ``make_private`` with Poisson sampling on the run's rows, with the arguments this version takes."""
    import opacus

    batch = opacus_batch_size(run.x.shape[0], run.sampling_rate)
    if batch is None:
        raise ValueError(f"sampling_rate must be 1/k for an integer k Opacus realises, got {run.sampling_rate}.")
    seeds = torch.randint(0, 2**62, (2,), generator=run.generator).tolist()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(run.x, run.y),
        batch_size=batch,
        shuffle=shuffle,
        generator=make_generator(int(seeds[0])),
    )
    optimizer = torch.optim.SGD(run.model.parameters(), lr=run.learning_rate, momentum=run.momentum)
    engine = opacus.PrivacyEngine(accountant="rdp", secure_mode=False)
    accepted = inspect.signature(engine.make_private).parameters
    kwargs = {
        "module": run.model,
        "optimizer": optimizer,
        "data_loader": loader,
        "noise_multiplier": run.noise_multiplier,
        "max_grad_norm": run.clip_norm,
        "poisson_sampling": not shuffle,
        "noise_generator": make_generator(int(seeds[1])),
        **extra,
    }
    return engine.make_private(**{k: v for k, v in kwargs.items() if k in accepted})


def _steps(run: LoopRun, loader: Any, optimizer: Any, step: Callable[[Any, Any], None]) -> None:
    """T steps across passes over the Poisson loader; an empty batch is zero gradients and Opacus's noise."""
    done = 0
    while done < run.steps:
        for xb, yb in loader:
            if done == run.steps:
                break
            if xb.shape[0] == 0:
                optimizer.zero_grad()
                for p in optimizer.params:
                    p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype)
                    p.grad = torch.zeros_like(p)
                optimizer.step()
            else:
                step(xb, yb)
            done += 1


def ghost(run: LoopRun) -> torch.nn.Module:
    """Opacus's fast gradient clipping, as the installed version's tutorial runs it."""
    import opacus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if opacus.__version__ in _MANUAL_GHOST:
            model, optimizer, loader = _setup(run, grad_sample_mode="ghost", clipping="ghost")
            per_sample = run.loss_fn  # reduction "none"

            def step(xb: Any, yb: Any) -> None:
                optimizer.zero_grad()
                losses = per_sample(model(xb), yb)
                losses.mean().backward(retain_graph=True)  # the norms' pass
                optimizer.zero_grad()
                coeff = model.get_coeff()
                model.disable_hooks()
                (coeff * losses).sum().backward()  # the clipped pass
                model.enable_hooks()
                optimizer.step()

        else:
            run.loss_fn.reduction = "mean"
            model, optimizer, criterion, loader = _setup(run, grad_sample_mode="ghost", criterion=run.loss_fn)

            def step(xb: Any, yb: Any) -> None:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()

        model.train()
        _steps(run, loader, optimizer, step)
    run.loss_fn.reduction = "none"
    return run.model


def _hooks(run: LoopRun, *, closure: bool, shuffle: bool = False) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = _setup(run, shuffle=shuffle)[:3]
        run.loss_fn.reduction = "mean"

        def step(xb: Any, yb: Any) -> None:
            def compute() -> Any:
                optimizer.zero_grad()
                loss = run.loss_fn(model(xb), yb)
                loss.backward()
                return loss

            if closure:
                optimizer.step(compute)
            else:
                compute()
                optimizer.step()

        model.train()
        _steps(run, loader, optimizer, step)
    run.loss_fn.reduction = "none"
    return run.model


def hooks(run: LoopRun) -> torch.nn.Module:
    """Opacus's per-sample gradients by hooks, ``backward()`` then ``step()``."""
    return _hooks(run, closure=False)


def closure(run: LoopRun) -> torch.nn.Module:
    """Opacus's per-sample gradients by hooks, ``optimizer.step(closure)`` (PyTorch Lightning's call)."""
    return _hooks(run, closure=True)


def shuffled(run: LoopRun) -> torch.nn.Module:
    """Opacus's hooks with ``poisson_sampling=False``: a shuffling loader (every row once per epoch, batches of
    ⌊qN⌋ or ⌈qN⌉), accounted by Opacus as Poisson sampling at 1/len(loader)."""
    return _hooks(run, closure=False, shuffle=True)
