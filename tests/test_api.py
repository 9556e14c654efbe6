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
from hlodump.schema import SCHEMAS, TABLE_NAMES, schema

DATA = Path(__file__).parent / "data"
SEED0 = DATA / "seeds" / "000_d4ec204070c56195.txt"
SEED3 = DATA / "seeds" / "003_edd6dfbd09ed8e41.txt"


def test_every_table_present_with_full_schema_even_when_empty() -> None:
    d = hlodump.read_arrow(SEED0)
    assert list(d) == list(TABLE_NAMES)
    for name in TABLE_NAMES:
        assert d.views[name].schema == SCHEMAS[name], name  # as read: string_view text
        assert d[name].schema == schema(name, False), name  # as handed to pyarrow: large_string
    assert d.instructions.num_rows == 0 and d.views.instructions.schema == SCHEMAS["instructions"]
    v = hlodump.read_arrow(SEED0, string_view=True)
    for name in TABLE_NAMES:
        assert v[name].schema == SCHEMAS[name], name


def test_dump_is_a_mapping_with_attribute_access() -> None:
    d = hlodump.read_arrow(SEED0)
    assert d.allocations is d["allocations"]
    assert d["values"].num_rows == 24
    # no Mapping method is shadowed: values() is Mapping's (the table is d["values"])
    assert [t.num_rows for t in d.values()] == [t.num_rows for t in d.tables()]
    assert list(d.values()) == [d[k] for k in d] and len(d.values()) == len(TABLE_NAMES)
    assert dict(d.items())["peak"].num_rows == 10
    import warnings

    with warnings.catch_warnings():  # d.values is the table too, silently (issue 51)
        warnings.simplefilter("error")
        assert d.values.num_rows == 24 and len(d.values) == 24
        assert d.values["instruction"].to_pylist() == d["values"]["instruction"].to_pylist()
    with pytest.raises(AttributeError):
        d.no_such_table  # noqa: B018
    assert not hasattr(d, "no_such_table")


def test_tables_argument_limits_the_tables() -> None:
    d = hlodump.read_arrow(SEED0, tables=["allocations"])
    assert list(d) == ["files", "allocations", "errors", "notes"]
    assert not hasattr(d, "modules")  # an AttributeError: hasattr works
    with pytest.raises(AttributeError, match=r"table 'modules' was not read \(see read_arrow\(tables=\.\.\.\)\)"):
        d.modules  # noqa: B018
    with pytest.raises(KeyError):  # as before 0.2: still a KeyError too
        d.modules  # noqa: B018
    with pytest.raises(KeyError):
        d["values"]  # noqa: B018
    assert "values" not in d and d.get("values") is None
    with pytest.raises(ValueError):
        hlodump.read_arrow(SEED0, tables=["nope"])


def test_importing_hlodump_leaves_pickle_alone() -> None:
    import copyreg
    import pickle

    assert pa.Table not in copyreg.dispatch_table and pa.ChunkedArray not in copyreg.dispatch_table
    d = hlodump.read_arrow(SEED0, mmap=True)
    back = pickle.loads(pickle.dumps(d))  # the Dump's own __reduce__ (compacted tables)
    assert isinstance(back, hlodump.Dump) and back.string_view is None
    assert list(back) == list(d) and all(back.views[k].equals(d.views[k]) for k in d)
    col = d.views["assignments"].column("instruction")
    assert hlodump.compact(col).equals(col)  # a ChunkedArray compacts too


def test_read_arrow_and_scan_share_their_parameters() -> None:
    import inspect
    import typing

    r, s = inspect.signature(hlodump.read_arrow), inspect.signature(hlodump.scan)
    rh = typing.get_type_hints(hlodump.read_arrow)
    sh = typing.get_type_hints(hlodump.scan)
    assert list(r.parameters)[0] == list(s.parameters)[0] == "source"
    shared = (set(r.parameters) & set(s.parameters)) - {"source"}
    assert {"on_error", "threads", "mmap", "follow_links", "max_files", "storage_options", "columns",
            "string_view"} <= shared
    for name in shared - {"columns", "string_view"}:  # columns: {table: [...]} vs [...] of one table
        assert r.parameters[name].default == s.parameters[name].default, name
        assert r.parameters[name].kind == s.parameters[name].kind == inspect.Parameter.KEYWORD_ONLY, name
        assert rh[name] == sh[name], name
    assert rh["source"] == sh["source"]
    assert typing.get_args(rh["on_error"]) == ("raise", "collect")  # a Literal
    # string_view: None (cast on first access) for read_arrow, True for scan (documented why)
    assert r.parameters["string_view"].default is None and s.parameters["string_view"].default is True


