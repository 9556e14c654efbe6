"""Issue 51: the memory viewer (``analysis.buffer_spans``, ``plot --buffers``, ``summary --at/--live``),
the graph view (``analysis.neighbourhood``) and the Model Explorer export, each figure against an
oracle: the spans' byte ranges live at a step are the timeline's live bytes at that step, the
spans are the dump's live ranges, what is live at the peak adds up to the peak in use, a
neighbourhood is what a walk over the HLO text's operands finds, the export is what the costs and
the buffers say, in the format Model Explorer's node-data builder defines."""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A
from hlodump.cli import main

CF10 = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
FORWARD = os.path.join(DATA, "corpus", "jax-0.10.2", "transformer")
SEEDS = os.path.join(DATA, "seeds")
TPU = os.path.join(DATA, "accel", "tpu_v5e_2x4")
GPU = os.path.join(DATA, "accel", "gpu_h100")


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


@pytest.fixture(scope="module", params=[CF10, FORWARD, TPU, GPU], ids=["cf10", "transformer", "tpu", "gpu"])
def dump(request):
    if not os.path.exists(request.param):
        pytest.skip(f"{request.param} missing")
    return hlodump.read_arrow(request.param, progress=False, on_error="collect")


def _union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo >= end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


# ------------------------------------------------------------------ buffer spans

def test_spans_live_at_each_step_are_the_timeline(dump) -> None:
    """Per module, memory space and step: the union of the live spans' [address, address+size)
    is memory_timeline's bytes of that space at that step (every step of every module)."""
    spans = A.buffer_spans(dump).to_pylist()
    assert spans
    tl = defaultdict(int)
    steps = defaultdict(int)
    for r in A.memory_timeline(dump).to_pylist():
        tl[(r["module"], r["color"], r["step"])] += r["bytes"]
        steps[r["module"]] = max(steps[r["module"]], r["step"])
    by = defaultdict(list)
    for s in spans:
        by[(s["module"], s["color"])].append(s)
    checked = 0
    for (m, c), ss in by.items():
        for step in range(steps[m] + 1):
            live = [(s["address"], s["address"] + s["size"]) for s in ss if s["first_step"] <= step <= s["last_step"]]
            assert _union(live) == tl.get((m, c, step), 0), (m, c, step)
            checked += 1
    assert checked > 10


def test_spans_are_the_live_ranges_and_allocations(dump) -> None:
    """first/last step are the dump's live range of the value; address = the allocation's base in
    its space (allocations end to end) + the slice offset; the slice lies inside its allocation."""
    spans = A.buffer_spans(dump).to_pylist()
    b = {(r["module"], r["value_id"]): r for r in A.buffers(dump).to_pylist()}
    allocs = A.allocations(dump).to_pylist()
    base, size = {}, {}
    run = defaultdict(int)
    for a in sorted(allocs, key=lambda a: (a["module"], a["color"], a["allocation"])):
        base[(a["module"], a["allocation"])] = run[(a["module"], a["color"])]
        size[(a["module"], a["allocation"])] = a["size"]
        run[(a["module"], a["color"])] += a["size"]
    for s in spans:
        v = b[(s["module"], s["value_id"])]
        assert (s["first_step"], s["last_step"]) == (v["start"], v["end"])
        assert s["size"] == v["size"] and s["instruction"] == v["instruction"]
        assert s["address"] == base[(s["module"], s["allocation"])] + s["slice_offset"]
        assert s["slice_offset"] + s["size"] <= size[(s["module"], s["allocation"])]
        assert s["steps"] == s["last_step"] - s["first_step"] + 1
    n_live = sum(1 for v in b.values() if v["start"] is not None)
    assert len(spans) == n_live


def test_spans_at_the_peak_add_up_to_the_peak_in_use(dump) -> None:
    """The main memory's spans live at the peak-in-use step, each slice once, are the summary's
    peak in use; and they are peak_buffers' rows."""
    spans = A.buffer_spans(dump).to_pylist()
    for s in A.summary(dump, top=0):
        p = A.peaks(s)
        if p["peak_in_use"] is None:
            continue
        m, step = s["module"], p["peak_in_use_step"]
        main = [x for x in spans if x["module"] == m and x["color"] == 0] or [x for x in spans if x["module"] == m]
        live = [x for x in main if x["first_step"] <= step <= x["last_step"]]
        assert _union([(x["address"], x["address"] + x["size"]) for x in live]) == p["peak_in_use"], m
        pb = [r for r in A.peak_buffers(dump, m).to_pylist()]
        assert sorted(r["buffer"] for r in pb) == sorted(x["buffer"] for x in live if x["color"] == pb[0]["color"])


