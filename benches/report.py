#!/usr/bin/env python3
"""``hlodump report`` on a big dump: how long each analysis takes, how big the page is, and how
fast headless Chromium opens it and draws a module.

    python benches/report.py [--copies 39] [--steps 100000] [--replicate]

Inputs: the jax 0.10.2 dumps of tests/data (control_flow, misc, spmd, transformer: 52 modules
with their per-pass files) copied ``--copies`` times into /tmp/hlodump-bench-report (each copy
is a dump of its own, so 39 copies are 2,028 modules). Prints the seconds of the read, of each
stage of ``report_data`` (summary, timeline, buffers and the rest), of rendering the page, its
size, and in Chromium (tests/cdp.py, the system chromium) the seconds from navigation to the
load event, to the first chart drawn, and from a click on the last row to its chart.

``--replicate``: the page alone — ``report_data`` of the 52 modules once, its rows and details
repeated ``--copies`` times into one page (real module data, 2,028 modules for 39), so the
page's size and speed are measured apart from the analysis.

``--steps``: also one synthetic module of that many schedule steps (5 categories), through the
same downsampling (``html_report._timelines``), drawn in Chromium: the seconds to draw and to
answer a hover.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import hlodump  # noqa: E402
from hlodump import html_report  # noqa: E402

SRC = os.path.join(ROOT, "tests", "data", "corpus", "jax-0.10.2")
WORK = "/tmp/hlodump-bench-report"


def make_inputs(copies: int) -> str:
    root = os.path.join(WORK, f"x{copies}")
    if not os.path.isdir(root):
        os.makedirs(root)
        for i in range(copies):
            shutil.copytree(SRC, os.path.join(root, f"run{i:03d}"))
    return root


def replicate(data: dict, copies: int) -> dict:
    """The rows and details of ``data`` repeated ``copies`` times (keys and ids made unique)."""
    rows, details = [], {}
    for i in range(copies):
        for r in data["index"]["modules"]:
            nid = f"{r['id']}c{i}"
            rows.append(dict(r, id=nid, key=f"run{i:03d}/{r['key']}", dump=f"run{i:03d}/{r['dump']}"))
            details[nid] = dict(data["details"][r["id"]], key=rows[-1]["key"])
    rows.sort(key=lambda r: -(r["peak"] or -1))
    index = dict(data["index"], modules=rows, open=rows[0]["id"], dumps=sorted({r["dump"] for r in rows}))
    return {"index": index, "details": details}


def browse(path: str) -> dict[str, float]:
    import cdp

    out: dict[str, float] = {}
    with cdp.Browser.launch(1400, 1000) as b:
        t0 = time.monotonic()
        b.send("Page.navigate", url="file://" + path)
        b.wait_for("Page.loadEventFired", 300)
        out["load event"] = time.monotonic() - t0
        b.wait_until("document.querySelector('#timeline .main-svg') !== null", 300)
        out["first chart drawn"] = time.monotonic() - t0
        t1 = time.monotonic()
        b.eval("document.querySelector('#modules tbody tr:last-child').click()")
        b.wait_until("document.getElementById('detail').dataset.module === "
                     "document.querySelector('#modules tbody tr:last-child').title", 120)
        out["click to chart"] = time.monotonic() - t1
        out["rows"] = b.eval("document.querySelectorAll('#modules tbody tr').length")
        assert not b.console_errors, b.console_errors
        assert not cdp.outside_requests(b.requests)
    return out


def long_timeline(steps: int) -> dict[str, float]:
    """One module of ``steps`` steps through the page's downsampling, drawn and hovered."""
    import cdp

    cats = list(html_report.COLORS)[:5]
    rng = np.random.default_rng(1)
    n = steps + 1
    t0 = time.monotonic()
    cols = {"module": [], "step": [], "instruction": [], "category": [], "bytes": []}
    for c in cats:
        cols["module"] += ["synthetic"] * n
        cols["step"] += list(range(n))
        cols["instruction"] += [f"fusion.{i}" for i in range(n)]
        cols["category"] += [c] * n
        cols["bytes"] += np.cumsum(rng.integers(-1000, 1001, size=n)).clip(0).tolist()
    tl = pa.table(cols)
    t1 = time.monotonic()
    series = html_report._timelines(tl, html_report.MAX_POINTS)["synthetic"]
    out = {"timeline rows": float(tl.num_rows), "downsample s": time.monotonic() - t1,
           "points drawn": float(len(series["x"]))}
    row = {"id": "a0", "side": "a", "key": "synthetic", "name": "synthetic", "module_id": 0, "dump": "bench",
           "peak": series["max_bytes"], "steps": n, "errors": 0}
    det = {"key": "synthetic", "name": "synthetic", "dump": "bench", "side": "a", "timeline": series,
           "peak": {"step": series["max_step"], "bytes": series["max_bytes"], "instruction": "x"},
           "memory_analysis": None, "spaces": [], "allocated_spaces": [], "padding": None, "top_buffers": [],
           "notes": [], "live": [], "by_op_name": [], "by_source": [], "padded": []}
    data = {"index": {"title": "bench", "sections": ["memory"], "modules": [row], "categories": cats,
                      "colors": html_report.COLORS, "dumps": ["bench"], "open": "a0", "version": hlodump.__version__},
            "details": {"a0": det}}
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "long.html")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(html_report.render(data))
    out["page MB"] = os.path.getsize(path) / 1e6
    with cdp.Browser.launch(1400, 1000) as b:
        t2 = time.monotonic()
        b.open("file://" + path, 300)
        b.wait_until("document.querySelector('#timeline .main-svg') !== null", 300)
        out["open and draw s"] = time.monotonic() - t2
        px, py = b.eval("""(() => { const g = document.getElementById('timeline'), L = g._fullLayout,
                           r = g.getBoundingClientRect(); return [r.x + L.margin.l + L.xaxis._length / 2,
                           r.y + L.margin.t + L.yaxis._length / 2]; })()""")
        t3 = time.monotonic()
        b.mouse("mouseMoved", px, py)
        b.wait_until("document.getElementById('hover').textContent.startsWith('step ')", 60)
        out["hover s"] = time.monotonic() - t3
        out["total s"] = time.monotonic() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=39)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--replicate", action="store_true")
    args = ap.parse_args()
    if args.steps:
        for k, v in long_timeline(args.steps).items():
            print(f"long timeline: {k}: {v:,.3f}", flush=True)
    root = SRC if args.replicate else make_inputs(args.copies)
    t0 = time.monotonic()
    d = hlodump.read_arrow(root, progress=False, string_view=True)
    print(f"read: {time.monotonic() - t0:.2f} s, {d['files'].num_rows:,} files", flush=True)
    marks = [("start", time.monotonic())]
    data = html_report.report_data(d, progress=lambda s: marks.append((s, time.monotonic())))
    marks.append(("end", time.monotonic()))
    for (a, ta), (_, tb) in zip(marks, marks[1:]):
        print(f"report_data {a}: {tb - ta:.2f} s", flush=True)
    if args.replicate:
        data = replicate(data, args.copies)
    t1 = time.monotonic()
    path = os.path.join(WORK, f"report{args.copies}.html")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(html_report.render(data))
    print(f"render + write: {time.monotonic() - t1:.2f} s; {len(data['index']['modules']):,} modules; "
          f"page {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    for k, v in browse(path).items():
        print(f"chromium: {k}: {v:,.2f}", flush=True)


if __name__ == "__main__":
    main()
