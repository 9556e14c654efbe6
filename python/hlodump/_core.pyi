"""The native core (Rust, PyO3). Private: use ``hlodump.read_arrow`` and friends."""

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, Literal, Mapping, Optional, Protocol, Union, final

import pyarrow as pa

__all__ = ["read", "scan", "BatchStream", "classify_name", "sniff", "mapped_pages_lost", "decode_body", "attribute_value", "compact",
           "known_opcode", "rearm_sigbus", "table_schemas", "_set_max_line_len", "_set_max_lines", "_formats", "MAX_THREADS", "__version__"]

__version__: str

#: Most worker threads a read accepts (``threads=``).
MAX_THREADS: int

class _InputRecord(Protocol):
    """What ``read``/``scan`` read of an input (``hlodump.io.plan.Input``)."""

    @property
    def path(self) -> Union[str, PathLike[str]]: ...
    @property
    def shown(self) -> str: ...
    @property
    def explicit(self) -> bool: ...
    @property
    def error(self) -> Optional[str]: ...
    @property
    def dump(self) -> str: ...

#: An input: a record, or a bare ``(path, shown, explicit, error)`` tuple (dump: ``dumps=`` or
#: its shown path).
_InputLike = Union[_InputRecord, tuple[Union[str, PathLike[str]], str, bool, Optional[str]]]

def read(
    inputs: Sequence[_InputLike],
    *,
    tables: Optional[Sequence[str]] = None,
    on_error: Literal["raise", "collect"] = "raise",
    threads: int = 0,
    mmap: Optional[bool] = None,
    progress: Optional[Callable[[int, int], object]] = None,
    dumps: Optional[Sequence[str]] = None,
    columns: Optional[Mapping[str, Sequence[str]]] = None,
    buffers: Optional[Sequence[Optional[pa.Array]]] = None,
    strict: bool = False,
) -> dict[str, pa.Table]:
    """Parse ``inputs`` into a dict of table name → pyarrow.Table.
    ``dumps``: ``files.dump`` of each input (default: the record's ``dump``, a tuple's shown
    path). ``buffers``: per input,
    its bytes already in memory as a ``uint8`` array (read instead of ``path``; the tables'
    views point into it, no copy), or None.

    With ``tables``, only files whose format can produce one of them are parsed (``files`` and
    ``errors`` always come back; naming ``errors`` parses every format)."""

def classify_name(basename: str) -> dict[str, Optional[Union[str, int]]]:
    """The ``files`` columns that come from a dump file name, or from a path: a file in a
    per-module folder (``module_0024.jit_f/module.mlir``) whose own name has no module takes
    module_id/module_name from the nearest such folder."""

def sniff(data: bytes) -> str:
    """The content kind of a file's bytes (first non-empty line)."""

def decode_body(backend_config: Optional[str]) -> Optional[bytes]:
    """The decoded custom-call body of a ``backend_config`` (None when it is not base64)."""

def attribute_value(attributes: str, key: str) -> Optional[str]:
    """The value of ``key=`` in an instruction's attribute text (one pair of enclosing braces
    taken off), split as the core's HLO parser splits it; None when absent; ``ValueError`` for a
    text only the general grammar reads."""

def table_schemas() -> list[tuple[str, pa.Schema, str]]:
    """Every table as ``(name, schema, doc line)``, in canonical order: the core's definition
    (``src/tables.rs``), which ``hlodump.schema`` is built from."""

def compact(table: pa.Table) -> pa.Table:
    """``table`` with every ``string_view`` column (also in lists and structs) holding only the
    bytes its rows reference, where its buffers hold at least twice that (plus 4 KiB)."""

def rearm_sigbus() -> None:
    """Put the SIGBUS guard back in front of handlers installed after it."""

def known_opcode(op: str) -> bool:
    """Whether XLA's HLO parser knows the opcode ``op`` (the list of ``hlo/rules.rs``; an
    unknown one is a note when read, and the cost analysis leaves it out of its totals)."""

def mapped_pages_lost() -> int:
    """Pages of mapped files that shrank while in use and now read as zeros."""

def _set_max_line_len(n: int) -> int:
    """Lower the longest line a read accepts (default and most: 2**31 - 1 bytes, Arrow's
    largest text value); returns the previous limit. Process-wide; for tests."""

def _set_max_lines(n: int) -> int:
    """Lower the most lines a file may have (default and most: 2**31 - 1, what an int32 ``line``
    column numbers); returns the previous limit. Process-wide; for tests."""

def _formats() -> list[dict[str, Any]]:
    """The core's format registry as data (name, contents, tables, prefixes, second_line, line,
    markers per format; last the rules of kinds no format parses, name ""). For the test that
    holds the reference's registry equal to it."""


@final
class BatchStream:
    """A streaming read of one table: an iterator of ``pyarrow.RecordBatch`` (``scan``)."""

    @property
    def schema(self) -> pa.Schema: ...
    def __iter__(self) -> "BatchStream": ...
    def __next__(self) -> pa.RecordBatch: ...
    def errors(self) -> pa.Table:
        """The ``errors`` rows met so far (``on_error="collect"``)."""
    def close(self) -> None:
        """Stop reading (the workers stop at their next check)."""

def scan(
    inputs: Sequence[_InputLike],
    table: str,
    *,
    columns: Optional[Sequence[str]] = None,
    batch_size: int = 65536,
    on_error: Literal["raise", "collect"] = "raise",
    threads: int = 0,
    mmap: Optional[bool] = None,
    dumps: Optional[Sequence[str]] = None,
    buffers: Optional[Sequence[Optional[pa.Array]]] = None,
    strict: bool = False,
) -> BatchStream:
    """Stream ``table`` of ``inputs`` (as ``read``, ``buffers`` too) in batches of about
    ``batch_size`` rows."""
