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

On the CPU, a third makes it ~2x faster again, still without changing a bit: the sparse first layer (forward,
ReLU, weight gradient and the weights' Adam step) and the rest of the Adam step run as numba kernels
(:class:`_KernelSteps`, :func:`_adam_step`) that perform PyTorch's float32 operations in PyTorch's order (and MKL's
square root, which ``torch.sqrt`` calls), in one pass over memory where PyTorch's operations take several (256
models' tensors do not fit in the cache: the passes are what a step costs), with no dense gather of the batch's
rows.  :func:`fast_kernels` checks on the machine that they agree with PyTorch's to the bit, and the trainer uses
PyTorch's operations where they do not.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import os
from collections.abc import Iterator, Sequence
from typing import Any

import llvmlite.binding as llvm
import numba
import numpy as np
import torch
from numba.core import types as numba_types
from numba.extending import intrinsic
from numpy.typing import NDArray
from torch import Tensor

from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.release import NetworkRelease

__all__ = ["fast_kernels", "initial_network", "network_release", "train_networks"]

_Grads = tuple[Tensor, Tensor]  # where a layer's backward pass writes the gradients of its W and b
_ACTIVATIONS = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "elu": torch.nn.functional.elu,
    "gelu": torch.nn.functional.gelu,
}


def initial_network(sizes: Sequence[int], activation: str, generator: torch.Generator) -> list[tuple[Tensor, Tensor]]:
    """The initial ``(W, b)`` of each layer, W of shape (in, out), drawn from ``generator``: the numbers ``mlp``
    draws (:func:`privgame.mechanisms.dpsgd.models.init_parameters`: each layer's weights, then its bias), without
    building the module, which took 7x longer (a test checks they are equal; ``activation`` draws nothing)."""
    layers = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        w = torch.empty(fan_out, fan_in, device=generator.device)
        torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=generator)
        b = torch.empty(fan_out, device=generator.device)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        torch.nn.init.uniform_(b, -bound, bound, generator=generator)
        layers.append((w.T.contiguous(), b))
    return layers


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
    ``into``, when given, is where the backward pass writes W's and b's gradients (the optimiser's buffer), which
    it then does not return.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, x: Tensor, w: Tensor, b: Tensor, into: _Grads | None = None
    ) -> Tensor:
        ctx.save_for_backward(x, w)
        ctx.into = into  # type: ignore[attr-defined]
        return _linear(x, w, b)

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, g: Tensor
    ) -> tuple[Tensor | None, Tensor | None, Tensor | None, None]:
        x, w = ctx.saved_tensors  # type: ignore[attr-defined]
        into = ctx.into  # type: ignore[attr-defined]
        grad_x, grad_w, grad_b = _linear_backward(g, x, w, into, ctx.needs_input_grad[0])  # type: ignore[attr-defined]
        if into is not None:
            return grad_x, None, None, None
        return grad_x, grad_w, grad_b, None


def _linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """:class:`_BatchedLinear`'s forward pass."""
    if w.shape[2] < _NARROW:
        return torch.baddbmm(b.transpose(1, 2), w.transpose(1, 2), x.transpose(1, 2)).transpose(1, 2).contiguous()
    return torch.baddbmm(b, x, w)


def _linear_backward(
    g: Tensor, x: Tensor, w: Tensor, into: _Grads | None, input_grad: bool
) -> tuple[Tensor | None, Tensor, Tensor]:
    """:class:`_BatchedLinear`'s backward pass: the gradients at x (if ``input_grad``), W and b (into ``into``)."""
    grad_w, grad_b = into or (None, None)
    if w.shape[2] < _NARROW:
        product = torch.bmm(g.transpose(1, 2), x).transpose(1, 2)
        grad_w = product.contiguous() if grad_w is None else grad_w.copy_(product)
    else:
        grad_w = torch.bmm(x.transpose(1, 2), g, out=grad_w)
    grad_b = torch.sum(g, dim=1, keepdim=True, out=grad_b)
    return (torch.bmm(g, w.transpose(1, 2)) if input_grad else None), grad_w, grad_b


def _loss(logits: Tensor, labels: Tensor) -> Tensor:
    """The trainer's loss on logits (K, B, classes): the sum over models of each model's mean cross-entropy over its
    batch (model k's gradient is its own mean's)."""
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels, reduction="none")
    return loss.reshape(logits.shape[:2]).mean(dim=1).sum()


