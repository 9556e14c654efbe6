"""The input plan: what one read reads, decided once for every entry point.

``read_arrow``, ``scan`` and ``hlodump.ray`` all start with ``plan_inputs(source, ...)``: local
paths are walked by ``hlodump.paths`` (its rules: which files, in which order, which dump each
belongs to), URLs and in-memory buffers are listed by ``hlodump.stores`` with the same rules. The
result is a ``Plan``: one ``Input`` record per file, in reading order, which ``Plan.load`` turns
into what the core reads (``_core.read(plan.inputs, buffers=plan.load())``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional, Union

from ._typing import Source, StorageOptions
from .paths import MAX_FILES

if TYPE_CHECKING:  # pragma: no cover
    from .exceptions import DecompressionLimitError
    from .stores import Backend

__all__ = ["Input", "Plan", "Remote", "Source", "plan_inputs", "compression_of", "decompressed", "archive_of",
           "archive_members"]


@dataclass
class Remote:
    """An object to fetch before reading: its store, key and listed size."""

    backend: "Backend"
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
    #: ``files.dump``: the dump the file belongs to (``hlodump.paths.expand_with_dumps``).
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
        """Add a walked entry (``hlodump.paths.Input``: path, shown, explicit, error)."""
        path, shown, explicit, error = inp
        self.inputs.append(Input(path, shown, explicit, error, dump, origin))

    @property
    def dumps(self) -> list[str]:
        """``files.dump`` of every input."""
        return [i.dump for i in self.inputs]

    def sizes(self) -> list[int]:
        """Bytes of each input (listed size, buffer length, file size; 0 when unknown)."""
        from .stores import _as_uint8

        out = []
        for i in self.inputs:
            o = i.origin
            if i.error is not None:
                out.append(0)
            elif isinstance(o, Remote):
                out.append(o.size)
            elif o is not None:
                out.append(len(o) if isinstance(o, (bytes, bytearray)) else _as_uint8(o, "").nbytes)
            else:
                try:
                    out.append(os.stat(i.path).st_size)
                except OSError:
                    out.append(0)
        return out

    def subset(self, idx: Sequence[int]) -> "Plan":
        """The inputs at ``idx`` (a read task's share)."""
        return Plan([self.inputs[i] for i in idx], self.max_files, self.bound)

    def load(self, progress: Optional[bool] = None, on_error: str = "raise") -> Optional[list[Any]]:
        """Fetch every remote object (concurrently; a progress bar says so), decompress
        compressed local files (within ``bound``), open tar archives, read the same file twice
        only once (``_mark_duplicates``), and return the ``buffers`` argument of ``_core.read``
        (None when every input is a local file read as it is). A failure raises for an input
        named explicitly; for one found by a walk or listing it becomes the input's
        ``files.error`` (``inputs`` is updated)."""
        from .stores import _as_uint8, _error, _fetch, _row_error

        open_archives(self)  # a tar of a dump directory: its members become the inputs
        _mark_numbers_too_large(self)
        packed = [k for k, i in enumerate(self.inputs)
                  if i.origin is None and i.error is None and compression_of(i.shown) is not None]
        if all(i.origin is None for i in self.inputs) and not packed:
            return None
        buffers: list[Any] = [None] * len(self.inputs)
        for k in packed:
            i = self.inputs[k]
            try:
                buffers[k] = _as_uint8(decompressed(i.path, i.shown, self.bound), i.shown)
            except OSError as e:
                if i.explicit:
                    raise
                self.inputs[k] = i.failed(_row_text(e))
        jobs = [k for k, i in enumerate(self.inputs) if isinstance(i.origin, Remote) and i.error is None]
        fetched = _fetch(self, jobs, progress)
        for k, i in enumerate(self.inputs):
            o = i.origin
            if o is None or i.error is not None:
                continue
            if isinstance(o, Remote):
                got = fetched[k]
                if isinstance(got, BaseException):
                    err = _error(got, o.backend.url(o.key), "fetch")
                    if i.explicit:
                        raise err from None
                    self.inputs[k] = i.failed(_row_error(err))
                    continue
                buffers[k] = _as_uint8(got, i.shown)
            else:
                buffers[k] = _as_uint8(o, i.shown)
        _mark_duplicates(self, buffers, on_error)
        return buffers


#: The largest number a module id or a per-pass number may have (``files.module_id`` and
#: ``files.pass_index`` are int32 columns).
_INT32_MAX = 2**31 - 1
# a module token, or a number of 10+ digits followed by two more segments at least (the pass,
# its sub-step or pipeline …, the extension): where XLA puts a per-pass number
_TEN_DIGITS = re.compile(r"\d{10}")
_BIG_NUMBER = re.compile(r"(?:^|\.)module_(\d{4,})(?=\.|$)|\.(\d{10,})(?=(?:\.[^.]+){2})")


def _mark_numbers_too_large(plan: Plan) -> None:
    """A module file whose module id or per-pass number is past 2^31−1 (``files.module_id``,
    ``files.pass_index`` are int32): a row with an error saying so, never another kind of file
    (the core's name rules need the number to fit: it would be read as a plain module and be
    missing from ``passes``). Named explicitly: ``InputFileError``."""
    from .exceptions import InputFileError

    for k, i in enumerate(plan.inputs):
        if i.error is not None:
            continue
        base = i.shown.rsplit("/", 1)[-1]
        if not _TEN_DIGITS.search(base) or "module_" not in base:  # the common case: one scan
            continue
        m = _module_token(base)
        for g in _BIG_NUMBER.finditer(base):
            if g.group(1) is not None:
                if int(g.group(1)) > _INT32_MAX and m is None:
                    what = f"module id {int(g.group(1)):,}"
                    break
            elif m is not None and g.start() >= m and int(g.group(2)) > _INT32_MAX:
                what = f"per-pass number {int(g.group(2)):,}"
                break
        else:
            continue
        msg = f"{what} is larger than 2^31−1 = {_INT32_MAX:,} (an int32 column); not read"
        if i.explicit:
            raise InputFileError(i.shown, msg)
        plan.inputs[k] = i.failed("OSError: " + msg)


def _module_token(base: str) -> Optional[int]:
    """Where the first valid ``module_NNNN`` token of a file name ends (as the core finds it)."""
    for m in re.finditer(r"(?:^|\.)module_(\d{4,})(?=\.|$)", base):
        if int(m.group(1)) <= _INT32_MAX:
            return m.end()
    return None


# ------------------------------------------------------------------------------ compressed files

#: Compression suffixes read transparently, and the module that reads each (zstd needs the
#: ``zstandard`` package: without it a ``.zst`` file is an error saying so).
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstandard"}

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
        from .exceptions import DecompressionLimitError

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


class _Bounded:
    """A binary stream that raises ``DecompressionLimitError`` once more than ``limit`` bytes
    came out of it, or the read's ``bound`` is used up (what ``tarfile`` reads a compressed
    archive through); what comes out counts in ``bound.used`` as it comes."""

    def __init__(self, stream: Any, bound: "Bound", size: int, shown: str) -> None:
        self.stream, self.bound, self.size, self.shown = stream, bound, size, shown
        self.limit, self.n = bound.limit(size), 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:  # everything left, in pieces, within the bound
            out = bytearray()
            while True:
                piece = self.read(1 << 20)
                if not piece:
                    return bytes(out)
                out += piece
        piece = self.stream.read(min(n, self.limit + 1 - self.n) if self.n <= self.limit else 1)
        self.n += len(piece)
        self.bound.used += len(piece)
        if self.n > self.limit or self.bound.used > self.bound.total:
            self.bound.used -= self.n
            raise self.bound.error(self.shown, self.size)
        return piece


# the compressed protos we read (docs/protos.md)
_READ_PROTOS = (".hlo.pb", "-memory-usage-report.pb")


def compression_of(name: str) -> Optional[str]:
    """The module that decompresses the file ``name``, or None: not compressed, or XLA's own
    compressed protobuf (``….pb.gz``, none of ours but the HLO protos and the memory-usage
    report's: ``.hlo.pb.gz``, ``-memory-usage-report.pb.gz``)."""
    low = name.lower()
    for suffix, module in _COMPRESSION.items():
        inner = low[:-len(suffix)]
        if low.endswith(suffix) and (not inner.endswith(".pb") or inner.endswith(_READ_PROTOS)):
            return module
    return None


def without_compression(name: str) -> str:
    """``name`` without its compression suffix (``X.txt.gz`` → ``X.txt``), as it is classified."""
    if compression_of(name) is None:
        return name
    return name[: name.rfind(".")]


def _compression_module(module: str, shown: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        from .exceptions import InputFileError

        raise InputFileError(shown, f"reading {module} files needs the {module} package: pip install {module}"
                             if module == "zstandard" else f"this Python has no {module} module") from None


def decompressed(path: str, shown: str, bound: Optional[Bound] = None) -> Any:
    """The decompressed bytes of a compressed file (streamed in 1 MiB pieces into one buffer:
    the file's text must be contiguous for the parser; costs the decompression time and the
    decompressed size in memory, no map). A corrupt file is an ``InputFileError`` naming it (an
    ``OSError``); one that expands beyond ``bound`` a ``DecompressionLimitError`` (reading stops
    at the bound: never more in memory)."""
    from .exceptions import InputFileError

    try:
        with open(path, "rb") as raw:
            size = os.fstat(raw.fileno()).st_size
            return _decompress(raw, shown, size, bound)
    except InputFileError:
        raise
    except OSError as e:
        if e.filename == shown:
            raise
        raise InputFileError(shown, f"cannot read {compression_of(shown)} data ({e.strerror or e})") from None


def _decompress(raw: Any, shown: str, size: int, bound: Optional[Bound] = None) -> Any:
    """``decompressed`` of an open binary file object of ``size`` bytes (a file, or a tar
    member's bytes): a ``bytearray``."""
    from .exceptions import InputFileError

    bound = bound or Bound()
    module = compression_of(shown)
    assert module is not None
    mod = _compression_module(module, shown)
    limit = bound.limit(size)
    out = bytearray()
    try:
        if module == "zstandard":
            stream: Any = mod.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        else:
            stream = mod.open(raw)
        with stream:
            while True:
                piece = stream.read(min(1 << 20, limit + 1 - len(out)))
                if not piece:
                    break
                out += piece
                if len(out) > limit:
                    raise bound.error(shown, size)
    except InputFileError:
        raise
    except MemoryError:
        raise
    except OSError as e:
        raise InputFileError(shown, f"cannot read {module} data ({e.strerror or e})") from None
    except Exception as e:  # zlib.error, lzma.LZMAError, EOFError, zstd errors
        raise InputFileError(shown, f"cannot read {module} data ({type(e).__name__}: {e})") from None
    bound.used += len(out)
    return out


def _row_text(e: OSError) -> str:
    """A whole-file failure as ``files.error`` text."""
    from .exceptions import DecompressionLimitError

    kind = "DecompressionLimitError" if isinstance(e, DecompressionLimitError) else "OSError"
    return f"{kind}: {e.strerror or e}"


# ------------------------------------------------------------------------------ tar archives

#: Archive suffixes of a packed dump directory → the compression of the tar stream ("" none).
_ARCHIVES = {".tar": "", ".tar.gz": "gz", ".tgz": "gz", ".tar.bz2": "bz2", ".tbz2": "bz2",
             ".tar.xz": "xz", ".txz": "xz", ".tar.zst": "zst", ".tzst": "zst"}
_TAR_MODULES = {"gz": "gzip", "bz2": "bz2", "xz": "lzma", "zst": "zstandard"}

#: How deep archives inside archives are opened (a tar of tars of a dump: 2); deeper ones are
#: rows with an error.
MAX_ARCHIVE_DEPTH = 3


def archive_of(name: str) -> Optional[str]:
    """The compression of the tar archive ``name`` ("" for a plain ``.tar``), or None: not an
    archive."""
    low = name.lower()
    for suffix, comp in sorted(_ARCHIVES.items(), key=lambda kv: -len(kv[0])):
        if low.endswith(suffix):
            return comp
    return None


#: A member of an archive as the readers take it: (shown path, bytes or None, error or None).
Member = tuple[str, Optional[bytes], Optional[str]]


def archive_members(path: str, shown: str, max_files: int = MAX_FILES, bound: Optional[Bound] = None) -> list[Member]:
    """Every member of the tar archive at ``path`` (shown as ``shown``), sorted by name as a
    walk of the directory is (a name repeated in the archive stays repeated), read
    in one streaming pass (each regular member's bytes into a buffer of its own; a member that
    is itself compressed, ``….txt.gz``, is decompressed too; a member that is itself a tar
    archive is opened the same way, ``MAX_ARCHIVE_DEPTH`` deep). Members are shown as
    ``shown/<member name>`` and classified by that name; nothing is written to disk, so a name
    with ``..`` or a leading ``/`` is only a label. Directory entries are structure (no row, as
    when a directory is walked); any other member that is not a regular file (symlink, hard
    link, device, FIFO) is a row with an error saying what it is, never skipped silently. A
    corrupt or cut-off archive is an ``InputFileError`` naming it; one whose stream expands
    beyond ``bound`` a ``DecompressionLimitError``; more than ``max_files`` members, a
    ``WalkLimitError`` (as a directory walk: the members are read into memory)."""
    with open(path, "rb") as raw:
        size = os.fstat(raw.fileno()).st_size
        out = _archive_members(raw, size, shown, max_files, bound or Bound(), [0], 1)
    return out


def _archive_members(raw: Any, size: int, shown: str, max_files: int, bound: Bound, count: list[int],
                     depth: int) -> list[Member]:
    import tarfile

    from .exceptions import DecompressionLimitError, InputFileError
    from .paths import WalkLimitError

    comp = archive_of(shown)
    out: list[Member] = []
    try:
        src: Any = raw
        if comp:
            mod = _compression_module(_TAR_MODULES[comp], shown)
            stream = (mod.ZstdDecompressor().stream_reader(raw, read_across_frames=True) if comp == "zst"
                      else mod.open(raw))
            src = _Bounded(stream, bound, size, shown)
        with tarfile.open(fileobj=src, mode="r|") as tar:  # streamed, one pass
            for m in tar:
                count[0] += 1
                if count[0] > max_files:
                    raise WalkLimitError(f"{shown}: more than {max_files:,} archive members; reading stopped "
                                         "(read_arrow(..., max_files=N) raises the limit)")
                out.extend(_member(tar, m, shown, max_files, bound, count, depth))
    except (WalkLimitError, DecompressionLimitError):
        raise
    except InputFileError as e:
        if e.filename == shown:
            raise
        raise InputFileError(shown, f"cannot read tar archive ({e})") from None
    except MemoryError:
        raise
    except (tarfile.TarError, EOFError, ValueError) as e:
        raise InputFileError(shown, f"cannot read tar archive ({type(e).__name__}: {e})") from None
    except OSError as e:
        raise InputFileError(shown, f"cannot read tar archive ({e.strerror or e})") from None
    except Exception as e:  # zlib.error, lzma.LZMAError, zstd errors
        raise InputFileError(shown, f"cannot read tar archive ({type(e).__name__}: {e})") from None
    out.sort(key=lambda m: m[0])  # the order of a walk of the directory (stable: repeats kept)
    return out


def _member(tar: Any, m: Any, archive: str, max_files: int, bound: Bound, count: list[int],
            depth: int) -> list[Member]:
    """The rows of one tar member (none for a directory entry; those of its members for an
    archive inside the archive)."""
    import io

    from .exceptions import DecompressionLimitError, InputFileError
    from .paths import WalkLimitError

    # tarfile decodes names as UTF-8 with surrogate escapes: show stray bytes as \xNN
    name = m.name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    shown = archive + "/" + name
    if m.isdir():
        return []
    if not m.isreg():
        what = ("symlink to " + m.linkname if m.issym() else "hard link to " + m.linkname if m.islnk()
                else "FIFO" if m.isfifo() else "device" if m.isdev() else f"type {m.type!r}")
        return [(shown, None, f"OSError: not a regular file (tar member: {what}); not read")]
    f = tar.extractfile(m)
    data = f.read() if f is not None else b""
    if archive_of(name) is not None:
        if depth >= MAX_ARCHIVE_DEPTH:
            return [(shown, None, f"OSError: a tar archive inside {MAX_ARCHIVE_DEPTH} archives; not read "
                                  "(extract the outer ones)")]
        try:
            return _archive_members(io.BytesIO(data), len(data), shown, max_files, bound, count, depth + 1)
        except WalkLimitError:
            raise
        except (InputFileError, DecompressionLimitError) as e:
            return [(shown, None, _row_text(e))]
    if compression_of(name) is not None:
        try:
            data = bytes(_decompress(io.BytesIO(data), shown, len(data), bound))
        except OSError as e:
            return [(shown, None, _row_text(e))]
    return [(shown, data, None)]


def open_archives(plan: Plan) -> None:
    """Replace every local tar archive of ``plan`` with its members (``archive_members``): one
    input per member, its bytes as the origin, its dump found as in a walked directory. An
    archive that cannot be read raises when named explicitly, else it stays one input with
    that error."""
    from .paths import _input, _walk_dumps

    if not any(i.origin is None and i.error is None and archive_of(i.shown) is not None for i in plan.inputs):
        return
    inputs, plan.inputs = plan.inputs, []
    for i in inputs:
        if i.origin is not None or i.error is not None or archive_of(i.shown) is None:
            plan.inputs.append(i)
            continue
        try:
            members = archive_members(i.path, i.shown, plan.max_files, plan.bound)
        except OSError as e:
            if i.explicit:
                raise
            plan.inputs.append(i.failed(_row_text(e)))
            continue
        entries = [_input("", m_shown, False, m_err) for m_shown, _, m_err in members]
        for entry, d, (_, data, _) in zip(entries, _walk_dumps(entries, i.shown, len(i.shown) + 1), members):
            plan.add(entry, d, data)


# ------------------------------------------------------------------------------ the same file twice

def is_note(error: Optional[str]) -> bool:
    """Whether a ``files.error`` text says a file was not read because the same file (or its
    very content) is read elsewhere in the read — a note, not a failure: nothing is lost."""
    return error is not None and error.startswith("OSError: same ")


def _mark_duplicates(plan: Plan, buffers: Optional[list[Any]], on_error: str) -> None:
    """The same file twice in one dump (a tar holding a member twice, ``X.txt`` beside
    ``X.txt.gz``, ``run.tar`` beside ``run.tar.gz``): read once. Identical content: the later one is a ``files`` row noting it
    (``is_note``); different content: ``DuplicateFileError`` naming both, or with
    ``on_error="collect"`` the later one is a row with that error. Either way no figure doubles."""
    from .exceptions import DuplicateFileError

    first: dict[tuple[str, str], int] = {}
    for k, i in enumerate(plan.inputs):
        if i.error is not None or isinstance(i.origin, Remote):
            continue
        j = first.setdefault((_canonical(i.dump), _canonical(i.shown)), k)
        if j == k:
            continue
        a, b = _content(plan, buffers, j), _content(plan, buffers, k)
        one = plan.inputs[j].shown
        if a is not None and b is not None and a == b:
            plan.inputs[k] = i.failed(f"OSError: same content as {one} (the same file twice); read once")
        else:
            msg = (f"{i.shown}: differs from {one}: the same file twice in one dump with different content "
                   "(which one is right cannot be told; remove one or read them apart)")
            if on_error != "collect":
                raise DuplicateFileError(one, i.shown, msg)
            plan.inputs[k] = i.failed(f"OSError: differs from {one}: the same file twice with different content; "
                                      "not read")
        if buffers is not None:
            buffers[k] = None


_TAR_ALIASES = {".tgz": ".tar", ".tbz2": ".tar", ".txz": ".tar", ".tzst": ".tar"}


def _canonical(path: str) -> str:
    """``path`` with every component as it reads uncompressed: ``run.tar.gz/X.txt.gz`` →
    ``run.tar/X.txt`` (the same file, packed otherwise)."""
    parts = []
    for part in path.split("/"):
        part = without_compression(part)
        low = part.lower()
        for alias, tar in _TAR_ALIASES.items():
            if low.endswith(alias):
                part = part[: -len(alias)] + tar
        parts.append(part)
    return "/".join(parts)


def _content(plan: Plan, buffers: Optional[list[Any]], k: int) -> Optional[bytes]:
    """The bytes of input ``k`` as the core would read them (None: cannot be read)."""
    if buffers is not None and buffers[k] is not None:
        b = buffers[k]
        return b.buffers()[1].to_pybytes()[b.offset:b.offset + len(b)] if hasattr(b, "buffers") else bytes(b)
    i = plan.inputs[k]
    if i.origin is not None and not isinstance(i.origin, Remote):
        return bytes(i.origin)
    if compression_of(i.shown) is not None:
        try:
            return bytes(decompressed(i.path, i.shown, plan.bound))
        except OSError:
            return None
    try:
        with open(i.path, "rb") as f:
            return f.read()
    except OSError:
        return None


def plan_inputs(source: Source, *, follow_links: bool = False, max_files: int = MAX_FILES,
                storage_options: Optional[StorageOptions] = None) -> Plan:
    """Every file ``source`` names, in reading order, with its dump (``Source``: paths, globs,
    directories, URLs, buffers). Nothing is fetched or opened yet (``Plan.load``)."""
    from . import stores
    from .paths import expand_with_dumps

    if stores.needs_stores(source):
        return stores.plan(source, follow_links=follow_links, max_files=max_files,
                           storage_options=storage_options)
    out = Plan(max_files=max_files)
    for inp, dump in zip(*expand_with_dumps(source, follow_links=follow_links, max_files=max_files)):
        out.add(inp, dump)
    return out
