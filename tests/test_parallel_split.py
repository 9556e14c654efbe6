"""One big file parsed in chunks on several threads (src/split.rs) gives the serial parse's
tables cell for cell: row order, ids, `line`, `offset` and `errors` included.

`HLODUMP_MIN_SPLIT_BYTES` lowers the size from which a file is split (chunks of half that), so
that small grown files (made with benches/make_inputs.py) split into many chunks here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("hlodump._core")

import hlodump  # noqa: E402
import hlodump.reference  # noqa: E402

from test_rust_vs_reference import assert_same_tables  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
SPLIT = "4096"


def _make_inputs():
    spec = importlib.util.spec_from_file_location("make_inputs", ROOT / "benches" / "make_inputs.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@pytest.fixture(scope="module")
def grown(tmp_path_factory) -> dict[str, Path]:
    m = _make_inputs()
    d = tmp_path_factory.mktemp("grown")
    m.make_hlo(d / "hlo.txt", 250_000)
    ba = m.T04.parent / (m.T04.name + ".cpu_after_optimizations-buffer-assignment.txt")
    m.make_ba(d / "ba_combined.txt", 1_000_000, ba)
    m.make_ba_split(d / "ba_split", 400_000)
    out = {"hlo": d / "hlo.txt", "ba_combined": d / "ba_combined.txt"}
    for p in sorted((d / "ba_split").iterdir()):
        out["ba_split" + p.name.split("optimizations")[1].removesuffix(".txt")] = p
    return out


def _chunks(dump: hlodump.Dump) -> int:
    return max(dump[n].column(0).num_chunks for n in dump if dump[n].num_rows)


def _same(a: hlodump.Dump, b: hlodump.Dump) -> None:
    assert list(a) == list(b)
    for n in a:
        assert a[n].equals(b[n]), f"table {n} differs"


SPLITTABLE = ["hlo", "ba_combined", "ba_split-buffer-assignment", "ba_split-buffer-assignment-values", "ba_split-live-range"]


@pytest.mark.parametrize("name", SPLITTABLE + ["ba_split-memory-usage-report"])
def test_chunked_equals_serial_and_reference(grown, name, monkeypatch):
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", SPLIT)
    p = grown[name]
    one = hlodump.read_arrow(p, threads=1)
    two = hlodump.read_arrow(p, threads=2)
    if name in SPLITTABLE:
        assert _chunks(two) > 2, "the file was not parsed in chunks"
    if name == "ba_combined":
        # Its Used values blocks are glued to the line before (the old layout) but for a few
        # (one per copy of the seed): some chunk must start at a header inside a line.
        lines = p.read_bytes().split(b"\n")
        firsts = [c[0].as_py() for c in two["values"].column("line").chunks[1:] if len(c)]
        assert any(lines[n - 1].startswith(b" from instruction:") for n in firsts), "Used values was not cut inside a line"
    assert _chunks(one) == 1
    _same(one, two)
    assert two["errors"].num_rows == 0
    fast = hlodump.read_arrow(p, threads=2, on_error="collect", string_view=False)
    ref = hlodump.reference.read_arrow(p, on_error="collect", string_view=False)
    assert_same_tables(fast, ref, name)


def test_directory_with_split_files(grown, monkeypatch):
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", SPLIT)
    d = grown["ba_split-live-range"].parent
    _same(hlodump.read_arrow(d, threads=1), hlodump.read_arrow(d, threads=2))
    two = hlodump.read_arrow(d, threads=2)
    assert two["files"].num_rows == 4


def test_whole_file_checks_across_chunks(grown, tmp_path, monkeypatch):
    """The buffer-assignment checks no line can make (an allocation listed twice, a value past
    the end of its allocation) join across the chunks of a file read in parts: an allocation of
    the first chunk listed again, and a value past its allocation, both near the end of the file."""
    import re

    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", SPLIT)
    data = grown["ba_split-buffer-assignment"].read_bytes()
    alloc = re.compile(rb"^allocation (\d+):", re.M)
    first = alloc.search(data)
    first_line = data[:first.start()].count(b"\n") + 1
    tail = data.index(b"\n", len(data) * 3 // 4) + 1
    m = alloc.search(data, tail)
    again = data[:m.start()] + first.group(0) + data[m.end():]
    v = re.compile(rb"\(size=(\d+),offset=(\d+)\)").search(again, m.end() + 200)
    bad = again[:v.start()] + b"(size=%s,offset=%d)" % (v.group(1), 1 << 40) + again[v.end():]
    p = tmp_path / grown["ba_split-buffer-assignment"].name
    p.write_bytes(bad)
    one = hlodump.read_arrow(p, threads=1, on_error="collect")
    two = hlodump.read_arrow(p, threads=2, on_error="collect")
    assert _chunks(two) > 2, "the file was not parsed in chunks"
    _same(one, two)
    msgs = [e["message"] for e in two["errors"].to_pylist()]
    assert any(f"allocation {int(first.group(1))} again (first at line {first_line})" in x for x in msgs), msgs
    assert any("lies past the end of allocation" in x for x in msgs), msgs
    ref = hlodump.reference.read_arrow(p, on_error="collect", string_view=False)
    assert_same_tables(hlodump.read_arrow(p, threads=2, on_error="collect", string_view=False), ref, "checks")
    errs = []
    for threads in (1, 2):
        with pytest.raises(hlodump.ParseError) as e:
            hlodump.read_arrow(p, threads=threads)
        errs.append((str(e.value), e.value.line))
    assert errs[0] == errs[1]


DAMAGE = [
    b"this line is broken\n",  # unrecognised line / bad record
    b"\n",  # an empty line ends a section / value block
    b"  x = f32[] bogus(\n",
]


@pytest.mark.parametrize("name", SPLITTABLE)
@pytest.mark.parametrize("damage", range(len(DAMAGE)))
def test_damaged_input_matches_serial(grown, name, damage, tmp_path, monkeypatch):
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", SPLIT)
    data = grown[name].read_bytes()
    # a broken line in the middle, at a line start
    mid = data.index(b"\n", len(data) // 2) + 1
    p = tmp_path / grown[name].name
    p.write_bytes(data[:mid] + DAMAGE[damage] + data[mid:])
    one = hlodump.read_arrow(p, threads=1, on_error="collect")
    two = hlodump.read_arrow(p, threads=2, on_error="collect")
    _same(one, two)
    errs = [None, None]
    for k, threads in enumerate((1, 2)):
        try:
            hlodump.read_arrow(p, threads=threads)
        except Exception as e:  # noqa: BLE001
            errs[k] = (type(e), str(e), getattr(e, "line", None))
    assert errs[0] == errs[1]
    assert (errs[0] is None) == (one["errors"].num_rows == 0)


ALL_FILES = sorted(p for p in DATA.rglob("*") if p.is_file())


def test_every_test_file_same_with_tiny_chunks(monkeypatch):
    """Every file of tests/data (broken seeds included), split as finely as possible."""
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", "64")
    for p in ALL_FILES:
        for mode in ("collect", "raise"):
            if mode == "raise" and clean:
                continue  # no problem to raise: strict mode reads what collect mode read
            got = []
            for threads in (1, 2):
                try:
                    got.append(("ok", hlodump.read_arrow(p, threads=threads, on_error=mode)))
                except Exception as e:  # noqa: BLE001
                    got.append(("err", (type(e), str(e))))
            assert got[0][0] == got[1][0], p
            if got[0][0] == "err":
                assert got[0][1] == got[1][1], p
            else:
                _same(got[0][1], got[1][1])
            clean = got[0][0] == "ok" and got[0][1]["errors"].num_rows == 0


def test_hlo_checks_across_chunks(grown, tmp_path, monkeypatch):
    """An HLO file XLA named, cut right before its ENTRY computation (every line valid), read in
    chunks: the chunks count the module's computations, the split joins them and reports the
    missing ENTRY once, at the module's header, as the serial parse and the reference do. The
    same text under a hand-written name is no error (XLA's parser takes a module without ENTRY)."""
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", SPLIT)
    data = grown["hlo"].read_bytes()
    cut = data[:data.rindex(b"\nENTRY ") + 1]
    assert cut.count(b"\n") > 1000
    p = tmp_path / "module_0007.jit_grown.before_optimizations.txt"
    p.write_bytes(cut)
    one = hlodump.read_arrow(p, threads=1, on_error="collect")
    two = hlodump.read_arrow(p, threads=2, on_error="collect")
    assert _chunks(two) > 2, "the file was not parsed in chunks"
    _same(one, two)
    name = two["modules"].column("name")[0].as_py()
    assert [(e["line"], e["message"]) for e in two["errors"].to_pylist()] == [
        (two["modules"].column("line")[0].as_py(),
         f"module {name} has no ENTRY computation (XLA prints it last: the file is cut short?)")]
    ref = hlodump.reference.read_arrow(p, on_error="collect", string_view=False)
    assert_same_tables(hlodump.read_arrow(p, threads=2, on_error="collect", string_view=False), ref, "checks")
    with pytest.raises(hlodump.ParseError, match="no ENTRY computation"):
        hlodump.read_arrow(p, threads=2)
    # (scan gets it too: the checks are the parser's)
    with pytest.raises(hlodump.ParseError, match="no ENTRY computation"):
        hlodump.scan(p, "instructions").to_table()
    hand = tmp_path / "hand_written.hlo.txt"
    hand.write_bytes(cut)
    assert hlodump.read_arrow(hand, threads=2, on_error="collect")["errors"].num_rows == 0


@pytest.mark.parametrize("where", ["missing", "defined_later"])
def test_called_computations_across_chunks(grown, where, tmp_path, monkeypatch):
    """A called computation must be one read before (XLA's parser; issue 50): chunks defer the
    names they do not define and the split resolves them against the chunks before, so a
    normal file stays split (test above) and a call early in the file to a computation defined
    only near its end (or nowhere) gives the serial parse's error."""
    import re

    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", SPLIT)
    data = grown["hlo"].read_bytes()
    later = re.findall(rb"^%([A-Za-z0-9_.-]+) ", data[len(data) * 7 // 8:], re.M)[-1]
    m = re.compile(rb"calls=%([A-Za-z0-9_.-]+)").search(data, len(data) // 8)
    name = b"nothere" if where == "missing" else later
    p = tmp_path / grown["hlo"].name
    p.write_bytes(data[:m.start(1)] + name + data[m.end(1):])
    one = hlodump.read_arrow(p, threads=1, on_error="collect")
    two = hlodump.read_arrow(p, threads=2, on_error="collect")
    _same(one, two)
    msgs = [e["message"] for e in two["errors"].to_pylist()]
    assert msgs == [f"computation '{name.decode()}' is not defined before this instruction (XLA's parser needs it "
                    "earlier in the module)"], msgs
    assert_same_tables(hlodump.read_arrow(p, threads=2, on_error="collect", string_view=False),
                       hlodump.reference.read_arrow(p, on_error="collect", string_view=False), "calls")
