"""Issue 51 in the report page: the memory viewer and the graph view against the analyses, the
page's "Why" items (collective bytes formatted, zero-byte defaults folded, no word broken, an
output buffer coloured as output, a parameter's shape once), the page's number formatters
against ``hlodump.units``, and the page in headless Chromium at 1000, 1400 and 1920 px: no cut
column, no mid-word wrap, no raw number, no overlapping labels."""

from __future__ import annotations

import json
import math
import os
import re

import pytest

from conftest import DATA, chromium_cdp

import hlodump
from hlodump import analysis as A
from hlodump import units as U
from hlodump.cli import main
from hlodump.outputs import html_report
from hlodump.outputs.viewer_data import SPAN_FIELDS, SPANS

pytest.importorskip("plotly")

CF10 = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
CF11 = os.path.join(DATA, "corpus", "jax-0.11.2", "control_flow")
TPU = os.path.join(DATA, "accel", "tpu_v5e_2x4")
GPU = os.path.join(DATA, "accel", "gpu_h100")
SEEDS = os.path.join(DATA, "seeds")
OOM = os.path.join(DATA, "oom")


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


def _data(path: str, **kw):
    d = hlodump.read_arrow(path, progress=False, on_error="collect")
    return d, html_report.report_data(d, **kw)


# ------------------------------------------------------------------ the page's data

def test_page_spans_are_buffer_spans() -> None:
    d, data = _data(TPU)
    spans = A.buffer_spans(d).to_pylist()
    by_mod: dict[str, list[dict]] = {}
    for s in spans:
        by_mod.setdefault(s["module"], []).append(s)
    n = 0
    for det in data["details"].values():
        sp = det["spans"]
        mine = by_mod.get(det["key"], [])
        if not mine:
            assert sp is None
            continue
        assert sp["fields"] == list(SPAN_FIELDS)
        largest = sorted(mine, key=lambda s: (-s["size"], s["first_step"], s["value_id"]))[:SPANS]
        got = [dict(zip(sp["fields"], r)) for r in sp["rows"]]
        assert [(g["buffer"], g["color"]) for g in got] == [(s["buffer"], s["color"]) for s in largest]
        for g, s in zip(got, largest):
            assert all(g[f] == s[f] for f in SPAN_FIELDS)
        # per space: drawn + folded = all, the folded bytes are the rest's
        for space in sp["spaces"]:
            allc = [s for s in mine if s["color"] == space["color"]]
            drawn = [g for g in got if g["color"] == space["color"]]
            assert space["buffers"] == len(allc) and space["folded"] == len(allc) - len(drawn)
            assert space["folded_bytes"] == sum(s["size"] for s in allc) - sum(g["size"] for g in drawn)
        # the main memory's peak: the timeline chart's and the summary's peak in use
        main_space = next(s for s in sp["spaces"] if s["color"] == 0)
        p = A.peaks(A.summary(d, det["key"], top=0)[0])
        assert (main_space["peak_step"], main_space["peak_bytes"]) == (p["peak_in_use_step"], p["peak_in_use"])
        assert det["timeline"]["max_step"] == main_space["peak_step"]
        n += 1
    assert n > 3


def test_page_graph_is_the_hlo_text() -> None:
    d, data = _data(CF10)
    rows = d["instructions"].to_pylist()
    for det in data["details"].values():
        g = det["graph"]
        m = next(m for m in A._module_list(d) if m.key == det["key"])
        hlo = set(m.hlo_file_ids)
        mine = [r for r in rows if r["file_id"] in hlo]
        if not mine:
            assert g is None
            continue
        assert sorted(g["name"]) == sorted(r["name"] for r in mine) and g["note"] is None
        idx = {n: i for i, n in enumerate(g["name"])}
        want = sorted((idx[o], idx[r["name"]]) for r in mine for o in r["operands"] or [] if o in idx)
        got = sorted(zip(g["edges"][0::2], g["edges"][1::2]))
        assert got == want
        costs = {r["instruction"]: r for r in A.costs(d, det["key"]).to_pylist()}
        for i, nm in enumerate(g["name"]):
            if nm in costs and costs[nm]["flops"] is not None:
                assert g["flops"][i] == pytest.approx(costs[nm]["flops"])


def test_collective_bytes_are_numbers_in_the_page() -> None:
    """``3850328`` in the page was a DuckDB 128-bit sum serialised as its text: a number now."""
    d, data = _data(GPU)
    rows = [r for r in data["index"]["modules"] if r["collective_bytes"] is not None]
    assert rows and all(isinstance(r["collective_bytes"], int) for r in rows)
    col = A.collectives(d).to_pylist()
    for r in rows:
        assert r["collective_bytes"] == sum(c["bytes"] for c in col if c["module"] == r["key"] and c["bytes"])
    page = html_report.render(data)
    assert not re.search(r'"collective_bytes":"\d+"', page)


