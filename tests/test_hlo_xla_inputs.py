"""HLO text as XLA's parser takes it (issue 31): inputs in the layout of XLA's own test files
(FileCheck `.hlo` files of openxla/xla: `// RUN:` / `// CHECK:` lines, modules separated by
`// -----`), each module compared with jaxlib's parse of it: the same computations, and in each
the same instructions, opcodes and operands.

Forms XLA's test inputs use that dumps never do (all accepted by XLA's lexer, which treats line
breaks as blanks): an attribute continued on a line of its own after a trailing ',' (or a line
starting with ','), a computation header with no blank before the signature's '('
(`%add(a: f32[]) -> f32[] {`), an empty signature (`ENTRY main () -> f32[6] {`), comments
anywhere a blank may be (also `ENTRY /* … */ name {` and before `HloModule`), a module name
ending in ':', computations without ENTRY or ROOT, one-space indentation.

Not read (documented in FORMATS.md §3.6.1): a computation header spanning lines, CR-only line
ends (a lone CR stays an error in the formats XLA writes), `{` on the line after a header.

Names: XLA's parser makes every instruction name unique in the module: a name already used in
an earlier computation gets a suffix (`lhs` → `lhs.1`, `sum` → `sum.1`). hlodump keeps the
names as the text spells them (a dump reader reports what the file says, and joins on those
names), so names are compared up to that suffix (`_same_name`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hlodump
from hlodump.reference.reader import read_arrow as reference_read

_hlo = pytest.importorskip("jaxlib._hlo")

from test_hlo_vs_xla import opcode_text  # noqa: E402

DATA = Path(__file__).parent / "data" / "xla_inputs"
FILES = sorted(DATA.glob("*.hlo"))


def modules_of(text: str) -> list[str]:
    """The modules of a FileCheck test input: RUN/CHECK lines dropped, split at `// -----`."""
    kept = "\n".join(l for l in text.split("\n") if not re.match(r"\s*// *(RUN|CHECK)", l))
    return [p for p in re.split(r"^// -----$", kept, flags=re.M) if p.strip()]


def _same_name(ours: str, xla: str) -> bool:
    """Equal, or XLA's uniquified spelling of ours (`NAME.N`)."""
    return ours == xla or re.fullmatch(re.escape(ours) + r"\.[0-9]+", xla) is not None


def _cases() -> list[tuple[Path, int]]:
    return [(f, k) for f in FILES for k in range(len(modules_of(f.read_text())))]


@pytest.mark.parametrize("reader", [hlodump.read_arrow, reference_read], ids=["rust", "reference"])
@pytest.mark.parametrize("path,k", _cases(), ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_module_matches_xla(tmp_path: Path, reader, path: Path, k: int) -> None:
    text = modules_of(path.read_text())[k]
    module = _hlo.hlo_module_from_text(text)
    xla = [(c.name, [(i.name, opcode_text(i.opcode), [o.name for o in i.operands()]) for i in c.instructions()])
           for c in module.computations()]
    p = tmp_path / "module.hlo.txt"
    p.write_text(text, encoding="utf-8")
    d = reader(str(p))  # strict: any error raises
    rows = d.instructions.to_pylist()
    ours = [(c["name"], [(r["name"], r["opcode"], r["operands"]) for r in rows
                         if r["computation_id"] == c["computation_id"]])
            for c in d.computations.to_pylist()]
    assert [c for c, _ in ours] == [c for c, _ in xla]
    for (cname, ins), (_, xins) in zip(ours, xla):
        assert len(ins) == len(xins), cname
        for (name, op, operands), (xname, xop, xoperands) in zip(ins, xins):
            assert _same_name(name, xname), (cname, name, xname)
            assert op == xop, (cname, name)
            assert len(operands) == len(xoperands) and all(map(_same_name, operands, xoperands)), (cname, name)


def test_renaming_is_what_the_comparison_allows() -> None:
    """The one difference left on purpose: XLA renames a name repeated across computations."""
    text = modules_of((DATA / "headers_without_blank.hlo").read_text())[0]
    names = [i.name for c in _hlo.hlo_module_from_text(text).computations() for i in c.instructions()]
    assert "lhs.1" in names and "sum.1" in names
    assert _same_name("lhs", "lhs.1") and not _same_name("lhs", "lhs1") and not _same_name("lh", "lhs.1")


def test_attribute_on_its_own_line_is_read_whole() -> None:
    text = modules_of((DATA / "attributes_on_own_lines.hlo").read_text())[1]
    import tempfile, os  # noqa: E401
    with tempfile.TemporaryDirectory() as td:
        p = os.path.join(td, "m.hlo.txt")
        Path(p).write_text(text)
        for reader in (hlodump.read_arrow, reference_read):
            (gemm,) = [r for r in reader(p).instructions.to_pylist() if r["name"] == "gemm"]
            assert gemm["custom_call_target"] == "__cublas$gemm"
            assert gemm["backend_config"] == '{"gemm_backend_config":{"alpha_real":1,"beta":0,"alpha_imag":0}}'
