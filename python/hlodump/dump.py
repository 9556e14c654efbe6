"""``Dump``: the tables read from one file or one dump directory."""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, Optional, TypeVar

import pyarrow as pa

from .schema import SCHEMAS, empty_table, to_large_string_schema
from .exceptions import HlodumpError

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import polars

__all__ = ["Dump", "compact", "to_large_strings", "TableNotReadError"]

#: What ``compact`` takes and gives back.
TableOrColumn = TypeVar("TableOrColumn", pa.Table, pa.ChunkedArray)


def _give_back_copies(copies: dict[str, pa.Table]) -> None:
    """A Dump whose large_string copies were made is gone: pyarrow's allocator (mimalloc or
    jemalloc) keeps freed pages for reuse, so a notebook that re-reads a dump kept the last
    one's copies resident (290 MB after ``del`` of a 100 MB module's tables); ask it to give
    them back. The column buffers the core built are returned by the core's allocator itself
    (``src/alloc.rs``). Called as the Dump dies, before its attributes go: the copies are
    dropped here first (a table the user still holds stays alive)."""
    copies.clear()
    try:
        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 (at interpreter exit the pool may be gone: nothing to give)
        pass


class TableNotReadError(AttributeError, KeyError):
    """A table of the schema that this ``Dump`` does not hold (``read_arrow(tables=[...])``
    left it out). An ``AttributeError`` (``hasattr(d, "modules")`` is False) and, as before,
    a ``KeyError``."""

    def __str__(self) -> str:  # KeyError's would quote the message
        return str(self.args[0]) if self.args else ""


def to_large_strings(table: pa.Table) -> pa.Table:
    """``table`` with every text column (``string_view`` / ``string``, also inside lists and
    structs) cast to ``large_string``: what pyarrow's compute kernels take. The text bytes are
    copied; a table without text columns comes back as it is."""
    target = to_large_string_schema(table.schema)
    return table if target == table.schema else table.cast(target)


def compact(table: TableOrColumn) -> TableOrColumn:
    """``table`` (a ``pyarrow.Table`` or ``ChunkedArray``) with every ``string_view`` column
    holding only the bytes its rows reference (see ``Dump.compact``); one without such columns
    comes back as it is. What to pickle or send over IPC instead of a table of ``Dump.views``:
    pickling a bare table (or column) writes its buffers whole (hlodump does not change how
    pyarrow pickles), a ``Dump`` pickles compacted."""
    if not isinstance(table, (pa.Table, pa.ChunkedArray)):
        raise TypeError(f"hlodump.compact: table must be a pyarrow.Table or ChunkedArray, not {type(table).__name__}")
    if isinstance(table, pa.ChunkedArray):
        return compact(pa.table({"c": table})).column(0) if _has_view(table.type) else table
    if not any(_has_view(f.type) for f in table.schema):
        return table
    try:
        from ._core import compact as compact_views
    except ImportError:  # the reference alone: its tables own exactly their strings already
        return table
    return compact_views(table)


def _has_view(t: pa.DataType) -> bool:
    if t == pa.string_view():
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_view(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_view(t.field(i).type) for i in range(t.num_fields))
    return False


def _rearm_sigbus() -> None:
    """Put hlodump's SIGBUS guard back in front of handlers installed since (one sigaction)."""
    global _rearm
    if _rearm is None:
        try:
            from ._core import rearm_sigbus
        except ImportError:  # the pure-Python reference without a build: nothing is mapped
            rearm_sigbus = lambda: None  # noqa: E731
        _rearm = rearm_sigbus
    _rearm()


_rearm: Any = None


