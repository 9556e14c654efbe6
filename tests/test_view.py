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
        lo, hi = ax.get_ylim()
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
        assert labels and all(re.fullmatch(r"0|\d+(KiB|MiB|GiB|B)", x) for x in labels), labels
    finally:
        plt.close(fig)


# ------------------------------------------------------------------ the graph view's neighbourhood

def _walk(ops: dict[str, list[str]], users: dict[str, list[str]], start: str, hops: int) -> dict[str, int]:
    """The oracle: a breadth-first walk over the HLO text's operand lists, upstream then downstream."""
    layer = {start: 0}
    for adj, sign in ((ops, -1), (users, 1)):
        front = [start]
        for h in range(1, hops + 1):
            nxt = []
            for v in front:
                for w in adj.get(v, []):
                    if w not in layer:
                        layer[w] = sign * h
                        nxt.append(w)
            front = nxt
    return layer


@pytest.mark.parametrize("path,instruction", [(CF10, "while.16"), (FORWARD, None)])
@pytest.mark.parametrize("hops", [1, 2, 3])
def test_neighbourhood_is_a_walk_over_the_operands(path, instruction, hops) -> None:
    d = hlodump.read_arrow(path, progress=False)
    mods = A._module_list(d)
    spans = A.buffer_spans(d).to_pylist()
    if instruction is None:  # the producer of the largest buffer
        instruction = max((s for s in spans if s["opcode"] == "fusion"), key=lambda s: s["size"])["instruction"]
    got = A.neighbourhood(d, instruction, hops)
    nodes = got["nodes"].to_pylist()
    assert nodes
    rows = d["instructions"].to_pylist()
    for m in mods:
        hlo = set(m.hlo_file_ids)
        ops: dict[str, list[str]] = defaultdict(list)
        users: dict[str, list[str]] = defaultdict(list)
        names = set()
        for r in rows:
            if r["file_id"] in hlo:
                names.add(r["name"])
                for o in r["operands"] or []:
                    ops[r["name"]].append(o)
                    users[o].append(r["name"])
        mine = {n["instruction"]: n["layer"] for n in nodes if n["module"] == m.key}
        if instruction not in names:
            assert not mine
            continue
        assert mine == _walk(ops, users, instruction, hops), m.key
        # every edge between two nodes of the walk, and no other
        want = {(m.key, o, r) for r in mine for o in ops.get(r, []) if o in mine}
        edges = {(e["module"], e["src"], e["dst"]) for e in got["edges"].to_pylist() if e["module"] == m.key}
        assert edges == want


def test_neighbourhood_bytes_flops_and_members() -> None:
    d = hlodump.read_arrow(CF10, progress=False)
    got = A.neighbourhood(d, "while.16", 1, members=True)
    nodes = got["nodes"].to_pylist()
    costs = {(r["module"], r["instruction"]): r for r in A.costs(d).to_pylist()}
    info = {(r["module"], r["instruction"]): r for r in A.buffers(d).to_pylist()}
    n_cost = 0
    for n in nodes:
        c = costs.get((n["module"], n["instruction"]))
        if c is not None and c["flops"] is not None:
            assert n["flops"] == pytest.approx(c["flops"])
            n_cost += 1
        sizes = [v["size"] for k, v in info.items() if k == (n["module"], n["instruction"])]
        if n["allocated_bytes"] is not None:
            assert n["allocated_bytes"] >= max(sizes)
    assert n_cost > 3
    # a while's members: the instructions of the computations it calls, each linked by a calls edge
    w = [n for n in nodes if n["instruction"] == "while.16"]
    assert w and w[0]["called"]
    members = [n for n in nodes if n["member_of"] == "while.16" and n["module"] == w[0]["module"]]
    assert members and {n["computation"] for n in members} == set(w[0]["called"])
    calls = {(e["src"], e["dst"]) for e in got["edges"].to_pylist() if e["kind"] == "calls" and e["module"] == w[0]["module"]}
    assert {("while.16", n["instruction"]) for n in members} <= calls
    with pytest.raises(TypeError):
        A.neighbourhood(d, "", 1)
    assert A.neighbourhood(d, "no-such-instruction", 2)["nodes"].num_rows == 0


