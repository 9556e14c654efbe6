"""``hlodump.scan`` (streaming one table) and ``read_arrow(columns=...)`` (projection): the
batches of a scan, concatenated, are the table ``read_arrow`` gives, cell for cell, on every
input of tests/data, for several batch sizes and projections; Polars and DuckDB queries on a
``Scan`` equal the same queries on the table."""

from __future__ import annotations

import glob
import os
import warnings

import pyarrow as pa
import pytest

import hlodump
from hlodump.dump import to_large_strings
from hlodump.schema import SCHEMAS

DATA = os.path.join(os.path.dirname(__file__), "data")
# every directory of tests/data that holds dump files (each read as one source)
SOURCES = sorted(
    {os.path.relpath(os.path.dirname(p), DATA) for p in glob.glob(os.path.join(DATA, "**", "*"), recursive=True) if os.path.isfile(p)}
)
SOURCES = [s for s in SOURCES if not any(s.startswith(o + os.sep) for o in SOURCES)]  # top-most only
TABLES = list(SCHEMAS)


def _full(src: str) -> hlodump.Dump:
    return hlodump.read_arrow(os.path.join(DATA, src), on_error="collect", string_view=True)


_cache: dict[str, hlodump.Dump] = {}


def full(src: str) -> hlodump.Dump:
    if src not in _cache:
        _cache[src] = _full(src)
    return _cache[src]


def files_only(src: str) -> pa.Table:
    return hlodump.read_arrow(os.path.join(DATA, src), tables=["files"], string_view=True).files


def scanned(src: str, table: str, **kw) -> pa.Table:
    s = hlodump.scan(os.path.join(DATA, src), table, on_error="collect", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hlodump.ScanWarning)
        batches = list(s)
    for b in batches:
        assert b.num_rows <= s.batch_size
        assert b.schema == s.schema
    return pa.Table.from_batches(batches, s.schema)


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and equal values. Dictionary columns are compared decoded: a scan's batches
    carry their own dictionaries, ``Table.equals`` would compare those too."""
    return a.schema == b.schema and to_large_strings(a).equals(to_large_strings(b))


def test_sources_found() -> None:
    assert len(SOURCES) >= 5, SOURCES


@pytest.mark.parametrize("src", SOURCES)
def test_every_table_streams_as_read(src: str) -> None:
    d = full(src)
    for table in TABLES:
        # a scan of `files` reads as read_arrow(tables=["files"]): no file is parsed
        want = d[table] if table != "files" else files_only(src)
        got = scanned(src, table)
        assert got.num_rows == want.num_rows, (src, table)
        assert got.equals(want), (src, table)


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_batch_sizes(batch_size: int) -> None:
    src = os.path.join("corpus", "jax-0.10.2", "control_flow")
    d = full(src)
    for table in ["instructions", "values", "live_ranges", "memory_report", "files", "computations"]:
        got = scanned(src, table, batch_size=batch_size)
        assert same(got, d[table] if table != "files" else files_only(src)), table


def test_one_big_file_streams_in_several_batches() -> None:
    """Batches leave while the file is still being parsed (the memory bound of a scan)."""
    path = sorted(glob.glob(os.path.join(DATA, "corpus", "jax-0.10.2", "transformer", "*after_optimizations.txt")))[0]
    s = hlodump.scan(path, "instructions", batch_size=100)
    sizes = [b.num_rows for b in s]
    n = hlodump.read_arrow(path).instructions.num_rows
    assert sum(sizes) == n and len(sizes) == -(-n // 100) and max(sizes) == 100


@pytest.mark.parametrize("table", ["instructions", "allocations", "values", "files", "memory_report", "oom_buffers"])
def test_projection(table: str) -> None:
    src = "corpus"
    cols = SCHEMAS[table].names
    for pick in ([cols[1]], [cols[-1], cols[0]], cols[2:5]):
        want = full(src)[table].select([c for c in cols if c in pick])
        want_scan = want if table != "files" else files_only(src).select(want.schema.names)
        assert scanned(src, table, columns=pick).equals(want_scan), pick
        d = hlodump.read_arrow(os.path.join(DATA, src), on_error="collect", columns={table: pick}, string_view=True)
        assert d[table].equals(want), pick
        # the other tables are whole
        other = "files" if table != "files" else "errors"
        assert d[other].schema == full(src)[other].schema


DERIVED = [
    ("values", ["defining_opcode"]),
    ("values", ["defining_op_name"]),
    ("values", ["line"]),
    ("values", ["defining_opcode", "defining_op_name"]),
    ("values", ["defining_shape"]),
    ("values", ["defining_source_line", "defining_fusion_kind"]),
    ("values", ["defining_op_name", "defining_source_file", "defining_custom_call_target"]),
    ("instructions", ["source_file"]),
    ("instructions", ["source_line"]),
    ("instructions", ["source_function"]),
    ("instructions", ["name", "stack_frame_id"]),
]


@pytest.mark.parametrize("table,pick", DERIVED)
def test_columns_derived_only_when_projected(table: str, pick: list[str]) -> None:
    """Values derived without a chance of error are only derived when a column wants them
    (`values.defining_*` from the instruction text; the source columns
    of `instructions` from the stack-frame tables): each alone, together, and not at all give the
    full read's columns."""
    src = "corpus"
    want = full(src)[table].select(pick)
    assert want.num_rows > 1000 and any(want.column(c).null_count < want.num_rows for c in pick)
    d = hlodump.read_arrow(os.path.join(DATA, src), on_error="collect", columns={table: pick}, string_view=True)
    assert d[table].equals(want), pick


