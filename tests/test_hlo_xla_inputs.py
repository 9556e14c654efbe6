"""HLO text as XLA's parser takes it (issue 31): XLA's own test inputs (FileCheck `.hlo` files of
openxla/xla: `// RUN:` / `// CHECK:` lines, modules separated by `// -----`), each module
compared with jaxlib's parse of it: the same computations, and in each the same instructions,
opcodes and operands. `data/xla_inputs/openxla/` holds a sample of the real files (verbatim,
Apache-2.0; `SOURCES.json` and `tests/xla_inputs/collect.py` say where each came from);
`data/xla_inputs/*.hlo` are hand-written in the same layout for forms the sample lacks.

Modules XLA's parser rejects are skipped, with the reason, and counted (`EXPECTED_COUNTS`).

A file read whole gives one module per part (`// -----`, or a second `HloModule` header): one
`modules` row each, numbered by `module_index`, the computations of each part carrying its
`module_index` (`test_whole_file_gives_one_module_per_part`).

Header-less modules (computations only, no `HloModule` line) are what XLA's codegen tests write;
XLA's parser takes them and names the module `module_` + its entry computation (the `ENTRY` one,
else the last): so do we.

Forms XLA's test inputs use that dumps never do (all accepted by XLA's lexer, which treats line
breaks as blanks): an attribute continued on a line of its own after a trailing ',' (or a line
starting with ','), a computation header with no blank before the signature's '('
(`%add(a: f32[]) -> f32[] {`), an empty signature (`ENTRY main () -> f32[6] {`), comments
anywhere a blank may be (also `ENTRY /* … */ name {` and before `HloModule`), a module name
ending in ':', computations without ENTRY or ROOT, one-space indentation.

Computation headers over several lines, with `{` on the next line or other spacing, a body on
the header's line, `} ENTRY …` on one line (headers_over_lines.hlo) are read (FORMATS.md §3.5).
Not read (documented there): CR-only line ends (a lone CR stays an error in the formats XLA
writes), `HloModule` before a tab, module attributes starting on the next line, a
text that is a single instruction.

Names: compared up to XLA's NameUniquer, which renames a name repeated in the module (`lhs` →
`lhs.1`) and may renumber a numbered one (`add.11` → `add.0`).

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
FILES = sorted(DATA.rglob("*.hlo"))
REAL = DATA / "openxla"
# files, modules, modules XLA accepts, modules XLA rejects (by reason) — of the real sample
EXPECTED_COUNTS = {"files": 30, "modules": 30, "accepted": 30, "rejected": {}}


def modules_of(text: str) -> list[str]:
    """The modules of a FileCheck test input: RUN/CHECK lines dropped, split at `// -----`."""
    kept = "\n".join(l for l in text.split("\n") if not re.match(r"\s*// *(RUN|CHECK)", l))
    return [p for p in re.split(r"^// -----$", kept, flags=re.M) if p.strip()]


def _same_name(ours: str, xla: str) -> bool:
    """Equal, or XLA's uniquified spelling of ours: `NAME.N`, or — where ours ends in a number
    itself (`add.11`) — the same stem with another number (`add.0`: XLA's NameUniquer keeps one
    counter per stem)."""
    if ours == xla or re.fullmatch(re.escape(ours) + r"\.[0-9]+", xla) is not None:
        return True
    stem = re.fullmatch(r"(.+)\.[0-9]+", ours)
    return stem is not None and re.fullmatch(re.escape(stem.group(1)) + r"\.[0-9]+", xla) is not None


def _cases() -> list[tuple[Path, int]]:
    return [(f, k) for f in FILES for k in range(len(modules_of(f.read_text())))]


def _id(v) -> str:
    return v.relative_to(DATA).as_posix() if isinstance(v, Path) else str(v)


def _xla_parse(text: str):
    """jaxlib's module, or the first line of its error (a module XLA rejects)."""
    try:
        return _hlo.hlo_module_from_text(text), None
    except Exception as e:  # XlaRuntimeError: INVALID_ARGUMENT …
        return None, str(e).strip().split("\n")[0]


