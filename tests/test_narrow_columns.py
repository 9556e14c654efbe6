"""Issue 26, "output no larger than the input": line numbers, source positions and
``stack_frame_id`` are int32 columns in both readers (``instructions.backend_config`` stays a
``string_view``: a kernel body of megabytes is a view of the mapped file, not a copy). A number printed for an int32 column that does not fit is an error at its first
character (as one past int64 was); a file of more lines than an int32 numbers is refused.

Oracles: the numbers and positions below are read off the texts written here; the limits are
Arrow's int32 (2**31 - 1). Rust vs reference cell for cell on the same snippets:
tests/test_rust_vs_reference_hlo.py (``NUMBERS``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import hlodump
from hlodump.schema import SCHEMAS

from conftest import DATA

I32_MAX = 2**31 - 1

#: Every column narrowed to int32 by issue 26, besides the ``line`` of every table.
INT32 = {
    "instructions": ["source_line", "stack_frame_id"],
    "stack_frames": ["source_line", "end_line", "column", "end_column"],
    "values": ["defining_source_line"],
    "oom_buffers": ["source_line"],
    "errors": ["column"],
}
#: Numbers that stay int64 (byte offsets of files over 2 GiB, ids of the frame tables).
INT64 = {"instructions": ["offset"], "stack_frames": ["frame_id", "parent_frame_id", "file_location_id"]}

MODULE = """HloModule m

