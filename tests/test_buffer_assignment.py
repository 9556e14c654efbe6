"""Buffer-assignment family (FORMATS.md §2): every real file, plus hand-made variants.

The per-file tests check facts the dump states about itself, counted from the raw text with
simple regular expressions that are independent of the parser (allocation count and totals, value
counts, positions/uses per block, schedule length, live-range bounds, peak and tree sums, report
totals). They take the ``reader`` fixture (tests/conftest.py), so they run for every
implementation of ``read_arrow``.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from hlodump.exceptions import ParseError
from hlodump.reference.buffer_assignment import human_bytes, parse_value_ref

DATA = Path(__file__).resolve().parent / "data"

SUFFIXES = {
    "-buffer-assignment.txt": "allocations",
    "-buffer-assignment-values.txt": "values",
    "-live-range.txt": "live_range",
    "-memory-usage-report.txt": "report",
}
SEEDS = ["000_d4ec204070c56195.txt", "001_0cb419b3147a3cb6.txt", "003_edd6dfbd09ed8e41.txt",
         "004_58de9a4b501a9eb8.txt"]


def _family_files() -> list[Path]:
    files = [DATA / "seeds" / s for s in SEEDS]
    corpus = DATA / "corpus"
    files += sorted(p for p in corpus.rglob("*.txt") if p.name.endswith(tuple(SUFFIXES)))
    return files


FILES = _family_files()
IDS = [str(p.relative_to(DATA)) for p in FILES]


def _suffix(path: Path) -> str | None:
    for s in sorted(SUFFIXES, key=len, reverse=True):
        if path.name.endswith(s):
            return s
    return None


def _sibling(path: Path, suffix: str) -> Path | None:
    """The file of the same module with another suffix (split files of jax 0.10.2)."""
    own = _suffix(path)
    if own is None:
        return None
    other = path.with_name(path.name[: -len(own)] + suffix)
    return other if other.exists() else None


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8").replace("\r\n", "\n")


def _lines(path: Path) -> list[str]:
    return _text(path).split("\n")


def _rows(dump: Any, table: str, file_id: int | None = None) -> list[dict[str, Any]]:
    rows = dump[table].to_pylist()
    return rows if file_id is None else [r for r in rows if r["file_id"] == file_id]


def _total(dump: Any, section: str, key: str, file_id: int | None = None) -> list[int]:
    return [r["value"] for r in _rows(dump, "totals", file_id)
            if r["section"] == section and r["key"] == key]


# A value header at the end of a line: alone (new XLA) or glued after ' from instruction: …'.
HEADER_AT_END = re.compile(
    r"<(\d+) [A-Za-z_][\w.\-]*(?:\{[\d,]*\})?(?: \(phi\))?(?: @\d+)?>$", re.M)


def _hlo_parser_available() -> bool:
    """defining_opcode/op_name need the HLO reference parser (written separately)."""
    try:
        from hlodump.reference.hlo import parse_instruction  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- the data set


def test_the_family_files_are_all_here() -> None:
    kinds = Counter(_suffix(p) for p in FILES if "corpus" in p.parts)
    # 0.4.26 + 0.10.2: 97 / 52 / 52 / 52; each other release: 11 modules (control_flow 6, spmd 5)
    # plus one each in 0.6.2/indexing and 0.8.3/transformer; reports from jax 0.4.35 on (7 releases);
    # 0.11.2 and 0.12.0.1: 24 modules each, all four files (0.10.2's layout)
    assert len(FILES) == 448 + 2 * 4 * 24
    assert kinds == {"-buffer-assignment.txt": 97 + 10 * 11 + 2 + 48, "-buffer-assignment-values.txt": 52 + 48,
                     "-live-range.txt": 52 + 48, "-memory-usage-report.txt": 52 + 7 * 11 + 2 + 48}


# --------------------------------------------------------------------------- per file


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_file_parses_strictly(reader: Any, path: Path) -> None:
    dump = reader(str(path))  # on_error="raise": any unrecognised line raises
    assert dump.errors.num_rows == 0
    (f,) = dump.files.to_pylist()
    assert f["parsed"] is True
    text = _text(path)
    expected_tables = {
        "BufferAssignment:": "allocations", "Used values:": "values",
        "HloLiveRange (max": "schedule", "Memory Space:": "memory_report",
    }
    for marker, table in expected_tables.items():
        if marker in text:
            assert dump[table].num_rows > 0, table


@pytest.mark.parametrize("path", [p for p in FILES if "BufferAssignment:" in _text(p)],
                         ids=lambda p: str(p.relative_to(DATA)))
def test_allocations(reader: Any, path: Path) -> None:
    lines = _lines(path)
    raw_alloc = [l for l in lines if l.startswith("allocation ")]
    raw_values = [l for l in lines if l.startswith(" value: ")]
    values_file = _sibling(path, "-buffer-assignment-values.txt")
    dump = reader([str(path), str(values_file)] if values_file else str(path))

    allocs = _rows(dump, "allocations", 0)
    assert len(allocs) == len(raw_alloc) > 0
    assert [a["allocation"] for a in allocs] == list(range(len(allocs)))
    raw_sizes = [int(re.match(r"allocation \d+: size (\d+)", l).group(1)) for l in raw_alloc]
    assert [a["size"] for a in allocs] == raw_sizes

    assignments = _rows(dump, "assignments", 0)
    assert len(assignments) == len(raw_values)
    by_alloc = {a["allocation"]: a for a in allocs}
    for v in assignments:
        assert v["offset"] + v["size"] <= by_alloc[v["allocation"]]["size"]
    # Value lines belong to the nearest allocation line above them.
    owner, expected = None, []
    for l in lines:
        if l.startswith("allocation "):
            owner = int(l.split()[1].rstrip(":"))
        elif l.startswith(" value: "):
            expected.append(owner)
    assert [v["allocation"] for v in assignments] == expected

    # Total bytes used = sum of allocation sizes (combined file, or the module's -values file).
    values_id = 1 if values_file else 0
    (total,) = _total(dump, "buffer_assignment", "total_bytes_used", values_id)
    raw_total = re.search(r"^Total bytes used: (\d+) ", _text(values_file or path), re.M)
    assert total == int(raw_total.group(1)) == sum(raw_sizes)

    # The value refs under allocations and the value blocks are the same set.
    blocks = {v["value_id"] for v in _rows(dump, "values", values_id)}
    assert {v["value_id"] for v in assignments} == blocks


@pytest.mark.parametrize("path", [p for p in FILES if "Used values:" in _text(p)],
                         ids=lambda p: str(p.relative_to(DATA)))
def test_values(reader: Any, path: Path) -> None:
    text = _text(path)
    dump = reader(str(path))
    values = _rows(dump, "values")
    headers = HEADER_AT_END.findall(text)
    assert [v["value_id"] for v in values] == [int(h) for h in headers]
    assert len(values) == text.count("\n from instruction:")

    # Positions / uses per block, counted on the raw lines: a block runs from one header to the
    # next; lines starting with two spaces count as positions until ' uses:', then as uses.
    raw_blocks: list[tuple[int, int]] = []
    mode = None
    for line in text.split("\n")[text.split("\n").index("Used values:") + 1:]:
        if line.startswith("<"):
            raw_blocks.append((0, 0))
            mode = "positions"
        elif line == " uses:" or line == " uses are not initialized yet.":
            mode = "uses"
        elif line.startswith(" from instruction:"):
            mode = None
            if HEADER_AT_END.search(line):
                raw_blocks.append((0, 0))
                mode = "positions"
        elif line.startswith("  ") and line != "  (none)" and mode and raw_blocks:
            p, u = raw_blocks[-1]
            raw_blocks[-1] = (p + 1, u) if mode == "positions" else (p, u + 1)
        elif not line.strip():
            if raw_blocks and mode is None:
                break
    assert [(len(v["positions"]), len(v["uses"])) for v in values] == raw_blocks
    assert sum(not v["uses_initialized"] for v in values) == text.count(
        "\n uses are not initialized yet.")

    for v in values:
        # The first position is the defining one: the header's instruction.
        assert v["positions"][0]["instruction"] == v["instruction"]
        assert v["defining_instruction"].startswith("%" + v["instruction"] + " = ")
        assert "<" + str(v["value_id"]) + " " not in v["defining_instruction"]


@pytest.mark.parametrize("path", [p for p in FILES if "\nHloLiveRange" in "\n" + _text(p)],
                         ids=lambda p: str(p.relative_to(DATA)))
def test_live_range(reader: Any, path: Path) -> None:
    text = _text(path)
    dump = reader(str(path))
    maximum = int(re.search(r"^HloLiveRange \(max (\d+)\):$", text, re.M).group(1))
    assert _total(dump, "live_range", "max") == [maximum]

    schedule = _rows(dump, "schedule")
    assert [s["position"] for s in schedule] == list(range(maximum))
    assert len(schedule) == len(re.findall(r"^    \d+:\S+$", text, re.M))

    ranges = _rows(dump, "live_ranges")
    assert len(ranges) == len(re.findall(r"^    \S+\{[\d,]*\}:\d+-\d+$", text, re.M)) > 0
    for r in ranges:
        assert 0 <= r["start"] <= r["end"] <= maximum
        assert r["buffer"] == r["instruction"] + r["shape_index"]

    peak = _rows(dump, "peak")
    raw_peak = re.findall(r"^    \S+: (\d+) bytes(?: \(cumulative: (\d+) bytes\))?$", text, re.M)
    assert [p["bytes"] for p in peak] == [int(b) for b, _ in raw_peak]
    assert len(peak) > 0
    running = 0
    for p, (_, printed) in zip(peak, raw_peak):
        running += p["bytes"]
        assert p["cumulative_bytes"] == running
        assert p["cumulative_is_printed"] == bool(printed)
    (time_,) = re.findall(r"^  Live ranges at (\d+) \(peak\):$", text, re.M)
    assert _total(dump, "live_range", "peak_time") == [int(time_)]
    assert {p["time"] for p in peak} == {int(time_)}

    tree = _rows(dump, "peak_breakdown")
    header = re.search(r"^  Stack trace breakdown for peak usage: ([\d ]+) bytes$", text, re.M)
    if header is None:
        assert tree == []
        return
    stated = int(header.group(1).replace(" ", ""))
    roots = [t for t in tree if t["depth"] == 0]
    assert _total(dump, "peak_breakdown", "total") == [stated]
    assert stated == peak[-1]["cumulative_bytes"] == sum(t["total_bytes"] for t in roots)
    assert len(tree) == len(re.findall(r", remaining: [\d ]+ bytes\)$", text, re.M))
    assert [t["row"] for t in tree] == list(range(len(tree)))
    children = defaultdict(list)
    for t in tree:
        if t["parent_row"] is not None:
            assert tree[t["parent_row"]]["depth"] == t["depth"] - 1
            children[t["parent_row"]].append(t)
    for t in tree:  # total = current + totals of the children (§2.7)
        assert t["total_bytes"] == t["current_bytes"] + sum(
            c["total_bytes"] for c in children[t["row"]])
    assert tree[-1]["remaining_bytes"] == 0


@pytest.mark.parametrize("path", [p for p in FILES if _text(p).startswith("Memory Space:")],
                         ids=lambda p: str(p.relative_to(DATA)))
def test_memory_report(reader: Any, path: Path) -> None:
    text = _text(path)
    allocations_file = _sibling(path, "-buffer-assignment.txt")
    assert allocations_file is not None
    dump = reader([str(path), str(allocations_file)])
    report = _rows(dump, "memory_report", 0)
    allocs = _rows(dump, "allocations", 1)
    assignments = _rows(dump, "assignments", 1)

    raw_totals = {int(c): int(t) for c, t in re.findall(
        r"^Memory Space: .* \(color=(\d+)\)\nTotal bytes: (\d+) ", text, re.M)}
    totals = {r["color"]: r["value"] for r in _rows(dump, "totals", 0)
              if r["key"] == "total_bytes"}
    assert totals == raw_totals
    for color, total in totals.items():
        assert total == sum(a["size"] for a in allocs if a["color"] == color)

    raw_rows = re.findall(r"^ +\S+\( *\d+%\); .*$", text, re.M)
    assert len(report) == len(raw_rows)
    assert sum(r["used_by_n_values"] for r in report) == sum(
        int(x) for x in re.findall(r"^ +\S+\( *\d+%\); +\S+; +\d+; +(\d+); ", text, re.M))

    # Table t of a color describes that color's allocation of rank t (size desc, index asc):
    # every row's offset holds exactly used_by_n_values of its values.
    tables = defaultdict(list)
    for r in report:
        tables[(r["color"], r["table"])].append(r)
    assert len({t for _, t in tables}) == text.count("  cumulative_size;")
    for (color, t), rows in tables.items():
        ranked = sorted((a for a in allocs if a["color"] == color),
                        key=lambda a: (-a["size"], a["allocation"]))
        index = ranked[t]["allocation"]
        per_offset = Counter(v["offset"] for v in assignments if v["allocation"] == index)
        for r in rows:
            assert per_offset[r["offset"]] == r["used_by_n_values"]
        assert [r["table"] for r in rows] == [t] * len(rows)
        cumulative = [r["cumulative_bytes"] for r in rows]
        assert cumulative == sorted(cumulative)
    rest = _total(dump, "memory_report", "rest_values", 0)
    assert rest == [int(n) for n in re.findall(r"^  The rest (\d+) values", text, re.M)]


# --------------------------------------------------------------------------- known values


def test_seed_000_known_values(reader: Any) -> None:
    dump = reader(str(DATA / "seeds" / SEEDS[0]))
    allocs = _rows(dump, "allocations")
    a12 = allocs[12]
    assert (a12["allocation"], a12["size"], a12["is_preallocated_temp"], a12["color"]) == (
        12, 134266912, True, 0)
    assert a12["flags"] == "preallocated-temp"
    assert sum(v["allocation"] == 12 for v in _rows(dump, "assignments")) == 5
    assert allocs[11]["color"] == 2 and allocs[13]["color"] == 1
    a3 = allocs[3]
    assert (a3["parameter"], a3["parameter_shape"], a3["parameter_shape_index"]) == (
        2, "bf16[8,2048,128]", "{}")
    a2 = allocs[2]
    assert (a2["is_output"], a2["output_shape"], a2["is_maybe_live_out"]) == (
        True, "f32[8,2048,128]", True)
    assert _total(dump, "buffer_assignment", "total_bytes_used") == [230870056]
    assert sum(a["size"] for a in allocs) == 230870056
    peak = _rows(dump, "peak")
    assert {p["time"] for p in peak} == {12}
    first = peak[0]
    assert (first["buffer"], first["instruction"], first["shape_index"], first["bytes"]) == (
        "fusion.5{1}", "fusion.5", "{1}", 134217728)
    assert peak[-1]["cumulative_bytes"] == 184680476
    assert len(_rows(dump, "values")) == 24
    assert len(_rows(dump, "schedule")) == 15
    v63 = next(v for v in _rows(dump, "values") if v["value_id"] == 63)
    assert v63["shape_index"] == "{0}" and v63["color"] == 1
    assert v63["positions"] == [{"instruction": "copy-start.2", "shape_index": "{0}"},
                                {"instruction": "copy-done.2", "shape_index": "{}"}]
    assert v63["uses"] == [{"instruction": "copy-done.2", "operand": 0, "shape_index": "{0}"},
                           {"instruction": "fusion", "operand": 0, "shape_index": "{}"}]


def test_seed_003_long_lines(reader: Any) -> None:
    dump = reader(str(DATA / "seeds" / SEEDS[2]))
    long_ones = [v for v in _rows(dump, "values") if len(v["defining_instruction"]) > 10_000]
    assert len(long_ones) == 5
    assert len({v["defining_instruction"] for v in long_ones}) == 1


def test_old_xla_glued_headers(reader: Any) -> None:
    path = (DATA / "corpus" / "jax-0.4.26" / "control_flow"
            / "module_0006.jit_branches.cpu_after_optimizations-buffer-assignment.txt")
    dump = reader(str(path))
    values = _rows(dump, "values")
    assert [(v["value_id"], v["line"]) for v in values] == [
        (38, 18), (39, 23), (40, 28), (41, 35), (42, 40), (43, 46)]
    assert values[0]["defining_instruction"] == "%Arg_0.1 = f32[4]{0} parameter(0)"
    assert values[5]["instruction"] == "tuple.35" and values[5]["shape_index"] == "{}"
    if _hlo_parser_available():
        assert [(v["defining_opcode"], v["defining_op_name"]) for v in values[1:3]] == [
            ("parameter", None), ("fusion", "jit(branches)/jit(main)/select_n")]
    peak = _rows(dump, "peak")
    assert [(p["buffer"], p["shape_index"], p["bytes"], p["cumulative_bytes"],
             p["cumulative_is_printed"]) for p in peak[:3]] == [
        ("Arg_0.1", "", 16, 16, False), ("Arg_2.3", "", 4, 20, False),
        ("fusion.1", "", 16, 36, False)]


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize("text,expected", [
    ("0B", 0), ("12B", 12), ("576B", 576), ("1023B", 1023),
    ("51.1KiB", 52326),           # 52326.4
    ("168.5KiB", 172544),         # exact
    ("512.0KiB", 524288), ("4.0KiB", 4096),
    ("4.00MiB", 4194304),
    ("220.17MiB", 230864978),     # 230864977.92
    ("101.02MiB", 105927148),     # 105927147.52
    ("17.77MiB", 18633196),       # 18633195.52
    ("1.5B", 2), ("2.5B", 3),     # half up, not half even
    ("0.05KiB", 51),              # 51.2
    ("1.00GiB", 1 << 30), ("2.00TiB", 2 << 40), ("1.00PiB", 1 << 50), ("1.00EiB", 1 << 60),
    ("-2.0KiB", -2048), ("-1.5B", -2),
])
def test_human_bytes(text: str, expected: int) -> None:
    assert human_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "12", "4 MiB", "MiB", "1.2.3KiB", "4.00mib", "4.00KB",
                                  " 4B", "4B ", "+4B"])
def test_human_bytes_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        human_bytes(text)


def test_parse_value_ref() -> None:
    assert parse_value_ref("<5 add.35 @0>") == {
        "value_id": 5, "instruction": "add.35", "shape_index": "{}", "is_phi": False, "color": 0}
    assert parse_value_ref("<63 copy-start.2{0} @1>") == {
        "value_id": 63, "instruction": "copy-start.2", "shape_index": "{0}", "is_phi": False,
        "color": 1}
    assert parse_value_ref("<131 arg_tuple.5{1} (phi) @0>")["is_phi"] is True
    assert parse_value_ref("<7 x.1{0,2} (phi)>") == {
        "value_id": 7, "instruction": "x.1", "shape_index": "{0,2}", "is_phi": True, "color": 0}
    assert parse_value_ref("<8 y>")["color"] == 0
    for bad in ["<5 add.35 @0", "5 add.35 @0>", "<5 add.35 @0> ", "<x add @0>", "<5  add @0>",
                "<5 add {0} @0>", "<5 add @>", "<5 add{a} @0>", ""]:
        assert parse_value_ref(bad) is None, bad


# --------------------------------------------------------------------------- hand-made snippets


def _write(tmp_path: Path, text: str, name: str = "snippet.txt", crlf: bool = False) -> str:
    data = text.replace("\n", "\r\n") if crlf else text
    p = tmp_path / name
    p.write_bytes(data.encode("utf-8"))
    return str(p)


COMBINED = """\
BufferAssignment:
allocation 0: size 1024, color 1, parameter 0, shape |(f32[2], s32[])| at ShapeIndex {0}, maybe-live-out:
 value: <3 p.1{0} @1> (size=8,offset=0): f32[2]{0:S(1)}
 value: <9 w.2{0} (phi) @1> (size=8,offset=512): f32[2]{0:S(1)}
