"""The Rust HLO parser against the reference, cell for cell.

Every HLO module text under tests/data and every hand-made snippet of test_hlo.py (plus a few
broken variants) is read by ``hlodump.read_arrow`` and ``hlodump.reference.read_arrow`` with
``on_error="collect"``; the HLO tables must be equal row for row, and the error rows must sit at
the same (file_id, line). Also: a ≥ 50 MB single-line custom-call body stays a zero-copy view into
the file mapping.
"""

from __future__ import annotations

import base64
import os
import random

import pyarrow as pa
import pytest

pytest.importorskip("hlodump._core")

import hlodump  # noqa: E402
from hlodump import reference  # noqa: E402

import test_hlo  # noqa: E402

TABLES = ("modules", "computations", "instructions", "stack_frames", "custom_calls")


def _rows(table: pa.Table, columns: list[str] | None = None) -> list[dict]:
    if columns is not None:
        table = table.select(columns)
    schema = pa.schema([f.with_type(_large(f.type)) for f in table.schema])
    return table.cast(schema).to_pylist()


def _large(t: pa.DataType) -> pa.DataType:
    if t in (pa.string_view(), pa.string()):
        return pa.large_string()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_large(t.value_field.type)))
    return t


def _diff(name: str, a: list[dict], b: list[dict]) -> str:
    if len(a) != len(b):
        head = f"{name}: {len(a)} rust rows vs {len(b)} reference rows"
    else:
        head = f"{name}:"
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            cols = [k for k in x if x[k] != y.get(k)]
            detail = "\n".join(f"  {k}: rust={_short(x[k])!r}\n  {' ' * len(k)}  ref ={_short(y.get(k))!r}"
                               for k in cols)
            return f"{head} first mismatch at row {i}:\n{detail}"
    return head + " (extra rows at the end)"


def _short(v):
    if isinstance(v, str) and len(v) > 300:
        return v[:150] + f"…[{len(v)} chars]…" + v[-100:]
    return v


def assert_same(path: str, strict_too: bool = False) -> None:
    rust = hlodump.read_arrow(path, on_error="collect")
    ref = reference.read_arrow(path, on_error="collect")
    for name in TABLES:
        a, b = _rows(getattr(rust, name)), _rows(getattr(ref, name))
        assert a == b, _diff(name, a, b)
    a = _rows(rust.errors, ["file_id", "line"])
    b = _rows(ref.errors, ["file_id", "line"])
    assert a == b, _diff("errors", a, b)
    if strict_too and b:
        from hlodump.exceptions import ParseError

        with pytest.raises(ParseError) as e_ref:
            reference.read_arrow(path)
        with pytest.raises(ParseError) as e_rust:
            hlodump.read_arrow(path)
        assert e_rust.value.line == e_ref.value.line


@pytest.mark.parametrize("path", test_hlo.HLO_FILES, ids=test_hlo._id)
def test_corpus_file(path):
    assert_same(path)


BROKEN = {
    "unterminated_constant": test_hlo.MULTILINE_CONSTANT.replace("  })\n", "  }\n"),
    "garbage": test_hlo.SHORT_PARSABLE.replace(
        "  y = f32[] parameter(1)\n", "  y = f32[] parameter(1)\n  this is not HLO\n") + "garbage at column 0\n",
    "no_close": "HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1)\n%x (a: f32[]) -> f32[] {\n"
                "  ROOT %a = f32[] parameter(0)\n  ROOT %b = f32[] parameter(0)\n}, bad\n",
    "no_header": "\n%x {\n}\nHloModule a b\nHloModule m, x={\n",
    "second_header": "HloModule m, =1\nHloModule m, a={1}, b=\"q\", entry_computation_layout={(f32[])->f32[]}\n"
                     "HloModule again\n7 \"x\"\nFileNames\n1 \"a\\303\\251\"\n1 {bad}\nStackFrames\n"
                     "1 {file_location_id=1 parent_frame_id=1}\n",
    "bad_instr": "HloModule m\n\nENTRY e {\n  %a = f32[] negate(%b), metadata={op_name=\"x\" !}\n"
                 "  %c = f32[] negate(%b) junk\n  %d = f32[] tuple(\"a/*b\", c*/)\n"
                 "  %e = f32[] custom-call(), backend_config=\"{\\\"body\\\": \\\"TUzvUg==\\\"}\"\n"
                 "  %f = f32[] custom-call(), backend_config={\"k\": {\"name\": \"n\"}, \"k\": 1}, "
                 "metadata={source_line=+1_0 stack_frame_id=x}\n}\n",
    "crlf_bad_utf8": b"HloModule m\r\n\r\nENTRY e {\r\n  %c = f32[2] constant({\r\n\xff\r\n 1, 2 })\r\n"
                     b"  ROOT %n = f32[2] negate(%c)\xfe\r\n}\r\n",
}

# Numbers by ASCII byte rules, range-checked into their column's type — int64, int32 for source
# positions and stack_frame_id (issue 26) — (error at the number's first character, no row):
# classes the mutation fuzzer found (test_fuzz_differential).
_FRAMES = ("HloModule m\n\nFileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\nFileLocations\n"
           "1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=2}\n"
           "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n\nENTRY %e () -> f32[] {\n"
           "  ROOT %c = f32[] constant(1), metadata={op_name=\"x\" stack_frame_id=1}\n}\n")
