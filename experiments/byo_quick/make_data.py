"""Write ``medical.csv``: 3,000 synthetic patients (a seeded simulation, copied from nowhere) for the "Your own
data" examples.

Run: ``python experiments/byo_quick/make_data.py`` (it rewrites the file beside it, byte for byte the same).
Columns: ``age`` (int), ``sex`` and ``smoker`` (categories), ``bmi`` (float, one decimal), ``visits`` (int, a
Poisson count) and ``diagnosis`` (``healthy``/``sick``, a noisy function of the others).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def medical(n: int = 3000, seed: int = 2026) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    sex = rng.choice(["F", "M"], n)
    bmi = np.round(rng.normal(27.0, 5.0, n).clip(12.0, 60.0), 1)
    smoker = rng.choice(["no", "yes"], n, p=[0.7, 0.3])
    visits = rng.poisson(3, n).clip(0, 40)
    risk = 0.03 * (age - 50) + 0.1 * (bmi - 27) + 0.9 * (smoker == "yes") + 0.1 * visits + rng.normal(0, 1, n)
    diagnosis = np.where(risk > 0.6, "sick", "healthy")
    return pd.DataFrame(
        {"age": age, "sex": sex, "bmi": bmi, "smoker": smoker, "visits": visits, "diagnosis": diagnosis}
    )


if __name__ == "__main__":
    medical().to_csv(HERE / "medical.csv", index=False)
    print(f"wrote {HERE / 'medical.csv'}")
