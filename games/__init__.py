"""Games, and the machinery that plays them: configs, registries, the runner, the results store, the CLI.

The public names are imported on first use (:mod:`analysis._lazy`), so ``import games.cli`` stays fast.
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from games._base import AnalysisSettings, Game, TrialContext, TrialOutcome
    from games.config import ConfigError, ExperimentConfig, load_config, parse_config
    from games.multi_run import MultiRunGame
    from games.one_run import OneRunGame
    from games.record import ModelSeededRecordGame, RecordGames, TraditionalRecordGame
    from games.registry import ATTACKS, GAMES, MECHANISMS
    from games.runner import run_experiment

__all__ = [
    "ATTACKS",
    "GAMES",
    "MECHANISMS",
    "AnalysisSettings",
    "ConfigError",
    "ExperimentConfig",
    "Game",
    "ModelSeededRecordGame",
    "MultiRunGame",
    "OneRunGame",
    "RecordGames",
    "TraditionalRecordGame",
    "TrialContext",
    "TrialOutcome",
    "load_config",
    "parse_config",
    "run_experiment",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "ATTACKS": "games.registry:ATTACKS",
        "GAMES": "games.registry:GAMES",
        "MECHANISMS": "games.registry:MECHANISMS",
        "AnalysisSettings": "games._base:AnalysisSettings",
        "ConfigError": "games.config:ConfigError",
        "ExperimentConfig": "games.config:ExperimentConfig",
        "Game": "games._base:Game",
        "ModelSeededRecordGame": "games.record:ModelSeededRecordGame",
        "MultiRunGame": "games.multi_run:MultiRunGame",
        "OneRunGame": "games.one_run:OneRunGame",
        "RecordGames": "games.record:RecordGames",
        "TraditionalRecordGame": "games.record:TraditionalRecordGame",
        "TrialContext": "games._base:TrialContext",
        "TrialOutcome": "games._base:TrialOutcome",
        "load_config": "games.config:load_config",
        "parse_config": "games.config:parse_config",
        "run_experiment": "games.runner:run_experiment",
    },
)
