"""A config plugin: registers the known-risk table mechanisms of :mod:`known_risk_mechanisms` when imported."""

from known_risk_mechanisms import CopyTable, IgnoreInput

from privgame.engine.registry import MECHANISMS

for _cls in (CopyTable, IgnoreInput):
    if _cls.name not in MECHANISMS:
        MECHANISMS.register(_cls)
