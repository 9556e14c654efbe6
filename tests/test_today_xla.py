"""Issue 36: what XLA prints today (jax 0.11 / 0.12) and what it prints next.

- Tolerant of the unknown, strict on structure: an allocation flag this version does not know
  keeps its row, stays raw in ``flags`` and gives one ``notes`` row per file and word;
  ``strict=True`` makes it an error. Both readers.
- ``page N`` (XLA 2026) → ``allocations.page``.
- Compact tuple operands ``%x#k`` / ``%x#k#j`` → ``operands`` keeps ``x``, ``operand_index``
  the tuple path.
- ``*.debug_options`` and ``compile_options.textproto`` → ``options``.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodump
from hlodump.exceptions import ParseError

DATA = Path(__file__).parent / "data"

# A buffer assignment as jax 0.11.2 / 0.12.0.1 print it (CPU): `page 0` after the size.
BA_2026 = """BufferAssignment:
allocation 0: size 2400, page 0, parameter 3, shape |f32[10,3,20]| at ShapeIndex {}:
 value: <51 xs.1 @0> (size=2400,offset=0): f32[10,3,20]{2,1,0}
allocation 1: size 48, page 0, color 1, maybe-live-out:
 value: <52 tuple.3 @0> (size=48,offset=0): (f32[3,2]{1,0})
allocation 2: size 64, page 0, preallocated-temp:
 value: <53 fusion.1 @0> (size=64,offset=0): f32[16]{0}

Total bytes used: 2512 (2.45KiB)
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_page_flag_is_a_column(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt", BA_2026)
    d = reader(p)
    a = d["allocations"]
    assert a.column("page").to_pylist() == [0, 0, 0]
    assert a.column("parameter").to_pylist() == [3, None, None]
    assert a.column("color").to_pylist() == [0, 1, 0]
    assert a.column("is_maybe_live_out").to_pylist() == [False, True, False]
    assert a.column("flags").to_pylist()[0] == "page 0, parameter 3, shape |f32[10,3,20]| at ShapeIndex {}"
    assert d["notes"].num_rows == 0  # `page` is known: no note
    assert d["errors"].num_rows == 0


def test_page_is_null_where_not_printed(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt",
               BA_2026.replace(", page 0", ""))
    assert reader(p)["allocations"].column("page").to_pylist() == [None, None, None]


def test_page_twice_is_an_error(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt",
               BA_2026.replace("page 0, color 1", "page 0, page 1, color 1"))
    with pytest.raises(ParseError, match="printed twice"):
        reader(p)


UNKNOWN = BA_2026.replace("size 48, page 0, color 1,", "size 48, page 0, frobnicate 7, color 1,").replace(
    "size 64, page 0,", "size 64, page 0, frobnicate 9, heap |f32[2, 3]| {a, b},")


def test_unknown_flag_keeps_row_and_notes_once(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt", UNKNOWN)
    d = reader(p)
    a = d["allocations"]
    assert a.num_rows == 3
    assert a.column("color").to_pylist() == [0, 1, 0]  # the flags after the unknown one still count
    assert a.column("is_maybe_live_out").to_pylist() == [False, True, False]
    assert a.column("is_preallocated_temp").to_pylist() == [False, False, True]
    assert "frobnicate 7" in a.column("flags").to_pylist()[1]
    assert d["assignments"].num_rows == 3
    notes = d["notes"].to_pylist()
    # one per file and word: `frobnicate` (first at line 4), `heap` (line 6)
    assert [(n["kind"], n["token"], n["text"], n["line"]) for n in notes] == [
        ("unknown_flag", "frobnicate", "frobnicate 7", 4),
        ("unknown_flag", "heap", "heap |f32[2, 3]| {a, b}", 6),
    ]
    line4 = UNKNOWN.splitlines()[3]
    assert notes[0]["column"] == line4.index("frobnicate") + 1
    assert notes[0]["message"] == "unknown allocation flag 'frobnicate 7' (newer XLA?); kept raw in flags"
    assert d["errors"].num_rows == 0


def test_strict_turns_notes_into_errors(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt", UNKNOWN)
    with pytest.raises(ParseError, match="unknown allocation flag 'frobnicate 7'") as e:
        reader(p, strict=True)
    assert e.value.line == 4
    d = reader(p, strict=True, on_error="collect")
    assert d["errors"].column("line").to_pylist() == [4, 6, 6]
    assert d["notes"].num_rows == 0
    assert d["allocations"].num_rows == 3  # an error of strictness keeps the row


@pytest.mark.parametrize("line", [
    "allocation 1: size 48, Frobnicate 7:",     # not a lower-case word
    "allocation 1: size 48, heap |f32[2]:",     # unbalanced bars
    "allocation 1: size 48, heap (a, b:",       # unbalanced brackets
    "allocation 1: size 48, heap a), b:",
])
def test_malformed_flags_are_still_errors(reader, tmp_path: Path, line: str) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt",
               f"BufferAssignment:\n{line}\n")
    with pytest.raises(ParseError):
        reader(p)


def test_memory_report_unknown_flag(reader, tmp_path: Path) -> None:
    real = DATA / "memory_report/jax-0.8.3/module_0001.jit_rnn.cpu_after_optimizations-memory-usage-report.txt"
    text = real.read_text()
    changed = re.sub(r"(; allocation \d+: size [^,:]+)", r"\1, page 2, frobnicate 1", text)
    assert changed != text
    p = _write(tmp_path, real.name, changed)
    before, after = reader(real, on_error="collect"), reader(p, on_error="collect")
    assert after["errors"].num_rows == before["errors"].num_rows == 0
    flags = after["memory_report"].column("flags").to_pylist()
    assert any(f is not None and f.startswith("page 2, frobnicate 1") for f in flags)
    assert before["memory_report"].drop_columns(["flags"]).equals(after["memory_report"].drop_columns(["flags"]))
    assert [n["token"] for n in after["notes"].to_pylist()] == ["frobnicate"]


# ------------------------------------------------------------------ fuzz: a new flag loses nothing

def _real_buffer_assignments() -> list[Path]:
    return sorted(p for p in DATA.rglob("*buffer-assignment.txt") if p.stat().st_size < 400_000)[:40]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), word=st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True),
       value=st.sampled_from(["", " 0", " 17", " |f32[2,3]|", " {1, 2}"]))
