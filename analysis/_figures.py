"""The figures' shared plumbing: a figure of its own or a caller's axes, and saving a figure to a file.

Every figure of :mod:`privgame.analysis.reporting` and :mod:`privgame.analysis.record_risk` is drawn once, by a
``figure_*`` function that returns the :class:`matplotlib.figure.Figure`; the ``plot_*`` function of the same figure
checks the file name, calls it and saves the result, so that a file and a notebook's figure come from the same drawing
code. The figures are plain :class:`~matplotlib.figure.Figure` objects, not pyplot's: drawing one never switches the
caller's backend, never opens a window, and leaves nothing open in pyplot (a notebook shows a returned figure
once, and ``Figure.savefig`` writes it without any backend).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SUFFIXES", "check_suffix", "new_axes", "root_figure", "save"]

#: the file types a figure may be written as (the suffix chooses the format)
SUFFIXES = (".png", ".pdf", ".svg")


def check_suffix(path: str | Path) -> Path:
    """``path`` as a Path, after checking that its suffix is one of :data:`SUFFIXES`.

    Raises
    ------
    ValueError
        For any other suffix.
    """
    out = Path(path)
    if out.suffix.lower() not in SUFFIXES:
        raise ValueError(f"path must end in {', '.join(SUFFIXES[:-1])} or {SUFFIXES[-1]}, got {str(out)!r}.")
    return out


def new_axes(
    ax: Axes | None, nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], what: str, **kwargs: Any
) -> tuple[Any, NDArray[Any]]:
    """A grid of ``nrows`` × ``ncols`` axes in a new figure, or the caller's ``ax`` where the figure has one panel.

    Parameters
    ----------
    ax : matplotlib Axes or None
        Draw into this axes (its figure keeps its own size and layout); ``None``: a new figure of ``figsize``
        with the constrained layout.
    nrows, ncols : int, default=1
        The panels the figure needs.
    figsize : (float, float)
        The new figure's size in inches.
    what : str
        The figure's name, for the error.
    **kwargs
        Passed to :meth:`~matplotlib.figure.Figure.subplots` (``sharey``).

    Returns
    -------
    figure : Figure or SubFigure
        Where figure-level titles and legends go: the new figure, or ``ax``'s (sub)figure.
    axes : ndarray of Axes, shape (nrows, ncols)

    Raises
    ------
    TypeError
        If ``ax`` is not a matplotlib Axes.
    ValueError
        If ``ax`` is given for a figure of more than one panel (it needs a grid of its own).
    """
    if ax is None:
        from matplotlib.figure import Figure

        figure = Figure(figsize=figsize, layout="constrained")
        return figure, figure.subplots(nrows, ncols, squeeze=False, **kwargs)
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}.")
    if nrows * ncols != 1:
        raise ValueError(
            f"ax must be None for {what} of {nrows * ncols} panels ({nrows} × {ncols}), which is drawn in a figure "
            "of its own, got an Axes."
        )
    return ax.figure, np.array([[ax]], dtype=object)


def root_figure(figure: Any) -> Figure:
    """The top-level Figure of a figure or subfigure."""
    return figure.figure


def save(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` (its suffix chooses the format) and return ``path``; atomically
    (:func:`privgame.core.outputs.atomic_output`), so a kill leaves the old file or the new one."""
    from privgame.core.outputs import atomic_output

    with atomic_output(path, what="the figure") as tmp:
        figure.savefig(tmp)
    return path
