"""What ``repr(dump)`` and Jupyter show: files and dumps read, one row per table, errors.

Everything is taken from the tables as read (``string_view`` views), so showing a ``Dump``
never makes the ``large_string`` copies. Text that comes from the dump (paths, dump names,
messages) has its control characters escaped (``cli_safety.escape_controls``) and, in HTML,
is HTML-escaped.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

import pyarrow as pa

from .cli_safety import escape_controls
from .schema import SCHEMAS

__all__ = ["summarize", "text_repr", "html_repr", "arrow_bytes"]

#: Errors and unreadable files listed by name (the rest are counted).
FIRST = 5
#: Dumps listed by name.
FIRST_DUMPS = 3


def _clean(s: Any) -> str:
    return escape_controls(str(s), keep_newlines=False)


def _short(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def fmt_bytes(n: int) -> str:
    """Bytes in IEC units, as every command prints them (``hlodump.units.format_bytes``)."""
    from .units import format_bytes

    return format_bytes(n)


# ------------------------------------------------------------------------------ Arrow bytes


def _walk(arr: pa.Array, own: dict[int, int], text: dict[int, int]) -> None:
    """Sort the buffers of ``arr`` into its own (views, keys, dictionaries, offsets, validity,
    numbers) and the text that string_view arrays point into (the input files, shared by every
    column)."""
    t = arr.type
    if pa.types.is_dictionary(t):  # keys, then the dictionary (buffers() gives the keys only)
        _walk(arr.indices, own, text)
        _walk(arr.dictionary, own, text)
        return
    bufs = arr.buffers()
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        for b in bufs[:2]:
            if b is not None:
                own[b.address] = b.size
        for b in bufs[2:]:
            if b is not None and b.size:
                text[b.address] = max(b.size, text.get(b.address, 0))
        return
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        for b in bufs[:2]:
            if b is not None:
                own[b.address] = b.size
        _walk(arr.values, own, text)
        return
    if pa.types.is_struct(t):
        if bufs[0] is not None:
            own[bufs[0].address] = bufs[0].size
        for i in range(t.num_fields):
            _walk(arr.field(i), own, text)
        return
    for b in bufs:
        if b is not None:
            own[b.address] = b.size


def _union(spans: dict[int, int]) -> int:
    """Bytes covered by (address, size) spans (windows of one big file overlap)."""
    total, end = 0, 0
    for a, n in sorted(spans.items()):
        lo, hi = max(a, end), a + n
        if hi > lo:
            total += hi - lo
        end = max(end, hi)
    return total


def arrow_bytes(table: pa.Table, text: Optional[dict[int, int]] = None) -> int:
    """Bytes of the buffers ``table`` holds itself: everything but the text its ``string_view``
    columns point into (``Table.nbytes`` counts a whole mapped file once per such column).
    The text buffers are added to ``text`` (address → size) when given."""
    own: dict[int, int] = {}
    sink: dict[int, int] = {} if text is None else text
    for col in table.columns:
        for chunk in col.chunks:
            _walk(chunk, own, sink)
    return _union(own)


# ------------------------------------------------------------------------------ the facts


@dataclass
class TableRow:
    name: str
    rows: int
    columns: int
    arrow_bytes: int
    copy_bytes: Optional[int]  # the large_string copy made on access (lazy dumps), if made


@dataclass
class Summary:
    n_files: int = 0
    kinds: list[tuple[str, int]] = field(default_factory=list)
    dumps: list[tuple[str, int]] = field(default_factory=list)
    parsed: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, error), first few
    n_unreadable: int = 0
    tables: list[TableRow] = field(default_factory=list)
    not_read: list[str] = field(default_factory=list)
    text_bytes: int = 0
    errors: list[tuple[str, Any, Any, str]] = field(default_factory=list)  # (path, line, col, msg)
    n_errors: int = 0
    string_view: Optional[bool] = None


class Shown(Protocol):
    """What the summary reads of a dump (``hlodump.Dump`` is one; this file is imported by
    ``dump.py``, so it names no ``Dump``): its tables as read, the ``large_string`` copies made
    on access so far, and how its text is held."""

    _tables: dict[str, pa.Table]
    _cast: dict[str, pa.Table]

    @property
    def string_view(self) -> Optional[bool]: ...


def summarize(d: Shown) -> Summary:
    s = Summary(string_view=getattr(d, "string_view", True))
    tables: dict[str, pa.Table] = d._tables
    files = tables.get("files")
    paths: dict[int, str] = {}
    if files is not None and files.num_rows:
        cols = files.column_names
        rows = files.select([c for c in ("file_id", "path", "kind", "parsed", "error", "dump") if c in cols]).to_pylist()
        s.n_files = len(rows)
        paths = {r["file_id"]: r["path"] for r in rows}
        s.kinds = sorted(Counter(r["kind"] for r in rows).items(), key=lambda kv: (-kv[1], kv[0]))
        if "dump" in cols:
            s.dumps = sorted(Counter(r["dump"] for r in rows).items(), key=lambda kv: (-kv[1], kv[0]))
        s.parsed = sum(1 for r in rows if r.get("parsed"))
        bad = [r for r in rows if r.get("error") is not None]
        s.n_unreadable = len(bad)
        s.unreadable = [(r["path"], r["error"]) for r in bad[:FIRST]]
    text: dict[int, int] = {}
    cast: dict[str, pa.Table] = getattr(d, "_cast", {})
    for name, t in tables.items():
        copy = None
        c = cast.get(name)
        if c is not None and c is not t:
            copy = sum(c.column(i).nbytes for i, f in enumerate(c.schema) if not t.schema.field(i).type.equals(f.type))
        s.tables.append(TableRow(name, t.num_rows, t.num_columns, arrow_bytes(t, text), copy))
    s.not_read = [n for n in SCHEMAS if n not in tables]
    s.text_bytes = _union(text)
    errors = tables.get("errors")
    if errors is not None and errors.num_rows:
        s.n_errors = errors.num_rows
        for r in errors.slice(0, FIRST).select(["file_id", "line", "column", "message"]).to_pylist():
            s.errors.append((paths.get(r["file_id"], f"file {r['file_id']}"), r["line"], r["column"], r["message"]))
    return s


def _hint(name: str) -> str:
    return f"d.{name}" if name.isidentifier() else f'd["{name}"]'


def _headline(s: Summary) -> str:
    if not s.n_files:
        return "no files read"
    out = f"{s.n_files:,} file{'s' * (s.n_files != 1)}"
    if s.dumps:
        out += f" in {len(s.dumps):,} dump{'s' * (len(s.dumps) != 1)}"
    out += f", {s.parsed:,} parsed"
    return out


def _mode(s: Summary) -> str:
    if s.string_view is None:
        return ("text: zero-copy string_view views; d.<table> casts a table to large_string on first "
                "access (for pyarrow kernels); d.views.<table>, to_polars(), to_duckdb(), "
                "write_parquet() use the views")
    if s.string_view:
        return "text: zero-copy string_view (pyarrow's filter/take/sort/is_in do not take it: d.<table>.cast or read with string_view=None)"
    return "text: large_string copies (read with string_view=False)"


# ------------------------------------------------------------------------------ text


def text_repr(d: Shown) -> str:
    s = summarize(d)
    lines = [f"<hlodump.Dump: {_headline(s)}>"]
    if s.kinds:
        lines.append("files by kind: " + ", ".join(f"{_clean(k)} {n:,}" for k, n in s.kinds))
    if s.dumps:
        shown = ", ".join(f"{_short(_clean(k), 80)} ({n:,} files)" for k, n in s.dumps[:FIRST_DUMPS])
        more = f", … {len(s.dumps) - FIRST_DUMPS:,} more" if len(s.dumps) > FIRST_DUMPS else ""
        lines.append(f"dumps: {shown}{more}")
    head = ("table", "rows", "columns", "Arrow bytes", "get it")
    body = [(t.name, f"{t.rows:,}", str(t.columns),
             fmt_bytes(t.arrow_bytes) + (f" + {fmt_bytes(t.copy_bytes)} copy" if t.copy_bytes else ""),
             _hint(t.name)) for t in s.tables]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    for r in [head, *body]:
        lines.append("  " + "  ".join(c.ljust(w) if i in (0, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    if s.not_read:
        lines.append("not read (read_arrow(tables=...)): " + ", ".join(s.not_read))
    if s.text_bytes:
        lines.append(f"text referenced in the input buffers: {fmt_bytes(s.text_bytes)} (shared by every string_view column)")
    lines.append(_mode(s))
    lines.append("Polars: d.to_polars()[name] · DuckDB: d.to_duckdb().sql('select … from instructions') · Parquet: d.write_parquet(dir)")
    if s.n_unreadable:
        lines.append(f"unreadable files: {s.n_unreadable:,}")
        for p, e in s.unreadable:
            lines.append(f"  {_short(_clean(p))}: {_short(_clean(e))}")
        if s.n_unreadable > len(s.unreadable):
            lines.append(f"  … {s.n_unreadable - len(s.unreadable):,} more (d.files: error)")
    if s.n_errors:
        lines.append(f"errors: {s.n_errors:,}")
        for p, ln, col, msg in s.errors:
            lines.append(f"  {_short(_clean(p))}:{ln}:{col}: {_short(_clean(msg))}")
        if s.n_errors > len(s.errors):
            lines.append(f"  … {s.n_errors - len(s.errors):,} more (d.errors)")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ HTML


def _h(s: Any, n: int = 160) -> str:
    return html.escape(_short(_clean(s), n), quote=True)


_STYLE = (
    "<style>"
    ".hlodump-dump table{border-collapse:collapse;margin:4px 0}"
    ".hlodump-dump th,.hlodump-dump td{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}"
    ".hlodump-dump th:first-child,.hlodump-dump td:first-child,.hlodump-dump th:last-child,.hlodump-dump td.hint{text-align:left}"
    ".hlodump-dump tr.empty td{color:#999}"
    ".hlodump-dump ul{margin:2px 0 2px 1.2em;padding:0}"
    ".hlodump-dump .err{color:#b00}"
    "</style>"
)


def html_repr(d: Shown) -> str:
    s = summarize(d)
    out = [_STYLE, '<div class="hlodump-dump">', f"<p><b>hlodump.Dump</b>: {_h(_headline(s))}</p>"]
    if s.kinds:
        out.append("<p>files by kind: " + ", ".join(f"<code>{_h(k)}</code> {n:,}" for k, n in s.kinds) + "</p>")
    if s.dumps:
        items = "".join(f"<li><code>{_h(k)}</code> ({n:,} files)</li>" for k, n in s.dumps[:FIRST_DUMPS])
        if len(s.dumps) > FIRST_DUMPS:
            items += f"<li>… {len(s.dumps) - FIRST_DUMPS:,} more (<code>d.files</code>: <code>dump</code>)</li>"
        out.append(f"<p>dumps:</p><ul>{items}</ul>")
    out.append("<table><thead><tr><th>table</th><th>rows</th><th>columns</th><th>Arrow bytes</th>"
               "<th>large_string copy</th><th>get it</th></tr></thead><tbody>")
    for t in s.tables:
        cls = ' class="empty"' if t.rows == 0 else ""
        copy = fmt_bytes(t.copy_bytes) if t.copy_bytes else ""
        out.append(f"<tr{cls}><td>{_h(t.name)}</td><td>{t.rows:,}</td><td>{t.columns}</td>"
                   f"<td>{fmt_bytes(t.arrow_bytes)}</td><td>{copy}</td>"
                   f'<td class="hint"><code>{_h(_hint(t.name))}</code></td></tr>')
    out.append("</tbody></table>")
    if s.not_read:
        out.append("<p>not read (<code>read_arrow(tables=...)</code>): " + ", ".join(_h(n) for n in s.not_read) + "</p>")
    notes = []
    if s.text_bytes:
        notes.append(f"text referenced in the input buffers: {fmt_bytes(s.text_bytes)} (shared by every "
                     "<code>string_view</code> column; not in “Arrow bytes”)")
    notes.append(html.escape(_mode(s)))
    notes.append("Polars: <code>d.to_polars()[name]</code> · DuckDB: <code>d.to_duckdb().sql(&quot;select … "
                 "from instructions&quot;)</code> · Parquet: <code>d.write_parquet(dir)</code>")
    out.append("<p>" + "<br>".join(notes) + "</p>")
    if s.n_unreadable:
        items = "".join(f"<li><code>{_h(p)}</code>: {_h(e)}</li>" for p, e in s.unreadable)
        if s.n_unreadable > len(s.unreadable):
            items += f"<li>… {s.n_unreadable - len(s.unreadable):,} more (<code>d.files</code>: <code>error</code>)</li>"
        out.append(f'<p class="err">unreadable files: {s.n_unreadable:,}</p><ul>{items}</ul>')
    if s.n_errors:
        items = "".join(f"<li><code>{_h(p)}:{_h(ln)}:{_h(col)}</code>: {_h(msg)}</li>" for p, ln, col, msg in s.errors)
        if s.n_errors > len(s.errors):
            items += f"<li>… {s.n_errors - len(s.errors):,} more (<code>d.errors</code>)</li>"
        out.append(f'<p class="err">errors: {s.n_errors:,}</p><ul>{items}</ul>')
    out.append("</div>")
    return "".join(out)
