"""Mechanisms under audit: each publishes something about its input and states its analytic privacy.

The public names are imported on first use (:mod:`analysis._lazy`), so ``import mechanisms.synth`` or a plugin
importing ``mechanisms._base`` does not import the others.
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from mechanisms._base import Mechanism, PrivacyClaim
    from mechanisms.gaussian import GaussianMechanism
    from mechanisms.randomized_response import RandomizedResponse

__all__ = ["GaussianMechanism", "Mechanism", "PrivacyClaim", "RandomizedResponse"]

__getattr__, __dir__ = attach(
    __name__,
    {
        "GaussianMechanism": "mechanisms.gaussian:GaussianMechanism",
        "Mechanism": "mechanisms._base:Mechanism",
        "PrivacyClaim": "mechanisms._base:PrivacyClaim",
        "RandomizedResponse": "mechanisms.randomized_response:RandomizedResponse",
    },
)