allocation 1: size 0, color 1, preallocated-temp:
allocation 2: size 168, output shape is |(f32[], f32[256,1024], /*index=5*/f32[256,256])|, maybe-live-out:
 value: <10 t{} @0> (size=24,offset=0): (f32[], f32[256,1024], /*index=5*/f32[256,256])
allocation 3: size 4, constant:
 value: <11 c @0> (size=4,offset=0): s32[]
allocation 4: size 4, thread-local:
 value: <12 n> (size=4,offset=0): s32[]

Total bytes used: 1200 (1.2KiB)

Used values:
<3 p.1{0} @1>
 positions:
  p.1 {0}
  w.2 {0}
 uses:
  add.1, operand 0
  tuple.2, operand 1 {0,1}
 from instruction: %p.1 = (f32[2]{0}, s32[]) parameter(0)
<9 w.2{0} (phi) @1>
 positions:
  w.2 {0}
 uses:
 from instruction:%w.2 = (f32[2]{0}, s32[]) while(%p.1), condition=%c, body=%b
<10 t{} @0>
 positions:
  t {}
 uses:
  (none)
 from instruction: %t = (f32[], f32[256,1024]) tuple(%a, %b)<11 c @0>
 positions:
  c
 uses are not initialized yet.
 from instruction: %c = s32[] constant(7)
