"""What a trained-model mechanism publishes: a model that scores any record, through one protocol.

Every attack on a model reads it through :class:`ModelRelease` (never by probing attributes): ``logits(x)``,
``probabilities(x)``, ``losses(x, y)`` and LiRA's logit-scaled ``confidence(x, y)``.  White-box access (the
parameters) is a separate, explicit capability: ``to_arrays()``, which is also the release's codec for the
artefact cache (:mod:`privgame.mechanisms.cached`): plain arrays in an npz, never a pickle, and :func:`decode_release`
rebuilds the release from them.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

__all__ = [
    "ACTIVATIONS",
    "PROBABILITY_FLOOR",
    "ConvNetRelease",
    "LookupRelease",
    "ModelRelease",
    "ModuleRelease",
    "NetworkRelease",
    "TreeEnsembleRelease",
    "UnscoredRecordError",
    "check_channels",
    "check_image",
    "decode_release",
    "row_digests",
]

ACTIVATIONS = ("relu", "tanh", "elu", "gelu")


def _features(x: Any, n_features: int, dtype: Any = np.float32) -> NDArray[Any]:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[1] != n_features:
        raise ValueError(f"x must have shape (n, {n_features}), got {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"x must be a real array, got dtype {arr.dtype}.")
    return np.ascontiguousarray(arr, dtype=dtype)


class ModelRelease(ABC):
    """A trained classifier, as released: it scores any record of the feature space it was trained on."""

    kind: ClassVar[str]
    n_features: int
    n_classes: int

    @abstractmethod
    def logits(self, x: Any) -> NDArray[np.float64]:
        """Logits of shape ``(n, n_classes)`` (softmax gives the probabilities) of the records ``x`` (n, d)."""

    @abstractmethod
    def to_arrays(self) -> dict[str, NDArray[Any]]:
        """The release as plain arrays (the white-box view, and the cache's codec; ``kind`` included)."""

    def imports(self) -> tuple[str, ...]:
        """The import paths this release imports when used (a user model's factory); none by default.

        A release read back from the artefact cache may name only what its mechanism names
        (:func:`privgame.mechanisms.cached.cached_release_many`): a cache entry is a file, and a name in a file is
        never imported on its word (:mod:`privgame.core.trust`).
        """
        return ()

    def probabilities(self, x: Any) -> NDArray[np.float64]:
        """Class probabilities ``(n, n_classes)``."""
        z = self.logits(x)
        return np.exp(z - logsumexp(z, axis=1, keepdims=True))

    def losses(self, x: Any, y: Any) -> NDArray[np.float64]:
        """Per-record cross-entropy ``−log p_y`` of shape ``(n,)``, from the logits (stable)."""
        z = self.logits(x)
        labels = self._labels(y, z.shape[0])
        return logsumexp(z, axis=1) - z[np.arange(z.shape[0]), labels]

    def confidence(self, x: Any, y: Any) -> NDArray[np.float64]:
        """LiRA's logit-scaled confidence ``log p_y − log Σ_{y'≠y} p_{y'}`` of shape ``(n,)``.

        Computed from the logits as ``z_y − logsumexp(z_{y'≠y})``, exact at any margin.  The reference code
        computes ``log(p_y + 1e-45) − log(Σ_{y'≠y} p_{y'} + 1e-45)`` from float64 probabilities: finite, equal to
        this within about 2e-6 where |confidence| ≤ 50, and capped at about 103.6 (docs/lira.md).

        References
        ----------
        .. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis, F. Tramèr. Membership Inference Attacks From
           First Principles. IEEE S&P 2022, arXiv:2112.03570, §4.
        """
        return self.confidence_from_logits(self.logits(x), y)

    def confidence_from_logits(self, z: NDArray[np.float64], y: Any) -> NDArray[np.float64]:
        """:meth:`confidence` from logits ``z`` already computed (one forward pass serves several scores)."""
        labels = self._labels(y, z.shape[0])
        rows = np.arange(z.shape[0])
        own = z[rows, labels]
        others = z.copy()
        others[rows, labels] = -np.inf
        return own - logsumexp(others, axis=1)

    def _labels(self, y: Any, n: int) -> NDArray[np.intp]:
        labels = np.asarray(y)
        if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"y must be an integer array of shape ({n},), got {labels.dtype} {labels.shape}.")
        if n and (labels.min() < 0 or labels.max() >= self.n_classes):
            raise ValueError(f"y must hold labels in 0..{self.n_classes - 1}, got {labels.min()}..{labels.max()}.")
        return labels.astype(np.intp)