def test_fuzz_inserted_flag_loses_nothing(seed: int, word: str, value: str) -> None:
    """A `, WORD VALUE` flag inserted at a random flag boundary of every allocation line of a
    real dump: the same rows and the same values in every column but `flags`, and one note per
    word (or none, when WORD is a flag we know)."""
    files = _real_buffer_assignments()
    assert files, "tests/data holds buffer assignments"
    rng = random.Random(seed)
    path = files[rng.randrange(len(files))]
    text = path.read_text()
    known = word in ("color", "parameter", "output", "constant", "thread-local", "maybe-live-out",
                     "preallocated-temp", "page") or word.startswith(("constant", "thread-local", "maybe-live-out", "preallocated-temp"))

    def insert(m: re.Match) -> str:
        line = m.group(0)
        # flag boundaries: a ", " outside |…| that does not start the `, shape |…|` part of
        # the parameter flag
        cuts = [i for i in range(len(line)) if line.startswith(", ", i)
                and line[:i].count("|") % 2 == 0 and not line.startswith(", shape |", i)]
        cuts.append(len(line) - 1)  # before the final ':'
        at = rng.choice(cuts)
        return line[:at] + f", {word}{value}" + line[at:]

    changed = re.sub(r"(?m)^allocation \d+: size \d+[^\n]*:$", insert, text)
    before = hlodump.read_arrow(path, on_error="collect")
    after_path = Path(f"/tmp/hlodump-fuzz-{seed}-{path.name}")
    after_path.write_text(changed)
    try:
        after = hlodump.read_arrow(after_path, on_error="collect")
        if known:
            return  # a known word with a made-up value may be an error: not this property
        for name in ("allocations", "assignments", "values", "schedule", "live_ranges", "peak", "totals"):
            a, b = before[name], after[name]
            if name == "allocations":
                a, b = a.drop_columns(["flags"]), b.drop_columns(["flags"])
            assert a.equals(b), f"{path.name}: {name} changed by ', {word}{value}'"
        notes = after["notes"]
        n_alloc = before["allocations"].num_rows
        assert notes.num_rows == (1 if n_alloc else 0)
        assert after["errors"].num_rows == before["errors"].num_rows
    finally:
        after_path.unlink()


