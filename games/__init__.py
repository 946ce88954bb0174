"""The games: what a trial samples, what the mechanism and the attack see, and how one trial is analysed.

The five games (:mod:`privgame.games.one_run`, :mod:`privgame.games.multi_run`, :mod:`privgame.games.panoramia`,
:mod:`privgame.games.record`, :mod:`privgame.games.lira`) and what only games use: :mod:`privgame.games._base` (the
``Game`` interface, ``TrialOutcome``, ``TrialContext``, ``AnalysisSettings``), :mod:`privgame.games.bounds` (the audit
games' estimators and threshold rules) and :mod:`privgame.games.validity` (the harness that plays known-ε games to
check every estimator).  What plays any game (configs, registries, the runner, the store, the report) is
:mod:`privgame.engine`.  The public names are imported on first use (:mod:`privgame.core._lazy`).
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.games._base import AnalysisSettings, Game, TrialContext, TrialOutcome
    from privgame.games.lira import LiRAGame
    from privgame.games.multi_run import MultiRunGame
    from privgame.games.one_run import OneRunGame
    from privgame.games.panoramia import PanoramiaGame
    from privgame.games.record import ModelSeededRecordGame, RecordGames, TraditionalRecordGame

__all__ = [
    "AnalysisSettings",
    "Game",
    "LiRAGame",
    "ModelSeededRecordGame",
    "MultiRunGame",
    "OneRunGame",
    "PanoramiaGame",
    "RecordGames",
    "TraditionalRecordGame",
    "TrialContext",
    "TrialOutcome",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "AnalysisSettings": "privgame.games._base:AnalysisSettings",
        "Game": "privgame.games._base:Game",
        "LiRAGame": "privgame.games.lira:LiRAGame",
        "ModelSeededRecordGame": "privgame.games.record:ModelSeededRecordGame",
        "MultiRunGame": "privgame.games.multi_run:MultiRunGame",
        "OneRunGame": "privgame.games.one_run:OneRunGame",
        "PanoramiaGame": "privgame.games.panoramia:PanoramiaGame",
        "RecordGames": "privgame.games.record:RecordGames",
        "TraditionalRecordGame": "privgame.games.record:TraditionalRecordGame",
        "TrialContext": "privgame.games._base:TrialContext",
        "TrialOutcome": "privgame.games._base:TrialOutcome",
    },
)
