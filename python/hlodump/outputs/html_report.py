"""One self-contained HTML page of a whole dump: ``hlodump.report(d, "report.html")``.

The page lists every module (sortable, searchable) and draws a module's detail when it is
clicked: memory in use over program order stacked by category with the peak marked (hovering a
step shows its instruction and the largest buffers live there), the buffers at the peak,
fragmentation and padding per memory space, peak bytes by op_name and source line, padded
values; with the cost, collective and pass analyses (``hlodump.analysis.costs``,
``roofline``, ``collectives``, ``passes``) where this build has them: flops and bytes per
module, top instructions and source lines, an arithmetic-intensity (roofline) scatter, the
collectives, instruction counts per pass. ``compare=`` another dump: the ``diff`` pairing, both
timelines side by side on one scale, and the changes.

Charts are drawn by **plotly.js**, inlined once into the page (no CDN, no server, no network
request; a Content-Security-Policy forbids any). Why Plotly rather than Bokeh or Vega-Lite:

* A Plotly figure is plain JSON (traces + layout). The page embeds each module's *data* as its
  own JSON block and builds the figure only when that module is opened, so a dump of 2,000
  modules opens as a table, not 2,000 charts. Bokeh's standalone output is a document of model
  objects per chart (its imperative JS API exists but is a side door); Vega-Lite compiles a
  spec through Vega's dataflow per chart.
* Offline single file: plotly (the Python package) ships the complete plotly.min.js, which we
  inline as is (4.8 MB, plotly.js 4.1 with plotly 7.1; the page is that plus the data). Altair
  needs vl-convert (a 33 MB wheel) to inline Vega's JavaScript; Bokeh's is smaller (1.4 MB) but
  drags tornado, pandas and pillow into a Python install that only wants the file.
* Speed on long timelines: a stacked step chart is one SVG path per category whatever the point
  count, and we downsample in Python before embedding (each bucket's highest and lowest step,
  the peak steps always kept), so a 10^5-step module is ~1,200 points per category: drawn in
  tens of milliseconds and a few tens of KB per module in the file.

Every figure is computed once for all modules (one call per analysis, grouped by module key),
never per module; strings from the dump (op names, file names, shapes) reach the page only
through JSON escaped for a ``<script>`` block and are put into the document with
``textContent``, never as HTML.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import analysis as A
from ..units import XLA_PEAK_ABOVE_ALLOCATED
from ..analysis import devices as V
from ..analysis.engine import Engine, engine

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["report", "report_data", "render", "timeline_series", "COLORS"]

#: Category colours, shared by the page and ``hlodump plot``'s PNG.
COLORS = {"parameter": "#4C72B0", "output": "#55A868", "constant": "#8172B2",
          "thread_local": "#CCB974", "temporary": "#DD8452", "unknown": "#999999"}

#: Points per category a module's timeline keeps (buckets × their highest and lowest step).
MAX_POINTS = 1200
#: The largest buffers of a module whose live ranges the page keeps for the hover panel.
LIVE_BUFFERS = 150
#: Rows per module of the detail tables (breakdowns, padded values, costs, collectives).
DETAIL_ROWS = 15


# ------------------------------------------------------------------------------ public API

def report(dump: "Dump", path: "str | os.PathLike[str]", *, compare: Optional["Dump"] = None,
           modules: Optional[Sequence[str]] = None, title: Optional[str] = None, top: int = 20,
           max_points: int = MAX_POINTS, open_module: Optional[str] = None,
           progress: Optional[Callable[[str], None]] = None, device: Any = None) -> str:
    """Write the HTML report of ``dump`` to ``path`` and return the path.

    ``compare``: a second dump (a later compile); modules are paired as ``analysis.diff``
    pairs them and shown side by side. ``modules``: only these module keys. ``top``: buffers
    at the peak listed per module. ``max_points``: points per category a long timeline is
    downsampled to (the peak kept). ``open_module``: the key of the module shown on opening
    (default: the one with the largest peak). ``progress``: called with the name of each stage.
    ``device``: the roofline's device (a preset name or an ``analysis.devices.Device``); default
    the device the dump names (``analysis.devices.named_by``), else no roofline (the page says
    why).

    Needs plotly (``pip install 'hlodump[report]'``) for the JavaScript it inlines.
    """
    from .._typing import check_dump, check_int, check_path

    check_dump("hlodump.report", "dump", dump)
    check_path("hlodump.report", "path", path)
    if compare is not None:
        check_dump("hlodump.report", "compare", compare)
    check_int("hlodump.report", "top", top, 0)
    check_int("hlodump.report", "max_points", max_points, 2)
    data = report_data(dump, compare=compare, modules=modules, top=top, max_points=max_points,
                       progress=progress, device=device)
    if title is not None:
        data["index"]["title"] = title
    if open_module is not None:
        data["index"]["open"] = open_module
    page = render(data)
    from .atomic import write_replaced

    return write_replaced(path, page)  # atomic: a failure leaves an existing page as it was


def report_data(dump: "Dump", *, compare: Optional["Dump"] = None, modules: Optional[Sequence[str]] = None,
                top: int = 20, max_points: int = MAX_POINTS,
                progress: Optional[Callable[[str], None]] = None, device: Any = None) -> dict[str, Any]:
    """What the page shows, as plain data: ``{"index": {...,"modules": [row, ...]},
    "details": {id: {...}}}``; one row per module (sorted by peak, largest first) and its
    detail keyed by the row's ``id``; ``index["device"]``: the roofline's device (``name``,
    ``chosen``: how) or ``{"name": None, "note": why there is no roofline}``. Useful for tests
    and for other front ends."""
    say = progress or (lambda _s: None)
    dev, dev_info = _device(dump, modules, device)
    rows, details, sections = _collect(dump, modules, top, max_points, say, side="a", dev=dev)
    if compare is not None:
        say("compare")
        brows, bdetails, _ = _collect(compare, None, top, max_points, say, side="b", dev=dev)
        _pair(dump, compare, rows, brows, details, bdetails, unpaired_b=modules is None)
        sections.append("compare")
    rows.sort(key=lambda r: (-(r["peak"] if r["peak"] is not None else -1), r["key"]))
    index = {"title": "hlodump report", "sections": sections, "modules": rows,
             "categories": list(COLORS), "colors": COLORS,
             "dumps": sorted({r["dump"] for r in rows if r["dump"]}),
             "open": next((r["id"] for r in rows if r["side"] == "a"), None), "version": _version(),
             "peak_note": XLA_PEAK_ABOVE_ALLOCATED, "device": dev_info}
    return {"index": index, "details": details}


def _device(d: "Dump", keys: Optional[Sequence[str]], device: Any) -> tuple[Optional[V.Device], dict[str, Any]]:
    """The roofline's device: the one given, else the one the modules' backends name, else
    none (and why)."""
    if device is not None:
        dev = V.device(device)
        return dev, {"name": dev.name, "chosen": "given", "source": dev.source}
    mods = A._module_list(d)
    if keys is not None:
        wanted = set(keys)
        mods = [m for m in mods if m.key in wanted]
    name, how = V.named_by(b for m in mods for b in m.backends)
    if name is None:
        return None, {"name": None, "note": f"no roofline: {how} (hlodump report --device NAME for one)"}
    dev = V.device(name)
    return dev, {"name": dev.name, "chosen": f"named by the dump: {how}", "source": dev.source}


def render(data: dict[str, Any]) -> str:
    """The HTML page of ``report_data``'s result (plotly.js inlined)."""
    from .report_page import PAGE

    idx = data["index"]
    if isinstance(idx.get("open"), str) and not any(r["id"] == idx["open"] for r in idx["modules"]):
        idx["open"] = next((r["id"] for r in idx["modules"] if r["key"] == idx["open"]), None)
    blocks = "\n".join(f'<script type="application/json" id="m-{html.escape(k)}">{_json_html(v)}</script>'
                       for k, v in data["details"].items())
    parts = {"TITLE": html.escape(idx["title"]), "PLOTLY": _plotly_js(), "INDEX": _json_html(idx), "DETAILS": blocks}
    # one pass over the template: text put in is never searched for placeholders again
    return re.sub(r"%%(TITLE|PLOTLY|INDEX|DETAILS)%%", lambda m: parts[m.group(1)], PAGE)