def _output_backward(h: Tensor, w: Tensor, b: Tensor, labels: Tensor, into: _Grads) -> Tensor:
    """The output layer on h (K, B, in) and :func:`_loss`, forward and backward, by the PyTorch operations that
    autograd runs for them (the same bits) but without its graph, which costs more than they do on a step of the
    LiRA benchmark: W's and b's gradients into ``into``; returns the gradient at h."""
    models, rows = h.shape[0], h.shape[1]
    log_p = torch.ops.aten._log_softmax(_linear(h, w, b).view(models * rows, -1), 1, False)  # cross_entropy's
    # the gradient at each example's cross-entropy: the sum's 1 divided by the batch's rows (each model's mean)
    g = torch.ones(models, 1).expand(models, rows) / rows
    g = torch.ops.aten.nll_loss_backward(g.reshape(-1), log_p, labels, None, 0, -100, torch.zeros(()))
    g = torch.ops.aten._log_softmax_backward_data(g, log_p, 1, log_p.dtype).view(models, rows, -1)
    grad_h, _, _ = _linear_backward(g, h, w, into, True)
    assert grad_h is not None
    return grad_h


class _FlatAdam:
    """Adam (Kingma and Ba 2015, as ``torch.optim.Adam`` without amsgrad) on parameters that are views of ONE flat
    buffer, its elementwise steps taken on the whole buffer at once.

    Why not ``torch.optim.Adam(fused=True)``: the fused CPU kernel rounds the elements of a vectorised body and of
    its scalar tail differently, and where a tensor's tail falls depends on how many models are stacked, so model
    k came out different in its last bits when trained in a batch of 3 rather than 4.  Each operation here is one
    of PyTorch's elementwise kernels, whose results do not depend on an element's position; so a model is the same
    to the bit whatever the batch it trains in (``tests/mechanisms/training/test_network.py``), which is what lets
    the engine choose batch sizes freely (docs/cluster.md).  One flat buffer keeps the step to a handful of
    kernels for every layer together.  With ``kernels``, the step is one numba kernel (:func:`_adam_step`): the
    same operations, the same bits.

    Parameters
    ----------
    tensors : sequence of Tensor
        The initial parameters; copied into the buffer, and :attr:`params` are leaf views of it, in this order.
    lr, weight_decay : float
        Adam's step size and L2 penalty (added to the gradient, as ``torch.optim.Adam``); β = (0.9, 0.999), ε = 1e-8.
    kernels : bool, default=False
        Whether to step with the numba kernels (CPU only; :func:`fast_kernels` says whether they agree).

    Notes
    -----
    The gradients are read from :attr:`grad` (the views :attr:`grads`, one per parameter), where the layers'
    backward passes write them (``into``) instead of leaving them in ``.grad`` to be concatenated every step.
    """

    def __init__(self, tensors: Sequence[Tensor], *, lr: float, weight_decay: float, kernels: bool = False) -> None:
        sizes = [t.numel() for t in tensors]
        self.flat = torch.cat([t.reshape(-1) for t in tensors])
        self.params = [
            view.view_as(t).requires_grad_(True) for view, t in zip(self.flat.split(sizes), tensors, strict=True)
        ]
        self.grad = torch.zeros_like(self.flat)
        self.grads = [view.view_as(t) for view, t in zip(self.grad.split(sizes), tensors, strict=True)]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, (0.9, 0.999), 1e-8
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        self.denominator = torch.empty_like(self.flat)  # allocated once: a fresh buffer every step costs page faults
        self.steps = 0
        self.kernels = kernels

    def coefficients(self) -> tuple[np.float32, ...]:
        """The next step's numbers as the kernels take them (:func:`_adam_part`), in float32 as PyTorch's
        operations take them: weight decay, ``1 - beta1``, ``beta2``, ``1 - beta2``, the second moment's bias
        correction ``sqrt(1 - beta2^t)``, ε and minus the step size ``lr / (1 - beta1^t)``."""
        steps = self.steps + 1
        beta1, beta2 = self.betas
        numbers = (self.weight_decay, 1 - beta1, beta2, 1 - beta2, math.sqrt(1 - beta2**steps), self.eps)
        return (*map(np.float32, numbers), np.float32(-self.lr / (1 - beta1**steps)))

    @torch.no_grad()
    def step(self, done: int = 0) -> None:
        """One Adam step on the gradients in :attr:`grad`, but for the first ``done`` elements of the buffers,
        which the caller stepped with :meth:`coefficients` (:func:`_sparse_step`, with ``kernels``)."""
        if self.kernels:
            part = slice(done, None)
            parts = [t[part].numpy() for t in (self.grad, self.flat, self.exp_avg, self.exp_avg_sq, self.denominator)]
            _adam_step(parts[0], parts[1], parts[2], parts[3], parts[4], self.coefficients())
            self.steps += 1
            return
        grad = self.grad
        self.steps += 1
        beta1, beta2 = self.betas
        step_size = self.lr / (1 - beta1**self.steps)
        correction = math.sqrt(1 - beta2**self.steps)
        if self.weight_decay:
            grad = grad.add(self.flat, alpha=self.weight_decay)
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denominator = torch.sqrt(self.exp_avg_sq, out=self.denominator).div_(correction).add_(self.eps)
        self.flat.addcdiv_(self.exp_avg, denominator, value=-step_size)


