"""The line cursor of the line formats (buffer assignment, memory-usage report): it walks a line
left to right and raises ``_Bad`` at the character where the grammar stops matching; the number
grammars XLA prints (mirrors ``src/lex/``)."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")  # FORMATS.md §0 NAME
INDEX_RE = re.compile(r"\{[0-9,]*\}")  # SHAPE_INDEX, e.g. {} {1} {0,2}
UINT_RE = re.compile(r"[0-9]+")
# A byte count whose digits may be grouped in threes with single spaces ("97 587 208"), §2.7.
GROUPED_RE = re.compile(r"[0-9]{1,3}(?: [0-9]{3})+|[0-9]+")
HUMAN_RE = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(B|KiB|MiB|GiB|TiB|PiB|EiB)")
_UNIT_POWER = {"B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "PiB": 5, "EiB": 6}
# Every number goes into an int64 or int32 column: a larger one is an error at its first digit
# ("… is out of range"), never a crash. Digit strings are never converted whole when they are
# long (Python refuses int() of > 4300 digits).
I64_MAX = 2**63 - 1
I32_MAX = 2**31 - 1


def _to_int(digits: str, limit: int) -> int | None:
    """int(digits) (ASCII digits, may be long) if it is at most ``limit``, else None."""
    d = digits.lstrip("0")
    if len(d) > 19:
        return None
    v = int(d or "0")
    return v if v <= limit else None


def human_bytes(text: str) -> int:
    """Bytes of a human-readable size such as ``4.00MiB``, ``51.1KiB``, ``576B``, ``-2.0KiB``.

    ``round_half_up(decimal * 1024**k)`` computed exactly on the digits (no floats). A negative
    size is rounded on its magnitude (the text is a sign followed by a magnitude).
    Raises ``ValueError`` for anything else.
    """
    m = HUMAN_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a human-readable byte count: {text!r}")
    sign, whole, frac, unit = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    whole, frac = whole.lstrip("0") or "0", frac.rstrip("0")
    if len(whole) > 19:
        raise ValueError(f"human-readable byte count too large: {text[:40]!r}")
    if len(frac) > 1000:  # exact without converting a huge digit string to int
        import decimal

        with decimal.localcontext() as c:
            c.prec = len(whole) + len(frac) + 40
            v = (decimal.Decimal(f"{whole}.{frac}") * 1024 ** _UNIT_POWER[unit]).quantize(
                decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)
        return -int(v) if sign else int(v)
    scaled = int(whole + frac) * 1024 ** _UNIT_POWER[unit]  # the decimal times 10**len(frac)
    denominator = 10 ** len(frac)
    quotient: int
    remainder: int
    quotient, remainder = divmod(scaled, denominator)
    if 2 * remainder >= denominator:
        quotient += 1
    return -quotient if sign else quotient


class _Bad(Exception):
    """A line does not match the grammar at character position ``pos`` (0-based)."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


def _column(text: str, pos: int) -> int:
    """1-based *byte* column of character position ``pos`` (the contract counts bytes)."""
    return len(text[:pos].encode("utf-8")) + 1


class _Cursor:
    """Reads one line left to right; each failed expectation raises ``_Bad`` where it failed."""

    def __init__(self, text: str, pos: int = 0, stop: int | None = None) -> None:
        self.text = text
        self.pos = pos
        self.stop = len(text) if stop is None else stop  # exclusive end of what we may read

    def at_end(self) -> bool:
        return self.pos >= self.stop

    def accept(self, literal: str) -> bool:
        if self.text.startswith(literal, self.pos, self.stop):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: str = "") -> None:
        if not self.accept(literal):
            raise _Bad(self.pos, f"expected {literal!r}" + (f" {what}" if what else ""))

    def _match(self, pattern: re.Pattern[str], what: str) -> str:
        m = pattern.match(self.text, self.pos, self.stop)
        if m is None:
            raise _Bad(self.pos, f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def uint(self, what: str, limit: int = I64_MAX) -> int:
        start = self.pos
        v = _to_int(self._match(UINT_RE, f"{what} (digits)"), limit)
        if v is None:
            raise _Bad(start, f"{what} is out of range (at most {limit})")
        return v

    def grouped(self, what: str) -> int:
        """A byte count, digits possibly grouped with single spaces."""
        start = self.pos
        v = _to_int(self._match(GROUPED_RE, f"{what} (digits)").replace(" ", ""), I64_MAX)
        if v is None:
            raise _Bad(start, f"{what} is out of range (at most {I64_MAX})")
        return v

    def name(self, what: str = "an instruction name") -> str:
        return self._match(NAME_RE, what)

    def index(self) -> str | None:
        """An optional shape index ``{…}``; a ``{`` that does not start one is an error."""
        if self.pos < self.stop and self.text[self.pos] == "{":
            return self._match(INDEX_RE, "a shape index such as {} or {0,2}")
        return None

    def human(self, what: str) -> int:
        start = self.pos
        m = HUMAN_RE.match(self.text, self.pos, self.stop)
        if m is None:
            raise _Bad(start, f"expected {what} (a size such as 576B, 51.1KiB, 4.00MiB)")
        self.pos = m.end()
        try:
            v = human_bytes(m.group(0))
        except ValueError:
            v = I64_MAX + 1
        if abs(v) > I64_MAX:
            raise _Bad(start, f"{what} is out of range (at most {I64_MAX} bytes)")
        return v

    def bytes_and_human(self, what: str) -> int:
        """``N (H)`` to the end: a byte count and its rounded human-readable form (XLA's
        totals, e.g. ``Total bytes used: 3225152 (3.08MiB)``). Returns N."""
        total = self.uint("the total in bytes")
        self.expect(" (")
        self.human("the rounded total")
        self.expect(")")
        self.end(what)
        return total

    def spaces(self) -> None:
        while self.pos < self.stop and self.text[self.pos] == " ":
            self.pos += 1

    def rest(self) -> str:
        out = self.text[self.pos:self.stop]
        self.pos = self.stop
        return out

    def end(self, what: str) -> None:
        if not self.at_end():
            raise _Bad(self.pos, f"unexpected text after {what}")
