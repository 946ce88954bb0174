"""The interface every mechanism implements.

A mechanism is a frozen, picklable dataclass whose fields are its parameters (validated in ``__post_init__``).
``release(data, rng=...)`` runs it once on the data a game hands it and returns what it publishes;
``privacy_claim()`` states its analytic guarantee (or ``None`` for non-private mechanisms).
``release_runs(data, rngs=...)`` runs it K times independently (the multi-run game); mechanisms that can batch
the K runs (DP-SGD trains K models at once) override it, with results equal to K calls of ``release``.

Two class attributes let a game check compatibility before any work runs:

``input_kind``
    what ``release`` takes: ``"canary-bits"`` (a boolean array of m membership bits, one per canary),
    ``"canary-dataset"`` (:class:`privgame.mechanisms.training.canaries.CanaryData`: the bits with the game's training
    rows and canary examples), ``"dataset"`` (:class:`privgame.mechanisms.training.data.TrainingData`: a pool and an
    include-mask) or ``"table"`` (a DataFrame).
``release_kind``
    what it publishes: ``"per-canary-values"`` (one number per canary), ``"model"``
    (:class:`privgame.mechanisms.training.release.ModelRelease`), ``"model-with-canaries"`` (a model and the public
    canaries), ``"table"``.

A third says whether the one-run game's canaries are independent channels (the product model that the
order-statistics audit, :mod:`privgame.analysis.order_stats`, needs):

``canary_dependence`` (default: a sentence saying it is not declared)
    ``None`` for a mechanism whose output for each canary depends on that canary's bit alone, through randomness
    of its own (randomized response per canary, the Gaussian mechanism per coordinate, white-box Dirac DP-SGD);
    otherwise one line saying why the canaries interact ("its canaries are examples trained into one shared
    model"), which the estimator's refusal quotes.  A wrong ``None`` makes that estimator unsound: declare it
    only when it holds by construction.

A fourth says what the contract may expect of its randomness (:mod:`privgame.engine.testing` checks both ways):

``deterministic`` (default ``False``)
    ``True`` for a mechanism that ignores ``rng`` by design (an exact copy of its input: the record games' worst
    case): its release must then be the same for every ``rng``, and it claims no privacy.  ``False``: every random
    number comes from ``rng``, so the same seed gives the same release and another seed another.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privgame.analysis._checks import UNSTATED_DEPENDENCE

if TYPE_CHECKING:
    from privgame.analysis.accounting import PrivacyClaim

__all__ = ["Mechanism", "PrivacyClaim", "check_runs"]


def __getattr__(name: str) -> Any:
    # PrivacyClaim is re-exported on first use: the base class alone (what reading results needs) must not
    # import dp_accounting, about a second of a report's start-up
    if name == "PrivacyClaim":
        from privgame.analysis.accounting import PrivacyClaim

        return PrivacyClaim
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Mechanism(ABC):
    """A randomised algorithm under audit."""

    __slots__ = ()

    name: ClassVar[str]
    input_kind: ClassVar[str]
    release_kind: ClassVar[str]
    deterministic: ClassVar[bool] = False  # True: the release ignores rng by design (see the module docstring)
    canary_dependence: ClassVar[str | None] = UNSTATED_DEPENDENCE  # None: independent canaries (module docstring)

    @abstractmethod
    def release(self, data: Any, *, rng: np.random.Generator) -> Any:
        """Run the mechanism once on ``data`` with randomness from ``rng`` and return what it publishes."""

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[Any]:
        """K independent runs: ``[self.release(d, rng=r) for d, r in zip(data, rngs)]``.

        Mechanisms that can batch override this; an override must return what the K separate calls return (up
        to floating-point rounding), so that a run's result never depends on which runs it was batched with.
        """
        check_runs(data, rngs)
        return [self.release(d, rng=r) for d, r in zip(data, rngs, strict=True)]

    @abstractmethod
    def privacy_claim(self) -> PrivacyClaim | None:
        """The analytic privacy guarantee, or ``None`` when the mechanism claims none."""

    def memory_bytes(self, n: int) -> int:
        """Estimated peak memory in bytes of one release on an input of ``n`` records (or canaries).

        Checked with the config, before anything runs, so that a size that cannot fit is refused with the
        estimate instead of failing in the middle of a run.  The default allows 64 bytes per input record
        (input, output and working copies of a few float64 vectors); mechanisms whose memory grows otherwise
        (a model with a weight per canary, a table per record) override it.  An estimate, not a bound.
        """
        return 64 * n

    def derived_parameters(self) -> dict[str, float]:
        """Values the mechanism computes from its parameters, such as DP-SGD's noise multiplier calibrated from
        a target ε (default: none).

        The runner computes them in the parent before any trial, beside the analytic ε, and stores them per grid
        point in the results manifest (``derived``), where ``privgame report`` reads them: a report never
        recomputes them.  Override :meth:`derives_parameters` too.
        """
        return {}

    def derives_parameters(self) -> bool:
        """Whether :meth:`derived_parameters` computes anything for these parameters (DP-SGD: when σ is
        calibrated from ``epsilon``).  The runner's progress line names the calibration only when one does."""
        return False


def check_runs(data: Sequence[Any], rngs: Sequence[np.random.Generator]) -> None:
    """Check the arguments of :meth:`Mechanism.release_runs`: one ``numpy.random.Generator`` per input."""
    if len(data) != len(rngs):
        raise ValueError(f"release_runs needs one rng per input, got {len(data)} inputs and {len(rngs)} rngs.")
    for k, r in enumerate(rngs):
        if not isinstance(r, np.random.Generator):
            raise TypeError(f"rngs[{k}] must be a numpy.random.Generator, got {r!r}.")