def test_renamed_parameters_still_work_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="now 'source'"):
        d = hlodump.read_arrow(path=SEED0, tables=["allocations"])
    assert d["allocations"].num_rows > 0
    with pytest.warns(DeprecationWarning, match="now 'source'"):
        assert hlodump.scan(path=SEED0, table="allocations").to_table().num_rows == d["allocations"].num_rows
    with pytest.raises(TypeError, match="both"):
        hlodump.read_arrow(SEED0, path=SEED0)


CORPUS = DATA / "corpus"
# the formats that can produce `allocations` (the memory-usage report is a format of its own)
BA_FAMILY = {"buffer_assignment", "buffer_assignment_values", "live_range"}


@pytest.mark.parametrize("read", [hlodump.read_arrow, hlodump.reference.read_arrow], ids=["rust", "reference"])
def test_tables_files_only_parses_nothing(read, monkeypatch: pytest.MonkeyPatch) -> None:
    full = read(CORPUS, on_error="collect", string_view=False)
    if read is hlodump.reference.read_arrow:  # prove it: the format parsers must not be called
        from hlodump.reference import buffer_assignment, hlo

        def boom(*a: object, **k: object) -> None:
            raise AssertionError("parsed")

        monkeypatch.setattr(hlo, "parse_module", boom)
        monkeypatch.setattr(buffer_assignment, "parse", boom)
    for tables in (["files"], []):
        d = read(CORPUS, tables=tables, on_error="collect", string_view=False)
        assert list(d) == ["files", "errors", "notes"]
        assert d.files.num_rows == full.files.num_rows > 690
        assert d.files["parsed"].to_pylist() == [False] * d.files.num_rows
        assert d.files.drop_columns(["parsed"]).equals(full.files.drop_columns(["parsed"]))
        assert d.errors.num_rows == 0


@pytest.mark.parametrize("read", [hlodump.read_arrow, hlodump.reference.read_arrow], ids=["rust", "reference"])
def test_tables_files_only_never_raises_on_a_broken_file(read, tmp_path: Path) -> None:
    """Structural, not timed (speed is measured in benches/): a file that is not parsed cannot
    raise, so a broken dump read for `files` alone succeeds while a full read raises."""
    bad = tmp_path / "module_0001.jit_f.before_optimizations.txt"
    bad.write_text("HloModule jit_f\n\nENTRY %main.1 () -> f32[] {\n  ROOT %x = f32[] ???\n}\n")
    with pytest.raises(hlodump.ParseError):
        read(bad)
    d = read(bad, tables=["files"])
    assert d.files.column("parsed").to_pylist() == [False]
    assert d.files.column("kind").to_pylist() == ["hlo_module"] and d.errors.num_rows == 0


@pytest.mark.parametrize("read", [hlodump.read_arrow, hlodump.reference.read_arrow], ids=["rust", "reference"])
def test_tables_allocations_equals_the_full_read(read) -> None:
    full = read(CORPUS, string_view=False)
    d = read(CORPUS, tables=["allocations"], string_view=False)
    assert list(d) == ["files", "allocations", "errors", "notes"]
    assert d.allocations.num_rows > 0 and d.allocations.equals(full.allocations)
    want = [f["parsed"] and f["content_kind"] in BA_FAMILY for f in full.files.to_pylist()]
    assert d.files["parsed"].to_pylist() == want


