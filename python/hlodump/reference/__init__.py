"""The pure-Python reference parser.

Written from docs/FORMATS.md and the table contract in ``hlodump.schema`` — independently of
the Rust core — to cross-check it. It is slow on purpose-simple code: clarity over speed.

``read_arrow(path, tables=None, on_error="raise", string_view=True)`` returns the same
``hlodump.Dump`` as ``hlodump.read_arrow``.
"""

from __future__ import annotations

from .reader import read_arrow

__all__ = ["read_arrow"]