def test_why_the_peak_changed_folds_zero_byte_defaults() -> None:
    a = hlodump.read_arrow(CF10, progress=False)
    b = hlodump.read_arrow(CF11, progress=False)
    data = html_report.report_data(a, compare=b)
    ex = A.explain(a, b, cost=False, top=50)
    whys = [det["why"] for det in data["details"].values() if det.get("why")]
    assert whys
    for p, w in ((p, next(det["why"] for det in data["details"].values()
                         if det.get("why") and det["key"] == p["module_a"])) for p in ex["pairs"]):
        defaults = [o for o in p["options"] if not o["explicit"]]
        explicit = {o["key"] for o in p["options"] if o["explicit"]}
        shown_opts = [r for r in w["rows"] if r[0] == "options"]
        assert all(r[1] or r[3] in explicit for r in shown_opts), shown_opts
        if defaults:
            assert w["folded"].startswith(f"options: {len(defaults)} differ in the whole configuration only")
            assert len(w["rows"]) < len(p["causes"])


def test_oom_output_buffer_and_parameter_shape_once() -> None:
    from hlodump.outputs import oom_plot

    d = hlodump.read_arrow(OOM, on_error="collect")
    reports = A.oom_summary(d, top=20)
    seen_output = 0
    for r in reports:
        f = oom_plot.oom_figure_data(r)
        out = ((r.get("figures") or {}).get("stats") or {}).get("maybe_live_out allocation") or {}
        for b, src in zip(f["buffers"], r["buffers"]):
            if src["kind"] == "parameter":
                assert b["role"] == "parameters" and b["label"] == "entry parameter" and b["shape"] == src["shape"]
            elif out.get("bytes") and src["size_bytes"] == out["bytes"] and \
                    sum(1 for x in r["buffers"] if x["kind"] != "parameter" and x["size_bytes"] == out["bytes"]) == 1:
                assert b["role"] == "outputs" and b["color"] == oom_plot._KIND_COLORS["outputs"]
                seen_output += 1
            else:
                assert b["role"] == "temporaries"
        fig = oom_plot.oom_figure(r)
        try:
            import matplotlib.pyplot as plt

            ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
            for b in f["buffers"]:
                if b["role"] == "parameters" and b["bytes"] is not None and b["shape"]:
                    # a parameter's bar: "entry parameter" and its shape, once
                    assert f"entry parameter  {b['shape'][:24]}" in ticks
                    assert all(t.count(b["shape"][:24]) <= 1 for t in ticks)
        finally:
            plt.close(fig)
    assert seen_output >= 2


# ------------------------------------------------------------------ the page in Chromium

def _browser():
    return chromium_cdp()


def test_page_formatters_are_units(tmp_path) -> None:
    """fmtBytes / fmtSI / fmtSecs in the page print what hlodump.units prints."""
    cdp = _browser()
    out = str(tmp_path / "r.html")
    assert main(["report", CF10, "-o", out]) == 0
    values = [0, 1, 512, 1023, 1024, 1536, 10 * 1024 + 7, 2**20 - 1, 2**20, 3 * 2**20 + 12345, 2**30 * 5.5, 2**40 * 3,
              123456789, 2**50, -2048, 3850328]
    flops = [0, 1, 999, 1000, 1234.5, 2.5e6, 538.05e6, 7.1e9, 3.6e14, 9e18]
    secs = [0, 1e-9, 2.5e-7, 3e-6, 1.234e-3, 0.5, 1, 12.5]
    with cdp.Browser.launch(1000, 800) as b:
        b.open("file://" + out)
        b.wait_until("typeof fmtBytes === 'function'")
        for v in values:
            assert b.eval(f"fmtBytes({v})") == U.format_bytes(v), v
        for v in flops:
            assert b.eval(f"fmtSI({v}, 'FLOP')") == U.format_flops(v), v
        for v in secs:
            assert b.eval(f"fmtSecs({v})") == U.format_seconds(v), v
        for v in [1, 2**20, 3 * 2**30, 1536]:
            assert b.eval(f"fmtTick({v})") == U.format_bytes_tick(v), v
        for v in [0, 7, 1803, 1803.2, 12345.6, 0.0004883, 0.0001026, 1e-5, 12.3456, 99999.5, 1234567, -0.5, 2.5e17]:
            assert b.eval(f"fmtNum({v!r})") == U.format_number(v), v