def timeline_series(dump: "Dump", modules: Optional[Sequence[str]] = None,
                    max_points: int = MAX_POINTS) -> dict[str, dict[str, Any]]:
    """Per module key, the timeline as the charts draw it: ``x`` (steps kept), ``ins`` (the
    instruction scheduled at each), ``cats`` ([category, bytes per kept step] of the
    device's main memory, color 0, each allocation slice once as ``memory_timeline`` counts), ``steps`` (the
    module's step count), ``downsampled``, ``max_step`` / ``max_bytes`` (the most live bytes)."""
    tl = A.memory_timeline(dump, list(modules) if modules is not None else None)
    return _timelines(tl, max_points)


# ------------------------------------------------------------------------------ collecting

def _version() -> str:
    from .._version import __version__

    return __version__


def _collect(d: "Dump", keys: Optional[Sequence[str]], top: int, max_points: int, say: Callable[[str], None],
             side: str, dev: Optional[V.Device] = None) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], list[str]]:
    """Index rows and per-module details of one dump, each analysis run once for all modules."""
    eng = engine(d)
    mods = A.modules(d).to_pylist()
    if keys is not None:
        wanted = set(keys)
        mods = [m for m in mods if m["module"] in wanted]
    if not mods:
        from ..io.failures import nothing_why

        raise ValueError("nothing to report: no module with HLO text, buffer assignment, live ranges or a "
                         "memory-usage report" + nothing_why(d))
    sel: Optional[list[str]] = [m["module"] for m in mods]
    if keys is None:
        sel = None  # every module: the dump's own scope (no list of every key)
    say("summary")
    summ = {s["module"]: s for s in A.summary(d, sel, top=top)}
    say("timeline")
    tl_table = A.memory_timeline(d, sel)
    tls = _timelines(tl_table, max_points)
    say("buffers")
    live = _top_per_module(eng, A.buffers(d, sel), LIVE_BUFFERS, "size",
                           ["instruction", "shape_index", "size", "start", "end", "shape", "category", "op_name", "source"],
                           where='"start" is not null')
    by_op = _top_per_module(eng, A.breakdown(d, "op_name", sel), DETAIL_ROWS, "bytes", ["key", "bytes", "buffers", "share"])
    by_src = _top_per_module(eng, A.breakdown(d, "source", sel), DETAIL_ROWS, "bytes", ["key", "bytes", "buffers", "share"])
    padded = _top_per_module(eng, A.padding(d, sel), DETAIL_ROWS, "padding_bytes",
                             ["instruction", "shape_index", "shape", "allocated_bytes", "logical_bytes", "padding_bytes",
                              "category", "op_name", "source"], where="padding_bytes > 0")
    view_problems: list[str] = []
    try:
        spans = _spans(d, eng, sel, tl_table)
    except Exception as e:  # noqa: BLE001 - the page stands without its memory viewer
        spans = {}
        view_problems.append(f"memory viewer: {type(e).__name__}: {e}")
    errs = _errors_per_module(d, mods)
    caps = {r["module"]: r for r in A.device_capacity(d).to_pylist()}
    say("costs, collectives, passes")
    opt = _optional_sections(d, eng, sel, dev)
    graphs = _graphs(d, eng, sel, opt.get("cost_table"), spans, view_problems)
    rows: list[dict[str, Any]] = []
    details: dict[str, dict[str, Any]] = {}
    for n, m in enumerate(mods):
        key = m["module"]
        s = summ.get(key) or {}
        mid = f"{side}{n}"
        ma = s.get("memory_analysis") or {}
        pk = s.get("peak") or {}
        pks = s.get("peaks") or A.peaks(s) if s else {}
        tl = tls.get(key)
        cost = s.get("cost_analysis") or {}
        row = {"id": mid, "side": side, "key": key, "name": m["module_name"], "module_id": m["module_id"],
               "dump": m["dump"],
               # each peak under its one name (analysis.peaks, hlodump.units): "peak" is the peak in use
               "peak": pks.get("peak_in_use"), "xla_listed_peak": pks.get("xla_listed_peak"),
               "total": s.get("total_bytes"), "argument": ma.get("argument_size_in_bytes"),
               "output": ma.get("output_size_in_bytes"), "temp": ma.get("temp_size_in_bytes"),
               "alias": ma.get("alias_size_in_bytes"), "steps": (tl or {}).get("steps"),
               "instructions": m.get("n_instructions"),
               "flops": cost.get("flops", opt["flops"].get(key)),
               "bytes_accessed": cost.get("bytes accessed", opt["bytes_accessed"].get(key)),
               "collective_bytes": opt["collective_bytes"].get(key),
               "errors": errs.get(key, 0)}
        rows.append(row)
        details[mid] = {
            "key": key, "name": m["module_name"], "dump": m["dump"], "side": side,
            "timeline": tl, "peak": pk or None, "peaks": pks or None, "memory_analysis": ma or None,
            "spaces": (s.get("timeline") or {}).get("memory_spaces") or [],
            "allocated_spaces": s.get("memory_spaces") or [], "padding": s.get("padding"),
            "top_buffers": s.get("top_buffers") or [], "notes": s.get("notes") or [],
            # what to do about the peak, cheapest first (analysis.advice; summary keeps five)
            "advice": [{"kind": a.get("kind"), "bytes": a.get("bytes"), "text": a.get("text"),
                        "instruction": a.get("instruction")} for a in (s.get("advice") or [])],
            "timeline_head": _timeline_head(s.get("timeline")),
            "device": _device_line(s, caps.get(key)),
            "live": live.get(key, []), "by_op_name": by_op.get(key, []), "by_source": by_src.get(key, []),
            "padded": padded.get(key, []),
            "spans": spans.get(key), "graph": graphs.get(key),
            **{k: v.get(key) for k, v in opt["detail"].items()},
            "section_problems": list(opt["problems"]) + view_problems,
        }
    return rows, details, ["memory"] + opt["sections"]