<12 n>
 positions:
  n
 uses:
 from instruction: %n = s32[] add(%x, %y)


HloLiveRange (max 4):
  InstructionSequence:
    0:p.1
    1:c
    2:w.2
    3:t
  BufferLiveRange:
    p.1{0}:0-4
    t{}:3-4
  Live ranges at 3 (peak):
    p.1{0}: 8 bytes (cumulative: 8 bytes)
    t{}: 24 bytes (cumulative: 32 bytes)
"""


def _check_combined(dump: Any) -> None:
    assert dump.errors.num_rows == 0
    allocs = _rows(dump, "allocations")
    a0 = allocs[0]
    assert (a0["color"], a0["parameter"], a0["parameter_shape"], a0["parameter_shape_index"],
            a0["is_maybe_live_out"], a0["is_output"]) == (1, 0, "(f32[2], s32[])", "{0}", True,
                                                          False)
    assert a0["flags"] == ("color 1, parameter 0, shape |(f32[2], s32[])| at ShapeIndex {0}, "
                           "maybe-live-out")
    assert allocs[1]["size"] == 0 and allocs[1]["is_preallocated_temp"]
    assert allocs[2]["output_shape"] == "(f32[], f32[256,1024], /*index=5*/f32[256,256])"
    assert allocs[3]["is_constant"] and allocs[4]["is_thread_local"]
    assert allocs[4]["flags"] == "thread-local" and allocs[4]["parameter"] is None
    asg = _rows(dump, "assignments")
    assert [(a["allocation"], a["value_id"], a["shape_index"], a["is_phi"], a["color"],
             a["offset"], a["size"]) for a in asg] == [
        (0, 3, "{0}", False, 1, 0, 8), (0, 9, "{0}", True, 1, 512, 8), (2, 10, "{}", False, 0, 0, 24),
        (3, 11, "{}", False, 0, 0, 4), (4, 12, "{}", False, 0, 0, 4)]
    assert asg[2]["shape"] == "(f32[], f32[256,1024], /*index=5*/f32[256,256])"
    assert _total(dump, "buffer_assignment", "total_bytes_used") == [1200]

    values = {v["value_id"]: v for v in _rows(dump, "values")}
    assert list(values) == [3, 9, 10, 11, 12]
    v3 = values[3]
    assert v3["positions"] == [{"instruction": "p.1", "shape_index": "{0}"},
                               {"instruction": "w.2", "shape_index": "{0}"}]
    assert v3["uses"] == [{"instruction": "add.1", "operand": 0, "shape_index": "{}"},
                          {"instruction": "tuple.2", "operand": 1, "shape_index": "{0,1}"}]
    assert v3["defining_instruction"] == "%p.1 = (f32[2]{0}, s32[]) parameter(0)"
    assert values[9]["is_phi"] and values[9]["uses"] == [] and values[9]["uses_initialized"]
    # no space after "from instruction:" (oldest XLA)
    assert values[9]["defining_instruction"].startswith("%w.2 = ")
    assert values[10]["uses"] == [] and values[10]["uses_initialized"]
    assert values[10]["defining_instruction"] == "%t = (f32[], f32[256,1024]) tuple(%a, %b)"
    assert values[10]["line"] == 29 and values[11]["line"] == 34  # glued header: same line
    assert values[11]["uses"] == [] and values[11]["uses_initialized"] is False
    assert values[12]["color"] == 0 and values[12]["line"] == 39

    assert [s["instruction"] for s in _rows(dump, "schedule")] == ["p.1", "c", "w.2", "t"]
    assert [(r["buffer"], r["start"], r["end"]) for r in _rows(dump, "live_ranges")] == [
        ("p.1{0}", 0, 4), ("t{}", 3, 4)]
    assert [(p["cumulative_bytes"], p["cumulative_is_printed"]) for p in _rows(dump, "peak")] == [
        (8, True), (32, True)]


def test_combined_snippet(reader: Any, tmp_path: Path) -> None:
    _check_combined(reader(_write(tmp_path, COMBINED)))


def test_crlf_parses_like_lf(reader: Any, tmp_path: Path) -> None:
    lf = reader(_write(tmp_path, COMBINED, "lf.txt"))
    crlf = reader(_write(tmp_path, COMBINED, "crlf.txt", crlf=True))
    _check_combined(crlf)
    for table in ("allocations", "assignments", "values", "schedule", "live_ranges", "peak",
                  "totals"):
        assert _rows(lf, table) == _rows(crlf, table), table


def test_split_sections_across_files(reader: Any, tmp_path: Path) -> None:
    """The same content as the combined snippet, cut into the four files of newer XLA."""
    alloc, rest = COMBINED.split("\nTotal bytes used")
    values, live = rest.split("\n\n\nHloLiveRange")
    paths = [_write(tmp_path, alloc, "a-buffer-assignment.txt"),
             _write(tmp_path, "\nTotal bytes used" + values + "\n", "a-buffer-assignment-values.txt"),
             _write(tmp_path, "HloLiveRange" + live, "a-live-range.txt")]
    dump = reader(paths)
    assert dump.errors.num_rows == 0
    assert [r["file_id"] for r in _rows(dump, "allocations")] == [0] * 5
    assert [(r["file_id"], r["line"]) for r in _rows(dump, "totals")] == [(1, 2), (2, 1), (2, 10)]
    assert [r["file_id"] for r in _rows(dump, "values")] == [1] * 5
    assert len(_rows(dump, "schedule")) == 4


def test_live_range_variants(reader: Any, tmp_path: Path) -> None:
    na = reader(_write(tmp_path, "HloLiveRange not available (finalized or constructed from proto)",
                       "na.txt"))
    assert _rows(na, "totals") == [{"file_id": 0, "section": "live_range", "key": "not_available",
                                    "color": None, "value": 0, "line": 1}]
    unbounded = reader(_write(tmp_path, (
        "HloLiveRange (max 1):\n  InstructionSequence:\n    0:p\n  BufferLiveRange:\n"
        "    p{}:0-1\n  Peak memory could not be determined due to unbounded dynamic shape.\n"),
        "unbounded.txt"))
    assert [(r["key"], r["value"], r["line"]) for r in _rows(unbounded, "totals")] == [
        ("max", 1, 1), ("peak_unbounded", 0, 6)]
    assert _rows(unbounded, "peak") == []


TREE = """\
HloLiveRange (max 3):
  InstructionSequence:
    0:a
    1:b
    2:c
  BufferLiveRange:
    a{}:0-3
  Live ranges at 2 (peak):
    a{}: 1 000 bytes (cumulative: 1 000 bytes)
