"""HLO text that XLA's own parser accepts (or rejects), read by both parsers (issue 10).

Each hand-written module is compared three ways: the Rust core equals the reference cell for cell
(``assert_same`` of test_rust_vs_reference_hlo), both read what XLA's parser (jaxlib) reads —
computations, instruction names, opcodes, operands — and the formerly silent case now gives the
row or the error asserted here. ``--hlo-corpus DIR`` also runs our strict parse and XLA's over every
HLO module file under DIR (tests/conftest.py).
"""

from __future__ import annotations

import os

import pytest

import hlodump
from hlodump import reference
from hlodump.exceptions import ParseError

from test_hlo_vs_xla import opcode_text
from test_rust_vs_reference_hlo import assert_same

_hlo = pytest.importorskip("jaxlib._hlo")

HEAD = "HloModule m\n\n"

ACCEPTED = {
    # 1. comment lines (and a licence block) before the header: was kind=other, zero rows
    "leading_comments": "// RUN: hlo-opt %s --platform=gpu | FileCheck %s\n// CHECK: fusion\n"
                        "/* licence\n   text */\n\n" + HEAD +
                        "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                        "  ROOT %n = f32[2]{0} negate(%p)\n}\n",
    # 2. comments inside computations: own line, end of line, inside an instruction
    "comments": HEAD + "// before\nENTRY %e (p: f32[2]) -> f32[2] { // header comment\n"
                "  // CHECK: negate\n  %p = f32[2]{0} parameter(0) // end of line\n"
                "  /* own line */\n  ROOT %n = f32[2]{0} negate(/* inside */ %p), metadata={op_name=\"a\"} /* x */\n"
                "} // e\n",
    # 3. an instruction continued on the next lines
    "continuation": HEAD + "ENTRY %e (a: f32[7,7,7], b: f32[7,7,7]) -> f32[7,7,7] {\n"
                    "  %a = f32[7,7,7]{2,1,0} parameter(0)\n  %b = f32[7,7,7]{2,1,0} parameter(1)\n"
                    "  ROOT %d = f32[7,7,7]{2,1,0} dot(%a, %b),\n    lhs_batch_dims={0}, lhs_contracting_dims={2},\n"
                    "    rhs_batch_dims={0},\n    rhs_contracting_dims={1}\n}\n",
    "continuation_leading_comma": HEAD + "ENTRY %e (a: f32[2]) -> f32[2] {\n  %a = f32[2]{0} parameter(0)\n"
                                  "  ROOT %n = f32[2]{0} negate(%a)\n    , metadata={op_name=\"x\"}\n}\n",
    "operands_over_lines": HEAD + "ENTRY %e (a: f32[2], b: f32[2]) -> f32[2] {\n  %a = f32[2]{0} parameter(0)\n"
                           "  %b = f32[2]{0} parameter(1)\n  ROOT %s = f32[2]{0} add(\n    %a,\n    %b\n  )\n}\n",
    # 4. instructions without a result shape (XLA infers it)
    "shapeless": HEAD + "ENTRY %e (p0: f32[2], p1: f32[2]) -> f32[2] {\n  p0 = f32[2] parameter(0)\n"
                 "  p1 = f32[2] parameter(1)\n  n = negate(p0)\n  ROOT out = add(n, p1)\n}\n",
    # 5. extra blanks and tabs between tokens
    "blanks": HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
              "  %c  =  f32[2]{0}   copy( %p )  ,  metadata={op_name=\"x\"}\n"
              "\tROOT\t%n =\tf32[2]{0}\tnegate(%c) ,metadata={op_name=\"y\"}  \n}\n",
    "column0_and_one_line": HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n%p = f32[2]{0} parameter(0)\n"
                            "  %c = f32[2]{0} copy(%p) ROOT %n = f32[2]{0} negate(%c) }\n",
}

