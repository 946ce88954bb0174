"""A data set of your own, as a config plugin: ``clinic``, 2,000 patients with integer, float and categorical columns.

Registered when imported: ``[experiment] plugins = ["extending_data"]`` (the config's folder is searched for
plugins, so this file beside the configs is found), then ``[data] name = "clinic"``.  docs/extending.md, section 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from privgame.data import Dataset, PublicDomain, register_dataset

SIZE = 2_000

# What is public about the columns: the intake form's answer options and its documented limits, never read from
# the rows (a mechanism's ε claim assumes a public domain).
DOMAIN = PublicDomain(
    "clinic",
    columns=("age", "sex", "bmi", "systolic", "smoker", "outcome"),
    categories=(("sex", ("F", "M")), ("smoker", ("no", "yes")), ("outcome", ("healthy", "sick"))),
    ranges=(("age", 18, 90), ("bmi", 15.0, 50.0), ("systolic", 80, 220)),
    floats=("bmi",),
)


def clinic_rows() -> pd.DataFrame:
    """The 2,000 patients, in the domain's column order and dtypes (a module-level function: every process that
    plays trials imports this plugin and can call it)."""
    # A simulated population: the constant seed DEFINES the data set (every process builds the same rows); it is
    # not randomness of any game or mechanism, which take theirs from the rng the game passes them.
    rng = np.random.default_rng(20_260)
    age = rng.integers(18, 91, SIZE)
    bmi = np.clip(np.round(rng.normal(24.0 + 0.06 * age, 4.0), 1), 15.0, 50.0)
    smoker = rng.random(SIZE) < 0.25
    systolic = np.clip(np.round(95 + 0.5 * age + 0.8 * (bmi - 25) + rng.normal(0, 12, SIZE)), 80, 220)
    sick = rng.random(SIZE) < expit(-4.5 + 0.05 * age + 0.08 * (bmi - 25) + 0.02 * (systolic - 125) + 1.0 * smoker)
    dtypes = DOMAIN.dtypes()
    return pd.DataFrame(
        {
            "age": age.astype(np.int64),
            "sex": pd.Categorical.from_codes(rng.integers(0, 2, SIZE), dtype=dtypes["sex"]),
            "bmi": bmi.astype(np.float64),
            "systolic": systolic.astype(np.int64),
            "smoker": pd.Categorical.from_codes(smoker.astype(np.int8), dtype=dtypes["smoker"]),
            "outcome": pd.Categorical.from_codes(sick.astype(np.int8), dtype=dtypes["outcome"]),
        }
    )


register_dataset(
    Dataset(
        "clinic",
        DOMAIN,
        SIZE,
        clinic_rows,
        label="outcome",  # the model games' label ...
        positive="sick",  # ... and its positive class (class 1)
        serves=frozenset({"table", "features"}),  # generators and record games; trained models and canary games
        description="2,000 simulated patients (docs/examples/extending_data.py)",
    )
)
