"""The bottom layer: what every other package of privgame may use, and which imports nothing of privgame.

- :mod:`privgame.core._lazy`: lazy package exports (every package ``__init__`` uses it);
- :mod:`privgame.core._memo`: ``BoundedMemo``, a small bounded memo;
- :mod:`privgame.core.cache`: the content-addressed artefact cache (σ calibrations, releases, shadow tables), which
  mechanisms, attacks, games and the engine all use.

It has no public names of its own: import the modules.
"""
