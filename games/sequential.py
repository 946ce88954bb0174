"""The sequential audit of one grid point (``[analysis] sequential = true``): its trials read in repetition order by
the anytime-valid test of :mod:`privgame.analysis.sequential`, the runner stopping the grid point at refutation.

The same function decides, from the stored rows, when the runner stops playing a grid point's repetitions and what
the report reads: trials 0, 1, …, t* in repetition order, t* the first at which the e-value reaches 1/α, or every
repetition up to the budget (``[experiment] repetitions``).  Trials past t* that a worker had already started are
stored but never read, so the stopping trial and every number reported are the same whatever the workers.  A
repetition not finished yet (in progress, failed) ends what can be read: the test waits for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privgame.analysis.sequential import SequentialResult, sequential_test
from privgame.analysis.verdict import NO_CLAIM, NOT_REFUTED, refuted_label
from privgame.games.bounds import guaranteed

__all__ = [
    "FIXED_SAMPLE_ONLY",
    "UNDECIDED",
    "SequentialRead",
    "bound_columns_of",
    "check_sequential",
    "exceedances",
    "read_grid_point",
    "read_sequential",
    "rows_read",
    "sequential_columns",
    "sequential_stop",
    "sequential_summary",
    "stops_from_rows",
]

#: The verdict of a sequential audit that has neither refuted its claim nor spent its budget (trials missing).
UNDECIDED = "undecided"


@dataclass(frozen=True, slots=True)
class SequentialRead:
    """What a sequential audit of one grid point read: the rows (in repetition order) and the test's result."""

    rows: pd.DataFrame
    result: SequentialResult
    budget: int
    claim: float


def bound_columns_of(columns: Sequence[str]) -> list[str]:
    """The per-trial bound columns the test bets on: each estimator's ``<label>.epsilon_lb`` whose bound is
    guaranteed (:func:`privgame.games.bounds.guaranteed`: one that is not may exceed a true claim in most trials,
    and betting on it would refute the claim), or the game's own ``epsilon_lb`` when the rows name no estimator; a
    parametric estimate (``<label>.epsilon_estimate``) is no bound and never one of them."""
    labelled = [c for c in columns if c.endswith(".epsilon_lb")]
    if labelled:
        return [c for c in labelled if guaranteed(c.removesuffix(".epsilon_lb"))]
    return ["epsilon_lb"] if "epsilon_lb" in columns else []


def exceedances(rows: pd.DataFrame, claim: float) -> np.ndarray:
    """(trials, estimators) booleans: each trial's bound above ``claim`` (NaN bounds: False), rows in their order."""
    columns = bound_columns_of(list(rows.columns))
    if not columns:
        raise ValueError(
            f"a sequential audit needs per-trial bounds (epsilon_lb), got the columns {list(rows.columns)}."
        )
    bounds = rows[columns].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(bounds, nan=-math.inf) > claim


def read_sequential(rows: pd.DataFrame, claim: float, confidence: float, budget: int) -> SequentialRead:
    """The sequential test on the finished ``rows`` of one grid point: the longest run of consecutive repetitions
    from 0 (at most ``budget``), read in order until the e-value reaches 1/α."""
    ordered = rows.sort_values("repetition", kind="stable")
    reps = ordered["repetition"].to_numpy(dtype=np.int64)
    # the prefix 0, 1, …, n − 1 present: a repetition not finished yet stops what may be read
    n = 0
    while n < reps.size and n < budget and reps[n] == n:
        n += 1
    prefix = ordered.iloc[:n]
    if math.isnan(claim):
        result = SequentialResult(n, False, 1.0, np.ones(n))
        return SequentialRead(prefix, result, budget, claim)
    result = sequential_test(exceedances(prefix, claim), confidence)
    return SequentialRead(prefix.iloc[: result.trials], result, budget, claim)


def read_grid_point(rows: pd.DataFrame, settings: Any) -> SequentialRead:
    """:func:`read_sequential` on the non-empty stored ``rows`` of one grid point, with its analysis ``settings``:
    their claim (the rows' ``epsilon_analytic``), confidence and budget (``settings.budget``, bound by the runner
    and the report; else the repetitions the rows reach)."""
    budget = settings.budget if settings.budget is not None else int(rows["repetition"].max()) + 1
    return read_sequential(rows, float(rows["epsilon_analytic"].iloc[0]), settings.confidence, budget)


