"""ctgan 0.12.1 (CTGAN, not differentially private) as an external privgame generator.

Calls ``ctgan.CTGAN(epochs, batch_size, enable_gpu=False)``, ``set_random_state(seed)``,
``fit(train, discrete_columns=<the schema's categorical columns>)`` and ``sample(rows)``.

Params (``--param KEY=VALUE``):
    epochs      int, default 10 (the package's own default is 300).
    batch_size  int, default 500; must be a multiple of pac=10.

Domain: the package learns everything from the training rows (categories seen, per-column Gaussian mixtures); the
schema is used only to mark the categorical columns and, afterwards, to round integers and clip numeric values into
[low, high] (reported on stderr). Categories absent from the training rows are never generated.

Seeding: Python ``random``, numpy's global generator and ``torch.manual_seed`` from ``seed``, plus the package's
``set_random_state(seed)`` (a numpy RandomState and a torch Generator swapped in around fit and sample); torch runs
single-threaded with deterministic algorithms on the CPU. Repeats with the same seed are byte-identical.
"""

from __future__ import annotations

import sys

import _common
import pandas as pd
import torch
from ctgan import CTGAN

DEFAULTS: dict[str, _common.ParamValue] = {"epochs": 10, "batch_size": 500}


def generate(
    train: pd.DataFrame, schema: _common.Schema, rows: int, seed: int, params: dict[str, _common.ParamValue]
) -> pd.DataFrame:
    """Train CTGAN on ``train`` and sample ``rows`` rows."""
    _common.seed_torch(seed)
    torch.use_deterministic_algorithms(True)
    model = CTGAN(epochs=int(params["epochs"]), batch_size=int(params["batch_size"]), enable_gpu=False)
    model.set_random_state(seed)
    model.fit(train, discrete_columns=[c.name for c in schema.columns if c.kind == "categorical"])
    return model.sample(rows)


if __name__ == "__main__":
    sys.exit(_common.main(generate, DEFAULTS, __doc__.splitlines()[0]))
