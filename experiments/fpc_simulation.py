"""Finite-population bias of efficient LiRA in a Gaussian simulation: σ_emp / σ_analytic ≈ sqrt(FPC) (SPEC §5).

Run:    python experiments/fpc_simulation.py [--figure docs/figures/fpc_simulation.png] [--seed 0]

A pool of N₊ records is drawn once from the population N(0, 1).  A "learning outcome" is the mean of a training set
of N records drawn WITHOUT replacement from that pool, as the shadow training sets of efficient LiRA are.  Its
analytic standard deviation, for a training set of independent draws from the population, is σ_analytic = 1/√N.
σ_emp is the standard deviation of the outcome over ``--shadows`` shadow training sets from ONE fixed pool; the
ratio σ_emp/σ_analytic is averaged over ``--pools`` independent pools (± its standard error across pools).  Sampling
theory (Cochran 1977, §2.5) predicts E[σ²_emp] = σ²_analytic · FPC with FPC = 1 − N/N₊, so the ratio should be
≈ sqrt(FPC) and the corrected ratio σ_emp / sqrt(FPC) / σ_analytic ≈ 1, for every N₊/N.

Prints one line per N₊/N and ends with one JSON line: ``{"ratio": {"2": ..., ...}, "ratio_corrected": {...},
"ratio_se": {...}, "ratio_corrected_se": {...}, "fpc": {...}, "sqrt_fpc": {...}, ...}``, keys ``f"{N₊/N:g}"``.
Each N₊/N gets its own child of ``SeedSequence(seed)`` (in the order of ``RATIOS``), each pool its own grandchild.
About 2 s on one core.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privgame.analysis.calibration import finite_population_correction

RATIOS: tuple[float, ...] = (1.25, 2.0, 4.0, 10.0, 20.0)
"""The pool-to-training-set ratios N₊/N (2 is efficient LiRA's halves)."""
N_TRAIN = 100
N_POOLS = 100
N_SHADOWS = 400


@dataclass(frozen=True, slots=True)
class RatioResult:
    """The simulation at one N₊/N: the measured ratio σ_emp/σ_analytic and the corrected one, each ± se."""

    pool_ratio: float
    n_train: int
    n_pool: int
    fpc: float
    ratio: float
    ratio_se: float
    ratio_corrected: float
    ratio_corrected_se: float

    @property
    def sqrt_fpc(self) -> float:
        return math.sqrt(self.fpc)


def simulate(
    pool_ratio: float, *, n_train: int, n_pools: int, n_shadows: int, seed: np.random.SeedSequence
) -> RatioResult:
    """σ_emp/σ_analytic of the mean of N = ``n_train`` records drawn without replacement from pools of N₊."""
    n_pool = round(pool_ratio * n_train)
    if not math.isclose(n_pool, pool_ratio * n_train) or n_pool <= n_train:
        raise ValueError(
            f"pool_ratio · n_train must be an integer > n_train = {n_train}, got {pool_ratio!r} · {n_train}."
        )
    fpc = finite_population_correction(n_train, n_pool)
    sigma_analytic = 1.0 / math.sqrt(n_train)  # the population is N(0, 1)
    ratios = np.empty(n_pools)
    for p, child in enumerate(seed.spawn(n_pools)):
        rng = np.random.default_rng(child)
        pool = rng.standard_normal(n_pool)
        # each shadow training set: the n_train records with the smallest of n_pool uniform keys (without replacement)
        chosen = np.argpartition(rng.random((n_shadows, n_pool)), n_train - 1, axis=1)[:, :n_train]
        outcomes = pool[chosen].mean(axis=1)
        ratios[p] = outcomes.std(ddof=1) / sigma_analytic
    corrected = ratios / math.sqrt(fpc)
    se = math.sqrt(n_pools)
    return RatioResult(
        pool_ratio=pool_ratio,
        n_train=n_train,
        n_pool=n_pool,
        fpc=fpc,
        ratio=float(ratios.mean()),
        ratio_se=float(ratios.std(ddof=1) / se),
        ratio_corrected=float(corrected.mean()),
        ratio_corrected_se=float(corrected.std(ddof=1) / se),
    )


def run(
    *,
    seed: int = 0,
    ratios: Sequence[float] = RATIOS,
    n_train: int = N_TRAIN,
    n_pools: int = N_POOLS,
    n_shadows: int = N_SHADOWS,
) -> list[RatioResult]:
    """The simulation at every N₊/N of ``ratios``, each from its own child of ``SeedSequence(seed)``."""
    children = np.random.SeedSequence(seed).spawn(len(ratios))
    return [
        simulate(r, n_train=n_train, n_pools=n_pools, n_shadows=n_shadows, seed=child)
        for r, child in zip(ratios, children, strict=True)
    ]


def summary(results: Sequence[RatioResult], *, seed: int, n_pools: int, n_shadows: int) -> dict[str, object]:
    """The JSON summary: per N₊/N (keys ``f"{N₊/N:g}"``) the measured and corrected ratios and their se."""

    def per_ratio(values: Sequence[float]) -> dict[str, float]:
        return {f"{r.pool_ratio:g}": v for r, v in zip(results, values, strict=True)}

    return {
        "ratio": per_ratio([r.ratio for r in results]),
        "ratio_corrected": per_ratio([r.ratio_corrected for r in results]),
        "ratio_se": per_ratio([r.ratio_se for r in results]),
        "ratio_corrected_se": per_ratio([r.ratio_corrected_se for r in results]),
        "fpc": per_ratio([r.fpc for r in results]),
        "sqrt_fpc": per_ratio([r.sqrt_fpc for r in results]),
        "n_train": results[0].n_train if results else N_TRAIN,
        "n_pools": n_pools,
        "n_shadows": n_shadows,
        "seed": seed,
    }


def plot(results: Sequence[RatioResult], path: str | Path) -> Path:
    """σ_emp/σ_analytic against N/N₊ with the sqrt(FPC) curve, and the corrected ratios at 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    fraction = np.array([1.0 / r.pool_ratio for r in results])
    fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
    grid = np.linspace(0.0, 0.9, 200)
    ax.plot(grid, np.sqrt(1.0 - grid), color="grey", linewidth=1.2, label=r"$\sqrt{\mathrm{FPC}} = \sqrt{1 - N/N_+}$")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
    ax.errorbar(
        fraction,
        [r.ratio for r in results],
        yerr=[r.ratio_se for r in results],
        fmt="o",
        color="tab:red",
        capsize=3,
        label=r"measured $\sigma_\mathrm{emp} / \sigma_\mathrm{analytic}$",
    )
    ax.errorbar(
        fraction,
        [r.ratio_corrected for r in results],
        yerr=[r.ratio_corrected_se for r in results],
        fmt="s",
        color="tab:blue",
        capsize=3,
        label=r"corrected $\sigma_\mathrm{emp} / \sqrt{\mathrm{FPC}} / \sigma_\mathrm{analytic}$",
    )
    top = ax.secondary_xaxis("top")
    top.set_xticks(fraction, [f"{r.pool_ratio:g}" for r in results], fontsize="small")
    top.set_xlabel(r"pool-to-training ratio $N_+/N$", fontsize="small")
    ax.set_xlim(0.0, 0.9)
    ax.set_ylim(0.3, 1.12)
    ax.set_xlabel(r"training fraction of the pool, $N / N_+$")
    ax.set_ylabel(r"$\sigma_\mathrm{emp} / \sigma_\mathrm{analytic}$")
    ax.set_title(
        "Efficient LiRA: shadow sets from one pool underestimate σ by sqrt(FPC)\n"
        f"(outcome: mean of N = {results[0].n_train} N(0, 1) records; ± se over pools)",
        fontsize="medium",
    )
    ax.legend(loc="lower left", fontsize="small")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--figure", default=None, help="write the figure here (e.g. docs/figures/fpc_simulation.png)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pools", type=int, default=N_POOLS)
    parser.add_argument("--shadows", type=int, default=N_SHADOWS)
    args = parser.parse_args(argv)
    results = run(seed=args.seed, n_pools=args.pools, n_shadows=args.shadows)
    print(
        f"mean of N = {N_TRAIN} records drawn without replacement from a pool of N₊ ~ N(0, 1); "
        f"{args.shadows} shadow sets per pool, {args.pools} pools, seed {args.seed}"
    )
    for r in results:
        print(
            f"N₊/N = {r.pool_ratio:<5g} FPC = {r.fpc:.4f}  sqrt(FPC) = {r.sqrt_fpc:.4f}  "
            f"σ_emp/σ_analytic = {r.ratio:.4f} ± {r.ratio_se:.4f}  "
            f"corrected = {r.ratio_corrected:.4f} ± {r.ratio_corrected_se:.4f}"
        )
    if args.figure:
        print(f"figure written to {plot(results, args.figure)}")
    result = summary(results, seed=args.seed, n_pools=args.pools, n_shadows=args.shadows)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
