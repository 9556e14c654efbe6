"""Reference parser for XLA's out-of-memory report (FORMATS.md §2.9), written from the grammar.

Input: the decoded lines of a file (a log, a paste, the report alone). Output rows:

* ``oom_reports``: one row per figure — ``section`` ``summary`` (``requested``; TPU ``used``,
  ``capacity``, ``exceeded``), ``stats`` (GPU, key = the printed label), ``total_usage``,
  ``output``, ``program_requirement`` (TPU, key = the printed entry name, ``total`` for the
  header; ``HLO temp`` also gives ``HLO temp unpadded`` / ``padded`` / ``fragmentation``);
* ``oom_buffers``: one row per complete buffer (GPU ``Buffer N:``, TPU ``N. Size:``).

How a line is read:

0. a lone CR (a terminal's redraw: progress bars) ends a piece of the line as a terminal
   shows it: each piece is read as a line of its own, with the file's line number (columns
   count from the start of the real line);
1. log prefixes (``PREFIX_RE``: ANSI codes, Ray tags, glog, TensorFlow/absl, Ray C++, Python
   logging, timestamps) and then spaces/tabs are removed from its start, spaces/tabs from its
   end; an empty remainder is a blank line and is skipped;
2. outside a report, a line ending in ``BufferAssignment OOM Debugging.`` opens a GPU report,
   a line containing ``Ran out of memory in memory space `` a TPU report;
3. inside a report, the line is matched by its key (``KEY:`` at its start); a line that is no
   part of the report ends it and is then read again as in 2.

A report that ends where its printer cannot stop (see ``_expected``) is reported at the line
that ended it (``column`` = where its content starts) or, at the end of the file, after the end
of its last line; an unfinished buffer gives no row. A line inside a buffer that is none of its
fields is, in this order: the rest of a hard-wrapped ``Operator:`` line (joined back when the
joined text starts an ``OpMetadataToString`` list: with a space if that reads, else without
one; at most ``MAX_JOINED`` bytes and ``MAX_JOINS`` lines);
a report's first line (the report is cut off there, and the line is read again); otherwise a
foreign line (another thread's log line, an unjoinable wrap): the cut-off error at it, the
buffer gives no row, and the report goes on (the interrupted buffer's remaining fields and
further foreign lines are passed over, the next ``Buffer N:`` / ``N. Size:`` is read, a line
that opens a report ends it). A rest is joined when the joined text starts an op-metadata list
(``op_metadata_prefix``: the last item may be cut) and the line has no log prefix. Rows of a report are given
when it ends; a report whose key lines equal an earlier report's gives one ``oom_reports`` row
``section='repeat'`` (``report_id`` = the earlier report's, ``line`` = its first line) and
nothing else (the log line and the exception printing the same report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["parse", "content_start", "tpu_bytes", "op_metadata"]

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1
I32_MAX = 2**31 - 1  # oom_buffers.source_line is int32

_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_CLOCK = r"[0-9]{2}:[0-9]{2}:[0-9]{2}"
_FILE_LINE = r"[^ \]:]+:[0-9]+"
# One item of a Ray tag: NAME, [NAME " "] pid=N, ip=ADDR, node_id=HEX (one pid= or ip= at least)
_RAY_WORD = r"[^ \t\n\f\r,()]+"
_RAY_ITEM = rf"(?:(?:{_RAY_WORD} )?pid=[0-9]+|ip={_RAY_WORD}|node_id={_RAY_WORD}|[^ \t\n\f\r,()=]+)"
# One log prefix (FORMATS.md §2.9.1); they may follow one another, separated by spaces.
PREFIX_RE = re.compile(
    r"[0-9]*\x1b?\[[0-9;]*m"                                          # ANSI code (ESC may be lost)
    rf"|\((?=(?:[^()]*[ ])?(?:pid|ip)=){_RAY_ITEM}(?:, {_RAY_ITEM})*\)"  # Ray tag (ASCII spaces as Rust)
    r"|\[rank[0-9]+\]:"                                              # torch.distributed
    rf"|[IWEF][0-9]{{4}} {_CLOCK}(?:\.[0-9]+)? +[0-9]+ {_FILE_LINE}\]"  # glog
    rf"|{_DATE} {_CLOCK}(?:\.[0-9]+)?: [IWEF] +(?:[0-9]+ +)?{_FILE_LINE}\]"  # TensorFlow / absl-py
    rf"|\[{_DATE} {_CLOCK}(?:[,.][0-9]+)? [IWEF] [0-9]+ [0-9]+\] {_FILE_LINE}:"  # Ray C++
    rf"|{_LEVEL}:[^: ]*:"                                             # Python logging
    rf"|\[{_DATE}[ T]{_CLOCK}(?:[.,][0-9]+)?(?:Z|[+-][0-9]{{2}}:?[0-9]{{2}})?\]:?"  # timestamp
    rf"|{_DATE}[ T]{_CLOCK}(?:[.,][0-9]+)?(?:Z|[+-][0-9]{{2}}:?[0-9]{{2}})?:?"
    rf"|{_CLOCK}(?:\.[0-9]+)?"                                        # time of day (Elixir Logger)
    r"|\[(?:debug|info|notice|warning|warn|error|critical|alert|emergency)\]"  # [level] (Elixir)
    r"|>"                                                             # Markdown quote
)
_WS = " \t"


def content_start(text: str) -> int:
    """Index where a line's content starts: after its log prefixes and indentation."""
    i = 0
    while True:
        m = PREFIX_RE.match(text, i)
        if m is None:
            break
        i = m.end()
        while i < len(text) and text[i] == " ":
            i += 1
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