@dataclass(frozen=True, eq=False)
class NetworkRelease(ModelRelease):
    """A fully connected network (logistic regression when it has one layer): ``x W₁ + b₁ → act → … → logits``.

    Parameters
    ----------
    weights : tuple of ndarray of shape (in, out), float32
    biases : tuple of ndarray of shape (out,), float32
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
        Between layers (not after the last).
    """

    kind: ClassVar[str] = "network"

    weights: tuple[NDArray[np.float32], ...]
    biases: tuple[NDArray[np.float32], ...]
    activation: str = "relu"
    n_features: int = field(init=False)
    n_classes: int = field(init=False)

    def __post_init__(self) -> None:
        if len(self.weights) < 1 or len(self.weights) != len(self.biases):
            raise ValueError(
                f"weights and biases must be one per layer, got {len(self.weights)} and {len(self.biases)}."
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")
        ws = tuple(np.ascontiguousarray(w, dtype=np.float32) for w in self.weights)
        bs = tuple(np.ascontiguousarray(b, dtype=np.float32) for b in self.biases)
        for k, (w, b) in enumerate(zip(ws, bs, strict=True)):
            if w.ndim != 2 or b.shape != (w.shape[1],) or (k and w.shape[0] != ws[k - 1].shape[1]):
                raise ValueError(f"layer {k} has weights {w.shape} and biases {b.shape} that do not chain.")
        object.__setattr__(self, "weights", ws)
        object.__setattr__(self, "biases", bs)
        object.__setattr__(self, "n_features", int(ws[0].shape[0]))
        object.__setattr__(self, "n_classes", int(ws[-1].shape[1]))

    def logits(self, x: Any) -> NDArray[np.float64]:
        h = _features(x, self.n_features)
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w + b
            if k < last:
                h = _activate(h, self.activation)
        return h.astype(np.float64)

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        out: dict[str, NDArray[Any]] = {"kind": np.array(self.kind), "activation": np.array(self.activation)}
        for k, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            out[f"w{k}"], out[f"b{k}"] = w, b
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, NDArray[Any]]) -> NetworkRelease:
        layers = sum(1 for key in arrays if key.startswith("w") and key[1:].isdigit())
        return cls(
            weights=tuple(arrays[f"w{k}"] for k in range(layers)),
            biases=tuple(arrays[f"b{k}"] for k in range(layers)),
            activation=str(arrays["activation"]),
        )


def _activate(h: NDArray[np.float32], activation: str) -> NDArray[np.float32]:
    if activation == "relu":
        return np.maximum(h, 0)
    if activation == "tanh":
        return np.tanh(h)
    if activation == "elu":
        return np.where(h > 0, h, np.expm1(np.minimum(h, 0)))
    from scipy.special import erf  # gelu, torch's exact form

    return (0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))).astype(np.float32)


