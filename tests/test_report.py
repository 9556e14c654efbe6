"""``hlodump report``: the page's figures against the analysis (and the analysis against the dump's
own totals, in test_memory_*), then the page itself in headless Chromium over the DevTools
protocol: it renders (non-blank), lists every module, a click opens that module's chart, a hover
names the instruction at that step, sorting and filtering work, nothing is fetched, nothing is
logged as an error; text from the dump (op names, file and directory names with ``<script>``,
quotes, non-ASCII) comes out as text, never as markup."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pyarrow as pa
import pytest

from conftest import DATA, chromium_cdp

import hlodump
from hlodump import analysis as A
from hlodump.outputs import html_report
from hlodump.cli import main

pytest.importorskip("plotly")

CORPUS10 = os.path.join(DATA, "corpus", "jax-0.10.2")
CF10 = os.path.join(CORPUS10, "control_flow")
RNN_LOSS = "module_0002.jit_rnn_loss.cpu_after_optimizations"
BA_ONLY = os.path.join(DATA, "memory_analysis", "jax-0.10.2")  # buffer assignment, no live ranges


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


def _browser():
    return chromium_cdp()


@pytest.fixture(scope="module")
def corpus_report(tmp_path_factory):
    """The report of two dump directories (control flow with live ranges, buffer assignments
    without), written by the CLI."""
    out = str(tmp_path_factory.mktemp("report") / "report.html")
    assert main(["report", CF10, BA_ONLY, "-o", out]) == 0
    d = hlodump.read_arrow([CF10, BA_ONLY], progress=False, string_view=True)
    return out, d


def _index(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="index">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1))


def _detail(page: str, mid: str) -> dict:
    m = re.search(r'<script type="application/json" id="m-' + re.escape(mid) + r'">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1))


# ------------------------------------------------------------------ the figures in the page

def test_index_lists_every_module_with_the_analysis_figures(corpus_report) -> None:
    out, d = corpus_report
    page = open(out, encoding="utf-8").read()
    idx = _index(page)
    mods = A.modules(d).to_pylist()
    assert sorted(r["key"] for r in idx["modules"]) == sorted(m["module"] for m in mods)
    summ = {s["module"]: s for s in A.summary(d, top=1)}
    for r in idx["modules"]:
        s = summ[r["key"]]
        ma = s["memory_analysis"] or {}
        assert r["total"] == s["total_bytes"]
        assert r["argument"] == ma.get("argument_size_in_bytes") and r["temp"] == ma.get("temp_size_in_bytes")
        # "peak" is the peak in use (issue 40: one name, one figure), XLA's listed peak its own column
        assert r["peak"] == (s["timeline"]["max_allocated_bytes"] if s["timeline"] else None)
        assert r["xla_listed_peak"] == (s["peak"]["bytes"] if s["peak"] else None)
    peaks = [r["peak"] if r["peak"] is not None else -1 for r in idx["modules"]]
    assert peaks == sorted(peaks, reverse=True)  # largest first
    # one JSON block per module, and nothing drawn server-side: the page draws on demand
    assert len(re.findall(r'<script type="application/json" id="m-', page)) == len(mods)
    assert "<svg" not in page.split("<script>", 1)[0]


def test_timeline_in_the_page_is_memory_timeline(corpus_report) -> None:
    """Every drawn point is the sum over memory spaces of memory_timeline's bytes at that step,
    and the most live step is kept (an independent pass over memory_timeline's rows)."""
    out, d = corpus_report
    page = open(out, encoding="utf-8").read()
    idx = _index(page)
    tl = A.memory_timeline(d).to_pylist()
    want: dict = {}
    for row in tl:
        want.setdefault(row["module"], {}).setdefault(row["category"], {}).setdefault(row["step"], 0)
        want[row["module"]][row["category"]][row["step"]] += row["bytes"]
    checked = 0
    summ = {s["module"]: s for s in A.summary(d, top=0)}
    for r in idx["modules"]:
        det = _detail(page, r["id"])
        t = det["timeline"]
        if r["key"] not in want:
            assert t is None
            continue
        assert {c for c, _ in t["cats"]} == set(want[r["key"]])
        for cat, ys in t["cats"]:
            assert ys == [want[r["key"]][cat].get(x, 0) for x in t["x"]]
        totals = [sum(ys[i] for _, ys in t["cats"]) for i in range(len(t["x"]))]
        assert max(totals) == t["max_bytes"] == summ[r["key"]]["timeline"]["max_allocated_bytes"]
        checked += 1
    assert checked >= 10


def test_downsampling_keeps_the_peak_and_the_valleys() -> None:
    rng = np.random.default_rng(0)
    total = rng.integers(0, 1000, size=100_000)
    total[77_777] = 10_000
    total[12_345] = -5
    keep = html_report._downsample(total, 1200)
    assert len(keep) <= 1200 + 3 and list(keep) == sorted(set(keep.tolist()))
    assert 77_777 in keep and 12_345 in keep and keep[0] == 0 and keep[-1] == 99_999
    # each bucket's highest step is kept: the drawn envelope is the true one
    buckets = (np.arange(total.size) * 600) // total.size
    for b in (0, 299, 599):
        assert total[keep][buckets[keep] == b].max() == total[buckets == b].max()
    assert list(html_report._downsample(total[:500], 1200)) == list(range(500))


def test_page_is_offline_and_self_contained(corpus_report) -> None:
    out, _ = corpus_report
    page = open(out, encoding="utf-8").read()
    assert "plotly.js v" in page and "Content-Security-Policy" in page and "default-src 'none'" in page
    # no element that could load anything from elsewhere
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page.split("<script>", 1)[0])