# TPU sizes are powers of 1024 written without "i" (FORMATS.md §2.9.3: real reports print a
# buffer's shape and size, e.g. s32[8388608,8,4] = 2**30 bytes is "1.00G").
_TPU_SIZE_RE = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?([BKMGTPE])")
_TPU_POWER = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_HUMAN_RE = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(B|KiB|MiB|GiB|TiB|PiB|EiB)")
_HUMAN_POWER = {"B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "PiB": 5, "EiB": 6}


def _exact(sign: str, whole: str, frac: str, power: int) -> int | None:
    """round_half_up(whole.frac × 1024**power) on the digits, None beyond int64."""
    whole = whole.lstrip("0") or "0"
    if len(whole) > 19:
        return None
    frac = frac.rstrip("0")
    num = int(whole) * 10 ** len(frac) + _digits_int(frac or "0")
    v = (2 * num * 1024**power + 10 ** len(frac)) // (2 * 10 ** len(frac))
    if v > I64_MAX:
        return None
    return -v if sign else v


def _digits_int(d: str) -> int:
    """``int(d)`` for a digit string of any length (Python refuses more than 4300 digits in one
    conversion; the grammar has no such limit and the Rust reader none either)."""
    v = 0
    for k in range(0, len(d), 1000):
        part = d[k:k + 1000]
        v = v * 10 ** len(part) + int(part)
    return v


# A Size: value cut short: a proper prefix of HumanReadableNumBytes text (`384`, `384.0K`), or nothing.
_CUT_SIZE_RE = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?(?:[KMGTPE]i?)?)?")


class _Bad(Exception):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


def _size(text: str, pos: int, tpu: bool, what: str) -> tuple[int, int]:
    """A size at ``pos``: (bytes, end)."""
    m = (_TPU_SIZE_RE if tpu else _HUMAN_RE).match(text, pos)
    if m is None:
        example = "0B, 4.0K, 530.00M, 20.43G" if tpu else "576B, 51.1KiB, 4.00MiB"
        raise _Bad(pos, f"expected {what} (a size such as {example})")
    power = (_TPU_POWER if tpu else _HUMAN_POWER)[m.group(4)]
    v = _exact(m.group(1), m.group(2), m.group(3) or "", power)
    if v is None:
        raise _Bad(pos, f"{what} is out of range (at most {I64_MAX} bytes)")
    return v, m.end()


def tpu_bytes(text: str) -> int | None:
    m = _TPU_SIZE_RE.fullmatch(text)
    if m is None:
        return None
    return _exact(m.group(1), m.group(2), m.group(3) or "", _TPU_POWER[m.group(4)])


_META_ITEM_RE = re.compile(r'([a-z_]+)=("(?:[^"\\]|\\.)*"|\{[^}]*\}|[^ "{][^ ]*)')
_UNESCAPE = {'"': '"', "\\": "\\", "'": "'", "n": "\n", "t": "\t", "r": "\r"}


def op_metadata_prefix(s: str) -> bool:
    """Whether ``s`` is the start of an ``OpMetadataToString`` list: whole items separated by
    single spaces, the last one possibly cut (a key, ``KEY=``, an open quoted string or group,
    a bare value). Decides whether a wrapped line continues an ``Operator:`` line."""
    i, n = 0, len(s)
    while True:
        k = i
        while k < n and (s[k] == "_" or "a" <= s[k] <= "z"):
            k += 1
        if k == i:
            return False
        if k == n:
            return True
        if s[k] != "=":
            return False
        i = k + 1
        if i == n:
            return True
        if s[i] == '"':
            j = i + 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            if j >= n:
                return True
            i = j + 1
        elif s[i] == "{":
            j = s.find("}", i)
            if j < 0:
                return True
            i = j + 1
        else:
            j = i
            while j < n and s[j] != " ":
                j += 1
            if j == i:
                return False
            i = j
        if i == n:
            return True
        if s[i] != " ":
            return False
        i += 1


def op_metadata(text: str) -> dict[str, Any] | None:
    """op_type / op_name / source_file / source_line of an ``OpMetadataToString`` text, or None
    when it is not a space-separated list of KEY=VALUE items."""
    out: dict[str, Any] = {"op_type": None, "op_name": None, "source_file": None, "source_line": None}
    pos = 0
    while True:
        m = _META_ITEM_RE.match(text, pos)
        if m is None:
            return None
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", lambda e: _UNESCAPE.get(e.group(1), e.group(0)), value[1:-1])
        if key in ("op_type", "op_name", "source_file") and out[key] is None:
            out[key] = value
        elif key == "source_line" and out["source_line"] is None:
            if not value.isascii() or not value.isdigit():
                return None
            d = value.lstrip("0") or "0"
            if len(d) > 10 or int(d) > I32_MAX:  # (as a number past int64 did before)
                return None
            out["source_line"] = int(d)
        pos = m.end()
        if pos == len(text):
            return out
        if text[pos] != " ":
            return None
        pos += 1


# The longest Operator: text a wrapped line is joined to (bytes; as src/oom/mod.rs MAX_JOINED).
MAX_JOINED = 16 << 10
MAX_JOINS = 64  # the most wrapped lines joined to one Operator: line (as MAX_JOINS)
_GPU_MARKER = "BufferAssignment OOM Debugging."
# The TPU runtime's and compiler's one-line messages (Rust: tpu::TPU_ONE_LINERS)
_TPU_ONE_LINERS = ("Attempting to allocate ", "Attempting to reserve ", "unlikely to have enough memory. Requires ")
_TPU_MARKER = "Ran out of memory in memory space "
# The TPU compiler's one-line compile-time messages (Rust: compile.rs; FORMATS.md §2.9.5)
_HBM_MARKER = "Ran out of memory on "
_ALLOC_MARKER = "Allocation (size="
_ALLOC_MIDDLE = ") would exceed memory (size="
_ERROR_CODE_RE = re.compile(r"(?:(?<= )|^)(E[0-9]{4}): ([A-Za-z0-9_]+):")
_DIGITS_RE = re.compile(r"[0-9]+")
_REQUEST = "Out of memory while trying to allocate "
_REQUEST_RE = re.compile(r"([0-9]+) bytes")
# The platform allocator's (ROCm, CUDA without BFC): "Failed to allocate request for 154.06GiB
# (165420646400B) on device ordinal 0"
_REQUEST_PLATFORM_RE = re.compile(r"Failed to allocate request for ([^ ]+ \(([0-9]+)B\)) on device ordinal ")
_REPEATED_RE = re.compile(r"[ \t]* \[repeated [0-9]+x across cluster\]$")  # Ray's log deduplication
_STAT_RE = re.compile(r"([A-Za-z_ ]+): +")
_PERCENT_RE = re.compile(r"nan|-nan|inf|-inf|[0-9.]+")
_GPU_BUFFER_RE = re.compile(r"Buffer ([0-9]+):")
_TPU_BUFFER_RE = re.compile(r"([0-9]+)\. Size:")
_RULE_RE = re.compile(r"={3,}")
_GPU_KEYS = ("Size:", "Operator:", "Entry Parameter Subshape:", "XLA Label:", "Shape:")
_TPU_KEYS = ("Operator:", "Shape:", "Unpadded size:", "Extra memory due to padding:", "XLA label:",
             "Allocation type:")