def _xla_computations(module) -> list:
    return [(c.name, [(i.name, opcode_text(i.opcode), [o.name for o in i.operands()]) for i in c.instructions()])
            for c in module.computations()]


def _our_computations(d, module_index: int | None = None) -> list:
    rows = d.instructions.to_pylist()
    return [(c["name"], [(r["name"], r["opcode"], r["operands"]) for r in rows
                         if r["computation_id"] == c["computation_id"]])
            for c in d.computations.to_pylist() if module_index is None or c["module_index"] == module_index]


@pytest.mark.parametrize("reader", [hlodump.read_arrow, reference_read], ids=["rust", "reference"])
@pytest.mark.parametrize("path,k", _cases(), ids=_id)
def test_module_matches_xla(tmp_path: Path, reader, path: Path, k: int) -> None:
    text = modules_of(path.read_text())[k]
    module, rejected = _xla_parse(text)
    if module is None:
        pytest.skip(f"XLA's parser rejects it: {rejected}")  # counted in test_corpus_counts
    xla = _xla_computations(module)
    p = tmp_path / "module.hlo.txt"
    p.write_text(text, encoding="utf-8")
    d = reader(str(p))  # strict: any error raises
    ours = _our_computations(d)
    # (`HloModule name:` — XLA's lexer drops the ':'; we keep the header's text)
    assert [n.removesuffix(":") for n in d.modules.column("name").to_pylist()] == [module.name]
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
    assert _same_name("add.11", "add.0") and not _same_name("add.11", "sub.0") and not _same_name("add.11", "add")


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


def test_corpus_counts() -> None:
    """The real sample: how many files and modules, how many XLA accepts; a module XLA rejects
    is skipped above with its reason, and counted here (never silently)."""
    files = sorted(REAL.rglob("*.hlo"))
    texts = [t for f in files for t in modules_of(f.read_text())]
    rejected: dict[str, int] = {}
    for t in texts:
        module, reason = _xla_parse(t)
        if module is None:
            rejected[reason] = rejected.get(reason, 0) + 1
    got = {"files": len(files), "modules": len(texts), "accepted": len(texts) - sum(rejected.values()),
           "rejected": rejected}
    assert got == EXPECTED_COUNTS


def test_sources_are_recorded() -> None:
    """Every real file is listed in SOURCES.json (repo, path, commit) with its bytes' blob id."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("collect", Path(__file__).parent / "xla_inputs" / "collect.py")
    collect = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(collect)  # type: ignore[union-attr]
    assert collect.check() == []
    assert all(e["repo"] == "openxla/xla" and len(e["commit"]) == 40 for e in collect.load())
    assert sum(p.stat().st_size for p in REAL.rglob("*.hlo")) < 300_000


@pytest.mark.parametrize("reader", [hlodump.read_arrow, reference_read], ids=["rust", "reference"])
@pytest.mark.parametrize("path", FILES, ids=_id)
def test_whole_file_gives_one_module_per_part(tmp_path: Path, reader, path: Path) -> None:
    """The file as it is (RUN/CHECK lines and `// -----` kept): one module per part, each with
    the computations and instructions XLA parses from that part alone."""
    parts = modules_of(path.read_text())
    p = tmp_path / "whole.hlo.txt"
    p.write_bytes(path.read_bytes())
    d = reader(str(p))
    assert d.modules.column("module_index").to_pylist() == list(range(len(parts)))
    for k, text in enumerate(parts):
        module, _ = _xla_parse(text)
        if module is None:
            continue
        assert d.modules.column("name")[k].as_py().removesuffix(":") == module.name
        ours = _our_computations(d, k)
        xla = _xla_computations(module)
        assert [c for c, _ in ours] == [c for c, _ in xla]
        for (_, ins), (_, xins) in zip(ours, xla):
            assert [op for _, op, _ in ins] == [op for _, op, _ in xins]
            assert all(map(_same_name, [n for n, _, _ in ins], [n for n, _, _ in xins]))
