"""A small progress bar for directory scans: files and bytes done, rate and ETA, on stderr.

Shown only when stderr is a terminal (or when forced), so logs and pipes stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    def __init__(self, files: int, total_bytes: int, force: bool = False, stream: Optional[TextIO] = None,
                 label: str = "") -> None:
        self.label = label + " " if label else ""
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.files, self.total = files, max(total_bytes, 1)
        self.done_files = self.done_bytes = 0
        self.start = time.monotonic()
        self._last = 0.0

    def update(self, files: int, nbytes: int) -> None:
        self.done_files += files
        self.done_bytes += nbytes
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done_files >= self.files:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        frac = min(self.done_bytes / self.total, 1.0)
        rate = self.done_bytes / elapsed / 1e6
        eta = (elapsed / frac - elapsed) if frac > 0 else 0.0
        width = 30
        filled = int(frac * width)
        bar = "█" * filled + "·" * (width - filled)
        self.stream.write(
            f"\rhlodump {self.label}{bar} {self.done_files}/{self.files} files "
            f"{self.done_bytes / 1e6:,.1f}/{self.total / 1e6:,.1f} MB {rate:,.0f} MB/s ETA {eta:,.0f}s"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
