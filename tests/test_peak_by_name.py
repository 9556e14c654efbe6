"""Peak lists that name instructions only (XLA before 0.6: ``    name: N bytes``, N the ByteSizeOf
of the instruction's whole shape, 8 bytes per tuple element): each listed row is one value of
that instruction live at the peak step, so ``peak_buffers`` gives every row its own value —
shape index, logical bytes, category — instead of the whole tuple's 8-bytes-per-element size
(issue 29: a GPU custom call's ``{3}`` of 14,745,600 bytes was shown as a 40-byte ``{}`` row and
the peak's temporaries as 80 bytes).

Oracle: the files' own rows, read here without the engine — the live-range lines that cover the
peak step, the used-value lines (shape of each value), the allocation flags — and sizes from
the shape text by a small independent rule.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A

_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


def _bytes_of(shape: str) -> int:
    """Bytes of an array shape `f32[9,3,12]{2,1,0}`; a tuple counts 8 bytes per element (a pointer)."""
    shape = re.sub(r"/\*.*?\*/", "", shape).strip()
    if shape.startswith("("):
        depth, n = 0, 1 if shape.strip("() ") else 0
        for ch in shape[1:-1]:
            depth += ch in "([{"
            depth -= ch in ")]}"
            n += ch == "," and depth == 0
        return 8 * n
    m = re.fullmatch(r"([a-z0-9]+)\[([0-9,]*)\](\{.*\})?", shape)
    assert m, shape
    n = 1
    for dim in filter(None, m.group(2).split(",")):
        n *= int(dim)
    return n * _DTYPE_BYTES[m.group(1)]


def _category(a: dict) -> str:
    if a["parameter"] is not None:
        return "parameter"
    if a["is_maybe_live_out"] or a["is_output"]:
        return "output"
    if a["is_constant"]:
        return "constant"
    return "thread_local" if a["is_thread_local"] else "temporary"


DIRS = ["corpus/jax-0.4.26/control_flow", "corpus/jax-0.4.26/spmd"]


@pytest.mark.parametrize("rel", DIRS)
def test_each_row_listed_by_name_is_one_live_value(rel: str) -> None:
    d = hlodump.read_arrow(os.path.join(DATA, rel), progress=False)
    rows = A.listed_peak_buffers(d).to_pylist()
    assert rows and all(r["listed_by_name"] for r in rows)  # these releases print names only
    files = {f["file_id"]: f for f in d.files.to_pylist()}
    module_of = {f["file_id"]: (f["dump"], f["module_id"]) for f in files.values()}
    live = defaultdict(set)            # (module, step) → {(instruction, index)} from the live-range lines
    for r in d.live_ranges.to_pylist():
        live[module_of[r["file_id"]]].add((r["instruction"], r["shape_index"] or "{}", r["start"], r["end"]))
    shape = {}                          # (module, instruction, index) → shape, allocation
    for r in d.assignments.to_pylist():
        shape[(module_of[r["file_id"]], r["instruction"], r["shape_index"] or "{}")] = (r["shape"], r["allocation"])
    allocs = {(module_of[a["file_id"]], a["allocation"]): a for a in d.allocations.to_pylist()}

    by_module = defaultdict(list)
    for r in rows:
        by_module[module_of[r["file_id"]]].append(r)
    tuples_seen = 0
    for mod, rs in by_module.items():
        t = rs[0]["time"]
        live_at_t = Counter(i for i, _, s, e in live[mod] if s <= t <= e)
        listed = Counter(r["instruction"] for r in rs)
        for r in rs:
            inst, idx = r["instruction"], r["shape_index"]
            # the printed size is the instruction's whole shape; kept as listed
            whole = shape.get((mod, inst, "{}"))
            if whole is not None:
                assert r["listed_bytes"] == _bytes_of(whole[0]), r
            if listed[inst] > live_at_t[inst]:
                continue  # XLA lists more values than the live ranges hold (peak_check explains it)
            assert any(i == inst and x == idx and s <= t <= e for i, x, s, e in live[mod]), r
            sh, alloc = shape[(mod, inst, idx)]
            assert r["shape"] == sh and r["allocation"] == alloc
            assert r["bytes"] == _bytes_of(sh), r
            assert r["category"] == _category(allocs[(mod, alloc)]), r
            assert r["buffer"] == inst + idx
            tuples_seen += idx != "{}"
        # every listed value of an instruction is a different value
        assert len({(r["instruction"], r["shape_index"]) for r in rs if r["value_id"] is not None}) == \
            sum(1 for r in rs if r["value_id"] is not None)
        assert [r["rank"] for r in sorted(rs, key=lambda r: r["rank"])] == list(range(len(rs)))
        assert sorted(rs, key=lambda r: r["rank"])[-1]["cumulative_bytes"] == sum(r["bytes"] for r in rs)
    assert tuples_seen > 0  # the corpus has tuple elements listed by name (while-loop arg_tuple)


def test_summary_keeps_xla_listed_sum_and_counts_elements_by_category() -> None:
    d = hlodump.read_arrow(os.path.join(DATA, "corpus/jax-0.4.26/control_flow"), progress=False)
    rows = A.listed_peak_buffers(d).to_pylist()
    for s in A.summary(d, top=3, cost=False):
        mine = [r for r in rows if r["module"] == s["module"]]
        if not mine:
            continue
        # XLA's own figure: the sum of the sizes as printed
        assert s["peak"]["bytes"] == sum(r["listed_bytes"] for r in mine)
        by_cat = Counter()
        for r in mine:  # the bytes XLA's list prints: the table adds up to its headline (issue 51)
            by_cat[r["category"]] += r["listed_bytes"]
        assert s["peak"]["by_category"] == dict(by_cat)
    # the hand-read case: jit_rnn_loss lists arg_tuple.81 seven times (80 bytes each: 10
    # elements × 8); live at step 27 are its {} and {0}…{5}; {3}, {4}, {5} are f32[9,3,12]
    mod = [r for r in rows if "jit_rnn_loss" in r["module"] and r["instruction"] == "arg_tuple.81"]
    assert sorted(r["shape_index"] for r in mod) == ["{0}", "{1}", "{2}", "{3}", "{4}", "{5}", "{}"]
    assert {r["shape_index"]: r["bytes"] for r in mod}["{3}"] == 9 * 3 * 12 * 4
    assert all(r["listed_bytes"] == 80 for r in mod)
