"""What keeps ``hlodump query`` and the CLI's terminal output safe.

* SQL runs in a DuckDB connection with external access off (``enable_external_access=false``,
  and the local file system disabled: no path, not even DuckDB's own ``:memory:*`` names, is a file;
  extensions neither installed nor loaded, configuration locked): it sees the dump's tables and
  nothing else — no ``read_csv('/etc/passwd')``, no ``COPY … TO``, no ``ATTACH`` (which would
  create files), no ``INSTALL``/``LOAD``, no temporary files (``temp_directory`` empty: DuckDB
  would otherwise spill to ``$CWD/.tmp/``), and ``SET`` cannot turn it back on. Its memory is
  limited (``--memory-limit``, default half the machine's RAM): a query that needs more fails
  with a DuckDB "Out of Memory" error instead of the process being killed.
  ``--allow-file-access`` gives DuckDB's defaults back (for queries that join other files).
* Text printed to a terminal has its control characters escaped (``\\x1b`` instead of ESC):
  a dump's strings cannot move the cursor, retitle the window or hide lines.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import IO, Any

__all__ = ["connect", "escape_controls", "add_query_arguments", "quote_column_words", "COLUMN_WORDS", "LOCKED_CONFIG"]

#: Column names of hlodump's tables that DuckDB's SQL reads as keywords (``offset``:
#: ``instructions``, ``assignments``, ``memory_report``, ``peak_buffers``; ``end``:
#: ``live_ranges``, ``buffers``): ``select offset from assignments`` is a syntax error there.
COLUMN_WORDS = ("offset", "end")

# tokens after which a word is an operand (a column), not a clause keyword
_OPERAND_AFTER = {"select", "where", "and", "or", "not", "by", "on", "when", "then", "else", "having", "distinct",
                  "in", "is", "between", "like", "ilike", "as", "all", "any", "case", "returning", "qualify",
                  "using", "set", "partition"}


def quote_column_words(sql: str) -> str:
    """``sql`` with the words of :data:`COLUMN_WORDS` double-quoted where they stand for a
    column (``select offset, end from …`` → ``select "offset", "end" from …``), by DuckDB's own
    tokenizer: an ``end`` that closes no ``case``, an ``offset`` that follows an operator, a
    comma or a word after which an operand comes (``select``, ``where``, ``by`` …) — not the
    ``OFFSET n`` clause, nor anything in strings, comments or already quoted. ``hlodump query``
    runs the rewritten SQL only when the SQL as given does not parse (issue 51), and says so."""
    import duckdb

    toks = duckdb.tokenize(sql)
    kw = duckdb.token_type.keyword
    edits: list[tuple[int, int]] = []
    depth = 0  # open case … end
    prev_word, prev_type = None, None
    word_re = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    for pos, typ in toks:
        if typ == duckdb.token_type.comment:
            continue
        m = word_re.match(sql, pos) if typ in (kw, duckdb.token_type.identifier) else None
        word = m.group(0).lower() if m else None
        # an operand comes next: at the start, after an operator other than ')' or a comma-like
        # sign, after select / where / by / when / then …
        operand = prev_type is None or (prev_type == duckdb.token_type.operator and prev_word != ")") or \
            (prev_type == kw and prev_word in _OPERAND_AFTER)
        if typ == kw and word == "case":
            depth += 1
        elif typ == kw and word == "end":
            if operand or not depth:
                edits.append((pos, m.end()))  # type: ignore[union-attr]
            else:
                depth -= 1
        elif typ == kw and word == "offset" and operand:
            edits.append((pos, m.end()))  # type: ignore[union-attr]
        prev_word = word if m else sql[pos]
        prev_type = typ
    for a, b in reversed(edits):
        sql = sql[:a] + '"' + sql[a:b] + '"' + sql[b:]
    return sql


#: DuckDB settings of ``hlodump query`` without ``--allow-file-access``.
LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "temp_directory": "",  # no spilling: nothing read or written under $CWD/.tmp/
    "lock_configuration": True,
}


def default_memory_limit() -> str:
    """Half the machine's physical memory, as DuckDB's ``memory_limit`` text (``"12000MB"``)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: DuckDB's own default (80 %)
        return ""
    return f"{max(total // 2 // 1_000_000, 64)}MB"


def add_query_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--memory-limit",
        default=None,
        metavar="SIZE",
        help="most memory the SQL may use, e.g. 4GB or 500MB (default: half the machine's RAM); a query "
        "that needs more fails with an error",
    )
    sp.add_argument(
        "--allow-file-access",
        action="store_true",
        help="let the SQL read and write files, attach databases and install extensions "
        "(off by default: the query sees the dump's tables only)",
    )


def connect(allow_file_access: bool = False, memory_limit: "str | None" = None) -> Any:
    """A DuckDB connection for ``hlodump query``: locked down unless ``allow_file_access``;
    at most ``memory_limit`` of memory (default ``default_memory_limit()``). A limit DuckDB
    does not understand raises ``ValueError``."""
    import duckdb

    config: dict[str, Any] = {} if allow_file_access else dict(LOCKED_CONFIG)
    lock = bool(config.pop("lock_configuration", False))
    limit = memory_limit if memory_limit is not None else default_memory_limit()
    if limit:
        config["memory_limit"] = limit
    try:
        con = duckdb.connect(config=config)
    except duckdb.Error as e:
        raise ValueError(f"--memory-limit {limit!r}: {e}") from None
    if lock:
        # DuckDB lets a database without external access still reach its own files: for an
        # in-memory one the names ':memory:', ':memory:.wal', ':memory:.wal.recovery' and
        # ':memory:.wal.checkpoint' relative to $CWD (a symlink of that name would be read or
        # overwritten). No local file system at all closes that: an in-memory database needs none.
        con.execute("SET disabled_filesystems = 'LocalFileSystem'")
        con.execute("SET lock_configuration = true")
    return con


# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional-text overrides that
# can make a line display differently from what it holds.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CELL_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: "re.Match[str]") -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_controls(text: str, keep_newlines: bool = True) -> str:
    """``text`` with control characters written as ``\\xNN`` / ``\\uNNNN`` (newlines and tabs
    kept unless ``keep_newlines`` is false, e.g. for one table cell)."""
    return (_CONTROLS if keep_newlines else _CELL_CONTROLS).sub(_escape, text)


class EscapingStream:
    """A text stream that escapes control characters (but newline, tab and CR before LF, as in
    CSV row ends) on their way to the terminal it wraps."""

    _RE = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def write(self, s: str) -> int:
        self._out.write(self._RE.sub(_escape, s))
        return len(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


def is_terminal(out: IO[str]) -> bool:
    return bool(getattr(out, "isatty", lambda: False)())


def escape_data(value: Any) -> Any:
    """``value`` (dicts, lists and tuples of any depth; tuples come back as lists) with every
    string's control characters escaped (one table cell each: newlines too), for text that a
    table renderer (rich) lays out: escaping the rendered output instead would also escape the
    renderer's own colours. Iterative, so no depth is too deep."""
    root: list[Any] = [None]
    work: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, container to fill, key)
    while work:
        src, parent, key = work.pop()
        if isinstance(src, dict):
            new: Any = {}
            for k, v in src.items():
                k2 = escape_controls(k, keep_newlines=False) if isinstance(k, str) else k
                new[k2] = None
                work.append((v, new, k2))
        elif isinstance(src, (list, tuple)):
            new = [None] * len(src)
            for i, v in enumerate(src):
                work.append((v, new, i))
        elif isinstance(src, str):
            new = escape_controls(src, keep_newlines=False)
        else:
            new = src
        parent[key] = new
    return root[0]
