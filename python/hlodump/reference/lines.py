"""A file's bytes as lines, as the core's ``src/lines.rs`` cuts them: LF-separated, one CR before
the LF dropped, UTF-8; a bad line (invalid UTF-8, a lone CR, longer than an Arrow text value holds)
is an error at its first bad byte; a file of more than ``MAX_LINES`` lines is refused whole. The
reader calls it for every text file, the proto formats for the text they print back."""

from __future__ import annotations

from typing import Protocol

from ..exceptions import ParseError

__all__ = ["split_lines", "check_line_count", "too_many_lines", "MAX_LINES", "MAX_LINE_LEN", "LONE_CR", "TOO_LONG"]


class Reports(Protocol):
    """Where a bad line is reported: the parser's ``FileContext`` (``reader.py``)."""

    def error(self, line: int, column: int, message: str, text: "str | bytes" = "") -> None: ...


#: The most lines a file may have (Rust: lines.rs `MAX_LINES`): every ``line`` column (and
#: ``errors.line``) is int32 (issue 26: output size). A file with more is refused before it is
#: parsed, in both error modes.
MAX_LINES = 2**31 - 1  # int32


def too_many_lines(limit: int) -> str:
    """The error message for a file of more than ``limit`` lines (Rust: `too_many_lines`)."""
    return f"more than {limit} lines: line numbers are int32 columns, which number at most {limit}"


def check_line_count(data: bytes, path: str) -> None:
    """Raise ParseError (at the first line past the limit) when ``data`` has more than
    ``MAX_LINES`` lines, as ``split_lines`` counts them: LF-separated, a final piece without LF
    is a line."""
    if len(data) <= MAX_LINES:  # each line but a last one holds its LF: no more lines than bytes
        return
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if lines > MAX_LINES:
        raise ParseError(path, MAX_LINES + 1, 1, too_many_lines(MAX_LINES), "")


LONE_CR = "lone CR (a carriage return not followed by a line feed)"
#: A line longer than this is an error (Rust: lines.rs `MAX_LINE_LEN`, `TOO_LONG`): no Arrow
#: text value holds more than 2**31 - 1 bytes, and every value we keep is a piece of a line.
MAX_LINE_LEN = 2**31 - 1
TOO_LONG = "line longer than 2147483647 bytes, the most one Arrow text value can hold"


def split_lines(data: bytes, ctx: Reports, lone_cr: bool = False) -> list[str | None]:
    """Split ``data`` into lines: LF separated, one CR before the LF removed, decoded as UTF-8.

    A line that is not valid UTF-8 or holds a lone CR (a CR not followed by LF; also a CR that
    ends a file without a final LF) is reported at its first such byte and becomes ``None``
    (parsers skip ``None`` lines). A final line without a newline counts; an empty last piece
    after the final newline does not. ``lone_cr``: the format reads logs (``Format.log``), where
    a lone CR is a terminal's redraw: it stays in the line's text, unreported, and the parser
    splits the line there (only invalid UTF-8 is reported).
    """
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    last_open = not data.endswith(b"\n")
    out: list[str | None] = []
    for i, raw in enumerate(parts, start=1):
        if raw.endswith(b"\r") and not (last_open and i == len(parts)):
            raw = raw[:-1]
        if len(raw) > MAX_LINE_LEN:
            ctx.error(i, 1, TOO_LONG, raw)  # type: ignore[arg-type]  # bytes: cut as Rust cuts
            out.append(None)
            continue
        cr = -1 if lone_cr else raw.find(b"\r")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if cr < 0 or e.start < cr:
                ctx.error(i, e.start + 1, "invalid UTF-8", raw)  # type: ignore[arg-type]
                out.append(None)
                continue
            text = raw.decode("utf-8", "replace")
        if cr >= 0:
            ctx.error(i, cr + 1, LONE_CR, raw)  # type: ignore[arg-type]
            out.append(None)
            continue
        out.append(text)
    return out
