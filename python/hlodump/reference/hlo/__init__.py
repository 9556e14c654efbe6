"""Reference parser for HLO module text (docs/FORMATS.md §3, §4, §6).

Entry points:

* ``parse_module(lines, ctx, data=None)`` — one HLO module file into the ``modules``,
  ``computations``, ``instructions``, ``stack_frames`` and ``custom_calls`` tables.
* ``parse_instruction(text)`` — one instruction line into a dict (also used for the
  ``from instruction:`` text of buffer-assignment files). ``parse_module`` uses it for every
  instruction line: there is exactly one instruction parser.
* ``split_attributes(text)`` — the generic attribute rule of §3.8.1.
* ``decode_body(backend_config)`` / ``custom_call_info(...)`` — custom-call body analysis.

The code is deliberately plain: a small bracket/string/comment-aware scanner (``scan``) is the
only piece of cleverness, and it jumps with regular expressions so that multi-MB lines (base64
kernel bodies, huge literals) stay fast.

One module a file of ``src/hlo/`` (the core's chunk splitter, ``split.rs``, has none: the
reference parses every file whole): ``scan``, ``attributes``, ``instruction``, ``custom_call``,
``general``, ``stack_frames``, ``module``.
"""

from __future__ import annotations

from .attributes import parse_metadata, split_attributes
from .custom_call import custom_call_info, decode_body
from .instruction import parse_instruction
from .module import parse_module
from .scan import c_unescape

__all__ = [
    "parse_module",
    "parse_instruction",
    "split_attributes",
    "parse_metadata",
    "c_unescape",
    "decode_body",
    "custom_call_info",
]
