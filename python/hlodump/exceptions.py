"""The exception hierarchy of hlodump.

Both the Rust core and the pure-Python reference raise these classes, so callers catch one
hierarchy whichever parser ran. I/O problems are Python's own exceptions (``FileNotFoundError``,
``PermissionError``, ``IsADirectoryError``) rather than ours, as users expect.
"""

from __future__ import annotations

__all__ = ["HlodumpError", "ParseError"]


class HlodumpError(Exception):
    """Base class of every error hlodump raises on purpose."""


class ParseError(HlodumpError, ValueError):
    """Malformed input.

    Attributes:
        path: the file (as given, or relative to the directory read).
        line: 1-based line number of the problem.
        column: 1-based byte column within that line.
        message: what was expected / what went wrong.
        text: the offending line (may be shortened for very long lines).
    """

    def __init__(self, path: str, line: int, column: int, message: str, text: str = "") -> None:
        self.path = path
        self.line = line
        self.column = column
        self.message = message
        self.text = text
        super().__init__(path, line, column, message, text)

    def __str__(self) -> str:
        # escaped: the file's bytes (ESC, OSC …) must not drive the terminal of an uncaught
        # traceback (attributes keep the text as it is)
        from .cli_safety import escape_controls

        snippet = self.text if len(self.text) <= 200 else self.text[:200] + "…"
        snippet = escape_controls(snippet, keep_newlines=False)
        where = escape_controls(f"{self.path}:{self.line}:{self.column}", keep_newlines=False)
        return f"{where}: {escape_controls(self.message, keep_newlines=False)}" + (f"\n    {snippet}" if snippet else "")

    def __reduce__(self):  # keep pickling (multiprocessing) working with our __init__
        return (type(self), (self.path, self.line, self.column, self.message, self.text))
