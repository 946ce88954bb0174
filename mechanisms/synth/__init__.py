"""Tabular synthetic-data generators (SPEC §7): Synthpop (CART), BayNet and PrivBayes; and a per-class Gaussian
mixture for numeric records such as images (PANORAMIA's digits).

Each generator is a :class:`mechanisms.Mechanism` with ``input_kind = release_kind = "table"``:
``release(data: DataFrame, *, rng) -> DataFrame`` with the same columns, dtypes and categories.  The generators
are imported on first use (:mod:`analysis._lazy`): Synthpop's numba kernels load only with Synthpop.
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from mechanisms.synth.baynet import BayNet
    from mechanisms.synth.mixture import GaussianMixtureGenerator
    from mechanisms.synth.privbayes import PrivBayes
    from mechanisms.synth.synthpop import Synthpop

__all__ = ["BayNet", "GaussianMixtureGenerator", "PrivBayes", "Synthpop"]

__getattr__, __dir__ = attach(
    __name__,
    {
        "BayNet": "mechanisms.synth.baynet:BayNet",
        "GaussianMixtureGenerator": "mechanisms.synth.mixture:GaussianMixtureGenerator",
        "PrivBayes": "mechanisms.synth.privbayes:PrivBayes",
        "Synthpop": "mechanisms.synth.synthpop:Synthpop",
    },
)
