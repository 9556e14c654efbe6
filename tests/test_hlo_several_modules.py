"""A file holding several HLO modules (issue 31): two dumps concatenated (`cat a.txt b.txt`), or a
FileCheck test input split by `// -----` lines, gives one `modules` row per part, numbered by
`module_index` (0-based order in the file); each part's computations carry its `module_index`
(instructions reach their module through `computation_id`, unique in the file). Ids and lines
go on counting through the file, as for any file.

Oracle: each part read alone. The concatenation equals the parts read apart, up to the keys
(file_id, module_index) and the shifts of ids, lines and byte offsets by what comes before.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hlodump
from hlodump.reference.reader import read_arrow as reference_read

CORPUS = Path(__file__).parent / "data" / "corpus"
# with stack-frame tables (each module its own: the second's frame ids start at 1 again)
PAIRS = [
    ("jax-0.10.2/control_flow/module_0000.jit_rnn.cpu_after_optimizations.txt",
     "jax-0.10.2/control_flow/module_0008.jit_newton_sqrt.cpu_after_optimizations.txt"),
    ("jax-0.9.2/control_flow/module_0021.jit_branches.cpu_after_optimizations.txt",
     "jax-0.9.2/control_flow/module_0001.jit_rnn.cpu_after_optimizations.txt"),
]
READERS = [hlodump.read_arrow, reference_read]
TABLES = ["modules", "computations", "instructions", "stack_frames", "custom_calls"]


def _rows(d, table: str) -> list[dict]:
    rows = d[table].to_pylist() if isinstance(d[table], pa.Table) else d[table].to_pylist()
    for r in rows:
        r.pop("file_id", None)
        r.pop("dump", None)
    return rows


def _shifted(rows: list[dict], by: dict[str, int]) -> list[dict]:
    return [{k: (v + by[k] if k in by and v is not None else v) for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("reader", READERS, ids=["rust", "reference"])
@pytest.mark.parametrize("a,b", PAIRS, ids=lambda v: Path(v).name.split(".")[1])
def test_concatenated_dumps_are_two_modules(tmp_path: Path, reader, a: str, b: str) -> None:
    da, db = (CORPUS / a).read_bytes(), (CORPUS / b).read_bytes()
    assert b"FileNames" in da and b"FileNames" in db
    (tmp_path / "a.txt").write_bytes(da)
    (tmp_path / "b.txt").write_bytes(db)
    (tmp_path / "both.txt").write_bytes(da + db)
    ra, rb, both = (reader(str(tmp_path / n), TABLES) for n in ("a.txt", "b.txt", "both.txt"))
    lines_a = da.count(b"\n")
    na_comp, na_ins = ra["computations"].num_rows, ra["instructions"].num_rows

    mods = _rows(both, "modules")
    assert [m.pop("module_index") for m in mods] == [0, 1]
    assert mods == [{k: v for k, v in m.items() if k != "module_index"} for m in
                    _rows(ra, "modules") + _shifted(_rows(rb, "modules"), {"line": lines_a})]

    comps = _rows(both, "computations")
    assert [c["module_index"] for c in comps] == [0] * na_comp + [1] * rb["computations"].num_rows
    expected_b = _shifted(_rows(rb, "computations"), {"computation_id": na_comp, "line": lines_a, "module_index": 1})
    assert comps == _rows(ra, "computations") + expected_b

    ins = _rows(both, "instructions")
    shift = {"computation_id": na_comp, "instruction_id": na_ins, "line": lines_a, "offset": len(da)}
    assert ins == _rows(ra, "instructions") + _shifted(_rows(rb, "instructions"), shift)

    assert _rows(both, "stack_frames") == _rows(ra, "stack_frames") + _shifted(_rows(rb, "stack_frames"), {"line": lines_a})
    assert _rows(both, "custom_calls") == _rows(ra, "custom_calls") + _shifted(_rows(rb, "custom_calls"), {"instruction_id": na_ins})


def test_chunked_parse_of_concatenation_equals_serial(tmp_path: Path, monkeypatch) -> None:
    """The Rust reader cuts big HLO files into chunks at computation headers; a chunk that meets
    a second module (or a header-less one) gives up and the file is parsed serially."""
    a, b = PAIRS[0]
    data = (CORPUS / a).read_bytes() + (CORPUS / b).read_bytes()
    p = tmp_path / "both.txt"
    p.write_bytes(data)
    serial = hlodump.read_arrow(str(p), TABLES, threads=1)
    monkeypatch.setenv("HLODUMP_MIN_SPLIT_BYTES", "256")
    chunked = hlodump.read_arrow(str(p), TABLES, threads=4)
    ref = reference_read(str(p), TABLES)
    for t in TABLES:
        assert _rows(chunked, t) == _rows(serial, t) == _rows(ref, t), t


@pytest.mark.parametrize("reader", READERS, ids=["rust", "reference"])
def test_split_markers_and_header_less_parts(tmp_path: Path, reader) -> None:
    text = (
        "// RUN: hlo-opt %s --split-input-file\n"
        "add {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n"
        "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=add\n}\n"
        "// -----\n"
        "HloModule second, is_scheduled=true\n"
        "ENTRY main {\n  ROOT c = f32[] constant(1)\n}\n"
        "// -----\n"
        "// -----\n"  # an empty part: no module
        "only {\n  ROOT d = f32[] constant(2)\n}\n"
    )
    p = tmp_path / "parts.hlo.txt"
    p.write_text(text)
    d = reader(str(p), TABLES)
    mods = d["modules"].to_pylist()
    assert [(m["name"], m["module_index"], m["line"], m["is_scheduled"]) for m in mods] == [
        ("module_e", 0, 2, False), ("second", 1, 11, True), ("module_only", 2, 17, False)]
    comps = d["computations"].to_pylist()
    assert [(c["name"], c["module_index"]) for c in comps] == [("add", 0), ("e", 0), ("main", 1), ("only", 2)]
    ins = d["instructions"].to_pylist()
    by_comp = {c["computation_id"]: c["module_index"] for c in comps}
    assert [(i["name"], by_comp[i["computation_id"]]) for i in ins] == [
        ("a", 0), ("b", 0), ("x", 0), ("y", 0), ("c", 1), ("d", 2)]


@pytest.mark.parametrize("reader", READERS, ids=["rust", "reference"])
def test_lines_outside_any_module_are_still_errors(tmp_path: Path, reader) -> None:
    """Only a computation header starts a header-less module; other lines before a module are
    the error they always were."""
    p = tmp_path / "bad.hlo.txt"
    p.write_text("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n// -----\nFileNames\n")
    d = reader(str(p), TABLES, on_error="collect")
    errs = d["errors"].to_pylist()
    assert [(e["line"], e["message"]) for e in errs] == [(6, "expected 'HloModule' header")]


@pytest.mark.parametrize("reader", READERS, ids=["rust", "reference"])
def test_each_module_is_checked_for_computations(tmp_path: Path, reader) -> None:
    """The whole-file check (a module with no computation: cut short) looks at every module of
    the file, not only its last."""
    p = tmp_path / "two.hlo.txt"
    p.write_text("HloModule first\n\nHloModule second\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n")
    d = reader(str(p), on_error="collect")
    assert [(e["line"], e["message"]) for e in d["errors"].to_pylist()] == [
        (1, "module first has no computation (the file is cut short?)")]


def test_analyses_do_not_sum_several_modules_of_one_file(tmp_path) -> None:
    """The analyses take one module per file: a file of two modules gets no cost figure (a sum
    over two entry computations is no compile's) and a note naming its modules."""
    from hlodump import analysis as A

    a, b = (str(CORPUS / p) for p in PAIRS[0])
    two = tmp_path / "two.txt"
    two.write_bytes(open(a, "rb").read() + open(b, "rb").read())
    d = hlodump.read_arrow(str(two))
    names = d["modules"].column("name").to_pylist()
    assert len(names) == 2
    (row,) = A.cost_analysis(d)
    assert row["cost_analysis"] is None and all(n in row["note"] for n in names)
    (one,) = A.cost_analysis(hlodump.read_arrow(a))
    assert one["cost_analysis"] is not None  # each part alone has its figure


def test_summary_says_why_a_file_of_several_modules_has_no_cost(tmp_path, capsys) -> None:
    from hlodump import analysis as A
    from hlodump.cli import main

    a, b = (str(CORPUS / p) for p in PAIRS[0])
    two = tmp_path / "two.txt"
    two.write_bytes(open(a, "rb").read() + open(b, "rb").read())
    (s,) = A.summary(hlodump.read_arrow(str(two)))
    assert s["cost_analysis"] is None and "holds 2 modules" in s["cost_note"]
    (one,) = A.summary(hlodump.read_arrow(a))
    assert one["cost_note"] is None and one["cost_analysis"] is not None
    assert main(["summary", str(two)]) == 0
    assert "cost (XLA's HloCostAnalysis rules, as jax's cost_analysis()): none (its HLO file holds 2 modules" \
        in capsys.readouterr().out
