"""Memory-in-use figures of one module: live bytes vs program order, stacked by category, the
peak marked — the chart of ``hlodump report``, for ``hlodump plot``.

``plot_html`` writes the report page restricted to that module (plotly.js inlined, no
network): hovering a step shows its instruction, bytes per category and the largest buffers
live there; the buffers at the peak and the rest of the module's tables follow. ``plot_png``
draws the same series (the same downsampling: the peak kept) with matplotlib (Agg backend, no
display needed): plotly's own static export (kaleido) drives a Chrome of its own, which a
command that should work on a headless server without a browser cannot count on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import analysis as A
from .html_report import COLORS, MAX_POINTS, report, timeline_series

if TYPE_CHECKING:  # pragma: no cover
    from .dump import Dump

__all__ = ["figure_data", "plot_png", "plot_html", "COLORS"]


def figure_data(dump: "Dump", module: str, top: int = 5, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Series for one module: ``steps`` (the steps drawn; all of them unless the timeline is
    longer than ``max_points``), ``instructions`` (scheduled at each), ``series`` (live bytes
    per category at each drawn step: all memory spaces summed, each allocation slice counted
    once, as ``memory_timeline`` counts), ``n_steps``, ``downsampled``, the peak (step, bytes)
    as XLA lists it, the ``top`` buffers at the peak, and the module's ``summary``."""
    s = A.summary(dump, module, top=top)[0]
    tl = timeline_series(dump, [s["module"]], max_points).get(s["module"])
    if tl is None:
        tl = {"x": [], "ins": [], "cats": [], "steps": 0, "downsampled": False}
    return {"module": s["module"], "steps": tl["x"], "instructions": tl["ins"],
            "series": {c: v for c, v in tl["cats"]}, "n_steps": tl["steps"], "downsampled": tl["downsampled"],
            "peak": s["peak"], "top": s["top_buffers"], "summary": s}


def plot_png(dump: "Dump", module: str, out: str, top: int = 5) -> str:
    """Draw the module's memory timeline into ``out`` (PNG, 1100×550) and return ``out``."""
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
                     colors=[COLORS.get(c, "#999999") for c in f["series"]], step="post", alpha=0.9)
        pk = f["peak"]
        if pk:
            ax.axvline(pk["step"], color="crimson", lw=1.5, ls="--")
            lines = [f"XLA's peak list: {A.format_bytes(pk['bytes'])} at step {pk['step']} ({pk['instruction']})"]
            for r in f["top"]:
                lines.append(f"{A.format_bytes(r['bytes'])}  {r['buffer']}" + (f"  {r['source'].rsplit('/', 1)[-1]}" if r["source"] else ""))
            at = 0
            if pk["step"] in f["steps"]:
                i = f["steps"].index(pk["step"])
                at = sum(v[i] for v in f["series"].values())
            ax.annotate("\n".join(lines), xy=(pk["step"], at), xytext=(0.02, 0.97),
                        textcoords="axes fraction", va="top", fontsize=8, family="monospace",
                        bbox=dict(boxstyle="round", fc="white", ec="crimson", alpha=0.9),
                        arrowprops=dict(arrowstyle="->", color="crimson"))
        ax.legend(loc="upper right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no live ranges in this dump", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("schedule step" + (f" ({f['n_steps']:,} steps; each bucket's highest and lowest drawn)"
                                     if f["downsampled"] else ""))
    ax.set_ylabel("live bytes (each allocation slice once)")
    ax.set_title(f"{f['module']}: memory in use")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: A.format_bytes(v)))
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_html(dump: "Dump", module: str, out: str, top: int = 10) -> str:
    """The report page of this one module (its chart opened) into ``out``; returns ``out``."""
    key = A.summary(dump, module, top=0)[0]["module"]
    return report(dump, out, modules=[key], top=top, title=f"{key}: memory in use")
