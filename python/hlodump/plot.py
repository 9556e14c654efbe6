"""Memory-in-use figures: live bytes vs program order, stacked by category, the peak marked.

``plot_png`` draws with matplotlib (Agg backend, no display needed); ``plot_html`` writes one
self-contained HTML file (inline SVG and a few lines of JavaScript, no network): hovering a
step shows its instruction and bytes per category, hovering a peak buffer shows its shape,
op_name and source line.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any, Optional

from . import analysis as A

if TYPE_CHECKING:  # pragma: no cover
    from .dump import Dump

__all__ = ["figure_data", "plot_png", "plot_html"]

COLORS = {"parameter": "#4C72B0", "output": "#55A868", "constant": "#8172B2",
          "thread_local": "#CCB974", "temporary": "#DD8452", "unknown": "#999999"}


def figure_data(dump: "Dump", module: str, top: int = 5) -> dict[str, Any]:
    """Series for one module: steps, instructions, live bytes per category (all colors summed;
    each allocation slice counted once, as ``memory_timeline`` counts), the peak (step, bytes,
    top buffers)."""
    tl = A.memory_timeline(dump, module).to_pylist()
    steps = sorted({r["step"] for r in tl})
    instr = {r["step"]: r["instruction"] for r in tl}
    cats = [c for c in A.CATEGORIES + ("unknown",) if any(r["category"] == c for r in tl)]
    series = {c: [0] * len(steps) for c in cats}
    for r in tl:
        series[r["category"]][r["step"]] += r["bytes"]
    s = A.summary(dump, module, top=top)[0]
    return {"module": s["module"], "steps": steps, "instructions": [instr.get(i) for i in steps],
            "series": series, "peak": s["peak"], "top": s["top_buffers"], "summary": s}


def plot_png(dump: "Dump", module: str, out: str, top: int = 5) -> str:
    try:
        import matplotlib
    except ImportError:  # an optional dependency: say how to get it
        raise SystemExit("hlodump plot: PNG output needs matplotlib: pip install 'hlodump[plot]' "
                         "(or write HTML: -o out.html)") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = figure_data(dump, module, top)
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=100)
    if f["steps"]:
        ax.stackplot(f["steps"], *[f["series"][c] for c in f["series"]], labels=list(f["series"]),
                     colors=[COLORS[c] for c in f["series"]], step="post", alpha=0.9)
        pk = f["peak"]
        if pk:
            ax.axvline(pk["step"], color="crimson", lw=1.5, ls="--")
            lines = [f"XLA's peak list: {A.format_bytes(pk['bytes'])} at step {pk['step']} ({pk['instruction']})"]
            for r in f["top"]:
                lines.append(f"{A.format_bytes(r['bytes'])}  {r['buffer']}" + (f"  {r['source'].rsplit('/', 1)[-1]}" if r["source"] else ""))
            at = sum(f["series"][c][pk["step"]] for c in f["series"]) if pk["step"] < len(f["steps"]) else 0
            ax.annotate("\n".join(lines), xy=(pk["step"], at), xytext=(0.02, 0.97),
                        textcoords="axes fraction", va="top", fontsize=8, family="monospace",
                        bbox=dict(boxstyle="round", fc="white", ec="crimson", alpha=0.9),
                        arrowprops=dict(arrowstyle="->", color="crimson"))
        ax.legend(loc="upper right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no live ranges in this dump", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("schedule step")
    ax.set_ylabel("live bytes (each allocation slice once)")
    ax.set_title(f"{f['module']}: memory in use")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: A.format_bytes(v)))
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_html(dump: "Dump", module: str, out: str, top: int = 10) -> str:
    f = figure_data(dump, module, top)
    W, H, L, R, T, B = 1000, 480, 80, 20, 30, 40
    steps = f["steps"]
    n = max(len(steps), 1)
    totals = [sum(f["series"][c][i] for c in f["series"]) for i in range(len(steps))]
    ymax = max(totals + [1])
    pw, ph = W - L - R, H - T - B

    def x(i: float) -> float:
        return L + pw * i / n

    def y(v: float) -> float:
        return T + ph * (1 - v / ymax)

    parts = []
    base = [0] * len(steps)
    for c, vals in f["series"].items():
        for i, v in enumerate(vals):
            if v:
                parts.append(f'<rect class="bar" x="{x(i):.2f}" y="{y(base[i] + v):.2f}" width="{max(pw / n, 0.5):.2f}" '
                             f'height="{max(ph * v / ymax, 0):.2f}" fill="{COLORS[c]}" data-step="{i}"/>')
            base[i] += v
    for k in range(5):
        v = ymax * k / 4
        parts.append(f'<line x1="{L}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
                     f'<text x="{L - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{A.format_bytes(v)}</text>')
    tick = max(1, n // 10)
    for i in range(0, n, tick):
        parts.append(f'<text x="{x(i) + pw / n / 2:.1f}" y="{T + ph + 14}" text-anchor="middle" font-size="11">{i}</text>')
    pk = f["peak"]
    if pk:
        px = x(pk["step"]) + pw / n / 2
        parts.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{T}" y2="{T + ph}" stroke="crimson" stroke-dasharray="5,3"/>'
                     f'<text x="{px + 4:.1f}" y="{T + 12}" fill="crimson" font-size="12">peak {html.escape(A.format_bytes(pk["bytes"]))} '
                     f'at step {pk["step"]}</text>')
    legend = "".join(f'<span style="display:inline-block;width:12px;height:12px;background:{COLORS[c]}"></span> {c} &nbsp;'
                     for c in f["series"])
    rows = "".join(
        f'<tr class="buf" data-info="{html.escape(json.dumps(r))}"><td>{r["rank"]}</td><td>{html.escape(r["buffer"] or "")}</td>'
        f'<td style="text-align:right">{html.escape(A.format_bytes(r["bytes"]))}</td><td>{html.escape(r["category"] or "")}</td>'
        f'<td>{html.escape(r["source"] or "")}</td></tr>' for r in f["top"])
    data = json.dumps({"steps": steps, "instructions": f["instructions"], "series": f["series"]})
    doc = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(f['module'])} memory</title>
<style>body{{font-family:sans-serif;margin:16px}} #tip{{position:fixed;pointer-events:none;background:#fff;
border:1px solid #888;padding:6px;font:12px monospace;white-space:pre;display:none}}
table{{border-collapse:collapse;font-size:12px}} td,th{{border-bottom:1px solid #eee;padding:2px 8px}}
tr.buf:hover{{background:#fee}}</style></head><body>
<h2>{html.escape(f['module'])}: memory in use</h2>
<div>{legend}</div>
<svg id="chart" width="{W}" height="{H}" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>
{''.join(parts)}
<text x="{L + pw / 2}" y="{H - 8}" text-anchor="middle" font-size="12">schedule step</text>
</svg>
<h3>Largest buffers at the peak</h3>
<table><tr><th>#</th><th>buffer</th><th>bytes</th><th>category</th><th>source</th></tr>{rows}</table>
<div id="tip"></div>
<script>
const D = {data};
const tip = document.getElementById('tip');
function fmt(b) {{ const u=['B','KiB','MiB','GiB','TiB']; let i=0; while (b>=1024 && i<4) {{ b/=1024; i++; }} return (i?b.toFixed(2):b)+u[i]; }}
function show(ev, text) {{ tip.textContent = text; tip.style.display='block'; tip.style.left=(ev.clientX+12)+'px'; tip.style.top=(ev.clientY+12)+'px'; }}
document.querySelectorAll('rect.bar').forEach(r => r.addEventListener('mousemove', ev => {{
  const i = +r.dataset.step; let s = 'step ' + i + ': ' + (D.instructions[i] || '(end)');
  let t = 0; for (const c in D.series) {{ const v = D.series[c][i]; t += v; if (v) s += '\\n  ' + c + ': ' + fmt(v); }}
  show(ev, s + '\\n  total: ' + fmt(t)); }}));
document.querySelectorAll('tr.buf').forEach(r => r.addEventListener('mousemove', ev => {{
  const b = JSON.parse(r.dataset.info);
  show(ev, b.buffer + '  ' + fmt(b.bytes) + '\\nshape: ' + b.shape + '\\nop_name: ' + (b.op_name||'-') + '\\nsource: ' + (b.source||'-')); }}));
document.querySelectorAll('rect.bar, tr.buf').forEach(r => r.addEventListener('mouseleave', () => tip.style.display='none'));
</script></body></html>
"""
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(doc)
    return out
