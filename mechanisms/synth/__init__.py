"""Tabular synthetic-data generators (SPEC §7): Synthpop (CART), BayNet and PrivBayes; a per-class Gaussian
mixture for numeric records such as images (PANORAMIA's digits); and any program as a generator (external).

Each generator is a :class:`privgame.mechanisms.Mechanism` with ``input_kind = release_kind = "table"``:
``release(data: DataFrame, *, rng) -> DataFrame`` with the same columns, dtypes and categories.  The generators
are imported on first use (:mod:`privgame.core._lazy`): Synthpop's numba kernels load only with Synthpop.
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.mechanisms.synth.baynet import BayNet
    from privgame.mechanisms.synth.external import ExternalGenerator
    from privgame.mechanisms.synth.mixture import GaussianMixtureGenerator
    from privgame.mechanisms.synth.privbayes import PrivBayes
    from privgame.mechanisms.synth.synthpop import Synthpop

__all__ = ["BayNet", "ExternalGenerator", "GaussianMixtureGenerator", "PrivBayes", "Synthpop"]

__getattr__, __dir__ = attach(
    __name__,
    {
        "BayNet": "privgame.mechanisms.synth.baynet:BayNet",
        "ExternalGenerator": "privgame.mechanisms.synth.external:ExternalGenerator",
        "GaussianMixtureGenerator": "privgame.mechanisms.synth.mixture:GaussianMixtureGenerator",
        "PrivBayes": "privgame.mechanisms.synth.privbayes:PrivBayes",
        "Synthpop": "privgame.mechanisms.synth.synthpop:Synthpop",
    },
)
