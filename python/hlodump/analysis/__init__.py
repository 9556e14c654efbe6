"""Memory analysis over a ``Dump``: what is live at the peak, where it came from, and what changed.

Every function takes a ``Dump`` (from ``hlodump.read_arrow`` or ``hlodump.reference.read_arrow``)
and returns a ``pyarrow.Table`` (hand it to Polars with ``polars.from_arrow``). A dump may hold
many modules (a dump directory): every result carries a ``module`` key (and ``module_name``);
``module=`` selects modules by key (``module_0000.jit_rnn``), by name (``jit_rnn``) or by id
(``0`` / ``"0"``).

Module grouping
---------------
Files are grouped into modules by ``files.module_id``/``files.module_name`` (the
``module_NNNN.<name>`` prefix of XLA's file names), so the four split buffer-assignment files of
a jax 0.10.2 dump (allocations, used values, live range, memory report) and the
after-optimizations HLO text join into one module. A file without that prefix (the TPU seeds, a
single copied file) is a module of its own, keyed by its file name without ``.txt``.

Sizes
-----
* *allocated* bytes: what buffer assignment gives a value (``assignments.size``, tiling and
  padding included; on TPU an ``f32[]`` takes 512 bytes).
* *logical* bytes: ``ShapeUtil::ByteSizeOf(shape, 8)`` recomputed from the shape text: element
  size × element count (sub-byte types take a byte unless the layout says ``E(bits)``), 8 bytes
  per element of a tuple's index table, 0 for ``token[]``. This is what XLA prints in the
  ``Live ranges at T (peak)`` list, so the peak figures here are logical bytes.

Categories (one per allocation, from its flags, first match wins): ``parameter``
(``parameter N``), ``output`` (``maybe-live-out`` / ``output shape is``), ``constant``,
``thread_local``, ``temporary`` (everything else: preallocated temps and plain temporaries).
Each allocation has exactly one category, so category sums equal the total.

The peak
--------
``listed_peak_buffers`` is the dump's own ``Live ranges at T (peak)`` list (``peak_buffers``: the buffers
at the peak in use of a memory space, or at any step), joined to buffer assignment
and to the source. XLA picks the moment T with whole-instruction shape sizes (a tuple-shaped
fusion counts 8 bytes per element there, not the elements' sizes), so T need not be the moment
with the most live bytes; ``memory_timeline`` shows every step and ``summary`` reports both.
Live ranges are inclusive: a value with ``start-end`` is live at steps start … end.

Layout
------
One module per question, all on one engine (``engine``: a DuckDB connection per ``Dump``,
derived tables computed once per module selection, every analysis one query over all selected
modules grouped by module key — a dump of 10,000 modules answers as fast as it reads):
``modules`` (grouping, ``module=``), ``shapes`` (logical bytes), ``buffers`` (allocations,
values, padding, jax's ``memory_analysis``), ``timeline``, ``peak``, ``peak_check``,
``summary``, ``diff``.
"""

from __future__ import annotations

from .buffers import CATEGORIES, HOST_MEMORY_SPACE, MEMORY_ANALYSIS_FIELDS, allocations, buffers, memory_analysis, padding
from .diff import diff
from .engine import SizeOverflow
from .engine import engine as engine_of
from .modules import ModuleSel, NoSuchModule, match_modules, modules
# not public; the command line, the report and tests take them as A._module_list, A._select
from .modules import module_list as _module_list  # noqa: F401
from .modules import select as _select  # noqa: F401
from .peak import breakdown, listed_peak_buffers, peak_buffers
from .shapes import format_bytes, logical_bytes
from .summary import framework, peak_bytes, peak_check, peak_story, peaks, summary
from .timeline import memory_timeline

__all__ = [
    "CATEGORIES",
    "NoSuchModule",
    "load",
    "match_modules",
    "memory_analysis",
    "peak_check",
    "modules",
    "allocations",
    "buffers",
    "peak_buffers",
    "listed_peak_buffers",
    "memory_timeline",
    "breakdown",
    "padding",
    "summary",
    "diff",
    "logical_bytes",
    "format_bytes",
    "engine_of",
    "SizeOverflow",
    "HOST_MEMORY_SPACE",
    "MEMORY_ANALYSIS_FIELDS",
    "ModuleSel",
    "peaks",
    "peak_bytes",
    "peak_story",
    "framework",
]


def load(path, reader=None):  # type: ignore[no-untyped-def]
    """Read ``path`` for memory analysis with ``reader`` (default ``hlodump.read_arrow``)."""
    if reader is None:
        from ..reader import read_arrow as reader
    return reader(path)

# cost and communication (issue 24): their own modules
from . import devices  # noqa: E402
from .comms import collectives  # noqa: E402
from .cost import cost_analysis, costs  # noqa: E402
from .roofline_model import cost_breakdown, roofline  # noqa: E402

__all__ += ["costs", "cost_analysis", "collectives", "roofline", "cost_breakdown", "devices"]

# out-of-memory reports pasted from logs (issue 29)
from .oom import oom_summary  # noqa: E402
from .capacity import device_capacity  # noqa: E402
from .explain import explain  # noqa: E402

__all__ += ["oom_summary", "explain", "device_capacity"]

# pass history of per-pass dumps (issue 25)
from .passes import history, passes  # noqa: E402

__all__ += ["passes", "history"]

from .tuples import tuple_elements  # noqa: E402

__all__ += ["tuple_elements"]

# GPU thunks joined to their HLO instructions (issue 47)
from .thunks import thunk_instructions  # noqa: E402

__all__ += ["thunk_instructions"]

# will it fit? (issue 48)
from .fit import fit  # noqa: E402

__all__ += ["fit"]

# the memory viewer and the graph view (issue 51)
from .spans import buffer_spans  # noqa: E402
from .graph import neighbourhood  # noqa: E402

__all__ += ["buffer_spans", "neighbourhood"]

# what to do about the peak (issue 51)
from .advice import advice  # noqa: E402

__all__ += ["advice"]
