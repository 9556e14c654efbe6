"""The input plan: what one read reads, decided once for every entry point.

``read_arrow``, ``scan`` and ``hlodump.ray`` all start with ``plan_inputs(source, ...)``: local
paths are walked by ``hlodump.paths`` (its rules: which files, in which order, which dump each
belongs to), URLs and in-memory buffers are listed by ``hlodump.stores`` with the same rules. The
result is a ``Plan``: one ``Input`` record per file, in reading order, which ``Plan.load`` turns
into what the core reads (``_core.read(plan.inputs, buffers=plan.load())``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional, Union

from ._typing import Source, StorageOptions
from .paths import MAX_FILES

if TYPE_CHECKING:  # pragma: no cover
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
        return Plan([self.inputs[i] for i in idx], self.max_files)

    def load(self, progress: Optional[bool] = None) -> Optional[list[Any]]:
        """Fetch every remote object (concurrently; a progress bar says so), decompress
        compressed local files, and return the ``buffers`` argument of ``_core.read`` (None
        when every input is a local file read as it is). A failure raises for an input named
        explicitly; for one found by a walk or listing it becomes the input's ``files.error``
        (``inputs`` is updated)."""
        from .stores import _as_uint8, _error, _fetch, _row_error

        open_archives(self)  # a tar of a dump directory: its members become the inputs
        packed = [k for k, i in enumerate(self.inputs)
                  if i.origin is None and i.error is None and compression_of(i.shown) is not None]
        if all(i.origin is None for i in self.inputs) and not packed:
            return None
        buffers: list[Any] = [None] * len(self.inputs)
        for k in packed:
            i = self.inputs[k]
            try:
                buffers[k] = _as_uint8(decompressed(i.path, i.shown), i.shown)
            except OSError as e:
                if i.explicit:
                    raise
                self.inputs[k] = i.failed(f"OSError: {e.strerror or e}")
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
        return buffers


# ------------------------------------------------------------------------------ compressed files

#: Compression suffixes read transparently, and the module that reads each (zstd only when the
#: ``zstandard`` package is installed; without it a ``.zst`` file is read as it is).
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstandard"}


# the compressed protos we read (docs/protos.md)
_READ_PROTOS = (".hlo.pb", "-memory-usage-report.pb")


def compression_of(name: str) -> Optional[str]:
    """The module that decompresses the file ``name``, or None: not compressed, XLA's own
    compressed protobuf (``….pb.gz``, none of ours but the HLO protos and the memory-usage
    report's: ``.hlo.pb.gz``, ``-memory-usage-report.pb.gz``), or zstd without ``zstandard``."""
    low = name.lower()
    for suffix, module in _COMPRESSION.items():
        inner = low[:-len(suffix)]
        if low.endswith(suffix) and (not inner.endswith(".pb") or inner.endswith(_READ_PROTOS)):
            if module == "zstandard":
                try:
                    import zstandard  # noqa: F401
                except ImportError:
                    return None
            return module
    return None


def decompressed(path: str, shown: str) -> bytes:
    """The decompressed bytes of a compressed file (streamed in 1 MiB pieces into one buffer:
    the file's text must be contiguous for the parser; costs the decompression time and the
    decompressed size in memory, no map). A corrupt file is an ``OSError`` naming it."""
    try:
        with open(path, "rb") as raw:
            return _decompress(raw, shown)
    except OSError as e:
        if e.filename == shown:
            raise
        raise OSError(e.errno, f"cannot read {compression_of(shown)} data ({e.strerror or e})", shown) from None


def _decompress(raw: Any, shown: str) -> bytes:
    """``decompressed`` of an open binary file object (a file, or a tar member's bytes)."""
    import io

    module = compression_of(shown)
    out = io.BytesIO()
    try:
        if module == "zstandard":
            import zstandard

            stream: Any = zstandard.ZstdDecompressor().stream_reader(raw)
        else:
            import importlib

            stream = importlib.import_module(module).open(raw)  # type: ignore[union-attr]
        with stream:
            while True:
                piece = stream.read(1 << 20)
                if not piece:
                    break
                out.write(piece)
    except OSError as e:
        raise OSError(e.errno, f"cannot read {module} data ({e.strerror or e})", shown) from None
    except Exception as e:  # zlib.error, lzma.LZMAError, EOFError, zstd errors
        raise OSError(0, f"cannot read {module} data ({type(e).__name__}: {e})", shown) from None
    return out.getvalue()


# ------------------------------------------------------------------------------ tar archives

#: Archive suffixes of a packed dump directory → the compression of the tar stream ("" none).
_ARCHIVES = {".tar": "", ".tar.gz": "gz", ".tgz": "gz", ".tar.bz2": "bz2", ".tbz2": "bz2",
             ".tar.xz": "xz", ".txz": "xz", ".tar.zst": "zst", ".tzst": "zst"}


def archive_of(name: str) -> Optional[str]:
    """The compression of the tar archive ``name`` ("" for a plain ``.tar``), or None: not an
    archive (or ``.tar.zst`` without the ``zstandard`` package)."""
    low = name.lower()
    for suffix, comp in sorted(_ARCHIVES.items(), key=lambda kv: -len(kv[0])):
        if low.endswith(suffix):
            if comp == "zst":
                try:
                    import zstandard  # noqa: F401
                except ImportError:
                    return None
            return comp
    return None


#: A member of an archive as the readers take it: (shown path, bytes or None, error or None).
Member = tuple[str, Optional[bytes], Optional[str]]


def archive_members(path: str, shown: str, max_files: int = MAX_FILES) -> list[Member]:
    """Every member of the tar archive at ``path`` (shown as ``shown``), sorted by name as a
    walk of the directory is (a name repeated in the archive stays repeated), read
    in one streaming pass (each regular member's bytes into a buffer of its own; a member that
    is itself compressed, ``….txt.gz``, is decompressed too). Members are shown as
    ``shown/<member name>`` and classified by that name; nothing is written to disk, so a name
    with ``..`` or a leading ``/`` is only a label. Directory entries are structure (no row, as
    when a directory is walked); any other member that is not a regular file (symlink, hard
    link, device, FIFO) is a row with an error saying what it is, never skipped silently. A
    corrupt or cut-off archive is an ``OSError`` naming it; more than ``max_files`` members, a
    ``WalkLimitError`` (as a directory walk: the members are read into memory)."""
    import tarfile

    from .paths import WalkLimitError

    comp = archive_of(shown)
    out: list[Member] = []
    try:
        with open(path, "rb") as raw:
            src: Any = raw
            if comp == "zst":
                import zstandard

                src = zstandard.ZstdDecompressor().stream_reader(raw)
            mode: Any = "r|" + (comp if comp in ("gz", "bz2", "xz") else "")  # streamed, one pass
            with tarfile.open(fileobj=src, mode=mode) as tar:
                for n, m in enumerate(tar, 1):
                    if n > max_files:
                        raise WalkLimitError(f"{shown}: more than {max_files:,} archive members; reading stopped "
                                             "(read_arrow(..., max_files=N) raises the limit)")
                    out.extend(_member(tar, m, shown))
    except WalkLimitError:
        raise
    except (tarfile.TarError, EOFError, ValueError) as e:
        raise OSError(0, f"cannot read tar archive ({type(e).__name__}: {e})", shown) from None
    except OSError as e:
        raise OSError(e.errno, f"cannot read tar archive ({e.strerror or e})", shown) from None
    except Exception as e:  # zlib.error, lzma.LZMAError, zstd errors
        raise OSError(0, f"cannot read tar archive ({type(e).__name__}: {e})", shown) from None
    out.sort(key=lambda m: m[0])  # the order of a walk of the directory (stable: repeats kept)
    return out


def _member(tar: Any, m: Any, archive: str) -> list[Member]:
    """The row of one tar member (none for a directory entry)."""
    import io

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
    if compression_of(name) is not None:
        try:
            data = _decompress(io.BytesIO(data), shown)
        except OSError as e:
            return [(shown, None, f"OSError: {e.strerror or e}")]
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
            members = archive_members(i.path, i.shown, plan.max_files)
        except OSError as e:
            if i.explicit:
                raise
            plan.inputs.append(i.failed(f"OSError: {e.strerror or e}"))
            continue
        entries = [_input("", m_shown, False, m_err) for m_shown, _, m_err in members]
        for entry, d, (_, data, _) in zip(entries, _walk_dumps(entries, i.shown, len(i.shown) + 1), members):
            plan.add(entry, d, data)


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