_NARROW = 8  # a layer with fewer outputs than this takes the transposed products
_SPARSE = 0.25  # a pool whose rows have at most this fraction of non-zeros feeds the first layer sparsely


class _SparseInputLinear(torch.autograd.Function):
    """The first layer on sparse inputs (one-hot encoded records): ``x W + b`` as sums of W's rows.

    Row (k, b) of x has at most m non-zeros, given as ``index`` (K·B, m), already offset into the stacked weights
    viewed as (K·in, out), and ``value`` (K·B, m), padded with zeros.  The forward pass is an ``embedding_bag``,
    about m/in of the dense product's work (on Adult's encoding 13 of 108 columns; it equals the dense product
    exactly there, the padded terms adding 0).  The weight gradient ``x^T g`` is the dense product on the
    gathered rows ``dense`` (K, B, in).  ``into`` as :class:`_BatchedLinear`'s.  (On the CPU, where
    :func:`fast_kernels` holds, the trainer computes this layer with :class:`_KernelSteps` instead.)
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        index: Tensor,
        value: Tensor,
        dense: Tensor,
        w: Tensor,
        b: Tensor,
        into: _Grads | None = None,
    ) -> Tensor:
        ctx.save_for_backward(dense)
        ctx.into = into  # type: ignore[attr-defined]
        k, rows, width = dense.shape
        z = torch.nn.functional.embedding_bag(
            index, w.reshape(k * width, -1), per_sample_weights=value, mode="sum"
        ).view(k, rows, -1)
        return z.add_(b)

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, g: Tensor
    ) -> tuple[None, None, None, Tensor | None, Tensor | None, None]:
        (dense,) = ctx.saved_tensors  # type: ignore[attr-defined]
        into = ctx.into  # type: ignore[attr-defined]
        grad_w, grad_b = into or (None, None)
        grad_w = torch.bmm(dense.transpose(1, 2), g, out=grad_w)
        grad_b = torch.sum(g, dim=1, keepdim=True, out=grad_b)
        if into is not None:
            return None, None, None, None, None, None
        return None, None, None, grad_w, grad_b, None


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


# -- CPU kernels -----------------------------------------------------------------------------------------------------
# Each kernel performs, element by element, the float32 operations of the PyTorch (or MKL) kernel it replaces, in
# the same order: a fused multiply-add (_fma) where PyTorch's vectorised code uses one (lerp, addcmul, add with
# alpha), and none where it does not; numba (without fastmath) neither fuses nor reorders.  They run in parallel
# over models (or chunks of the flat buffers), whose results do not depend on each other.

_TASK = 1 << 15  # elements of the flat buffers a task of the Adam step takes (its five parts stay in L2)
# MKL's float square root, vmsSqrt(n, a, r, mode), in the library PyTorch loaded (``_load_mkl``), in the mode
# PyTorch calls it in (ATen/cpu/vml.h: VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE)
_mkl_sqrt: Any = numba_types.ExternalFunction(
    "vmsSqrt", numba_types.void(numba_types.int32, numba_types.intp, numba_types.intp, numba_types.int64)
)
_VML_MODE = 0x2 | 0x140000 | 0x100
# MKL's MKL_Set_Num_Threads_Local(n) (the previous value; 0: the global one): the kernels call MKL from their own
# threads, where MKL would otherwise start threads of its own (PyTorch's OpenMP) inside each call
_mkl_threads: Any = numba_types.ExternalFunction("MKL_Set_Num_Threads_Local", numba_types.int32(numba_types.int32))


def _fma_intrinsic(typingctx, a, b, c):
    """``a * b + c`` in float32, rounded once (LLVM's fma), as PyTorch's ``vec::fmadd``."""
    signature = numba_types.float32(numba_types.float32, numba_types.float32, numba_types.float32)

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return signature, codegen


_fma: Any = intrinsic(_fma_intrinsic)  # Any: numba's stubs type the call as the typing function's


@numba.njit(cache=True, nogil=True, error_model="numpy")  # numpy: no division checks
def _row_sums(w, cols, vals, i, out):
    """``out = x[i] W`` for one model's weights ``W`` (in, out), row i of x given as ``vals[i]`` at columns
    ``cols[i]`` (:func:`_sparse_rows`): ``embedding_bag``'s sum, from 0, a fused multiply-add per term in the row's
    order (padding included)."""
    zero = np.float32(0.0)
    out[:] = zero
    for t in range(cols.shape[1]):
        v = vals[i, t]
        row = w[cols[i, t]]
        for j in range(out.shape[0]):
            out[j] = _fma(v, row[j], out[j])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _adam_part(g, p, m, v, r, coefficients):
    """:class:`_FlatAdam`'s PyTorch operations on one part of its buffers (g the gradient, p the parameters, m and v
    the moments, r room for the root; ``coefficients`` as :meth:`_FlatAdam.coefficients` gives them, ``(weight_decay,
    weight, beta2, one_minus_beta2, correction, eps, value)``): ``g.add(p, alpha=weight_decay)`` (when not 0),
    ``m.lerp_(g, weight)``, ``v.mul_(beta2).addcmul_(g, g, value=one_minus_beta2)``, ``r = v.sqrt()`` (MKL's
    function, which ``torch.sqrt`` calls, in this thread only: its results do not depend on the part) and
    ``p.addcdiv_(m, (r / correction).add_(eps), value=value)``."""
    weight_decay, weight, beta2, one_minus_beta2, correction, eps, value = coefficients
    n = g.shape[0]
    for i in range(n):
        gi = _fma(p[i], weight_decay, g[i]) if weight_decay != 0 else g[i]
        m[i] = _fma(weight, gi - m[i], m[i])
        v[i] = _fma(one_minus_beta2 * gi, gi, v[i] * beta2)
    threads = _mkl_threads(1)
    _mkl_sqrt(n, v.ctypes.data, r.ctypes.data, _VML_MODE)
    _mkl_threads(threads)
    for i in range(n):
        p[i] = p[i] + (value * m[i]) / (r[i] / correction + eps)


@numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _adam_step(grad, flat, exp_avg, exp_avg_sq, root, coefficients):
    """:func:`_adam_part` on the whole buffers, in parts that stay in cache (one parallel task each)."""
    n = grad.shape[0]
    for task in numba.prange((n + _TASK - 1) // _TASK):
        start = task * _TASK
        stop = min(n, start + _TASK)
        part = slice(start, stop)
        _adam_part(
            grad[part],
            flat[part],
            exp_avg[part],
            exp_avg_sq[part],
            root[part],
            coefficients,
        )


@numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _sparse_sums(batch, cols, vals, w, out):
    """The sparse first layer's sums ``out[k, r] = x[batch[k, r]] W[k]`` (:func:`_row_sums`, bias not added)."""
    for k in numba.prange(batch.shape[0]):
        for r in range(batch.shape[1]):
            _row_sums(w[k], cols, vals, batch[k, r], out[k, r])


@numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _bias_activation(z, b, relu):
    """``z = relu(z + b)`` in place (``relu``; else ``z + b``): :class:`_SparseInputLinear`'s ``add_(b)``, then
    ``torch.relu``'s ``clamp_min(0)``, which sets the negative numbers to 0 (-0 and NaN stay)."""
    zero = np.float32(0.0)
    for k in numba.prange(z.shape[0]):
        bk = b[k, 0]
        for r in range(z.shape[1]):
            o = z[k, r]
            for j in range(o.shape[0]):
                s = o[j] + bk[j]
                o[j] = zero if relu and s < zero else s


@numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _sparse_step(
    batch,
    following,
    cols,
    vals,
    h,
    relu,
    g,
    w,
    exp_avg,
    exp_avg_sq,
    grad,
    root,
    coefficients,
    sums,
):
    """The sparse first layer's weights, model by model: their gradient, their Adam step and the sums of the
    following batch, while they are in cache.

    With ``relu``, ``g`` (the gradient at the layer's ReLU output ``h``) is first set to 0 in place where h is not
    positive (``threshold_backward(g, h, 0)``), which makes it the gradient at the layer, whose sum over the batch
    the caller takes.  The weight gradient ``x[batch[k]]^T g[k]`` is MKL's batched product on the dense rows (the
    bmm of :class:`_SparseInputLinear`): each output a running fused multiply-add over the batch's rows in order,
    from 0 (a row's zeros, skipped here, add 0 there, which can only change the sign of a zero gradient, and
    Adam's moments and step are the same for either sign).  Then :func:`_adam_part` on W[k] (``exp_avg`` and
    ``exp_avg_sq`` are the moments' parts for W, as W (K, in, out)), and ``sums[k, r] = x[following[k, r]] W[k]``
    with the new W (:func:`_row_sums`).  ``grad`` and ``root`` (threads, in · out) are room for each thread.
    """
    models, rows = batch.shape
    width, size = w.shape[2], w.shape[1] * w.shape[2]
    zero = np.float32(0.0)
    for k in numba.prange(models):
        room = numba.get_thread_id()
        gradient = grad[room].reshape((w.shape[1], width))
        gradient[:] = zero
        for r in range(rows):
            gr = g[k, r]
            if relu:
                for j in range(width):
                    if h[k, r, j] <= zero:
                        gr[j] = zero
            i = batch[k, r]
            for t in range(cols.shape[1]):
                v = vals[i, t]
                if v != zero:
                    row = gradient[cols[i, t]]
                    for j in range(width):
                        row[j] = _fma(v, gr[j], row[j])
        _adam_part(
            grad[room],
            w[k].reshape(size),
            exp_avg[k].reshape(size),
            exp_avg_sq[k].reshape(size),
            root[room],
            coefficients,
        )
        for r in range(following.shape[1]):
            _row_sums(w[k], cols, vals, following[k, r], sums[k, r])