def _spans(d: "Dump", eng: Engine, sel: Optional[list[str]], tl: pa.Table) -> dict[str, dict[str, Any]]:
    """The memory viewer's bars (``viewer_data.spans_per_module``)."""
    from .viewer_data import spans_per_module

    return spans_per_module(d, eng, sel, tl)


def _graphs(d: "Dump", eng: Engine, sel: Optional[list[str]], costs: Optional[pa.Table],
            spans: dict[str, dict[str, Any]], problems: list[str]) -> dict[str, dict[str, Any]]:
    """The graph view's graphs (``viewer_data.graphs_per_module``); a failure costs the view,
    not the page (``problems`` says why)."""
    from .viewer_data import graphs_per_module

    try:
        return graphs_per_module(d, eng, sel, costs, spans)
    except Exception as e:  # noqa: BLE001 - the page stands without its graph view
        problems.append(f"graph view: {type(e).__name__}: {e}")
        return {}


def _plain(t: pa.Table) -> pa.Table:
    """string_view columns as string (DuckDB and pyarrow compute take those everywhere)."""
    cols = []
    for f in t.schema:
        col = t.column(f.name)
        if str(f.type) == "string_view":
            col = col.cast(pa.large_string())
        cols.append(col)
    return pa.table(cols, names=t.column_names)


