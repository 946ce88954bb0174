"""sdv 2.0.0 GaussianCopulaSynthesizer (not differentially private) as an external privgame generator.

Calls ``sdv.single_table.GaussianCopulaSynthesizer(metadata, default_distribution=...)``,
``fit({"table": train})``, ``_set_random_state(seed)`` and ``sample(num_rows=rows)["table"]`` (sdv 2 passes
tables as dicts). The metadata is built from the schema (``Metadata.load_from_dict``: integer columns numerical
with ``decimal_places`` 0, float columns numerical, the rest categorical), not detected from the rows.

Params (``--param KEY=VALUE``):
    distribution  default ``beta`` (the package's default): the marginal family for numeric columns, one of
                  norm, beta, truncnorm, uniform, gamma_distribution, gaussian_kde.

Domain: the package learns everything from the training rows (categories seen; numeric min/max, which it enforces
on output with its default ``enforce_min_max_values=True``); the schema gives only the column types. (sdv 2.0's
metadata ``range_min``/``range_max``/``range_values`` do not replace this: they are only checked against the data.)

Seeding: the package fixes its sampling seed to a constant (``FIXED_RNG_SEED = 73251`` in
``sdv/single_table/base.py``) unless one is set, and offers no public seed argument, so the wrapper calls the
private ``_set_random_state(seed)`` after fitting; Python ``random``, numpy's global generator and torch are seeded
too. Repeats with the same seed are byte-identical.
"""

from __future__ import annotations

import sys

import _common
import pandas as pd
from sdv.metadata import Metadata
from sdv.single_table import GaussianCopulaSynthesizer

DEFAULTS: dict[str, _common.ParamValue] = {"distribution": "beta"}
TABLE = "table"
SDTYPE = {
    "integer": {"sdtype": "numerical", "decimal_places": 0},
    "float": {"sdtype": "numerical"},
    "categorical": {"sdtype": "categorical"},
}


def generate(
    train: pd.DataFrame, schema: _common.Schema, rows: int, seed: int, params: dict[str, _common.ParamValue]
) -> pd.DataFrame:
    """Fit a Gaussian copula on ``train`` and sample ``rows`` rows."""
    _common.seed_torch(seed)
    metadata = Metadata.load_from_dict(
        {"tables": {TABLE: {"columns": {c.name: SDTYPE[c.kind] for c in schema.columns}}}}
    )
    synthesizer = GaussianCopulaSynthesizer(metadata, default_distribution=str(params["distribution"]))
    synthesizer.fit({TABLE: train})
    synthesizer._set_random_state(seed)
    return synthesizer.sample(num_rows=rows)[TABLE]


if __name__ == "__main__":
    sys.exit(_common.main(generate, DEFAULTS, __doc__.splitlines()[0]))
