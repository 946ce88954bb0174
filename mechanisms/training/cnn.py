"""A small convolutional network as a non-private trained model: the image targets of PANORAMIA's digits audits.

The architecture is :func:`privgame.mechanisms.dpsgd.models.conv_net` (two ``3×3 conv → act → 2×2 max-pool`` blocks and
a linear layer), initialised from the release's own ``torch.Generator`` and trained with Adam on mini-batches of its
training rows, in an order drawn afresh every epoch from the same generator; the release is a
:class:`privgame.mechanisms.training.release.ConvNetRelease`.  K releases train one after the other (a CNN's
convolutions do not batch over models as the fully connected networks' products do).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.mechanisms.training.models import MAX_WIDTH, _Network, torch_generators
from privgame.mechanisms.training.release import ACTIVATIONS, ConvNetRelease, ModelRelease, check_channels, check_image

__all__ = ["CNNClassifier"]


@dataclass(frozen=True, slots=True)
class CNNClassifier(_Network):
    """A small CNN on flat image rows, trained with Adam on mini-batches (non-private).

    Parameters
    ----------
    image : tuple of three ints, default=(1, 8, 8)
        (channels, height, width): how a record's features are read as an image (scikit-learn's digits: 1×8×8).
        Each side at least 4.
    channels : tuple of two ints, default=(16, 32)
        The two convolutions' output channels.
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
    epochs, batch_size, learning_rate, weight_decay, device
        As :class:`privgame.mechanisms.training.models.LogisticRegressionClassifier`; more epochs over-fit more (the
        knob of PANORAMIA's image studies).

    Notes
    -----
    Input: a pool and an include-mask (:class:`privgame.mechanisms.training.data.TrainingData`) whose rows hold C·H·W
    values; release: :class:`privgame.mechanisms.training.release.ConvNetRelease`, whose numpy forward pass equals the
    trained module's.  No privacy claim.  On the CPU it trains on one thread: a convolution's gradient sums in an
    order that depends on the thread count, and one thread gives the same model in any process (the runner's
    parent and its workers have different pools); the small networks here lose about half their speed on two
    cores to it.

    References
    ----------
    .. [1] M. Kazmi et al. PANORAMIA: Privacy Auditing of Machine Learning Models without Retraining. NeurIPS 2024,
       arXiv:2402.09477 (image targets trained for increasing epochs).
    """

    name: ClassVar[str] = "cnn"

    image: tuple[int, int, int] = (1, 8, 8)
    channels: tuple[int, int] = (16, 32)
    activation: str = "relu"

    def __post_init__(self) -> None:
        _Network.__post_init__(self)
        object.__setattr__(self, "image", check_image(self.image))
        object.__setattr__(self, "channels", check_channels(self.channels, high=MAX_WIDTH))
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")

    def memory_bytes(self, n: int) -> int:
        """Bytes to train on a pool of ``n`` images: the pool (float32, two copies), the parameters four times
        (weights, gradients, Adam's two moments; the last layer for up to 100 classes), and a batch's activations
        three times (forward, backward, the pooling's indices), in float32."""
        c, h, w = self.image
        c1, c2 = self.channels
        batch = min(self.batch_size, max(n, 1)) * (c1 * h * w + c2 * (h // 2) * (w // 2))
        return 4 * (2 * c * h * w * n + 4 * self._parameters() + 3 * batch) + (1 << 24)

    def model_bytes(self) -> int:
        """The float32 release of each further model of a call (they train one after the other, so only the
        releases accumulate)."""
        return 4 * self._parameters()

    def _parameters(self) -> int:
        """The network's parameters, with a last layer for up to 100 classes."""
        c, h, w = self.image
        c1, c2 = self.channels
        return c1 * (9 * c + 1) + c2 * (9 * c1 + 1) + 100 * (c2 * (h // 4) * (w // 4) + 1)

    def feature_problem(self, n_features: int) -> str | None:
        """Why records of ``n_features`` features are not images of shape ``image``, or ``None``."""
        width = int(np.prod(self.image))
        if n_features == width:
            return None
        shape = list(self.image)
        return f"image {shape} needs records of {width} features, got {n_features} (set image to the data's shape)"

    def image_problem(self, image_shape: tuple[int, int] | None) -> str | None:
        """Why this network cannot read records of a data set whose images are ``image_shape`` (height, width; one
        channel, a pixel a column), or ``None``; ``None`` for ``image_shape``: the data set serves no images (a
        table, whose encoded columns a convolution would read as neighbouring pixels)."""
        if image_shape is None:
            return "a CNN reads its records as images, and the data set serves none"
        expected = [1, *(int(v) for v in image_shape)]
        if list(self.image) != expected:
            return f"image {list(self.image)} must be the data's images, {expected}"
        return None

    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        import torch

        from privgame.mechanisms.dpsgd.devices import resolve_device

        problem = self.feature_problem(pool.x.shape[1])
        if problem is not None:
            raise ValueError(f"{problem}.")
        device = resolve_device(self.device)
        with _one_thread(torch):
            return self._train(pool, masks, rngs, device)

    def _train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], device: Any
    ) -> list[ModelRelease]:
        import torch

        from privgame.mechanisms.dpsgd.models import conv_net

        x = torch.tensor(pool.x, device=device)
        y = torch.tensor(pool.y, device=device)
        out: list[ModelRelease] = []
        for mask, generator in zip(masks, torch_generators(rngs, device), strict=True):
            net = conv_net(
                self.image, pool.n_classes, generator=generator, channels=self.channels, activation=self.activation
            )
            optimiser = torch.optim.Adam(net.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay)
            rows = torch.from_numpy(np.flatnonzero(mask)).to(device)
            n = int(rows.shape[0])
            for _ in range(self.epochs):
                order = rows[torch.randperm(n, generator=generator, device=device)]
                for start in range(0, n, self.batch_size):
                    batch = order[start : start + self.batch_size]
                    loss = torch.nn.functional.cross_entropy(net(x[batch]), y[batch])
                    optimiser.zero_grad(set_to_none=True)
                    loss.backward()
                    optimiser.step()
            out.append(_release(net, self.image, self.activation))
        return out


@contextmanager
def _one_thread(torch: Any) -> Iterator[None]:
    """Run torch's CPU operations on one thread, then restore the pool's size.

    A convolution's gradient is summed in an order that depends on the number of threads (measured: logits 1e-4
    apart after 30 epochs on the digits with 1 and 2 threads), and the runner's parent process has more threads
    than its workers; on one thread everywhere, a trial gives the same model whichever process plays it.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _release(net: Any, image: tuple[int, int, int], activation: str) -> ConvNetRelease:
    """The :class:`ConvNetRelease` of a trained :func:`conv_net` module."""
    import torch

    convolutions = [m for m in net if isinstance(m, torch.nn.Conv2d)]
    last = net[-1]

    def arr(t: Any) -> np.ndarray:
        return np.asarray(t.detach().cpu().numpy(), dtype=np.float32)

    return ConvNetRelease(
        image=image,
        conv_weights=tuple(arr(c.weight) for c in convolutions),
        conv_biases=tuple(arr(c.bias) for c in convolutions),
        weight=arr(last.weight),
        bias=arr(last.bias),
        activation=activation,
    )
