"""Compressed files and tar archives of a read: a ``.gz``/``.bz2``/``.xz``/``.zst`` file is
decompressed within the read's ``Bound`` (a decompression bomb stops there), a tar of a dump
directory becomes one input per member (``open_archives``), as a walked directory would."""

from __future__ import annotations

import os
from typing import Any, Optional

from .inputs import Bound, Plan
from .paths import MAX_FILES, walk_dumps, walk_entry

__all__ = ["archive_members", "archive_of", "compression_of", "decompressed", "open_archives", "row_text",
           "without_compression"]


# ------------------------------------------------------------------------------ compressed files

#: Compression suffixes read transparently, and the module that reads each (zstd needs the
#: ``zstandard`` package: without it a ``.zst`` file is an error saying so).
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstandard"}


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
        from ..exceptions import InputFileError

        raise InputFileError(shown, f"reading {module} files needs the {module} package: pip install {module}"
                             if module == "zstandard" else f"this Python has no {module} module") from None


class _Streams:
    """Every stream of a multi-stream ``.xz`` / ``.bz2`` file, decoded one after the other, or an
    error: ``lzma.open`` and ``bz2.open`` take whatever follows a stream and does not decode as
    "trailing garbage" and stop there without a word (issue 50: the second stream of two, its
    first byte damaged, was lost: 25 allocations read of 29). Here a stream that does not decode,
    or ends before its end-of-stream marker, is an error; between and after ``.xz`` streams
    only the stream padding of its format (NUL bytes, a multiple of 4) may stand."""

    def __init__(self, raw: Any, module: str) -> None:
        import bz2
        import lzma

        self.raw, self.xz = raw, module == "lzma"
        self.factory = lzma.LZMADecompressor if self.xz else bz2.BZ2Decompressor
        self.dec: Any = None
        self.buf = b""
        self.streams = 0

    def __enter__(self) -> "_Streams":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def _next_stream(self) -> bool:
        """Between streams: False at the end of the input, else True with a new decompressor."""
        padding = 0
        while True:
            if not self.buf:
                self.buf = self.raw.read(1 << 20)
                if not self.buf:
                    break
            if not self.xz:
                break
            rest = self.buf.lstrip(b"\0")
            padding += len(self.buf) - len(rest)
            self.buf = rest
            if rest:
                break
        if padding % 4:
            raise EOFError(f"{padding} NUL bytes after stream {self.streams} (xz stream padding is a multiple of 4)")
        if not self.buf:
            return False
        if padding and self.streams == 0:
            raise EOFError("NUL bytes before the first stream")
        self.dec = self.factory()
        self.streams += 1
        return True

    def read(self, n: int = -1) -> bytes:
        n = n if n is not None and n > 0 else 1 << 20
        while True:
            if self.dec is None and not self._next_stream():
                return b""
            if self.dec.needs_input and not self.buf:
                self.buf = self.raw.read(1 << 20)
                if not self.buf:
                    raise EOFError(f"stream {self.streams} ends before its end-of-stream marker (cut short)")
            try:
                data = self.dec.decompress(self.buf, n)
            except Exception as e:
                where = f"stream {self.streams}" if self.streams > 1 else "the data"
                raise type(e)(f"{where}: {e}") from None
            self.buf = b""
            if self.dec.eof:
                self.buf, self.dec = self.dec.unused_data, None
            if data:
                return data


def _open_stream(mod: Any, module: str, raw: Any) -> Any:
    """The decompressed stream of ``raw`` (a binary file object), every stream of it."""
    if module == "zstandard":
        return mod.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    if module in ("lzma", "bz2"):
        return _Streams(raw, module)
    return mod.open(raw)


#: How recent a file's last change may be for its times alone to show a write while it is read
#: (the Rust core's ``source::RECENT``).
_RECENT_NS = 10 * 10**9
#: A file changed less than this before its read ended is checked again once it is this old
#: (the Rust core's ``source::SETTLE``).
_SETTLE_NS = 50 * 10**6


