"""Games, and the machinery that plays them: configs, registries, the runner, the results store, the CLI."""

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
