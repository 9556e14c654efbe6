"""hlodump — XLA compiler dumps as zero-copy Apache Arrow tables.

>>> import hlodump
>>> d = hlodump.read_arrow("module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt")
>>> d.allocations            # a pyarrow.Table
>>> d.to_duckdb().sql("select sum(size) from allocations")

See ``hlodump.schema`` for every table and column.
"""

from __future__ import annotations

from .bodies import decode_body
from .dump import Dump
from .exceptions import HlodumpError, ParseError
from .reader import read_arrow
from .schema import SCHEMAS, TABLE_NAMES

__version__ = "0.1.0"

__all__ = ["read_arrow", "decode_body", "Dump", "ParseError", "HlodumpError", "SCHEMAS", "TABLE_NAMES", "__version__"]