# ------------------------------------------------------------------ compact tuple operands

HLO_COMPACT = """HloModule m, is_scheduled=true

ENTRY %main (arg_tuple.1: (s32[], f32[40,1], (f32[2], f32[3]))) -> f32[40,1] {
  %arg_tuple.1 = (s32[], f32[40,1]{1,0}, (f32[2]{0}, f32[3]{0})) parameter(0)
  %bitcast = f32[1,1]{1,0} bitcast(%arg_tuple.1#0)
  %copy = f32[3]{0} copy(%arg_tuple.1#2#1)
  %spaced = f32[3]{0} copy(f32[3]{0} %arg_tuple.1#2#1)
  ROOT %dot = f32[40,1]{1,0} dot(%arg_tuple.1#1, %bitcast), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_compact_tuple_operands(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.m.cpu_after_optimizations.txt", HLO_COMPACT)
    ins = reader(p)["instructions"].to_pydict()
    by = dict(zip(ins["name"], zip(ins["operands"], ins["operand_index"])))
    assert by["arg_tuple.1"] == ([], [])
    assert by["bitcast"] == (["arg_tuple.1"], [[0]])
    assert by["copy"] == (["arg_tuple.1"], [[2, 1]])
    assert by["spaced"] == (["arg_tuple.1"], [[2, 1]])
    assert by["dot"] == (["arg_tuple.1", "bitcast"], [[1], []])


def test_operand_index_type(tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.m.cpu_after_optimizations.txt", HLO_COMPACT)
    t = hlodump.read_arrow(p)["instructions"]
    assert t.schema.field("operand_index").type == pa.list_(pa.field("item", pa.list_(pa.field("item", pa.int32(), False)), False))


def test_operand_index_projection(tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.m.cpu_after_optimizations.txt", HLO_COMPACT)
    t = hlodump.read_arrow(p, columns={"instructions": ["name", "operand_index"]})["instructions"]
    assert t.column("operand_index").to_pylist()[-1] == [[1], []]


def test_operand_index_on_real_dumps_matches_the_text(reader) -> None:
    """Every `#k` in an operand region of the jax 0.11 / 0.12 sample has its index (a count
    check against the raw text, independent of the parser's operand split)."""
    files = sorted((DATA / "corpus").glob("jax-0.1[12]*/**/*after_optimizations.txt"))
    if not files:
        pytest.skip("no jax 0.11 / 0.12 sample yet")
    for path in files[:6]:
        d = reader(path, tables=["instructions"])
        ins = d["instructions"].to_pydict()
        paths = sum(len(p) for row in ins["operand_index"] for p in row)
        hashes = sum(len(re.findall(r"%?[A-Za-z_][A-Za-z0-9_.\-]*((?:#[0-9]+)+)", t)) and
                     sum(m.count("#") for m in re.findall(r"[A-Za-z0-9_.\-]((?:#[0-9]+)+)(?=[,) ]|$)", t))
                     for t in ins["operand_text"])
        assert paths == hashes, path


# ------------------------------------------------------------------ options

DEBUG_OPTIONS = """xla_cpu_enable_fast_min_max: false
xla_dump_to: "/data/xla_dump/x"
xla_gpu_foo: {
  a: 1
}
"""

COMPILE_OPTIONS = """executable_build_options {
  device_ordinal: -1
  debug_options {
    xla_backend_optimization_level: 3
    xla_gpu_cuda_data_dir: "./cuda_sdk_lib"
  }
  num_replicas: 1
}
env_option_overrides {
  key: "xla_foo"
  value {
    bool_field: true
  }
}
"""


def test_options_table(reader, tmp_path: Path) -> None:
    (tmp_path / "module_0000.jit_f").mkdir()
    _write(tmp_path, "module_0000.jit_f.debug_options", DEBUG_OPTIONS)
    _write(tmp_path / "module_0000.jit_f", "compile_options.textproto", COMPILE_OPTIONS)
    d = reader(tmp_path)
    files = d["files"].to_pydict()
    kinds = dict(zip([p.rsplit("/", 1)[-1] for p in files["path"]], files["kind"]))
    assert kinds == {"module_0000.jit_f.debug_options": "debug_options",
                     "compile_options.textproto": "compile_options"}
    assert all(files["parsed"])
    assert set(files["module_id"]) == {0}
    o = d["options"].to_pylist()
    rows = [(r["source"], r["key"], r["value"], r["line"]) for r in o]
    assert ("debug_options", "xla_cpu_enable_fast_min_max", "false", 1) in rows
    assert ("debug_options", "xla_dump_to", "/data/xla_dump/x", 2) in rows
    assert ("debug_options", "xla_gpu_foo.a", "1", 4) in rows
    assert ("compile_options", "executable_build_options.debug_options.xla_backend_optimization_level", "3", 4) in rows
    assert ("compile_options", "executable_build_options.num_replicas", "1", 7) in rows
    assert ("compile_options", "env_option_overrides.value.bool_field", "true", 12) in rows
    assert len(rows) == 3 + 6
    assert d["errors"].num_rows == 0


def test_options_cut_short(reader, tmp_path: Path) -> None:
    p = _write(tmp_path, "compile_options.textproto", "".join(COMPILE_OPTIONS.splitlines(True)[:4]))
    with pytest.raises(ParseError, match="ends inside message"):
        reader(p)


def test_options_on_real_dumps(reader) -> None:
    files = sorted(DATA.rglob("*.debug_options"))[:5] + sorted(DATA.rglob("compile_options.textproto"))[:5]
    if not files:
        pytest.skip("no options files in tests/data")
    for path in files:
        d = reader(path)
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.strip().endswith("{") and ln.strip() != "}"]
        assert d["options"].num_rows == len(lines), path