"""


def test_stack_trace_tree(reader: Any, tmp_path: Path) -> None:
    # Peak lines never group digits; only the tree does. Use a plain peak list.
    text = TREE.replace("1 000 bytes (cumulative: 1 000", "2524 bytes (cumulative: 2524") + """\
  Stack trace breakdown for peak usage: 2 524 bytes
    main.5 (100.0%, total: 2 524 bytes, current: 0 bytes, remaining: 2 524 bytes)
      ├── jit(f)/while (95.3%, total: 2 404 bytes, current: 0 bytes, remaining: 2 524 bytes)
      │   └── body (as (odd) label) (95.3%, total: 2 404 bytes, current: 4 bytes, remaining: 2 524 bytes)
      │       ├── x['a/b'].c{6} (50.0%, total: 1 200 bytes, current: 1 200 bytes, remaining: 1 324 bytes)
      │       └── y (47.5%, total: 1 200 bytes, current: 1 200 bytes, remaining: 124 bytes)
      └── params[0] (4.7%, total: 120 bytes, current: 120 bytes, remaining: 4 bytes)
    other.1 (0.0%, total: 0 bytes, current: 0 bytes, remaining: 0 bytes)
"""
    dump = reader(_write(tmp_path, text))
    tree = _rows(dump, "peak_breakdown")
    assert [(t["row"], t["parent_row"], t["depth"], t["label"]) for t in tree] == [
        (0, None, 0, "main.5"), (1, 0, 1, "jit(f)/while"), (2, 1, 2, "body (as (odd) label)"),
        (3, 2, 3, "x['a/b'].c{6}"), (4, 2, 3, "y"), (5, 0, 1, "params[0]"),
        (6, None, 0, "other.1")]
    assert [t["total_bytes"] for t in tree] == [2524, 2404, 2404, 1200, 1200, 120, 0]
    assert [t["percent"] for t in tree] == [100.0, 95.3, 95.3, 50.0, 47.5, 4.7, 0.0]
    assert tree[3]["remaining_bytes"] == 1324 and tree[2]["current_bytes"] == 4
    assert tree[1]["line"] == 12
    assert _total(dump, "peak_breakdown", "total") == [2524]


REPORT = """\
Memory Space: default (color=0)
Total bytes: 105931172 (101.02MiB)
  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
    4.00MiB(  5%);    4.00MiB;      4194304;                1; f32[8,128,1024]
   20.00MiB( 25%);    4.00MiB;     37748736;                4; 2×f32[1024,1024], 2×f32[1024,256]
  12345.67MiB(100%); 12345.00MiB; 123456789012;                1; (f32[], /*index=5*/f32[2])
  The rest 28 values are less than 5% of the total size and not shown.

  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
       168B(100%);       168B;            0;                1; (f32[], f32[256,1024])

