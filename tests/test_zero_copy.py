"""Text columns are views into the memory-mapped input: no string bytes are copied."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("hlodump._core")
import hlodump  # noqa: E402

DATA = Path(__file__).parent / "data"


def mappings_of(path: Path) -> list[tuple[int, int]]:
    """Address ranges where `path` is mapped into this process (from /proc/self/maps)."""
    target = str(path.resolve())
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip() == target:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


def data_buffer_addresses(column: pa.ChunkedArray) -> list[tuple[int, int]]:
    """(address, size) of the variadic data buffers of a string_view column."""
    out = []
    for chunk in column.chunks:
        assert chunk.type == pa.string_view()
        for buf in chunk.buffers()[2:]:
            if buf is not None and buf.size:
                out.append((buf.address, buf.size))
    return out


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_string_view_data_buffers_are_the_mapping() -> None:
    path = DATA / "seeds" / "003_edd6dfbd09ed8e41.txt"
    d = hlodump.read_arrow(path, mmap=True)
    maps = mappings_of(path)
    assert maps, "the file is mapped while its tables are alive"
    col = d.views["values"].column("defining_instruction")  # the tables as read (d.views)
    bufs = data_buffer_addresses(col)
    assert bufs, "long strings live in data buffers"
    for addr, size in bufs:
        assert any(lo <= addr and addr + size <= hi for lo, hi in maps), hex(addr)
    # And the 11 KB kernel body string really is read out of that memory.
    longest = max(col.to_pylist(), key=len)
    assert len(longest) > 11000 and "custom_call_target" in longest
    raw = path.read_bytes()
    assert longest.encode() in raw


def test_small_files_share_one_arena_buffer() -> None:
    d = hlodump.read_arrow(sorted((DATA / "corpus" / "jax-0.10.2" / "control_flow").glob("*-live-range.txt")))
    col = d.views["schedule"].column("instruction")
    # All files of the group point into one arena: one data buffer, whatever the file count.
    assert d["files"].num_rows > 5
    assert len({a for a, _ in data_buffer_addresses(col)}) == 1


def test_tables_outlive_the_dump_object() -> None:
    path = DATA / "seeds" / "000_d4ec204070c56195.txt"
    t = hlodump.read_arrow(path, mmap=True).views["assignments"]
    assert t.schema.field("instruction").type == pa.string_view()  # views into the map
    assert pa.types.is_dictionary(t.schema.field("shape").type)  # few distinct: its own dictionary
    import gc

    gc.collect()
    assert all(t.column("instruction").to_pylist())
    shapes = t.column("shape").to_pylist()
    assert shapes[0] == "f32[]{:T(128)}"
    raw = [ln.split("): ", 1)[1] for ln in path.read_text().splitlines() if ln.startswith(" value: ")]
    assert shapes == raw


# ---------------------------------------------------------------- hand-over of a default read
# ``read_arrow``'s default (string_view=None) casts a table to large_string only when it is
# asked for by name (``d.instructions``), for pyarrow's kernels; Polars, DuckDB, Parquet and
# Arrow C stream consumers get the views: no copy of the text.

CF10 = DATA / "corpus" / "jax-0.10.2" / "control_flow"
T10 = DATA / "corpus" / "jax-0.10.2" / "transformer"


def _mapped(paths: list[Path]) -> list[tuple[int, int]]:
    return [r for p in paths for r in mappings_of(p)]


def _in_maps(bufs: list[tuple[int, int]], maps: list[tuple[int, int]]) -> bool:
    return all(any(lo <= a and a + n <= hi for lo, hi in maps) for a, n in bufs)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_default_read_hands_views_to_polars_duckdb_parquet_and_c_streams(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    import pyarrow.parquet as pq

    files = sorted(p for p in T10.rglob("*") if p.is_file())
    hlodump.read_arrow(DATA / "seeds" / "000_d4ec204070c56195.txt").to_polars()  # Polars' first-call setup
    d = hlodump.read_arrow(T10, mmap=True, progress=False)
    maps = _mapped(files)
    assert maps
    base = pa.total_allocated_bytes()

    frames = d.to_polars()
    # Polars keeps the string_view buffers as they are: its text is the mapped files.
    for name, col in (("instructions", "attributes"), ("values", "defining_instruction"), ("schedule", "instruction")):
        arr = frames[name][col].to_arrow(compat_level=pl.CompatLevel.newest())
        assert arr.type == pa.string_view()
        bufs = data_buffer_addresses(pa.chunked_array([arr]))
        assert bufs and _in_maps(bufs, maps), name

    con = d.to_duckdb()
    got = con.sql("select opcode, count(*), sum(length(attributes)) from instructions group by all order by all").fetchall()
    out = d.write_parquet(tmp_path / "pq")

    # Arrow C stream (PyCapsule) consumers take d.views.<table>: string_view into the maps.
    stream = pa.RecordBatchReader.from_stream(d.views.instructions)
    assert stream.schema.field("name").type == pa.string_view()
    bufs = data_buffer_addresses(stream.read_all().column("name"))
    assert bufs and _in_maps(bufs, maps)

    # No large_string copy was made: pyarrow allocated (almost) nothing, no table was cast.
    grew = pa.total_allocated_bytes() - base
    assert not d._cast
    large = hlodump.read_arrow(T10, string_view=False, progress=False)
    copy_size = sum(t.nbytes for t in large.tables())
    assert grew < copy_size / 10, (grew, copy_size)

    # Same results as from a string_view=False read.
    for name in d:
        assert frames[name].equals(pl.from_arrow(large[name])), name
    con2 = large.to_duckdb()
    assert got == con2.sql("select opcode, count(*), sum(length(attributes)) from instructions group by all order by all").fetchall()
    for p in out:
        name = Path(p).stem
        back = pq.read_table(p)
        from hlodump.schema import schema

        assert back.cast(schema(name, False)).equals(large[name]), name


def test_table_access_casts_only_that_table_once() -> None:
    d = hlodump.read_arrow(CF10, progress=False)
    t = d.instructions
    assert type(t) is pa.Table and t is d["instructions"] and t is d.instructions
    assert t.schema.field("name").type == pa.large_string()
    assert set(d._cast) == {"instructions"}
    assert "values" in d and set(d._cast) == {"instructions"}  # `in` does not cast
    assert d.views.instructions.schema.field("name").type == pa.string_view()
    assert d.views.views is d.views and d.views.instructions is d.views["instructions"]
    assert d.views.instructions.to_pylist() == t.to_pylist()
    assert set(d._cast) == {"instructions"}
    large = hlodump.read_arrow(CF10, string_view=False, progress=False)
    assert large.views is large and large.string_view is False
