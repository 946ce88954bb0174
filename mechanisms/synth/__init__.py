"""Tabular synthetic-data generators (SPEC §7): Synthpop (CART), BayNet and PrivBayes.

Each generator is a :class:`mechanisms.Mechanism` with ``input_kind = release_kind = "table"``:
``release(data: DataFrame, *, rng) -> DataFrame`` with the same columns, dtypes and categories.
"""

from mechanisms.synth.baynet import BayNet
from mechanisms.synth.privbayes import PrivBayes
from mechanisms.synth.synthpop import Synthpop

__all__ = ["BayNet", "PrivBayes", "Synthpop"]
