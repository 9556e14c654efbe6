"""The public Python API: entry points, Dump behaviour, typing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import hlodump
import hlodump.reference
from hlodump.schema import SCHEMAS, TABLE_NAMES

DATA = Path(__file__).parent / "data"
SEED0 = DATA / "seeds" / "000_d4ec204070c56195.txt"
SEED3 = DATA / "seeds" / "003_edd6dfbd09ed8e41.txt"


def test_every_table_present_with_full_schema_even_when_empty() -> None:
    d = hlodump.read_arrow(SEED0)
    assert list(d) == list(TABLE_NAMES)
    for name in TABLE_NAMES:
        assert d[name].schema == SCHEMAS[name], name
    assert d.instructions.num_rows == 0 and d.instructions.schema == SCHEMAS["instructions"]


def test_dump_is_a_mapping_with_attribute_access() -> None:
    d = hlodump.read_arrow(SEED0)
    assert d.allocations is d["allocations"]
    assert d.values.num_rows == 24  # the table, not Mapping.values()
    assert len(d.tables()) == len(TABLE_NAMES)
    assert dict(d.items())["peak"].num_rows == 10
    with pytest.raises(AttributeError):
        d.no_such_table  # noqa: B018


def test_tables_argument_limits_the_tables() -> None:
    d = hlodump.read_arrow(SEED0, tables=["allocations"])
    assert list(d) == ["files", "allocations", "errors"]
    with pytest.raises(KeyError):
        d.values  # noqa: B018
    with pytest.raises(ValueError):
        hlodump.read_arrow(SEED0, tables=["nope"])


def test_missing_file_is_file_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        hlodump.read_arrow(DATA / "no-such-file.txt")
    with pytest.raises(FileNotFoundError):
        hlodump.reference.read_arrow(DATA / "no-such-file.txt")


def test_parse_error_has_position(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text("BufferAssignment:\nallocation 0: size 8:\nallocation x: size 8:\n")
    for read in (hlodump.read_arrow, hlodump.reference.read_arrow):
        with pytest.raises(hlodump.ParseError) as e:
            read(p)
        assert (e.value.path, e.value.line) == (str(p), 3)
        assert e.value.column >= 1 and e.value.message and "allocation x" in e.value.text
        assert isinstance(e.value, ValueError) and isinstance(e.value, hlodump.HlodumpError)
        d = read(p, on_error="collect")
        assert d.errors.column("line").to_pylist() == [3]
        assert d.allocations.num_rows == 1


def test_polars_duckdb_parquet(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    d = hlodump.read_arrow(SEED0)
    frames = d.to_polars()
    assert isinstance(frames["allocations"], pl.DataFrame)
    assert frames["allocations"]["size"].sum() == 230870056
    assert frames["values"].filter(pl.col("instruction") == "fusion.5").height == 3
    con = d.to_duckdb(duckdb.connect())
    assert con.execute("select sum(size) from allocations").fetchone()[0] == 230870056
    assert con.execute("select instruction from peak order by bytes desc limit 1").fetchone()[0] == "fusion.5"
    import pyarrow.parquet as pq

    paths = d.write_parquet(tmp_path / "pq")
    assert len(paths) == len(TABLE_NAMES)
    back = pq.read_table(tmp_path / "pq" / "assignments.parquet")
    assert back.to_pylist() == d.assignments.to_pylist()


def test_decode_body_reads_the_mosaic_kernel() -> None:
    d = hlodump.read_arrow(SEED3)
    texts = d.values.column("defining_instruction").to_pylist()
    custom = max(texts, key=len)
    body = hlodump.decode_body(custom[custom.index("backend_config=") + len("backend_config="):])
    assert body is not None and body.startswith(b"ML\xefR") and len(body) == 7610
    assert hlodump.decode_body("not base64 !") is None


def test_string_view_false_gives_large_strings_sortable_by_pyarrow() -> None:
    d = hlodump.read_arrow(SEED0, string_view=False)
    assert d.assignments.schema.field("instruction").type == pa.large_string()
    top = d.peak.sort_by([("bytes", "descending")]).column("buffer")[0].as_py()
    assert top == "fusion.5{1}"


@pytest.mark.skipif(shutil.which("stubtest") is None and not hasattr(sys, "base_prefix"), reason="needs mypy")
def test_native_stub_matches_the_module() -> None:
    pytest.importorskip("mypy")
    pytest.importorskip("hlodump._core")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "hlodump._core", "--ignore-missing-stub",
                        "--mypy-config-file", "pyproject.toml"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
