"""dpmm 0.1.9 (MST, AIM, PrivBayes marginal-based generators) as an external privgame generator.

Calls ``dpmm.pipelines.MSTPipeline`` / ``AIMPipeline`` / ``PrivBayesPipeline`` (``fit`` then ``generate``) with
``binner_type="uniform"`` and ``proc_epsilon=None``: numeric columns are cut into ``bins`` equal-width bins over the
schema's [low, high], so the preprocessing spends no budget and reads no bounds from the data.

Params (``--param KEY=VALUE``):
    model         mst (default), aim or privbayes.
    epsilon       float, default 1.0; the whole budget of the model (preprocessing spends none here).
    delta         float, default 1e-5.
    bins          int, default 20: equal-width bins per numeric column.
    n_iters       int, default 0 = the package's default (MST 5000, AIM 1000): iterations of the mbi inference.
    seeded_noise  false (default) or true. The package draws its Gaussian measurement noise from OpenDP
                  (``dpmm.models.base.utils.gaussian_noise``), whose sampler uses OS randomness and cannot be
                  seeded, so by default repeats with the same seed differ. ``true`` replaces that function with
                  numpy's floating-point ``Generator.normal`` seeded from ``seed`` (same sigma), which makes runs
                  byte-identical but is a change to the released mechanism (not a secure sampler).

Domain: numeric ranges as ``{"lower", "upper"}`` and category lists as ``{"categories"}`` from the schema, passed
as ``fit(domain=...)``. The package still drops any column that holds a single value in the training rows and
releases that value as a constant (``TableBinner.fit``, static columns), which is not DP.

Seeding: ``random_state=seed`` for fit and generate (one ``numpy.random.RandomState`` shared by the binner, the
selection steps, the mbi inference and the sampler); ``n_jobs=1`` so no worker processes are forked.
"""

from __future__ import annotations

import sys

import _common
import numpy as np
import pandas as pd
from dpmm.models import aim, mst
from dpmm.models.base.mechanisms import mechanism
from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

DEFAULTS: dict[str, _common.ParamValue] = {
    "model": "mst",
    "epsilon": 1.0,
    "delta": 1e-5,
    "bins": 20,
    "n_iters": 0,
    "seeded_noise": False,
}
PIPELINES = {"mst": MSTPipeline, "aim": AIMPipeline, "privbayes": PrivBayesPipeline}
NOISE_MODULES = (mechanism, mst, aim)
OPENDP_GAUSSIAN = mechanism.gaussian_noise


def set_noise(seed: int | None) -> None:
    """Use OpenDP's Gaussian sampler (``seed=None``) or numpy's, seeded with ``seed``, in every dpmm module."""
    if seed is None:
        sampler = OPENDP_GAUSSIAN
    else:
        rng = np.random.default_rng(seed)

        def sampler(sigma: float, size: int | tuple[int, ...] | None = None) -> np.ndarray:
            return rng.normal(0.0, sigma, size)

    for module in NOISE_MODULES:
        module.gaussian_noise = sampler


def generate(
    train: pd.DataFrame, schema: _common.Schema, rows: int, seed: int, params: dict[str, _common.ParamValue]
) -> pd.DataFrame:
    """Fit the chosen dpmm pipeline on ``train`` with the schema's domain and sample ``rows`` rows."""
    name = str(params["model"])
    if name not in PIPELINES:
        raise ValueError(f"model must be one of {sorted(PIPELINES)}, got {name!r}")
    _common.seed_python_numpy(seed)
    set_noise(seed if params["seeded_noise"] else None)
    gen_kwargs = {"n_iters": int(params["n_iters"])} if int(params["n_iters"]) > 0 else {}
    pipeline = PIPELINES[name](
        epsilon=float(params["epsilon"]),
        delta=float(params["delta"]),
        n_jobs=1,
        gen_kwargs=gen_kwargs,
        binner_type="uniform",
        proc_epsilon=None,
        n_bins=int(params["bins"]),
    )
    domain = {
        c.name: {"categories": list(c.categories)} if c.kind == "categorical" else {"lower": c.low, "upper": c.high}
        for c in schema.columns
    }
    pipeline.fit(train, domain=domain, random_state=seed)
    return pipeline.generate(n_records=rows, random_state=seed)


if __name__ == "__main__":
    sys.exit(_common.main(generate, DEFAULTS, __doc__.splitlines()[0]))