# ------------------------------------------------------------------ unknown attributes

def test_unknown_attribute_keeps_row_and_notes_once(reader, tmp_path: Path) -> None:
    text = HLO_COMPACT.replace("copy(%arg_tuple.1#2#1)", "copy(%arg_tuple.1#2#1), frobnicate={1,2}, metadata={op_name=\"x\"}")
    text = text.replace("bitcast(%arg_tuple.1#0)", "bitcast(%arg_tuple.1#0), frobnicate=7")
    p = _write(tmp_path, "module_0000.m.cpu_after_optimizations.txt", text)
    d = reader(p)
    ins = d["instructions"].to_pydict()
    assert len(ins["name"]) == 5
    i = ins["name"].index("copy")
    assert ins["op_name"][i] == "x"  # the attributes after the unknown one still count
    assert "frobnicate={1,2}" in ins["attributes"][i]
    notes = d["notes"].to_pylist()
    assert [(n["kind"], n["token"], n["text"], n["line"]) for n in notes] == [
        ("unknown_attribute", "frobnicate", "frobnicate=7", 5)]
    line5 = text.splitlines()[4]
    assert notes[0]["column"] == line5.index("frobnicate") + 1
    with pytest.raises(ParseError, match="unknown attribute 'frobnicate'"):
        reader(p, strict=True)


def test_known_attributes_give_no_notes(reader) -> None:
    """Every attribute of every HLO text in tests/data (13 jax releases, GPU and TPU seeds) is
    one we know: no notes, so a strict read of them passes."""
    files = sorted(p for p in DATA.rglob("*.txt") if p.stat().st_size < 2_000_000)
    d = reader(files, on_error="collect", tables=["instructions"])
    notes = d["notes"].to_pylist()
    assert notes == [], notes[:5]


