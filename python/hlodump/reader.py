"""``read_arrow``: the fast path through the Rust core."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import pyarrow as pa

from .dump import Dump
from .exceptions import ParseError
from ._typing import OnError, Source, StorageOptions, check_on_error, check_read_options, renamed_parameter
from .io.paths import MAX_FILES
from .io.plan import MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO, Bound, Input, Plan, load, plan_inputs
from .schema import SCHEMAS, to_large_string_schema

__all__ = ["read_arrow"]


@renamed_parameter("path", "source")
def read_arrow(
    source: Source,
    tables: Optional[Sequence[str]] = None,
    *,
    on_error: OnError = "raise",
    string_view: Optional[bool] = None,
    threads: Optional[int] = None,
    mmap: Optional[bool] = None,
    progress: Optional[bool] = None,
    follow_links: bool = False,
    max_files: int = MAX_FILES,
    columns: Optional[Mapping[str, Sequence[str]]] = None,
    storage_options: Optional[StorageOptions] = None,
    strict: bool = False,
    max_decompressed_ratio: float = MAX_DECOMPRESSED_RATIO,
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
) -> Dump:
    """Parse XLA dump files into Arrow tables.

    Args:
        source: (was ``path``, still accepted with a ``DeprecationWarning``) a dump file, a dump directory (read recursively), a glob, or a list of these;
            also object-store URLs (``s3://bucket/prefix``, ``gs://…``, ``az://…``,
            ``memory://…``, any fsspec URL, ``file://…``; a prefix is listed recursively like
            a directory) and in-memory files: ``{name: bytes_like}`` or a list of
            ``(name, bytes_like)`` pairs (bytes, memoryview, bytearray, numpy, obstore
            ``Bytes``, ``pyarrow.Buffer``: the tables point into them, no copy; do not change
            a mutable buffer while its tables are in use). See ``hlodump.io.stores``.
        tables: only these tables (``files`` and ``errors`` always come along). Default: all.
            Work is skipped too: a file is parsed only if its format can produce a requested
            table (HLO text: modules, computations, instructions, stack_frames, custom_calls;
            buffer assignment, its values, live ranges, memory-usage reports: allocations,
            assignments, values, schedule, live_ranges, peak, peak_breakdown, memory_report,
            totals), and of the others only the first line is read (to tell their content).
            ``errors`` then covers only the files that were parsed, and ``files.parsed`` is
            false for the skipped ones; the rest of ``files`` is as in a full read. Naming
            ``errors`` itself parses every format; ``tables=[]`` or ``["files"]`` parses none.
        on_error: ``"raise"`` (default) raises ``hlodump.ParseError`` at the first malformed
            line; ``"collect"`` keeps going and reports each problem as a row of ``errors``.
            Text a newer XLA prints inside a line we know (an allocation flag, an attribute …)
            is not malformed: its row is kept from what is known, the text kept raw, and one
            row of ``notes`` says so (per file, kind and token).
        strict: ``True`` turns every ``notes`` row into an error (raised, or an ``errors``
            row with ``on_error="collect"``): for those who want to know that a dump holds
            anything this version does not understand.
        string_view: how text columns reach you. Text is always read as zero-copy
            ``string_view`` arrays into the mapped files, but pyarrow (26) has no string_view
            kernels for ``filter``, ``take``, ``sort_by``/``sort_indices``, ``is_in``,
            ``equal``, ``starts_with``, ``utf8_length``, ``match_substring`` … (nor joins on
            such keys).

            * ``None`` (default): ``d.instructions`` / ``d["instructions"]`` is a
              ``pyarrow.Table`` with ``large_string`` text, cast from the views the first time
              that table is asked for and kept (tables never asked for cost nothing), so those
              kernels work. ``d.views.<table>`` is the view table; ``to_polars``,
              ``to_duckdb``, ``write_parquet``, ``compact``, pickling, ``hlodump.analysis``
              and the CLI use the views, no copy. (``pl.from_arrow(d.instructions)`` copies
              twice; use ``d.to_polars()`` or ``pl.from_arrow(d.views.instructions)``.)
            * ``True``: the tables are the ``string_view`` views themselves.
            * ``False``: every table cast to ``large_string`` while reading.

            Measured (``benches/string_view_options.py``; anonymous memory, mapped input not
            counted): a 216 MB HLO file reads into 474 MB of views in 1.2 s; asking for
            ``d.instructions`` copies 288 MB of text (997 MB in all, cast 1.7 s); asking for
            every table 1027 MB; ``string_view=False`` 1025 MB and 3.2 s (it keeps the views
            alive too). A 222 MB buffer assignment: 210 MB of views; ``d.assignments`` +36 MB;
            every table 501 MB; ``string_view=False`` 499 MB. ``tests/data/corpus`` (11 MB):
            35 / 80 (``d.instructions``) / 89 / 87 MB. ``to_polars()`` of the 216 MB HLO dump
            adds 45 MB from the views and 425 MB from large_string tables.
        threads: worker threads, 1 … ``hlodump.MAX_THREADS`` (default: all cores). Each read
            starts its own threads and ends them (a forked child reads like its parent).
        mmap: ``None`` (default) memory-maps files of 4 MiB and more (zero-copy; works for
            dumps larger than RAM) and reads smaller ones into shared buffers; ``True`` maps
            every file; ``False`` reads every file into memory, so the tables hold a copy that
            is independent of the files. A mapped file that another process truncates while
            its tables are in use never crashes the process: the lost bytes read as zeros and
            a warning is printed once (``hlodump.mapped_pages_lost()`` counts such pages).
        progress: show a progress bar on stderr (default: for directories, when it is a TTY).
        follow_links: follow symlinks that lead out of the directory read (default: such a
            link is a ``files`` row with an ``error``). Every (device, inode) is read once.
        max_files: stop walking (``hlodump.io.paths.WalkLimitError``) after this many entries.
        columns: ``{table: [column, …]}``: those tables hold only the columns named (in schema
            order); their other text columns are never built (numbers and flags are built and
            dropped: they cost little). Tables not named keep every column. With ``tables``
            unset, naming a table here does not restrict which tables are read.
        storage_options: options of the object store or fsspec filesystem of URL inputs
            (credentials, endpoint …; default: the usual environment variables).
        max_decompressed_ratio: how far a compressed file (``.gz``, ``.bz2``, ``.xz``,
            ``.zst``) or a compressed tar archive may expand: at most this many times its
            compressed size (default 100; never less than 8 MiB). Decompression is streamed
            and stops at the bound (never more in memory) with
            ``hlodump.exceptions.DecompressionLimitError`` naming the file (a ``files.error``
            row for a file found in a directory). XLA's text compresses 5–20×.
        max_decompressed_bytes: all compressed files and archives of the read together
            decompress to at most this many bytes (default 4 GiB; same error).

    Ctrl-C stops a read at any point (``KeyboardInterrupt``, within ~10 ms plus the time a
    worker needs to reach its next check: a few thousand lines).

    Returns:
        a ``Dump``: a mapping of table name → ``pyarrow.Table`` (see ``string_view``);
        ``repr(d)`` / Jupyter show the files read, every table's size and the first errors.

    Raises:
        FileNotFoundError / PermissionError: a named file cannot be read (a missing object,
            prefix or bucket too: the message names the URL).
        hlodump.io.stores.StoreError: an object store cannot be reached or used (network,
            credentials, configuration).
        hlodump.ParseError: malformed input (with ``on_error="raise"``).
        MemoryError: the tables do not fit in memory (nothing is returned; the process goes on).
        ValueError: bad arguments (``threads`` out of range …).
    """
    check_on_error(on_error)
    check_read_options("hlodump.read_arrow", string_view=string_view, mmap=mmap, progress=progress,
                       follow_links=follow_links, strict=strict, max_files=max_files,
                       storage_options=storage_options)
    tables = _check_tables(tables)
    projection = check_columns(columns)
    nthreads = check_threads(threads)
    bound = Bound(max_decompressed_ratio, max_decompressed_bytes)
    plan = plan_inputs(source, follow_links=follow_links, max_files=max_files, storage_options=storage_options)
    plan.bound = bound
    return read_plan(plan, tables, on_error=on_error, string_view=string_view, threads=nthreads, mmap=mmap,
                     progress=progress, projection=projection, strict=strict)


def _check_tables(tables: Optional[Sequence[str]]) -> Optional[list[str]]:
    if tables is None:
        return None
    bad = isinstance(tables, (str, bytes, Mapping)) or not hasattr(tables, "__iter__")
    tables = None if bad else list(tables)
    if tables is None or not all(isinstance(t, str) for t in tables):
        raise TypeError("hlodump.read_arrow: tables must be a list of table names (or None)")
    unknown = set(tables) - set(SCHEMAS)
    if unknown:
        raise ValueError(f"unknown tables: {sorted(unknown)}")
    return tables


def read_plan(plan: Plan, tables: Optional[list[str]], *, on_error: OnError = "raise",
              string_view: Optional[bool] = None, threads: int = 0, mmap: Optional[bool] = None,
              progress: Optional[bool] = None, projection: Optional[dict[str, list[str]]] = None,
              strict: bool = False) -> Dump:
    """Read what ``plan`` lists: fetch its remote objects, then parse (``read_arrow`` after
    planning its source; ``hlodump.ray`` per task)."""
    from ._core import read as read_files

    buffers = load(plan, progress=progress if len(plan.inputs) > 1 or progress else False, on_error=on_error)
    inputs = plan.inputs
    bar = _progress_bar(inputs, progress, plan.sizes() if buffers is not None else None)
    try:
        raw = read_files(
            inputs, tables=tables, on_error=on_error, threads=threads, mmap=mmap,
            progress=bar.update if bar is not None else None, columns=projection, buffers=buffers,
            strict=bool(strict),
        )
    except ParseError as e:
        if len(inputs) > 1 and hasattr(e, "add_note"):  # a directory / several files: say how to go on
            e.add_note('to read the rest and get every problem as a row of `errors`: '
                       'read_arrow(..., on_error="collect") (command line: --keep-going)')
        raise
    finally:
        if bar is not None:
            bar.close()
    raw = dict(raw)
    raw["notes"] = first_notes(raw["notes"])
    out = {}
    for name, t in raw.items():
        if string_view is False:
            t = t.cast(to_large_string_schema(t.schema))
        out[name] = t
    return Dump._complete(out, tables, string_view, projection)


def check_columns(columns: Optional[Mapping[str, Sequence[str]]]) -> Optional[dict[str, list[str]]]:
    """``columns=`` checked against the schemas (``ValueError`` naming what exists)."""
    if columns is None:
        return None
    if not isinstance(columns, Mapping):
        raise TypeError("columns must be a mapping {table: [column, ...]}")
    out: dict[str, list[str]] = {}
    for table, cols in columns.items():
        if table not in SCHEMAS:
            raise ValueError(f"unknown table {table!r} in columns (tables: {', '.join(SCHEMAS)})")
        if isinstance(cols, str):
            raise TypeError(f"columns[{table!r}] must be a list of column names, not a string")
        names = SCHEMAS[table].names
        for c in cols:
            if c not in names:
                raise ValueError(f"table {table!r} has no column {c!r} (columns: {', '.join(names)})")
        out[table] = list(cols)
    return out


def _max_threads() -> int:
    try:
        from ._core import MAX_THREADS as n
    except ImportError:  # pragma: no cover - the reference alone
        return 1024
    return int(n)


#: Most worker threads ``read_arrow(threads=...)`` accepts (``hlodump.MAX_THREADS``).
MAX_THREADS = _max_threads()


def check_threads(threads: Any) -> int:
    """``threads=`` as the core takes it (0: all cores), or ``ValueError`` / ``TypeError``."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int or None (got {type(threads).__name__})")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be between 1 and {MAX_THREADS}, or None for all cores (got {threads})")
    return threads


def _progress_bar(inputs: list[Input], progress: Optional[bool], sizes: Optional[list[int]] = None) -> Any:
    if progress is False or (progress is None and len(inputs) < 2):
        return None
    from .io.progress import ProgressBar

    total = 0
    if sizes is not None:
        total = sum(sizes)
    else:
        for i in inputs:
            if i.error is not None:
                continue
            try:
                total += os.stat(i.path).st_size
            except OSError:
                pass
    bar = ProgressBar(len(inputs), total, force=bool(progress))
    return bar if bar.enabled else None


def first_notes(notes: pa.Table) -> pa.Table:
    """One ``notes`` row per file, kind and token: the first in the file. The core keeps one
    per table set; a big file cut into chunks (``split.rs``) has a table set per chunk."""
    if notes.num_rows < 2:
        return notes
    import pyarrow.compute as pc

    # (chunks of several table sets carry differing dictionaries: group_by needs them unified)
    keyed = notes.unify_dictionaries().append_column("_row", pa.array(range(notes.num_rows), pa.int64()))
    first = keyed.group_by(["file_id", "kind", "token"], use_threads=False).aggregate(
        [("_row", "min")])["_row_min"]
    return notes.take(pc.sort_indices(first))
