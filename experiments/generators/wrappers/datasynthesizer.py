"""DataSynthesizer 0.1.13, correlated attribute mode (PrivBayes), as an external privgame generator.

Calls ``DataSynthesizer.DataDescriber.DataDescriber.describe_dataset_in_correlated_attribute_mode`` and then
``DataSynthesizer.DataGenerator.DataGenerator.generate_dataset_in_correlated_attribute_mode``.

Params (``--param KEY=VALUE``):
    epsilon  float, default 1.0. Passed as is. The package spends it twice: ``epsilon`` on the noisy per-attribute
             histograms, then ``epsilon/2`` on the network and ``epsilon/2`` on the conditionals, so the whole
             release is ``2*epsilon``-DP at best. ``epsilon=0`` means NO noise at all in the package.
    k        int, default 2. Maximum number of parents; ``k=0`` lets the package choose k from the row count.
    bins     int, default 20. Histogram bins of each numeric column over the schema's [low, high].

Domain: every column's data type, categorical flag and candidate-key flag are given explicitly (the package would
otherwise infer them from the rows); numeric ranges come from the schema (``numerical_attribute_ranges``) and
category lists from the schema (``categorical_attribute_domain_file``). The training rows are handed to the
describer as the typed DataFrame, not re-read from CSV. The package still truncates each noisy conditional table
at the largest bin index seen in the data (``get_noisy_distribution_of_attributes``), which is not DP.

Seeding: the package seeds ``random`` and numpy's global generator from ``seed`` in the describer and again in the
generator; nothing else draws randomness (the worker pool only computes mutual information). Repeats with the same
seed are byte-identical.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import _common
import pandas as pd
from DataSynthesizer.DataDescriber import DataDescriber
from DataSynthesizer.DataGenerator import DataGenerator

DEFAULTS: dict[str, _common.ParamValue] = {"epsilon": 1.0, "k": 2, "bins": 20}
DATATYPE = {"integer": "Integer", "float": "Float", "categorical": "String"}


def generate(
    train: pd.DataFrame, schema: _common.Schema, rows: int, seed: int, params: dict[str, _common.ParamValue]
) -> pd.DataFrame:
    """Fit PrivBayes on ``train`` with the schema's domain and sample ``rows`` rows."""
    _common.seed_python_numpy(seed)
    describer = DataDescriber(histogram_bins=int(params["bins"]))
    # Hand over the typed rows instead of letting the package re-read (and re-type) the CSV.
    describer.read_dataset_from_csv = lambda file_name=None: setattr(describer, "df_input", train.copy())
    with tempfile.TemporaryDirectory(prefix="datasynth-") as tmp:
        domain_file = Path(tmp) / "categories.json"
        description_file = Path(tmp) / "description.json"
        domain_file.write_text(json.dumps({c.name: list(c.categories) for c in schema.columns if c.categories}))
        describer.describe_dataset_in_correlated_attribute_mode(
            dataset_file=None,
            k=int(params["k"]),
            epsilon=float(params["epsilon"]),
            attribute_to_datatype={c.name: DATATYPE[c.kind] for c in schema.columns},
            attribute_to_is_categorical={c.name: c.kind == "categorical" for c in schema.columns},
            attribute_to_is_candidate_key={c.name: False for c in schema.columns},
            categorical_attribute_domain_file=str(domain_file),
            numerical_attribute_ranges={c.name: [c.low, c.high] for c in schema.columns if c.kind != "categorical"},
            seed=seed,
        )
        describer.save_dataset_description_to_file(str(description_file))
        generator = DataGenerator()
        generator.generate_dataset_in_correlated_attribute_mode(rows, str(description_file), seed=seed)
    return generator.synthetic_dataset


if __name__ == "__main__":
    sys.exit(_common.main(generate, DEFAULTS, __doc__.splitlines()[0]))
