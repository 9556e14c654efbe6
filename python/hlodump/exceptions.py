"""The exception hierarchy of hlodump.

Both the Rust core and the pure-Python reference raise these classes, so callers catch one
hierarchy whichever parser ran. I/O problems are Python's own exceptions (``FileNotFoundError``,
``PermissionError``, ``IsADirectoryError``) rather than ours, as users expect.
"""

from __future__ import annotations

__all__ = ["HlodumpError", "ParseError", "InputFileError", "DecompressionLimitError", "DuplicateFileError",
           "UnsupportedURLError"]


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


class InputFileError(HlodumpError, OSError):
    """A file that cannot be read as a whole: a corrupt or cut-off compressed file or archive,
    a compression module missing. An ``OSError`` (``filename`` is the file as shown) whose text
    is ``<file>: <why>`` (never an ``[Errno …]`` prefix)."""

    def __init__(self, filename: str, message: str) -> None:
        super().__init__(None, message, filename)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"

    def __reduce__(self):  # keep pickling working with our __init__
        return (type(self), (self.filename, self.strerror))


class DecompressionLimitError(InputFileError):
    """A compressed file (or archive) that expands beyond the bound of the read
    (``read_arrow(max_decompressed_ratio=…, max_decompressed_bytes=…)``; the command line's
    ``--max-decompressed-ratio`` / ``--max-decompressed``): reading stops at the bound."""


class DuplicateFileError(HlodumpError, ValueError):
    """The same file twice in one dump with different content (a tar holding a member twice,
    ``X.txt`` beside ``X.txt.gz``): which one is right cannot be told, so neither is guessed."""

    def __init__(self, first: str, second: str, message: str) -> None:
        self.first = first
        self.second = second
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.first, self.second, self.args[0]))


class UnsupportedURLError(HlodumpError, ValueError):
    """A URL hlodump does not read (a scheme no filesystem serves, an fsspec wrapper such as
    ``reference://`` or ``tar://``, a chained URL ``a::b://``). The message starts with the URL."""


def engine_error(e: BaseException) -> "BaseException | None":
    """DuckDB's out-of-memory and interrupt errors as Python's own: ``MemoryError`` (the
    command line's "hlodump: out of memory", exit 3) and ``KeyboardInterrupt`` ("hlodump:
    interrupted", 130); None for any other exception. DuckDB raises
    ``duckdb.OutOfMemoryException`` when a query passes its memory limit, and Ctrl-C during a
    query is ``duckdb.InterruptException`` or a ``RuntimeError("Query interrupted")`` (the
    signal seen while the query runs, depending on where it lands)."""
    if isinstance(e, (MemoryError, KeyboardInterrupt)):
        return None
    name = type(e).__name__
    if name == "OutOfMemoryException" and type(e).__module__.startswith(("duckdb", "_duckdb")):
        return MemoryError(f"DuckDB: {str(e).splitlines()[0] if str(e) else 'out of memory'}")
    from_duckdb = type(e).__module__.startswith(("duckdb", "_duckdb"))
    if (name == "InterruptException" and from_duckdb) or (
            type(e) is RuntimeError and str(e).strip() == "Query interrupted"):
        return KeyboardInterrupt()
    # Ctrl-C while DuckDB calls back into Python (reading an Arrow table's schema as it is
    # registered): DuckDB wraps the KeyboardInterrupt in an error of its own
    if from_duckdb and ("KeyboardInterrupt" in str(e) or isinstance(e.__context__, KeyboardInterrupt)):
        return KeyboardInterrupt()
    return None