@pytest.mark.parametrize("src", [CORPUS, DATA], ids=["corpus", "all-data"])
def test_every_single_table_equals_the_full_read(src: Path) -> None:
    """The format families are right, and a table read alone is built alone (the others are
    projected to no column; custom-call bodies are only decoded for `custom_calls`): each table
    alone is what a full read gives."""
    full = hlodump.read_arrow(src, on_error="collect", string_view=False)
    assert full.custom_calls.num_rows > 0 and full.oom_buffers.num_rows >= (src == DATA)
    for name in TABLE_NAMES:
        d = hlodump.read_arrow(src, tables=[name], on_error="collect", string_view=False)
        if name != "files":  # (files: parsed differs, checked below)
            assert d[name].equals(full[name]), name
        assert d.files.drop_columns(["parsed"]).equals(full.files.drop_columns(["parsed"])), name


def test_tables_skips_files_of_other_formats(tmp_path: Path) -> None:
    """A skipped file is not parsed: its errors neither raise nor become rows; naming errors
    parses every format."""
    (tmp_path / "a-buffer-assignment.txt").write_text("BufferAssignment:\nallocation 0: size 8:\n")
    (tmp_path / "b.txt").write_text("HloModule m\n\nENTRY e {\n  this is not hlo\n")
    (tmp_path / "c.txt").write_text("BufferAssignment:\nallocation x: size 8:\n")
    for read in (hlodump.read_arrow, hlodump.reference.read_arrow):
        d = read(tmp_path, tables=["files"])
        assert d.files["parsed"].to_pylist() == [False, False, False]
        assert d.files["kind"].to_pylist() == ["buffer_assignment", "hlo_module", "buffer_assignment"]
        with pytest.raises(hlodump.ParseError):
            read(tmp_path, tables=["instructions"])  # the HLO file is parsed
        with pytest.raises(hlodump.ParseError):
            read(tmp_path, tables=["allocations"])  # c.txt is parsed
        d = read(tmp_path, tables=["instructions"], on_error="collect")
        assert d.files["parsed"].to_pylist() == [False, True, False]
        assert set(d.errors["file_id"].to_pylist()) == {1}
        d = read(tmp_path, tables=["allocations"], on_error="collect")
        assert d.files["parsed"].to_pylist() == [True, False, True]
        assert set(d.errors["file_id"].to_pylist()) == {2}
        d = read(tmp_path, tables=["errors"], on_error="collect")
        assert list(d) == ["files", "errors", "notes"]
        assert d.files["parsed"].to_pylist() == [True, True, True]
        assert set(d.errors["file_id"].to_pylist()) == {1, 2}


@pytest.mark.parametrize("mmap", [None, False, True])
def test_tables_skipping_keeps_sizes_and_kinds_of_long_first_lines(tmp_path: Path, mmap) -> None:
    """Skipped files are read only up to their first complete non-blank line: the size and
    content kind must not depend on where that line ends."""
    (tmp_path / "a.txt").write_bytes(b"\n \r\n" + b"HloModule m, " + b"x" * (300 << 10) + b"\nENTRY\n")
    (tmp_path / "b.txt").write_bytes(b"HloModule m, " + b"y" * ((4 << 10) - 14) + b"\n")  # ends at 4 KiB
    (tmp_path / "b2.txt").write_bytes(b"HloModule m, " + b"y" * ((64 << 10) - 14) + b"\nENTRY")  # at 64 KiB
    (tmp_path / "c.txt").write_bytes(b"\n" * (200 << 10))  # blank lines only: empty
    (tmp_path / "d.txt").write_bytes(b"\n" * (64 << 10) + b"HloModule")  # no newline: unknown
    (tmp_path / "e.txt").write_bytes(b"xla_foo: 1\n" + b"z" * (5 << 20))  # mapped by default
    full = hlodump.read_arrow(tmp_path, mmap=mmap, on_error="collect", string_view=False)
    ref = hlodump.reference.read_arrow(tmp_path, tables=["files"], string_view=False)
    d = hlodump.read_arrow(tmp_path, tables=["files"], mmap=mmap, string_view=False)
    sizes = [p.stat().st_size for p in sorted(tmp_path.iterdir())]
    assert d.files["size_bytes"].to_pylist() == sizes
    assert d.files["content_kind"].to_pylist() == ["hlo_module", "hlo_module", "hlo_module", "empty",
                                                   "unknown", "debug_options"]
    assert d.files.drop_columns(["parsed"]).equals(full.files.drop_columns(["parsed"]))
    assert d.files.equals(ref.files)


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
    texts = d["values"].column("defining_instruction").to_pylist()
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
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "hlodump._core",
                        "--mypy-config-file", "pyproject.toml"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------------------------ issue 50, item 7