Memory Space: alternate (color=1)
Total bytes: 0 (0B)

Memory Space: my space (x) (color=3)
Total bytes: 52288 (51.1KiB)
  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
    51.1KiB(100%);    51.1KiB;            0;                2; 2×u8[26144]



"""


def test_memory_report_table_form(reader: Any, tmp_path: Path) -> None:
    dump = reader(_write(tmp_path, REPORT))
    assert dump.errors.num_rows == 0
    rows = _rows(dump, "memory_report")
    assert [(r["memory_space"], r["color"], r["table"], r["allocation"], r["cumulative_bytes"],
             r["percent"], r["size"], r["offset"], r["used_by_n_values"], r["shapes"], r["line"])
            for r in rows] == [
        ("default", 0, 0, None, 4194304, 5, 4194304, 4194304, 1, "f32[8,128,1024]", 5),
        ("default", 0, 0, None, 20971520, 25, 4194304, 37748736, 4,
         "2×f32[1024,1024], 2×f32[1024,256]", 6),
        ("default", 0, 0, None, 12945373266, 100, 12944670720, 123456789012, 1,
         "(f32[], /*index=5*/f32[2])", 7),
        ("default", 0, 1, None, 168, 100, 168, 0, 1, "(f32[], f32[256,1024])", 12),
        ("my space (x)", 3, 0, None, 52326, 100, 52326, 0, 2, "2×u8[26144]", 21),
    ]
    assert [(r["key"], r["color"], r["value"], r["line"]) for r in _rows(dump, "totals")] == [
        ("total_bytes", 0, 105931172, 2), ("rest_values", 0, 28, 8), ("rest_percent", 0, 5, 8),
        ("total_bytes", 1, 0, 15), ("total_bytes", 3, 52288, 18)]


PROTO = """\
memory_space_allocation_entries {
  total_bytes: 105931172
  allocation_entries {
    index: 105
    size: 81813504
    cumulative_size: 81813504
    cumulative_percentage: 0.7723
    defining_positions: "fusion.5 {1}"
    defining_positions: "copy.3"
  }
  allocation_entries {
    size: 1048576
    cumulative_size: 82862080
    cumulative_percentage: 0.7822
    defining_positions: "p\\303\\251 {0}"
  }
}
memory_space_allocation_entries {
  total_bytes: 52288
  memory_space_color: 1
  allocation_entries {
    index: 19
    size: 52288
    cumulative_size: 52288
    cumulative_percentage: 1
  }
}
"""


def test_memory_report_protobuf_text(reader: Any, tmp_path: Path) -> None:
    dump = reader(_write(tmp_path, PROTO))
    assert dump.errors.num_rows == 0
    rows = _rows(dump, "memory_report")
    assert [(r["memory_space"], r["color"], r["table"], r["allocation"], r["cumulative_bytes"],
             r["percent"], r["size"], r["offset"], r["used_by_n_values"], r["shapes"], r["line"])
            for r in rows] == [
        (None, 0, 0, 105, 81813504, None, 81813504, 0, 2, "fusion.5 {1}; copy.3", 3),
        (None, 0, 1, 0, 82862080, None, 1048576, 0, 1, "pé {0}", 11),   # index 0 omitted
        (None, 1, 0, 19, 52288, None, 52288, 0, 0, "", 21),
    ]
    assert [(r["key"], r["color"], r["value"], r["line"]) for r in _rows(dump, "totals")] == [
        ("total_bytes", 0, 105931172, 2), ("total_bytes", 1, 52288, 19)]


def test_memory_report_protobuf_text_one_line(reader: Any, tmp_path: Path) -> None:
    text = ('memory_space_allocation_entries { total_bytes: 8 allocation_entries '
            '{ index: 2 size: 8 cumulative_size: 8 defining_positions: "a" } }\n')
    dump = reader(_write(tmp_path, text))
    (row,) = _rows(dump, "memory_report")
    assert (row["allocation"], row["size"], row["shapes"], row["line"]) == (2, 8, "a", 1)


# --------------------------------------------------------------------------- errors


BAD = """\
BufferAssignment:
allocation 0: size 4.00MiB, maybe-live-out:
 value: <1 a @0> (size=4,offset=0): f32[]
