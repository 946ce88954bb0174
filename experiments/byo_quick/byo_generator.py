"""A table generator of your own, as a config plugin: ``byo-marginals`` samples every column independently.

Each synthetic row draws each column from that column's values in the input, with replacement (the product of the
input's marginals): it keeps every column's distribution and no relation between columns.  Such a generator is
not differentially private (it copies values, rare ones included), so the record games find the records whose
values are rare.  Registered when imported: ``[experiment] plugins = ["byo_generator"]`` (the config's folder is
searched for plugins, so this file beside the configs is found).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.engine.registry import MECHANISMS
from privgame.mechanisms._base import Mechanism


@dataclass(frozen=True, slots=True)
class IndependentMarginals(Mechanism):
    """Samples each column independently from the input's values (the product of its marginals)."""

    name: ClassVar[str] = "byo-marginals"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    rows: int | None = None  # synthetic rows; None: as many as the input

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        table = pd.DataFrame(data)
        n = len(table) if self.rows is None else self.rows
        picks = {column: rng.integers(0, len(table), n) for column in table.columns}
        return pd.DataFrame(
            {column: table[column].iloc[picks[column]].reset_index(drop=True) for column in table.columns}
        )

    def privacy_claim(self) -> None:
        return None


if IndependentMarginals.name not in MECHANISMS:
    MECHANISMS.register(IndependentMarginals)
