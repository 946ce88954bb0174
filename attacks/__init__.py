"""Attacks: turn a mechanism's release into membership scores (higher = member)."""

from attacks._base import Attack
from attacks.identity import Identity
from attacks.loss import NegativeLoss

__all__ = ["Attack", "Identity", "NegativeLoss"]