# ------------------------------------------------------------------ Model Explorer node data

# The node-data format of Model Explorer (github.com/google-ai-edge/model-explorer,
# src/server/package/src/model_explorer/node_data_builder.py: ModelNodeData, GraphNodeData,
# NodeDataResult, ThresholdItem, GradientItem), as a JSON schema: a file is a ModelNodeData (graph
# id → GraphNodeData) or a single GraphNodeData.
_RESULT = {"type": "object", "required": ["value"], "additionalProperties": False,
           "properties": {"value": {"type": "number"}, "bgColor": {"type": "string"}, "textColor": {"type": "string"}}}
_GRAPH = {"type": "object", "required": ["results"], "additionalProperties": False, "properties": {
    "results": {"type": "object", "additionalProperties": _RESULT},
    "thresholds": {"type": "array", "items": {"type": "object", "required": ["value", "bgColor"], "additionalProperties": False,
                   "properties": {"value": {"type": "number"}, "bgColor": {"type": "string"}, "textColor": {"type": "string"}}}},
    "gradient": {"type": "array", "items": {"type": "object", "required": ["stop"], "additionalProperties": False,
                 "properties": {"stop": {"type": "number", "minimum": 0, "maximum": 1}, "bgColor": {"type": "string"},
                                "textColor": {"type": "string"}}}},
    "hideInAggregatedStatsTable": {"type": "boolean"}, "hideInChildrenStatsTable": {"type": "boolean"},
    "hideAggregatedStats": {"type": "array", "items": {"enum": ["min", "max", "sum", "avg"]}},
    "showExpandedSummaryOnGroupNode": {"type": "boolean"}, "showLabelCountColumnsInChildrenStatsTable": {"type": "boolean"}}}
NODE_DATA_SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                    "oneOf": [_GRAPH, {"type": "object", "not": {"required": ["results"]}, "additionalProperties": _GRAPH}]}


def test_model_explorer_export_is_node_data(tmp_path, capsys) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "me"
    assert main(["export", CF10, "--model-explorer", str(out)]) == 0
    paths = capsys.readouterr().out.split()
    assert sorted(os.path.basename(p) for p in paths) == sorted(f"{m}.json" for m in
                                                               ("memory_bytes", "output_bytes", "flops", "bytes_accessed"))
    d = hlodump.read_arrow(CF10, progress=False)
    ml = A._module_list(d)
    # the graph id: the module's name, its key where two modules share the name (this dump has two jit_power_iteration)
    gid = {m.key: (m.name if sum(x.name == m.name for x in ml) == 1 else m.key) for m in ml}
    assert len(set(gid.values())) == len(ml) and any(g != m.name for m, g in zip(ml, (gid[x.key] for x in ml)))
    mods = set(gid.values())
    data = {os.path.basename(p)[:-5]: json.load(open(p)) for p in paths}
    for metric, doc in data.items():
        jsonschema.validate(doc, NODE_DATA_SCHEMA)
        for g in doc.values():  # gradient stops 0 and 1 given, as the format asks
            assert {x["stop"] for x in g["gradient"]} >= {0, 1}
    # the figures: memory = the values' allocated bytes of the instruction, flops = costs
    mem = defaultdict(int)
    for r in A.buffers(d).to_pylist():
        mem[(gid[r["module"]], r["instruction"])] += r["size"]
    for g, gd in data["memory_bytes"].items():
        assert g in mods
        for ins, v in gd["results"].items():
            assert v["value"] == mem[(g, ins)]
    assert sum(len(g["results"]) for g in data["memory_bytes"].values()) == len(mem)
    fl = defaultdict(float)
    for r in A.costs(d).to_pylist():
        if r["flops"] is not None:
            fl[(gid[r["module"]], r["instruction"])] += r["flops"]
    n = 0
    for g, gd in data["flops"].items():
        for ins, v in gd["results"].items():
            assert v["value"] == pytest.approx(fl[(g, ins)])
            n += 1
    assert n == len(fl)
    # the schema does reject what Model Explorer would not read
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"g": {"results": {"a": {"value": "12"}}}}, NODE_DATA_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"g": {"results": {"a": {"val": 1}}}}, NODE_DATA_SCHEMA)
