"""Cross-check the HLO text parser against XLA's own HLO parser (jaxlib 0.10.2).

API used (checked interactively with jaxlib 0.10.2):

* ``jaxlib._hlo.hlo_module_from_text(text) -> HloModule`` parses module text (raises on error).
* ``HloModule.computations()`` → list of ``HloComputation`` in the module's post order, which for
  every file here is the printed order; ``HloComputation.name`` (no ``%``).
* ``HloComputation.instructions()`` → ``HloInstruction`` list in printed order (for these files);
  ``.name`` (no ``%``), ``.operands()`` (instruction objects, use ``.name``),
  ``.opcode`` — an ``HloOpcode`` enum (``HloOpcode.kGetTupleElement``), *not* the text spelling;
  ``.to_string()`` prints the instruction the way the dumper does (``%name = SHAPE opcode(…)…``).

The enum name is turned into the printed spelling by CamelCase → kebab-case (``kGetTupleElement``
→ ``get-tuple-element``) plus the few opcodes whose printed names differ (``_OPCODE_EXCEPTIONS``);
independently, ``" <opcode>("`` must occur in ``to_string()`` right after the result shape.

Every HLO text file in tests/data parses with XLA: the module texts of all twelve jax releases in
tests/data/corpus (0.4.13 … 0.10.2: the old syntax without ``%`` and signatures, ``} // name``
comments, stack-frame tables, …), so there is no skip list: ``XLA_CANNOT_PARSE`` is empty.
"""

from __future__ import annotations

import functools
import re

import pytest

from test_hlo import HLO_FILES, _id

_hlo = pytest.importorskip("jaxlib._hlo")

# Files XLA cannot parse, with the reason. Empty: every file parses (jaxlib 0.10.2).
XLA_CANNOT_PARSE: dict[str, str] = {}

# Compact tuple operands (`%x#2`, XLA 2026: jax >= 0.11, some pass dumps of the TensorFlow and
# PyTorch/XLA samples) postdate jaxlib 0.10.2's parser: those texts are checked against the
# parse of the jaxlib that wrote them (tests/test_hlo_vs_xla_2026.py).
_COMPACT = re.compile(rb"[(,] *(?:[^ ,()]+ )?%?[A-Za-z_][A-Za-z0-9_.\-]*#[0-9]")


def _old_syntax(path: str) -> bool:
    with open(path, "rb") as f:
        return _COMPACT.search(f.read()) is None


XLA_FILES = [p for p in HLO_FILES if _old_syntax(p)]

# HloOpcode enum names whose printed spelling is not the kebab-case of the name.
_OPCODE_EXCEPTIONS = {
    "kAtan2": "atan2",
    "kCos": "cosine",
    "kSin": "sine",
    "kExp": "exponential",
    "kExpm1": "exponential-minus-one",
    "kLog1p": "log-plus-one",
    "kOptimizationBarrier": "opt-barrier",
    "kClz": "count-leading-zeros",
    "kPopulationCount": "popcnt",
    "kTopK": "topk",
    "kRngBitGenerator": "rng-bit-generator",
    "kFft": "fft",
}


def opcode_text(op) -> str:
    name = op.name
    if name in _OPCODE_EXCEPTIONS:
        return _OPCODE_EXCEPTIONS[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name[1:]).lower()


def test_opcode_spelling_helper():
    assert opcode_text(_hlo.HloOpcode.kGetTupleElement) == "get-tuple-element"
    assert opcode_text(_hlo.HloOpcode.kAllReduceStart) == "all-reduce-start"
    assert opcode_text(_hlo.HloOpcode.kCos) == "cosine"


@functools.lru_cache(maxsize=None)
def _xla(path: str) -> list:
    """XLA's parse of one file (computations: names, opcodes, operands, printed instructions);
    cached: both readers are compared with the same parse."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    module = _hlo.hlo_module_from_text(text)
    xla = []
    for comp in module.computations():
        xla.append((comp.name, [(i.name, opcode_text(i.opcode), [o.name for o in i.operands()],
                                 i.to_string()) for i in comp.instructions()]))
    return xla


@pytest.mark.parametrize("path", XLA_FILES, ids=_id)
def test_matches_xla(reader, path):
    if _id(path) in XLA_CANNOT_PARSE:
        pytest.skip(XLA_CANNOT_PARSE[_id(path)])
    xla = _xla(path)

    d = reader(path)
    comps = d.computations.to_pylist()
    by_comp: dict[int, list] = {c["computation_id"]: [] for c in comps}
    for r in d.instructions.to_pylist():
        by_comp[r["computation_id"]].append(r)
    ours = [(c["name"], by_comp[c["computation_id"]]) for c in comps]

    assert [name for name, _ in ours] == [name for name, _ in xla]
    for (cname, rows), (_, xrows) in zip(ours, xla):
        assert [r["name"] for r in rows] == [x[0] for x in xrows], cname
        for r, (xname, xop, xoperands, xstr) in zip(rows, xrows):
            assert r["opcode"] == xop, (cname, xname)
            assert r["operands"] == ([] if r["opcode"] in ("parameter", "constant") else xoperands), xname
            # The printed instruction: "%name = SHAPE opcode(" — same shape text as in the file.
            assert xstr.startswith(f"%{xname} = {r['shape']} {r['opcode']}("), xname


def _snippets() -> dict[str, str]:
    import test_hlo as t

    # VARIANTS without its "calls=%sum, %async_wrapped" line: that printer form (§3.8.1) is not
    # accepted back by XLA's reader ("unexpected attribute calls" on a call).
    variants = "\n".join(l for l in t.VARIANTS.split("\n") if "%multi" not in l)
    return {"ESCAPES": t.ESCAPES, "INDEX_COMMENTS": t.INDEX_COMMENTS, "VARIANTS": variants,
            "SHORT_PARSABLE": t.SHORT_PARSABLE, "MULTILINE_CONSTANT": t.MULTILINE_CONSTANT}


@pytest.mark.parametrize("name", sorted(_snippets()))
def test_hand_made_snippets_match_xla(reader, tmp_path, name):
    text = _snippets()[name]
    path = tmp_path / "snippet.txt"
    path.write_text(text, encoding="utf-8")
    module = _hlo.hlo_module_from_text(text)
    xla = [(c.name, [(i.name, opcode_text(i.opcode), [o.name for o in i.operands()])
                     for i in c.instructions()]) for c in module.computations()]
    d = reader(str(path))
    comps = d.computations.to_pylist()
    rows = d.instructions.to_pylist()
    ours = [(c["name"], [(r["name"], r["opcode"], r["operands"]) for r in rows
                         if r["computation_id"] == c["computation_id"]]) for c in comps]
    assert ours == xla
