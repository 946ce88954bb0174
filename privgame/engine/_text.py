"""Text that privgame prints: names from configs and results directories shown safely on a terminal."""

from __future__ import annotations

__all__ = ["printable", "summary"]


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


def summary(value: object, *, typed: bool = False) -> str:
    """``value`` for an error message, on one line: its repr, shortened as :func:`reprlib.repr` does, or, where that
    spans lines (a DataFrame, a Series), its type and shape, e.g. ``a DataFrame of shape (3, 2)``.

    ``typed``: put the type's name before a one-line repr too (``int 42``).

    Examples
    --------
    >>> summary(42, typed=True)
    'int 42'
    >>> class Table:
    ...     shape = (3, 2)
    ...     def __repr__(self):
    ...         return "   a  b\\n0  1  4"
    >>> summary(Table())
    'a Table of shape (3, 2)'
    """
    import reprlib

    name = type(value).__name__
    text = reprlib.repr(value)
    if "\n" not in text and "\r" not in text:
        return f"{name} {text}" if typed else text
    article = "an" if name[:1].lower() in "aeiou" else "a"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"{article} {name} of shape {shape}"
    return f"{article} {name} ({printable(' '.join(text.split()))})"