@dataclass(frozen=True, eq=False)
class TreeEnsembleRelease(ModelRelease):
    """Gradient-boosted regression trees on the logits: ``raw = baseline + Σ_t tree_t(x)`` per class.

    The trees are padded to one node count: ``feature``, ``threshold``, ``left``, ``right``, ``value`` and ``leaf``
    of shape ``(T, nodes)``; a record goes left where ``x[feature] <= threshold``.  ``tree_class`` (T,) says which
    raw output each tree adds to.  Two classes use one raw output (the log-odds of class 1), returned as the
    logits ``(0, raw)``.

    Parameters
    ----------
    feature, left, right : ndarray of shape (T, nodes), int32
    threshold, value : ndarray of shape (T, nodes), float64
    leaf : ndarray of shape (T, nodes), bool
    tree_class : ndarray of shape (T,), int32
    baseline : ndarray of shape (outputs,), float64
    n_features, n_classes : int
    """

    kind: ClassVar[str] = "trees"

    feature: NDArray[np.int32]
    threshold: NDArray[np.float64]
    left: NDArray[np.int32]
    right: NDArray[np.int32]
    value: NDArray[np.float64]
    leaf: NDArray[np.bool_]
    tree_class: NDArray[np.int32]
    baseline: NDArray[np.float64]
    n_features: int
    n_classes: int

    def __post_init__(self) -> None:
        shape = np.shape(self.feature)
        for name in ("threshold", "left", "right", "value", "leaf"):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"{name} must have the shape of feature {shape}, got {np.shape(getattr(self, name))}.")
        outputs = 1 if self.n_classes == 2 else self.n_classes
        if np.shape(self.baseline) != (outputs,) or np.shape(self.tree_class) != shape[:1]:
            raise ValueError(f"baseline must have shape ({outputs},) and tree_class ({shape[0]},).")

    def raw(self, x: Any) -> NDArray[np.float64]:
        """The raw outputs ``(n, outputs)``: the baseline plus every tree's leaf value."""
        xs = _features(x, self.n_features, np.float64)  # compared with float64 thresholds, as scikit-learn does
        n, (t, width) = xs.shape[0], self.feature.shape
        feature, threshold = self.feature.ravel(), self.threshold.ravel()
        left, right, leaf = self.left.ravel(), self.right.ravel(), self.leaf.ravel()
        base = (np.arange(t, dtype=np.int64) * width)[:, None]  # flat index of each tree's root
        node = np.broadcast_to(base, (t, n)).copy()
        cells = (np.arange(n, dtype=np.int64) * self.n_features)[None, :]
        flat_x = xs.ravel()
        active = np.ones((t, n), dtype=bool)
        for _ in range(width):
            active &= ~leaf[node]
            if not active.any():
                break
            at = node[active]
            go_left = flat_x[np.broadcast_to(cells, (t, n))[active] + feature[at]] <= threshold[at]
            node[active] = np.where(go_left, left[at], right[at]) + np.broadcast_to(base, (t, n))[active]
        leaf_values = self.value.ravel()[node]  # (T, n)
        out = np.tile(self.baseline, (n, 1))
        for c in range(out.shape[1]):
            out[:, c] += leaf_values[self.tree_class == c].sum(axis=0)
        return out

    def logits(self, x: Any) -> NDArray[np.float64]:
        raw = self.raw(x)
        return np.column_stack([np.zeros(raw.shape[0]), raw[:, 0]]) if self.n_classes == 2 else raw

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        return {
            "kind": np.array(self.kind),
            "feature": self.feature,
            "threshold": self.threshold,
            "left": self.left,
            "right": self.right,
            "value": self.value,
            "leaf": self.leaf,
            "tree_class": self.tree_class,
            "baseline": self.baseline,
            "sizes": np.array([self.n_features, self.n_classes], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, NDArray[Any]]) -> TreeEnsembleRelease:
        n_features, n_classes = (int(v) for v in arrays["sizes"])
        return cls(
            **{k: np.asarray(arrays[k]) for k in ("feature", "threshold", "left", "right", "value", "leaf")},
            tree_class=np.asarray(arrays["tree_class"]),
            baseline=np.asarray(arrays["baseline"]),
            n_features=n_features,
            n_classes=n_classes,
        )


