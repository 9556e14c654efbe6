"""The progress bar of directory scans and object-store fetches: files and bytes done, rate and
ETA, on stderr, drawn by tqdm.

Shown only when stderr is a terminal (or when forced), so logs and pipes stay clean.

Why tqdm and not rich (which the CLI already uses for tables): tqdm redraws one plain line with
``\\r`` and ends it with a newline, so a terminal log, ``script`` output or a CI console holds
readable text; rich's live display hides the cursor and moves it with escape sequences. tqdm also
brings the rate smoothing, redraw throttling and ETA we used to hand-write, in one small
pure-Python package.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, TextIO

__all__ = ["ProgressBar"]

# One line (bytes in IEC units, as every figure of hlodump: hlodump.units):
#   hlodump [label ]██████········ 12/40 files 3.1/9.9 MiB 120 MiB/s ETA 0s
_FORMAT = ("hlodump {desc}{bar:30} {files_done}/{files} files {mib_done:,.1f}/{mib_total:,.1f} MiB "
           "{mib_per_s:,.0f} MiB/s ETA {eta:,.0f}s")
_MIB = float(1 << 20)


def _tqdm_class() -> Any:
    from tqdm import tqdm

    class _FilesAndBytes(tqdm):  # type: ignore[misc,valid-type]
        """tqdm counting bytes, with a file counter beside it in the line."""

        monitor_interval = 0  # no monitor thread: a bar lives for one read

        files_done = 0
        files_total = 0

        @property
        def format_dict(self) -> dict[str, Any]:
            d = super().format_dict
            rate = d["rate"] if d["rate"] else (d["n"] / d["elapsed"] if d["elapsed"] else 0.0)
            left = max(d["total"] - d["n"], 0)
            d.update(files_done=self.files_done, files=self.files_total, mib_done=d["n"] / _MIB,
                     mib_total=d["total"] / _MIB, mib_per_s=rate / _MIB,
                     eta=(left / rate) if rate else 0.0)
            return d

    return _FilesAndBytes


def _width(stream: Any) -> int:
    """The terminal's width, so the line is cut rather than wrapped; unknown (a pipe, a
    pseudo-terminal without a size): no limit. tqdm's own guesses there (0 columns, -1 rows)
    would drop the line."""
    import os

    try:
        return os.get_terminal_size(stream.fileno()).columns or 10**6
    except (AttributeError, OSError, ValueError):
        return 10**6


class ProgressBar:
    """``update(files, nbytes)`` after each file; ``close()`` at the end. Disabled (draws
    nothing) unless ``stream`` (default stderr) is a terminal or ``force``."""

    def __init__(self, files: int, total_bytes: int, force: bool = False, stream: Optional[TextIO] = None,
                 label: str = "") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.files, self.total = files, max(total_bytes, 1)
        self.done_files = self.done_bytes = 0
        self._bar: Any = None
        if self.enabled:
            cls = _tqdm_class()
            # delay: nothing drawn before the first update (an empty bar at 0 says nothing);
            # "·█": tqdm's bar with these two characters, as the line always looked.
            self._bar = cls(total=self.total, file=self.stream, desc=label + " " if label else "",
                            bar_format=_FORMAT, ascii="·█", mininterval=0.1, leave=True, delay=1e-6,
                            ncols=_width(self.stream), nrows=1000, dynamic_ncols=False, disable=False)
            self._bar.files_total = files

    def update(self, files: int, nbytes: int) -> None:
        first = self.done_files == 0 and self.done_bytes == 0
        self.done_files += files
        self.done_bytes += nbytes
        if self._bar is None:
            return
        self._bar.files_done = self.done_files
        self._bar.update(nbytes)
        # tqdm throttles to one redraw per 0.1 s; the first file and the last always show.
        if first or self.done_files >= self.files:
            self._draw()

    def _draw(self) -> None:
        self._bar.refresh()
        # as tqdm's own update does after drawing (close() leaves a line only if one was drawn)
        self._bar.last_print_n, self._bar.last_print_t = self._bar.n, self._bar._time()

    def close(self) -> None:
        if self._bar is not None:
            self._draw()
            self._bar.close()
            self._bar = None