_AGREE: dict[tuple[int, ...], bool] = {}  # fast_kernels' answers, once a process for each shape


def fast_kernels(shape: tuple[int, int, int, int] | None = None) -> bool:
    """Whether the CPU kernels give PyTorch's results to the bit on this machine: the Adam step's, or with
    ``shape``, the sparse first layer's for ``(in, out, rows, terms)`` (a batch of ``rows`` rows a model, each with
    at most ``terms`` non-zeros).

    The kernels replicate the order of operations of PyTorch's kernels and of the BLAS under them, which a shape
    can change (MKL's batched product accumulates otherwise for fewer than 12 output columns, here) and so can
    another build or CPU.  So each is checked against PyTorch's operations on a random problem of the shape, once
    a process (milliseconds, once numba has compiled the kernels: the first time, several seconds), and where a bit
    is apart, or the kernels fail to compile, the trainer takes PyTorch's operations: a model never depends on
    which code trained it.
    """
    key = shape or ()
    if key not in _AGREE:
        try:
            _AGREE[key] = _layer_kernels_agree(*shape) if shape else _adam_kernels_agree()
        except Exception:  # any failure to compile or run them: PyTorch's operations instead
            _AGREE[key] = False
    return _AGREE[key]


def _layer_kernels_agree(width: int, out: int, rows: int, terms: int) -> bool:
    """:class:`_KernelSteps`' kernels against PyTorch's operations on the sparse first layer with ReLU: its output
    (sums, bias, ReLU), its gradient, an Adam step of its weights (from moments that include zeros) and the
    following batch's sums with them.  On random rows with ``terms`` non-zeros (some fewer: padded), then with
    every column non-zero (so that each output of the weight gradient sums ``rows`` terms, whose order the check
    then sees); with weight decay, then without."""
    _load_mkl()
    gen = torch.Generator().manual_seed(0)
    models, n, room = 2, rows + 5, numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    agree = True
    for x, weight_decay in (
        (
            torch.zeros(n, width).scatter_(
                1, torch.randint(0, width, (n, terms), generator=gen), torch.rand(n, terms, generator=gen)
            ),
            0.01,
        ),
        (torch.randn(n, width, generator=gen), 0.0),
    ):
        x[::3, 0] = 1.0
        cols = torch.sort((x == 0).to(torch.int8), dim=1, stable=True).indices[:, : int((x != 0).sum(1).max())]
        vals = torch.gather(x, 1, cols)
        cols = cols.masked_fill(vals == 0, 0)
        batch, following = torch.randint(0, n, (2, models, rows), generator=gen)
        w, b = torch.randn(models, width, out, generator=gen), torch.randn(models, 1, out, generator=gen)
        g = torch.randn(models, rows, out, generator=gen)
        # PyTorch's operations
        offsets = torch.arange(models).mul_(width).view(-1, 1, 1)
        h = torch.relu(
            _SparseInputLinear.apply(
                (cols[batch] + offsets).view(models * rows, -1), vals[batch.view(-1)], x[batch], w, b
            )
        )
        g_layer = torch.ops.aten.threshold_backward(g, h, 0)
        adam = _FlatAdam([w], lr=1e-3, weight_decay=weight_decay)
        adam.exp_avg.normal_(generator=gen).mul_(1e-3)[::7] = 0.0
        adam.exp_avg_sq.uniform_(generator=gen).mul_(1e-6)[::5] = 0.0
        moments = adam.exp_avg.clone().view_as(w), adam.exp_avg_sq.clone().view_as(w)
        adam.grad.copy_(torch.bmm(x[batch].transpose(1, 2), g_layer).view(-1))
        coefficients = adam.coefficients()
        adam.step()
        stepped = adam.params[0].detach()
        sums = torch.nn.functional.embedding_bag(
            (cols[following] + offsets).view(models * rows, -1),
            stepped.reshape(-1, out),
            per_sample_weights=vals[following.view(-1)],
            mode="sum",
        ).view(models, rows, out)
        # the kernels
        fast_h, fast_sums = torch.empty_like(h), torch.empty_like(h)
        _sparse_sums(batch.numpy(), cols.numpy(), vals.numpy(), w.numpy(), fast_h.numpy())
        _bias_activation(fast_h.numpy(), b.numpy(), True)
        fast_w, fast_m, fast_v = w.clone(), moments[0], moments[1]
        _sparse_step(
            batch.numpy(),
            following.numpy(),
            cols.numpy(),
            vals.numpy(),
            fast_h.numpy(),
            True,
            g.numpy(),
            fast_w.numpy(),
            fast_m.numpy(),
            fast_v.numpy(),
            np.empty((room, width * out), dtype=np.float32),
            np.empty((room, width * out), dtype=np.float32),
            coefficients,
            fast_sums.numpy(),
        )
        agree &= _same_bits(fast_h, h) and _same_bits(g, g_layer) and _same_bits(fast_w, stepped)
        agree &= _same_bits(fast_m.view(-1), adam.exp_avg) and _same_bits(fast_v.view(-1), adam.exp_avg_sq)
        agree &= _same_bits(fast_sums, sums)
    return agree


