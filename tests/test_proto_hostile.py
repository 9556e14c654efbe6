"""Hostile and damaged HLO protos (issue 49): an error (file, byte offset, what was expected) or,
for a genuinely unknown field number, a note that ``strict=True`` makes an error — never
changed figures. Strings are values, never syntax: a newline or ``}, metadata=…`` in a name, an
op_name or a backend_config cannot add an instruction. Both readers (the Rust core and the
pure-Python reference) agree on every case.

The protos are made by re-encoding a real one (``_encode``, by the reference's schema) with one
thing changed, or by changing one tag's field number in place."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hlodump._core")

import hlodump  # noqa: E402
import hlodump.reference  # noqa: E402
from hlodump.reference import protowire as pw  # noqa: E402
from test_rust_vs_reference import assert_same_tables  # noqa: E402

DATA = Path(__file__).parent / "data" / "proto_twins" / "jax-0.12.0.1" / "loop"
AFTER = DATA / "module_0022.jit_loop.cpu_after_optimizations.hlo.pb"
NAME = "module_0022.jit_loop.cpu_after_optimizations.hlo.pb"


# ---- a protobuf encoder by the reference's schema (only the fields it reads) ----------------

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _encode(m: dict, message: str) -> bytes:
    """``m`` (a decoded message) as protobuf, fields by number, repeated scalars packed."""
    out = bytearray()
    for number, (name, kind) in sorted(pw.SCHEMAS[message].items()):
        if name not in m:
            continue
        repeated, kind = kind.startswith("*"), kind.lstrip("*")
        values = m[name] if repeated else [m[name]]
        if kind.startswith("msg:"):
            for v in values:
                out += _len_field(number, _encode(v, kind[4:]))
        elif kind in ("str", "name", "bytes"):
            for v in values:
                out += _len_field(number, v.encode("utf-8") if isinstance(v, str) else v)
        elif kind in ("f32", "f64"):
            packed = b"".join(struct.pack("<f" if kind == "f32" else "<d", v) for v in values)
            out += _len_field(number, packed) if repeated else _varint(number << 3 | (5 if kind == "f32" else 1)) + packed
        elif repeated:
            out += _len_field(number, b"".join(_varint(int(v)) for v in values))
        else:
            out += _varint(number << 3) + _varint(int(m[name]))
    return bytes(out)


def _proto() -> dict:
    p, _ = pw.decode(AFTER.read_bytes(), "HloProto")
    return p


def _instructions(p: dict) -> list[dict]:
    return [i for c in p["hlo_module"]["computations"] for i in c["instructions"]]


def _read(tmp_path: Path, data: bytes, name: str = NAME, **kw: Any) -> "hlodump.Dump":
    """Both readers on ``data`` written as ``name``: the same tables; the core's returned."""
    f = tmp_path / name
    f.write_bytes(data)
    fast = hlodump.read_arrow(f, on_error="collect", string_view=False, **kw)
    ref = hlodump.reference.read_arrow(f, on_error="collect", string_view=False, **kw)
    assert_same_tables(fast, ref, name)
    return fast


def _figures(d: "hlodump.Dump") -> dict[str, list]:
    return {t: getattr(d, t).drop_columns([c for c in ("line", "offset") if c in getattr(d, t).column_names]).to_pylist()
            for t in ("modules", "computations", "instructions", "allocations", "assignments", "heap_trace")}


def test_a_re_encoded_proto_reads_as_the_original(tmp_path: Path) -> None:
    """The encoder the other tests use keeps every figure (decode == decode of re-encode), and
    what it drops (fields we skip) is no unknown field: no note."""
    orig = _read(tmp_path, AFTER.read_bytes())
    again = _read(tmp_path, _encode(_proto(), "HloProto"), "module_0022.jit_loop.x.after_optimizations.hlo.pb")
    assert _figures(again) == _figures(orig) and orig.instructions.num_rows > 10
    assert orig.notes.num_rows == 0 and orig.errors.num_rows == 0


@pytest.mark.parametrize("field,value", [
    ("op_name", 'x"}\nROOT %evil = f32[] add(%x.1, %x.1), metadata={op_name="y'),
    ("source_file", "a.py\n%evil.2 = f32[9,9]{1,0} parameter(7)"),
])
def test_a_newline_in_metadata_is_a_value(tmp_path: Path, field: str, value: str) -> None:
    orig = _figures(_read(tmp_path, AFTER.read_bytes()))
    p = _proto()
    target = next(i for i in _instructions(p) if i.get("opcode") == "fusion")
    target.setdefault("metadata", {})[field] = value
    target["metadata"].pop("stack_frame_id", None)  # its source is the metadata's, not a frame's
    d = _read(tmp_path, _encode(p, "HloProto"))
    assert d.errors.num_rows == 0
    rows = d.instructions.to_pylist()
    assert len(rows) == len(orig["instructions"]) and not any("evil" in r["name"] for r in rows)
    assert [r[field] for r in rows if r["name"] == target["name"]] == [value]


