"""HLO protos (issue 38), reference half: ``*.hlo.pb`` dumps decoded by ``reference/protowire`` and
printed by ``reference/hlo_proto`` as XLA's text, checked against the text twin of the same
compile (tests/data/proto_twins: 10 programs under jax 0.11.2 and 0.12.0.1, written by
``tools/corpus/proto_twins.py``, machine paths neutralised at the same length).

What the proto cannot have is left out of the comparisons, each named where it is: the module
header's config attributes, the computations' order (and so the ordinal ids), backend_config's
JSON key order, line numbers and offsets (those of the printed text)."""

from __future__ import annotations

import collections
import glob
import json
import os
import re

import pytest

from hlodump.reference import hlo_proto as hp
from hlodump.reference.hlo import parse_module
from hlodump.reference.protowire import MAX_DEPTH, ProtoError, decode

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "proto_twins")
# one program per folder with jax's memory_analysis.json (tools/corpus/proto_twins.py); the
# corpus sample beside them (control_flow, spmd, … with jax_analysis.json) is read by
# test_rust_vs_reference like every file of tests/data
PROGRAMS = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(DATA, "jax-*", "*", "memory_analysis.json")))
PROTOS = sorted(p for d in PROGRAMS for p in glob.glob(os.path.join(d, "*.hlo.pb")))


def test_sample_covers_programs_and_releases():
    releases = {os.path.basename(os.path.dirname(p)) for p in PROGRAMS}
    programs = {os.path.basename(p) for p in PROGRAMS}
    assert len(releases) >= 2 and len(programs) >= 8, (releases, programs)
    assert len(PROTOS) == 2 * len(PROGRAMS)  # before and after optimizations


def _json_sorted(line: str) -> str:
    m = re.search(r"backend_config=(\{.*\})$", line)
    if m:
        try:
            return line[:m.start(1)] + json.dumps(json.loads(m.group(1)), sort_keys=True)
        except ValueError:
            pass
    return line


def _text_twin(path: str) -> str:
    return open(path[:-len(".hlo.pb")] + ".txt", encoding="utf-8").read()


# the header attributes that come from the module's config, not from the HloModuleProto
_CONFIG_ATTRS = re.compile(r", (allow_spmd_sharding_propagation_to_(parameters|output)|replica_count|num_partitions|"
                           r"frontend_attributes)=\{[^}]*\}")


@pytest.mark.parametrize("path", PROTOS, ids=lambda p: os.path.relpath(p, DATA))
def test_proto_prints_as_its_text_twin(path):
    m, _, _ = hp.decode_hlo(open(path, "rb").read())
    got = [_json_sorted(x) for x in hp.render_module(m).splitlines()]
    want = _text_twin(path).splitlines()
    want[0] = _CONFIG_ATTRS.sub("", want[0])
    want = [_json_sorted(x) for x in want]
    # every line the same; only the computations' order may differ (XLA walks its in-memory
    # instruction lists, which the proto does not keep)
    assert collections.Counter(got) == collections.Counter(want)
    blocks = lambda lines: [x for x in lines if x.startswith(("%", "ENTRY "))]  # noqa: E731
    assert sorted(blocks(got)) == sorted(blocks(want))


class _Ctx:
    def __init__(self):
        self.rows: dict[str, list[dict]] = collections.defaultdict(list)
        self.errors: list[tuple] = []
        self.file_id = 0
        self.xla_named = True  # (the twins are XLA's files: module_NNNN.…)

    def add(self, table, row):
        self.rows[table].append(row)

    def error(self, *args):
        self.errors.append(args)

    def has_errors(self):
        return bool(self.errors)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _tables_of_text(path: str) -> _Ctx:
    ctx = _Ctx()
    text = _text_twin(path)
    parse_module(_lines(text), ctx, text.encode())
    return ctx


def _tables_of_proto(path: str) -> _Ctx:
    ctx = _Ctx()
    hp.parse(open(path, "rb").read(), ctx)
    return ctx


