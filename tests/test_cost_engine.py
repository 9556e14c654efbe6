"""The cost engine (issue 37): one HLO frame and one cost run per scope, set-wise over modules.

Real dumps: copies of corpus after-optimizations texts, each a module of its own. No timing: the
test counts what would grow if the cost looped per module (frame builds, cost runs, roll-up
levels, computations summed one instruction at a time where the order matters)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import hlodump
from hlodump import analysis as A
from hlodump.analysis import cost_rules, hlo_frame
from hlodump.analysis.hlo_shapes import parse_shape

CORPUS = Path(__file__).parent / "data" / "corpus" / "jax-0.12.0.1"
SOURCES = [
    CORPUS / "transformer" / "module_0002.jit_forward.cpu_after_optimizations.txt",  # fusions, dots
    CORPUS / "control_flow" / "module_0000.jit_rnn.cpu_after_optimizations.txt",  # while, call
    CORPUS / "spmd" / "module_0016.jit__fun.cpu_after_optimizations.txt",  # collectives
]


def _dump(tmp: Path, copies: int) -> Path:
    d = tmp / f"x{copies}"
    d.mkdir()
    for i in range(copies):
        for j, src in enumerate(SOURCES):
            name = src.name.split(".")[1]
            shutil.copy(src, d / f"module_{i * len(SOURCES) + j:05d}.{name}.cpu_after_optimizations.txt")
    return d


def _everything(d: object) -> dict:
    out = {"summary": A.summary(d), "cost_analysis": A.cost_analysis(d)}
    A.costs(d)
    A.roofline(d)
    A.cost_breakdown(d, "opcode")
    A.collectives(d)
    return out


def _counted(path: Path) -> tuple[dict, dict]:
    d = hlodump.read_arrow(path, threads=1, progress=False)
    before = (hlo_frame.BUILDS[0], cost_rules.RUNS[0], cost_rules.LEVELS[0], cost_rules.ORDERED[0])
    out = _everything(d)
    after = (hlo_frame.BUILDS[0], cost_rules.RUNS[0], cost_rules.LEVELS[0], cost_rules.ORDERED[0])
    counts = dict(zip(("builds", "runs", "levels", "ordered"), (a - b for a, b in zip(after, before))))
    return counts, out


def test_cost_is_set_wise(tmp_path: Path) -> None:
    one, r1 = _counted(_dump(tmp_path, 1))
    many, r50 = _counted(_dump(tmp_path, 50))
    # one frame and one cost run serve summary, cost_analysis, costs, roofline, breakdown, collectives
    assert one["builds"] == 1 and many["builds"] == 1
    assert one["runs"] == 1 and many["runs"] == 1
    # the roll-up goes level by level over all modules at once: 50 times the modules, same levels
    assert many["levels"] == one["levels"] > 0
    # only computations whose float32 sum depends on the order (fractional utilizations of
    # slices here) are summed in XLA's visiting order, each once: 50 copies, 50 times as many
    assert many["ordered"] == 50 * one["ordered"]
    # and every copy has the figure the single module has
    want = [r["cost_analysis"] for r in r1["cost_analysis"]]
    got = [r["cost_analysis"] for r in r50["cost_analysis"]]
    assert len(got) == 50 * len(want)
    assert all(g == want[i % len(want)] for i, g in enumerate(got))
    assert all(s["cost_analysis"] is not None for s in r50["summary"])


def _sequential(vals: list[float]) -> float:
    acc = np.float32(0.0)
    for v in vals:
        acc = np.float32(acc + np.float32(v))
    return float(acc)


def test_float32_sums_match_xlas_sequential_order() -> None:
    """The vectorised sums equal XLA's one-after-another float32 sums, exact or not."""
    rng = random.Random(7)
    groups: list[list[float]] = []
    for _ in range(300):
        k = rng.randint(1, 12)
        kind = rng.random()
        if kind < 0.3:  # small integers: exact in any order
            vals = [float(rng.randint(0, 5000)) for _ in range(k)]
        elif kind < 0.6:  # past 2**24: rounding depends on the order
            vals = [float(np.float32(rng.randint(1, 1 << 30))) for _ in range(k)]
        elif kind < 0.8:  # fractions (utilizations)
            vals = [float(np.float32(rng.random())) for _ in range(k)]
        else:  # custom calls' -1 among others
            vals = [-1.0 if rng.random() < 0.3 else float(np.float32(rng.randint(0, 1 << 26))) for _ in range(k)]
        groups.append(vals)
    first = np.array([g[0] for g in groups])
    rest = np.array([v for g in groups for v in g[1:]])
    owner = np.array([i for i, g in enumerate(groups) for _ in g[1:]], np.int64)
    got = cost_rules._seq_f32(first, rest, owner, len(groups))
    assert [float(x) for x in got] == [_sequential(g) for g in groups]


@pytest.mark.parametrize("text,size", [("opaque[]", 8), ("token[]", 0), ("(f32[], s32[3]{0})", 16),
                                       ("s4[10]{0:E(4)}", 5), ("f32[2,3]{1,0}", 24)])
def test_one_byte_size_of(text: str, size: int) -> None:
    """``ShapeUtil::ByteSizeOf(shape, 8)`` once: the memory tables and the cost rules agree
    (they disagreed on ``opaque[]``: the pointer size, 8)."""
    assert A.logical_bytes(text) == parse_shape(text).bytes == size


DATA = Path(__file__).parent / "data"
INPUTS = sorted(p for p in (DATA / "corpus").glob("jax-*") if p.is_dir()) + \
    sorted(p for p in (DATA / "cost").iterdir() if p.is_dir()) + \
    sorted(p for p in (DATA / "producers").iterdir() if p.is_dir())


def _both(path: Path) -> tuple[object, object]:
    out = []
    for columns in (False, True):
        cost_rules.COLUMNS = columns
        try:
            d = hlodump.read_arrow(path, threads=1, progress=False)
            t = A.costs(d)
            out.append(([r["cost_analysis"] for r in A.cost_analysis(d)],
                        {c: [None if isinstance(x, float) and x != x else x for x in t.column(c).to_pylist()]
                         for c in t.column_names}))
        finally:
            cost_rules.COLUMNS = True
    return out[0], out[1]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_columns_equal_the_handlers(path: Path) -> None:
    """The rules as columns (vectorised opcodes and fusions, rules run once per signature) give
    every figure the per-instruction Python handlers give, on every corpus release, the cost
    inputs and the TensorFlow / PyTorch-XLA dumps."""
    (ref_ca, ref_t), (ca, t) = _both(path)
    assert ca == ref_ca
    assert t == ref_t


def test_attribute_values_come_from_the_core_splitter() -> None:
    """The cost rules' attribute values are the core parser's split (issue 37: no third attribute
    parser): a ``", "`` inside a string or braces never ends a value; the plain scan only for the
    forms the core leaves to the general grammar."""
    from hlodump import _core
    from hlodump.analysis.hlo_frame import attr

    text = 'custom_call_target="a, b=c", window={size=3x3 pad=0_1x0_1}, calls=%f, index=2'
    assert attr(text, "window") == "size=3x3 pad=0_1x0_1"
    assert attr(text, "custom_call_target") == '"a, b=c"'
    assert attr(text, "index") == "2" and attr(text, "b") is None
    assert _core.attribute_value(text, "calls") == "%f"
    with pytest.raises(ValueError):
        _core.attribute_value("index=1 , dimensions={0}", "dimensions")
    assert attr("index=1 , dimensions={0}", "dimensions") == "0"
