"""Where DP-SGD runs and where its randomness comes from.

Every random draw of the DP-SGD code (parameter initialisation, Poisson sampling, Gaussian noise) is taken from an
explicit ``torch.Generator`` that lives on the device of the computation; the global torch RNG is never used or
seeded.  :func:`make_generator` builds such a generator from a trial's ``numpy.random.SeedSequence`` (or an int),
so that a trial's role stream fixes every bit of its training run.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

__all__ = ["check_generator", "make_generator", "resolve_device", "same_device"]


def resolve_device(device: str | torch.device) -> torch.device:
    """Turn a device request into a ``torch.device``.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` (CUDA when ``torch.cuda.is_available()``, the CPU otherwise), or anything ``torch.device``
        accepts (``"cpu"``, ``"cuda"``, ``"cuda:1"``).

    Returns
    -------
    torch.device

    Raises
    ------
    TypeError
        If ``device`` is neither a string nor a ``torch.device``.
    ValueError
        If the string names no device type torch knows.
    """
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device must be 'auto', a device string or a torch.device, got {device!r}.")
    if device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        return torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"device must be 'auto' or a torch device string such as 'cpu' or 'cuda:0', got {device!r}."
        ) from None


def make_generator(seed: int | np.random.SeedSequence, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded from ``seed``.

    Parameters
    ----------
    seed : int or numpy.random.SeedSequence
        A non-negative int below 2**64, or a ``SeedSequence`` (a trial's role stream), from which 64 bits are drawn
        with ``generate_state``.
    device : str or torch.device, default="cpu"
        Where the generator lives (resolved by :func:`resolve_device`); it must be the device the tensors it fills
        live on.

    Returns
    -------
    torch.Generator

    Notes
    -----
    CPU and CUDA generators are different algorithms (Mersenne Twister and Philox), so the same seed gives
    different draws on different device types; results are reproducible on one device type.
    """
    if isinstance(seed, np.random.SeedSequence):
        value = int(seed.generate_state(1, dtype=np.uint64)[0])
    elif isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        value = int(seed)
        if not 0 <= value < 2**64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}.")
    else:
        raise TypeError(f"seed must be an int or a numpy.random.SeedSequence, got {seed!r}.")
    generator = torch.Generator(resolve_device(device))
    generator.manual_seed(value)
    return generator


def same_device(a: torch.device, b: torch.device) -> bool:
    """Whether two devices are the same one: type and index, a CUDA device without an index being the current one
    (``cuda`` and ``cuda:0`` agree when device 0 is current; ``cuda:0`` and ``cuda:1`` never do)."""
    if a.type != b.type:
        return False
    if a.type != "cuda" or a.index == b.index:
        return True
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


def check_generator(name: str, generator: object, device: torch.device) -> torch.Generator:
    """Check that ``generator`` is a ``torch.Generator`` on ``device`` itself (type and index: :func:`same_device`)."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator, got {generator!r}.")
    if not same_device(generator.device, device):
        raise ValueError(f"{name} must live on the training device ({device}), got a generator on {generator.device}.")
    return generator