class Dump(Mapping[str, pa.Table]):
    """A read-only mapping of table name → ``pyarrow.Table``; tables are attributes too.

    Every table of ``hlodump.schema.SCHEMAS`` is present (with no rows if the input had none),
    unless ``read_arrow(..., tables=[...])`` asked for fewer (``files`` and ``errors`` are always
    there).

    Text columns are read as zero-copy ``string_view`` arrays into the mapped files, or, where
    a column has few distinct values (opcodes, shapes, kinds …; ``hlodump.schema``, type ``D``),
    as ``dictionary<int32, large_string>`` arrays (a key per row into the batch's distinct
    strings). What ``d.instructions`` / ``d["instructions"]`` gives depends on ``string_view``
    (of ``read_arrow``, or here):

    * ``None`` (``read_arrow``'s default): each table is cast to ``large_string`` text (views
      and dictionaries alike) the first time it is asked for, and kept — pyarrow's own
      kernels (``filter``, ``take``,
      ``sort_by``, ``pc.is_in``, ``pc.starts_with`` …, which pyarrow lacks for string_view)
      work, and only the tables you touch are copied. ``to_polars``, ``to_duckdb``,
      ``write_parquet``, ``compact``, pickling and ``d.views`` use the zero-copy views.
    * ``True``: the tables are the ``string_view`` tables themselves (what ``d.views`` gives).
    * ``False``: the tables were cast to ``large_string`` when read (``read_arrow``) and no
      views are kept.
    """

    def __init__(self, tables: Mapping[str, pa.Table], string_view: Optional[bool] = True) -> None:
        if string_view not in (None, True, False):
            raise TypeError(f"string_view must be None, True or False (got {string_view!r})")
        self._tables: dict[str, pa.Table] = dict(tables)
        self._string_view = string_view
        self._cast: dict[str, pa.Table] = {}
        self._lock = threading.Lock()
        self._views: Optional[Dump] = None

    def _get(self, name: str) -> pa.Table:
        t = self._tables[name]
        if self._string_view is not None:
            return t
        c = self._cast.get(name)
        if c is None:
            with self._lock:  # two threads asking at once make one copy
                c = self._cast.get(name)
                if c is None:
                    if not self._cast:
                        weakref.finalize(self, _give_back_copies, self._cast)
                    c = self._cast[name] = to_large_strings(t)
        return c

    # -- Mapping ---------------------------------------------------------------------------
    def __getitem__(self, name: str) -> pa.Table:
        _rearm_sigbus()
        return self._get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __contains__(self, name: object) -> bool:  # without casting (Mapping's would)
        return name in self._tables

    def __getattr__(self, name: str) -> pa.Table:
        tables = self.__dict__.get("_tables")
        if tables is not None and name in tables:
            _rearm_sigbus()
            return self._get(name)
        if name in SCHEMAS:  # a table that was not asked for: say so
            raise TableNotReadError(f"table {name!r} was not read (see read_arrow(tables=...))")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ``values`` is a table name (the Used-values blocks) and a Mapping method: both work
    # (``d.values()`` is Mapping's; ``d.values.<attr>`` the table's; ``_ValuesMethod``).
    @property
    def values(self) -> "_ValuesMethod":  # type: ignore[override]
        """``Mapping.values()`` when called; otherwise the ``values`` table (``d.values.num_rows``,
        ``d.values["instruction"]``, Arrow consumers), as ``d["values"]``, with no warning."""
        return _ValuesMethod(self)

    def tables(self) -> list[pa.Table]:
        """The tables, in table-name order (``list(d.values())``)."""
        return [self[name] for name in self._tables]

    @property
    def views(self) -> "Dump":
        """The same tables with their text as zero-copy ``string_view`` arrays into the files
        read (a ``Dump`` whose tables are the views themselves; nothing is copied). For
        consumers that take ``string_view`` (Polars, DuckDB, Parquet, Arrow C stream / PyCapsule
        consumers, ``pa.ipc``); pyarrow's filter/take/sort/is_in kernels do not. A dump read
        with ``string_view=False`` has no views: ``views`` is the dump itself."""
        if self._string_view is not None:
            return self
        if self._views is None:
            self._views = Dump(self._tables, True)
        return self._views

    @property
    def string_view(self) -> Optional[bool]:
        """``None``: tables cast to large_string on first access (views kept for hand-over);
        ``True``: the tables are string_view; ``False``: the tables were cast when read."""
        return self._string_view

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._tables))

    def __repr__(self) -> str:
        from ._repr import text_repr

        return text_repr(self)

    def _repr_html_(self) -> str:
        from ._repr import html_repr

        return html_repr(self)

    # -- hand-over -------------------------------------------------------------------------
    def compact(self) -> "Dump":
        """The same tables, each text column holding only the bytes its rows reference.

        Text columns are zero-copy views into the files read: every ``string_view`` column
        of a table carries the whole mapped file (or shared buffer of small files) it points
        into. That costs nothing in memory, but everything that *serialises* a table — pickle,
        ``multiprocessing``, Ray, Arrow IPC, Flight — writes those buffers whole, once per
        column. ``compact()`` copies the referenced bytes of each such column into a buffer
        of its own (only where its buffers are at least twice what it references), so a
        table sent elsewhere costs about what its rows hold. Pickling a ``Dump`` compacts by
        itself; a bare table does not (pyarrow pickles it): pickle
        ``d.compact().views["instructions"]`` or ``hlodump.compact(t)`` rather than ``t``.
        """
        return Dump({name: compact(t) for name, t in self._tables.items()}, self._string_view)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (``multiprocessing``, cloudpickle, Ray) the compacted tables: a view column
        would otherwise write the whole files it points into (``compact``)."""
        return (Dump, (self.compact()._tables, self._string_view))

    def to_polars(self) -> dict[str, "polars.DataFrame"]:
        """Every table as a ``polars.DataFrame``. Polars takes the ``string_view`` text as it is
        (its own string layout): nothing is copied. Dictionary-encoded columns become
        ``Categorical`` (``pl.col(c).cast(pl.String)`` for plain strings). (``pl.from_arrow(d.instructions)`` copies
        twice — the large_string cast, then Polars' conversion —, ``pl.from_arrow(
        d.views.instructions)`` not at all.)"""
        from ._extras import require

        pl = require("polars", "Dump.to_polars()")

        return {name: pl.from_arrow(t) for name, t in self._tables.items()}  # type: ignore[misc]

    def to_duckdb(self, con: "duckdb.DuckDBPyConnection | None" = None) -> "duckdb.DuckDBPyConnection":
        """Register every table as a DuckDB view named after it; return the connection. DuckDB
        scans the zero-copy ``string_view`` tables (``d.views``)."""
        from ._extras import require

        duckdb = require("duckdb", "Dump.to_duckdb()")

        con = duckdb.connect() if con is None else con
        for name, t in self._tables.items():
            con.register(name, t)
        return con

    def write_parquet(self, out_dir: str | os.PathLike[str], compression: str = "zstd",
                      storage_options: "Mapping[str, Any] | None" = None, overwrite: bool = False) -> list[str]:
        """Write one Parquet file per table into ``out_dir`` (created); return the paths. The
        writer encodes the zero-copy ``string_view`` tables directly (no large_string copy).
        ``out_dir`` may be an object-store or fsspec URL (``s3://bucket/prefix`` …; see
        ``hlodump.io.stores``), written with ``storage_options``.

        Locally the write is all or nothing: every table is first written into a fresh hidden
        directory inside ``out_dir``, then renamed into place, so a failure (disk full, a kill)
        leaves no ``<table>.parquet`` half written, and none from an earlier run mixed with new
        ones. An existing ``<table>.parquet`` (a file or a symlink: never followed) raises
        ``FileExistsError`` unless ``overwrite=True``, which replaces the entry itself."""
        import pyarrow.parquet as pq

        from .io import stores

        if stores.is_url(os.fspath(out_dir)):
            paths = []
            for name, t in self._tables.items():
                sink = pa.BufferOutputStream()
                pq.write_table(t, sink, compression=compression)
                url = stores.join(os.fspath(out_dir), f"{name}.parquet")
                stores.put_bytes(url, sink.getvalue(), storage_options)
                paths.append(url)
            return paths
        return _write_parquet_atomic(self._tables, os.fspath(out_dir), compression, overwrite)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:  # pragma: no cover
        raise TypeError("a Dump holds several tables: pick one, e.g. dump.views['allocations'] "
                        "(zero-copy string_view) or dump['allocations']")

    @staticmethod
    def _complete(
        tables: Mapping[str, pa.Table],
        wanted: "list[str] | None",
        string_view: Optional[bool],
        columns: "Mapping[str, list[str]] | None" = None,
    ) -> "Dump":
        """Fill in empty tables with their (projected) schema, in the canonical table order."""
        names = [n for n in SCHEMAS if wanted is None or n in wanted or n in ("files", "errors", "notes")]
        out = {}
        for n in names:
            t = tables.get(n)
            if t is None:
                t = empty_table(n, string_view is not False)
                if columns and n in columns:
                    t = t.select([c for c in t.schema.names if c in columns[n]])
            out[n] = t
        return Dump(out, string_view)


class _ValuesMethod:
    """``Dump.values``: ``Mapping.values()`` when called, the ``values`` table otherwise.

    ``values`` is a table name (the Used-values blocks) and a Mapping method. Both work, with no
    warning (issue 51 — the DeprecationWarning of issue 27 fired on every ``d.values.num_rows``
    and taught nothing, as every other table is ``d.<name>``): ``d.values()`` is
    ``Mapping.values()``; ``d.values.num_rows``, ``d.values.column("instruction")``,
    ``d.values["instruction"]``, ``len(d.values)`` and any Arrow consumer
    (``__arrow_c_stream__``: ``pl.DataFrame(d.values)``, DuckDB) reach the table. Where a real
    ``pyarrow.Table`` is needed (``isinstance``, pyarrow's compute kernels), ``d["values"]`` is it."""

    __slots__ = ("_dump",)

    def __init__(self, dump: Dump) -> None:
        self._dump = dump

    def __call__(self) -> ValuesView[pa.Table]:
        return ValuesView(self._dump)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # IPython's and inspect's probes (_repr_html_, __wrapped__ …): not the table's
            raise AttributeError(name)
        return getattr(self._dump["values"], name)

    def __getitem__(self, key: Any) -> Any:
        return self._dump["values"][key]

    def __len__(self) -> int:
        return self._dump["values"].num_rows

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._dump["values"].__arrow_c_stream__(requested_schema)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(type(self))) | {n for n in dir(pa.Table) if not n.startswith("_")})

    def __repr__(self) -> str:
        return (f"<Dump.values: Mapping.values() when called, else the values table "
                f"({self._dump['values'].num_rows:,} rows; d[\"values\"] is the pyarrow.Table)>")