def _adam_kernels_agree() -> bool:
    """Three steps of :class:`_FlatAdam` with and without the kernels, with and without weight decay, on more
    elements than a task takes and from second moments that include 0, subnormal numbers and large ones."""
    _load_mkl()
    gen = torch.Generator().manual_seed(0)
    agree = True
    for weight_decay in (0.0, 0.01):
        start = [torch.randn(_TASK + 7, generator=gen), torch.randn(3, 5, generator=gen)]
        slow = _FlatAdam(start, lr=1e-3, weight_decay=weight_decay)
        fast = _FlatAdam(start, lr=1e-3, weight_decay=weight_decay, kernels=True)
        second = torch.rand(slow.flat.shape, generator=gen)
        second[::5], second[1::5], second[2::5] = 0.0, 1e-41, 1e6
        slow.exp_avg_sq.copy_(second)
        fast.exp_avg_sq.copy_(second)
        for _ in range(3):
            fast.grad.copy_(slow.grad.copy_(torch.randn(slow.grad.shape, generator=gen).mul_(1e-3)))
            slow.step()
            fast.step()
        for a, b in ((slow.flat, fast.flat), (slow.exp_avg, fast.exp_avg), (slow.exp_avg_sq, fast.exp_avg_sq)):
            agree &= _same_bits(a, b)
    return agree


def _load_mkl() -> None:
    """Give numba's linker the addresses of MKL's ``vmsSqrt`` and ``MKL_Set_Num_Threads_Local`` (``_mkl_sqrt``,
    ``_mkl_threads``) in the library PyTorch loaded.

    Before any kernel that calls it is compiled or loaded from numba's cache: a symbol the linker cannot find
    aborts the process, where this raises.

    Raises
    ------
    OSError, AttributeError
        Where there is no such library or function (another platform, a build without MKL: no Adam kernel).
    """
    library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    for name in ("vmsSqrt", "MKL_Set_Num_Threads_Local"):
        llvm.add_symbol(name, ctypes.cast(getattr(library, name), ctypes.c_void_p).value)


def _same_bits(a: Tensor, b: Tensor) -> bool:
    return bool(torch.equal(a.view(torch.int32), b.view(torch.int32)))  # -0 is not +0, and NaN is itself


def _layer_kernels(width: int, out: int, n: int, batch_size: int, sparse_rows: tuple[Tensor, Tensor]) -> bool:
    """Whether the first-layer kernels agree on the shapes a training of ``n`` rows a model takes: its batches
    and its last (smaller) one."""
    terms = sparse_rows[0].shape[1]
    batches = {min(n, batch_size), n - (math.ceil(n / batch_size) - 1) * batch_size} if n else set()
    return all(fast_kernels((width, out, rows, terms)) for rows in batches)


def _forward(
    params: Sequence[Tensor],
    x: Tensor,
    activation: str,
    sparse: tuple[Tensor, Tensor] | None = None,
    grads: Sequence[Tensor] | None = None,
) -> Tensor:
    """Batched forward pass: ``params`` alternate W (K, in, out) and b (K, 1, out); x (K, B, in).

    ``sparse``, when given, is x's rows as ``(index, value)`` for :class:`_SparseInputLinear`, taken by the first
    layer (given only when that layer is not narrow).  ``grads``, when given, are where the backward pass writes
    the parameters' gradients (as ``params``; the parameters then get no ``.grad``).
    """
    h = x
    last = len(params) // 2 - 1
    for k in range(last + 1):
        w, b = params[2 * k], params[2 * k + 1]
        into = None if grads is None else (grads[2 * k], grads[2 * k + 1])
        if k == 0 and sparse is not None:
            h = _SparseInputLinear.apply(sparse[0], sparse[1], h, w, b, into)
        else:
            h = _BatchedLinear.apply(h, w, b, into)
        if k < last:
            h = _ACTIVATIONS[activation](h)
    return h


