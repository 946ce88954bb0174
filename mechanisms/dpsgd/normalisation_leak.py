"""The realised-batch normalisation's leak: a multi-run audit of the update's norm (docs/dpsgd_variants.md).

Dividing DP-SGD's noisy sum by the realised batch size |B_t| (``normalisation = "realised"``) makes the scale of
the released update depend on who is in the data set.  Along any single coordinate the signal-to-noise ratio of an
example is the correct step's (C against σC, both divided by |B_t|), so a per-canary audit sees nothing; the leak is
the count |B_t| itself, read off the norm of the whole update: ``‖Z‖/|B_t|`` with ``Z ~ N(0, σ²C² I_d)`` has
relative spread ``1/√(2d)``, while one more example changes ``|B_t|`` by ``1/|B_t|`` in relative terms.  At full
batch (q = 1, |B_t| = n or n + 1 deterministically) one step is about a ``√(2d)/n``-GDP channel, far beyond the
Gaussian claim ``1/σ`` once ``d ≫ n²σ²``.  Poisson sampling hides the count in ``Bin(n, q)``: the channel falls to
about ``√(q / (n(1 − q)))`` per step.

:func:`update_norm_audit` measures it: R runs with the target row and R without, one DP-SGD step each through the
engine (:func:`privgame.mechanisms.dpsgd.sgd.train_ensemble`, a linear model on Gaussian features), scored by minus the
norm of the update, audited by :func:`privgame.analysis.multi_run.audit_scores` (Clopper–Pearson, sound for any
mechanism) and put beside the subsampled-Gaussian claim the broken code would report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from privgame.analysis._checks import check_confidence, check_int, check_real
from privgame.analysis.accounting import dpsgd_claim
from privgame.analysis.multi_run import audit_scores
from privgame.analysis.thresholds import Bonferroni
from privgame.mechanisms.dpsgd.devices import make_generator
from privgame.mechanisms.dpsgd.sgd import DPSGDConfig, check_normalisation, train_ensemble

__all__ = ["NormLeak", "update_norm_audit", "update_norm_scores"]

#: runs trained at once (K models of d·2 parameters each)
_CHUNK = 100


@dataclass(frozen=True, slots=True)
class NormLeak:
    """What :func:`update_norm_audit` measured.

    Attributes
    ----------
    epsilon_lb : float
        The multi-run audit's lower bound on ε at ``confidence`` (δ = ``delta``).
    claim : float
        The subsampled-Gaussian ε at ``delta`` that DP-SGD's accounting reports for (q, σ, T = 1).
    count_channel_mu : float
        The count channel's μ predicted in the module docstring: ``√(2d)/n`` at q = 1, ``√(q/(n(1 − q)))`` below.
    refuted : bool
        ``epsilon_lb > claim``.
    """

    epsilon_lb: float
    claim: float
    count_channel_mu: float
    refuted: bool


def _checked(
    normalisation: str, rows: int, features: int, sigma: float, sampling_rate: float, runs: int
) -> tuple[str, int, int, float, float, int]:
    norm = check_normalisation(normalisation)
    n = check_int("rows", rows, low=1, high=1_000_000)
    d = check_int("features", features, low=1, high=10_000_000)
    if 2 * d * min(runs, _CHUNK) > 50_000_000:
        raise ValueError(f"features = {d} makes {min(runs, _CHUNK)} models of {2 * d + 2} parameters: too large.")
    s = check_real("sigma", sigma, low=0.0, low_open=True)
    q = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True)
    r = check_int("runs", runs, low=1, high=1_000_000)
    return norm, n, d, s, q, r


def update_norm_scores(
    normalisation: str,
    *,
    rows: int,
    features: int,
    sigma: float,
    sampling_rate: float = 1.0,
    runs: int = 500,
    seed: int = 0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Minus the norm of one DP-SGD update, over ``runs`` runs with the target and ``runs`` without.

    Parameters
    ----------
    normalisation : {"expected", "none", "realised"}
        What the noisy sum is divided by (:data:`privgame.mechanisms.dpsgd.sgd.NORMALISATIONS`); the public N of
        ``"expected"`` is ``rows`` in both worlds.
    rows : int
        n, the rows without the target (Gaussian features, random binary labels, drawn from ``seed``).
    features : int
        The linear model's inputs; it has d = 2·features + 2 parameters.
    sigma : float
        The noise multiplier σ (C = 1).
    sampling_rate : float, default=1.0
        q, Poisson sampling.
    runs : int, default=500
        R runs per world.
    seed : int, default=0

    Returns
    -------
    (in_scores, out_scores) : tuple of ndarray
        ``−‖θ_1 − θ_0‖`` in the runs with the target (row n + 1) and without.
    """
    norm, n, d, s, q, r = _checked(normalisation, rows, features, sigma, sampling_rate, runs)
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.normal(size=(n + 1, d)))
    y = torch.from_numpy(rng.integers(2, size=n + 1))
    config = DPSGDConfig(
        sampling_rate=q,
        noise_multiplier=s,
        clip_norm=1.0,
        steps=1,
        learning_rate=1.0,
        device="cpu",
        dataset_size=n,
        normalisation=norm,
    )
    root = np.random.SeedSequence(seed)
    worlds = []
    for with_target, stream in zip((True, False), root.spawn(2), strict=True):
        rows_used = n + 1 if with_target else n
        scores = []
        for chunk in _chunks(stream.spawn(r)):
            generators = [make_generator(c) for c in chunk]
            models = [nn.Linear(d, 2, dtype=torch.float64) for _ in chunk]
            for model in models:  # a fixed start: the update, not the initialisation, is what is scored
                nn.init.zeros_(model.weight)
                nn.init.zeros_(model.bias)
            trained = train_ensemble(models, x[:rows_used], y[:rows_used], config, generators=generators)
            with torch.no_grad():
                scores += [-math.sqrt(sum(float(p.square().sum()) for p in m.parameters())) for m in trained]
        worlds.append(np.asarray(scores, dtype=np.float64))
    return worlds[0], worlds[1]