RAW = re.compile(r"(?<![\w.:/\[\]{},\-#(=])\d{5,}(?![\w.\]}%)])")
RAW_FLOAT = re.compile(r"\d\.0*[1-9]\d{4,}")  # more than units.format_number's 4 significant digits


def _check_page(b, width: int, where: str) -> list[str]:
    """What is wrong with the open module at this width: cut tables, words broken inside, raw
    numbers, overlapping labels (plotly annotations, the toolbar, graph nodes)."""
    bad = []
    cut = b.eval("""[...document.querySelectorAll('#detail table')].filter(t =>
        t.parentElement.scrollWidth > t.parentElement.clientWidth + 1 || t.getBoundingClientRect().right > window.innerWidth + 1)
        .map(t => (t.parentElement.querySelector('h3') || {}).textContent)""")
    bad += [f"{where} @{width}: table cut: {c}" for c in cut]
    broken = b.eval("""(() => { const out = [];
        for (const td of document.querySelectorAll('#detail td, #modules td, #detail th')) {
          const t = td.textContent;
          if (!/^[A-Za-z_\\-]{2,24}$/.test(t)) continue;   // one word
          const r = document.createRange(); r.selectNodeContents(td);
          const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
          if (lines.size > 1) out.push(t);
        } return out; })()""")
    bad += [f"{where} @{width}: word broken: {w}" for w in broken]
    text = b.eval("document.getElementById('detail').innerText + '\\n' + document.getElementById('modules').innerText")
    for m in RAW.finditer(text):
        ctx = text[max(0, m.start() - 30):m.end() + 10]
        if re.search(r"\[\d+, \d+\)", ctx):  # an address range in a note
            continue
        bad.append(f"{where} @{width}: raw number {m.group(0)!r} in {ctx!r}")
    if RAW_FLOAT.search(text):
        bad.append(f"{where} @{width}: raw float {RAW_FLOAT.search(text).group(0)}")
    boxes = b.eval("""[...document.querySelectorAll('.js-plotly-plot')].map(p => {
        const bar = p.querySelector('.modebar'); const br = bar ? bar.getBoundingClientRect() : null;
        return [p.id, [...p.querySelectorAll('.annotation')].map(a => { const r = a.getBoundingClientRect();
                 return [a.textContent, r.left, r.top, r.right, r.bottom]; }), br ? [br.left, br.top, br.right, br.bottom] : null]; })""")

    def apart(a, c):
        return a[2] <= c[0] or c[2] <= a[0] or a[3] <= c[1] or c[3] <= a[1]

    for pid, anns, bar in boxes:
        for i, a in enumerate(anns):
            if bar and bar[2] > bar[0] and not apart(a[1:], bar):
                bad.append(f"{where} @{width}: label on the toolbar in {pid}: {a[0]}")
            for c in anns[i + 1:]:
                if not apart(a[1:], c[1:]):
                    bad.append(f"{where} @{width}: labels overlap in {pid}: {a[0]} / {c[0]}")
    nodes = b.eval("[...document.querySelectorAll('#graph .gnode rect')].map(r => { const x = r.getBoundingClientRect(); return [x.left, x.top, x.right, x.bottom]; })")
    for i, a in enumerate(nodes):
        for c in nodes[i + 1:]:
            if not apart(a, c):
                bad.append(f"{where} @{width}: graph nodes overlap")
    return bad


# Modules opened per page and width: each costs ~0.7 s of Chromium (the checks walk the DOM);
# the first six of each page cover every kind of module these dumps have.
MODULES_PER_PAGE = 6


@pytest.fixture(scope="module")
def width_pages(tmp_path_factory) -> list[tuple[str, str]]:
    """The pages of a CPU, a GPU and a TPU dump, the seeds and a compare page, written once for
    the three widths (writing them was a third of the test's time)."""
    d = tmp_path_factory.mktemp("pages")
    pages = []
    for name, args in (("cpu", [CF10]), ("gpu", [GPU]), ("tpu", [TPU]), ("seeds", [SEEDS]),
                       ("compare", [CF10, "--compare", CF11])):
        out = str(d / f"{name}.html")
        assert main(["report", *args, "-o", out]) == 0
        pages.append((name, out))
    return pages


