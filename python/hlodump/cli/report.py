"""``hlodump report``: one self-contained HTML page of a whole dump.

    hlodump report PATH… -o report.html [--compare OTHER…] [--module M] [--top N] [--title T] [--device D]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Optional

from .common import UsageError, add_common, nothing_why, read, select_module

__all__ = ["register"]

# the stages html_report announces, for the progress line
_STAGES = ("summary", "timeline", "buffers", "costs, collectives, passes")


def _stage_bar(args: argparse.Namespace) -> tuple[Optional[Any], Callable[[str], None]]:
    """A tqdm line on stderr naming the analysis running (a terminal only; a report of 2,000
    modules spends most of its time there, after the read's own progress line)."""
    if not sys.stderr.isatty():
        return None, lambda _s: None
    from tqdm import tqdm

    from ..io.progress import _width

    n = len(_STAGES) * (2 if args.compare else 1) + (1 if args.compare else 0)
    bar = tqdm(total=n, file=sys.stderr, bar_format="{desc} ({n}/{total}, {elapsed})", leave=False,
               mininterval=0, ncols=_width(sys.stderr), nrows=1000, delay=1e-6)

    def say(stage: str) -> None:  # the stage starting now
        bar.set_description_str(f"hlodump report: {stage}", refresh=False)
        bar.update(1)

    return bar, say


def _need_plotly() -> None:
    try:
        import plotly  # noqa: F401
    except ImportError:
        raise UsageError("hlodump report needs plotly (its JavaScript is inlined into the page): "
                         "pip install 'hlodump[report]'") from None


def _cmd_report(args: argparse.Namespace) -> int:
    from .. import analysis as A
    from ..outputs import html_report

    if not args.output.lower().endswith((".html", ".htm")):
        raise UsageError("-o must end in .html")
    d = read(args.paths, args)
    other = read(args.compare, args) if args.compare else None
    keys = None
    if args.module is not None:
        keys = [m.key for m in select_module(A._module_list(d), args.module)]
    from .memory import _only_oom_reports

    if _only_oom_reports(d):
        from ..outputs import oom_plot  # a pasted log: its out-of-memory reports

        _need_plotly()
        print(oom_plot.oom_html(d, args.output, top=max(args.top, 20), title=args.title))
        return 0
    if not A._module_list(d):
        raise UsageError("nothing to report: no module with HLO text, buffer assignment, live ranges or a "
                         f"memory-usage report in {' '.join(map(str, args.paths))}" + nothing_why(d))
    _need_plotly()
    device = None
    if args.device is not None:
        from ..analysis import devices as V

        try:
            device = V.device(args.device)
        except ValueError as e:
            raise UsageError(str(e)) from None
    bar, say = _stage_bar(args)
    try:
        out = html_report.report(d, args.output, compare=other, modules=keys, title=args.title, top=args.top,
                                 progress=say, device=device)
    finally:
        if bar is not None:
            bar.close()
    sys.stdout.write(out + "\n")
    return 0


def register(sub: Any) -> None:
    """Add ``report`` to the ``hlodump`` sub-command parser."""
    sp = sub.add_parser("report", help="one self-contained HTML page of a dump: every module, its memory timeline, "
                                       "peak buffers, costs and collectives (offline, no server)")
    add_common(sp, json=False)
    sp.add_argument("-o", "--output", required=True, help="the page to write (report.html)")
    sp.add_argument("--compare", nargs="+", metavar="OTHER", help="a later compile: paired modules side by side "
                                                                   "with what changed (as `hlodump diff`)")
    sp.add_argument("--top", type=int, default=20, help="buffers at the peak listed per module (default 20)")
    sp.add_argument("--title", default=None, help="the page title (default: hlodump report)")
    from ..analysis.devices import DEVICES

    sp.add_argument("--device", default=None, help="the roofline's device: " + ", ".join(DEVICES) + " (default: the "
                                                   "device the dump names; none: no roofline, the page says why)")
    sp.set_defaults(func=_cmd_report)