def _top_per_module(eng: Engine, t: Optional[pa.Table], n: int, order: str, cols: list[str], where: str = "true",
                    module_col: str = "module") -> dict[str, list[list[Any]]]:
    """The ``n`` rows with the largest ``order`` per module, as lists in ``cols`` order: one
    query over all modules (a window per module) on the dump's engine, grouped in one pass."""
    if t is None or t.num_rows == 0:
        return {}
    keep = [c for c in cols if c in t.column_names]
    sel = ", ".join(f'"{c}"' for c in keep)
    res = eng.query(f"""
        select "{module_col}", {sel} from (
            select *, row_number() over (partition by "{module_col}" order by "{order}" desc nulls last) as rn
            from t where {where}) where rn <= {int(n)} order by "{module_col}", rn""",
                    t=_plain(t.select([module_col] + [c for c in keep if c != module_col]
                                      + ([order] if order not in keep else []))))
    out: dict[str, list[list[Any]]] = {}
    pad = [None] * (len(cols) - len(keep))
    # JSON-ready columns in Arrow (an infinite or NaN float is null), then rows by zipping lists:
    # no per-value Python call over the page's rows
    values = [(pc.if_else(pc.is_finite(c), c, pa.scalar(None, c.type)) if pa.types.is_floating(c.type) else c).to_pylist()
              for c in res.columns[1:]]
    for m, row in zip(res.column(0).to_pylist(), zip(*values)):
        out.setdefault(m, []).append([*row, *pad])
    return out