@pytest.mark.parametrize("width", [1000, 1400, 1920])
def test_page_at_width(width_pages, width) -> None:
    """The first modules of a CPU, a GPU and a TPU dump and a compare page, at three widths."""
    cdp = _browser()
    pages = width_pages
    bad: list[str] = []
    with cdp.Browser.launch(width, 1000) as b:
        for name, out in pages:
            b.open("file://" + out)
            b.wait_until("document.getElementById('detail').dataset.module !== undefined")
            for mid in b.eval("IDX.modules.map(r => r.id)")[:MODULES_PER_PAGE]:
                b.eval(f"openModule({json.dumps(mid)})")
                shown = b.eval("document.getElementById('detail').dataset.module")
                bad += _check_page(b, width, f"{name}:{shown}")
            shot = b.screenshot()
            w, h, var = cdp.png_stats(shot)
            assert (w, h) == (width, 1000) and var > 0.01, "the rendered page is not blank"
        assert b.console_errors == []
        assert cdp.outside_requests(b.requests) == []
    assert bad == [], "\n".join(bad[:40])


def test_memory_viewer_and_graph_in_chromium(tmp_path) -> None:
    """Hover a bar: its buffer, producer and users; click: its row selected and the graph centred
    on its producer; the graph's nodes are the neighbourhood; + lists a while's members."""
    cdp = _browser()
    out = str(tmp_path / "cf.html")
    key = "module_0002.jit_rnn_loss"
    assert main(["report", CF10, "--module", key, "-o", out]) == 0
    d = hlodump.read_arrow(CF10, progress=False)
    spans = A.buffer_spans(d, key).to_pylist()
    with cdp.Browser.launch(1400, 1000) as b:
        b.open("file://" + out)
        b.wait_until("document.querySelector('#spans-0 .main-svg') !== null && document.querySelector('#graph svg') !== null")
        # one bar per span (every span of this small module drawn)
        n = b.eval("[...document.getElementById('spans-0').data].reduce((a, t) => a + t.x.length, 0)")
        assert n == len([s for s in spans if s["color"] == 0])
        # hover the largest buffer's bar: the info box names it, its producer and users
        big = max(spans, key=lambda s: (s["size"], -s["first_step"]))
        b.eval("document.getElementById('spans-0').scrollIntoView()")
        px, py = b.eval(f"""(() => {{ const g = document.getElementById('spans-0'), L = g._fullLayout, r = g.getBoundingClientRect();
            return [r.x + L.margin.l + L.xaxis.l2p({(big['first_step'] + big['last_step'] + 1) / 2}),
                    r.y + L.margin.t + L.yaxis.l2p({big['address'] + big['size'] / 2})]; }})()""")
        b.mouse("mouseMoved", px, py)
        info = b.wait_until("(t => t.includes('producer:') && t)(document.getElementById('span-info').textContent)")
        first = info.splitlines()[0]
        hit = next(s for s in spans if first.startswith(s["buffer"] + "  "))
        assert hit["size"] == big["size"] and hit["first_step"] <= (big["first_step"] + big["last_step"]) // 2 + 1
        assert f"producer: {hit['instruction']} ({hit['opcode']})" in info
        assert "users: " + ", ".join(hit["users"][:8]) in info
        # click: its row selected, the graph on its producer
        b.click(px, py)
        b.wait_until("document.querySelector('#span-table tr.sel') !== null")
        assert b.eval("document.querySelector('#span-table tr.sel').dataset.buffer") == hit["buffer"]
        assert b.eval("document.getElementById('graph-focus').value") == hit["instruction"]
        # the graph: the neighbourhood's nodes (the page draws at most 12 a column)
        nb = A.neighbourhood(d, hit["instruction"], 2, module=key)["nodes"].to_pylist()
        drawn = b.eval("[...document.querySelectorAll('#graph .gnode')].map(g => g.dataset.name)")
        per_layer: dict[int, int] = {}
        for x in nb:
            per_layer[x["layer"]] = per_layer.get(x["layer"], 0) + 1
        assert set(drawn) <= {x["instruction"] for x in nb}
        assert len(drawn) == sum(min(v, 12) for v in per_layer.values())
        # centre on a while and list its members
        b.eval("const i = document.getElementById('graph-focus'); i.value = 'while.16'; i.dispatchEvent(new Event('change'))")
        b.wait_until("document.querySelector('#graph .gnode.focus').dataset.name === 'while.16'")
        b.eval("document.querySelector('#graph .gnode.focus .expand').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        heads = b.wait_until("(h => h.length && h)([...document.querySelectorAll('#graph-members h3')].map(h => h.textContent))")
        members = [x for x in A.neighbourhood(d, "while.16", 0, module=key, members=True)["nodes"].to_pylist() if x["member_of"]]
        assert {h.split("(")[1].rstrip(")") for h in heads} == {x["computation"] for x in members}
        rows = b.eval("document.querySelectorAll('#graph-members tbody tr').length")
        assert rows == len(members)
        # the buffers at the peak: each with its producer and users (the acceptance: from the page alone)
        cells = b.eval("""[...document.querySelectorAll('#peak-table tbody tr')].map(tr => [...tr.children].map(td => td.textContent))""")
        heads = b.eval("[...document.querySelectorAll('#peak-table thead th')].map(th => th.textContent)")
        by_buf = {s["buffer"]: s for s in spans if s["color"] == 0}
        assert cells and "producer" in heads and "users" in heads
        for c in cells:
            row = dict(zip(heads, c))
            s = by_buf[row["buffer"]]
            assert row["producer"] == f"{s['instruction']} ({s['opcode']})"
            assert row["users"] == (", ".join(s["users"][:4]) + (f" \u2026 +{len(s['users']) - 4}" if len(s["users"]) > 4 else "")
                                    if s["users"] else "\u2014")
        assert b.console_errors == []


def test_page_graph_of_a_big_module_keeps_the_largest_buffers_surroundings(monkeypatch) -> None:
    """Over GRAPH_NODES instructions: the instructions within GRAPH_HOPS hops (either way) of the
    largest buffers' producers, and the page says so."""
    from hlodump.outputs import viewer_data as V

    monkeypatch.setattr(V, "GRAPH_NODES", 300)
    d, data = _data(os.path.join(TPU, "llama"))
    det = next(x for x in data["details"].values() if x["graph"] and x["graph"]["instructions"] > 300)
    g = det["graph"]
    m = next(m for m in A._module_list(d) if m.key == det["key"])
    hlo = set(m.hlo_file_ids)
    rows = [r for r in d["instructions"].to_pylist() if r["file_id"] in hlo]
    adj: dict[str, set] = {}
    for r in rows:
        for o in r["operands"] or []:
            adj.setdefault(r["name"], set()).add(o)
            adj.setdefault(o, set()).add(r["name"])
    names = {r["name"] for r in rows}
    seeds = [s for s in (dict(zip(det["spans"]["fields"], r))["instruction"] for r in det["spans"]["rows"][:V.GRAPH_SEEDS])
             if s in names]
    seen, front = set(seeds), list(seeds)
    for _ in range(V.GRAPH_HOPS):
        front = [w for v in front for w in adj.get(v, ()) if w not in seen and not seen.add(w)]
    assert set(g["name"]) == seen
    assert g["note"] == (f"the graph holds {len(seen):,} of the module's {len(rows):,} instructions: those within "
                         f"{V.GRAPH_HOPS} hops of its {V.GRAPH_SEEDS} largest buffers' producers")
    idx = {n: i for i, n in enumerate(g["name"])}
    want = sorted((idx[o], idx[r["name"]]) for r in rows if r["name"] in idx for o in r["operands"] or [] if o in idx)
    assert sorted(zip(g["edges"][0::2], g["edges"][1::2])) == want


def test_page_says_what_to_do_and_names_the_framework_peak(tmp_path) -> None:
    """The page alone gives the suggested fix (the summary's advice, cheapest first) and names a
    TensorFlow module's peak_memory_in_bytes as XLA's, not jax's (issue 51)."""
    import shutil

    src = os.path.join(DATA, "advice", "donate_no")
    tf = tmp_path / "tf"
    tf.mkdir()
    name = "a_inference_train_step_1234__XlaMustCompile_true"
    for f in os.listdir(src):
        shutil.copy(os.path.join(src, f), tf / f.replace("jit_step", name))
    d = hlodump.read_arrow(str(tf), progress=False)
    (s,) = A.summary(d, top=0, cost=False)
    want_advice = [a["text"] for a in s["advice"]]
    assert want_advice and "donate" in want_advice[0]
    out = str(tmp_path / "tf.html")
    assert main(["report", str(tf), "-o", out]) == 0
    cdp = _browser()
    with cdp.Browser.launch(1400, 1000) as b:
        b.open("file://" + out)
        b.wait_until("document.getElementById('detail').dataset.module !== undefined")
        shown = b.eval("[...document.querySelectorAll('#advice li')].map(li => li.textContent)")
        facts = b.eval("[...document.querySelectorAll('#detail .facts')].map(e => e.textContent).join(' | ')")
        assert b.console_errors == []
    assert shown == want_advice
    assert f"{U.XLA_PEAK_MEMORY} (CompiledMemoryStats; a TensorFlow module)" in facts and "jax's" not in facts
