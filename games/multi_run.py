"""The classic multi-run audit: many independent runs with or without one target, Clopper–Pearson over all runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int
from privgame.analysis.multi_run import audit_scores
from privgame.analysis.thresholds import Bonferroni
from privgame.attacks._base import Attack
from privgame.data.canaries import canary_data, canary_incompatibility, canary_trial_bytes, check_canary_parameters
from privgame.games._base import AnalysisSettings, Game, TrialContext, TrialOutcome, role_seeds
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.cached import cached_release_many

__all__ = ["MultiRunGame"]

# Role streams of a trial, in a fixed order (never reorder: it would change every stored result).
_MEMBERSHIP, _MECHANISM, _ATTACK_FIT = range(3)
_N_ROLES = 3
_ANALYSIS = 3  # the analysis's stream (a split's mask), after the play's roles: role_seeds(seed, 4)[3]


@dataclass(frozen=True, slots=True)
class MultiRunGame(Game):
    """K independent runs per trial, half with the target canary and half without; one score per run.

    Parameters
    ----------
    runs : int, default=32
        Runs per trial (K ≥ 2), handed to the mechanism at once through ``Mechanism.release_runs`` so that
        mechanisms that batch (DP-SGD trains K models in one pass) do; ⌈K/2⌉ include the target.
    thresholds : int, default=100
        Candidate thresholds of the Clopper–Pearson bound (:class:`privgame.analysis.thresholds.Bonferroni`).
    data, train_rows, canary, canary_seed
        The rows and the one canary example a ``"canary-dataset"`` mechanism (DP-SGD) trains on, as
        :class:`privgame.games.one_run.OneRunGame` (:mod:`privgame.data.canaries`) with m = 1; ``data = None`` (the
        default) for ``"canary-bits"`` mechanisms.

    Notes
    -----
    Threat model (Jagielski et al. [1]_): the auditor fixes one target canary; each run trains (or runs) the
    mechanism on the data with or without it, independently; the adversary sees one run's release and scores the
    target.  A trial plays K runs: which of them include the target is a seeded shuffle of ⌈K/2⌉ ones (the
    membership stream), each run's randomness is its own child of the mechanism stream, so run j's release is
    the same whether it was batched with others or not.  The training rows and the canary example are fixed by
    the game's parameters, the same in every run.  ``analyse_trial`` gives the trial's own bound (K runs);
    ``summarise`` pools every run of a grid point into one bound — the multi-run audit's headline number,
    ``epsilon_lb`` — with Clopper–Pearson intervals on FPR and FNR at β/2 each and a Bonferroni-paid threshold
    (:func:`privgame.analysis.multi_run.audit_scores`).  The pooled bound is sound because the runs of all trials are
    independent (each trial seed is an independent SeedSequence child).

    References
    ----------
    .. [1] M. Jagielski, J. Ullman, A. Oprea. Auditing Differentially Private Machine Learning: How Private is
       Private SGD? NeurIPS 2020, arXiv:2006.07709.
    """

    name: ClassVar[str] = "multi-run"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"canary-bits", "canary-dataset"})
    # the bound pooled over every run of a grid point; one trial's own K runs are too few to bound anything
    headline: ClassVar[str] = "epsilon_lb"
    headline_band: ClassVar[tuple[str, str] | None] = None
    bound_kind: ClassVar[str | None] = "runs"
    headline_estimator: ClassVar[str | None] = "clopper_pearson"  # its own bound: Bonferroni over its thresholds

    runs: int = 32
    thresholds: int = 100
    data: str | None = None
    train_rows: int = 1000
    canary: str | None = None
    canary_seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "runs", check_int("runs", self.runs, low=2))
        object.__setattr__(self, "thresholds", check_int("thresholds", self.thresholds, low=1))
        checked = check_canary_parameters(self.data, self.train_rows, self.canary, self.canary_seed, m=1, what=None)
        for name, value in zip(("data", "train_rows", "canary", "canary_seed"), checked, strict=True):
            object.__setattr__(self, name, value)

    def incompatibility(self, mechanism: Mechanism, attack: Attack) -> str | None:
        """The default checks, then the data (as :meth:`privgame.games.one_run.OneRunGame.incompatibility`)."""
        reason = Game.incompatibility(self, mechanism, attack)  # zero-argument super() fails in slotted dataclasses
        if reason is not None:
            return reason
        return canary_incompatibility(self.name, mechanism, data=self.data, canary=self.canary)

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        """K releases on one-canary inputs (over the game's rows, for a canary-dataset mechanism), handed over at
        once, and their scores."""
        return self.runs * (64 + canary_trial_bytes(mechanism, 1, data=self.data, train_rows=self.train_rows))

    def _runs(self, mechanism: Mechanism, seed: np.random.SeedSequence) -> tuple[np.ndarray, list[Any], list[Any]]:
        """The trial's membership bits, each run's input and each run's seed."""
        seeds = role_seeds(seed, _N_ROLES)
        membership = np.zeros(self.runs, dtype=bool)
        membership[: (self.runs + 1) // 2] = True
        np.random.default_rng(seeds[_MEMBERSHIP]).shuffle(membership)
        bits = [np.array([bit]) for bit in membership]
        if mechanism.input_kind == "canary-dataset" and self.data is not None:
            first = canary_data(
                bits[0], data=self.data, train_rows=self.train_rows, canary=self.canary, canary_seed=self.canary_seed
            )
            data: list[Any] = [first.with_membership(b) for b in bits]
        else:
            data = list(bits)
        return membership, data, seeds[_MECHANISM].spawn(self.runs)

    def separate_runs(self, mechanism: Mechanism, attack: Attack) -> int:
        """Every run, for a DP-SGD canary mechanism whose releases the cache keeps (``caches_canary_release``: a
        model trained per run); none for the cheap mechanisms on bits, which a task would only slow down."""
        cached = getattr(mechanism, "caches_canary_release", False) and mechanism.input_kind == "canary-dataset"
        return self.runs if cached and self.data is not None else 0

    def run_batch(self, mechanism: Mechanism, attack: Attack) -> int:
        """``runs``: the trial trains them all in one batched call anyway (its memory estimate holds them)."""
        return self.runs

    def make_runs(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        runs: range,
        context: TrialContext,
    ) -> None:
        """Make the runs ``runs`` into the artefact cache, in one batched call (:meth:`play` reads them there)."""
        total = self.separate_runs(mechanism, attack)
        if not runs or runs.start < 0 or runs.stop > total or runs.step != 1:
            raise ValueError(f"runs must be a non-empty range of run indices in [0, {total}), got {runs!r}.")
        _, data, seeds = self._runs(mechanism, seed)
        part = slice(runs.start, runs.stop)
        cached_release_many(mechanism, data[part], seeds=seeds[part], cache=context.cache)

    def play(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        context: TrialContext | None = None,
    ) -> TrialOutcome:
        membership, data, run_seeds = self._runs(mechanism, seed)
        seeds = role_seeds(seed, _N_ROLES)
        cache = None if context is None else context.cache
        if self.separate_runs(mechanism, attack):  # through the cache: runs made apart are read, not trained again
            releases = cached_release_many(mechanism, data, seeds=run_seeds, cache=cache)
        else:
            releases = mechanism.release_runs(data, rngs=[np.random.default_rng(s) for s in run_seeds])
        fitted = attack.fit(None, rng=np.random.default_rng(seeds[_ATTACK_FIT]))
        target = np.zeros(1, dtype=np.intp)
        scores = np.array([fitted.score(release, target)[0] for release in releases], dtype=np.float64)
        return TrialOutcome(scores=scores, membership=membership)

    def _audit(self, scores: np.ndarray, membership: np.ndarray, settings: AnalysisSettings) -> dict[str, float]:
        result = audit_scores(
            scores[membership],
            scores[~membership],
            confidence=settings.confidence,
            delta=settings.delta,
            threshold=Bonferroni(self.thresholds),
        )
        return {"epsilon_lb": result.epsilon, "fpr_ub": result.details["fpr_ub"], "fnr_ub": result.details["fnr_ub"]}

    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        counts = {"n_in": int(outcome.membership.sum()), "n_runs": self.runs}
        if settings.custom:
            from privgame.games.bounds import bound_columns

            rng = np.random.default_rng(role_seeds(seed, _ANALYSIS + 1)[_ANALYSIS])
            columns = bound_columns(
                settings, outcome.scores, outcome.membership, has_runs=True, rng=rng, default=self._threshold()
            )
            return {**columns, **counts}
        audit = self._audit(outcome.scores, outcome.membership, settings)
        return {"epsilon_lb": audit["epsilon_lb"], **counts}

    def _threshold(self) -> tuple[tuple[str, Any], ...]:
        """The game's own rule, Bonferroni over ``thresholds`` candidates, in
        :func:`privgame.games.bounds.check_threshold`
        form."""
        return (("candidates", self.thresholds), ("rule", "bonferroni"))

    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, Any]:
        outcomes = [load_outcome(int(t)) for t in rows["trial"]]
        scores = np.concatenate([o.scores for o in outcomes])
        membership = np.concatenate([o.membership for o in outcomes])
        if settings.custom:
            return self._summarise_custom(rows, settings, scores, membership)
        from privgame.analysis.verdict import pooled_verdict
        from privgame.games.bounds import tightness

        pooled = self._audit(scores, membership, settings)
        per_trial = rows["epsilon_lb"].to_numpy(dtype=float)
        analytic = float(rows["epsilon_analytic"].iloc[0])
        return {
            "epsilon_analytic": analytic,
            "epsilon_lb": pooled["epsilon_lb"],
            "fpr_ub": pooled["fpr_ub"],
            "fnr_ub": pooled["fnr_ub"],
            "tightness": tightness(pooled["epsilon_lb"], analytic),
            "verdict": pooled_verdict(pooled["epsilon_lb"], analytic, settings.confidence),
            "n_runs": int(scores.size),
            "epsilon_lb_median": float(np.median(per_trial)),
            "epsilon_lb_min": float(np.min(per_trial)),
            "epsilon_lb_max": float(np.max(per_trial)),
            "n_trials": len(per_trial),
        }

    def _summarise_custom(
        self, rows: pd.DataFrame, settings: AnalysisSettings, scores: np.ndarray, membership: np.ndarray
    ) -> dict[str, Any]:
        """Each chosen estimator pooled over every run of the grid point (``<label>.epsilon_lb``, the first also
        ``epsilon_lb``), with the per-trial summaries; a split's mask is drawn from the pooled trials' indices."""
        from privgame.analysis.verdict import pooled_verdict
        from privgame.games.bounds import pooled_columns, summary_columns, tightness

        analytic = float(rows["epsilon_analytic"].iloc[0])
        rng = np.random.default_rng(np.random.SeedSequence([int(t) for t in rows["trial"]]))
        pooled = pooled_columns(settings, rows, scores, membership, rng=rng, default=self._threshold())

        out: dict[str, Any] = {
            "epsilon_analytic": analytic,
            **pooled,
            "tightness": tightness(pooled["epsilon_lb"], analytic),
        }
        # the per-trial bounds' spread; tightness and the verdict are the pooled bound's
        pooled_only = (".tightness", ".over_claim", ".over_claim_allowed", ".verdict_p", ".verdict")
        for column, value in summary_columns(rows, analytic, settings.confidence).items():
            if not column.endswith(pooled_only):
                out[column] = value
        for column in [c for c in pooled if c.endswith(".epsilon_lb")]:
            out[column.replace(".epsilon_lb", ".tightness")] = tightness(float(pooled[column]), analytic)  # pooled
            # the verdict of the pooled bound, one test at the confidence (the per-trial binomial verdict's place)
            out[column.replace(".epsilon_lb", ".verdict")] = pooled_verdict(
                float(pooled[column]), analytic, settings.confidence
            )
        return {**out, "n_runs": int(scores.size), "n_trials": len(rows)}
