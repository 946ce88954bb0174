"""The parameters every DP-SGD mechanism shares: (q, σ or a target ε, T, C, the step), σ calibration and the claim."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from privgame.analysis._checks import check_int, check_real
from privgame.analysis.accounting import PrivacyClaim, dpsgd_claim, dpsgd_noise_multiplier, sampled_probability
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.dpsgd.sgd import NORMALISATIONS, DPSGDConfig, check_normalisation
from privgame.mechanisms.training.models import check_device

__all__ = ["DPSGDParameters"]


@dataclass(frozen=True, slots=True)
class DPSGDParameters(Mechanism):
    """DP-SGD's parameters and checks, shared by the DP-SGD mechanisms (not registered).

    Parameters
    ----------
    epsilon : float or None, default=None
        Target ε at ``delta``: the noise multiplier is the smallest σ whose PLD ε is at most this
        (:func:`privgame.analysis.accounting.dpsgd_noise_multiplier`), calibrated when :attr:`sigma` is first needed
        (the runner's analytic-ε step, in the parent, before any trial) and cached on disk, so building the mechanism,
        validating a config or reading results never waits for it.  Exactly one of ``epsilon`` and
        ``noise_multiplier`` is given.
    noise_multiplier : float or None, default=None
        σ directly.
    delta : float, default=1e-5
        The δ at which ``epsilon`` calibrates σ.
    sampling_rate : float, default=0.1
        Poisson sampling rate q.
    steps : int, default=100
        T.
    clip_norm : float, default=1.0
        C.
    learning_rate : float, default=0.5
    momentum : float, default=0.0
    normalisation : {"expected", "none", "realised"}, default="expected"
        What the noisy gradient sum is divided by (:class:`privgame.mechanisms.dpsgd.sgd.DPSGDConfig`): the expected
        batch size qN, nothing, or the realised batch size.  The first two claim DP-SGD's PLD under add/remove-one; the
        realised one claims nothing (:meth:`privacy_claim` is ``None``, :meth:`claim_caveat` says why).
    device : {"cpu", "auto", "cuda", "cuda:<index>"}, default="cpu"
        Where the release trains (:func:`privgame.mechanisms.training.models.check_device`: a CUDA device this
        machine lacks is refused when the config is read).  Releases are reproducible on one device type; the CPU
        and CUDA generators are different algorithms, so the draws differ between them.
    """

    epsilon: float | None = None
    noise_multiplier: float | None = None
    delta: float = 1e-5
    sampling_rate: float = 0.1
    steps: int = 100
    clip_norm: float = 1.0
    learning_rate: float = 0.5
    momentum: float = 0.0
    normalisation: str = "expected"
    device: str = "cpu"
    # derived from the parameters (equality and hashing ignore it); set on first use of `sigma`, and pickled
    # with the mechanism, so workers receive the σ the parent calibrated
    _sigma: float | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
        q = check_real("sampling_rate", self.sampling_rate, low=0.0, high=1.0, low_open=True)
        steps = check_int("steps", self.steps, low=1)
        check_real("clip_norm", self.clip_norm, low=0.0, low_open=True)
        check_real("learning_rate", self.learning_rate, low=0.0, low_open=True)
        check_real("momentum", self.momentum, low=0.0, high=1.0, high_open=True)
        check_normalisation(self.normalisation)
        check_device(self.device)
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError(
                f"exactly one of epsilon and noise_multiplier must be given, got epsilon={self.epsilon!r}, "
                f"noise_multiplier={self.noise_multiplier!r}."
            )
        if self.epsilon is not None:
            eps = check_real("epsilon", self.epsilon, low=0.0, low_open=True)
            object.__setattr__(self, "epsilon", eps)
            sampled = sampled_probability(q, steps)
            if self.delta >= sampled:  # the one target no σ reaches: refused now, not when σ is calibrated
                raise ValueError(
                    f"delta must be below 1 - (1 - sampling_rate)^steps = {sampled:.6g} (the chance a record is "
                    f"sampled at all) to calibrate the noise for epsilon, got {self.delta}."
                )
        else:
            sigma = check_real("noise_multiplier", self.noise_multiplier, low=0.0, low_open=True)
            object.__setattr__(self, "_sigma", sigma)

    @property
    def sigma(self) -> float:
        """The noise multiplier σ: ``noise_multiplier``, or calibrated from ``epsilon`` on first use."""
        if self._sigma is None:
            target = cast(float, self.epsilon)  # __post_init__: noise_multiplier set _sigma, else epsilon is given
            sigma = dpsgd_noise_multiplier(target, self.delta, self.sampling_rate, self.steps)
            object.__setattr__(self, "_sigma", sigma)
            return sigma
        return self._sigma

    def derives_parameters(self) -> bool:
        """True when σ is calibrated from ``epsilon`` (``noise_multiplier`` given: nothing to derive)."""
        return self.epsilon is not None

    def derived_parameters(self) -> dict[str, float]:
        """``{"sigma": σ}`` when σ is calibrated from ``epsilon`` (calibrating it now, if not done yet)."""
        return {} if self.epsilon is None else {"sigma": self.sigma}

    def training_config(self, dataset_size: int | None = None) -> DPSGDConfig:
        """The DP-SGD configuration of one release (on :attr:`device`; ``dataset_size`` the public N of qN)."""
        return DPSGDConfig(
            sampling_rate=self.sampling_rate,
            noise_multiplier=self.sigma,
            clip_norm=self.clip_norm,
            steps=self.steps,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            device=str(self.torch_device),
            dataset_size=dataset_size,
            normalisation=self.normalisation,
        )

    def loop_run(
        self, model: Any, x: Any, y: Any, loss_fn: Any, generator: Any, dataset_size: int | None = None
    ) -> Any:
        """What a training loop is handed for one release with these parameters
        (:class:`privgame.mechanisms.dpsgd.loop.LoopRun`: σ, q, T, C, the learning rate and momentum)."""
        from privgame.mechanisms.dpsgd.loop import LoopRun

        return LoopRun(
            model=model,
            x=x,
            y=y,
            loss_fn=loss_fn,
            noise_multiplier=self.sigma,
            sampling_rate=self.sampling_rate,
            steps=self.steps,
            clip_norm=self.clip_norm,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            generator=generator,
            dataset_size=dataset_size,
        )

    @property
    def torch_device(self) -> Any:
        """:attr:`device` resolved (``"auto"``: CUDA when available, else the CPU), a ``torch.device``."""
        from privgame.mechanisms.dpsgd.devices import resolve_device

        return resolve_device(self.device)

    def claim_caveat(self) -> str | None:
        """Why these parameters claim nothing (the normalisation has no established analysis), or ``None``."""
        return NORMALISATIONS[self.normalisation]

    def privacy_claim(self) -> PrivacyClaim | None:
        """DP-SGD with (q, σ, T) from ``dp_accounting`` (PLD), add/remove-one; ``None`` where the normalisation
        has no established claim (:meth:`claim_caveat`)."""
        if self.claim_caveat() is not None:
            return None
        return dpsgd_claim(self.sigma, self.sampling_rate, self.steps)