NUMBERS = {
    # a 25-digit FileNames id: Rust rejected the row, the reference took it (and crashed in Arrow)
    "huge_file_names_id": _FRAMES.replace('1 "a.py"', "9" * 25 + ' "a.py"'),
    "huge_location_line": _FRAMES.replace("line=3 end_line", "line=-" + "9" * 30 + " end_line"),
    "location_int64_edges": _FRAMES.replace("line=3 end_line=3", "line=-9223372036854775808 end_line=9223372036854775807"),
    "location_int32_edges": _FRAMES.replace("line=3 end_line=3 column=1 end_column=2",
                                            "line=-2147483648 end_line=2147483647 column=0 end_column=2147483647"),
    "location_past_int32": _FRAMES.replace("column=1 end_column=2", "column=1 end_column=2147483648"),
    "location_id_past_int32": _FRAMES.replace("\n1 {file_name_id=1", "\n2147483648 {file_name_id=1"),
    "huge_parent_frame": _FRAMES.replace("parent_frame_id=1}", "parent_frame_id=9223372036854775808}"),
    "over_4300_digits": _FRAMES.replace("1 {file_location_id=1", "1" * 5000 + " {file_location_id=1"),
    # leading zeros are fine (the value fits)
    "zero_padded_ids": _FRAMES.replace("\n1 {file_location_id=1", "\n" + "0" * 30 + "1 {file_location_id=01"),
    # non-ASCII digits are not digits (Python's \d / isdigit / int() take them)
    "arabic_indic_digit_row": _FRAMES.replace("1 \"f\"", "\u0661 \"f\""),
    "superscript_digit_row": _FRAMES.replace("StackFrames\n1 {", "StackFrames\n\u00b2 {"),
    # metadata numbers: ASCII -?[0-9]+ only; out of range is an error, other forms are null
    "huge_source_line": _FRAMES.replace("stack_frame_id=1}", "source_line=" + "9" * 25 + "}"),
    "huge_stack_frame_id_first": _FRAMES.replace("stack_frame_id=1}", "stack_frame_id=2" + "0" * 19 + " source_line=" + "9" * 20 + "}"),
    "metadata_number_forms": _FRAMES.replace("stack_frame_id=1}", "source_line=+1_0 stack_frame_id=\u0661}"),
    "metadata_int32_edges": _FRAMES.replace("stack_frame_id=1}", "source_line=2147483647 stack_frame_id=-2147483648}"),
    "source_line_past_int32": _FRAMES.replace("stack_frame_id=1}", "source_line=2147483648}"),
    "stack_frame_id_past_int32": _FRAMES.replace("stack_frame_id=1}", "stack_frame_id=2147483648}"),
    "huge_number_on_continued_constant": ("HloModule m\n\nENTRY e {\n  %c = f32[2] constant({\n 1, 2 }), "
                                          "metadata={source_line=" + "9" * 20 + "}\n}\n"),
}


SNIPPETS = {
    "escapes": test_hlo.ESCAPES,
    "index_comments": test_hlo.INDEX_COMMENTS,
    "variants": test_hlo.VARIANTS,
    "short_parsable": test_hlo.SHORT_PARSABLE,
    "multiline_constant": test_hlo.MULTILINE_CONSTANT,
    **BROKEN,
    **NUMBERS,
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet(name, tmp_path):
    text = SNIPPETS[name]
    p = tmp_path / "module_0001.test.before_optimizations.txt"
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    assert_same(str(p), strict_too=True)


def _mapped_ranges(path: str) -> list[tuple[int, int]]:
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() == real:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps")
def test_huge_custom_call_body_is_a_view_into_the_mapping(tmp_path):
    rnd = random.Random(7)
    payload = b"ML\xefR" + rnd.randbytes(38_000_000)
    body = base64.b64encode(payload).decode()
    assert len(body) >= 50_000_000
    cfg = '{"custom_call_config": {"body": "%s", "serialization_format": 1}, "kernel_name": "splash"}' % body
    path = tmp_path / "module_0001.big.before_optimizations.txt"
    with open(path, "w") as f:
        f.write("HloModule big\n\nENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
                '  ROOT %k = f32[8]{0} custom-call(%p), custom_call_target="tpu_custom_call", '
                "backend_config=")
        f.write(cfg)
        f.write("\n}\n")
    del body
    d = hlodump.read_arrow(str(path), mmap=True)
    arr = d.views.instructions.column("backend_config").chunk(0)
    assert arr.type == pa.string_view()
    row = d.views.instructions.column("name").to_pylist().index("k")
    # The view's data buffer: a string_view array has [validity, views, data buffers...].
    views = arr.buffers()[1]
    import struct

    raw = views.to_pybytes()[16 * (arr.offset + row): 16 * (arr.offset + row) + 16]
    length, _prefix, buf_index, offset = struct.unpack("<i4sii", raw)
    assert length == len(cfg)
    data = arr.buffers()[2 + buf_index]
    start = data.address + offset
    ranges = _mapped_ranges(str(path))
    assert ranges, "the file is not mapped"
    assert any(lo <= start and start + length <= hi for lo, hi in ranges), (hex(start), ranges)
    [c] = d.custom_calls.to_pylist()
    assert (c["format"], c["decoded_length"], c["body_length"], c["kernel_name"]) == (
        "mlir_bytecode", len(payload), len(base64.b64encode(payload)), "splash")
