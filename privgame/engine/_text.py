"""Text that privgame prints: names from configs and results directories shown safely on a terminal."""

from __future__ import annotations

__all__ = ["printable"]


def printable(text: str) -> str:
    """``text`` with control characters (terminal escape codes, newlines) shown escaped, e.g. ``\\x1b``.

    Every message the command prints goes through this (the progress bars' labels too), so a name from a config
    or a results directory cannot move the cursor, recolour the terminal or forge extra lines.

    Examples
    --------
    >>> printable("run\\x1b[2J")
    'run\\\\x1b[2J'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
