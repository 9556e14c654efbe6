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

from .. import analysis as A
from .. import units as U
from .html_report import COLORS, MAX_POINTS, report, timeline_series

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["figure_data", "figure", "plot_png", "plot_html", "buffers_figure", "plot_buffers_png", "COLORS"]


def figure_data(dump: "Dump", module: str, top: int = 5, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Series for one module: ``steps`` (the steps drawn; all of them unless the timeline is
    longer than ``max_points``), ``instructions`` (scheduled at each), ``series`` (live bytes
    per category at each drawn step: all memory spaces summed, each allocation slice counted
    once, as ``memory_timeline`` counts), ``n_steps``, ``downsampled``, ``peak`` (XLA's listed
    peak: step, bytes), ``peaks`` (the three peaks by name: ``analysis.peaks``), the ``top``
    buffers at XLA's listed peak, and the module's ``summary``."""
    s = A.summary(dump, module, top=top)[0]
    tl = timeline_series(dump, [s["module"]], max_points).get(s["module"])
    if tl is None:
        tl = {"x": [], "ins": [], "cats": [], "steps": 0, "downsampled": False}
    return {"module": s["module"], "steps": tl["x"], "instructions": tl["ins"],
            "series": {c: v for c, v in tl["cats"]}, "n_steps": tl["steps"], "downsampled": tl["downsampled"],
            "peak": s["peak"], "peaks": A.peaks(s), "top": s["top_buffers"], "summary": s}


def plot_png(dump: "Dump", module: str, out: str, top: int = 5) -> str:
    """Draw the module's memory timeline into ``out`` (PNG, 1100×550) and return ``out``."""
    return _save_png(lambda: figure(dump, module, top), out)


def _save_png(make_figure: Any, out: str) -> str:
    """The figure ``make_figure()`` draws, saved as a PNG into ``out`` (atomically); ``out``."""
    try:
        import matplotlib
    except ImportError:  # an optional dependency: say how to get it
        raise SystemExit("hlodump plot: PNG output needs matplotlib: pip install 'hlodump[plot]' "
                         "(or write HTML: -o out.html)") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .atomic import save_figure

    fig = make_figure()
    try:
        save_figure(fig, out)
    finally:
        plt.close(fig)
    return out


def figure(dump: "Dump", module: str, top: int = 5) -> Any:
    """The matplotlib figure ``plot_png`` saves (1100×550; the caller closes it): live bytes per
    category stacked, the peak in use and XLA's listed peak marked by name, byte ticks on round
    binary values."""
    import matplotlib
    import matplotlib.pyplot as plt

    f = figure_data(dump, module, top)
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=100)
    if f["steps"]:
        ax.stackplot(f["steps"], *[f["series"][c] for c in f["series"]], labels=list(f["series"]),
                     colors=[COLORS.get(c, "#999999") for c in f["series"]], step="post", alpha=0.9)
        pk = f["peak"]
        p = A.peaks(f["summary"])  # each peak under its one name (hlodump.units)
        if p["peak_in_use"] is not None:
            ax.axvline(p["peak_in_use_step"], color="#333333", lw=1.0, ls=":")
        if pk:
            ax.axvline(pk["step"], color="crimson", lw=1.5, ls="--")
            lines = []
            if p["peak_in_use"] is not None:
                lines.append(f"{U.PEAK_IN_USE}: {U.format_bytes(p['peak_in_use'])} at step {p['peak_in_use_step']}")
            lines.append(f"{U.XLA_LISTED_PEAK}: {U.format_bytes(pk['bytes'])} at step {pk['step']} ({pk['instruction']})")
            if p["xla_listed_peak_above_allocated"]:
                import textwrap

                lines.extend(textwrap.wrap(f"(more than the {U.format_bytes(p['total_bytes'])} allocated: "
                                           f"{U.XLA_PEAK_ABOVE_ALLOCATED})", 90))
            for r in f["top"]:
                lines.append(f"{U.format_bytes(r['bytes'])}  {r['buffer']}" + (f"  {r['source'].rsplit('/', 1)[-1]}" if r["source"] else ""))
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
    # ticks on round binary values (0, 256MiB, 512MiB…, never 95.37MiB), as the page's axis
    if f["steps"]:
        top = max(sum(v[i] for v in f["series"].values()) for i in range(len(f["steps"])))
        ax.yaxis.set_major_locator(matplotlib.ticker.MultipleLocator(U.binary_step(top)))
        ax.set_ylim(0, max(top, 1) * 1.08)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: U.format_bytes_tick(v)))
    fig.tight_layout()
    return fig


