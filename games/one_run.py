"""The one-run audit game of Steinke, Nasr and Jagielski (2023)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int
from privgame.attacks._base import Attack
from privgame.data.canaries import canary_data, canary_incompatibility, canary_trial_bytes, check_canary_parameters
from privgame.games._base import AnalysisSettings, Game, TrialContext, TrialOutcome, role_seeds
from privgame.mechanisms._base import Mechanism

__all__ = ["OneRunGame"]

# Role streams of a trial, in a fixed order (never reorder: it would change every stored result).
_MEMBERSHIP, _MECHANISM, _ATTACK_FIT, _GUESS = range(4)
_N_ROLES = 4


@dataclass(frozen=True, slots=True)
class OneRunGame(Game):
    """m canaries, each a member independently with probability 1/2; the mechanism runs once.

    Parameters
    ----------
    m : int
        Number of canaries, ``>= 1``.
    k_pos : int
        The ``k_pos`` highest scores are guessed "member".
    k_neg : int
        The ``k_neg`` lowest scores are guessed "non-member"; ``1 <= k_pos + k_neg <= m``.
    data : {"digits", "adult", "compas"} or None, default=None
        The data set a ``"canary-dataset"`` mechanism (DP-SGD) trains on (:mod:`privgame.data.canaries`); ``None`` for
        ``"canary-bits"`` mechanisms, which get the membership bits alone.
    train_rows : int, default=1000
        The real training rows: the first ``train_rows`` records of ``data``.
    canary : {"mislabel", "ood"} or None, default=None
        The canary examples, for mechanisms that train on them: held-out records of ``data`` with the next label
        (at most the records after ``train_rows``), or uniform noise with random labels; ``None`` for mechanisms
        whose canaries are not examples.
    canary_seed : int, default=0
        Seed of the canaries' choice.

    Notes
    -----
    Threat model: the auditor chooses the canaries and the guessing rule (k₊, k₋) in advance; the secret is the
    vector of membership bits S ~ Bernoulli(1/2)^m; the adversary sees the mechanism's release and scores every
    canary.  Random per trial, each from its own stream of the trial seed: the membership bits, the mechanism's
    noise, the attack's fitting, and the order in which ties at the guessing cuts are broken (independent of
    membership).  The training rows and canary examples are no secret and not random per trial: a function of
    (data, train_rows, canary, canary_seed, m), fixed before the membership.  ``analyse_trial`` turns the
    guesses' (r, v) into the ε lower bound of Theorem 5.2 of [1]_.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846.
    """

    name: ClassVar[str] = "one-run"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"canary-bits", "canary-dataset"})
    bound_kind: ClassVar[str | None] = "one-run"
    headline_estimator: ClassVar[str | None] = "steinke"  # its own bound: Steinke's, on the top-k guesses

    m: int
    k_pos: int
    k_neg: int
    data: str | None = None
    train_rows: int = 1000
    canary: str | None = None
    canary_seed: int = 0

    def __post_init__(self) -> None:
        m = check_int("m", self.m, low=1)
        kp = check_int("k_pos", self.k_pos, low=0)
        kn = check_int("k_neg", self.k_neg, low=0)
        if not 1 <= kp + kn <= m:
            raise ValueError(f"k_pos + k_neg must be between 1 and m = {m}, got {kp} + {kn} = {kp + kn}.")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "k_pos", kp)
        object.__setattr__(self, "k_neg", kn)
        checked = check_canary_parameters(self.data, self.train_rows, self.canary, self.canary_seed, m=m)
        for name, value in zip(("data", "train_rows", "canary", "canary_seed"), checked, strict=True):
            object.__setattr__(self, name, value)

    def incompatibility(self, mechanism: Mechanism, attack: Attack) -> str | None:
        """The default checks, then the data: a canary-bits mechanism takes none, a canary-dataset one needs
        ``data`` (and ``canary`` exactly when it trains on canary examples)."""
        reason = Game.incompatibility(self, mechanism, attack)  # zero-argument super() fails in slotted dataclasses
        if reason is not None:
            return reason
        return canary_incompatibility(
            self.name, mechanism, data=self.data, canary=self.canary, m=self.m, rows=self.train_rows
        )

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        """m membership bits, scores, guesses and the sort of the audit (about 64 bytes per canary), plus one
        release on m canaries (and the game's rows, for a canary-dataset mechanism)."""
        return 64 * self.m + canary_trial_bytes(mechanism, self.m, data=self.data, train_rows=self.train_rows)

    def play(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        context: TrialContext | None = None,
    ) -> TrialOutcome:
        seeds = role_seeds(seed, _N_ROLES)
        membership = np.random.default_rng(seeds[_MEMBERSHIP]).random(self.m) < 0.5
        release = mechanism.release(self._input(mechanism, membership), rng=np.random.default_rng(seeds[_MECHANISM]))
        fitted = attack.fit(None, rng=np.random.default_rng(seeds[_ATTACK_FIT]))
        scores = fitted.score(release, np.arange(self.m))
        return TrialOutcome(scores=scores, membership=membership)

    def _input(self, mechanism: Mechanism, membership: np.ndarray) -> Any:
        """The mechanism's input: the bits, or the bits over the game's rows and canaries (no random draw)."""
        if mechanism.input_kind != "canary-dataset" or self.data is None:
            return membership
        return canary_data(
            membership, data=self.data, train_rows=self.train_rows, canary=self.canary, canary_seed=self.canary_seed
        )

    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        # imported here: summarising stored rows (privgame report) needs no estimator, and scipy.stats is
        # most of a report's start-up
        from privgame.analysis.one_run import audit_top_k

        rng = np.random.default_rng(role_seeds(seed, _N_ROLES)[_GUESS])
        if settings.custom or settings.two_sided:
            from privgame.games.bounds import bound_columns

            return bound_columns(
                settings, outcome.scores, outcome.membership, has_runs=False, rng=rng, top_k=(self.k_pos, self.k_neg)
            )
        result = audit_top_k(
            outcome.scores,
            outcome.membership,
            k_pos=self.k_pos,
            k_neg=self.k_neg,
            rng=rng,
            delta=settings.delta,
            confidence=settings.confidence,
        )
        from privgame.games.bounds import top_k_ceiling

        ceiling = top_k_ceiling(result.m, result.r, confidence=settings.confidence, delta=settings.delta)
        return {"epsilon_lb": result.epsilon, "m": result.m, "r": result.r, "v": result.v, "ceiling": ceiling}

    @staticmethod
    def _verdict_bounds(rows: pd.DataFrame, lb: np.ndarray) -> np.ndarray | None:
        """The bounds the headline verdict tests: the game's own ``epsilon_lb``, or with ``[analysis] estimators``
        the first guaranteed estimator's (an unmatched family or a forced order-statistics audit refutes nothing);
        None when no estimator named is guaranteed."""
        from privgame.games.bounds import estimator_labels, guaranteed

        labels = estimator_labels(list(rows.columns))
        if not labels or guaranteed(labels[0]):
            return lb
        first = next((label for label in labels if guaranteed(label)), None)
        return rows[f"{first}.epsilon_lb"].to_numpy(dtype=float) if first else None

    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, Any]:
        analytic = float(rows["epsilon_analytic"].iloc[0])
        from privgame.analysis.verdict import verdict_columns
        from privgame.games.bounds import summary_columns, tightness

        sequential: dict[str, Any] | None = None
        if settings.sequential:  # the trials the anytime-valid test read, in order, and its verdict
            from privgame.games.sequential import read_grid_point, sequential_columns, sequential_summary

            read = read_grid_point(rows, settings)
            rows, sequential = read.rows, sequential_summary(read, settings.confidence)
        lb = rows["epsilon_lb"].to_numpy(dtype=float)
        median = float(np.median(lb)) if lb.size else math.nan
        tested = self._verdict_bounds(rows, lb)
        verdict = verdict_columns(lb if tested is None else tested, analytic, settings.confidence)
        if tested is None:  # no estimator named gives a guaranteed bound: the count, and no test
            from privgame.games.bounds import unguaranteed_verdict

            verdict = unguaranteed_verdict(verdict)
        per_estimator = summary_columns(rows, analytic, settings.confidence) if len(rows) else {}
        if sequential is not None:  # the fixed-sample test's columns do not hold at a data-chosen stop: dropped
            verdict, per_estimator = sequential_columns(verdict, sequential, per_estimator)
        return {
            "epsilon_analytic": analytic,
            "epsilon_lb_mean": float(np.mean(lb)) if lb.size else math.nan,
            "epsilon_lb_median": median,
            "epsilon_lb_min": float(np.min(lb)) if lb.size else math.nan,
            "epsilon_lb_max": float(np.max(lb)) if lb.size else math.nan,
            "tightness": tightness(median, analytic),
            **verdict,
            "n_trials": len(lb),
            **per_estimator,
        }
