"""privgame from Python: run an experiment, load a results directory, read its tables and figures.

>>> import privgame
>>> results = privgame.run("experiments/quickstart.toml")  # doctest: +SKIP
>>> results.summary()  # doctest: +SKIP

:func:`run` takes a TOML config file, a dict of the same sections or a validated
:class:`games.config.ExperimentConfig`, and returns :class:`Results` (``summary()``, ``records()``, ``trials()``,
``plot()``, ``path``); :func:`load` reads a finished directory the same way.  The names are imported on first use
(:mod:`analysis._lazy`), so ``import privgame`` imports none of numpy, pandas, torch or ``dp_accounting``.
docs/api.md is the reference.
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from games.config import ConfigError, ExperimentConfig
    from games.registry import ReRegisteredWarning
    from games.runner import RunInterrupted, TrialsFailed
    from games.store import StoreError
    from privgame.api import Results, load, run

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
        "ConfigError": "games.config:ConfigError",
        "ExperimentConfig": "games.config:ExperimentConfig",
        "ReRegisteredWarning": "games.registry:ReRegisteredWarning",
        "Results": "privgame.api:Results",
        "RunInterrupted": "games.runner:RunInterrupted",
        "StoreError": "games.store:StoreError",
        "TrialsFailed": "games.runner:TrialsFailed",
        "load": "privgame.api:load",
        "run": "privgame.api:run",
    },
)
