"""The one-run audit game of Steinke, Nasr and Jagielski (2023)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from analysis._checks import check_int
from attacks._base import Attack
from games._base import AnalysisSettings, Game, TrialContext, TrialOutcome, role_seeds
from mechanisms._base import Mechanism

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

    Notes
    -----
    Threat model: the auditor chooses the canaries and the guessing rule (k₊, k₋) in advance; the secret is the
    vector of membership bits S ~ Bernoulli(1/2)^m; the adversary sees the mechanism's release and scores every
    canary.  Random per trial, each from its own stream of the trial seed: the membership bits, the mechanism's
    noise, the attack's fitting, and the order in which ties at the guessing cuts are broken (independent of
    membership).  ``analyse_trial`` turns the guesses' (r, v) into the ε lower bound of Theorem 5.2 of [1]_.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846.
    """

    name: ClassVar[str] = "one-run"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"canary-bits"})

    m: int
    k_pos: int
    k_neg: int

    def __post_init__(self) -> None:
        m = check_int("m", self.m, low=1)
        kp = check_int("k_pos", self.k_pos, low=0)
        kn = check_int("k_neg", self.k_neg, low=0)
        if not 1 <= kp + kn <= m:
            raise ValueError(f"k_pos + k_neg must be between 1 and m = {m}, got {kp} + {kn} = {kp + kn}.")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "k_pos", kp)
        object.__setattr__(self, "k_neg", kn)

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        """m membership bits, scores, guesses and the sort of the audit (about 64 bytes per canary), plus one
        release on m canaries."""
        return 64 * self.m + mechanism.memory_bytes(self.m)

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
        release = mechanism.release(membership, rng=np.random.default_rng(seeds[_MECHANISM]))
        fitted = attack.fit(None, rng=np.random.default_rng(seeds[_ATTACK_FIT]))
        scores = fitted.score(release, np.arange(self.m))
        return TrialOutcome(scores=scores, membership=membership)

    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        # imported here: summarising stored rows (privgame report) needs no estimator, and scipy.stats is
        # most of a report's start-up
        from analysis.one_run import audit_top_k

        result = audit_top_k(
            outcome.scores,
            outcome.membership,
            k_pos=self.k_pos,
            k_neg=self.k_neg,
            rng=np.random.default_rng(role_seeds(seed, _N_ROLES)[_GUESS]),
            delta=settings.delta,
            confidence=settings.confidence,
        )
        return {"epsilon_lb": result.epsilon, "m": result.m, "r": result.r, "v": result.v}

    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, float | int]:
        lb = rows["epsilon_lb"].to_numpy(dtype=float)
        analytic = float(rows["epsilon_analytic"].iloc[0])
        median = float(np.median(lb))
        tightness = median / analytic if math.isfinite(analytic) and analytic > 0 else math.nan
        return {
            "epsilon_analytic": analytic,
            "epsilon_lb_mean": float(np.mean(lb)),
            "epsilon_lb_median": median,
            "epsilon_lb_min": float(np.min(lb)),
            "epsilon_lb_max": float(np.max(lb)),
            "tightness": tightness,
            "n_trials": len(lb),
        }
