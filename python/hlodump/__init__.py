"""hlodump — XLA compiler dumps as zero-copy Apache Arrow tables.

>>> import hlodump
>>> d = hlodump.read_arrow("module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt")
>>> d.allocations            # a pyarrow.Table
>>> d.to_duckdb().sql("select sum(size) from allocations")

See ``hlodump.schema`` for every table and column.
"""

from __future__ import annotations

from .bodies import decode_body
from .capture import CaptureError, capture, read_compiled  # imports jax only when called
from .targets import Target, TargetError, target  # imports jax only when called
from .dump import Dump, compact
from .exceptions import HlodumpError, ParseError
from .reader import MAX_THREADS, read_arrow
from .scan import Scan, ScanWarning, scan
from .schema import SCHEMAS, TABLE_NAMES
from . import _moved
from ._version import __version__

_moved.install()  # hlodump.plan, hlodump.stores, hlodump.html_report … importable at their old paths


def mapped_pages_lost() -> int:
    """How many pages of memory-mapped dump files were lost because a file shrank while its
    tables were in use (they read as zeros; 0 normally). Read with ``mmap=False`` to avoid."""
    from ._core import mapped_pages_lost as n

    return n()


def __getattr__(name: str) -> object:
    # hlodump.report (html_report.report): imported on first use, so `import hlodump` does not
    # load the analysis and its page template
    if name == "report":
        from .outputs.html_report import report

        return report
    raise AttributeError(f"module 'hlodump' has no attribute {name!r}")

__all__ = ["read_arrow", "capture", "read_compiled", "CaptureError", "target", "Target", "TargetError", "scan", "Scan", "ScanWarning", "compact", "MAX_THREADS", "decode_body", "mapped_pages_lost", "Dump", "ParseError", "HlodumpError", "SCHEMAS", "TABLE_NAMES", "report", "__version__"]