@dataclass(frozen=True, eq=False)
class ConvNetRelease(ModelRelease):
    """A small CNN on flat image rows: two ``3×3 conv (padding 1) → act → 2×2 max-pool`` blocks, then a linear layer.

    The architecture of :func:`privgame.mechanisms.dpsgd.models.conv_net`; the forward pass here is numpy (each
    convolution as one product of the 3×3 patches with the kernels), equal to torch's to float32 rounding (tested).

    Parameters
    ----------
    image : tuple of three ints
        (channels, height, width) of the input; a row of ``x`` holds C·H·W values in that (row-major) order.
    conv_weights : tuple of two ndarrays of shape (out, in, 3, 3), float32
    conv_biases : tuple of two ndarrays of shape (out,), float32
    weight : ndarray of shape (n_classes, c2·⌊H/4⌋·⌊W/4⌋), float32
        The last layer, on the flattened (channel, row, column) features, as torch's ``nn.Linear``.
    bias : ndarray of shape (n_classes,), float32
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
    """

    kind: ClassVar[str] = "convnet"

    image: tuple[int, int, int]
    conv_weights: tuple[NDArray[np.float32], ...]
    conv_biases: tuple[NDArray[np.float32], ...]
    weight: NDArray[np.float32]
    bias: NDArray[np.float32]
    activation: str = "relu"
    n_features: int = field(init=False)
    n_classes: int = field(init=False)

    def __post_init__(self) -> None:
        shape = check_image(self.image)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")
        kernels = tuple(np.ascontiguousarray(w, dtype=np.float32) for w in self.conv_weights)
        biases = tuple(np.ascontiguousarray(b, dtype=np.float32) for b in self.conv_biases)
        weight = np.ascontiguousarray(self.weight, dtype=np.float32)
        bias = np.ascontiguousarray(self.bias, dtype=np.float32)
        channels = shape[0]
        if len(kernels) != 2 or len(biases) != 2:
            raise ValueError(
                f"conv_weights and conv_biases must hold two layers, got {len(kernels)} and {len(biases)}."
            )
        for k, (w, b) in enumerate(zip(kernels, biases, strict=True)):
            if w.ndim != 4 or w.shape[1:] != (channels, 3, 3) or b.shape != (w.shape[0],):
                raise ValueError(
                    f"convolution {k} must have weights (out, {channels}, 3, 3) and biases (out,), got {w.shape} and "
                    f"{b.shape}."
                )
            channels = w.shape[0]
        flat = channels * (shape[1] // 4) * (shape[2] // 4)
        if weight.ndim != 2 or weight.shape[1] != flat or bias.shape != (weight.shape[0],) or weight.shape[0] < 2:
            raise ValueError(
                f"the last layer must have weights (n_classes ≥ 2, {flat}) and biases (n_classes,), got {weight.shape} "
                f"and {bias.shape}."
            )
        object.__setattr__(self, "image", shape)
        object.__setattr__(self, "conv_weights", kernels)
        object.__setattr__(self, "conv_biases", biases)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "bias", bias)
        object.__setattr__(self, "n_features", int(np.prod(shape)))
        object.__setattr__(self, "n_classes", int(weight.shape[0]))

    def logits(self, x: Any) -> NDArray[np.float64]:
        h = _features(x, self.n_features).reshape(-1, *self.image)
        for w, b in zip(self.conv_weights, self.conv_biases, strict=True):
            h = _max_pool(_activate(_conv3x3(h, w, b), self.activation))
        return (h.reshape(h.shape[0], -1) @ self.weight.T + self.bias).astype(np.float64)

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        return {
            "kind": np.array(self.kind),
            "activation": np.array(self.activation),
            "image": np.array(self.image, dtype=np.int64),
            "conv0": self.conv_weights[0],
            "conv0_bias": self.conv_biases[0],
            "conv1": self.conv_weights[1],
            "conv1_bias": self.conv_biases[1],
            "weight": self.weight,
            "bias": self.bias,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, NDArray[Any]]) -> ConvNetRelease:
        return cls(
            image=tuple(int(v) for v in np.asarray(arrays["image"]).ravel()),  # type: ignore[arg-type]
            conv_weights=(arrays["conv0"], arrays["conv1"]),
            conv_biases=(arrays["conv0_bias"], arrays["conv1_bias"]),
            weight=arrays["weight"],
            bias=arrays["bias"],
            activation=str(arrays["activation"]),
        )


