"""Mechanisms under audit: each publishes something about its input and states its analytic privacy."""

from mechanisms._base import Mechanism, PrivacyClaim
from mechanisms.gaussian import GaussianMechanism
from mechanisms.randomized_response import RandomizedResponse

__all__ = ["GaussianMechanism", "Mechanism", "PrivacyClaim", "RandomizedResponse"]