def _chunks(seeds: list[np.random.SeedSequence]) -> list[list[np.random.SeedSequence]]:
    return [seeds[i : i + _CHUNK] for i in range(0, len(seeds), _CHUNK)]


def update_norm_audit(
    normalisation: str,
    *,
    rows: int,
    features: int,
    sigma: float,
    sampling_rate: float = 1.0,
    runs: int = 500,
    seed: int = 0,
    confidence: float = 0.95,
    delta: float = 1e-5,
) -> NormLeak:
    """The multi-run audit of :func:`update_norm_scores` beside the subsampled-Gaussian claim at (q, σ, T = 1).

    The audit (:func:`privgame.analysis.multi_run.audit_scores`, Bonferroni over 100 thresholds) is sound for any
    mechanism whose runs are independent, so a bound above the claim refutes it at ``confidence``.

    Examples
    --------
    >>> leak = update_norm_audit("realised", rows=20, features=5000, sigma=4.0, runs=200)
    >>> leak.refuted, round(leak.claim, 3)
    (True, 0.926)
    """
    conf = check_confidence(confidence)
    norm, n, d, s, q, r = _checked(normalisation, rows, features, sigma, sampling_rate, runs)
    ins, outs = update_norm_scores(norm, rows=n, features=d, sigma=s, sampling_rate=q, runs=r, seed=seed)
    bound = audit_scores(ins, outs, confidence=conf, delta=delta, threshold=Bonferroni(100)).epsilon
    claim = dpsgd_claim(s, q, 1).epsilon(delta)
    params = 2 * d + 2
    gdp = math.sqrt(2 * params) / n if q == 1.0 else math.sqrt(q / (n * (1.0 - q)))
    return NormLeak(epsilon_lb=float(bound), claim=float(claim), count_channel_mu=gdp, refuted=bool(bound > claim))