_FIELD = {"Size:": "size", "Operator:": "operator", "Entry Parameter Subshape:": "entry_parameter_subshape",
          "XLA Label:": "xla_label", "XLA label:": "xla_label", "Shape:": "shape",
          "Unpadded size:": "unpadded_size_bytes", "Extra memory due to padding:": "padding",
          "Allocation type:": "allocation_type"}


def _tpu_header_space(c: str) -> str | None:
    """The memory space of a TPU section header (``Total hbm usage >= X:``, ``Program hbm
    requirement X:``, ``Largest program allocations in hbm:``), None for other lines."""
    if not c.endswith(":"):
        return None
    if c.startswith("Total ") and " usage " in c:
        return c[6:].split(" ", 1)[0]
    if c.startswith("Program ") and " requirement " in c:
        return c[8:].split(" ", 1)[0]
    if c.startswith("Largest program allocations in "):
        return c[len("Largest program allocations in "):-1]
    return None


def _request(c: str) -> tuple[str, int] | None:
    """The failed request in ``c`` (the BFC allocator's or the platform allocator's form); the
    BFC form at the first ``Out of memory while trying to allocate `` only, in bytes (``N
    bytes``) or, newer XLA, rounded (``101.99MiB``)."""
    i = c.find(_REQUEST)
    if i >= 0:
        p = i + len(_REQUEST)
        m = _REQUEST_RE.match(c, p)
        if m is not None:
            d = m.group(1).lstrip("0") or "0"
            if len(d) <= 19 and int(d) <= I64_MAX:
                return m.group(1) + " bytes", int(d)
        else:
            h = _HUMAN_RE.match(c, p)
            if h is not None:
                v = _exact(h.group(1), h.group(2), h.group(3) or "", _HUMAN_POWER[h.group(4)])
                if v is not None:
                    return h.group(0), v
    m = _REQUEST_PLATFORM_RE.search(c)
    if m is None:
        return None
    d = m.group(2).lstrip("0") or "0"
    if len(d) > 19 or int(d) > I64_MAX:
        return None
    return m.group(1), int(d)


def _compile_opener_at(c: str) -> int | None:
    """Where a compile-time message starts in ``c`` (Rust: ``compile::opener_at``): ``Ran out
    of memory on WORD`` with the word ending the line or followed by ``,``; ``Allocation
    (size=N) would exceed memory``."""
    at = c.find(_HBM_MARKER)
    if at >= 0:
        rest = c[at + len(_HBM_MARKER):]
        m = re.match(r"[^ ,]+", rest)
        if m is not None and (m.end() == len(rest) or rest[m.end()] == ","):
            return at
    at = c.find(_ALLOC_MARKER)
    if at < 0:
        return None
    m = _DIGITS_RE.match(c, at + len(_ALLOC_MARKER))
    return at if m is not None and c.startswith(_ALLOC_MIDDLE, m.end()) else None


def _tpu_prefix(v: str) -> bool:
    """A TPU size cut short (digits, point, sign; no unit yet) or nothing."""
    return all(ch in "0123456789.-" for ch in v)


def _tpu_one_liner_at(c: str) -> int | None:
    found = [i for i in (c.find(m) for m in _TPU_ONE_LINERS) if i >= 0]
    return min(found) if found else None


def _size_at(c: str, p: int) -> tuple[int, int | None] | None:
    """A TPU size at ``p``: (its end, its bytes: None beyond int64)."""
    m = _TPU_SIZE_RE.match(c, p)
    if m is None:
        return None
    return m.end(), _exact(m.group(1), m.group(2), m.group(3) or "", _TPU_POWER[m.group(4)])


def _tail_opener(c: str) -> tuple[str, str, str] | None:
    """A line of a report's inside that opens a report when it is read outside one (a paste of
    the report's tail): (backend, part, what the paste lacks)."""
    if c == "BufferAssignment stats:":
        return ("gpu", "stats", "the paste starts inside the report, at its statistics: its first line and what "
                "failed are not in it")
    if c == "Peak buffers:":
        return ("gpu", "peak", "the paste starts inside the report, at 'Peak buffers:': what failed and the "
                "statistics are not in it")
    if _GPU_BUFFER_RE.fullmatch(c):
        return ("gpu", "peak", "the paste starts inside the report's buffer list: what failed, the statistics and "
                "the buffers before it are not in it")
    if c.startswith(("Entry Parameter Subshape:", "XLA Label:")):
        return ("gpu", "interrupted", "the paste starts inside a buffer of the report: what failed, the statistics "
                "and the buffers up to the next 'Buffer N:' are not in it")
    if _TPU_BUFFER_RE.match(c):
        return ("tpu", "allocs", "the paste starts inside the report's allocation list: what failed, the usage "
                "figures and the allocations before it are not in it")
    if c.startswith(("Unpadded size:", "Extra memory due to padding:", "XLA label:", "Allocation type:")):
        return ("tpu", "interrupted", "the paste starts inside an allocation of the report: what failed, the usage "
                "figures and the allocations up to the next 'N. Size:' are not in it")
    return None


