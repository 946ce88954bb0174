"""privgame from Python: run an experiment, load a results directory, read its tables and figures.

>>> import privgame
>>> results = privgame.run("experiments/quickstart.toml")  # doctest: +SKIP
>>> results.summary()  # doctest: +SKIP

:func:`run` takes a TOML config file, a dict of the same sections or a validated
:class:`privgame.engine.config.ExperimentConfig`, and returns :class:`Results` (``summary()``, ``records()``,
``trials()``, ``plot()``, ``path``); :func:`load` reads a finished directory the same way.  The names are imported on
first use (:mod:`privgame.core._lazy`), so ``import privgame`` imports none of numpy, pandas, torch or
``dp_accounting``. docs/api.md is the reference.

privgame is one import name.  Its packages, from the bottom layer up (each imports only those before it):
:mod:`privgame.core` (lazy exports, the artefact cache), :mod:`privgame.analysis` (statistics),
:mod:`privgame.mechanisms`, :mod:`privgame.attacks`, :mod:`privgame.data` (the data sets),
:mod:`privgame.games` (the games) and :mod:`privgame.engine` (configs, registries, runner, store, report, CLI,
this API).
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.engine.api import Results, load, run
    from privgame.engine.config import ConfigError, ExperimentConfig
    from privgame.engine.registry import ReRegisteredWarning
    from privgame.engine.runner import RunInterrupted, TrialsFailed
    from privgame.engine.store import StoreError

__all__ = [
    "ConfigError",
    "ExperimentConfig",
    "ReRegisteredWarning",
    "Results",
    "RunInterrupted",
    "StoreError",
    "TrialsFailed",
    "load",
    "run",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "ConfigError": "privgame.engine.config:ConfigError",
        "ExperimentConfig": "privgame.engine.config:ExperimentConfig",
        "ReRegisteredWarning": "privgame.engine.registry:ReRegisteredWarning",
        "Results": "privgame.engine.api:Results",
        "RunInterrupted": "privgame.engine.runner:RunInterrupted",
        "StoreError": "privgame.engine.store:StoreError",
        "TrialsFailed": "privgame.engine.runner:TrialsFailed",
        "load": "privgame.engine.api:load",
        "run": "privgame.engine.api:run",
    },
)