def test_projection_of_every_table_in_read_arrow() -> None:
    src = "corpus"
    cols = {t: SCHEMAS[t].names[::2] for t in TABLES}
    d = hlodump.read_arrow(os.path.join(DATA, src), on_error="collect", columns=cols, string_view=True)
    for t in TABLES:
        assert d[t].equals(full(src)[t].select(cols[t])), t


def test_string_view_false() -> None:
    src = os.path.join("corpus", "jax-0.4.26", "control_flow")
    got = scanned(src, "instructions", string_view=False, columns=["name", "opcode", "line"])
    assert got.schema.field("name").type == pa.large_string()
    want = hlodump.read_arrow(os.path.join(DATA, src), string_view=False).instructions.select(["name", "opcode", "line"])
    assert got.equals(want)


def test_polars_on_a_scan_equals_polars_on_the_table() -> None:
    pl = pytest.importorskip("polars")
    src = os.path.join(DATA, "corpus")
    lf = hlodump.scan(src, "instructions").to_polars()
    df = pl.from_arrow(hlodump.read_arrow(src).instructions)
    q = lambda f: (  # noqa: E731
        f.filter(pl.col("opcode") == "fusion").group_by("file_id").agg(pl.len().alias("n")).sort("file_id")
    )
    assert q(lf).collect().equals(q(df.lazy()).collect())
    assert lf.select("name").head(5).collect().equals(df.select("name").head(5))
    assert lf.select(pl.len()).collect().item() == df.height
    assert lf.collect_schema().names() == df.columns


def test_duckdb_reads_a_scan() -> None:
    duckdb = pytest.importorskip("duckdb")
    src = os.path.join(DATA, "corpus")
    s = hlodump.scan(src, "allocations", columns=["file_id", "size", "is_constant"])  # noqa: F841 - read by DuckDB by name
    t = hlodump.read_arrow(src).allocations  # noqa: F841 - read by DuckDB by name
    sql = "select file_id, sum(size) as b, count(*) as n from {} where not is_constant group by 1 order by 1"
    got = duckdb.sql(sql.format("s")).fetchall()
    want = duckdb.sql(sql.format("t")).fetchall()
    assert got == want and len(got) > 10
    # a Scan can be read again: every query is a fresh stream
    assert duckdb.sql(sql.format("s")).fetchall() == want


def test_arrow_c_stream_twice() -> None:
    s = hlodump.scan(os.path.join(DATA, "seeds"), "allocations")
    a = pa.table(s)
    b = pa.RecordBatchReader.from_stream(s).read_all()
    assert a.equals(b) and a.num_rows > 0


def test_strict_error_comes_after_the_files_before_it(tmp_path) -> None:
    good = sorted(glob.glob(os.path.join(DATA, "seeds", "*")))[0]
    (tmp_path / "a.txt").write_bytes(open(good, "rb").read())
    (tmp_path / "module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt").write_text(
        "BufferAssignment:\nallocation 0: size x, parameter 0:\n"
    )
    s = hlodump.scan(str(tmp_path), "allocations")
    it = iter(s)
    first = next(it)
    assert first.num_rows > 0
    with pytest.raises(hlodump.ParseError) as e:
        list(it)
    assert e.value.line == 2 and "module_0001" in e.value.path
    # collect: the same rows, the problem reported
    c = hlodump.scan(str(tmp_path), "allocations", on_error="collect")
    with pytest.warns(hlodump.ScanWarning, match="1 problem"):
        rows = sum(b.num_rows for b in c)
    assert rows == first.num_rows and c.errors.num_rows == 1


def test_stopping_early_stops_the_workers() -> None:
    s = hlodump.scan(os.path.join(DATA, "corpus"), "instructions", batch_size=10, threads=2)
    for _ in range(3):
        g = s.batches()
        assert next(g).num_rows == 10
        g.close()  # the stream is dropped: blocked workers wake up and stop
    assert sum(b.num_rows for b in s) == full("corpus").instructions.num_rows


def test_bad_arguments() -> None:
    src = os.path.join(DATA, "seeds")
    with pytest.raises(ValueError, match="unknown table"):
        hlodump.scan(src, "nosuch")
    with pytest.raises(ValueError, match="has no column 'nosuch'"):
        hlodump.scan(src, "allocations", columns=["nosuch"])
    with pytest.raises(ValueError, match="batch_size"):
        hlodump.scan(src, "allocations", batch_size=0)
    with pytest.raises(ValueError, match="has no column"):
        hlodump.read_arrow(src, columns={"allocations": ["nosuch"]})
    with pytest.raises(ValueError, match="unknown table"):
        hlodump.read_arrow(src, columns={"nosuch": ["a"]})
    with pytest.raises(FileNotFoundError):
        list(hlodump.scan(os.path.join(DATA, "nosuch.txt"), "allocations"))
    assert hlodump.scan(src, "allocations", columns=["size", "file_id"]).schema.names == ["file_id", "size"]


def test_scan_plans_its_input_like_read_arrow(tmp_path) -> None:
    """One input plan (``hlodump.io.plan``): a compressed local file is read decompressed by
    ``scan`` too (before issue 27 scan read its compressed bytes)."""
    import gzip

    src = os.path.join(DATA, "corpus", "jax-0.9.2", "control_flow",
                       "module_0025.jit_nested.cpu_after_optimizations-buffer-assignment.txt")
    packed = tmp_path / "module_0025.jit_nested.cpu_after_optimizations-buffer-assignment.txt.gz"
    packed.write_bytes(gzip.compress(open(src, "rb").read()))
    want = hlodump.read_arrow(src, string_view=True)["allocations"]
    assert want.num_rows > 0
    got = hlodump.scan(str(packed), "allocations").to_table()
    assert got.to_pylist() == want.to_pylist()
    assert hlodump.read_arrow(str(packed), string_view=True)["allocations"].num_rows == want.num_rows