FileNames
1 "a.py"
FunctionNames
1 "f"
FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=1 end_column=2}
StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY %e (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %a = f32[] negate(%p), metadata={op_name="a" source_line=SL}
  %b = f32[] negate(%a), metadata={op_name="b" stack_frame_id=SF}
  ROOT %c = f32[] custom-call(%b), custom_call_target="t", backend_config="cfg"
}
"""


def _module(tmp_path: Path, source_line: str = "1", frame: str = "1", location: str = "7") -> str:
    p = tmp_path / "module_0001.m.before_optimizations.txt"
    text = MODULE.replace("SL", source_line).replace("SF", frame).replace("line=7 end_line", f"line={location} end_line")
    p.write_text(text)
    return str(p)


def test_schemas_are_narrow() -> None:
    for name, s in SCHEMAS.items():
        if "line" in s.names:
            assert s.field("line").type == pa.int32(), name
    for name, cols in INT32.items():
        for c in cols:
            assert SCHEMAS[name].field(c).type == pa.int32(), (name, c)
    for name, cols in INT64.items():
        for c in cols:
            assert SCHEMAS[name].field(c).type == pa.int64(), (name, c)
    assert SCHEMAS["instructions"].field("backend_config").type == pa.string_view()
    assert SCHEMAS["errors"].field("line").type == pa.int32()


def test_both_readers_emit_the_narrow_types(reader: Callable, tmp_path: Path) -> None:
    d = reader(_module(tmp_path), string_view=True)
    for name in ("modules", "computations", "instructions", "stack_frames", "errors"):
        assert d[name].schema == SCHEMAS[name], name
    ins = d["instructions"]
    assert ins.column("line").type == ins.column("source_line").type == ins.column("stack_frame_id").type == pa.int32()
    assert ins.column("backend_config").type == pa.string_view()
    assert ins.column("backend_config").to_pylist() == [None, None, None, "cfg"]
    assert ins.column("line").to_pylist() == [13, 14, 15, 16]
    # %b's stack frame 1 resolves to FileLocations line 7
    assert ins.column("source_line").to_pylist() == [None, 1, 7, None]
    assert d["stack_frames"].to_pylist()[0]["source_line"] == 7


@pytest.mark.parametrize("column, text", [("source_line", "2147483647"), ("source_line", "-2147483648"),
                                          ("stack_frame_id", "2147483647"), ("stack_frame_id", "-2147483648")])
def test_int32_edges_are_read(reader: Callable, tmp_path: Path, column: str, text: str) -> None:
    kw = {"source_line": text} if column == "source_line" else {"frame": text}
    d = reader(_module(tmp_path, **kw), string_view=True)
    rows = d["instructions"].select(["name", column]).to_pylist()
    name = "a" if column == "source_line" else "b"
    assert [r[column] for r in rows if r["name"] == name] == [int(text)]
    assert d["errors"].num_rows == 0


@pytest.mark.parametrize("column, text", [("source_line", "2147483648"), ("source_line", "-2147483649"),
                                          ("stack_frame_id", "2147483648"), ("source_line", "9" * 25)])
def test_a_metadata_number_past_int32_is_an_error_row(reader: Callable, tmp_path: Path, column: str, text: str) -> None:
    kw = {"source_line": text} if column == "source_line" else {"frame": text}
    p = _module(tmp_path, **kw)
    line_no, name = (14, "a") if column == "source_line" else (15, "b")
    line = Path(p).read_text().split("\n")[line_no - 1]
    col = line.index(f"{column}={text}") + len(column) + 2  # 1-based, at the number's first character
    msg = "metadata number is out of range (at most 2147483647)"
    d = reader(p, on_error="collect", string_view=True)
    assert d["errors"].select(["line", "column", "message", "text"]).to_pylist() == [
        {"line": line_no, "column": col, "message": msg, "text": line}]
    assert name not in d["instructions"].column("name").to_pylist()  # no row
    with pytest.raises(hlodump.ParseError) as e:
        reader(p)
    assert (e.value.path, e.value.line, e.value.column, e.value.message) == (p, line_no, col, msg)


@pytest.mark.parametrize("location, limit", [("2147483648", I32_MAX), ("-2147483649", I32_MAX)])
def test_a_file_location_past_int32_is_an_error_row(reader: Callable, tmp_path: Path, location: str, limit: int) -> None:
    p = _module(tmp_path, location=location)
    d = reader(p, on_error="collect", string_view=True)
    line = Path(p).read_text().split("\n")[7]
    assert d["errors"].select(["line", "column", "message"]).to_pylist() == [
        {"line": 8, "column": line.index("line=") + 6,
         "message": f"stack-frame table number is out of range (at most {limit})"}]
    # the location is not kept: frame 1 resolves to nothing, the row keeps its metadata (none)
    assert d["stack_frames"].to_pylist()[0]["source_line"] is None


def test_defining_source_line_past_int32_is_null(reader: Callable, tmp_path: Path) -> None:
    """A value's instruction text is not a module line: its out-of-range number is a null
    ``defining_source_line`` (as one past int64 was), the edge value is read."""
    seed = (Path(DATA) / "seeds" / "000_d4ec204070c56195.txt").read_text()
    lines = seed.split("\n")
    at = [i for i, s in enumerate(lines) if s.startswith(" from instruction:") and re.search(r"source_line=\d+", s)]
    assert len(at) >= 2
    lines[at[0]] = re.sub(r"source_line=\d+", "source_line=2147483647", lines[at[0]], count=1)
    lines[at[1]] = re.sub(r"source_line=\d+", "source_line=2147483648", lines[at[1]], count=1)
    p = tmp_path / "module_0001.m.tpu_after_optimizations-buffer-assignment.txt"
    p.write_text("\n".join(lines))
    d = reader(str(p), tables=["values"], string_view=True)
    assert d["values"].schema.field("defining_source_line").type == pa.int32()
    got = {r["defining_source_line"] for r in d["values"].select(["defining_instruction", "defining_source_line"]).to_pylist()
           if "source_line=214748364" in r["defining_instruction"]}
    assert got == {I32_MAX, None}


# ------------------------------------------------------------------ more lines than int32 numbers


@pytest.fixture
def line_count_limit() -> Iterator[Callable[[int], None]]:
    """Lower the most lines a file may have (2**31 - 1) for one test, in both readers."""
    core = pytest.importorskip("hlodump._core")
    from hlodump.reference import lines as ref  # (the line limits live with split_lines)

    old_rust, old_ref = None, ref.MAX_LINES

    def set_limit(n: int) -> None:
        nonlocal old_rust
        prev = core._set_max_lines(n)
        old_rust = prev if old_rust is None else old_rust
        ref.MAX_LINES = n

    yield set_limit
    if old_rust is not None:
        core._set_max_lines(old_rust)
    ref.MAX_LINES = old_ref


def test_the_limit_is_int32() -> None:
    core = pytest.importorskip("hlodump._core")
    from hlodump.reference import lines as ref  # (the line limits live with split_lines)

    assert ref.MAX_LINES == I32_MAX
    prev = core._set_max_lines(2**40)  # clamped: never above what int32 numbers
    assert core._set_max_lines(prev) == I32_MAX


@pytest.mark.parametrize("final_newline", [True, False])
def test_a_file_of_more_lines_than_the_limit_is_refused_whole(
        reader: Callable, line_count_limit: Callable[[int], None], tmp_path: Path, final_newline: bool) -> None:
    p = _module(tmp_path)
    text = Path(p).read_text()
    if not final_newline:
        Path(p).write_text(text.rstrip("\n"))
    n = text.count("\n")  # lines of the file, either way
    msg = f"more than {n - 1} lines: line numbers are int32 columns, which number at most {n - 1}"
    line_count_limit(n - 1)
    for mode in ("raise", "collect"):  # no errors row could hold the line: refused in both modes
        with pytest.raises(hlodump.ParseError) as e:
            reader(p, on_error=mode)
        assert (e.value.path, e.value.line, e.value.column, e.value.message) == (p, n, 1, msg), mode
    line_count_limit(n)  # at the limit: read
    assert reader(p)["instructions"].num_rows == 4


def test_the_limit_holds_for_chunked_reads_and_scans(line_count_limit: Callable[[int], None], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", "64")  # chunks of 32 bytes: split on two threads
    p = _module(tmp_path)
    n = Path(p).read_text().count("\n")
    line_count_limit(n - 1)
    with pytest.raises(hlodump.ParseError, match="line numbers are int32 columns"):
        hlodump.read_arrow(p, threads=2)
    with pytest.raises(hlodump.ParseError, match="line numbers are int32 columns"):
        list(hlodump.scan(p, "instructions"))


def test_chunked_line_numbers_are_the_serial_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunk shift of int32 ``line`` columns: a module of many computations, cut in chunks
    (at computation headers) on two threads, has the serial read's line numbers, and they are
    the file's."""
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", "4096")
    comps = []
    for c in range(200):
        body = "".join(f"  %n{k} = f32[] negate(%p), metadata={{op_name=\"n\" source_line={c * 10 + k}}}\n" for k in range(9))
        comps.append(f"%c{c} (p: f32[]) -> f32[] {{\n  %p = f32[] parameter(0)\n{body}  ROOT %r = f32[] negate(%p)\n}}\n\n")
    text = "HloModule m\n\n" + "".join(comps) + "ENTRY %e (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0)\n}\n"
    p = tmp_path / "module_0001.m.before_optimizations.txt"
    p.write_text(text)
    one = hlodump.read_arrow(str(p), threads=1, string_view=True)
    two = hlodump.read_arrow(str(p), threads=2, string_view=True)
    assert two.views["instructions"].column("line").num_chunks > 1  # it was read in chunks
    lines = text.split("\n")
    for table, pattern in [("instructions", r"  (ROOT )?%\w+ = "), ("computations", r"(ENTRY )?%\w+ \(")]:
        want = [i + 1 for i, s in enumerate(lines) if re.match(pattern, s)]
        assert two.views[table].column("line").type == pa.int32()
        assert one[table].column("line").to_pylist() == two[table].column("line").to_pylist() == want, table
    assert two["instructions"].column("source_line").to_pylist() == [
        None if k % 11 in (0, 10) else c * 10 + k % 11 - 1 for c in range(200) for k in range(11)] + [None]