def test_fuzz_attribute_inserted_everywhere_loses_nothing(tmp_path: Path) -> None:
    """`, zz_new_attribute=VALUE` after every instruction of a real module: same rows, same
    values in every column but `attributes` (and `offset`, which moves), one note."""
    src = next(iter(sorted((DATA / "corpus").rglob("*after_optimizations.txt"))))
    text = src.read_text()
    changed = re.sub(r"(?m)^(\s+(?:ROOT )?%[^\n=]+ = [^\n]*\))(,|$)", r"\1, zz_new_attribute={a=1, b=[2]}\2", text)
    assert changed != text
    p = _write(tmp_path, src.name, changed)
    a, b = hlodump.read_arrow(src), hlodump.read_arrow(p)
    cols = [c for c in a["instructions"].column_names if c not in ("attributes", "offset")]
    assert a["instructions"].select(cols).equals(b["instructions"].select(cols))
    assert [n["token"] for n in b["notes"].to_pylist()] == ["zz_new_attribute"]
    assert a["notes"].num_rows == 0


# ------------------------------------------------------------------ the command line

def test_cli_one_note_line_per_kind_and_strict(tmp_path: Path) -> None:
    import subprocess
    import sys

    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt", UNKNOWN)
    r = subprocess.run([sys.executable, "-m", "hlodump", "summary", str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("hlodump: note:")]
    assert len(notes) == 1, r.stderr
    assert "unknown flag: 2 distinct in 1 file" in notes[0] and ":4:" in notes[0] and "frobnicate 7" in notes[0]
    r = subprocess.run([sys.executable, "-m", "hlodump", "summary", "--strict", str(p)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "unknown allocation flag 'frobnicate 7'" in r.stderr and "Traceback" not in r.stderr


def test_scan_strict(tmp_path: Path) -> None:
    p = _write(tmp_path, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt", UNKNOWN)
    assert sum(b.num_rows for b in hlodump.scan(p, "allocations")) == 3
    with pytest.raises(ParseError, match="unknown allocation flag"):
        list(hlodump.scan(p, "allocations", strict=True))


# ------------------------------------------------------------------ the names compact operands stand for

@pytest.mark.parametrize("release", ["jax-0.11.2", "jax-0.12.0.1"])
def test_tuple_elements_resolve_the_schedule(release: str) -> None:
    """The schedule of a compact-operand dump names get-tuple-elements the HLO text no longer
    prints; `analysis.tuple_elements` names the tuple element each stands for. Checked against the
    values file's positions (independent of the operand pairing): a value at the name is the
    value at that element of that tuple. Nearly every such step resolves (those whose only users
    define no value cannot be paired)."""
    import hlodump.analysis as A

    root = DATA / "corpus" / release
    if not root.is_dir():
        pytest.skip(f"no {release} sample")
    missing = resolved = checked = 0
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        d = hlodump.read_arrow(sub)
        te = A.tuple_elements(d).to_pylist()
        by = {(r["module"], r["name"]): (r["tuple"], r["path"]) for r in te}
        file_module = {fid: m.key for m in A._module_list(d) for fid in m.file_ids}
        ins = d["instructions"].select(["file_id", "name"]).to_pydict()
        printed = {(file_module.get(f), n) for f, n in zip(ins["file_id"], ins["name"])}
        sched = d["schedule"].select(["file_id", "instruction"]).to_pydict()
        for f, n in zip(sched["file_id"], sched["instruction"]):
            key = (file_module.get(f), n)
            if key in printed:
                continue
            missing += 1
            resolved += key in by
        vals = d["values"].select(["file_id", "positions"]).to_pydict()
        for f, ps in zip(vals["file_id"], vals["positions"]):
            here = {(p["instruction"], p["shape_index"]) for p in ps}
            for name, index in list(here):
                hit = by.get((file_module.get(f), name))
                if hit is None or index != "{}":
                    continue
                tup, path = hit
                assert (tup, "{" + ",".join(map(str, path)) + "}") in here, (name, hit, sorted(here))
                checked += 1
    assert missing > 50 and checked > 20
    assert resolved >= 0.95 * missing, (resolved, missing)