class _Watched:
    """A local file read whole through Python (a compressed file, a tar archive), checked like
    the Rust core checks the files it reads (``source::Stamp``): its size and times (to the
    nanosecond) after reading must be those from before, and when they changed a moment before
    it was opened (a write in the same clock tick leaves them as they were), the bytes read are
    hashed as they are read and compared with a second read. A file rewritten while it was
    read is an ``InputFileError`` "the file changed while it was read …", never a mix of both
    versions (issue 50)."""

    def __init__(self, raw: Any) -> None:
        import hashlib
        import time

        self.raw, self.before = raw, os.fstat(raw.fileno())
        newest = max(self.before.st_mtime_ns, self.before.st_ctime_ns)
        self.hash = hashlib.blake2b(digest_size=16) if time.time_ns() - newest < _RECENT_NS else None
        self.n = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        if self.hash is not None:
            self.hash.update(data)
        self.n += len(data)
        return data

    def _changed(self) -> Optional[str]:
        import hashlib

        now, was = os.fstat(self.raw.fileno()), self.before
        if now.st_size != was.st_size:
            return f"its size went from {was.st_size} to {now.st_size} bytes"
        if (now.st_mtime_ns, now.st_ctime_ns) != (was.st_mtime_ns, was.st_ctime_ns):
            return "it was written to"
        if self.hash is not None:
            again, left, at = hashlib.blake2b(digest_size=16), self.n, 0
            while left > 0:
                piece = os.pread(self.raw.fileno(), min(left, 1 << 20), at)
                if not piece:
                    break
                again.update(piece)
                at, left = at + len(piece), left - len(piece)
            if again.digest() != self.hash.digest():
                return "its content differs from a second read"
        return None

    def check(self, shown: str) -> None:
        import time

        from ..exceptions import InputFileError

        what = self._changed()
        # changed moments ago: a writer paused in the middle of a rewrite for the whole read left
        # stable bytes, half of each version; wait until the file is _SETTLE_NS old, check again
        age = time.time_ns() - max(self.before.st_mtime_ns, self.before.st_ctime_ns)
        if what is None and self.hash is not None and age < _SETTLE_NS:
            time.sleep((_SETTLE_NS - age) / 1e9)
            what = self._changed()
        if what is not None:
            raise InputFileError(shown, f"the file changed while it was read ({what}); read it again once the "
                                        "program writing it is done")


def decompressed(path: str, shown: str, bound: Optional[Bound] = None) -> Any:
    """The decompressed bytes of a compressed file (streamed in 1 MiB pieces into one buffer:
    the file's text must be contiguous for the parser; costs the decompression time and the
    decompressed size in memory, no map). A corrupt file is an ``InputFileError`` naming it (an
    ``OSError``); one that expands beyond ``bound`` a ``DecompressionLimitError`` (reading stops
    at the bound: never more in memory)."""
    from ..exceptions import InputFileError

    try:
        with open(path, "rb") as raw:
            watched = _Watched(raw)
            out = _decompress(watched, shown, watched.before.st_size, bound)
            watched.check(shown)
            return out
    except InputFileError:
        raise
    except OSError as e:
        if e.filename == shown:
            raise
        raise InputFileError(shown, f"cannot read {compression_of(shown)} data ({e.strerror or e})") from None


def _decompress(raw: Any, shown: str, size: int, bound: Optional[Bound] = None) -> Any:
    """``decompressed`` of an open binary file object of ``size`` bytes (a file, or a tar
    member's bytes): a ``bytearray``."""
    from ..exceptions import InputFileError

    bound = bound or Bound()
    module = compression_of(shown)
    assert module is not None
    mod = _compression_module(module, shown)
    limit = bound.limit(size)
    out = bytearray()
    try:
        with _open_stream(mod, module, raw) as stream:
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


def row_text(e: OSError) -> str:
    """A whole-file failure as ``files.error`` text."""
    from ..exceptions import DecompressionLimitError

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
    from ..exceptions import InputFileError

    with open(path, "rb") as raw:
        watched = _Watched(raw)
        out = _archive_members(watched, watched.before.st_size, shown, max_files, bound or Bound(), [0], 1)
        try:
            watched.check(shown)
        except InputFileError as e:
            raise InputFileError(shown, f"cannot read tar archive ({e.strerror})") from None
    return out


