"""Mechanisms under audit: each publishes something about its input and states its analytic privacy.

The public names are imported on first use (:mod:`privgame.core._lazy`), so ``import privgame.mechanisms.synth`` or a
plugin importing ``privgame.mechanisms._base`` does not import the others.
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.mechanisms._base import Mechanism, PrivacyClaim
    from privgame.mechanisms.gaussian import GaussianMechanism
    from privgame.mechanisms.randomized_response import RandomizedResponse

__all__ = ["GaussianMechanism", "Mechanism", "PrivacyClaim", "RandomizedResponse"]

__getattr__, __dir__ = attach(
    __name__,
    {
        "GaussianMechanism": "privgame.mechanisms.gaussian:GaussianMechanism",
        "Mechanism": "privgame.mechanisms._base:Mechanism",
        "PrivacyClaim": "privgame.mechanisms._base:PrivacyClaim",
        "RandomizedResponse": "privgame.mechanisms.randomized_response:RandomizedResponse",
    },
)