class _TorchSteps:
    """A training step's passes by PyTorch's operations (any device; any pool, sparse or dense).

    Parameters
    ----------
    x : Tensor
        The pool's rows (N, in).
    sparse_rows : tuple of Tensor or None
        Their non-zeros (:func:`_sparse_rows`) when the first layer takes them.
    params, grads : sequence of Tensor
        The parameters and where their gradients go (:class:`_FlatAdam`'s).
    activation : str
    rows : int
        The most rows a step takes (K times the batch size).
    """

    def __init__(
        self,
        x: Tensor,
        sparse_rows: tuple[Tensor, Tensor] | None,
        params: Sequence[Tensor],
        grads: Sequence[Tensor],
        activation: str,
        rows: int,
    ) -> None:
        self.x, self.sparse_rows, self.params, self.grads, self.activation = x, sparse_rows, params, grads, activation
        self.buffer = torch.empty(rows, x.shape[1], device=x.device)
        # model i's rows index the stacked first-layer weights viewed as (K·in, out) from i·in on
        self.first_row = torch.arange(params[0].shape[0], device=x.device).mul_(x.shape[1]).unsqueeze(1)

    def start(self, batch: Tensor | None) -> None:
        """Nothing (as :meth:`_KernelSteps.start`)."""

    def step(self, batch: Tensor, flat: Tensor, labels: Tensor, following: Tensor | None) -> int:
        """The forward and backward passes on the models' batches ``batch`` (K, B) of pool rows (``flat``: the
        same, flattened; ``labels``: theirs), which write every gradient; 0 (as :meth:`_KernelSteps.step`)."""
        # index_select: several times faster than x[batch] on CPU
        inputs = torch.index_select(self.x, 0, flat, out=self.buffer[: flat.shape[0]]).view(*batch.shape, -1)
        sparse = None
        if self.sparse_rows is not None:
            index = torch.index_select(self.sparse_rows[0], 0, flat).view(*batch.shape, -1)
            index.add_(self.first_row.unsqueeze(2))
            sparse = (index.view(flat.shape[0], -1), torch.index_select(self.sparse_rows[1], 0, flat))
        _loss(_forward(self.params, inputs, self.activation, sparse, self.grads), labels).backward()
        return 0


class _KernelSteps:
    """Training steps with the sparse first layer by the CPU kernels and the rest of the network by PyTorch.

    The first layer's output (after its ReLU, which the kernels apply, or before another activation) feeds the
    rest of the network: with ReLU and one hidden layer, the output layer and the loss by
    :func:`_output_backward`; otherwise as a leaf of autograd's graph.  From the gradient there, :func:`_sparse_step`
    takes the layer's backward pass, steps its weights and computes the following batch's sums with them.  Its
    bias and the other layers take :class:`_FlatAdam`'s step.

    Parameters
    ----------
    sparse_rows : tuple of Tensor
        The pool's non-zeros (:func:`_sparse_rows`).
    optimiser : _FlatAdam
        With ``kernels``, on the CPU.
    activation : str
    rows : int
        The most rows a step takes (K times the batch size).
    """

    def __init__(self, sparse_rows: tuple[Tensor, Tensor], optimiser: _FlatAdam, activation: str, rows: int) -> None:
        self.cols, self.vals = sparse_rows[0].numpy(), sparse_rows[1].numpy()
        self.optimiser, self.activation = optimiser, activation
        params = optimiser.params
        self.w, self.b = params[0].detach().numpy(), params[1].detach().numpy()  # views: Adam updates them in place
        size = params[0].numel()
        self.exp_avg, self.exp_avg_sq = (
            t[:size].view_as(params[0]).numpy() for t in (optimiser.exp_avg, optimiser.exp_avg_sq)
        )
        self.relu = activation == "relu" and len(params) > 2
        # the sums of the batch a step takes and of the following one, which the step computes
        self.sums = [torch.empty(rows * params[0].shape[2]), torch.empty(rows * params[0].shape[2])]
        threads = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
        self.grad = np.empty((threads, self.w[0].size), dtype=np.float32)
        self.root = np.empty((threads, self.w[0].size), dtype=np.float32)
        self.batch = np.empty((0, 0), dtype=np.int64)

    def _sums(self, batch: Tensor | None) -> tuple[NDArray[np.int64], Tensor]:
        rows = np.ascontiguousarray(batch.numpy()) if batch is not None else np.empty((self.w.shape[0], 0), np.int64)
        return rows, self.sums[0][: rows.size * self.w.shape[2]].view(*rows.shape, self.w.shape[2])

    def start(self, batch: Tensor | None) -> None:
        """The first batch's sums."""
        rows, sums = self._sums(batch)
        _sparse_sums(rows, self.cols, self.vals, self.w, sums.numpy())

    def step(self, batch: Tensor, flat: Tensor, labels: Tensor, following: Tensor | None) -> int:
        """The forward and backward passes on the models' batches ``batch`` (K, B) of pool rows (with ``labels``;
        ``flat`` unused), the first layer's weights' step, then the sums of the ``following`` batch (None: none);
        how many leading elements of the optimiser's buffers it stepped."""
        self.batch, first = self._sums(batch)
        _bias_activation(first.numpy(), self.b, self.relu)
        params, grads = self.optimiser.params, self.optimiser.grads
        if self.relu and len(params) == 4:
            g = _output_backward(first, params[2].detach(), params[3].detach(), labels, (grads[2], grads[3]))
        else:
            leaf = first.requires_grad_(True)
            h = leaf if self.relu or len(params) == 2 else _ACTIVATIONS[self.activation](leaf)
            _loss(_forward(params[2:], h, self.activation, grads=grads[2:]), labels).backward()
            assert leaf.grad is not None
            g = leaf.grad.contiguous()
        h = first.detach()
        self.sums.reverse()  # the following batch's sums go to the other buffer
        rows, sums = self._sums(following)
        coefficients = self.optimiser.coefficients()
        _sparse_step(
            self.batch,
            rows,
            self.cols,
            self.vals,
            h.numpy(),
            self.relu,
            g.numpy(),
            self.w,
            self.exp_avg,
            self.exp_avg_sq,
            self.grad,
            self.root,
            coefficients,
            sums.numpy(),
        )
        torch.sum(g, dim=1, keepdim=True, out=self.optimiser.grads[1])
        return self.w.size