def test_backend_config_is_a_value(tmp_path: Path) -> None:
    orig = _figures(_read(tmp_path, AFTER.read_bytes()))
    p = _proto()
    target = next(i for i in _instructions(p) if i.get("opcode") == "fusion")
    # not one JSON dict: printed quoted and escaped (XLA's own rule), read back as the bytes
    evil = b'{"a":1}\n  %evil = f32[1000000000]{0} broadcast(%x.1), dimensions={}'
    target["backend_config"] = evil
    d = _read(tmp_path, _encode(p, "HloProto"))
    assert d.errors.num_rows == 0 and d.instructions.num_rows == len(orig["instructions"])
    # one JSON dict whose string holds what would close it and start attributes: kept whole
    target["backend_config"] = b'{"a":"\\"}, metadata={op_name=\\"evil\\"}","b":{"c":"}"}}'
    d = _read(tmp_path, _encode(p, "HloProto"))
    rows = [r for r in d.instructions.to_pylist() if r["name"] == target["name"]]
    assert d.errors.num_rows == 0 and d.instructions.num_rows == len(orig["instructions"])
    assert rows[0]["op_name"] != "evil"


@pytest.mark.parametrize("bad", ["a\nROOT %b", "x y", "", "é", "a}"])
def test_a_name_that_is_not_a_name_is_an_error(tmp_path: Path, bad: str) -> None:
    p = _proto()
    _instructions(p)[3]["name"] = bad
    d = _read(tmp_path, _encode(p, "HloProto"))
    msgs = d.errors.column("message").to_pylist()
    assert len(msgs) == 1 and "(HloInstructionProto.name)" in msgs[0] and "at byte" in msgs[0], msgs
    assert d.instructions.num_rows == 0 and d.allocations.num_rows == 0


def test_invalid_utf8_is_an_error_at_its_byte(tmp_path: Path) -> None:
    p = _proto()
    _instructions(p)[2].setdefault("metadata", {})["op_name"] = "ok"
    data = _encode(p, "HloProto")
    k = data.index(b"\x12\x02ok")  # OpMetadata.op_name = "ok"
    data = data[:k + 3] + b"\xff" + data[k + 4:]
    d = _read(tmp_path, data)
    (e,) = d.errors.to_pylist()
    assert f"at byte {k + 3}: field 2 (OpMetadata.op_name): invalid UTF-8" in e["message"]
    assert e["column"] == k + 4 and d.instructions.num_rows == 0


def test_a_singular_field_twice_is_an_error(tmp_path: Path) -> None:
    p = _proto()
    data = _encode(p, "HloProto")
    module = _encode(p["hlo_module"], "HloModuleProto") + _len_field(1, b"other")
    data = _len_field(1, module) + data[len(_len_field(1, _encode(p["hlo_module"], "HloModuleProto"))):]
    d = _read(tmp_path, data)
    (msg,) = d.errors.column("message").to_pylist()
    assert "field 1 (HloModuleProto.name): a second value of a singular field" in msg


def test_unknown_field_numbers_are_a_note_and_strict_makes_them_an_error(tmp_path: Path) -> None:
    p = _proto()
    module = _encode(p["hlo_module"], "HloModuleProto")
    at = len(_varint(1 << 3 | 2)) + len(_varint(len(module) + 3)) + len(module)
    data = _len_field(1, module + _varint(2000 << 3) + b"\x01")  # field 2000: a newer XLA's
    data += _encode({"buffer_assignment": p["buffer_assignment"]}, "HloProto")
    want = _figures(_read(tmp_path, AFTER.read_bytes()))
    d = _read(tmp_path, data)
    assert d.errors.num_rows == 0 and _figures(d) == want
    (note,) = d.notes.to_pylist()
    assert note["kind"] == "unknown_proto_fields" and note["text"] == "HloModuleProto.2000×1"
    assert note["column"] == at + 1
    for reader in (hlodump.read_arrow, hlodump.reference.read_arrow):
        with pytest.raises(hlodump.ParseError) as e:
            reader(tmp_path / NAME, strict=True)
        assert e.value.column == at + 1 and "strict" in str(e.value)


def _len_tags(data: bytes) -> list[tuple[int, str, int]]:
    """(offset, message, field number) of every tag of a message field in ``data`` (an
    HloProto), walking the messages the schema knows."""
    out: list[tuple[int, str, int]] = []

    def walk(pos: int, end: int, message: str) -> None:
        schema = pw.SCHEMAS[message]
        while pos < end:
            tag_at = pos
            tag, pos = pw._varint(data, pos, end)
            number, wire = tag >> 3, tag & 7
            if wire == 2:
                n, pos = pw._length(data, pos, end)
                kind = schema.get(number, ("", ""))[1].lstrip("*")
                if kind.startswith("msg:"):
                    out.append((tag_at, message, number))
                    walk(pos, pos + n, kind[4:])
                pos += n
            else:
                pos = pw._skip(data, pos, end, wire, tag_at, number)
    walk(0, len(data), "HloProto")
    return out