@dataclass
class _Report:
    backend: str
    part: str
    key: list[str]
    last: tuple[int, str]
    memory_space: str | None = None
    figures: list[dict[str, Any]] = field(default_factory=list)
    buffers: list[dict[str, Any]] = field(default_factory=list)
    buf: dict[str, Any] | None = None
    detailed: bool = False
    first: int = 0
    # opened by a line inside a report (a paste of its tail): given only with a figure or buffer
    tail: bool = False
    # Cut-off errors found inside the report (foreign lines in a buffer): given when it ends,
    # unless it repeats an earlier report.
    cuts: list[tuple[int, int, str, str]] = field(default_factory=list)

    def expected(self) -> str | None:
        """What must come next if the report cannot end here."""
        if self.part in ("peak", "allocs", "interrupted") or (self.part == "head" and not self.detailed):
            return None
        if self.part == "stats_header":
            return "'BufferAssignment stats:'"
        if self.part == "stats":
            return "a statistics line (LABEL: SIZE) or 'Peak buffers:'"
        if self.part in ("head", "usage", "program"):
            return "the rest of the report up to 'Largest program allocations in …:'"
        rank = self.buf["rank"] if self.buf else 0
        if self.backend == "gpu":
            return (f"the next line of Buffer {rank} (Size:, Operator:, Entry Parameter Subshape:, "
                    "XLA Label:, Shape:) or its ==== rule")
        return (f"the next line of allocation {rank} (Operator:, Shape:, Unpadded size:, Extra memory "
                "due to padding:, XLA label:, Allocation type:) or its ==== rule")


