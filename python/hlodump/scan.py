"""``hlodump.scan``: one table as a stream of record batches, in memory that does not grow with
the input.

A ``Scan`` reads nothing until it is consumed; each consumption (``to_reader``, an Arrow C
stream, a Polars or DuckDB query) starts a fresh read, so one ``Scan`` can be read many times.
Batches come out in file order while later files parse; at most ``batch_size`` rows each.
How the core streams (and why it stays bounded): ``src/stream.rs``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Optional

import pyarrow as pa

from ._typing import OnError, Source, StorageOptions, check_on_error, check_read_options, renamed_parameter
from .io.paths import MAX_FILES
from .io.plan import MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO, Bound, Input, load, plan_inputs
from .schema import SCHEMAS, to_large_string_schema

__all__ = ["scan", "Scan", "ScanWarning"]


class ScanWarning(UserWarning):
    """A stream with ``on_error="collect"`` met malformed input (see ``Scan.errors``)."""


@renamed_parameter("path", "source")
def scan(
    source: Source,
    table: str,
    *,
    columns: Optional[Sequence[str]] = None,
    batch_size: int = 65536,
    on_error: OnError = "raise",
    string_view: bool = True,
    threads: Optional[int] = None,
    mmap: Optional[bool] = None,
    follow_links: bool = False,
    max_files: int = MAX_FILES,
    storage_options: Optional[StorageOptions] = None,
    max_decompressed_ratio: float = MAX_DECOMPRESSED_RATIO,
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
    strict: bool = False,
) -> "Scan":
    """Stream one table of a dump (see ``read_arrow`` for ``source`` and the options).

    Args:
        source: what ``read_arrow`` takes (a dump file, directory, glob, URL, buffer, or a
            list of these).
        table: the table to stream (``hlodump.schema.SCHEMAS`` has them all).
        columns: only these columns, in schema order (the others are never built where that
            saves work). Default: all.
        batch_size: at most this many rows per batch.
        on_error: ``"raise"``: the stream raises ``hlodump.ParseError`` (path, line, column) at
            the first malformed line, after the batches of the files before it. ``"collect"``:
            the stream goes on; the problems are ``Scan.errors`` once it ends, and a
            ``ScanWarning`` says how many there were.
        strict: ``True``: what a newer XLA prints (``read_arrow``'s ``notes``) is an error too. A
            stream returns no ``notes`` table: without ``strict`` such text stays raw in its row.
        string_view: text columns as zero-copy ``string_view`` (default) or ``large_string``.
            (``read_arrow``'s default, None, casts a table the first time it is asked for: a
            scan's batches go to consumers that take views, Polars, DuckDB, Arrow C stream
            readers, and are not kept, so there is nothing to cast lazily.)
        threads: as for ``read_arrow``.
        mmap: as for ``read_arrow``.
        follow_links: as for ``read_arrow``.
        max_files: as for ``read_arrow``.
        storage_options: as for ``read_arrow``.
        max_decompressed_ratio: as for ``read_arrow``.
        max_decompressed_bytes: as for ``read_arrow``.

    Returns:
        a ``Scan`` (nothing is read until it is consumed).
    """
    from .reader import check_threads

    if not isinstance(table, str):
        raise TypeError(f"hlodump.scan: table must be a table name (str), not {type(table).__name__}")
    if table not in SCHEMAS:
        raise ValueError(f"unknown table {table!r} (tables: {', '.join(SCHEMAS)})")
    check_on_error(on_error)
    check_read_options("hlodump.scan", string_view=string_view, mmap=mmap, follow_links=follow_links,
                       strict=strict, max_files=max_files, storage_options=storage_options)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer (got {batch_size!r})")
    batch_size = min(batch_size, 2**62)  # "no limit": the core takes a 64-bit size (2**63 overflowed)
    names = SCHEMAS[table].names
    if columns is not None:
        if isinstance(columns, str):
            raise TypeError("columns must be a list of column names, not a string")
        for c in columns:
            if c not in names:
                raise ValueError(f"table {table!r} has no column {c!r} (columns: {', '.join(names)})")
        columns = [c for c in names if c in set(columns)]
    return Scan(
        source,
        table,
        columns=None if columns is None else list(columns),
        batch_size=batch_size,
        on_error=on_error,
        string_view=string_view,
        storage_options=storage_options,
        threads=check_threads(threads),
        mmap=mmap,
        follow_links=follow_links,
        max_files=max_files,
        bound=Bound(max_decompressed_ratio, max_decompressed_bytes),
        strict=strict,
    )


class Scan:
    """A lazily read table of a dump: ``schema``, Arrow C stream, ``to_reader``, ``to_polars``.

    DuckDB reads it directly (``duckdb.sql("select … from s")`` with ``s`` a ``Scan``), as does
    anything that takes an Arrow C stream (``pyarrow.table(s)``, ``polars.from_arrow``…).
    """

    def __init__(
        self,
        source: Source,
        table: str,
        *,
        columns: Optional[list[str]],
        batch_size: int,
        on_error: OnError,
        string_view: bool,
        storage_options: Optional[StorageOptions],
        threads: int,
        mmap: Optional[bool],
        follow_links: bool,
        max_files: int,
        bound: Optional[Bound] = None,
        strict: bool = False,
    ) -> None:
        self.source = source
        self.table = table
        self.columns = columns
        self.batch_size = batch_size
        self.on_error = on_error
        self.string_view = string_view
        self.storage_options = storage_options
        self._threads = threads
        self._mmap = mmap
        self._follow_links = follow_links
        self._max_files = max_files
        self._bound = bound or Bound()
        #: ``strict=True``: what a newer XLA prints is an error (a stream has no ``notes``
        #: table: without it, that text stays raw in its row, unreported; ``read_arrow`` says it).
        self._strict = strict
        #: ``errors`` rows of the last stream that ended (``on_error="collect"``).
        self.errors: pa.Table = (
            SCHEMAS["errors"].empty_table() if string_view else to_large_string_schema(SCHEMAS["errors"]).empty_table()
        )

    def __repr__(self) -> str:
        cols = "all columns" if self.columns is None else ", ".join(self.columns)
        return f"<hlodump.Scan {self.table} ({cols}) of {self.source!r}>"

    @property
    def schema(self) -> pa.Schema:
        """The schema of the batches (projected; nothing is read)."""
        s = SCHEMAS[self.table]
        if self.columns is not None:
            s = pa.schema([s.field(c) for c in self.columns])
        return s if self.string_view else to_large_string_schema(s)

    def _inputs(self) -> tuple[list[Input], Optional[list[Any]]]:
        """(inputs, buffers) for the core (``plan_inputs``; remote objects are fetched whole
        before the stream starts)."""
        plan = plan_inputs(self.source, follow_links=self._follow_links, max_files=self._max_files,
                           storage_options=self.storage_options)
        plan.bound = Bound(self._bound.ratio, self._bound.total)  # a fresh budget per stream
        buffers = load(plan, progress=False, on_error=self.on_error)
        return plan.inputs, buffers

    def batches(self, columns: Optional[Sequence[str]] = None) -> Iterator[pa.RecordBatch]:
        """A fresh read: the batches, in file order (``columns`` narrows the projection)."""
        from ._core import scan as scan_files

        cols = self.columns if columns is None else [c for c in self.schema.names if c in set(columns)]
        inputs, buffers = self._inputs()
        stream = scan_files(inputs, self.table, columns=cols, batch_size=self.batch_size, on_error=self.on_error,
                            threads=self._threads, mmap=self._mmap, buffers=buffers, strict=self._strict)
        target = None if self.string_view else to_large_string_schema(stream.schema)
        try:
            for b in stream:
                if target is not None:
                    b = b.cast(target)
                # a format hands out a batch between lines: it may run over by a line's rows
                for at in range(0, b.num_rows, self.batch_size):
                    yield b.slice(at, self.batch_size) if b.num_rows > self.batch_size else b
        finally:
            stream.close()
        errors = stream.errors()
        if target is not None:
            errors = errors.cast(to_large_string_schema(errors.schema))
        self.errors = errors
        if errors.num_rows:
            files = len(set(errors.column("file_id").to_pylist()))
            warnings.warn(
                f"hlodump.scan: {errors.num_rows} problem(s) in {files} file(s) were skipped; "
                "see Scan.errors",
                ScanWarning,
                stacklevel=2,
            )

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self.batches()

    def to_reader(self) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` over a fresh read."""
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream interface: a fresh read per call."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_table(self) -> pa.Table:
        """Everything, as one ``pyarrow.Table``."""
        return self.to_reader().read_all()

    def to_polars(self) -> Any:
        """A ``polars.LazyFrame`` (Polars IO plugin): projection, ``n_rows`` (stops the read
        early) and predicates (applied to each batch) are pushed into the scan."""
        from ._extras import require

        pl = require("polars", "Scan.to_polars()")
        from polars.io.plugins import register_io_source

        def source(
            with_columns: Optional[list[str]], predicate: Any, n_rows: Optional[int], batch_size: Optional[int]
        ) -> Iterator[Any]:
            cols = None if with_columns is None else list(with_columns)
            if predicate is not None and cols is not None:
                # the predicate's columns must be read too; projected away below
                need = set(predicate.meta.root_names())
                read_cols = [c for c in self.schema.names if c in set(cols) | need]
            else:
                read_cols = cols
            left = n_rows
            gen = self.batches(read_cols)
            try:
                for b in gen:
                    df = pl.from_arrow(b)
                    assert isinstance(df, pl.DataFrame)
                    if predicate is not None:
                        df = df.filter(predicate)
                    if cols is not None:
                        df = df.select(cols)
                    if left is not None:
                        df = df.head(left)
                        left -= df.height
                    yield df
                    if left is not None and left <= 0:
                        return
            finally:
                gen.close()

        schema = pl.from_arrow(self.schema.empty_table()).schema  # type: ignore[union-attr]
        return register_io_source(source, schema=schema, explain_name="hlodump.scan", explain_detail=self.table)

