"""Attacks: turn a mechanism's release into membership scores (higher = member)."""

from attacks._base import Attack
from attacks.identity import Identity

__all__ = ["Attack", "Identity"]