def _batches(rows: Tensor, generators: Sequence[torch.Generator], epochs: int, size: int) -> Iterator[Tensor]:
    """The models' batches (K, ≤ size) of pool rows, epoch after epoch: each model's rows ``rows[i]`` in an order
    drawn afresh every epoch from its generator, in batches of ``size`` (the last one smaller)."""
    n = rows.shape[1]
    for _ in range(epochs):
        # one gather for every model: 256 indexings took about as long as the 256 permutations
        permutations = torch.stack([torch.randperm(n, generator=g, device=rows.device) for g in generators])
        order = torch.gather(rows, 1, permutations)
        for start in range(0, n, size):
            yield order[:, start : start + size]


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
    cpu = device.type == "cpu"
    kernels = cpu and fast_kernels()  # the Adam step's (the first layer's are checked on its shapes below)
    threads = numba.get_num_threads() if cpu else 0
    if cpu:  # the kernels take as many threads as PyTorch (which the caller may have limited)
        limit = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
        numba.set_num_threads(max(1, min(torch.get_num_threads(), limit)))
    counts = masks.sum(axis=1)
    out: list[NetworkRelease | None] = [None] * len(generators)
    try:
        for n in np.unique(counts):
            group = np.flatnonzero(counts == n)
            gens = [generators[int(k)] for k in group]
            layers = [initial_network(sizes, activation, g) for g in gens]
            stacked: list[Tensor] = []
            for depth in range(len(layers[0])):
                stacked.append(torch.stack([lay[depth][0] for lay in layers]))
                stacked.append(torch.stack([lay[depth][1] for lay in layers]).unsqueeze(1))
            optimiser = _FlatAdam(stacked, lr=learning_rate, weight_decay=weight_decay, kernels=kernels)
            params, grads = optimiser.params, optimiser.grads
            rows = torch.from_numpy(np.stack([np.flatnonzero(masks[k]) for k in group])).to(device)  # (G, n)
            most = len(group) * min(batch_size, int(n))
            trainer: _TorchSteps | _KernelSteps
            if (
                sparse_rows is not None
                and kernels
                and _layer_kernels(x.shape[1], sizes[1], int(n), batch_size, sparse_rows)
            ):
                trainer = _KernelSteps(sparse_rows, optimiser, activation, most)
            else:
                trainer = _TorchSteps(x, sparse_rows, params, grads, activation, most)
            # each step looks one batch ahead (the kernels compute its sums): an epoch's orders are drawn when its
            # first batch is looked at, from the models' own generators, which draw nothing else meanwhile
            batches = _batches(rows, gens, epochs, batch_size)
            batch = next(batches, None)
            trainer.start(batch)
            while batch is not None:
                following = next(batches, None)
                flat = batch.reshape(-1)
                optimiser.step(done=trainer.step(batch, flat, torch.index_select(y, 0, flat), following))
                batch = following
            for i, k in enumerate(group):
                trained = [(params[2 * d][i], params[2 * d + 1][i, 0]) for d in range(len(params) // 2)]
                out[k] = network_release(trained, activation)
    finally:
        if cpu:
            numba.set_num_threads(threads)
    return [r for r in out if r is not None]
