"""The FPC simulation (experiments/fpc_simulation.py, SPEC §5): σ_emp/σ_analytic ≈ sqrt(FPC), corrected ≈ 1.

The script is imported from its file (experiments/ is not a package) and run once through ``main`` at its defaults.

Tolerance: per N₊/N the script averages the ratio over P = 100 independent pools, so (measured − truth) / se is
Student-t with 99 degrees of freedom plus the bias of a standard deviation estimate, −(1/(4(N₊ − 1)) + 1/(4(S − 1)))
relatively (pool variance and S = 400 shadow sets); with the per-pool relative spread
sqrt(1/(2(N₊ − 1)) + 1/(2(S − 1))) that bias is at most 0.4 se (at N₊ = 125, the smallest pool), so
|measured − sqrt(FPC)| < 4.5 se fails with probability ≤ 2 P(t₉₉ > 4.1) ≈ 8e-5 per ratio, ≤ 4e-4 for the five.
The corrected ratio is the measured one divided by sqrt(FPC), se too: its check against 1 is the same event.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from privgame.analysis.calibration import finite_population_correction

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "fpc_simulation.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fpc_simulation", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fpc_simulation() -> ModuleType:
    return _load()


def test_measured_ratio_is_sqrt_fpc_and_the_correction_restores_one(
    fpc_simulation: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figure = tmp_path / "fpc.png"
    result = fpc_simulation.main(["--seed", "0", "--figure", str(figure)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert json.loads(lines[-1]) == result  # ends with exactly the JSON line
    assert sum(line.startswith("N₊/N = ") for line in lines) == len(fpc_simulation.RATIOS)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keys = [f"{r:g}" for r in fpc_simulation.RATIOS]
    assert keys == ["1.25", "2", "4", "10", "20"]
    for key, ratio in zip(keys, fpc_simulation.RATIOS, strict=True):
        n_pool = round(ratio * fpc_simulation.N_TRAIN)
        fpc = finite_population_correction(fpc_simulation.N_TRAIN, n_pool)
        assert result["fpc"][key] == fpc
        assert result["sqrt_fpc"][key] == pytest.approx(math.sqrt(fpc), rel=1e-15)
        se, se_corrected = result["ratio_se"][key], result["ratio_corrected_se"][key]
        assert 0 < se < 0.02  # the simulation has the precision the check assumes
        assert abs(result["ratio"][key] - math.sqrt(fpc)) < 4.5 * se, key
        assert abs(result["ratio_corrected"][key] - 1.0) < 4.5 * se_corrected, key
    # the bias is visible where it is large: the measured ratio is far below 1 at N₊/N = 1.25 and 2
    assert result["ratio"]["1.25"] < 0.5 and result["ratio"]["2"] < 0.75


def test_same_seed_same_result_and_different_seed_differs(fpc_simulation: ModuleType) -> None:
    small = {"n_pools": 4, "n_shadows": 30, "ratios": (2.0, 4.0)}
    a = fpc_simulation.run(seed=1, **small)
    assert a == fpc_simulation.run(seed=1, **small)
    assert a != fpc_simulation.run(seed=2, **small)
    # each ratio has its own child seed: dropping one ratio leaves the other's result unchanged
    assert fpc_simulation.run(seed=1, **{**small, "ratios": (2.0,)})[0] == a[0]


def test_simulate_refuses_a_pool_that_is_not_a_whole_number(fpc_simulation: ModuleType) -> None:
    import numpy as np

    with pytest.raises(ValueError, match="must be an integer > n_train = 100"):
        fpc_simulation.simulate(1.005, n_train=100, n_pools=2, n_shadows=5, seed=np.random.SeedSequence(0))
    with pytest.raises(ValueError, match="must be an integer > n_train = 100"):
        fpc_simulation.simulate(1.0, n_train=100, n_pools=2, n_shadows=5, seed=np.random.SeedSequence(0))