def test_public_functions_check_their_arguments(tmp_path) -> None:
    """A wrong argument is a TypeError / ValueError that names the function, the parameter and
    what it takes: never an AttributeError from deep inside (``summary(None)``, ``diff(d, None)``),
    a library's wording (``mmap="x"``: "'str' object is not an instance of 'bool'", jax's
    "incompatible function arguments" for ``dump_to=b"dir"``), nor a value taken as something
    else (``strict="yes"`` was read as true)."""
    from hlodump import analysis as A

    d = hlodump.read_arrow(str(SEED3))
    cases = [
        (lambda: A.summary(None), TypeError, r"hlodump\.analysis\.summary: dump must be a hlodump\.Dump .*NoneType"),
        (lambda: A.summary(str(SEED3)), TypeError, r"summary: dump must be a hlodump\.Dump .*read_arrow\("),
        (lambda: A.diff(d, None), TypeError, r"hlodump\.analysis\.diff: b must be a hlodump\.Dump"),
        (lambda: A.explain(None, d), TypeError, r"explain: a must be a hlodump\.Dump"),
        (lambda: A.memory_timeline(d, module=1.5), TypeError, r"memory_timeline: module must be None, a module key"),
        (lambda: A.summary(d, top="10"), TypeError, r"summary: top must be an int"),
        (lambda: A.summary(d, top=-1), ValueError, r"summary: top must be 0 or more"),
        (lambda: A.summary(d, cost="no"), TypeError, r"summary: cost must be True or False"),
        (lambda: A.breakdown(d, by=3), TypeError, r"breakdown: by must be a str"),
        (lambda: A.costs([]), TypeError, r"costs: d must be a hlodump\.Dump"),
        (lambda: hlodump.read_arrow(str(SEED3), mmap="x"), TypeError, r"read_arrow: mmap must be True, False or None, not str"),
        (lambda: hlodump.read_arrow(str(SEED3), strict="yes"), TypeError, r"read_arrow: strict must be True or False"),
        (lambda: hlodump.read_arrow(str(SEED3), string_view=1), TypeError, r"read_arrow: string_view must be"),
        (lambda: hlodump.read_arrow(str(SEED3), follow_links=None), TypeError, r"read_arrow: follow_links must be"),
        (lambda: hlodump.read_arrow(str(SEED3), max_files="9"), TypeError, r"read_arrow: max_files must be an int"),
        (lambda: hlodump.read_arrow(str(SEED3), storage_options="k=v"), TypeError, r"read_arrow: storage_options must be a mapping"),
        (lambda: hlodump.read_arrow(str(SEED3), tables="files"), TypeError, r"read_arrow: tables must be a list"),
        (lambda: hlodump.scan(str(SEED3), "files", strict="yes"), TypeError, r"scan: strict must be True or False"),
        (lambda: hlodump.scan(str(SEED3), 3), TypeError, r"scan: table must be a table name"),
        (lambda: hlodump.capture(lambda x: x, 1, dump_to=b"dir"), TypeError,
         r"capture: dump_to must be a path \(str or os\.PathLike\) or None, not bytes"),
        (lambda: hlodump.capture(lambda x: x, 1, dump_to=""), ValueError, r"capture: dump_to must be a path, not an empty"),
        (lambda: hlodump.capture(lambda x: x, 1, passes="yes"), TypeError, r"capture: passes must be True or False"),
        (lambda: hlodump.report(None, str(tmp_path / "r.html")), TypeError, r"hlodump\.report: dump must be a hlodump\.Dump"),
        (lambda: hlodump.report(d, None), TypeError, r"hlodump\.report: path must be a path"),
        (lambda: hlodump.compact("t"), TypeError, r"hlodump\.compact: table must be a pyarrow\.Table"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()
    assert not os.path.exists("dir")  # nothing was made for the refused dump_to
    # the right arguments still work, also every module selector form
    key = A._module_list(d)[0].key
    assert A.summary(d, module=key, top=0, cost=False) and A.summary(d, module=[key]) and A.summary(d, module=None)
