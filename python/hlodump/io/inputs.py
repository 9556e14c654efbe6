"""What one read reads: one ``Input`` record per file in reading order (a ``Plan``), where
each one's bytes come from (a local path, an object to fetch: ``Remote``, or the caller's
buffer), and how far compressed inputs may expand (``Bound``). Plain data, below everything else
of the read path: ``paths`` and ``stores`` fill a plan, ``archives`` opens its tars and
compressed files, ``plan`` decides and loads it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional, Union

from .paths import MAX_FILES

if TYPE_CHECKING:  # pragma: no cover
    from ..exceptions import DecompressionLimitError

__all__ = ["Bound", "Input", "Origin", "Plan", "Remote", "as_uint8", "MAX_DECOMPRESSED_BYTES",
           "MAX_DECOMPRESSED_RATIO", "RATIO_FLOOR"]


@dataclass
class Remote:
    """An object to fetch before reading: its store, key and listed size."""

    backend: Any  # a stores.Backend (not imported: stores is above inputs)
    key: str
    size: int


#: Where an input's bytes come from: a local path (None), an object to fetch, or the caller's
#: buffer (any bytes-like object).
Origin = Union[None, Remote, Any]


@dataclass(frozen=True)
class Input:
    """One file of a read, as the core takes it (``_core.read`` reads these attributes)."""

    #: Where to open it (a local path; for a remote object its URL, for a buffer "").
    path: str
    #: ``files.path`` and the path errors name.
    shown: str
    #: Named by the caller (not found by a walk): a failure to open it raises instead of
    #: becoming a ``files.error`` row.
    explicit: bool
    #: Not to be read: the ``files.error`` text to show instead (None: read it).
    error: Optional[str] = None
    #: ``files.dump``: the dump the file belongs to (``hlodump.io.paths.expand_with_dumps``).
    dump: str = ""
    #: Where its bytes come from (``Origin``); not seen by the core (``Plan.load`` fetches).
    origin: Origin = field(default=None, compare=False, repr=False)

    def failed(self, error: str) -> "Input":
        """The same input, not to be read: ``error`` is its ``files.error``."""
        return replace(self, error=error)


@dataclass
class Plan:
    """The inputs of a read, in reading order."""

    inputs: list[Input] = field(default_factory=list)
    #: The most entries a walk, listing or archive may give (``read_arrow(max_files=)``).
    max_files: int = MAX_FILES
    #: How far compressed inputs may expand (``read_arrow(max_decompressed_ratio=…, …)``).
    bound: "Bound" = field(default_factory=lambda: Bound())

    def add(self, inp: tuple[str, str, bool, Optional[str]], dump: str, origin: Origin = None) -> None:
        """Add a walked entry (``hlodump.io.paths.Input``: path, shown, explicit, error)."""
        path, shown, explicit, error = inp
        self.inputs.append(Input(path, shown, explicit, error, dump, origin))

    @property
    def dumps(self) -> list[str]:
        """``files.dump`` of every input."""
        return [i.dump for i in self.inputs]

    def sizes(self) -> list[int]:
        """Bytes of each input (listed size, buffer length, file size; 0 when unknown)."""
        

        out = []
        for i in self.inputs:
            o = i.origin
            if i.error is not None:
                out.append(0)
            elif isinstance(o, Remote):
                out.append(o.size)
            elif o is not None:
                out.append(len(o) if isinstance(o, (bytes, bytearray)) else as_uint8(o, "").nbytes)
            else:
                try:
                    out.append(os.stat(i.path).st_size)
                except OSError:
                    out.append(0)
        return out

    def subset(self, idx: Sequence[int]) -> "Plan":
        """The inputs at ``idx`` (a read task's share)."""
        return Plan([self.inputs[i] for i in idx], self.max_files, self.bound)


#: Default bounds of decompression (``read_arrow(max_decompressed_ratio=…,
#: max_decompressed_bytes=…)``; ``--max-decompressed-ratio``, ``--max-decompressed``): a
#: compressed file (or a tar archive's stream) may expand to ``ratio`` times its compressed size
#: (never less than ``RATIO_FLOOR``), and never to more than ``MAX_DECOMPRESSED_BYTES``.
#: XLA's text compresses 5–20× (gzip, xz, bz2 on the bundled corpus: at most 21×).
MAX_DECOMPRESSED_RATIO = 100.0
MAX_DECOMPRESSED_BYTES = 4 << 30
RATIO_FLOOR = 8 << 20


@dataclass
class Bound:
    """How far the compressed inputs of one read may expand (see ``MAX_DECOMPRESSED_RATIO``):
    each file to ``ratio`` × its compressed size (never less than ``floor``), all of them
    together to ``total`` bytes (``used`` counts what was decompressed so far)."""

    ratio: float = MAX_DECOMPRESSED_RATIO
    total: int = MAX_DECOMPRESSED_BYTES
    #: The ratio bound never refuses less than this (tests lower it).
    floor: int = RATIO_FLOOR
    used: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        for name, v in (("max_decompressed_ratio", self.ratio), ("max_decompressed_bytes", self.total)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"{name} must be a positive number (got {v!r})")

    def _per_file(self, compressed: int) -> int:
        return int(min(self.total, max(self.ratio * compressed, min(self.floor, self.total))))

    def limit(self, compressed: int) -> int:
        """The most bytes an input of ``compressed`` bytes may expand to now."""
        return max(0, min(self._per_file(compressed), self.total - self.used))

    def error(self, shown: str, compressed: int) -> "DecompressionLimitError":
        from ..exceptions import DecompressionLimitError

        lim, one = self.limit(compressed), self._per_file(compressed)
        why = (f"the compressed files of this read may expand to {self.total:,} bytes together; "
               f"{self.used:,} were used before it" if lim < one else
               f"at most {self.total:,} bytes" if lim == self.total else
               f"{self.ratio:g} × its {compressed:,} compressed bytes" if lim > self.floor else
               f"{self.ratio:g} × its {compressed:,} compressed bytes, at least {self.floor:,}")
        return DecompressionLimitError(
            shown, f"decompresses to more than {lim:,} bytes ({why}); reading stopped there "
                   "(a decompression bomb? read_arrow(max_decompressed_ratio=…, max_decompressed_bytes=…) "
                   "or --max-decompressed-ratio / --max-decompressed raise the bound)")


def as_uint8(obj: Any, name: str) -> Any:
    """A buffer-protocol object as a ``uint8`` pyarrow array over the same memory (no copy)."""
    import pyarrow as pa

    if isinstance(obj, pa.Array):
        if obj.type != pa.uint8() or obj.null_count:
            raise TypeError(f"{name}: an in-memory input array must be uint8 without nulls (got {obj.type})")
        return obj
    try:
        buf = obj if isinstance(obj, pa.Buffer) else pa.py_buffer(obj)
    except (TypeError, ValueError, BufferError) as e:
        raise TypeError(f"{name}: an in-memory input needs a contiguous bytes-like buffer "
                        f"(bytes, memoryview, bytearray, numpy array …): {e}") from None
    return pa.Array.from_buffers(pa.uint8(), buf.size, [None, buf])