allocation 1: size 8, maybe-live-out, Bogus:
allocation 2: size 8, constant
 value: <2 b @0> (size=8 offset=0): f32[2]
allocation 3: size 8:
 value: <3 c @0> (size=8,offset=0): f32[2]

Total bytes used: 16 (16B)

Used values:
<3 c @0>
 positions:
  c
 uses:
  d, operand x
 from instruction: %c = f32[2] parameter(0)
<4 e{0 @0>
 positions:
<5 f @0>
 positions:
  f
HloLiveRange (max 1):
  InstructionSequence:
    0:c
  BufferLiveRange:
    c:0-2
  Live ranges at 1 (peak):
    c{}: 8 bytes (cumulative: 8 bytes
  Stack trace breakdown for peak usage: 8 bytes
    main (100.0%, total: 8 bytes, current: 0 bytes, remaining: 8 bytes)
          └── deep (100.0%, total: 8 bytes, current: 8 bytes, remaining: 0 bytes)
stray
"""


def test_errors_are_collected_with_line_and_column(reader: Any, tmp_path: Path) -> None:
    dump = reader(_write(tmp_path, BAD), on_error="collect")
    errors = [(e["line"], e["column"]) for e in _rows(dump, "errors")]
    assert errors == [
        (2, 21),   # human-readable size in an allocation line: '.' after "4"
        # line 3: a good value line under the unreadable allocation 0: checked, not kept
        (4, 39),   # "Bogus": not a flag (a new flag is a lower-case word: a note, see test_today_xla)
        (5, 31),   # no final ':' (end of the line)
        (6, 25),   # value line under the unreadable allocation 2 is still checked
        (17, 14),  # "operand x"
        (19, 5),   # "<4 e{0 @0>": bad shape index; its block is then skipped quietly
        (24, 1),   # block <5 f> cut off by HloLiveRange before ' from instruction:'
        (28, 6),   # live range without its shape index
        (30, 32),  # peak entry: missing ' bytes)'
        (33, 21),  # tree line at depth 2 under no depth-1 line (label at byte 21)
        (34, 1),   # stray line (a memory-usage report is a format of its own: see below)
    ]
    # What could be read was kept.
    assert [a["allocation"] for a in _rows(dump, "allocations")] == [3]
    assert [v["value_id"] for v in _rows(dump, "assignments")] == [3]
    assert [v["value_id"] for v in _rows(dump, "values")] == [3]
    assert _rows(dump, "values")[0]["uses"] == []


def test_memory_report_rows_before_the_rule_are_errors(reader: Any, tmp_path: Path) -> None:
    text = ("Memory Space: default (color=0)\n"
            "  cumulative_size;       size;       offset; used_by_n_values; shapes_list\n"
            "       8B(100%);        8B;            0;                1; f32[2]\nstray\n")
    dump = reader(_write(tmp_path, text, "m-memory-usage-report.txt"), on_error="collect")
    assert [(e["line"], e["column"]) for e in _rows(dump, "errors")] == [(3, 1), (4, 1)]


def test_strict_mode_raises_at_the_first_problem(reader: Any, tmp_path: Path) -> None:
    path = _write(tmp_path, BAD)
    with pytest.raises(ParseError) as info:
        reader(path)
    assert (info.value.line, info.value.column) == (2, 21)
    assert "allocation 0: size 4.00MiB" in info.value.text


V = "Total bytes used: 0 (0B)\n\nUsed values:\n"  # the reader sniffs the first line


@pytest.mark.parametrize("text,line,column", [
    (V + "<1 a>\n uses:\n", 5, 1),                        # ' positions:' missing
    (V + "<1 a>\n positions:\n  a\n from instruction: x\n", 7, 1),  # ' uses:' missing
    (V + "<1 a>\n positions:\n  a\n uses:\n  (none)\n  b, operand 0\n", 9, 1),
    (V + "<1 a>\n positions:\n  a {1\n", 6, 5),
    (V + "<1 a>\n positions:\n  a\n uses:\n", 7, 1),     # file ends inside a block
    (V + "<1 a>\n positions:\n  a\n uses:\n from instruction: %a = f32[] parameter(0)\n"
     " positions:\n", 9, 1),                              # block lines after the block ended
    ("HloLiveRange (max 1):\n  InstructionSequence:\n    x:a\n", 3, 5),
    ("HloLiveRange (max 1):\n    0:a\n", 2, 1),                     # entry before any sub-header
    ("HloLiveRange (max z):\n", 1, 19),
    ("Memory Space: default\n", 1, 22),
    ("Memory Space: default (color=0)\nTotal bytes: 4 (4 B)\n", 2, 17),
    ("memory_space_allocation_entries {\n  total_bytes: 1\n  colour: 2\n}\n", 3, 3),
    ("memory_space_allocation_entries {\n  total_bytes: \"1\"\n}\n", 2, 16),
    ("memory_space_allocation_entries {\n  total_bytes: 1\n", 1, 1),   # no closing '}'
    ("memory_space_allocation_entries {\n  total_bytes: 1 ;\n}\n", 2, 18),
    ("Total bytes used: 12 (12)\n", 1, 23),
    ("BufferAssignment:\n  allocation 0: size 4:\n", 2, 1),
    ("BufferAssignment:\n value: <1 a @0> (size=1,offset=0): f32[]\n", 2, 1),
    ("HloLiveRange (max 1):\n  Stack trace breakdown for peak usage: 1 bytes\n"
     "    a (100.0%, total: 1 bytes, current: 1 bytes, remaining: 0 byte)\n", 3, 7),
    ("HloLiveRange (max 1):\n  Stack trace breakdown for peak usage: 12 34 bytes\n", 2, 43),
    ("HloLiveRange (max 1):\n  Stack trace breakdown for peak usage: 1 bytes\n"
     "    ├── a (100.0%, total: 1 bytes, current: 1 bytes, remaining: 0 bytes)\n", 3, 1),
])
def test_error_positions(reader: Any, tmp_path: Path, text: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as info:
        reader(_write(tmp_path, text))
    assert (info.value.line, info.value.column) == (line, column), info.value.message


def test_error_column_counts_bytes(reader: Any, tmp_path: Path) -> None:
    text = ("HloLiveRange (max 1):\n  Stack trace breakdown for peak usage: 1 bytes\n"
            "    a (100.0%, total: 1 bytes, current: 1 bytes, remaining: 0 bytes)\n"
            "      │   ├── b (100.0%, total: 1 bytes, current: 1 bytes, remaining: 0 bytes)\n")
    with pytest.raises(ParseError) as info:
        reader(_write(tmp_path, text))
    # depth 2 under no depth-1 line; the label starts at character 15 = byte 23 (each of
    # '│', '├', '─' is 3 bytes in UTF-8)
    assert (info.value.line, info.value.column) == (4, 23)


# --------------------------------------------------------------------------- size


def test_multi_megabyte_file_in_seconds(reader: Any, tmp_path: Path) -> None:
    """A ~6 MB combined file (the 11 KB instruction lines of seed 003, repeated) parses fast."""
    seed = _text(DATA / "seeds" / SEEDS[2])
    alloc_part, rest = seed.split("\nTotal bytes used")
    values_part = rest.split("Used values:\n", 1)[1].split("\n\n\nHloLiveRange")[0]
    blocks = re.split(r"(?m)^(?=<)", values_part)
    blocks = [b for b in blocks if b]
    out_values, n = [], 0
    while sum(map(len, out_values)) < 6_000_000:
        for b in blocks:
            out_values.append(re.sub(r"^<\d+ ", f"<{n} ", b, count=1))
            n += 1
    text = (alloc_part + "\nTotal bytes used: 1 (1B)\n\nUsed values:\n" + "".join(out_values))
    start = time.perf_counter()
    dump = reader(_write(tmp_path, text))
    elapsed = time.perf_counter() - start
    assert dump["values"].num_rows == n
    assert elapsed < 30, elapsed


def test_many_short_lines_in_seconds(reader: Any, tmp_path: Path) -> None:
    """~3 MB of short lines (10 000 allocations and value blocks, ~90 000 lines)."""
    n = 10_000
    parts = ["BufferAssignment:\n"]
    parts += [f"allocation {i}: size 1024, maybe-live-out:\n"
              f" value: <{i} fusion.{i}{{0}} @0> (size=1024,offset=0): f32[256]{{0}}\n"
              for i in range(n)]
    parts.append(f"\nTotal bytes used: {n * 1024} (9.77MiB)\n\nUsed values:\n")
    parts += [f"<{i} fusion.{i}{{0}} @0>\n positions:\n  fusion.{i} {{0}}\n  tuple.{i} {{1}}\n"
              f" uses:\n  add.{i}, operand 0\n from instruction: %fusion.{i} = (f32[256]{{0}}) "
              f"fusion(%p), kind=kLoop, calls=%c\n" for i in range(n)]
    path = _write(tmp_path, "".join(parts))
    start = time.perf_counter()
    dump = reader(path)
    elapsed = time.perf_counter() - start
    assert dump["allocations"].num_rows == dump["assignments"].num_rows == n
    assert dump["values"].num_rows == n
    assert sum(len(v) for v in dump["values"].column("positions").to_pylist()) == 2 * n
    assert elapsed < 30, elapsed


# ------------------------------------------------- every line of the section against its grammar

REUSED_BLOCK = """\
BufferAssignment:
allocation 0: size 1024, color 1, preallocated-temp:
 value: <3 a @1> (size=8,offset=0): f32[2]{0:S(1)}
 reused by buffers of a different color:
  value: <4 b @0> (color=0)
  value: <5 c{1} @2> (color=2)
allocation 1: size 8:
 value: <6 d @0> (size=8,offset=0): f32[2]{0}
"""


def test_value_lines_outside_their_block_are_errors(reader: Any, tmp_path: Path) -> None:
    """Issue 50: a ``  value: …`` line (two spaces) anywhere in the BufferAssignment section was
    dropped without a word (102 values read of 103, exit 0, --strict too): the line was only
    checked under its ``reused by buffers of a different color:`` header. Now the block's lines
    are read only under it and against their grammar; anywhere else each is an error."""
    dump = reader(_write(tmp_path, REUSED_BLOCK), on_error="collect")
    assert _rows(dump, "errors") == []
    assert [v["value_id"] for v in _rows(dump, "assignments")] == [3, 6]
    assert [n["kind"] for n in _rows(dump, "notes")] == ["unknown_section"]
    lines = REUSED_BLOCK.splitlines()
    cases = [
        # a value line indented one space too many, under an ordinary allocation: was dropped
        (lines[:7] + ["  value: <7 e @0> (size=8,offset=0): f32[2]{0}"], 8, 1),
        # the same line right after the section header
        (lines[:1] + ["  value: <7 e @0> (color=0)"] + lines[1:], 2, 1),
        # under the block, but not its grammar
        (lines[:5] + ["  value: <7 e @0> (size=8,offset=0): f32[2]{0}"] + lines[5:], 6, 18),
        (lines[:5] + ["  value: <7 e @0> (color=0) x"] + lines[5:], 6, 28),
        (lines[:5] + ["  value: 7 e (color=0)"] + lines[5:], 6, 10),
        # the header with more on its line, twice, before any allocation
        (lines[:3] + [lines[3] + " x"] + lines[4:], 4, 41),
        (lines[:6] + [lines[3]] + lines[6:], 7, 1),
        (lines[:1] + [lines[3]] + lines[1:], 2, 1),
        # an allocation's own value line after the block
        (lines[:6] + [lines[2]] + lines[6:], 7, 1),
    ]
    for case, line, column in cases:
        text = "\n".join(case) + "\n"
        with pytest.raises(ParseError) as info:
            reader(_write(tmp_path, text))
        assert (info.value.line, info.value.column) == (line, column), (case, info.value.message)
        collected = reader(_write(tmp_path, text), on_error="collect")
        assert [(e["line"], e["column"]) for e in _rows(collected, "errors")] == [(line, column)], case
