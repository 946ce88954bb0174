"""Non-private networks (logistic regression and MLPs) trained with Adam, K models on K include-masks at once.

One model: its initial weights (PyTorch's default scheme, :func:`privgame.mechanisms.dpsgd.models.mlp`, the architecture
the DP-SGD classifier trains too), then ``epochs`` passes over its own training rows in an order drawn afresh every
epoch, in mini-batches of ``batch_size`` (the last one smaller), each a step of Adam on the batch's mean
cross-entropy.  Every draw comes from the model's own ``torch.Generator``.

K models: the parameters are stacked on a first axis and every step runs one batched matrix product per layer for
all K (each model on its own batch, gathered from the shared pool).  Models are trained together only when they
have the same number of training rows (so their batch boundaries coincide); Adam acts elementwise, so the K
stacked optimisers are K independent ones and model k is the model :func:`train_networks` gives for it alone, to
the bit (the Adam step is :class:`_FlatAdam`'s, whose kernels do not round by position; a test checks it).

Two choices make it ~1.3x faster on CPU without changing what is computed (``benchmarks/bench_lira.py``): a narrow
layer (the output's few classes) takes its batched products transposed (:class:`_BatchedLinear`), and a sparse
pool (one-hot encoded records: Adult's rows have 13 non-zeros of 108) feeds the first layer as sums of weight rows
(:class:`_SparseInputLinear`), equal to the dense product there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor

from privgame.mechanisms.dpsgd.models import mlp
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.release import NetworkRelease

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


class _BatchedLinear(torch.autograd.Function):
    """K affine layers at once, ``x W + b`` with x (K, B, in), W (K, in, out), b (K, 1, out).

    Autograd's own derivative of ``baddbmm`` is exact but slow on CPU for a narrow layer (the output layer's few
    classes): MKL's batched products run several times faster transposed, ``(W^T x^T)^T``, and so does the weight
    gradient as ``(g^T x)^T``.  Each product here is taken in the faster orientation; every result is contiguous.
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: Tensor, w: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(x, w)
        if w.shape[2] < _NARROW:
            return torch.baddbmm(b.transpose(1, 2), w.transpose(1, 2), x.transpose(1, 2)).transpose(1, 2).contiguous()
        return torch.baddbmm(b, x, w)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, g: Tensor) -> tuple[Tensor | None, Tensor, Tensor]:
        x, w = ctx.saved_tensors  # type: ignore[attr-defined]
        if w.shape[2] < _NARROW:
            grad_w = torch.bmm(g.transpose(1, 2), x).transpose(1, 2).contiguous()
        else:
            grad_w = torch.bmm(x.transpose(1, 2), g)
        grad_x = torch.bmm(g, w.transpose(1, 2)) if ctx.needs_input_grad[0] else None  # type: ignore[attr-defined]
        return grad_x, grad_w, g.sum(dim=1, keepdim=True)