def _write_parquet_atomic(tables: Mapping[str, pa.Table], out_dir: str, compression: str, overwrite: bool) -> list[str]:
    """``Dump.write_parquet`` to a local directory, all or nothing: under an exclusive lock of
    ``out_dir`` (``flock``: a second writer fails at once, a killed one frees it), every table
    is written into a fresh ``out_dir/.hlodump-*`` folder, then swapped in; a failure while
    swapping puts every old file back. Staging folders a killed writer left are removed (with
    a warning)."""
    import shutil
    import tempfile

    import pyarrow.parquet as pq

    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        fcntl = None  # type: ignore[assignment]
    os.makedirs(out_dir, exist_ok=True)
    lock = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WriterBusyError(11, "another hlodump convert (or write_parquet) is writing into this directory; "
                                      "nothing written", out_dir) from None
        _remove_stale_stages(out_dir)
        final = {name: os.path.join(out_dir, f"{name}.parquet") for name in tables}
        existing = [p for p in final.values() if os.path.lexists(p)]
        if existing and not overwrite:
            raise FileExistsError(17, f"{len(existing)} table file(s) exist already, e.g. {existing[0]}: "
                                      "nothing written (overwrite=True, or hlodump convert --overwrite, "
                                      "replaces them)", existing[0])
        for p in existing:  # replaced: files and symlinks (never followed); anything else is refused
            if os.path.isdir(p) and not os.path.islink(p):
                raise IsADirectoryError(21, "is a directory, not a table file: not replaced; nothing written", p)
        stage = tempfile.mkdtemp(prefix=".hlodump-", dir=out_dir)  # 0700, a name nobody else has
        keep = False
        try:
            for name, t in tables.items():
                pq.write_table(t, os.path.join(stage, f"{name}.parquet"), compression=compression)
            _swap_in(stage, final)
        except _UndoFailed:
            keep = True  # old files still in the stage: the next writer puts them back
            raise
        finally:
            if not keep:
                shutil.rmtree(stage, ignore_errors=True)
    finally:
        os.close(lock)  # releases the lock
    return list(final.values())