def _num(v: Any) -> Any:
    import decimal

    if isinstance(v, decimal.Decimal):
        v = int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v) if math.isfinite(v) else None
    return v


def _device_line(s: dict[str, Any], dev: Optional[dict[str, Any]]) -> Optional[str]:
    """"device: TPU v5 lite, 15.75GiB HBM …; peak in use … of …, 86%" where the dump names its
    device (``analysis.capacity``), against the peak in use of the main memory."""
    if not dev:
        return None
    from ..analysis.capacity import capacity_line

    return capacity_line((s.get("peaks") or {}).get("peak_in_use"), dev, A.format_bytes)


def _timeline_head(tl: Optional[dict[str, Any]]) -> Optional[str]:
    """"HBM, step 346" — where the peak in use is, for the page's buffer table title."""
    if not tl:
        return None
    return f"{tl.get('memory_space') or 'main'}, step {tl.get('max_allocated_step')}"


def _main_memory(tl: pa.Table) -> pa.Table:
    """The timeline rows of the device's main memory (color 0: HBM on TPU and GPU): the chart
    shows the memory the peak in use is of. On-chip and host memory are other memories (the
    page lists them per space); a module without color-0 rows keeps all of its rows."""
    import pyarrow.compute as pc

    main = pc.equal(tl.column("color"), 0)
    with_main = pc.unique(tl.filter(main).column("module"))
    return tl.filter(pc.or_(main, pc.invert(pc.is_in(tl.column("module"), with_main))))