def test_span_users_are_buffer_assignments_uses() -> None:
    d = hlodump.read_arrow(CF10, progress=False)
    spans = {(r["module"], r["buffer"]): r for r in A.buffer_spans(d).to_pylist()}
    vals = d["values"].to_pylist()
    mods = {f: m for m in A._module_list(d) for f in m.file_ids}
    n = 0
    for v in vals:
        key = (mods[v["file_id"]].key, v["instruction"] + (v["shape_index"] or "{}"))
        if key in spans and v["uses"]:
            assert spans[key]["users"] == sorted({u["instruction"] for u in v["uses"]})
            n += 1
    assert n > 20
    # a fusion's operands come from the HLO text
    fus = next(r for r in spans.values() if r["opcode"] == "fusion" and r["operands"])
    hlo = {f for m in A._module_list(d) if m.key == fus["module"] for f in m.hlo_file_ids}
    ins = {r["name"]: r for r in d["instructions"].to_pylist() if r["file_id"] in hlo}
    assert fus["operands"] == sorted(set(ins[fus["instruction"]]["operands"]))


def test_spans_top_keeps_the_largest_per_space() -> None:
    d = hlodump.read_arrow(TPU, progress=False)
    full = A.buffer_spans(d).to_pylist()
    top = A.buffer_spans(d, top=3).to_pylist()
    per = defaultdict(list)
    for r in full:
        per[(r["module"], r["color"])].append(r["size"])
    got = defaultdict(list)
    for r in top:
        got[(r["module"], r["color"])].append(r["size"])
    assert set(got) == set(per)
    for k, sizes in per.items():
        assert sorted(got[k], reverse=True) == sorted(sizes, reverse=True)[:3]


# ------------------------------------------------------------------ the CLI

def test_summary_live_and_at(capsys) -> None:
    d = hlodump.read_arrow(CF10, progress=False)
    key = "module_0002.jit_rnn_loss"
    s = A.summary(d, key, top=0)[0]
    p = A.peaks(s)
    assert main(["summary", CF10, "--module", key, "--live", "--buffers", "50"]) == 0
    out = capsys.readouterr().out
    assert f"{p['peak_in_use']:,} bytes ({A.format_bytes(p['peak_in_use'])}) live at step {p['peak_in_use_step']}" in out
    assert "producer" in out and "users" in out
    # --at N: the values the live ranges say are live at N, largest first
    step = 5
    assert main(["summary", CF10, "--module", key, "--at", str(step), "--json", "--buffers", "1000"]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    want = [r for r in A.buffer_spans(d, key).to_pylist() if r["first_step"] <= step <= r["last_step"] and r["color"] == 0]
    assert sorted(b["buffer"] for b in got["buffers"]) == sorted(r["buffer"] for r in want)
    sizes = [b["bytes"] for b in got["buffers"]]
    assert sizes == sorted(sizes, reverse=True)
    assert got["step"] == step


def test_plot_buffers_png(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hlodump.outputs import plot

    out = str(tmp_path / "b.png")
    assert main(["plot", TPU, "--module", "0", "--buffers", "50", "-o", out]) == 0
    assert os.path.getsize(out) > 10_000
    d = hlodump.read_arrow(TPU, progress=False)
    key = A.summary(d, "0", top=0)[0]["module"]
    fig = plot.buffers_figure(d, key, top=50)
    try:
        spans = A.buffer_spans(d, key).to_pylist()
        spaces = sorted({r["color"] for r in spans})
        assert len(fig.axes) == len(spaces)
        ax = fig.axes[0]  # the main memory: its 50 largest buffers drawn, the rest said
        main_spans = [r for r in spans if r["color"] == 0]
        assert len(ax.collections) == min(50, len(main_spans))
        title = ax.get_title(loc="left")
        if len(main_spans) > 50:
            assert f"{len(main_spans) - 50:,} smaller not drawn" in title
        p = A.peaks(A.summary(d, key, top=0)[0])
        assert f"peak in use {A.format_bytes(p['peak_in_use'])} at step {p['peak_in_use_step']}" in title
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert labels and all(re.fullmatch(r"0|\d+(KiB|MiB|GiB|B)", x) for x in labels), labels
    finally:
        plt.close(fig)