class WriterBusyError(HlodumpError, OSError):
    """Another writer holds the output directory (``Dump.write_parquet``, ``hlodump convert``)."""


def _swap_in(stage: str, final: Mapping[str, str]) -> None:
    """Move ``stage/<table>.parquet`` over each ``final`` path, all or nothing: the old entries
    are first moved into ``stage/old/`` (renames in one directory: atomic); a failure moves
    the new ones out and every old one back. ``stage/swap.json`` lists what existed before, so
    a writer killed in the middle is undone by the next one (``_remove_stale_stages``)."""
    import json

    old_dir = os.path.join(stage, "old")
    os.mkdir(old_dir)
    had = [os.path.basename(p) for p in final.values() if os.path.lexists(p)]
    with open(os.path.join(stage, "swap.json"), "w", encoding="utf-8") as f:
        json.dump({"tables": [os.path.basename(p) for p in final.values()], "had": had}, f)
    moved_old: list[tuple[str, str]] = []  # (final, where it went)
    placed: list[str] = []
    try:
        for name, p in final.items():
            if os.path.lexists(p):
                aside = os.path.join(old_dir, os.path.basename(p))
                os.rename(p, aside)
                moved_old.append((p, aside))
        for name, p in final.items():
            os.rename(os.path.join(stage, os.path.basename(p)), p)
            placed.append(p)
    except BaseException as e:
        lost = []
        for p in placed:
            try:
                os.unlink(p)
            except OSError:
                pass
        for p, aside in moved_old:
            try:
                os.rename(aside, p)
            except OSError:
                lost.append(p)
        if lost:
            raise _UndoFailed(f"{e}; {len(lost)} old table file(s) could not be put back yet and stay in {stage} "
                              "(the next convert or write_parquet into this directory puts them back)") from e
        raise