def _keyed(ctx: _Ctx, table: str) -> collections.Counter:
    """The rows of a table as a multiset, with what the proto cannot have taken out: line, offset,
    ordinal ids replaced by the computation's name, backend_config's JSON key order."""
    comp_names = {r["computation_id"]: r["name"] for r in ctx.rows["computations"]}
    out = collections.Counter()
    for r in ctx.rows[table]:
        r = dict(r)
        for k in ("line", "offset", "file_id", "instruction_id", "module_index"):
            r.pop(k, None)
        if "computation_id" in r:
            r["computation_id"] = comp_names.get(r["computation_id"])
        if table == "modules":
            r["attributes"] = _CONFIG_ATTRS.sub("", ", " + r["attributes"]) if r.get("attributes") else r.get("attributes")
        if table == "instructions" and r.get("attributes"):
            r["attributes"] = _json_sorted(r["attributes"])
        if r.get("backend_config"):
            try:
                r["backend_config"] = json.dumps(json.loads(r["backend_config"]), sort_keys=True)
            except ValueError:
                pass
        out[json.dumps(r, sort_keys=True, default=str)] += 1
    return out


@pytest.mark.parametrize("path", PROTOS, ids=lambda p: os.path.relpath(p, DATA))
def test_proto_tables_equal_the_text_tables(path):
    text, proto = _tables_of_text(path), _tables_of_proto(path)
    assert not text.errors and not proto.errors
    for table in ("computations", "instructions", "stack_frames", "custom_calls"):
        assert _keyed(proto, table) == _keyed(text, table), table
        assert len(proto.rows[table]) == len(text.rows[table])
    # modules: name, is_scheduled, entry_computation_layout; the header's config attributes are
    # not in the proto
    (pm,), (tm,) = proto.rows["modules"], text.rows["modules"]
    for k in ("name", "is_scheduled", "entry_computation_layout"):
        assert pm[k] == tm[k], k
    assert pm["attributes"] == _CONFIG_ATTRS.sub("", ", " + tm["attributes"])[2:] if tm["attributes"] else True


def _after(program: str) -> str:
    return glob.glob(os.path.join(program, "*after_optimizations.hlo.pb"))[0]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: os.path.relpath(p, DATA))
def test_memory_analysis_from_the_proto_alone(program):
    _, ba, _ = hp.decode_hlo(open(_after(program), "rb").read())
    want = json.load(open(os.path.join(program, "memory_analysis.json")))["memory_analysis"]
    assert hp.memory_analysis(ba) == want


_ALLOC = re.compile(r"^allocation (\d+): size (\d+)")
_VALUE = re.compile(r"^ value: <(\d+) ([^ >{]+)(\{[0-9,]*\})?[^>]*> \(size=(\d+),offset=(\d+)\)")


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: os.path.relpath(p, DATA))
def test_assignments_equal_the_buffer_assignment_text(program):
    """Every ``value:`` line of the text buffer assignment is an ``assignments`` row of the proto
    (value id, allocation, instruction, offset, size), and no row more."""
    path = _after(program)
    m, ba, _ = hp.decode_hlo(open(path, "rb").read())
    text = open(path.replace(".hlo.pb", "-buffer-assignment.txt"), encoding="utf-8").read()
    want, sizes = set(), {}
    alloc = None
    for line in text.splitlines():
        if a := _ALLOC.match(line):
            alloc = int(a.group(1))
            sizes[alloc] = int(a.group(2))
        elif v := _VALUE.match(line):
            want.add((alloc, int(v.group(1)), v.group(2), int(v.group(5)), int(v.group(4))))
    got = {(r["allocation"], r["value_id"], r["instruction"], r["offset"], r["size"]) for r in hp.assignment_rows(ba, m)}
    assert got == want
    assert {r["allocation"]: r["size"] for r in hp.allocation_rows(ba, m)} == sizes


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: os.path.relpath(p, DATA))
def test_heap_trace(program):
    """XLA's heap-simulator trace: steps in order, every free of a buffer allocated (or shared)
    before it, sizes those of the logical buffers, instructions of the module."""
    m, ba, _ = hp.decode_hlo(open(_after(program), "rb").read())
    rows = hp.heap_trace_rows(ba)
    # a program without temporaries has no trace (conv, donated, mixed, slicing on CPU)
    assert bool(rows) == bool(ba.get("heap_simulator_traces"))
    assert [r["step"] for r in rows] == list(range(len(rows)))
    names = set(hp._names(m).values())
    live: set[int] = set()
    for r in rows:
        assert r["kind"] in ("alloc", "free", "share_with")
        assert r["instruction"] in names
        if r["kind"] == "free":
            assert r["buffer_id"] in live
            live.discard(r["buffer_id"])
        else:
            live.add(r["buffer_id"])
    assert all(p >= 0 for p in hp.heap_peaks(ba))


