"""What an experiment needs from the machine, checked before anything runs: memory and a writable place.

A trial that cannot fit in memory fails, without this, minutes into a run (or at once with a traceback from
deep inside numpy), after the results directory was made.  The config asks each grid point's game for the peak
memory of one trial (:meth:`privgame.games._base.Game.trial_bytes`, which asks the mechanism and the attack for theirs)
and the runner's plan for its own (a seed and a row per trial), and refuses a config whose estimate exceeds this
machine's physical memory, with the estimate and the sizes that caused it.  Estimates are deliberately rough
(within a small factor): they catch the sizes that cannot work, not the ones that are merely slow.

The results directory is checked before the config is run too, but whether a path may be written is decided in one
place, :mod:`privgame.core.outputs` (an empty path, a path through a regular file, or a place the user cannot
write is refused with one line, and nothing is left behind).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from privgame.engine._text import summary

__all__ = [
    "PLAN_BYTES_PER_TRIAL",
    "check_n_jobs",
    "config_reads",
    "format_bytes",
    "memory_problem",
    "physical_memory",
    "trial_bytes",
]

PLAN_BYTES_PER_TRIAL = 2048  # a Trial with its SeedSequence (~500 B, measured) and its result row in memory


def physical_memory() -> int | None:
    """This machine's physical memory in bytes (``None`` where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX platforms
        return None


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, e.g. ``7.3 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def trial_bytes(point: Any) -> int:
    """Estimated peak memory of one trial of a grid point (a :class:`privgame.engine.config.GridPoint`)."""
    return int(point.game.trial_bytes(point.mechanism, point.attack))


def _sizes(point: Any) -> str:
    """The grid point's integer parameters of 1,000 or more, and lists of integers holding one (a network's layer
    widths): the sizes an estimate grows with."""

    def size(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1000

    found = []
    for section in ("game", "mechanism", "attack"):
        component = getattr(point, section)
        for f in dataclasses.fields(component):
            value = getattr(component, f.name)
            if size(value):
                found.append(f"{section}.{f.name} = {value:,}")
            elif isinstance(value, tuple) and any(size(v) for v in value) and all(isinstance(v, int) for v in value):
                found.append(f"{section}.{f.name} = [{', '.join(f'{v:,}' for v in value)}]")
    return ", ".join(found)


def memory_problem(grid: Sequence[Any], n_trials: int, *, available: int | None = None) -> str | None:
    """Why the experiment cannot fit in memory, or ``None`` when it can (or the machine's memory is unknown).

    Parameters
    ----------
    grid : sequence of GridPoint
    n_trials : int
        Trials planned (grid points × repetitions).
    available : int or None, default=None
        Bytes to compare with; ``None``: :func:`physical_memory`.
    """
    limit = physical_memory() if available is None else available
    if limit is None:  # pragma: no cover - non-POSIX platforms
        return None
    plan = PLAN_BYTES_PER_TRIAL * n_trials
    if plan > limit:
        return (
            f"{n_trials:,} trials need about {format_bytes(plan)} of memory to plan and collect, more than this "
            f"machine's {format_bytes(limit)}; lower [experiment] repetitions or the sweep"
        )
    for point in grid:
        need = trial_bytes(point)
        if need > limit:
            sizes = _sizes(point)
            dense = getattr(point.mechanism, "canary_layout", None) == "dense"
            hint = ', or set [mechanism] canary_layout = "separate" (memory linear in m)' if dense else ""
            return (
                f"one trial of grid point {point.index} ({point.game.name} with {point.mechanism.name}"
                f"{', ' + sizes if sizes else ''}) needs about {format_bytes(need)} of memory, more than this "
                f"machine's {format_bytes(limit)}; lower the sizes{hint}"
            )
    return None


def check_n_jobs(n_jobs: object, *, what: str = "n_jobs") -> int:
    """Return ``n_jobs`` if it is a positive int or -1 (joblib's "all cores"); else raise one line naming ``what``.

    Raises
    ------
    ValueError
        For 0, values below -1, booleans and non-integers.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"{what} must be a positive integer or -1, got {summary(n_jobs)} (-1: all cores).")
    return n_jobs


def config_reads(path: str | os.PathLike[str] | None, config: Any) -> dict[str, str | None]:
    """The files a run of ``config`` reads, for :func:`privgame.core.outputs.check_output_directory`: the config
    file (``path``; ``None`` for a config given in Python) and a ``[data] path``'s data and domain files.

    Parameters
    ----------
    path : str, path-like or None
    config : privgame.engine.config.ExperimentConfig
    """
    data = config.raw.get("data") if isinstance(config.raw, dict) else None
    data = data if isinstance(data, dict) else {}
    source = getattr(config, "data_source", None)
    return {
        "the config": None if path is None else os.fspath(path),
        "the data file": source.path if source is not None else data.get("path"),
        "the domain file": data.get("domain") if isinstance(data.get("domain"), str) else None,
    }