class _FlatAdam:
    """Adam (Kingma and Ba 2015, as ``torch.optim.Adam`` without amsgrad) on parameters that are views of ONE flat
    buffer, its elementwise steps taken on the whole buffer at once.

    Why not ``torch.optim.Adam(fused=True)``: the fused CPU kernel rounds the elements of a vectorised body and of
    its scalar tail differently, and where a tensor's tail falls depends on how many models are stacked, so model
    k came out different in its last bits when trained in a batch of 3 rather than 4.  Each operation here is one
    of PyTorch's elementwise kernels, whose results do not depend on an element's position; so a model is the same
    to the bit whatever the batch it trains in (``tests/mechanisms/training/test_network.py``), which is what lets
    the engine choose batch sizes freely (docs/cluster.md).  One flat buffer keeps the step to a handful of
    kernels for every layer together, as fast as the fused step on the LiRA benchmark.

    Parameters
    ----------
    tensors : sequence of Tensor
        The initial parameters; copied into the buffer, and :attr:`params` are leaf views of it, in this order.
    lr, weight_decay : float
        Adam's step size and L2 penalty (added to the gradient, as ``torch.optim.Adam``); β = (0.9, 0.999), ε = 1e-8.
    """

    def __init__(self, tensors: Sequence[Tensor], *, lr: float, weight_decay: float) -> None:
        sizes = [t.numel() for t in tensors]
        self.flat = torch.cat([t.reshape(-1) for t in tensors])
        self.params = [
            view.view_as(t).requires_grad_(True) for view, t in zip(self.flat.split(sizes), tensors, strict=True)
        ]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, (0.9, 0.999), 1e-8
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        self.steps = 0

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step on the gradients the last backward pass left, which it then clears."""
        grad = torch.cat([p.grad.reshape(-1) for p in self.params])
        for p in self.params:
            p.grad = None
        if self.weight_decay:
            grad = grad.add(self.flat, alpha=self.weight_decay)
        self.steps += 1
        beta1, beta2 = self.betas
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = self.lr / (1 - beta1**self.steps)
        denominator = (self.exp_avg_sq.sqrt() / math.sqrt(1 - beta2**self.steps)).add_(self.eps)
        self.flat.addcdiv_(self.exp_avg, denominator, value=-step_size)


_NARROW = 8  # a layer with fewer outputs than this takes the transposed products
_SPARSE = 0.25  # a pool whose rows have at most this fraction of non-zeros feeds the first layer sparsely


class _SparseInputLinear(torch.autograd.Function):
    """The first layer on sparse inputs (one-hot encoded records): ``x W + b`` as sums of W's rows.

    Row (k, b) of x has at most m non-zeros, given as ``index`` (K·B, m), already offset into the stacked weights
    viewed as (K·in, out), and ``value`` (K·B, m), padded with zeros.  The forward pass is an ``embedding_bag``,
    about m/in of the dense product's work (on Adult's encoding 13 of 108 columns; it equals the dense product
    exactly there, the padded terms adding 0).  The weight gradient ``x^T g`` is the dense product on the
    gathered rows ``dense`` (K, B, in).
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, index: Tensor, value: Tensor, dense: Tensor, w: Tensor, b: Tensor
    ) -> Tensor:
        ctx.save_for_backward(dense)
        k, rows, width = dense.shape
        z = torch.nn.functional.embedding_bag(
            index, w.reshape(k * width, -1), per_sample_weights=value, mode="sum"
        ).view(k, rows, -1)
        return z.add_(b)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, g: Tensor) -> tuple[None, None, None, Tensor, Tensor]:
        (dense,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return None, None, None, torch.bmm(dense.transpose(1, 2), g), g.sum(dim=1, keepdim=True)


def _sparse_rows(x: Tensor) -> tuple[Tensor, Tensor] | None:
    """Each row's non-zero columns and values, padded to the widest row; None when the pool is not sparse."""
    nonzero = x != 0
    width = int(nonzero.sum(dim=1).max()) if x.shape[0] else 0
    if x.shape[1] < 2 * _NARROW or width > _SPARSE * x.shape[1]:
        return None
    width = max(width, 1)
    # a stable sort puts each row's non-zero columns first, in increasing order; the padding is column 0 at value 0
    order = torch.sort((~nonzero).to(torch.int8), dim=1, stable=True).indices[:, :width]
    value = torch.gather(x, 1, order)
    return order.masked_fill(value == 0, 0), value


def _forward(
    params: Sequence[Tensor], x: Tensor, activation: str, sparse: tuple[Tensor, Tensor] | None = None
) -> Tensor:
    """Batched forward pass: ``params`` alternate W (K, in, out) and b (K, 1, out); x (K, B, in).

    ``sparse``, when given, is x's rows as ``(index, value)`` for :class:`_SparseInputLinear`, taken by the first
    layer (given only when that layer is not narrow).
    """
    act = {"relu": torch.relu, "tanh": torch.tanh, "elu": torch.nn.functional.elu, "gelu": torch.nn.functional.gelu}[
        activation
    ]
    h = x
    last = len(params) // 2 - 1
    for k in range(last + 1):
        w, b = params[2 * k], params[2 * k + 1]
        if k == 0 and sparse is not None:
            h = _SparseInputLinear.apply(sparse[0], sparse[1], h, w, b)
        else:
            h = _BatchedLinear.apply(h, w, b)
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
        As the mechanisms' parameters (:class:`privgame.mechanisms.training.models.MLPClassifier`).

    Returns
    -------
    list of NetworkRelease
        In the order of ``masks``.
    """
    sizes = (data.x.shape[1], *hidden, data.n_classes)
    device = generators[0].device if len(generators) else torch.device("cpu")
    x = torch.tensor(data.x, device=device)  # copies: the pool's arrays may be read-only (torch warns on those)
    y = torch.tensor(data.y, device=device)
    # only a wide first layer takes the sparse rows (a narrow one, logistic regression's, takes transposed products)
    sparse_rows = _sparse_rows(x) if sizes[1] >= _NARROW else None
    counts = masks.sum(axis=1)
    out: list[NetworkRelease | None] = [None] * len(generators)
    for n in np.unique(counts):
        group = np.flatnonzero(counts == n)
        gens = [generators[int(k)] for k in group]
        layers = [initial_network(sizes, activation, g) for g in gens]
        stacked: list[Tensor] = []
        for depth in range(len(layers[0])):
            stacked.append(torch.stack([lay[depth][0] for lay in layers]))
            stacked.append(torch.stack([lay[depth][1] for lay in layers]).unsqueeze(1))
        optimiser = _FlatAdam(stacked, lr=learning_rate, weight_decay=weight_decay)
        params = optimiser.params
        rows = torch.from_numpy(np.stack([np.flatnonzero(masks[k]) for k in group])).to(device)  # (G, n), increasing
        steps = math.ceil(int(n) / batch_size)
        buffer = torch.empty(len(group) * min(batch_size, int(n)), x.shape[1], device=device)
        # model i's rows index the stacked first-layer weights viewed as (G·in, out) from i·in on
        first_row = torch.arange(len(group), device=device).mul_(x.shape[1]).unsqueeze(1)
        for _ in range(epochs):
            order = torch.stack(
                [rows[i][torch.randperm(int(n), generator=g, device=device)] for i, g in enumerate(gens)]
            )
            for s in range(steps):
                batch = order[:, s * batch_size : (s + 1) * batch_size]
                flat = batch.reshape(-1)  # index_select: several times faster than x[batch] on CPU
                inputs = torch.index_select(x, 0, flat, out=buffer[: flat.shape[0]]).view(*batch.shape, x.shape[1])
                sparse = None
                if sparse_rows is not None:
                    index = torch.index_select(sparse_rows[0], 0, flat).view(*batch.shape, -1)
                    index.add_(first_row.unsqueeze(2))
                    sparse = (index.view(flat.shape[0], -1), torch.index_select(sparse_rows[1], 0, flat))
                logits = _forward(params, inputs, activation, sparse)
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), torch.index_select(y, 0, flat), reduction="none"
                )
                # the sum over models of each model's mean: model k's gradient is its own mean's
                loss.reshape(batch.shape).mean(dim=1).sum().backward()
                optimiser.step()
        for i, k in enumerate(group):
            trained = [(params[2 * d][i], params[2 * d + 1][i, 0]) for d in range(len(params) // 2)]
            out[k] = network_release(trained, activation)
    return [r for r in out if r is not None]