def test_some_programs_have_a_heap_trace():
    assert sum(bool(hp.decode_hlo(open(_after(p), "rb").read())[1].get("heap_simulator_traces")) for p in PROGRAMS) >= 8


def test_content_rule():
    for p in PROTOS:
        assert hp.is_hlo_proto(open(p, "rb").read()), p
    for p in (p for d in PROGRAMS for p in glob.glob(os.path.join(d, "*"))):
        if not p.endswith(".hlo.pb"):
            assert not hp.is_hlo_proto(open(p, "rb").read()), p


# ---- the decoder on damaged input: errors with the byte offset, nothing else ----------------


def test_truncated_anywhere_is_an_error_or_a_prefix():
    data = open(PROTOS[0], "rb").read()
    for n in range(0, min(len(data), 3000)):
        try:
            decode(data[:n], "HloProto")
        except ProtoError as e:
            assert 0 <= e.offset <= n and f"at byte {e.offset}" in str(e)


def test_length_bomb_costs_nothing():
    bomb = b"\x0a\xff\xff\xff\xff\x0f"  # field 1, length 2**32 - 1, no bytes
    with pytest.raises(ProtoError) as e:
        decode(bomb, "HloProto")
    assert e.value.offset == 1 and "past the end" in str(e.value)


def test_nested_bomb_is_bounded():
    # ShapeProto.tuple_shapes nested deeper than MAX_DEPTH, each level a valid length
    inner = b""
    for _ in range(MAX_DEPTH + 5):
        inner = b"\x22" + _varint(len(inner)) + inner
    with pytest.raises(ProtoError, match="nested deeper"):
        decode(inner, "ShapeProto")


def test_wrong_wire_type_and_truncated_varint():
    with pytest.raises(ProtoError) as e:
        decode(b"\x0d\x00\x00\x00\x00", "HloProto")  # field 1 as fixed32: not a message
    assert e.value.offset == 0 and "wire type 5" in str(e.value)
    with pytest.raises(ProtoError, match="truncated varint") as e:
        decode(b"\x28\xff\xff", "HloModuleProto")  # field 5 (id): varint cut
    assert e.value.offset == 1
    with pytest.raises(ProtoError, match="groups"):
        decode(b"\x13", "HloProto")  # field 2 (unknown to us) as a proto2 group


def test_unknown_fields_are_skipped_and_counted():
    msg, unknown = decode(b"\x0a\x03abc" + b"\xf8\x07\x01" + b"\x12\x01x", "HloModuleProto")
    assert msg == {"name": "abc", "entry_computation_name": "x"} and unknown == 1


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


# ---- the memory-usage report's proto ---------------------------------------------------------

REPORTS = sorted(glob.glob(os.path.join(DATA, "jax-*", "*", "*-memory-usage-report.pb")))  # all samples


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: os.path.relpath(p, DATA))
def test_memory_report_proto_prints_as_its_text_twin(path):
    from hlodump.reference import memory_report_proto as mr
    from hlodump.reference.protowire import decode as dec

    data = open(path, "rb").read()
    assert mr.is_memory_report_proto(data) and not hp.is_hlo_proto(data)
    m, unknown = dec(data, "MemoryUsageReport")
    assert unknown == 0
    assert mr.render(m) == open(path[:-3] + ".txt", encoding="utf-8").read()


def test_human_readable_bytes():
    from hlodump.reference.memory_report_proto import human_bytes

    assert [human_bytes(n) for n in (0, 1023, 1024, 62464, 1192160, 5 << 30)] == \
        ["0B", "1023B", "1.0KiB", "61.0KiB", "1.14MiB", "5.00GiB"]