def _archive_members(raw: Any, size: int, shown: str, max_files: int, bound: Bound, count: list[int],
                     depth: int) -> list[Member]:
    import tarfile

    from ..exceptions import DecompressionLimitError, InputFileError
    from .paths import WalkLimitError

    comp = archive_of(shown)
    out: list[Member] = []
    try:
        src: Any = raw
        if comp:
            src = _Bounded(_open_stream(_compression_module(_TAR_MODULES[comp], shown), _TAR_MODULES[comp], raw),
                           bound, size, shown)
        # streamed, one pass; strict: a header cut or damaged is an error, not the end (issue 50)
        with tarfile.open(fileobj=src, mode="r|", tarinfo=_strict_tarinfo()) as tar:
            for m in tar:
                count[0] += 1
                if count[0] > max_files:
                    raise WalkLimitError(f"{shown}: more than {max_files:,} archive members; reading stopped "
                                         "(read_arrow(..., max_files=N) raises the limit)")
                out.extend(_member(tar, m, shown, max_files, bound, count, depth))
            _only_padding_after_the_end(tar)
    except (WalkLimitError, DecompressionLimitError):
        raise
    except InputFileError as e:
        if e.filename == shown:
            raise
        raise InputFileError(shown, f"cannot read tar archive ({e})") from None
    except MemoryError:
        raise
    except _TarCut as e:
        raise InputFileError(shown, f"cannot read tar archive ({e})") from None
    except (tarfile.TarError, EOFError, ValueError) as e:
        raise InputFileError(shown, f"cannot read tar archive ({type(e).__name__}: {e})") from None
    except OSError as e:
        raise InputFileError(shown, f"cannot read tar archive ({e.strerror or e})") from None
    except Exception as e:  # zlib.error, lzma.LZMAError, zstd errors
        raise InputFileError(shown, f"cannot read tar archive ({type(e).__name__}: {e})") from None
    out.sort(key=lambda m: m[0])  # the order of a walk of the directory (stable: repeats kept)
    return out


class _TarCut(Exception):
    """A tar archive that does not end where its format says it ends (not a ``tarfile.HeaderError``:
    ``tarfile`` takes those after the first member for the end of the archive)."""


def _strict_tarinfo() -> Any:
    """A ``TarInfo`` whose headers are read strictly: ``tarfile`` ends the archive without a word
    at a header that is cut short, damaged (its checksum) or missing (the data ends where a
    header should be), so a tar cut at or inside a member header read as a shorter archive
    (issue 50: 60 of 120 files, no error). Only the end-of-archive block (512 NUL bytes) ends it."""
    import tarfile

    class _StrictTarInfo(tarfile.TarInfo):
        @classmethod
        def frombuf(cls, buf: bytes, encoding: str, errors: str) -> Any:
            try:
                return super().frombuf(buf, encoding, errors)
            except tarfile.EOFHeaderError:
                raise  # the end-of-archive block
            except tarfile.EmptyHeaderError:
                raise _TarCut("the archive ends where a member header should be, without its "
                              "end-of-archive blocks: cut short") from None
            except tarfile.TruncatedHeaderError:
                raise _TarCut("a member header cut short (the archive is cut)") from None
            except tarfile.HeaderError as e:
                raise _TarCut(f"a damaged member header ({e})") from None

    return _StrictTarInfo


def _only_padding_after_the_end(tar: Any) -> None:
    """After the end-of-archive block only NUL bytes may follow (the rest of the record): anything
    else (a second archive appended with ``cat``) would be lost without a word."""
    while True:
        piece = tar.fileobj.read(1 << 20)
        if not piece:
            return
        if piece.count(0) != len(piece):
            raise _TarCut("data after the end-of-archive block (another archive appended? it is not read)")


def _member(tar: Any, m: Any, archive: str, max_files: int, bound: Bound, count: list[int],
            depth: int) -> list[Member]:
    """The rows of one tar member (none for a directory entry; those of its members for an
    archive inside the archive)."""
    import io

    from ..exceptions import DecompressionLimitError, InputFileError
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
            return [(shown, None, row_text(e))]
    if compression_of(name) is not None:
        try:
            data = bytes(_decompress(io.BytesIO(data), shown, len(data), bound))
        except OSError as e:
            return [(shown, None, row_text(e))]
    return [(shown, data, None)]


def open_archives(plan: Plan) -> None:
    """Replace every local tar archive of ``plan`` with its members (``archive_members``): one
    input per member, its bytes as the origin, its dump found as in a walked directory. An
    archive that cannot be read raises when named explicitly, else it stays one input with
    that error."""
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
            plan.inputs.append(i.failed(row_text(e)))
            continue
        entries = [walk_entry("", m_shown, False, m_err) for m_shown, _, m_err in members]
        for entry, d, (_, data, _) in zip(entries, walk_dumps(entries, i.shown, len(i.shown) + 1), members):
            plan.add(entry, d, data)