def test_no_module_to_report_is_a_clear_error(capsys, tmp_path) -> None:
    opts = os.path.join(CF10, "module_0000.jit_rnn.debug_options")  # a dump file, but of no module
    assert main(["report", opts, "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "nothing to report" in err and "Traceback" not in err
    assert main(["report", CF10, "-o", str(tmp_path / "r.png")]) == 2
    assert "-o must end in .html" in capsys.readouterr().err


def test_module_and_compare(tmp_path, capsys) -> None:
    """--module keeps one module; --compare pairs modules as `diff` does and shows both."""
    a = tmp_path / "a"
    b = tmp_path / "b"
    for dst, src in ((a, os.path.join(DATA, "corpus", "jax-0.9.2", "control_flow")), (b, CF10)):
        shutil.copytree(src, dst)
    out = str(tmp_path / "cmp.html")
    assert main(["report", str(a), "--compare", str(b), "-o", out, "--module", "rnn_loss"]) == 0
    page = open(out, encoding="utf-8").read()
    idx = _index(page)
    assert "compare" in idx["sections"]
    a_rows = [r for r in idx["modules"] if r["side"] == "a"]
    assert [r["name"] for r in a_rows] == ["jit_rnn_loss"]
    ra = a_rows[0]
    rb = next(r for r in idx["modules"] if r["id"] == ra["other"])
    assert rb["name"] == "jit_rnn_loss" and rb["side"] == "b"
    assert ra["delta_peak"] == rb["peak"] - ra["peak"]
    cdp = _browser()
    with cdp.Browser.launch() as br:  # both timelines drawn side by side, on one scale
        br.open("file://" + os.path.abspath(out))
        assert br.eval("IDX.open") == ra["id"]
        br.wait_until("document.querySelector('#timeline .main-svg') && document.querySelector('#timeline-b .main-svg')")
        ra_, rb_ = br.eval("['timeline', 'timeline-b'].map(i => document.getElementById(i)._fullLayout.yaxis.range[1])")
        assert ra_ == rb_ > 0
        assert br.console_errors == [] and cdp.outside_requests(br.requests) == []
    det = _detail(page, ra["id"])
    da, db = hlodump.read_arrow(str(a), progress=False), hlodump.read_arrow(str(b), progress=False)
    want = [r for r in A.diff(da, db).to_pylist() if r["module_a"] == ra["key"]]
    assert [c[:6] for c in det["changes"]] == [[r["what"], r["change"], r["key"], r["a"], r["b"], r["delta"]]
                                              for r in want][:200]


# ------------------------------------------------------------------ the page in Chromium

def test_page_in_chromium(corpus_report, tmp_path) -> None:
    cdp = _browser()
    out, d = corpus_report
    n = A.modules(d).num_rows
    with cdp.Browser.launch(1400, 1000) as b:
        b.open("file://" + os.path.abspath(out))
        b.wait_until("document.querySelector('#timeline .main-svg') !== null")
        # every module listed (the row's tooltip is its key)
        keys = b.eval("[...document.querySelectorAll('#modules tbody tr')].map(tr => tr.title)")
        assert sorted(keys) == sorted(A.modules(d).column("module").to_pylist()) and len(keys) == n
        # only the opened module was drawn (its memory chart, and its cost charts where it has them)
        assert b.eval("[...document.querySelectorAll('.js-plotly-plot')].every(p => p.closest('#detail'))")
        assert b.eval("document.querySelectorAll('#timeline.js-plotly-plot').length") == 1
        shot = b.screenshot()
        w, h, var = cdp.png_stats(shot)
        assert (w, h) == (1400, 1000) and var > 0.01, "the rendered page is not blank"
        # a real click on another module's row opens its chart
        key = next(k for k in keys if k.endswith("control_flow:module_0002.jit_rnn_loss"))
        b.eval(f"document.querySelector('#modules tbody tr[title={json.dumps(key)}]').scrollIntoView()")
        x, y = b.eval(f"(r => [r.x + 30, r.y + r.height / 2])(document.querySelector('#modules tbody tr[title={json.dumps(key)}]').getBoundingClientRect())")
        b.click(x, y)
        b.wait_until(f"document.getElementById('detail').dataset.module === {json.dumps(key)} && "
                     "document.querySelector('#timeline .main-svg') !== null")
        # hovering the chart over XLA's peak step shows that step's instruction
        pk = A.summary(d, key, top=0)[0]["peak"]
        b.eval("document.getElementById('timeline').scrollIntoView()")
        px, py = b.eval(f"""(() => {{ const g = document.getElementById('timeline'), L = g._fullLayout, r = g.getBoundingClientRect();
                          return [r.x + L.margin.l + L.xaxis.l2p({pk['step']}), r.y + L.margin.t + L.yaxis._length / 2]; }})()""")
        b.mouse("mouseMoved", px, py)
        hover = b.wait_until("(t => t.startsWith('step ') && t)(document.getElementById('hover').textContent)")
        step = int(hover.split()[1].rstrip(":"))
        assert abs(step - pk["step"]) <= 1
        ins = {r["step"]: r["instruction"] for r in A.memory_timeline(d, key).to_pylist()}
        assert hover.startswith(f"step {step}: {ins[step] if ins.get(step) else '(end)'}")
        live = b.eval("document.getElementById('hover').textContent")
        assert "largest live buffers" in live
        # the largest buffer live at that step (from buffers()' live ranges) is listed first
        bufs = [r for r in A.buffers(d, key).to_pylist() if r["start"] is not None and r["start"] <= step <= r["end"]]
        biggest = max(bufs, key=lambda r: r["size"])
        assert live.split("largest live buffers", 1)[1].split("\n")[1].split()[0] == b.eval(f"fmtBytes({biggest['size']})")
        # sort by allocated bytes, ascending then descending
        b.eval("[...document.querySelectorAll('#modules th')].find(th => th.dataset.k === 'total').click()")
        tot = b.eval("[...document.querySelectorAll('#modules tbody tr')].map(tr => IDX.modules.find(r => r.id === tr.dataset.id).total)")
        vals = [v for v in tot if v is not None]
        assert vals == sorted(vals, reverse=True)
        # filter
        b.eval("const s = document.getElementById('search'); s.value = 'rnn_loss'; s.dispatchEvent(new Event('input'))")
        shown = b.eval("[...document.querySelectorAll('#modules tbody tr')].map(tr => tr.title)")
        assert shown and all("rnn_loss" in k for k in shown)
        assert len(shown) == sum("rnn_loss" in k for k in keys)
        # a module without live ranges says so instead of drawing an empty chart
        ba = next(r for r in A.modules(d).to_pylist() if r["dump"].endswith("memory_analysis/jax-0.10.2"))
        b.eval(f"openModule(IDX.modules.find(r => r.key === {json.dumps(ba['module'])}).id)")
        assert "no live ranges" in b.eval("document.getElementById('timeline').textContent")
        assert b.console_errors == []
        assert cdp.outside_requests(b.requests) == [], b.requests


def test_two_thousand_modules_open_lazily(tmp_path) -> None:
    """2,000 modules: the table lists all of them, only the opened module's chart exists, a
    click on the last row draws its chart (size of the page and time to open: benches/)."""
    cdp = _browser()
    d = hlodump.read_arrow(sorted(os.path.join(CF10, f) for f in os.listdir(CF10) if f.startswith(RNN_LOSS)),
                           progress=False)
    data = html_report.report_data(d)
    (row,) = data["index"]["modules"]
    det = data["details"][row["id"]]
    rows, details = [], {}
    for i in range(2000):
        r = dict(row, id=f"a{i}", key=f"{row['key']}#{i}", name=f"{row['name']}_{i}", peak=row["peak"] + i)
        rows.append(r)
        details[r["id"]] = dict(det, key=r["key"], name=r["name"])
    data["index"]["modules"], data["details"] = rows[::-1], details
    data["index"]["open"] = "a1999"
    out = tmp_path / "big.html"
    out.write_text(html_report.render(data), encoding="utf-8")
    with cdp.Browser.launch() as b:
        b.open(out.as_uri())
        b.wait_until("document.querySelector('#timeline .main-svg') !== null")
        assert b.eval("document.querySelectorAll('#modules tbody tr').length") == 2000
        assert b.eval("[...document.querySelectorAll('.js-plotly-plot')].every(p => p.closest('#detail'))")
        assert b.eval("document.querySelectorAll('#timeline.js-plotly-plot').length") == 1
        assert b.eval("CACHE.size") == 1  # one module's JSON parsed
        b.eval("document.querySelector('#modules tbody tr:last-child').click()")
        b.wait_until("document.getElementById('detail').dataset.module.endsWith('#0')")
        assert b.eval("CACHE.size") == 2 and b.eval("document.querySelectorAll('#timeline.js-plotly-plot').length") == 1
        assert b.console_errors == [] and cdp.outside_requests(b.requests) == []


# ------------------------------------------------------------------ text from the dump stays text

PAYLOAD_OP = "<img src=x onerror=window.__xss=1>'é中</script><!--"
PAYLOAD_SRC = "/src/<script>window.__xss=2</script>'&amp;ü.py"
PAYLOAD_DIR = 'dump "q" <img src=x onerror=window.__xss=3><script>window.__xss=4<\\script> é'


def _hostile_dump(tmp_path) -> str:
    d = tmp_path / PAYLOAD_DIR
    d.mkdir()
    for f in os.listdir(CF10):
        if f.startswith(RNN_LOSS):
            text = open(os.path.join(CF10, f), encoding="utf-8").read()
            text = text.replace("jit(rnn_loss)/", "jit(" + PAYLOAD_OP + ")/")
            text = text.replace('op_name="xs"', 'op_name="' + PAYLOAD_OP + '"')  # a buffer at the peak
            text = text.replace("/src/models_gen/gen_control_flow.py", PAYLOAD_SRC)
            (d / f).write_text(text, encoding="utf-8")
    return str(d)


def test_hostile_names_are_escaped(tmp_path) -> None:
    src = _hostile_dump(tmp_path)
    out = str(tmp_path / "x.html")
    assert main(["report", src, "-o", out]) == 0
    page = open(out, encoding="utf-8").read()
    body = page.split("</script>", 1)[1]  # past plotly.js
    for raw in (PAYLOAD_OP, PAYLOAD_SRC, PAYLOAD_DIR, "<script>window", "<img src=x", "<!--"):
        assert raw not in body
    d = hlodump.read_arrow(src, progress=False)
    assert PAYLOAD_OP in {r["op_name"] for r in A.listed_peak_buffers(d).to_pylist()}, "the payload is an op name at the peak"
    assert any(PAYLOAD_SRC in (r["source"] or "") for r in A.buffers(d).to_pylist()), "and a source file"
    cdp = _browser()
    with cdp.Browser.launch() as b:
        b.open("file://" + os.path.abspath(out))
        b.wait_until("document.querySelector('#timeline .main-svg') !== null")
        b.eval("showHover(detailOf(IDX.open), detailOf(IDX.open).timeline.x.indexOf(detailOf(IDX.open).peak.step))")
        assert b.eval("window.__xss") is None
        assert b.eval("document.querySelectorAll('#detail img, #detail script, #modules script').length") == 0
        text = b.eval("document.body.innerText")
        assert PAYLOAD_DIR in text  # the dump's name, as text
        assert PAYLOAD_OP in text  # in the table of buffers at the peak
        # the hover panel at a step where a buffer from the hostile source file is live
        b.eval("(d => showHover(d, d.timeline.x.indexOf(d.live.find(r => (r[8] || '').includes('ü.py'))[3])))(detailOf(IDX.open))")
        assert PAYLOAD_SRC in b.eval("document.getElementById('hover').textContent")
        assert b.eval("window.__xss") is None
        assert not [e for e in b.events if e.get("method") == "Page.javascriptDialogOpening"]
        assert b.console_errors == [] and cdp.outside_requests(b.requests) == []


# ------------------------------------------------------------------ sections of analyses to come

def test_cost_collective_and_pass_sections_light_up(monkeypatch, tmp_path) -> None:
    """With ``analysis.costs``/``roofline``/``collectives``/``passes`` giving rows (their real
    column names), the index gets flops, bytes accessed and collective bytes per module, the
    detail their tables, and the page draws them without an error. The real cost analysis gives
    each module's flops as ``cost_analysis`` does; a CPU dump names no device: no roofline
    unless one is given."""
    d = hlodump.read_arrow(CF10, progress=False)
    plain = html_report.report_data(d)
    # this build has the cost analysis: the index shows each module's flops as jax would report them
    assert "costs" in plain["index"]["sections"] and "roofline" not in plain["index"]["sections"]
    assert plain["index"]["device"]["name"] is None and "backend cpu" in plain["index"]["device"]["note"]
    timed = html_report.report_data(d, device="H100")
    assert "roofline" in timed["index"]["sections"] and timed["index"]["device"]["name"] == "H100"
    want = {r["module"]: (r["cost_analysis"] or {}).get("flops", 0.0) for r in A.cost_analysis(d)}
    for r in plain["index"]["modules"]:
        assert r["flops"] == pytest.approx(want[r["key"]]), r["key"]
    keys = A.modules(d).column("module").to_pylist()
    n = len(keys)
    costs = pa.table({"module": keys * 2, "computation": ["main"] * 2 * n, "in_total": [True] * 2 * n,
                      "instruction": [f"dot.{i}" for i in range(2 * n)], "opcode": ["dot"] * 2 * n,
                      "flops": [float(1000 * (i + 1)) for i in range(2 * n)], "transcendentals": [0.0] * 2 * n,
                      "bytes_accessed": [float(10 * (i + 1)) for i in range(2 * n)], "op_name": ["<b>x</b>"] * 2 * n,
                      "source_file": ["/src/a.py"] * 2 * n, "source_line": [7] * n + [8] * n})
    roof = costs.append_column("seconds", pa.array([1e-6 * (i + 1) for i in range(2 * n)])).append_column(
        "bound", pa.array(["memory"] * 2 * n)).append_column("intensity", pa.array([100.0] * 2 * n))
    coll = pa.table({"module": keys, "module_name": ["m"] * n, "kind": ["all-reduce"] * n,
                     "instruction": ["all-reduce.1"] * n, "bytes": [4096] * n, "bytes_per_device": [6144] * n,
                     "group_size": [4] * n, "num_groups": [2] * n, "op_name": [None] * n,
                     "source_file": [None] * n, "source_line": pa.nulls(n, pa.int64())})
    passes = pa.table({"module": [keys[0]] * 3, "module_name": ["m"] * 3, "pass_index": [0, 1, 2],
                       "pipeline": ["p"] * 3, "pass_name": ["a", "<script>b</script>", "c"],
                       "instructions": [10, 8, 9], "added": [0, 0, 1], "removed": [0, 2, 0], "changed": [0, 1, 0]})
    summary = A.summary  # the stand-ins below are the costs: the summary's own cost_analysis is left out
    monkeypatch.setattr(A, "summary", lambda dump, *a, **k: summary(dump, *a, **dict(k, cost=False)))
    monkeypatch.setattr(A, "costs", lambda dump, *a, **k: costs, raising=False)
    monkeypatch.setattr(A, "roofline", lambda dump, *a, **k: roof, raising=False)
    monkeypatch.setattr(A, "collectives", lambda dump, *a, **k: coll, raising=False)
    monkeypatch.setattr(A, "passes", lambda dump, *a, **k: passes, raising=False)
    data = html_report.report_data(d, device="H100")
    assert data["index"]["sections"] == ["memory", "costs", "roofline", "collectives", "passes"]
    for i, r in enumerate(sorted(data["index"]["modules"], key=lambda r: keys.index(r["key"]))):
        k = keys.index(r["key"])
        assert r["flops"] == 1000 * (k + 1) + 1000 * (k + n + 1)
        assert r["bytes_accessed"] == 10 * (k + 1) + 10 * (k + n + 1)
        assert r["collective_bytes"] == 4096
        det = data["details"][r["id"]]
        assert det["cost_by_flops"]["rows"][0][0] == f"dot.{k + n}"  # the larger of its two
        assert [row[0] for row in det["cost_by_source"]["rows"]] == ["/src/a.py:8", "/src/a.py:7"]
        assert det["cost_by_time"]["rows"][0][0] == f"dot.{k + n}"
        assert len(det["intensity"]) == 2 and det["collectives"]["rows"][0][0] == "all-reduce"
    first = next(r for r in data["index"]["modules"] if r["key"] == keys[0])
    assert [row[0] for row in data["details"][first["id"]]["passes"]["rows"]] == [0, 1, 2]
    data["index"]["open"] = first["id"]
    out = tmp_path / "costs.html"
    out.write_text(html_report.render(data), encoding="utf-8")
    cdp = _browser()
    with cdp.Browser.launch() as b:
        b.open(out.as_uri())
        b.wait_until("document.querySelector('#passes .main-svg') !== null && "
                     "document.querySelector('#roofline .main-svg') !== null")
        heads = b.eval("[...document.querySelectorAll('#detail h3')].map(h => h.textContent)")
        assert b.eval("document.getElementById('device').textContent") == "device: H100 (given)"
        for h in ("top instructions by estimated time (roofline on H100)", "top instructions by flops", "source lines by flops",
                  "collectives", "instructions after each pass"):
            assert any(x.startswith(h) for x in heads), (h, heads)
        assert "flops" in b.eval("[...document.querySelectorAll('#modules th')].map(t => t.textContent)")
        assert b.eval("document.querySelectorAll('#detail b, #detail script').length") == 0
        assert b.console_errors == [] and cdp.outside_requests(b.requests) == []


def test_instructions_per_pass_file() -> None:
    """Per-pass dumps: the page's pass table (``analysis.passes``) gives the instruction count
    of each pass file: equal to the instruction lines of that file's text, in pass order."""
    src = os.path.join(CORPUS10, "transformer")
    d = hlodump.read_arrow(src, progress=False)
    data = html_report.report_data(d)
    got = {det["key"]: det["passes"] for det in data["details"].values() if det.get("passes")}
    instr = re.compile(r"^\s+(ROOT )?%?[\w.\-]+ = ")
    n_files = 0
    for key, v in got.items():
        name = key.rsplit(":", 1)[-1]
        files = sorted(f for f in os.listdir(src) if f.startswith(name + ".") and re.match(re.escape(name) + r"\.\d{4}\.", f))
        assert [r[0] for r in v["rows"]] == [int(f[len(name) + 1:len(name) + 5]) for f in files]
        for row, f in zip(v["rows"], files):
            with open(os.path.join(src, f), encoding="utf-8") as fh:
                assert row[3] == sum(1 for line in fh if instr.match(line)), f
            n_files += 1
    assert len(got) == 2 and n_files >= 20


def test_parse_errors_per_module(tmp_path, capsys) -> None:
    """--keep-going: a module's row counts the errors of its files (the errors table's rows)."""
    src = tmp_path / "cf"
    src.mkdir()
    for f in os.listdir(CF10):
        if f.startswith(RNN_LOSS):
            shutil.copy(os.path.join(CF10, f), src / f)
    ba = src / (RNN_LOSS + "-buffer-assignment.txt")
    lines = ba.read_text().splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if ln.startswith("allocation "))
    lines.insert(i + 1, " value: <garbage here>\n")
    ba.write_text("".join(lines))
    out = str(tmp_path / "e.html")
    assert main(["report", str(src), "-o", out, "--keep-going", "--errors-ok"]) == 0
    d = hlodump.read_arrow(str(src), progress=False, on_error="collect")
    n = d["errors"].num_rows + sum(e is not None for e in d["files"].column("error").to_pylist())
    assert n >= 1
    (row,) = _index(open(out, encoding="utf-8").read())["modules"]
    assert row["errors"] == n