def _timelines(tl: pa.Table, max_points: int) -> dict[str, dict[str, Any]]:
    """memory_timeline rows → per module a dense [category × step] matrix (the main memory, see
    ``_main_memory``),
    downsampled. One sort of the whole table; the loop is over modules, never over rows."""
    if tl.num_rows == 0:
        return {}
    tl = _main_memory(tl)
    mod = tl.column("module").cast(pa.large_string()).combine_chunks().dictionary_encode()
    cat = tl.column("category").cast(pa.large_string()).combine_chunks().dictionary_encode()
    m_codes = np.asarray(mod.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    c_codes = np.asarray(cat.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    steps = np.asarray(tl.column("step").to_numpy(), dtype=np.int64)
    nbytes = np.asarray(tl.column("bytes").to_numpy(), dtype=np.int64)
    ins = tl.column("instruction").cast(pa.large_string()).combine_chunks()
    cat_names = cat.dictionary.to_pylist()
    order = np.lexsort((steps, m_codes))
    bounds = np.flatnonzero(np.diff(m_codes[order])) + 1
    cat_rank = {c: i for i, c in enumerate(COLORS)}
    out: dict[str, dict[str, Any]] = {}
    for part in np.split(order, bounds):
        key = mod.dictionary[int(m_codes[part[0]])].as_py()
        st = steps[part]
        n = int(st.max()) + 1
        used = sorted(np.unique(c_codes[part]).tolist(), key=lambda c: cat_rank.get(cat_names[c], 99))
        lut = np.full(len(cat_names), -1, dtype=np.int64)
        lut[used] = np.arange(len(used))
        mat = np.zeros((len(used), n), dtype=np.int64)
        np.add.at(mat, (lut[c_codes[part]], st), nbytes[part])
        row_at = np.full(n, -1, dtype=np.int64)  # a row of each step: its instruction
        row_at[st] = part
        total = mat.sum(axis=0)
        mx = int(total.argmax()) if n else 0
        keep = _downsample(total, max_points, must=[mx])
        rows = row_at[keep]
        names = ins.take(pa.array(np.where(rows >= 0, rows, 0))).to_pylist()
        out[key] = {"x": keep.tolist(), "ins": [nm if r >= 0 else None for nm, r in zip(names, rows.tolist())],
                    "cats": [[cat_names[c], mat[i, keep].tolist()] for i, c in enumerate(used)],
                    "steps": n, "downsampled": len(keep) < n, "max_step": mx, "max_bytes": int(total[mx]) if n else 0}
    return out


def _downsample(total: np.ndarray, max_points: int, must: Iterable[int] = ()) -> np.ndarray:
    """Step indices to draw: all when few; else per bucket its highest and lowest step (so
    the peak and the valleys stay), plus the first, last and ``must`` steps."""
    n = len(total)
    if n <= max_points:
        return np.arange(n)
    buckets = max(max_points // 2, 1)
    bucket = (np.arange(n) * buckets) // n
    hi = np.lexsort((-total, bucket))  # per bucket, highest first
    lo = np.lexsort((total, bucket))
    firsts = np.flatnonzero(np.r_[True, np.diff(bucket[hi]) != 0])
    keep = np.unique(np.concatenate([hi[firsts], lo[firsts], [0, n - 1], np.fromiter(must, dtype=np.int64)]))
    return keep[(keep >= 0) & (keep < n)]


def _errors_per_module(d: "Dump", mods: list[dict[str, Any]]) -> dict[str, int]:
    """Parse errors (``errors`` rows and unreadable files) of each module's files."""
    of_file: dict[int, str] = {}
    for m in mods:
        for f in m["file_ids"] or []:
            of_file[f] = m["module"]
    out: dict[str, int] = {}
    fids = d["errors"].column("file_id").to_numpy(zero_copy_only=False) if d["errors"].num_rows else np.array([], dtype=np.int64)
    files = d["files"]
    bad = [f for f, e in zip(files.column("file_id").to_pylist(), files.column("error").to_pylist()) if e is not None]
    ids, counts = np.unique(np.concatenate([np.asarray(fids, dtype=np.int64), np.asarray(bad, dtype=np.int64)]),
                            return_counts=True)
    for f, c in zip(ids.tolist(), counts.tolist()):
        if f in of_file:
            out[of_file[f]] = out.get(of_file[f], 0) + int(c)
    return out


# ------------------------------------------------------------------------------ optional analyses

def _optional_sections(d: "Dump", eng: Engine, sel: Optional[list[str]], dev: Optional[V.Device]) -> dict[str, Any]:
    """The cost, roofline (with a device: given or named by the dump), collective and pass
    analyses: module totals for the index and per-module rows for the detail. A failing one
    becomes a note on the page (``problems``) rather than no page."""
    out: dict[str, Any] = {"flops": {}, "bytes_accessed": {}, "collective_bytes": {}, "detail": {}, "sections": [],
                           "problems": []}
    cost_table: list[pa.Table] = []

    def attempt(name: str, fn: Callable[[], bool]) -> None:
        try:
            if fn():  # rows for some module
                out["sections"].append(name)
        except Exception as e:  # noqa: BLE001 - an optional section must not cost the page
            out["problems"].append(f"{name}: {type(e).__name__}: {e}")

    def costs() -> bool:
        t = A.costs(d, sel)
        cost_table.append(t)
        out["cost_table"] = t
        t = t.filter(t.column("in_total"))  # the entry rows add up to the module (fused rows are inside them)
        if t.num_rows == 0:
            return False
        c = _plain(t.select(["module", "instruction", "opcode", "flops", "transcendentals", "bytes_accessed",
                             "op_name", "source_file", "source_line"]))
        sums = eng.query("select module, sum(flops) as f, sum(bytes_accessed) as b from c group by all", c=c)
        for k, f, b in zip(*(col.to_pylist() for col in sums.columns)):
            out["flops"][k], out["bytes_accessed"][k] = _num(f), _num(b)
        cols = ["instruction", "opcode", "flops", "bytes_accessed", "transcendentals", "op_name", "source_file",
                "source_line"]
        out["detail"]["cost_by_flops"] = _labelled(_top_per_module(eng, c, DETAIL_ROWS, "flops", cols), cols)
        out["detail"]["cost_by_bytes"] = _labelled(_top_per_module(eng, c, DETAIL_ROWS, "bytes_accessed", cols), cols)
        by_line = eng.query("""select module, source_file || coalesce(':' || source_line::varchar, '') as source,
                                      sum(flops) as flops, sum(bytes_accessed) as bytes_accessed, count(*) as instructions
                               from c where source_file is not null group by all""", c=c)
        scols = ["source", "flops", "bytes_accessed", "instructions"]
        out["detail"]["cost_by_source"] = _labelled(_top_per_module(eng, by_line, DETAIL_ROWS, "flops", scols), scols)
        # the intensity scatter: every instruction with flops and bytes (the largest 2,000 per module)
        out["detail"]["intensity"] = _top_per_module(eng, c, 2000, "flops", ["instruction", "opcode", "flops", "bytes_accessed"],
                                                     where='"flops" > 0 and "bytes_accessed" > 0')
        return True

    def roofline() -> bool:
        if dev is None:  # no device given or named: no times (index["device"] says why)
            return False
        t = A.roofline(d, dev, sel, costs_table=cost_table[0] if cost_table else None)
        if t.num_rows == 0:
            return False
        cols = ["instruction", "opcode", "seconds", "bound", "intensity", "flops", "bytes_accessed", "op_name",
                "source_file", "source_line"]
        out["detail"]["cost_by_time"] = _labelled(_top_per_module(eng, t, DETAIL_ROWS, "seconds", cols), cols)
        return True

    def collectives() -> bool:
        t = A.collectives(d, sel)
        if t.num_rows == 0:
            return False
        c = _plain(t.select(["module", "kind", "instruction", "bytes", "bytes_per_device", "group_size", "num_groups",
                             "op_name", "source_file", "source_line"]))
        sums = eng.query("select module, sum(bytes)::bigint as b from c group by all", c=c)
        for k, b in zip(*(col.to_pylist() for col in sums.columns)):
            out["collective_bytes"][k] = _num(b)
        cols = ["kind", "instruction", "bytes", "bytes_per_device", "group_size", "num_groups", "op_name",
                "source_file", "source_line"]
        out["detail"]["collectives"] = _labelled(_top_per_module(eng, c, 50, "bytes", cols), cols)
        return True

    def passes() -> bool:
        t = A.passes(d)
        if sel is not None:
            t = t.filter(pc.is_in(t.column("module"), value_set=pa.array(sel, pa.string())))
        if t.num_rows == 0:
            return False
        cols = ["pass_index", "pass_name", "pipeline", "instructions", "added", "removed", "changed"]
        got = _top_per_module(eng, t, 1 << 31, "pass_index", cols)
        out["detail"]["passes"] = {k: {"columns": cols, "rows": v[::-1]} for k, v in got.items()}  # pass order
        return True

    for name, fn in (("costs", costs), ("roofline", roofline), ("collectives", collectives), ("passes", passes)):
        attempt(name, fn)
    return out


def _labelled(per_module: dict[str, list[list[Any]]], cols: list[str]) -> dict[str, dict[str, Any]]:
    return {k: {"columns": cols, "rows": v} for k, v in per_module.items()}


# ------------------------------------------------------------------------------ compare

def _pair(a: "Dump", b: "Dump", rows: list[dict[str, Any]], brows: list[dict[str, Any]],
          details: dict[str, dict[str, Any]], bdetails: dict[str, dict[str, Any]], unpaired_b: bool) -> None:
    """``analysis.diff``'s pairing: each A module gets its B partner's id and the changes; B
    modules without a partner are added as rows of their own (``unpaired_b``: unless only
    some A modules were asked for)."""
    t = A.diff(a, b)
    details.update(bdetails)
    by_key_a = {r["key"]: r for r in rows}
    by_key_b = {r["key"]: r for r in brows}
    changes: dict[tuple[Optional[str], Optional[str]], list[list[Any]]] = {}
    for r in t.to_pylist():
        changes.setdefault((r["module_a"], r["module_b"]), []).append(
            [r["what"], r["change"], r["key"], r["a"], r["b"], r["delta"], r["detail"]])
    paired_b: set[str] = set()
    for (ka, kb), ch in changes.items():
        ra, rb = by_key_a.get(ka or ""), by_key_b.get(kb or "")
        target = ra or rb
        if target is None:
            continue
        if ra is not None and rb is not None:
            ra["other"] = rb["id"]
            ra["other_peak"] = rb["peak"]
            ra["delta_peak"] = (rb["peak"] or 0) - (ra["peak"] or 0) if (ra["peak"] is not None or rb["peak"] is not None) else None
            details[ra["id"]]["other"] = rb["id"]
            paired_b.add(rb["key"])
        details[target["id"]]["changes"] = ch[:200]
    _why(a, b, by_key_a, details)
    for rb in brows:
        if rb["key"] in paired_b:
            rows.append(rb)
        elif unpaired_b:
            rb["only_b"] = True
            rows.append(rb)
        else:
            del details[rb["id"]]


def _why(a: "Dump", b: "Dump", by_key_a: dict[str, dict[str, Any]], details: dict[str, dict[str, Any]]) -> None:
    """``analysis.explain``'s causes of each pair's peak change, on the A module's detail
    (``why``: the peak named, both peaks, and the causes as a labelled table)."""
    try:
        ex = A.explain(a, b, cost=False, top=50)
    except Exception as e:  # pragma: no cover - the rest of the page stands without it
        for r in by_key_a.values():
            details.get(r["id"], {}).setdefault("section_problems", []).append(f"explain: {e}")
        return
    cols = ["kind", "bytes", "source", "op_name", "detail"]
    for p in ex["pairs"]:
        ra = by_key_a.get(p["module_a"])
        if ra is None or ra["id"] not in details:
            continue
        # as the CLI: an option that differs only in the whole configuration (a release's default,
        # zero bytes, not set by hand) is folded into one line, not a row each
        explicit = {o["key"] for o in p.get("options") or [] if o.get("explicit")}
        causes = [c for c in p["causes"] if c["kind"] != "options" or c["bytes"] or c["op_name"] in explicit]
        defaults = [o["key"] for o in p.get("options") or [] if not o.get("explicit")]
        folded = None
        if defaults:
            names = ", ".join(k.rsplit(".", 1)[-1] for k in defaults[:5])
            folded = (f"options: {len(defaults)} differ in the whole configuration only (a release's defaults?): "
                      f"{names}{' …' if len(defaults) > 5 else ''} (hlodump diff --json lists them)")
        details[ra["id"]]["why"] = {
            "folded": folded,
            "peak": ex["peak"], "peak_a": p["peak_a"], "peak_b": p["peak_b"], "peak_delta": p["peak_delta"],
            "module_b": p["module_b"], "note": p["note"],
            "columns": cols,
            "rows": [[c["kind"], c["bytes"],
                      (f"{os.path.basename(c['source_file'])}:{c['source_line']}" if c["source_file"] else None),
                      c["op_name"], c["detail"]] for c in causes[:100]]}


# ------------------------------------------------------------------------------ embedding

_JS_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
               0x2028: "\\u2028", 0x2029: "\\u2029"}


def _json_html(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</script>``, ``<!--``
    or ``&`` can appear, so no text from the dump can end the block."""
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_default)
    except ValueError:  # a NaN/inf somewhere: null, as JSON.parse needs
        text = json.dumps(_finite(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_default)
    return text.translate(_JS_ESCAPES)


def _default(v: Any) -> Any:
    import decimal

    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, decimal.Decimal):  # DuckDB's 128-bit sums: a number, never its text
        return int(v) if v == v.to_integral_value() else _num(float(v))
    if isinstance(v, (np.floating,)):
        return _num(v)
    return str(v)


def _finite(o: Any) -> Any:
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _plotly_js() -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:  # an optional dependency: say how to get it
        raise ImportError("the HTML report needs plotly (its JavaScript is inlined into the page): "
                          "pip install 'hlodump[report]'") from None
    js = get_plotlyjs()
    if "</script" in js.lower():  # pragma: no cover - would end our <script> early
        js = js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    return js