@dataclass(frozen=True, eq=False)
class ModuleRelease(ModelRelease):
    """A user's ``torch.nn.Module``, released as its factory's import path and its trained parameters.

    What a DP-SGD mechanism with ``model = "package.module:factory"`` publishes
    (:class:`privgame.mechanisms.dpsgd.user_model.ModelFactory`): plain arrays, never a pickle of the module.  The
    module is rebuilt on first use (the factory called on the CPU, in float32, then given the released values; torch is
    imported only then) and kept by the release object; its forward pass, in evaluation mode and without
    gradients, gives the logits.

    Parameters
    ----------
    model : str
        The factory, ``"package.module:factory"``; importing it runs that module's code, as a plugin.
    input_shape : tuple of int
        One example's shape (``(d,)`` for encoded records); a row of ``x`` holds its ∏ input_shape values in
        row-major order.
    n_classes : int
        The module's outputs (at least 2).
    parameters : ndarray of shape (P,), float32
        The trained parameters flattened, in ``trainable_parameters`` order (``named_parameters`` that require a
        gradient, :func:`privgame.mechanisms.dpsgd.clipping.trainable_parameters`), each in row-major order.
    state : ndarray of shape (S,), float64, default=empty
        The module's other state flattened: its parameters without a gradient, then its buffers (``named_*``
        order).  DP-SGD never changes them, but a factory may draw them from its generator, so they are released
        too (float64 holds float32 values and integers below 2⁵³ exactly).

    Raises
    ------
    ValueError
        When the module is rebuilt: the factory fails, or its module's parameter or state sizes differ from the
        released arrays (the factory changed since the release), or its output is not ``(n, n_classes)``.
    """

    kind: ClassVar[str] = "module"

    model: str
    input_shape: tuple[int, ...]
    n_classes: int
    parameters: NDArray[np.float32]
    state: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    n_features: int = field(init=False)
    _module: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from privgame.analysis._checks import check_int

        if not isinstance(self.model, str) or ":" not in self.model:
            raise ValueError(f"model must be a factory's import path 'package.module:function', got {self.model!r}.")
        if not isinstance(self.input_shape, tuple | list) or len(self.input_shape) < 1:
            raise ValueError(f"input_shape must be a non-empty tuple of positive ints, got {self.input_shape!r}.")
        shape = tuple(check_int(f"input_shape[{i}]", s, low=1) for i, s in enumerate(self.input_shape))
        classes = check_int("n_classes", self.n_classes, low=2)
        parameters = np.ascontiguousarray(self.parameters, dtype=np.float32)
        state = np.ascontiguousarray(self.state, dtype=np.float64)
        for name, arr in (("parameters", parameters), ("state", state)):
            if arr.ndim != 1:
                raise ValueError(f"{name} must be a flat array, got shape {arr.shape}.")
        if parameters.size < 1:
            raise ValueError("parameters must hold at least one trained value, got none.")
        object.__setattr__(self, "input_shape", shape)
        object.__setattr__(self, "n_classes", classes)
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "state", state)
        object.__setattr__(self, "n_features", int(np.prod(shape)))

    def __getstate__(self) -> dict[str, Any]:
        # the rebuilt module is a cache: a pickled release (sent between processes) carries the arrays alone
        return {**self.__dict__, "_module": None}

    def imports(self) -> tuple[str, ...]:
        return (self.model,)

    @classmethod
    def from_module(cls, module: Any, *, model: str, input_shape: tuple[int, ...], n_classes: int) -> ModuleRelease:
        """The release of a trained ``module`` that the factory ``model`` built for ``input_shape`` and
        ``n_classes``."""
        params, state = _module_tensors(module)

        def flat(tensors: list[Any], dtype: Any) -> NDArray[Any]:
            if not tensors:
                return np.zeros(0, dtype=dtype)
            return np.concatenate([t.detach().cpu().reshape(-1).numpy().astype(dtype) for t in tensors])

        return cls(
            model=model,
            input_shape=tuple(input_shape),
            n_classes=n_classes,
            parameters=flat(params, np.float32),
            state=flat(state, np.float64),
        )

    def module(self) -> Any:
        """The ``torch.nn.Module`` with the released values (CPU, float32, evaluation mode), built on first use."""
        if self._module is None:
            object.__setattr__(self, "_module", self._build())
        return self._module

    def _build(self) -> Any:
        import torch

        from privgame.mechanisms.dpsgd.devices import make_generator
        from privgame.mechanisms.dpsgd.user_model import ModelFactory

        # the generator's draws are all overwritten below: every parameter and buffer gets its released value
        net = ModelFactory(self.model).build(
            self.input_shape, self.n_classes, generator=make_generator(0, "cpu"), dtype=torch.float32
        )
        params, state = _module_tensors(net)
        with torch.no_grad():
            for name, tensors, values in (("parameters", params, self.parameters), ("state", state, self.state)):
                sizes = [t.numel() for t in tensors]
                if sum(sizes) != values.shape[0]:
                    raise ValueError(
                        f"{name} must hold the {sum(sizes):,} values of model {self.model!r} for input_shape="
                        f"{self.input_shape}, n_classes={self.n_classes}, got {values.shape[0]:,} (has the factory "
                        "changed since the release?)."
                    )
                for t, chunk in zip(tensors, torch.from_numpy(values.copy()).split(sizes), strict=True):
                    t.copy_(chunk.reshape(t.shape))
        return net.eval()

    def logits(self, x: Any) -> NDArray[np.float64]:
        import torch

        h = _features(x, self.n_features)
        if h.shape[0] == 0:
            return np.zeros((0, self.n_classes))
        with torch.no_grad():
            out = self.module()(torch.tensor(h).reshape(h.shape[0], *self.input_shape))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (h.shape[0], self.n_classes):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(
                f"model {self.model!r} must map (n, *{self.input_shape}) to logits (n, {self.n_classes}), got {got}."
            )
        return np.asarray(out.numpy(), dtype=np.float64)

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        return {
            "kind": np.array(self.kind),
            "model": np.array(self.model),
            "input_shape": np.array(self.input_shape, dtype=np.int64),
            "sizes": np.array([self.n_classes], dtype=np.int64),
            "parameters": self.parameters,
            "state": self.state,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, NDArray[Any]]) -> ModuleRelease:
        return cls(
            model=str(arrays["model"]),
            input_shape=tuple(int(v) for v in np.asarray(arrays["input_shape"]).ravel()),
            n_classes=int(np.asarray(arrays["sizes"]).ravel()[0]),
            parameters=np.asarray(arrays["parameters"]),
            state=np.asarray(arrays["state"]),
        )


