"""Issue 36: the HLO text of jax 0.11 / 0.12, TensorFlow 2.21 and PyTorch/XLA 2.9 against XLA's
own parse by the jaxlib that wrote it (recorded in the sample's ``xla_parse.json`` by
``tools/corpus/generators/xla_parse.py``: jaxlib 0.12 cannot be installed beside the test env's
jax; ``tools/newest-xla`` repeats the check live).

Per computation, the opcode counts XLA's parser reports equal ours, where XLA's parser turns
every compact tuple operand ``%x#i#j`` into get-tuple-elements: one per distinct (tuple, path
prefix) of a computation, reused (``<x>_<i>_<j>``), so get-tuple-element = the printed ones + the
distinct prefixes of our ``operand_index`` paths.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import hlodump

DATA = Path(__file__).parent / "data"
ORACLES = sorted(DATA.glob("corpus/jax-0.1[1-9]*/xla_parse.json")) + sorted(DATA.glob("producers/*/xla_parse.json"))
CASES = [(o, f) for o in ORACLES for f in sorted(json.loads(o.read_text())["files"])]


@pytest.mark.parametrize("oracle,rel", CASES, ids=[f"{o.parent.name}/{f}" for o, f in CASES])
def test_opcode_counts_equal_xla(oracle: Path, rel: str) -> None:
    want = json.loads(oracle.read_text())["files"][rel]
    path = oracle.parent / rel
    d = hlodump.read_arrow(path, strict=True, string_view=False)
    comps = d["computations"].to_pydict()
    names = dict(zip(comps["computation_id"], comps["name"]))
    ins = d["instructions"].to_pydict()
    ours: dict[str, Counter] = {n: Counter() for n in names.values()}
    synth: dict[str, set] = {n: set() for n in names.values()}
    for cid, op, operands, paths in zip(ins["computation_id"], ins["opcode"], ins["operands"], ins["operand_index"]):
        c = names[cid]
        ours[c][op] += 1
        for name, p in zip(operands, paths):
            for k in range(1, len(p) + 1):
                synth[c].add((name, tuple(p[:k])))
    for c, s in synth.items():
        if s:
            ours[c]["get-tuple-element"] += len(s)
    theirs = {c["name"]: Counter(c["opcodes"]) for c in want["computations"]}
    # XLA may rename a printed instruction or computation it clashes with: compare as multisets
    assert sorted(map(sorted, (x.items() for x in ours.values()))) == sorted(map(sorted, (x.items() for x in theirs.values()))), rel


def test_oracles_exist() -> None:
    assert len(ORACLES) >= 2 and len(CASES) >= 50
