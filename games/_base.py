"""The interface every game implements, and the data types that flow between games, runner and store.

A game plays one trial: it draws the secret (who is a member), builds the mechanism's input, runs the
mechanism and the attack, and returns a :class:`TrialOutcome` (scores, membership and any extra arrays).  It
then turns an outcome into per-trial metrics (``analyse_trial``, e.g. one ε lower bound for a one-run audit)
and a grid point's trials into summary columns (``summarise``, e.g. the median bound, or, for a multi-run
audit, one Clopper–Pearson bound over all runs).  Everything stored is enough to re-run the analysis without
replaying the game.

How the games to come fit
-------------------------
- one-run (Steinke et al.): a trial = one mechanism run over m canaries; ``analyse_trial`` gives its ε bound.
- multi-run (classic): a trial = K runs with or without the target; ``summarise`` pools every run of a grid point
  into FPR/FNR and one Clopper–Pearson bound (reading raw scores through ``load_outcome``).
- record-level (Krčo et al.) and LiRA: a trial = one target model or synthetic table; ``TrialOutcome.arrays``
  carries per-record scores and ids, ``summarise`` computes per-record risk, TPR at fixed FPR, calibration.
- PANORAMIA: a trial = one audit with generated non-members; ``arrays`` holds baseline and MIA scores,
  ``analyse_trial`` gives c_lb, {c+ε}_lb and ε̃.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import UNSTATED_DEPENDENCE, check_confidence, check_delta, check_membership, check_scores
from privgame.attacks._base import Attack
from privgame.core.cache import ArtefactCache
from privgame.mechanisms._base import Mechanism

__all__ = [
    "AnalysisSettings",
    "Game",
    "TrialContext",
    "TrialOutcome",
    "keyed_seed",
    "repetition_of",
    "role_seeds",
    "root_entropy",
]


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    """How outcomes are analysed (the ``[analysis]`` section of a config).

    Parameters
    ----------
    confidence : float, default=0.95
        Confidence of every bound, in (0, 1).
    delta : float, default=0.0
        The δ at which ε is bounded and the analytic ε evaluated, in [0, 1).
    estimators : tuple of str or None, default=None
        The audit games' estimators (:data:`privgame.analysis.estimators.ESTIMATORS`), each in its own columns
        (``<label>.epsilon_lb``), the first also as ``epsilon_lb``; None: the game's own single bound.
    threshold : str, float, mapping or None, default=None
        The audit games' guessing rule (:func:`privgame.games.bounds.check_threshold`): ``"top-k"`` (the one-run game's
        k₊/k₋), ``"bonferroni"``, ``"split"``, a number (an explicit threshold) or a table naming the rule and its
        parameters; None: the game's own (top-k for one run, Bonferroni over its ``thresholds`` for multi-run).
    two_sided : bool, default=False
        Also guess "non-member" below the lower threshold (threshold rules other than top-k).
    allow_unmatched_family : bool, default=False
        Run a named f-DP family that does not contain the mechanism's trade-off curve (its columns labelled
        ``_unmatched``) instead of refusing the config.
    allow_dependent_canaries : bool, default=False
        Run the order-statistics audit (``order_stats``) on a mechanism whose canaries are not independent channels
        (its columns labelled ``_dependent``; its bound is then not guaranteed) instead of refusing the config.
    sequential : bool, default=False
        Audit sequentially (:mod:`privgame.games.sequential`): read the trials in repetition order with an
        anytime-valid test and stop playing a grid point as soon as its claim is refuted (one-run games only).
    budget : int or None, default=None
        The most repetitions a sequential audit reads (the experiment's repetitions), bound by the runner and the
        report; not part of the config.
    claim : PrivacyClaim or None, default=None
        The grid point's mechanism's claim, bound by the runner (:meth:`bind`); not part of the config.
    dependence : str or None, default=UNSTATED_DEPENDENCE
        Why the grid point's mechanism's canaries are not independent channels (``Mechanism.canary_dependence``;
        None when they are), bound with the claim; not part of the config.
    """

    confidence: float = 0.95
    delta: float = 0.0
    estimators: tuple[str, ...] | None = None
    threshold: Any = None
    two_sided: bool = False
    allow_unmatched_family: bool = False
    allow_dependent_canaries: bool = False
    sequential: bool = False
    budget: int | None = field(default=None, compare=False, repr=False)
    claim: Any = field(default=None, compare=False, repr=False)
    dependence: str | None = field(default=UNSTATED_DEPENDENCE, compare=False, repr=False)

    def __post_init__(self) -> None:
        from privgame.games.bounds import check_threshold  # privgame.games.bounds imports this module

        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if self.estimators is not None:
            if isinstance(self.estimators, str) or not isinstance(self.estimators, list | tuple):
                raise ValueError(f"estimators must be a list of estimator names, got {self.estimators!r}.")
            object.__setattr__(self, "estimators", tuple(self.estimators))
        object.__setattr__(self, "threshold", check_threshold(self.threshold))
        for name in ("two_sided", "allow_unmatched_family", "allow_dependent_canaries", "sequential"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}.")

    #: The keys a config may set (``claim`` is the runner's).
    KEYS: ClassVar[tuple[str, ...]] = (
        "confidence",
        "delta",
        "estimators",
        "threshold",
        "two_sided",
        "allow_unmatched_family",
        "allow_dependent_canaries",
        "sequential",
    )

    @property
    def custom(self) -> bool:
        """Whether the config chose the estimators or the guessing rule (else the game's own bound is used)."""
        return self.estimators is not None or self.threshold is not None

    def identity(self) -> dict[str, Any]:
        """What of these settings determines the results, as plain values: confidence and δ, and each other key
        only when it differs from its default (so a config that does not use it keeps its hash)."""
        out: dict[str, Any] = {"confidence": self.confidence, "delta": self.delta}
        defaults = {
            "estimators": None,
            "threshold": None,
            "two_sided": False,
            "allow_unmatched_family": False,
            "allow_dependent_canaries": False,
            "sequential": False,
        }
        for key, default in defaults.items():
            value = getattr(self, key)
            if value == default:
                continue
            if key == "threshold":
                value = {k: list(v) if isinstance(v, tuple) else v for k, v in value}
            out[key] = list(value) if isinstance(value, tuple) else value
        return out

    def bind(self, claim: Any, dependence: str | None = UNSTATED_DEPENDENCE) -> AnalysisSettings:
        """These settings for a mechanism with ``claim`` (its ``PrivacyClaim``, or None) and ``dependence`` (its
        ``canary_dependence``: None when its canaries are independent channels)."""
        return dataclasses.replace(self, claim=claim, dependence=dependence)

    def with_budget(self, repetitions: int) -> AnalysisSettings:
        """These settings with a sequential audit's ``budget`` (the experiment's repetitions); as they are when the
        audit is not sequential."""
        return dataclasses.replace(self, budget=repetitions) if self.sequential else self


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """What one trial produced, kept raw so any analysis can be re-run.

    Attributes
    ----------
    scores : ndarray of shape (n,), float64
        Attack scores of the n targets, higher = member.
    membership : ndarray of shape (n,), bool
        The secret: which targets were members.
    arrays : mapping of str to ndarray, default={}
        Extra per-trial arrays (per-record ids, baseline scores, canary trajectories, ...).
    """

    scores: NDArray[np.float64]
    membership: NDArray[np.bool_]
    arrays: Mapping[str, NDArray[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scores = check_scores("scores", self.scores)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "membership", check_membership("membership", self.membership, scores.shape[0]))
        reserved = {"scores", "membership"} & set(self.arrays)
        if reserved:
            raise ValueError(f"arrays must not use the reserved names {sorted(reserved)}.")


@dataclass(frozen=True)
class TrialContext:
    """What the runner lends a trial besides its seed: the artefact cache and a progress callback.

    Neither may change a trial's numbers: a cached artefact equals the recomputed one, and progress only reports.

    Attributes
    ----------
    cache : ArtefactCache or None, default=None
        Where expensive artefacts (generator runs, shadow tables) are cached by content; ``None``: no cache.
    progress : callable or None, default=None
        Called with the number of mechanism runs just finished (for the "runs" progress line).
    timings : dict of str to float
        Seconds a game spent on named parts of the trial (``"attack"``: the attack's own work), stored beside the
        trial's ``seconds`` as ``seconds_<name>``; wall times, kept out of the outcome, which a seed determines.
    """

    cache: ArtefactCache | None = None
    progress: Callable[[int], None] | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def advance(self, k: int) -> None:
        """Report ``k`` finished mechanism runs."""
        if self.progress is not None:
            self.progress(k)


#: what each kind of knowledge is, and the games that give it (for the incompatibility message)
_KNOWLEDGE_TEXT = {
    "auxiliary": ("auxiliary data and black-box access", "the record-level games"),
    "labelled": ("labelled members and non-members to train a classifier on", "panoramia"),
    "models": ("reference models trained on known records", "lira"),
}


def root_entropy(seed: np.random.SeedSequence, game: str) -> int:
    """The experiment's root entropy of a trial seed, for games that derive streams from it rather than from the
    trial's position (the record games, LiRA: the same record or model gets the same streams in every grid point)."""
    if not isinstance(seed.entropy, int):
        raise ValueError(f"{game} needs a SeedSequence of one integer seed, got entropy {seed.entropy!r}.")
    return seed.entropy


def repetition_of(seed: np.random.SeedSequence) -> int:
    """The repetition (or target) index of a trial seed: the last entry of its spawn key (0 for a root seed)."""
    return int(seed.spawn_key[-1]) if seed.spawn_key else 0


def keyed_seed(entropy: int, *key: int) -> np.random.SeedSequence:
    """The stream of a role keyed by content rather than by grid position: ``SeedSequence([entropy, *key])``
    (a role tag, then the sizes and indices it depends on), as the record, LiRA and PANORAMIA games derive theirs."""
    return np.random.SeedSequence([entropy, *key])


def role_seeds(seed: np.random.SeedSequence, n: int) -> list[np.random.SeedSequence]:
    """The ``n`` role streams of a trial, always the same for the same trial seed.

    A fresh ``SeedSequence`` is rebuilt from the seed's entropy and spawn key, so calling this twice (in ``play``
    and again in ``analyse_trial``, or in a later re-analysis) gives identical children: roles are split in a
    fixed order so that changing the attack never changes the mechanism's noise.
    """
    return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key).spawn(n)


class Game(ABC):
    """A privacy game: the threat model, what is random, and how a trial is scored."""

    __slots__ = ()

    name: ClassVar[str]
    input_kinds: ClassVar[frozenset[str]]  # the mechanism input kinds this game can build
    knowledge: ClassVar[frozenset[str]] = frozenset({"nothing"})  # what it can tell the adversary (Attack.needs)
    # the summary column that is the game's ε lower bound (what `privgame report --plot` draws against the
    # analytic ε) and the columns of the band drawn around it (None: no band)
    headline: ClassVar[str] = "epsilon_lb_median"
    headline_band: ClassVar[tuple[str, str] | None] = ("epsilon_lb_min", "epsilon_lb_max")
    # the estimator label that names the headline in a figure's legend when no ``[analysis] estimators`` are chosen
    # (the game's own bound, stored in bare columns); None: the headline column's name
    headline_estimator: ClassVar[str | None] = None
    # how the game bounds ε from scores, for ``[analysis] estimators`` and ``threshold`` (privgame.games.bounds):
    # "one-run" (one run on m canaries), "runs" (repeated runs), or None (the game does not take them)
    bound_kind: ClassVar[str | None] = None
    # the measurements ``privgame report --plot`` draws side by side per grid point, as (legend label, summary
    # column prefix with _median/_min/_max), for games with several on the same target (PANORAMIA); None: the
    # headline against the analytic ε
    side_by_side: ClassVar[tuple[tuple[str, str], ...] | None] = None

    def incompatibility(self, mechanism: Mechanism, attack: Attack) -> str | None:
        """Why this game cannot play ``mechanism`` with ``attack``, or ``None`` if it can.

        The default checks that the game can build the mechanism's input and that the attack accepts what the
        mechanism releases; games with further requirements extend it.
        """
        if mechanism.input_kind not in self.input_kinds:
            return (
                f"game '{self.name}' needs a mechanism that takes {sorted(self.input_kinds)}, "
                f"but mechanism '{mechanism.name}' takes '{mechanism.input_kind}'"
            )
        if mechanism.release_kind not in attack.accepts:
            return (
                f"attack '{attack.name}' scores releases of kind {sorted(attack.accepts)}, "
                f"but mechanism '{mechanism.name}' releases '{mechanism.release_kind}'"
            )
        if attack.needs not in self.knowledge:
            what, games = _KNOWLEDGE_TEXT.get(attack.needs, (attack.needs, "none built in"))
            return (
                f"attack '{attack.name}' needs {attack.needs} knowledge ({what}), "
                f"which game '{self.name}' does not give; games that do: {games}"
            )
        return None

    def trials_per_point(self) -> int | None:
        """How many trials each grid point has, when the game fixes it (one per target record); ``None``: the
        config's ``repetitions``."""
        return None

    def mechanism_runs(self, attack: Attack) -> int:
        """Mechanism runs per trial that report progress (0: none reported, the trial is the unit)."""
        return 0

    def separate_runs(self, mechanism: Mechanism, attack: Attack) -> int:
        """How many of a trial's mechanism runs (models, generator runs) the engine may make apart from the trial,
        as tasks of their own on any worker, before the trial plays (0: none; the trial is the unit).

        A game that returns R > 0 implements :meth:`make_runs`, and its :meth:`play` reads each of those runs
        through ``context.cache`` (:func:`privgame.mechanisms.cached.cached_release_many`), so a run made by a
        task is read, not made again, and a run no task made is made by the trial itself.
        """
        return 0

    def run_batch(self, mechanism: Mechanism, attack: Attack) -> int:
        """The most runs one task may make together (its memory bound); the engine chooses how many, up to it, from
        their measured cost (:mod:`privgame.engine.tasks`)."""
        return 1

    def make_runs(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        runs: range,
        context: TrialContext,
    ) -> None:
        """Make the trial's runs ``runs`` (indices below :meth:`separate_runs`) into ``context.cache``, exactly as
        :meth:`play` with the same ``seed`` makes them (in one batched call where the mechanism batches)."""
        raise NotImplementedError(f"game {self.name!r} makes no run apart from its trial (separate_runs is 0)")

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        """Estimated peak memory in bytes of one trial with ``mechanism`` and ``attack`` (an estimate, not a bound).

        The config refuses a grid point whose trial cannot fit in this machine's memory before any directory is
        created (:func:`privgame.engine.resources.memory_problem`); games override this with what their sizes imply.
        """
        return 0

    def supports(self, mechanism: Mechanism, attack: Attack) -> bool:
        """Whether this game can play ``mechanism`` with ``attack``."""
        return self.incompatibility(mechanism, attack) is None

    @abstractmethod
    def play(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        context: TrialContext | None = None,
    ) -> TrialOutcome:
        """Play one trial with all randomness drawn from ``seed`` (``context``: cache and progress only)."""

    @abstractmethod
    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        """Per-trial metrics (one row of the results table); ``seed`` is the trial's seed."""

    @abstractmethod
    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, Any]:
        """Summary columns for one grid point from its trials' rows (raw outcomes through ``load_outcome``)."""

    def analyse(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> tuple[dict[str, float | int], list[dict[str, Any]]]:
        """The trial's row and its per-record rows (what the runner stores); games that compute both from the same
        work override this to do it once."""
        return self.analyse_trial(outcome, settings, seed=seed), self.record_rows(outcome, settings, seed=seed)

    #: How a report titles :meth:`shared_columns` (the game's statistics of the set of models, not of the attack).
    shared_title: ClassVar[str] = ""

    def shared_columns(self) -> tuple[str, ...]:
        """Summary columns that describe what every attack on the same models shares (LiRA's calibration of the
        models' confidences), which a plain report shows once per set of models instead of in every attack's row;
        ``()`` (the default): none."""
        return ()

    def summary_notes(self, summary: pd.DataFrame) -> list[str]:
        """Warnings a report prints under the summary, where a figure is not what it seems (one line each);
        ``[]`` (the default): none."""
        return []

    def brief_columns(self) -> tuple[str, ...] | None:
        """The summary columns a plain, Markdown or LaTeX report shows, for games with many (``--format csv``
        always gives them all); ``None`` (the default): every column."""
        return None

    def roc_curves(self, outcome: TrialOutcome) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] | None:
        """ROC curves of one trial, ``{evaluation: (fpr grid, tpr)}``, for games whose figure is a log–log ROC
        (``privgame report --plot``); ``None`` (the default): the game's figure is its ε bound."""
        return None

    def plot_trial(self, outcome: TrialOutcome, settings: AnalysisSettings, path: Path, *, title: str) -> Path | None:
        """Draw one trial's own figure at ``path`` (``privgame report --curves``: PANORAMIA's bound–recall and
        precision–recall curves of its two classifiers), titled ``title``; ``None`` (the default): the game has
        none."""
        return None

    def record_rows(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> list[dict[str, Any]]:
        """Per-record rows of one trial (record id, game, risk metrics, intervals): the results directory's long
        ``records`` table.  Games without per-record results return none."""
        return []