def _module_tensors(module: Any) -> tuple[list[Any], list[Any]]:
    """A module's trainable parameters (``trainable_parameters`` order) and its other state: the parameters
    without a gradient, then the buffers."""
    from privgame.mechanisms.dpsgd.clipping import trainable_parameters

    frozen = [p for _, p in module.named_parameters() if not p.requires_grad]
    return [p for _, p in trainable_parameters(module)], frozen + [b for _, b in module.named_buffers()]


def check_image(image: Any) -> tuple[int, int, int]:
    """``image`` as (channels, height, width) if a CNN with two 2×2 poolings takes it (each side at least 4).

    Raises
    ------
    ValueError
        If it is not three integers, or a side is below 4 (or above 4,096).
    """
    from privgame.analysis._checks import check_int

    if not isinstance(image, tuple | list) or len(image) != 3:
        raise ValueError(f"image must be [channels, height, width], got {image!r}.")
    c = check_int("image[0]", image[0], low=1, high=1 << 12)
    h = check_int("image[1]", image[1], low=4, high=1 << 12)
    w = check_int("image[2]", image[2], low=4, high=1 << 12)
    return c, h, w


def check_channels(channels: Any, *, high: int | None = None) -> tuple[int, int]:
    """``channels`` as the two convolutions' output channels (each at least 1, and at most ``high`` if given).

    Raises
    ------
    ValueError
        If it is not a pair of integers in range.
    """
    from privgame.analysis._checks import check_int

    if not isinstance(channels, tuple | list) or len(channels) != 2:
        raise ValueError(f"channels must be a pair of ints, got {channels!r}.")
    c1, c2 = (check_int(f"channels[{i}]", c, low=1, high=high) for i, c in enumerate(channels))
    return c1, c2


def _conv3x3(h: NDArray[np.float32], w: NDArray[np.float32], b: NDArray[np.float32]) -> NDArray[np.float32]:
    """A 3×3 convolution with zero padding 1 (torch's cross-correlation) of images (n, C, H, W) → (n, out, H, W)."""
    n, c, height, width = h.shape
    padded = np.pad(h, ((0, 0), (0, 0), (1, 1), (1, 1)))
    patches = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # (n, C, H, W, 3, 3)
    columns = patches.transpose(0, 2, 3, 1, 4, 5).reshape(n * height * width, c * 9)
    out = columns @ w.reshape(w.shape[0], c * 9).T + b
    return np.ascontiguousarray(out.reshape(n, height, width, -1).transpose(0, 3, 1, 2))


