"""Non-private networks (logistic regression and MLPs) trained with Adam, K models on K include-masks at once.

One model: its initial weights (PyTorch's default scheme, :func:`mechanisms.dpsgd.models.mlp`, the architecture the
DP-SGD classifier trains too), then ``epochs`` passes over its own training rows in an order drawn afresh every
epoch, in mini-batches of ``batch_size`` (the last one smaller), each a step of Adam on the batch's mean
cross-entropy.  Every draw comes from the model's own ``torch.Generator``.

K models: the parameters are stacked on a first axis and every step runs one batched matrix product per layer for
all K (each model on its own batch, gathered from the shared pool).  Models are trained together only when they
have the same number of training rows (so their batch boundaries coincide); Adam acts elementwise, so the K
stacked optimisers are K independent ones and model k is the model :func:`train_networks` gives for it alone (up
to the rounding of batched products; a test checks it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor

from mechanisms.dpsgd.models import mlp
from mechanisms.training.data import TrainingData
from mechanisms.training.release import NetworkRelease

__all__ = ["initial_network", "network_release", "train_networks"]


def initial_network(sizes: Sequence[int], activation: str, generator: torch.Generator) -> list[tuple[Tensor, Tensor]]:
    """The initial ``(W, b)`` of each layer, W of shape (in, out), drawn from ``generator`` (as ``mlp``)."""
    net = mlp(tuple(sizes), generator=generator, activation=activation)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    return [(layer.weight.detach().T.contiguous(), layer.bias.detach().clone()) for layer in linears]


def network_release(layers: Sequence[tuple[Tensor, Tensor]], activation: str) -> NetworkRelease:
    """A :class:`NetworkRelease` of ``(W, b)`` layers with W of shape (in, out)."""
    return NetworkRelease(
        weights=tuple(w.detach().cpu().numpy().astype(np.float32) for w, _ in layers),
        biases=tuple(b.detach().cpu().numpy().astype(np.float32) for _, b in layers),
        activation=activation,
    )


def _forward(params: Sequence[Tensor], x: Tensor, activation: str) -> Tensor:
    """Batched forward pass: ``params`` alternate W (K, in, out) and b (K, 1, out); x (K, B, in)."""
    act = {"relu": torch.relu, "tanh": torch.tanh, "elu": torch.nn.functional.elu, "gelu": torch.nn.functional.gelu}[
        activation
    ]
    h = x
    last = len(params) // 2 - 1
    for k in range(last + 1):
        h = torch.baddbmm(params[2 * k + 1], h, params[2 * k])
        if k < last:
            h = act(h)
    return h


def train_networks(
    data: TrainingData,
    masks: NDArray[np.bool_],
    generators: Sequence[torch.Generator],
    *,
    hidden: Sequence[int],
    activation: str,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    weight_decay: float,
) -> list[NetworkRelease]:
    """Train one network per include-mask on ``data``'s pool; see the module docstring for the procedure.

    Parameters
    ----------
    data : TrainingData
        The pool (its own ``include`` is ignored: ``masks`` says who trains on what).
    masks : ndarray of shape (K, N), bool
    generators : sequence of K torch.Generator
        Model k's initialisation and batch orders, all on the device to train on.
    hidden : sequence of int
        Hidden widths (empty: logistic regression).
    activation, epochs, batch_size, learning_rate, weight_decay
        As the mechanisms' parameters (:class:`mechanisms.training.models.MLPClassifier`).

    Returns
    -------
    list of NetworkRelease
        In the order of ``masks``.
    """
    sizes = (data.x.shape[1], *hidden, data.n_classes)
    device = generators[0].device if len(generators) else torch.device("cpu")
    x = torch.tensor(data.x, device=device)  # copies: the pool's arrays may be read-only (torch warns on those)
    y = torch.tensor(data.y, device=device)
    counts = masks.sum(axis=1)
    out: list[NetworkRelease | None] = [None] * len(generators)
    for n in np.unique(counts):
        group = np.flatnonzero(counts == n)
        gens = [generators[int(k)] for k in group]
        layers = [initial_network(sizes, activation, g) for g in gens]
        params: list[Tensor] = []
        for depth in range(len(layers[0])):
            params.append(torch.stack([lay[depth][0] for lay in layers]).requires_grad_(True))
            params.append(torch.stack([lay[depth][1] for lay in layers]).unsqueeze(1).requires_grad_(True))
        optimiser = torch.optim.Adam(params, lr=learning_rate, weight_decay=weight_decay, fused=True)
        rows = torch.from_numpy(np.stack([np.flatnonzero(masks[k]) for k in group])).to(device)  # (G, n), increasing
        steps = math.ceil(int(n) / batch_size)
        for _ in range(epochs):
            order = torch.stack(
                [rows[i][torch.randperm(int(n), generator=g, device=device)] for i, g in enumerate(gens)]
            )
            for s in range(steps):
                batch = order[:, s * batch_size : (s + 1) * batch_size]
                logits = _forward(params, x[batch], activation)
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), y[batch].reshape(-1), reduction="none"
                )
                optimiser.zero_grad(set_to_none=True)
                # the sum over models of each model's mean: model k's gradient is its own mean's
                loss.reshape(batch.shape).mean(dim=1).sum().backward()
                optimiser.step()
        for i, k in enumerate(group):
            trained = [(params[2 * d][i], params[2 * d + 1][i, 0]) for d in range(len(params) // 2)]
            out[k] = network_release(trained, activation)
    return [r for r in out if r is not None]