REJECTED = {
    # 6. what XLA rejects: (text, line of our error, words in our message)
    "nul_in_shape": (HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                     "  ROOT %n = f32[2\x00]{0} negate(%p)\n}\n", 5, "NUL"),
    "cut_off_attribute_list": (HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                               "  ROOT %n = f32[2]{0} negate(%p), sharding={", 5, "not closed"),
    "trailing_comma": (HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                       "  ROOT %n = f32[2]{0} negate(%p), \n}\n", 6, "attribute name"),
    "empty_value": (HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                    "  ROOT %n = f32[2]{0} negate(%p), sharding=\n}\n", 6, "a value after 'sharding='"),
    "mismatched_bracket": (HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                           "  ROOT %n = f32[2]{0} negate(%p]\n}\n", 5, "expected ')'"),
    "unterminated_comment": (HEAD + "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                             "  /* never closed\n  ROOT %n = f32[2]{0} negate(%p)\n}\n", 5, "unterminated comment"),
}


def _write(tmp_path, text) -> str:
    p = tmp_path / "module_0001.m.before_optimizations.txt"
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(p)


def _xla(text: str):
    module = _hlo.hlo_module_from_text(text)
    return [(c.name, [(i.name, opcode_text(i.opcode), [o.name for o in i.operands()]) for i in c.instructions()])
            for c in module.computations()]


def _ours(d):
    comps = d.computations.to_pylist()
    rows = d.instructions.to_pylist()
    return [(c["name"], [(r["name"], r["opcode"], [] if r["opcode"] in ("parameter", "constant") else r["operands"])
                         for r in rows if r["computation_id"] == c["computation_id"]]) for c in comps]


def _xla_params(x):
    # XLA lists parameters with their operands [] too
    return x


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_like_xla(name, tmp_path):
    text = ACCEPTED[name]
    path = _write(tmp_path, text)
    assert_same(path, strict_too=True)
    want = _xla(text)
    for read in (hlodump.read_arrow, reference.read_arrow):
        d = read(path)  # strict: no error
        assert d.files.column("kind").to_pylist() == ["hlo_module"]
        assert _ours(d) == want


def test_continuation_row(tmp_path):
    """The row of a continued instruction: `line` is its first line, `attributes` the raw text
    over the lines (line breaks and indentation as written), a view into the file."""
    text = ACCEPTED["continuation"]
    d = hlodump.read_arrow(_write(tmp_path, text))
    r = [r for r in d.instructions.to_pylist() if r["name"] == "d"][0]
    assert r["line"] == 6
    assert r["attributes"] == ("lhs_batch_dims={0}, lhs_contracting_dims={2},\n    rhs_batch_dims={0},\n"
                               "    rhs_contracting_dims={1}")
    assert r["offset"] == text.index("  ROOT %d")


def test_shapeless_row(tmp_path):
    d = hlodump.read_arrow(_write(tmp_path, ACCEPTED["shapeless"]))
    rows = {r["name"]: r for r in d.instructions.to_pylist()}
    assert rows["out"]["shape"] == "" and rows["out"]["is_root"] and rows["out"]["operands"] == ["n", "p1"]
    assert rows["p0"]["shape"] == "f32[2]"


def test_comment_cells(tmp_path):
    d = hlodump.read_arrow(_write(tmp_path, ACCEPTED["comments"]))
    rows = {r["name"]: r for r in d.instructions.to_pylist()}
    assert rows["n"]["op_name"] == "a" and rows["n"]["operands"] == ["p"]
    assert rows["n"]["attributes"] == 'metadata={op_name="a"}'
    assert rows["p"]["attributes"] == ""


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_like_xla(name, tmp_path):
    text, line, words = REJECTED[name]
    with pytest.raises(Exception):
        _hlo.hlo_module_from_text(text)
    path = _write(tmp_path, text)
    assert_same(path, strict_too=True)
    for read in (hlodump.read_arrow, reference.read_arrow):
        with pytest.raises(ParseError) as e:
            read(path)
        assert e.value.line == line, (e.value.line, e.value.message)
        assert words in e.value.message, e.value.message


@pytest.mark.parametrize("data,line", [
    (b"HloModule m\r\rENTRY %e () -> f32[] {\r  ROOT %c = f32[] constant(1)\r}\r", 1),
    (b"HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1)\r\n}\n\r", 6),
    (b"BufferAssignment:\nallocation 0: size 4, parameter 0, shape |f32[]| at ShapeIndex {}:\r x\n", 2),
])
def test_lone_cr_is_an_error(tmp_path, data, line):
    """7. A lone CR is an error at its line in every format (a CR-only file used to be read as one
    header line)."""
    name = "a.txt" if data.startswith(b"Buffer") else "module_0001.m.before_optimizations.txt"
    p = tmp_path / name
    p.write_bytes(data)
    for read in (hlodump.read_arrow, reference.read_arrow):
        with pytest.raises(ParseError) as e:
            read(str(p))
        assert e.value.line == line and "lone CR" in e.value.message
        d = read(str(p), on_error="collect")
        assert "lone CR" in d.errors.column("message").to_pylist()[0]
    if not data.startswith(b"Buffer"):
        assert_same(str(p))


def test_corpus_against_xla(request):
    """Every HLO module file under --hlo-corpus: our strict parse succeeds exactly when XLA's
    does, and gives XLA's computations, instruction names, opcodes and operands."""
    root = request.config.getoption("--hlo-corpus")
    if not root:
        pytest.skip("no --hlo-corpus DIR given")
    inv = hlodump.read_arrow(root, tables=["files"], on_error="collect").files.to_pylist()
    files = sorted(r["path"] if os.path.isabs(r["path"]) else os.path.join(root, r["path"])
                   for r in inv if r["kind"] == "hlo_module" or r.get("content_kind") == "hlo_module")
    assert files
    diffs = []
    n_instr = 0
    for p in files:
        with open(p, "rb") as f:
            data = f.read()
        try:
            want = _xla(data.decode("utf-8"))
        except Exception as e:  # XLA rejects it: so must we
            try:
                hlodump.read_arrow(p)
                diffs.append((p, f"XLA rejects ({str(e)[:80]}), we accept"))
            except ParseError:
                pass
            continue
        try:
            got = _ours(hlodump.read_arrow(p))
        except ParseError as e:
            diffs.append((p, f"we reject: {e}"))
            continue
        n_instr += sum(len(i) for _, i in want)
        if got != want:
            diffs.append((p, "tables differ"))
    print(f"{len(files)} files, {n_instr} instructions compared, {len(diffs)} differences")
    assert not diffs, diffs[:20]


# ---------------------------------------------------------------------------------------------
# XLA's rules that no single field shows (issue 50, `src/hlo/rules.rs`, `reference/hlo/rules.py`):
# each was read as if fine before (no error, no note, strict too). A rule XLA's parser enforces
# on what only a newer XLA prints (an opcode, an element type, a metadata key) is a note (its row
# kept; strict: an error); one it enforces on the structure is an error (no row).

BODY = "ENTRY %e (p: f32[3]) -> f32[3] {\n  %p = f32[3]{0} parameter(0)\n"
OK = HEAD + BODY + '  ROOT %n = f32[3]{0} negate(%p), metadata={op_name="a"}\n}\n'

#: name: (text, line, column, words of the error) — XLA's parser refuses each text
RULE_ERRORS = {
    "malformed_dimension": (OK.replace("ROOT %n = f32[3]{0}", "ROOT %n = f32[3,]{0}"), 5, 19,
                            "expected a dimension size"),
    "malformed_layout": (OK.replace("ROOT %n = f32[3]{0}", "ROOT %n = f32[3]{0,}"), 5, 22,
                         "expected a dimension number in the layout"),
    "two_layouts": (OK.replace("ROOT %n = f32[3]{0}", "ROOT %n = f32[3]{0}{0}"), 5, 22, "after the shape"),
    "element_type_not_a_word": (OK.replace("ROOT %n = f32[3]{0}", "ROOT %n = F32[3]{0}"), 5, 13,
                                "'F32' is not an element type"),
    "duplicate_name": (HEAD + BODY + "  %n = f32[3]{0} negate(%p)\n  ROOT %n = f32[3]{0} negate(%p)\n}\n", 6, 9,
                       "'n' is already defined in this computation (line 5)"),
    "dangling_operand": (OK.replace("negate(%p)", "negate(%q)"), 5, 31, "operand 'q' is not defined"),
    "operand_used_before_defined": (HEAD + "ENTRY %e (p: f32[3]) -> f32[3] {\n  ROOT %n = f32[3]{0} negate(%p)\n"
                                    "  %p = f32[3]{0} parameter(0)\n}\n", 4, 31, "operand 'p' is not defined"),
    "dangling_called_computation": (OK.replace("negate(%p)", "call(%p), to_apply=%nothere"), 5, 42,
                                    "computation 'nothere' is not defined"),
    "called_computation_defined_after": (
        HEAD + BODY + "  ROOT %n = f32[3]{0} call(%p), to_apply=%c\n}\n\n%c (q: f32[3]) -> f32[3] {\n"
        "  %q = f32[3]{0} parameter(0)\n  ROOT %r = f32[3]{0} negate(%q)\n}\n", 5, 42, "computation 'c' is not defined"),
    "repeated_attribute": (OK.replace('metadata={op_name="a"}', 'metadata={op_name="a"}, metadata={op_name="b"}'),
                           5, 59, "attribute 'metadata' is given twice"),
    "unterminated_string": (HEAD + BODY + '  %a = f32[3]{0} negate(%p), metadata={op_name="a}\n'
                            '  %b = f32[3]{0} negate(%p), metadata={op_name="b"}\n'
                            '  ROOT %n = f32[3]{0} add(%a, %b), metadata={op_name="d"}\n}\n', 5, 48,
                            "unterminated string: no closing '\"' on its line"),
}

#: name: (text, kind, token, line, column) — a newer XLA's text, or one XLA reads as written
RULE_NOTES = {
    "unknown_opcode": (OK.replace("negate(%p)", "frobnicate(%p)"), "unknown_opcode", "frobnicate", 5, 23),
    "unknown_element_type": (OK.replace("ROOT %n = f32[3]{0}", "ROOT %n = f99[3]{0}"), "unknown_element_type", "f99",
                             5, 13),
    "unknown_metadata_key": (OK.replace('op_name="a"', 'op_name="a" frob=3'), "unknown_metadata_key", "frob", 5, 57),
    "empty_operand": (OK.replace("negate(%p)", "add(%p, , %p)"), "empty_operand", "", 5, 27),
}


@pytest.mark.parametrize("name", sorted(RULE_ERRORS))
def test_xla_rule_errors(name, tmp_path):
    """An error at the place, no row for the instruction, the other rows kept — both readers,
    and XLA's parser refuses the text too."""
    text, line, column, words = RULE_ERRORS[name]
    with pytest.raises(Exception):
        _hlo.hlo_module_from_text(text)
    path = _write(tmp_path, text)
    assert_same(path, strict_too=True)
    for read in (hlodump.read_arrow, reference.read_arrow):
        with pytest.raises(ParseError) as e:
            read(path)
        assert (e.value.line, e.value.column) == (line, column), (e.value.line, e.value.column, e.value.message)
        assert words in e.value.message, e.value.message
        d = read(path, on_error="collect")
        assert [(r["line"], r["column"]) for r in d.errors.to_pylist()] == [(line, column)]
        rows = d.instructions.to_pylist()
        assert line not in [r["line"] for r in rows] or name == "duplicate_name"
        if name == "unterminated_string":  # the instructions after the damage are read
            assert [r["name"] for r in rows] == ["p", "b", "n"]


@pytest.mark.parametrize("name", sorted(RULE_NOTES))
def test_xla_rule_notes(name, tmp_path):
    """One note (kind, token, place), the row kept as written — both readers; strict: an error
    at the same place."""
    text, kind, token, line, column = RULE_NOTES[name]
    path = _write(tmp_path, text)
    assert_same(path)
    for read in (hlodump.read_arrow, reference.read_arrow):
        d = read(path)
        assert [(n["kind"], n["token"], n["line"], n["column"]) for n in d.notes.to_pylist()] == [
            (kind, token, line, column)]
        assert d.instructions.column("name").to_pylist() == ["p", "n"]
        assert d.errors.num_rows == 0
        with pytest.raises(ParseError) as e:
            read(path, strict=True)
        assert (e.value.line, e.value.column) == (line, column)
    if name == "empty_operand":  # XLA reads it so: the empty item skipped
        assert _xla(text) == _ours(hlodump.read_arrow(path))
        assert hlodump.read_arrow(path).instructions.column("operands").to_pylist()[1] == ["p", "p"]
    else:
        with pytest.raises(Exception):
            _hlo.hlo_module_from_text(text)


def test_names_are_per_computation_and_called_computations_per_module(tmp_path):
    """What XLA's parser accepts stays accepted: a name reused in another computation, a
    computation called by a later one, a module after a `// -----` with its own names."""
    text = (HEAD + "%c (p: f32[3]) -> f32[3] {\n  %p = f32[3]{0} parameter(0)\n  ROOT %n = f32[3]{0} negate(%p)\n}\n\n"
            + BODY + "  ROOT %n = f32[3]{0} call(%p), to_apply=%c\n}\n// -----\n" + HEAD
            + "ENTRY %c (p: f32[3]) -> f32[3] {\n  %p = f32[3]{0} parameter(0)\n  ROOT %n = f32[3]{0} negate(%p)\n}\n")
    _hlo.hlo_module_from_text(text.split("// -----")[0])
    path = _write(tmp_path, text)
    assert_same(path, strict_too=True)
    for read in (hlodump.read_arrow, reference.read_arrow):
        d = read(path, strict=True)
        assert d.instructions.num_rows == 6 and d.notes.num_rows == 0


def test_comment_over_lines_hides_instructions_as_in_xla(tmp_path):
    """`/* … */` over several lines is a comment, as XLA's lexer reads it: the instructions
    inside are not instructions (both readers give XLA's tables)."""
    text = (HEAD + BODY + "  /*\n  %a = f32[3]{0} negate(%p)\n  %b = f32[3]{0} negate(%a)\n  %c = f32[3]{0} negate(%b)\n"
            "  */\n  ROOT %n = f32[3]{0} negate(%p)\n}\n")
    path = _write(tmp_path, text)
    assert_same(path, strict_too=True)
    for read in (hlodump.read_arrow, reference.read_arrow):
        assert _ours(read(path, strict=True)) == _xla(text) == [("e", [("p", "parameter", []), ("n", "negate", ["p"])])]