def _max_pool(h: NDArray[np.float32]) -> NDArray[np.float32]:
    """2×2 max-pooling with stride 2, dropping an odd last row or column (torch's ``MaxPool2d(2)``)."""
    n, c, height, width = h.shape
    h = h[:, :, : height // 2 * 2, : width // 2 * 2]
    return h.reshape(n, c, height // 2, 2, width // 2, 2).max(axis=(3, 5))


#: the probability a :class:`LookupRelease` takes the logarithm of in place of a smaller one (a forest's zero votes):
#: the constant of Carlini et al.'s reference code, so a confidence is finite and saturates at about ±103.6 as theirs
PROBABILITY_FLOOR = 1e-45
DIGEST_BYTES = 16


def row_digests(x: Any, n_features: int | None = None) -> NDArray[np.uint8]:
    """A 16-byte BLAKE2b digest of each row of ``x`` as float32 bytes, shape ``(n, 16)``: what a
    :class:`LookupRelease` finds a record by.

    The row is first made float32 and C-contiguous, and −0.0 made 0.0 (the two compare equal, so they are the
    same record); NaN is not a record (the pools are finite).  Two different rows share a digest with probability
    about 2⁻¹²⁸.

    Raises
    ------
    ValueError
        If ``x`` is not a 2-D array (of ``n_features`` columns, when given).
    """
    arr = np.asarray(x)
    if arr.ndim != 2 or (n_features is not None and arr.shape[1] != n_features):
        raise ValueError(f"x must have shape (n, {n_features if n_features is not None else 'd'}), got {arr.shape}.")
    rows = np.ascontiguousarray(arr, dtype=np.float32) + np.float32(0.0)  # -0.0 + 0.0 is +0.0
    width, data = rows.shape[1] * 4, rows.tobytes()
    digests = b"".join(
        hashlib.blake2b(data[i * width : (i + 1) * width], digest_size=DIGEST_BYTES, person=b"privgame-row").digest()
        for i in range(rows.shape[0])
    )
    return np.frombuffer(digests, dtype=np.uint8).reshape(rows.shape[0], DIGEST_BYTES).copy()


class UnscoredRecordError(ValueError):
    """A :class:`LookupRelease` was asked about a record it holds no answer for."""


@dataclass(frozen=True, eq=False)
class LookupRelease(ModelRelease):
    """A model released as its answers on a finite set of records: each record's class probabilities, found by the
    digest of its features (:func:`row_digests`).

    What a model that cannot be written as plain arrays (any scikit-learn estimator: ``sklearn``) publishes: its
    ``predict_proba`` on every record its game can ever query it on, so that it goes through the artefact cache
    and to the attacks without a pickle.  :meth:`probabilities` returns those values exactly; :meth:`logits` are
    their logarithms, a probability below :data:`PROBABILITY_FLOOR` (1e-45, a forest's zero votes) taken as the
    floor, as Carlini et al.'s reference code does, so that losses and LiRA's confidence stay finite (at most
    about 103.6).  A record outside the table is refused (:class:`UnscoredRecordError`), never guessed.

    Parameters
    ----------
    digests : ndarray of shape (R, 16), uint8
        The records' digests, distinct.
    table : ndarray of shape (R, n_classes), float64
        Each record's class probabilities (rows in [0, 1]).
    n_features : int
        The width of the records (the encoded features the digests were taken of).
    """

    kind: ClassVar[str] = "lookup"

    digests: NDArray[np.uint8]
    table: NDArray[np.float64]
    n_features: int
    n_classes: int = field(init=False)
    _index: dict[bytes, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        digests = np.ascontiguousarray(self.digests, dtype=np.uint8)
        table = np.ascontiguousarray(self.table, dtype=np.float64)
        if digests.ndim != 2 or digests.shape[1] != DIGEST_BYTES:
            raise ValueError(f"digests must have shape (R, {DIGEST_BYTES}), got {digests.shape}.")
        if table.ndim != 2 or table.shape[0] != digests.shape[0] or table.shape[1] < 2:
            raise ValueError(
                f"table must have shape ({digests.shape[0]}, n_classes ≥ 2) (a row per digest), got {table.shape}."
            )
        if not np.isfinite(table).all() or table.min(initial=0.0) < 0 or table.max(initial=0.0) > 1:
            raise ValueError("table must hold probabilities in [0, 1], got a value outside or not finite.")
        raw = digests.tobytes()
        index = {raw[i : i + DIGEST_BYTES]: k for k, i in enumerate(range(0, len(raw), DIGEST_BYTES))}
        if len(index) != digests.shape[0]:
            raise ValueError(f"digests must be distinct, got {digests.shape[0] - len(index)} repeated.")
        n_features = int(self.n_features)
        if n_features < 0:
            raise ValueError(f"n_features must be at least 0, got {n_features}.")
        object.__setattr__(self, "digests", digests)
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "n_features", n_features)
        object.__setattr__(self, "n_classes", int(table.shape[1]))
        object.__setattr__(self, "_index", index)

    def __len__(self) -> int:
        """R, the number of records the release can score."""
        return int(self.digests.shape[0])

    def _find(self, x: Any) -> NDArray[np.intp]:
        """Each row's position in the table, or −1."""
        raw = row_digests(_features(x, self.n_features), self.n_features).tobytes()
        get = self._index.get
        return np.fromiter(
            (get(raw[i : i + DIGEST_BYTES], -1) for i in range(0, len(raw), DIGEST_BYTES)),
            dtype=np.intp,
            count=len(raw) // DIGEST_BYTES,
        )

    def covers(self, x: Any) -> NDArray[np.bool_]:
        """Whether each record of ``x`` (n, d) is one this release can score."""
        return self._find(x) >= 0

    def positions(self, x: Any) -> NDArray[np.intp]:
        """Each record's row in :attr:`table`.

        Raises
        ------
        UnscoredRecordError
            If a record of ``x`` is not one the release holds.
        """
        found = self._find(x)
        missing = np.flatnonzero(found < 0)
        if missing.size:
            raise UnscoredRecordError(
                f"x must hold records this model was released on (its training pool and the records its game "
                f"declared; a model released as a lookup table, such as 'sklearn', scores no other), got "
                f"{missing.size} of {found.size} outside them, the first at row {int(missing[0])}."
            )
        return found

    def probabilities(self, x: Any) -> NDArray[np.float64]:
        """The stored class probabilities ``(n, n_classes)``: the estimator's ``predict_proba``, exactly."""
        return self.table[self.positions(x)]

    def logits(self, x: Any) -> NDArray[np.float64]:
        """``log(max(p, PROBABILITY_FLOOR))`` of the stored probabilities ``(n, n_classes)``."""
        return np.log(np.maximum(self.probabilities(x), PROBABILITY_FLOOR))

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        return {
            "kind": np.array(self.kind),
            "digests": self.digests,
            "table": self.table,
            "sizes": np.array([self.n_features], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, NDArray[Any]]) -> LookupRelease:
        return cls(
            digests=np.asarray(arrays["digests"]),
            table=np.asarray(arrays["table"]),
            n_features=int(np.asarray(arrays["sizes"]).ravel()[0]),
        )


_KINDS: dict[str, Any] = {
    "network": NetworkRelease,
    "trees": TreeEnsembleRelease,
    "convnet": ConvNetRelease,
    "lookup": LookupRelease,
    "module": ModuleRelease,
}


def decode_release(arrays: Mapping[str, NDArray[Any]], *, names: Collection[str] | None = None) -> ModelRelease:
    """The release that ``to_arrays`` gave ``arrays`` (from the cache).

    Parameters
    ----------
    arrays : mapping of str to ndarray
        What :meth:`ModelRelease.to_arrays` gave.
    names : collection of str or None, default=None
        The import paths the release may name (its mechanism's own); ``None`` allows any (arrays the caller made).

    Raises
    ------
    ValueError
        If the arrays name no known kind of model release, or an import path outside ``names``.
    """
    kind = str(arrays["kind"]) if "kind" in arrays else None
    if kind not in _KINDS:
        raise ValueError(f"arrays must hold a model release of kind {', '.join(_KINDS)}, got {kind!r}.")
    release: ModelRelease = _KINDS[kind].from_arrays(arrays)
    foreign = [name for name in release.imports() if names is not None and name not in names]
    if foreign:
        raise ValueError(f"the release names {', '.join(map(repr, foreign))}, which its mechanism does not name.")
    return release
