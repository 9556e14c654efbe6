"""Pictures of pasted out-of-memory reports (``oom_reports`` / ``oom_buffers``), for
``hlodump plot`` and ``hlodump report`` on a log that holds reports and no dump.

One figure per report: its largest buffers as horizontal bars (size, shape, op_name, source
line, the HLO instruction), and what failed — on TPU, memory in use by kind (arguments,
program, reserved) against the capacity; on GPU, the allocations by kind (parameter,
maybe-live-out, preallocated temp, constant) and the request that failed. The figures are the
report's own (``analysis.oom_summary``): nothing is recomputed, so the picture says what the
log says.

``plot_oom_png`` draws with matplotlib (Agg); ``oom_html`` writes one self-contained page
(plotly.js inlined, no network) with every report of the dump, its chart and its tables.
"""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING, Any, Optional

from .. import analysis as A
from .. import units as U

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["oom_figure_data", "oom_figure", "plot_oom_png", "oom_html"]

# The stated figures a report's "in use" bar is made of, by backend: (section, key, label).
_IN_USE = {
    "tpu": (("total_usage", "arguments", "arguments"), ("total_usage", "program", "program"),
            ("total_usage", "reserved", "reserved")),
    "gpu": (("stats", "parameter allocation", "parameters"), ("stats", "maybe_live_out allocation", "outputs"),
            ("stats", "preallocated temp allocation", "temporaries"), ("stats", "constant allocation", "constants")),
}
_KIND_COLORS = {"arguments": "#4C78A8", "parameters": "#4C78A8", "program": "#F58518", "temporaries": "#F58518",
                "outputs": "#54A24B", "reserved": "#B279A2", "constants": "#9D755D"}


def _buffer_color(b: dict[str, Any]) -> str:
    """A buffer's bar colour by its role (``_role``): an entry parameter's in the parameters'
    colour, an output's in the outputs', others in the temporaries' (as the "in use" bar)."""
    return _KIND_COLORS.get(b.get("role") or "temporaries", _KIND_COLORS["temporaries"])


def _roles(report: dict[str, Any]) -> list[str]:
    """Each listed buffer's role: ``parameters`` (XLA printed its ``Entry Parameter Subshape``),
    ``outputs`` or ``temporaries``. A GPU report does not say which buffer is an output, but it
    states the ``maybe_live_out allocation`` (the outputs' allocation): the one non-parameter
    buffer whose size is that allocation's (as printed, the same rounding) is the output."""
    bufs = report.get("buffers") or []
    roles = ["parameters" if b.get("kind") == "parameter" else "temporaries" for b in bufs]
    out = (((report.get("figures") or {}).get("stats") or {}).get("maybe_live_out allocation") or {})
    if out.get("bytes"):
        same = [i for i, b in enumerate(bufs) if roles[i] != "parameters" and b.get("size_bytes") == out["bytes"]]
        if len(same) == 1:
            roles[same[0]] = "outputs"
    return roles


def _label(b: dict[str, Any]) -> str:
    """A buffer's name on the chart: its HLO instruction (the text before ` = `), "entry
    parameter" for one (its shape is beside it, once), else its rank."""
    lab = (b.get("xla_label") or "").split(" = ")[0].strip()
    if lab:
        return lab
    return "entry parameter" if b.get("kind") == "parameter" else f"buffer {b['rank']}"


def oom_figure_data(report: dict[str, Any]) -> dict[str, Any]:
    """The series of one report (an ``oom_summary`` dict): ``title``, ``buffers`` (label,
    bytes, size text, shape, op_name, source, line — largest first, as the report ranks them),
    ``in_use`` (label → bytes, the stated figures by kind), ``capacity`` (TPU) and ``requested``
    (GPU) in bytes or None, and ``lines``: what failed, in words."""
    failed, figures = report.get("failed") or {}, report.get("figures") or {}
    backend = report.get("backend") or "gpu"
    in_use: dict[str, int] = {}
    for section, key, label in _IN_USE.get(backend, ()):
        v = (figures.get(section) or {}).get(key)
        if v and v.get("bytes") is not None:
            in_use[label] = int(v["bytes"])
    cap = (failed.get("capacity") or {}).get("bytes")
    req = (failed.get("requested") or {}).get("bytes")
    lines = []
    if "used" in failed and cap is not None:
        lines.append(f"used {A.format_bytes(failed['used']['bytes'])} of {A.format_bytes(cap)} "
                     f"{(report.get('memory_space') or 'memory').upper()}"
                     + (f", exceeded by {A.format_bytes(failed['exceeded']['bytes'])}" if "exceeded" in failed else ""))
    if req is not None:
        lines.append(f"failed to allocate {req:,} bytes ({A.format_bytes(req)})")
    other = {k: v for k, v in failed.items() if k not in ("requested", "used", "capacity", "exceeded")}
    if other:
        lines.append(", ".join(f"{k} {A.format_bytes(v['bytes']) if v.get('bytes') is not None else v.get('text')}"
                               for k, v in other.items()))
    total = (figures.get("stats") or {}).get("total allocation")
    if total and total.get("bytes") is not None:
        lines.append(f"allocated when it failed: {A.format_bytes(total['bytes'])}")
    for m in report.get("missing") or []:
        lines.append(f"missing (line {m['line']}): {m['text']}")
    bufs = [{"label": _label(b), "bytes": b["size_bytes"], "size": b.get("size"), "shape": b.get("shape"),
             "op_name": b.get("op_name"), "source": b.get("source"), "allocation_type": b.get("allocation_type"),
             "kind": b.get("kind"), "role": role, "color": _buffer_color({"role": role}), "line": b.get("line")}
            for b, role in zip(report.get("buffers") or [], _roles(report))]
    where = os.path.basename(report.get("path") or "") or "log"
    return {"title": f"{where}: out-of-memory report {report['report_id']} (line {report.get('line')}, "
                     f"{backend.upper()})",
            "buffers": bufs, "n_buffers": report.get("n_buffers", len(bufs)), "in_use": in_use,
            "capacity": cap, "requested": req, "lines": lines, "times_printed": report.get("times_printed", 1)}