def test_a_flipped_field_number_never_changes_the_figures_in_silence(tmp_path: Path) -> None:
    """A message field's tag renumbered to a number the message does not have: the message is
    skipped as unknown. That is an error (an id that no longer resolves, a schedule or an
    allocation that lost an entry, a field XLA always writes gone) or, where nothing shows it
    (an instruction's metadata, a layout), the `unknown_proto_fields` note — a damaged number
    and a newer XLA's field look alike — and with strict=True always an error."""
    data = AFTER.read_bytes()
    want = _figures(_read(tmp_path, data))
    tags = [t for t in _len_tags(data) if data[t[0]] < 0x80]  # one-byte tags: same length
    assert len(tags) > 100
    errors = noted = 0
    for at, message, number in tags[:: max(1, len(tags) // 60)]:
        known = set(pw.SCHEMAS[message]) | set(pw.SKIPPED.get(message, ()))
        free = next(n for n in range(1, 16) if n not in known)
        bad = data[:at] + bytes([free << 3 | 2]) + data[at + 1:]
        d = _read(tmp_path, bad)
        if d.errors.num_rows:
            errors += 1
        else:
            assert d.notes.column("kind").to_pylist() == ["unknown_proto_fields"], (message, number, at)
            assert f"{message}.{free}×1" in d.notes.column("text")[0].as_py()
            noted += _figures(d) != want
        with pytest.raises(hlodump.ParseError):
            hlodump.read_arrow(tmp_path / NAME, strict=True)
    # most losses show as an error; the others change figures only beside the note
    assert errors > 2 * noted, (errors, noted)


@pytest.mark.parametrize("case", ["empty", "random", "first_byte", "length_byte", "zeros"])
def test_a_proto_named_hlo_pb_that_is_not_one_is_an_error(tmp_path: Path, case: str) -> None:
    data = AFTER.read_bytes()
    bad = {"empty": b"", "random": os.urandom(300), "first_byte": bytes([data[0] ^ 0x01]) + data[1:],
           "length_byte": data[:1] + b"\x00" + data[2:], "zeros": bytes(64)}[case]
    if case == "random" and bad[0] == 0x0A:
        bad = b"\x0b" + bad[1:]
    d = _read(tmp_path, bad)
    assert d.errors.num_rows == 1 and d.instructions.num_rows == 0, d.errors.to_pylist()
    assert "at byte" in d.errors.column("message")[0].as_py() or "its name ends with .hlo.pb" in d.errors.column("message")[0].as_py()


def test_a_foreign_protobuf_is_not_a_module(tmp_path: Path) -> None:
    """A short string in field 1 and a string in field 2 (an autotune result's shape) is no
    HloModuleProto: not read as a module named 'test'."""
    foreign = _len_field(1, b"test") + _len_field(2, b"cuda_12345") + _len_field(4, b"\x0a\x02ab")
    d = _read(tmp_path, foreign, "module_0001.jit_f.autotune_results.pb")
    assert d.modules.num_rows == 0 and d.files.column("content_kind")[0].as_py() != "hlo_proto"
    d = _read(tmp_path, foreign, "module_0001.jit_f.before_optimizations.hlo.pb")
    assert d.modules.num_rows == 0 and d.errors.num_rows == 1


def test_an_hlo_proto_without_a_module_is_an_error(tmp_path: Path) -> None:
    d = _read(tmp_path, _encode({"buffer_assignment": _proto()["buffer_assignment"]}, "HloProto"))
    assert d.errors.num_rows == 1 and d.allocations.num_rows == 0


def test_a_gzipped_proto_reads_as_the_proto(tmp_path: Path) -> None:
    """``--xla_dump_compress_protos`` writes ``.hlo.pb.gz``: read like the other compressed
    inputs, the same rows; its content not an HLO proto is the same error as a ``.hlo.pb``'s."""
    import gzip

    want = _figures(_read(tmp_path, AFTER.read_bytes()))
    d = _read(tmp_path, gzip.compress(AFTER.read_bytes()), NAME + ".gz")
    assert d.errors.num_rows == 0 and _figures(d) == want
    assert d.files.column("content_kind").to_pylist() == ["hlo_proto"]
    d = _read(tmp_path, gzip.compress(b"\x0a\x04test\x12\x02ab"), NAME + ".gz")
    (msg,) = d.errors.column("message").to_pylist()
    assert "its name ends with .hlo.pb.gz" in msg and d.modules.num_rows == 0