def rows_read(rows: pd.DataFrame, settings: Any) -> pd.DataFrame:
    """The rows of one grid point that a report summarises: with ``settings.sequential``, those its sequential
    audit read (:func:`read_grid_point`; trials a worker played past the stop are left out, so every figure is
    the same whatever the workers), else every row."""
    if not getattr(settings, "sequential", False) or rows.empty:
        return rows
    return read_grid_point(rows, settings).rows


def sequential_stop(rows: pd.DataFrame, claim: float, confidence: float, budget: int) -> int | None:
    """The repetition at which the runner may stop the grid point (every later one is never read): the last one
    read when the test refuted, else None (keep playing)."""
    read = read_sequential(rows, claim, confidence, budget)
    return read.result.trials - 1 if read.result.stopped else None


def sequential_summary(read: SequentialRead, confidence: float) -> dict[str, Any]:
    """The report's columns of a sequential audit: ``verdict`` (refuted, "not refuted" once the budget is spent,
    "undecided" before), ``sequential_e`` (the e-value after the last trial read: the evidence against the claim,
    refuted at 1/α), ``sequential_trials`` (the trials read) and ``sequential_budget``."""
    result = read.result
    if math.isnan(read.claim):
        verdict = NO_CLAIM
    elif result.stopped:
        verdict = refuted_label(confidence)
    elif result.trials >= read.budget:
        verdict = NOT_REFUTED
    else:
        verdict = UNDECIDED
    return {
        "verdict": verdict,
        "sequential_e": result.e_value if not math.isnan(read.claim) else math.nan,
        "sequential_trials": result.trials,
        "sequential_budget": read.budget,
    }


def stops_from_rows(
    rows: pd.DataFrame, claims: Mapping[int, float], confidence: Mapping[int, float], budget: int
) -> dict[int, int]:
    """Each sequential grid point's stopping repetition, from stored rows (a resumed run plays no trial past it)."""
    out: dict[int, int] = {}
    for g, claim in claims.items():
        part = rows[rows["grid_point"] == g] if len(rows) else rows
        if len(part):
            stop = sequential_stop(part, claim, confidence[g], budget)
            if stop is not None:
                out[g] = stop
    return out


def check_sequential(game: Any, settings: Any = None) -> str | None:
    """Why ``[analysis] sequential`` cannot run on ``game`` with ``settings`` (bound to the mechanism's claim), or
    None: it needs a game whose every trial is its own bound at the confidence (the one-run audit), and among the
    chosen estimators at least one guaranteed bound (:func:`bound_columns_of`)."""
    if getattr(game, "bound_kind", None) != "one-run":
        return (
            f"sequential = true needs a game whose every trial is a bound of its own (one-run), got the "
            f"{getattr(game, 'name', type(game).__name__)} game"
        )
    if settings is None or settings.estimators is None:
        return None
    from privgame.games.bounds import resolved_estimators

    try:
        resolved = resolved_estimators(settings, has_runs=False)
    except ValueError:  # the estimators' own check names it, in its own line
        return None
    if bound_columns_of([f"{e.label}.epsilon_lb" for e in resolved if not e.is_estimate]):
        return None
    return (
        f"sequential = true bets on the estimators' bounds, and none of {', '.join(e.label for e in resolved)} is "
        "a guaranteed bound (an unmatched family, order statistics on dependent canaries, a parametric estimate: "
        "not guaranteed, a true claim could be refuted); name one that is as well, such as steinke"
    )


#: The fixed-sample verdict's columns a sequential audit drops: they would claim a level they do not have at a
#: stopping time the data chose (the count of exceedances, over_claim, is kept: it is a plain count).
FIXED_SAMPLE_ONLY = ("over_claim_allowed", "verdict_p", "verdict")


def sequential_columns(
    verdict: Mapping[str, Any], sequential: Mapping[str, Any], per_estimator: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A one-run summary's verdict columns for a sequential audit: the count of exceedances, then the sequential
    test's verdict and evidence in place of the binomial test's; each estimator's fixed-sample verdict dropped."""
    top = {k: v for k, v in verdict.items() if k not in FIXED_SAMPLE_ONLY}
    top.update(sequential)
    rest = {k: v for k, v in per_estimator.items() if k.rpartition(".")[2] not in FIXED_SAMPLE_ONLY}
    return top, rest