class _Parser:
    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.report: _Report | None = None
        self.seen: list[list[str]] = []
        self.request: tuple[int, str, int] | None = None
        self.full, self.off = "", 0

    def run(self, lines: list[str | None]) -> None:
        for no, full in enumerate(lines, start=1):
            if full is None:
                continue
            self.full, self.off = full, 0
            for text in full.split("\r"):
                try:
                    self.line(no, text)
                except _Bad as bad:
                    self.error(no, len(text[:bad.pos].encode("utf-8")) + 1, bad.message)
                self.off += len(text.encode("utf-8")) + 1
        if self.report is not None:
            self.end(None)

    def error(self, no: int, column: int, message: str) -> None:
        """An error at ``column`` of the current piece of line ``no`` (counted on the real line)."""
        self.ctx.error(no, self.off + column, message, self.full)

    def line(self, no: int, text: str) -> None:
        start = content_start(text)
        c = _REPEATED_RE.sub("", text[start:].rstrip(_WS), count=1)
        if not c:
            return
        if self.report is not None:
            if self.report_line(no, text, start, c):
                return
            self.end((no, text, start))
        self.idle_line(no, text, start, c)

    def figure(self, section: str, key: str, value_bytes: int | None, value: str, no: int) -> None:
        assert self.report is not None
        self.report.figures.append({"section": section, "key": key, "bytes": value_bytes, "value": value,
                                    "line": no})

    # ------------------------------------------------------------------ outside a report

    def idle_line(self, no: int, text: str, start: int, c: str) -> None:
        if c.endswith(_GPU_MARKER):
            at = len(c) - len(_GPU_MARKER)
            req = _request(c[:at])
            request = (no, *req) if req else self.request
            self.request = None
            self.report = _Report("gpu", "stats_header", [c[at:]], self.here(no, text), first=no)
            if request:
                self.figure("summary", "requested", request[2], request[1], request[0])
            return
        at = c.find(_TPU_MARKER)
        if at >= 0:
            self.request = None
            self.report = _Report("tpu", "head", [c[at:]], self.here(no, text), first=no)
            self.error_code(no, c[:at])
            self.tpu_summary(no, text, start + at + len(_TPU_MARKER), start + len(c))
            return
        at = _compile_opener_at(c)
        if at is not None:
            # The TPU compiler's one-line compile-time message (E1000, E1001).
            self.request = None
            self.report = _Report("tpu", "head", [c[at:]], self.here(no, text), first=no)
            self.error_code(no, c[:at])
            self.compile_message(no, text, start + at, start + len(c))
            return
        if _tpu_header_space(c) is not None:
            # A TPU report pasted without its first line.
            self.request = None
            self.report = _Report("tpu", "head", [c], self.here(no, text), first=no)
            self.missing_head(no, "the report's first line (what failed: the memory used of the capacity) is not in "
                                  "the paste")
            self.tpu_line(no, text, start, c)
            return
        at = _tpu_one_liner_at(c)
        if at is not None:
            # The TPU runtime's or compiler's one-line message: a report of its figures only.
            self.request = None
            self.report = _Report("tpu", "head", [c[at:]], self.here(no, text), first=no)
            self.error_code(no, c[:at])
            self.tpu_one_liner(no, c[at:])
            return
        tail = _tail_opener(c)
        if tail is not None:
            # A paste of a report's tail: what it holds is read, what it lacks is said.
            backend, part, msg = tail
            self.request = None
            self.report = _Report(backend, part, [c], self.here(no, text), first=no, tail=True)
            self.missing_head(no, msg)
            if part in ("peak", "allocs"):
                (self.gpu_line if backend == "gpu" else self.tpu_line)(no, text, start, c)
            return
        req = _request(c)
        self.request = (no, *req) if req else None

    def missing_head(self, no: int, msg: str) -> None:
        """A ``missing`` row: the paste starts inside the report."""
        self.figure("missing", "start", None, msg, no)

    def cut_off(self, r: _Report, no: int, column: int, message: str, full: str) -> None:
        """A report cut off (``column`` counts on the real line ``full``): a note, or in strict
        mode an error; the report gets a ``missing`` row with the same words (Rust: ``cut_off``)."""
        r.figures.append({"section": "missing", "key": "cut off", "bytes": None, "value": message, "line": no})
        if self.ctx.sink.strict:
            self.ctx.error(no, column, message, full)
            return
        self.ctx.note(no, full, column, "oom_report_cut_off", f"{no}:{column}", full, message)

    def here(self, no: int, text: str) -> tuple[int, str, int, str]:
        """Where the report's last line is: (number, piece, offset of the piece, real line)."""
        return (no, text, self.off, self.full)

    @staticmethod
    def opens_report(c: str) -> bool:
        """Whether a line read outside a report would open one."""
        return (c.endswith(_GPU_MARKER) or _TPU_MARKER in c or _tpu_header_space(c) is not None
                or _tpu_one_liner_at(c) is not None or _compile_opener_at(c) is not None)

    def tpu_one_liner(self, no: int, c: str) -> None:
        """The figures of a one-line TPU message (``c`` from its marker on): ``requested`` and
        ``free`` (``reserved``, ``reservable``), or ``required`` and ``available``; what does not
        read as such is left out (Rust: ``tpu_one_liner``)."""
        def chain(p: int, items: list[tuple[str, str, str]]) -> None:
            # (text before the size, key, text after the size), each after the previous
            for before, key, after in items:
                if not c.startswith(before, p):
                    return
                got = _size_at(c, p + len(before))
                if got is None or not c.startswith(after, got[0]):
                    return
                self.figure("summary", key, got[1], c[p + len(before):got[0]], no)
                p = got[0] + len(after)

        for head in ("Attempting to allocate ", "Attempting to reserve "):
            if c.startswith(head):
                got = _size_at(c, len(head))
                if got is None:
                    return
                end, v = got
                self.figure("summary", "requested", v, c[len(head):end], no)
                at = c.find("There are ", end)
                if at < 0:
                    return
                chain(at, [("There are ", "free", " free"), (", ", "reserved", " reserved"),
                           (", and ", "reservable", " reservable")])
                return
        at = c.find("Requires ")
        if at >= 0:
            chain(at, [("Requires ", "required", ""), (", has ", "available", " available")])

    def error_code(self, no: int, before: str) -> None:
        """The error code and name stated before a TPU message (``error`` rows ``code``, ``name``)."""
        m = _ERROR_CODE_RE.search(before)
        if m is not None:
            self.figure("error", "code", None, m.group(1), no)
            self.figure("error", "name", None, m.group(2), no)

    def compile_message(self, no: int, text: str, pos: int, stop: int) -> None:
        """A compile-time message at ``pos:stop`` (Rust: ``compile_message``): a line that ends
        before its figures are complete is cut off, other text is an error."""
        assert self.report is not None
        s = text[:stop]
        hbm = s.startswith(_HBM_MARKER, pos)
        what = self.hbm_message(no, s, pos + len(_HBM_MARKER)) if hbm else self.alloc_message(no, s, pos)
        if what is not None:
            column = self.off + len(s.encode("utf-8")) + 1
            self.report.cuts.append((no, column, f"out-of-memory report cut off: expected {what}", self.full))

    def hbm_message(self, no: int, s: str, pos: int) -> str | None:
        r = self.report
        assert r is not None
        n = s.find(",", pos)
        n = len(s) if n < 0 else n
        r.memory_space = s[pos:n]
        pos = n
        required = ", the total memory required for "
        if required.startswith(s[pos:]):
            return "', the total memory required for WHAT (SIZE) exceeds available SPACE (SIZE)'"
        if not s.startswith(required, pos):
            raise _Bad(pos, f'expected "{required}" after the memory space')
        pos += len(required)
        close = s.find(") exceeds available ", pos)
        if close < 0:
            return "' (SIZE) exceeds available SPACE (SIZE)'"
        open_ = s.rfind(" (", pos, close)
        if open_ < 0:
            raise _Bad(close, "expected 'WHAT (SIZE)' before ') exceeds available'")
        self.figure("summary", "required for", None, s[pos:open_], no)
        pos = open_ + 2
        v, end = _size(s, pos, True, "the memory required")
        self.figure("summary", "required", v, s[pos:end], no)
        if end != close:
            raise _Bad(end, "expected ') exceeds available' after the size")
        pos = close + len(") exceeds available ")
        m = re.compile(r"[^ ]*").match(s, pos)
        pos = m.end()
        if m.end() == m.start() or pos >= len(s) or " (".startswith(s[pos:]):
            return "'SPACE (SIZE)' after 'exceeds available'"
        if not s.startswith(" (", pos):
            raise _Bad(pos, 'expected " (" after the memory space')
        pos += 2
        if _tpu_prefix(s[pos:]):
            return "the available memory (SIZE) and ')'"
        v, end = _size(s, pos, True, "the available memory")
        self.figure("summary", "available", v, s[pos:end], no)
        pos = end
        if pos >= len(s):
            return "')' after the available memory"
        if not s.startswith(")", pos):
            raise _Bad(pos, 'expected ")" after the available memory')
        pos += 1
        if s.startswith(".", pos):
            pos += 1
        while s.startswith(" ", pos):
            pos += 1
        if pos < len(s):
            self.module_sentence(no, s, pos)
        return None

    def module_sentence(self, no: int, s: str, pos: int) -> None:
        """``HLO module: NAME[.]`` (the end of the E1000 message, or a line of its own)."""
        if not s.startswith("HLO module: ", pos):
            raise _Bad(pos, 'expected "HLO module: "')
        pos += len("HLO module: ")
        word = s[pos:].split(" ", 1)[0]
        name = word[:-1] if word.endswith(".") else word
        if not name:
            raise _Bad(pos, "expected the module name")
        self.figure("error", "module", None, name, no)

    def wants_module(self) -> bool:
        r = self.report
        assert r is not None
        keys = {f["key"] for f in r.figures}
        return not r.detailed and "available" in keys and "module" not in keys

    def alloc_message(self, no: int, s: str, pos: int) -> str | None:
        """``Allocation (size=N) would exceed memory (size=M)[ :: #allocationK [… space=SPACE, …]
        :: NAME]`` (Rust: ``alloc_message``)."""
        r = self.report
        assert r is not None
        pos += len(_ALLOC_MARKER)
        m = _DIGITS_RE.match(s, pos)
        if int(m.group(0)) > I64_MAX:
            raise _Bad(pos, f"the allocation size is out of range (at most {I64_MAX})")
        self.figure("summary", "requested", int(m.group(0)), m.group(0), no)
        pos = m.end() + len(_ALLOC_MIDDLE)
        if all(ch.isdigit() and ch.isascii() for ch in s[pos:]):
            return "the memory size and ')'"
        m = _DIGITS_RE.match(s, pos)
        if m is None:
            raise _Bad(pos, "expected the memory size (digits)")
        if int(m.group(0)) > I64_MAX:
            raise _Bad(pos, f"the memory size is out of range (at most {I64_MAX})")
        self.figure("summary", "capacity", int(m.group(0)), m.group(0), no)
        pos = m.end()
        if not s.startswith(")", pos):
            raise _Bad(pos, 'expected ")" after the memory size')
        rest = s[pos + 1:]
        p = rest.find(" :: #")
        if p >= 0:
            self.figure("error", "allocation", None, rest[p + 4:].split(" ", 1)[0], no)
        p = rest.find("space=")
        if p >= 0:
            sp = re.compile(r"[^,\] ]*").match(rest, p + 6).group(0)
            if sp:
                r.memory_space = sp
        p = rest.rfind("] :: ")
        if p >= 0:
            name = rest[p + 5:]
            if name and " " not in name:
                self.figure("error", "instruction", None, name, no)
        return None

    def tpu_summary(self, no: int, text: str, pos: int, stop: int) -> None:
        assert self.report is not None
        s = text[:stop]
        m = re.compile(r"[^. ]+").match(s, pos)
        if m is None:
            raise _Bad(pos, "expected the memory space name")
        self.report.memory_space = m.group(0)
        pos = m.end()
        if s.startswith(" while ", pos):  # "… in memory space vmem while allocating on stack for …"
            return
        if not s.startswith(".", pos):
            raise _Bad(pos, 'expected "." after the memory space name')
        pos += 1
        while s.startswith(" ", pos):
            pos += 1
        if s.startswith("Used ", pos):
            pos += 5
            v, end = _size(s, pos, True, "the memory used")
            self.figure("summary", "used", v, s[pos:end], no)
            if not s.startswith(" of ", end):
                raise _Bad(end, 'expected " of "')
            pos = end + 4
            v, end = _size(s, pos, True, "the capacity")
            self.figure("summary", "capacity", v, s[pos:end], no)
            dot = s.find(".", end)
            pos = len(s) if dot < 0 else dot + 1
            while s.startswith(" ", pos):
                pos += 1
        if s.startswith("Exceeded ", pos):
            self.exceeded(no, s, pos)

    def exceeded(self, no: int, s: str, pos: int) -> None:
        by = s.find(" capacity by ", pos + len("Exceeded "))
        if by < 0:
            raise _Bad(pos + len("Exceeded "), "expected 'Exceeded NAME capacity by SIZE'")
        pos = by + len(" capacity by ")
        v, end = _size(s, pos, True, "the excess")
        self.figure("summary", "exceeded", v, s[pos:end], no)

    # ------------------------------------------------------------------ inside a report

    def report_line(self, no: int, text: str, start: int, c: str) -> bool:
        r = self.report
        assert r is not None
        if r.buf is not None and r.buf.get("cut_size") is not None:
            # a Size: value cut short on the line before, and the file goes on: the error it is
            line, column, message, full = r.buf.pop("cut_size")
            self.ctx.error(line, column, message, full)
        try:
            if r.part == "interrupted":
                taken = self.interrupted_line(no, text, start, c)
            else:
                taken = (self.gpu_line if r.backend == "gpu" else self.tpu_line)(no, text, start, c)
                if not taken and r.part == "buffer":
                    taken = self.foreign_buffer_line(no, text, start, c)
        except _Bad:
            r.key.append(c)
            r.last = self.here(no, text)
            if r.buf is not None:
                r.buf["broken"] = True
            raise
        if taken:
            r.key.append(c)
            r.last = self.here(no, text)
        return taken

    def foreign_buffer_line(self, no: int, text: str, start: int, c: str) -> bool:
        """A line inside a buffer that is none of its fields: the rest of a hard-wrapped
        ``Operator:`` line, or a cut (see the module's docstring). True if the report keeps it."""
        r = self.report
        assert r is not None and r.buf is not None
        # (a wrapped rest has no log prefix: only blanks before it)
        if r.buf.get("wrap") == "operator" and not text[:start].strip(_WS) and self.join_operator(c):
            return True
        if self.opens_report(c):
            return False
        r.cuts.append((no, self.off + len(text[:start].encode("utf-8")) + 1,
                       f"out-of-memory report cut off: expected {r.expected()}", self.full))
        r.part, r.buf = "interrupted", None
        req = _request(c)
        self.request = (no, *req) if req else None
        return True

    def join_operator(self, c: str) -> bool:
        """Join ``c`` (a line with no prefix or indentation) to the buffer's ``Operator:`` text
        if the result starts an op-metadata list (with a space if that reads, else without)."""
        r = self.report
        assert r is not None and r.buf is not None
        head = r.buf["operator"]
        if len(head.encode("utf-8")) + 1 + len(c.encode("utf-8")) > MAX_JOINED or r.buf["joins"] >= MAX_JOINS:
            return False
        for sep in (" ", ""):
            if op_metadata_prefix(head + sep + c):
                r.buf["operator"] = head + sep + c
                r.buf["joins"] += 1
                return True
        return False

    def interrupted_line(self, no: int, text: str, start: int, c: str) -> bool:
        """After a foreign line in a buffer: the next buffer resumes the report; the remaining
        fields and rule of the interrupted buffer, and other foreign lines, are passed over; a
        line that opens a report ends it."""
        r = self.report
        assert r is not None
        if r.backend == "gpu":
            resumes = _GPU_BUFFER_RE.fullmatch(c) is not None
            keys = _GPU_KEYS
        else:
            resumes = _TPU_BUFFER_RE.match(c) is not None
            keys = _TPU_KEYS
        if resumes:
            r.part = "peak" if r.backend == "gpu" else "allocs"
            return (self.gpu_line if r.backend == "gpu" else self.tpu_line)(no, text, start, c)
        if _RULE_RE.fullmatch(c) is not None or any(c.startswith(k) for k in keys):
            return True
        if self.opens_report(c):
            return False
        req = _request(c)
        self.request = (no, *req) if req else None
        return True

    def gpu_line(self, no: int, text: str, start: int, c: str) -> bool:
        r = self.report
        assert r is not None
        s = text[:start + len(c)]
        if r.part == "stats_header":
            if c != "BufferAssignment stats:":
                return False
            r.part = "stats"
            return True
        if r.part == "stats":
            if c == "Peak buffers:":
                r.part = "peak"
                return True
            m = _STAT_RE.match(c)
            if m is None or ":" in m.group(1):
                return False
            pos = start + m.end()
            v, end = _size(s, pos, False, "the size")
            if s.startswith(" (", end):
                p = _PERCENT_RE.match(s, end + 2)
                if p is None:
                    raise _Bad(end + 2, "expected a percentage")
                end = p.end()
                if not s.startswith("%)", end):
                    raise _Bad(end, 'expected "%)"')
                end += 2
            if end != len(s):
                raise _Bad(end, "unexpected text after the statistics line")
            self.figure("stats", m.group(1), v, s[pos:], no)
            return True
        m = _GPU_BUFFER_RE.fullmatch(c)
        if m is not None:
            digits = m.group(1).lstrip("0") or "0"
            ok = len(digits) <= 10 and int(digits) <= I32_MAX
            self.open_buffer(no, text, start, int(digits) if ok else 0)
            if not ok:
                raise _Bad(start + len("Buffer "), f"the buffer number is out of range (at most {I32_MAX})")
            return True
        if r.part == "peak":
            return False
        return self.buffer_line(no, text, start, c)

    def tpu_line(self, no: int, text: str, start: int, c: str) -> bool:
        r = self.report
        assert r is not None
        s = text[:start + len(c)]
        if r.part in ("allocs", "buffer"):
            m = _TPU_BUFFER_RE.match(c)
            if m is not None:
                digits = m.group(1).lstrip("0") or "0"
                ok = len(digits) <= 10 and int(digits) <= I32_MAX
                self.open_buffer(no, text, start, int(digits) if ok else 0)
                if not ok:
                    raise _Bad(start, f"the allocation number is out of range (at most {I32_MAX})")
                pos = start + m.end()
                while s.startswith(" ", pos):
                    pos += 1
                try:
                    v, end = _size(s, pos, True, "the size")
                except _Bad as bad:
                    if _CUT_SIZE_RE.fullmatch(s[pos:]):
                        self.size_cut_short(no, s, bad)  # the paste may end on this line (issue 51)
                        return True
                    raise
                if end != len(s):
                    raise _Bad(end, "unexpected text after the size")
                assert r.buf is not None
                r.buf["size"] = (s[pos:end], v)
                return True
            if r.part == "allocs":
                return False
            return self.buffer_line(no, text, start, c)
        space = _tpu_header_space(c)
        if space is not None and r.memory_space is None:
            r.memory_space = space
        if c.startswith("HLO module: ") and r.part == "head" and self.wants_module():
            # the E1000 message's last sentence, wrapped onto a line of its own
            self.module_sentence(no, s, start)
            return True
        if c.startswith("Exceeded ") and r.part == "head" and not r.detailed:
            self.exceeded(no, s, start)
            return True
        if c.startswith("Total ") and " usage " in c and c.endswith(":"):
            r.part, r.detailed = "usage", True
            pos = start + c.find(" usage ") + len(" usage ")
            v_at = pos
            if s.startswith(">= ", pos):
                pos += 3
            v, end = _size(s, pos, True, "the total usage")
            if end != len(s) - 1:
                raise _Bad(end, "unexpected text after the total usage")
            self.figure("total_usage", "total", v, s[v_at:-1], no)
            return True
        if c.startswith("Program ") and " requirement " in c and c.endswith(":"):
            r.part, r.detailed = "program", True
            pos = start + c.find(" requirement ") + len(" requirement ")
            v, end = _size(s, pos, True, "the program requirement")
            if end != len(s) - 1:
                raise _Bad(end, "unexpected text after the program requirement")
            self.figure("program_requirement", "total", v, s[pos:-1], no)
            return True
        if c.startswith("Largest program allocations in ") and c.endswith(":"):
            r.part, r.detailed = "allocs", True
            return True
        if c.startswith("Output size "):
            r.part, r.detailed = "head", True
            pos = start + len("Output size ")
            if s.startswith("unknown", pos):
                self.figure("output", "output size", None, "unknown", no)
                end = pos + 7
                if s.startswith(".", end):
                    end += 1
                if end != len(s):
                    raise _Bad(end, "unexpected text after the output size")
                return True
            v, end = _size(s, pos, True, "the output size")
            self.figure("output", "output size", v, s[pos:end], no)
            if not s.startswith("; shares ", end):
                raise _Bad(end, 'expected "; shares "')
            pos = end + len("; shares ")
            v, end = _size(s, pos, True, "the bytes shared with arguments")
            self.figure("output", "shared with arguments", v, s[pos:end], no)
            if not s.startswith(" with arguments", end):
                raise _Bad(end, 'expected " with arguments"')
            end += len(" with arguments")
            if s.startswith(".", end):
                end += 1
            if end != len(s):
                raise _Bad(end, "unexpected text after the output size")
            return True
        if r.part in ("usage", "program"):
            return self.tpu_entry(no, text, start, c)
        return False

    def tpu_entry(self, no: int, text: str, start: int, c: str) -> bool:
        # NAME, then the first space-preceded token that is a whole size or "unknown size".
        m = re.compile(r"(?:(?<= )(?=[^ ])(?:(-?[0-9]+(?:\.[0-9]+)?[BKMGTPE])(?= |$)|unknown size))").search(c, 1)
        if m is None or not c[0].isascii() or not c[0].isalpha():
            return False
        p = m.start()
        key = c[:p].rstrip(_WS)
        section = "total_usage" if self.report and self.report.part == "usage" else "program_requirement"
        if m.group(1) is None:
            self.figure(section, key, None, c[p:], no)
            return True
        s = text[:start + len(c)]
        v, end = _size(s, start + p, True, "the size")
        self.figure(section, key, v, c[p:], no)
        for word, suffix in (("Unpadded (", "unpadded"), ("Padded (", "padded"), ("fragmentation (", "fragmentation")):
            at = c.find(word, m.end())
            if at >= 0:
                pos = start + at + len(word)
                v, end = _size(s, pos, True, "the size")
                if not s.startswith(")", end):
                    raise _Bad(end, 'expected ")"')
                self.figure(section, f"{key} {suffix}", v, s[pos:end], no)
        return True

    def open_buffer(self, no: int, text: str, start: int, rank: int) -> None:
        r = self.report
        assert r is not None
        prev = r.buf
        r.part = "buffer"
        r.buf = {"rank": rank, "line": no, "broken": False, "wrap": None, "joins": 0}
        if prev is not None and not prev["broken"]:
            self.cut_off(r, no, self.off + len(text[:start].encode("utf-8")) + 1,
                         f"buffer {prev['rank']} has no closing ==== rule (the report lost lines here)", self.full)

    def size_cut_short(self, no: int, s: str, bad: _Bad) -> None:
        """The open buffer's Size: value stops where a size can go on: no row for it; a note if
        the file ends here, else the error ``bad`` (reported at the next line)."""
        r = self.report
        assert r is not None and r.buf is not None
        r.buf["broken"] = True
        r.buf["cut_size"] = (no, self.off + len(s[:bad.pos].encode("utf-8")) + 1, bad.message, self.full)

    def buffer_line(self, no: int, text: str, start: int, c: str) -> bool:
        r = self.report
        assert r is not None and r.buf is not None
        s = text[:start + len(c)]
        if _RULE_RE.fullmatch(c):
            r.part = "peak" if r.backend == "gpu" else "allocs"
            b, r.buf = r.buf, None
            if b["broken"]:
                return True
            if "size" not in b:
                raise _Bad(start, f"buffer {b['rank']} has no Size: line")
            r.buffers.append(b)
            return True
        key = next((k for k in (_GPU_KEYS if r.backend == "gpu" else _TPU_KEYS) if c.startswith(k)), None)
        if key is None:
            return False
        name = _FIELD[key]
        r.buf["wrap"] = name if name == "operator" else None
        pos = start + len(key)
        while s.startswith(" ", pos):
            pos += 1
        if name in r.buf:
            raise _Bad(start, f'"{key[:-1]}" printed twice in buffer {r.buf["rank"]}')
        value = s[pos:]
        if key == "Size:":
            try:
                v, end = _size(s, pos, False, "the size")
            except _Bad as bad:
                if _CUT_SIZE_RE.fullmatch(value):
                    self.size_cut_short(no, s, bad)  # the paste may end on this line (issue 51)
                    return True
                raise
            if end != len(s):
                raise _Bad(end, "unexpected text after the size")
            r.buf["size"] = (value, v)
        elif key == "Unpadded size:":
            v, end = _size(s, pos, True, "the unpadded size")
            if end != len(s):
                raise _Bad(end, "unexpected text after the unpadded size")
            r.buf[name] = v
        elif key == "Extra memory due to padding:":
            v, _ = _size(s, pos, True, "the padding")
            r.buf[name] = (value, v)
        else:
            r.buf[name] = value
        return True

    def end(self, at: tuple[int, str, int] | None) -> None:
        r = self.report
        assert r is not None
        self.report = None
        if r.tail and not r.buffers and all(f["section"] == "missing" for f in r.figures):
            return  # a stray line that looked like the inside of a report
        for rid, k in enumerate(self.seen):
            if k == r.key:
                # Printed again (the log line, then the exception): one row that says so.
                self.ctx.add("oom_reports", {"report_id": rid, "backend": r.backend, "memory_space": r.memory_space,
                                             "section": "repeat", "key": "repeats report", "bytes": None,
                                             "value": r.key[0], "line": r.first})
                return
        for no, column, message, full in r.cuts:
            self.cut_off(r, no, column, message, full)
        what = r.expected()
        cut = r.buf.pop("cut_size", None) if r.buf is not None else None
        if cut is not None and at is None:
            # the paste ends inside a Size: value (`Size: 384`): cut there, like every cut paste
            assert r.buf is not None
            self.cut_off(r, cut[0], cut[1], "out-of-memory report cut off by the end of the file inside the Size: "
                         f"of buffer {r.buf['rank']}", cut[3])
        elif what is not None:
            if at is not None:
                no, text, start = at
                self.cut_off(r, no, self.off + len(text[:start].encode("utf-8")) + 1,
                             f"out-of-memory report cut off: expected {what}", self.full)
            else:
                no, text, off, full = r.last
                self.cut_off(r, no, off + len(text.encode("utf-8")) + 1,
                             f"out-of-memory report cut off by the end of the file: expected {what}", full)
        rid = len(self.seen)
        self.seen.append(r.key)
        for f in r.figures:
            self.ctx.add("oom_reports", {"report_id": rid, "backend": r.backend, "memory_space": r.memory_space,
                                         **f})
        for b in r.buffers:
            meta = op_metadata(b["operator"]) if b.get("operator") is not None else None
            meta = meta or {"op_type": None, "op_name": None, "source_file": None, "source_line": None}
            padding = b.get("padding")
            self.ctx.add("oom_buffers", {
                "report_id": rid, "rank": b["rank"], "size_bytes": b["size"][1], "size": b["size"][0],
                "operator": b.get("operator"), **meta, "shape": b.get("shape"),
                "unpadded_size_bytes": b.get("unpadded_size_bytes"),
                "padding_bytes": padding[1] if padding else None, "padding": padding[0] if padding else None,
                "xla_label": b.get("xla_label"), "allocation_type": b.get("allocation_type"),
                "entry_parameter_subshape": b.get("entry_parameter_subshape"), "line": b["line"],
            })


def parse(lines: list[str | None], ctx: Any) -> None:
    """Parse the out-of-memory reports in one file's decoded lines (``None``: undecodable)."""
    _Parser(ctx).run(lines)
