"""The engine: what plays any game, from a config to its rows and report.

One experiment is a straight line (docs/architecture.md)::

    config (TOML or dict) ──► ExperimentConfig ──► ResultsStore ──► runner ──► rows ──► report
      engine.config            (normalised,          engine.store    engine.runner        engine.report,
      + engine.registry         hashed)                                                   engine.compare

:mod:`~privgame.engine.config` parses and normalises a config against the registries
(:mod:`~privgame.engine.registry`) into one hashed :class:`~privgame.engine.config.ExperimentConfig`; the
results directory (:mod:`~privgame.engine.store`) is opened with it; :mod:`~privgame.engine.runner` plays its trials
(loky or Dask) and writes each row as it finishes; :mod:`~privgame.engine.report`, :mod:`~privgame.engine.compare` and
:mod:`~privgame.engine.reanalyse` read the directory back.  :mod:`~privgame.engine.cli` (the ``privgame`` command) and
:mod:`~privgame.engine.api` (``privgame.run``, ``privgame.load``) are the two doors in;
:mod:`~privgame.engine.testing` checks a component against the contract.  Names are imported on first use
(:mod:`privgame.core._lazy`).
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.engine.config import ConfigError, ExperimentConfig, load_config, parse_config
    from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS
    from privgame.engine.runner import run_experiment

__all__ = [
    "ATTACKS",
    "GAMES",
    "MECHANISMS",
    "ConfigError",
    "ExperimentConfig",
    "load_config",
    "parse_config",
    "run_experiment",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "ATTACKS": "privgame.engine.registry:ATTACKS",
        "GAMES": "privgame.engine.registry:GAMES",
        "MECHANISMS": "privgame.engine.registry:MECHANISMS",
        "ConfigError": "privgame.engine.config:ConfigError",
        "ExperimentConfig": "privgame.engine.config:ExperimentConfig",
        "load_config": "privgame.engine.config:load_config",
        "parse_config": "privgame.engine.config:parse_config",
        "run_experiment": "privgame.engine.runner:run_experiment",
    },
)