def plot_html(dump: "Dump", module: str, out: str, top: int = 10) -> str:
    """The report page of this one module (its chart opened) into ``out``; returns ``out``."""
    key = A.summary(dump, module, top=0)[0]["module"]
    return report(dump, out, modules=[key], top=top, title=f"{key}: memory in use")


def buffers_figure(dump: "Dump", module: str, top: int = 400) -> Any:
    """The memory viewer as a matplotlib figure (the caller closes it): per memory space, the
    ``top`` largest buffers (``analysis.buffer_spans``; the rest folded, said so in the title) as
    bars from their first to their last live step at their address, coloured by category, the
    peak in use of the space marked."""
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    key = A.summary(dump, module, top=0)[0]["module"]
    t = A.buffer_spans(dump, key)
    rows = t.to_pylist()
    tl = A.memory_timeline(dump, key).to_pylist()
    peak: dict[int, tuple[int, int]] = {}
    per: dict[tuple[int, int], int] = {}
    for r in tl:
        per[(r["color"], r["step"])] = per.get((r["color"], r["step"]), 0) + int(r["bytes"])
    for (c, s), b in sorted(per.items()):
        if c not in peak or b > peak[c][1]:
            peak[c] = (s, b)
    colors = sorted({r["color"] for r in rows}, key=lambda c: (c != 0, c))
    fig, axes = plt.subplots(max(len(colors), 1), 1, figsize=(11, 3.2 * max(len(colors), 1) + 0.6), dpi=100,
                             squeeze=False)
    if not rows:
        axes[0][0].text(0.5, 0.5, "no live ranges in this dump: no buffer spans", ha="center", va="center",
                        transform=axes[0][0].transAxes)
    for ax, c in zip((a[0] for a in axes), colors):
        bufs = sorted((r for r in rows if r["color"] == c), key=lambda r: (-r["size"], r["first_step"]))
        drawn, folded = bufs[:top], bufs[top:]
        for r in drawn:
            ax.broken_barh([(r["first_step"], r["last_step"] - r["first_step"] + 1)], (r["address"], r["size"]),
                           facecolors=COLORS.get(r["category"], "#999999"), edgecolors="#00000055", linewidth=0.4)
        space = bufs[0]["memory_space"] if bufs else f"color {c}"
        head = f"{key}: {space}, {len(bufs):,} buffers"
        if folded:
            head += (f"; the {len(drawn)} largest drawn, {len(folded):,} smaller not drawn "
                     f"({U.format_bytes(sum(r['size'] for r in folded))})")
        if c in peak:
            s, b = peak[c]
            ax.axvline(s + 0.5, color="#333333", lw=1.2, ls=":")
            head += f"; peak in use {U.format_bytes(b)} at step {s}"
        ax.set_title(head, fontsize=9, loc="left")
        top_addr = max((r["address"] + r["size"] for r in bufs), default=1)
        ax.set_ylim(0, max(top_addr, 1) * 1.02)
        ax.set_xlim(0, max((r["last_step"] for r in bufs), default=0) + 1)
        ax.yaxis.set_major_locator(matplotlib.ticker.MultipleLocator(U.binary_step(max(top_addr, 1))))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: U.format_bytes_tick(v)))
        ax.set_ylabel(f"address in {space}", fontsize=8)
        cats = [k for k in COLORS if any(r["category"] == k for r in drawn)]
        ax.legend(handles=[Patch(color=COLORS[k], label=k) for k in cats], loc="upper right", fontsize=7)
    axes[-1][0].set_xlabel("schedule step (a bar: first to last live step)")
    fig.tight_layout()
    return fig


def plot_buffers_png(dump: "Dump", module: str, out: str, top: int = 400) -> str:
    """``buffers_figure`` saved as a PNG into ``out``; returns ``out``."""
    return _save_png(lambda: buffers_figure(dump, module, top), out)