class _UndoFailed(HlodumpError, OSError):
    """A failed swap whose undo failed too: the old files stay in the stage (see ``_swap_in``)."""


def _remove_stale_stages(out_dir: str) -> None:
    """``.hlodump-*`` staging folders in ``out_dir`` (the lock is ours: no writer is alive
    that made them) are what a killed writer left: a swap it had begun is undone (the table
    files it had moved aside are put back, the new ones it had placed removed), then the
    folders are removed, with a warning."""
    import json
    import shutil

    stale = sorted(e.path for e in os.scandir(out_dir)
                   if e.name.startswith(".hlodump-") and e.is_dir(follow_symlinks=False))
    restored = 0
    for stage in stale:
        try:
            with open(os.path.join(stage, "swap.json"), encoding="utf-8") as f:
                swap = json.load(f)
        except (OSError, ValueError):
            swap = None
        if isinstance(swap, dict):
            had = set(swap.get("had") or [])
            for name in swap.get("tables") or []:
                name = os.path.basename(str(name))
                target = os.path.join(out_dir, name)
                aside = os.path.join(stage, "old", name)
                try:
                    if name in had and os.path.lexists(aside):
                        os.replace(aside, target)  # the old file back (over a new one placed)
                        restored += 1
                    elif name not in had and not os.path.lexists(os.path.join(stage, name)) \
                            and os.path.lexists(target):
                        os.unlink(target)  # a new file placed where there was none
                except OSError:
                    pass
        shutil.rmtree(stage, ignore_errors=True)
    if stale:
        warnings.warn(f"{out_dir}: removed {len(stale)} staging folder(s) an interrupted write left "
                      f"({', '.join(os.path.basename(p) for p in stale[:3])})"
                      + (f"; put back {restored} table file(s) it had moved aside" if restored else ""),
                      stacklevel=4)