def plot_oom_png(report: dict[str, Any], out: str) -> str:
    """Draw one report into ``out`` (PNG, 1100×600): its largest buffers, and memory in use by
    kind against capacity (TPU) or with the failed request (GPU). Returns ``out``."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("hlodump plot: PNG output needs matplotlib: pip install 'hlodump[plot]' "
                         "(or write HTML: -o out.html)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .atomic import save_figure

    fig = oom_figure(report)
    try:
        save_figure(fig, out)
    finally:
        plt.close(fig)
    return out


def oom_figure(report: dict[str, Any]) -> Any:
    """The matplotlib figure ``plot_oom_png`` saves (the caller closes it); byte axes tick on
    round binary values (``hlodump.units``)."""
    import matplotlib
    import matplotlib.pyplot as plt

    f = oom_figure_data(report)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 6), dpi=100, gridspec_kw={"width_ratios": [3, 1]})
    bufs = [b for b in f["buffers"] if b["bytes"] is not None][::-1]  # largest on top
    if bufs:
        ax.barh(range(len(bufs)), [b["bytes"] for b in bufs], color=[b["color"] for b in bufs])
        ax.set_yticks(range(len(bufs)), [f"{b['label'][:28]}  {(b['shape'] or '')[:24]}" for b in bufs], fontsize=7)
        for i, b in enumerate(bufs):
            ax.text(b["bytes"], i, f" {A.format_bytes(b['bytes'])}", va="center", fontsize=7)
        ax.xaxis.set_major_locator(matplotlib.ticker.MultipleLocator(U.binary_step(max(b["bytes"] for b in bufs), 6)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: U.format_bytes_tick(v)))
        ax.set_xlabel(f"the report's largest buffers ({len(bufs)} of {f['n_buffers']})")
    else:
        ax.text(0.5, 0.5, "the report lists no buffers", ha="center", va="center", transform=ax.transAxes)
    bottom = 0
    for label, nbytes in f["in_use"].items():
        ax2.bar([0], [nbytes], bottom=bottom, color=_KIND_COLORS.get(label, "#999999"), label=label)
        bottom += nbytes
    if f["capacity"] is not None:
        ax2.axhline(f["capacity"], color="crimson", ls="--", label=f"capacity {A.format_bytes(f['capacity'])}")
    if f["requested"] is not None:
        ax2.bar([1], [f["requested"]], color="crimson", alpha=0.6, label="failed request")
    ax2.set_xticks([])
    top2 = max(bottom, f["capacity"] or 0, f["requested"] or 0)
    if top2:  # ticks on round binary values, as every byte axis
        ax2.yaxis.set_major_locator(matplotlib.ticker.MultipleLocator(U.binary_step(top2)))
    ax2.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: U.format_bytes_tick(v)))
    ax2.set_title("in use when it failed", fontsize=9)
    if f["in_use"] or f["capacity"] is not None or f["requested"] is not None:
        ax2.legend(fontsize=7, loc="upper right")
    fig.suptitle(f["title"] + ("\n" + "; ".join(f["lines"]) if f["lines"] else ""), fontsize=9)
    fig.tight_layout()
    return fig


def _ptext(v: Any) -> str:
    """Dump text as plotly shows it: plotly reads a few HTML tags in every label, tick, legend
    entry, title and hover text (``<a href>``, ``<span style>``, ``<br>`` …) and decodes entities,
    so ``&``, ``<`` and ``>`` are written as entities: the text is shown as it is, never
    interpreted."""
    return html.escape("" if v is None else str(v), quote=False)


#: The page may fetch nothing and run only its own inline scripts (as ``hlodump report``'s).
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
       "font-src data:")


def _table(rows: list[list[Any]], head: list[str]) -> str:
    e = html.escape
    th = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{e(chr(0x2014) if v is None or v == '' else f'{v:,}' if isinstance(v, int) else str(v))}</td>"
                                    for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def oom_html(dump: "Dump", out: str, *, top: int = 20, title: Optional[str] = None) -> str:
    """One offline page of every OOM report of ``dump``: per report what failed, a bar chart of
    its largest buffers and of memory in use by kind, the stated figures and the buffer table.
    Returns ``out``; raises ``ValueError`` when the dump holds no report."""
    from .html_report import _json_html, _plotly_js

    reports = A.oom_summary(dump, top=top)
    if not reports:
        raise ValueError("no out-of-memory report in this dump")
    e = html.escape
    parts = []
    for i, r in enumerate(reports):
        f = oom_figure_data(r)
        bufs = [b for b in f["buffers"] if b["bytes"] is not None][::-1]
        traces = [{"type": "bar", "orientation": "h", "x": [b["bytes"] for b in bufs],
                   "y": [f"{_ptext(b['label'])} #{n}" for n, b in enumerate(bufs)],
                   "marker": {"color": [b["color"] for b in bufs]},
                   "customdata": [b["role"] for b in bufs],
                   "hovertext": [f"{_ptext(b['size'])} {_ptext(b['shape'])}<br>{_ptext(b['op_name'])}<br>"
                                 f"{_ptext(b['source'])}" for b in bufs],
                   "hoverinfo": "text+x", "name": "buffers", "xaxis": "x", "yaxis": "y"}]
        for label, nbytes in f["in_use"].items():
            traces.append({"type": "bar", "x": ["in use"], "y": [nbytes], "name": _ptext(label), "xaxis": "x2",
                           "yaxis": "y2", "marker": {"color": _KIND_COLORS.get(label, "#999999")}})
        if f["requested"] is not None:
            traces.append({"type": "bar", "x": ["failed request"], "y": [f["requested"]], "name": "failed request",
                           "xaxis": "x2", "yaxis": "y2", "marker": {"color": "crimson"}})
        shapes = []
        if f["capacity"] is not None:
            shapes.append({"type": "line", "xref": "x2 domain", "yref": "y2", "x0": 0, "x1": 1,
                           "y0": f["capacity"], "y1": f["capacity"], "line": {"color": "crimson", "dash": "dash"}})
        # byte axes tick on round binary values, labelled as every figure is printed (hlodump.units)
        xt = U.binary_ticks(max([b["bytes"] for b in bufs] or [1]), 6)
        yt = U.binary_ticks(max(sum(f["in_use"].values()), f["capacity"] or 0, f["requested"] or 0, 1), 6)
        layout = {"barmode": "stack", "height": 120 + 22 * max(len(bufs), 8), "margin": {"l": 260, "t": 20},
                  "xaxis": {"domain": [0, 0.7], "title": "bytes", "tickvals": xt,
                            "ticktext": [U.format_bytes_tick(v) for v in xt]},
                  "xaxis2": {"domain": [0.8, 1], "anchor": "y2"},
                  "yaxis2": {"anchor": "x2", "title": "bytes", "tickvals": yt,
                             "ticktext": [U.format_bytes_tick(v) for v in yt]}, "shapes": shapes, "showlegend": True}
        figures = [[sec, k, v.get("bytes"), v.get("text")] for sec, kv in sorted((r.get("figures") or {}).items())
                   for k, v in kv.items()]
        parts.append(
            f"<section><h2>{e(f['title'])}</h2>"
            + "".join(f"<p class=failed>{e(x)}</p>" for x in f["lines"])
            + (f"<p>printed {f['times_printed']} times in the log</p>" if f["times_printed"] > 1 else "")
            + f"<div id=oom{i} class=chart></div>"
            + f"<script>Plotly.newPlot('oom{i}', {_json_html(traces)}, {_json_html(layout)}, "
              "{displaylogo: false, responsive: true});</script>"
            + "<h3>largest buffers</h3>"
            + _table([[b["label"], U.format_bytes(b["bytes"], "\u2014"), b["size"], b["shape"], b["kind"] or b["allocation_type"],
                       b["role"][:-1], b["op_name"], b["source"], b["line"]] for b in f["buffers"]],
                     ["instruction", "bytes", "as printed", "shape", "kind", "role", "op_name", "source", "line"])
            + "<h3>stated figures</h3>" + _table([[sec, k, U.format_bytes(v, "\u2014"), t] for sec, k, v, t in figures],
                                                 ["section", "figure", "bytes", "as printed"])
            + "</section>")
    doc = (f"<!doctype html><html><head><meta charset=utf-8>"
           f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"><title>{e(title or 'out-of-memory reports')}</title>"
           f"<script>{_plotly_js()}</script><style>body{{font:13px system-ui,sans-serif;margin:20px}}"
           "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 6px;"
           "text-align:left;font-size:12px}.failed{color:crimson;font-weight:600}</style></head><body>"
           f"<h1>{e(title or 'out-of-memory reports')}</h1>{''.join(parts)}</body></html>")
    from .atomic import write_replaced

    write_replaced(out, doc)
    return out
