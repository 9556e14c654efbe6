"""The input plan: what one read reads, decided once for every entry point.

``read_arrow``, ``scan`` and ``hlodump.ray`` all start with ``plan_inputs(source, ...)``: local
paths are walked by ``hlodump.io.paths`` (its rules: which files, in which order, which dump each
belongs to), URLs and in-memory buffers are listed by ``hlodump.io.stores`` with the same rules. The
result is a ``Plan``: one ``Input`` record per file, in reading order, which ``load`` turns
into what the core reads (``_core.read(plan.inputs, buffers=load(plan))``).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from .._typing import Source, StorageOptions
from .paths import MAX_FILES
from .archives import (archive_members, archive_of, compression_of, decompressed, open_archives,  # noqa: F401
                       row_text, without_compression)
from .inputs import (MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO, RATIO_FLOOR, Bound, Input,  # noqa: F401
                     Origin, Plan, Remote, as_uint8)

__all__ = ["Input", "Plan", "Remote", "Source", "plan_inputs", "load", "is_note", "compression_of", "decompressed",
           "archive_of", "archive_members", "Bound"]


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
    from ..exceptions import InputFileError

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
    from ..exceptions import DuplicateFileError

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
    directories, URLs, buffers). Nothing is fetched or opened yet (``load``)."""
    from . import stores
    from .paths import expand_with_dumps

    if stores.needs_stores(source):
        return stores.plan(source, follow_links=follow_links, max_files=max_files,
                           storage_options=storage_options)
    out = Plan(max_files=max_files)
    for inp, dump in zip(*expand_with_dumps(source, follow_links=follow_links, max_files=max_files)):
        out.add(inp, dump)
    return out


def load(plan: Plan, progress: Optional[bool] = None, on_error: str = "raise") -> Optional[list[Any]]:
    """Fetch every remote object (concurrently; a progress bar says so), decompress
    compressed local files (within ``bound``), open tar archives, read the same file twice
    only once (``_mark_duplicates``), and return the ``buffers`` argument of ``_core.read``
    (None when every input is a local file read as it is). A failure raises for an input
    named explicitly; for one found by a walk or listing it becomes the input's
    ``files.error`` (``inputs`` is updated)."""
    from .stores import fetch_all, row_error, store_error

    open_archives(plan)  # a tar of a dump directory: its members become the inputs
    _mark_numbers_too_large(plan)
    packed = [k for k, i in enumerate(plan.inputs)
              if i.origin is None and i.error is None and compression_of(i.shown) is not None]
    if all(i.origin is None for i in plan.inputs) and not packed:
        return None
    buffers: list[Any] = [None] * len(plan.inputs)
    for k in packed:
        i = plan.inputs[k]
        try:
            buffers[k] = as_uint8(decompressed(i.path, i.shown, plan.bound), i.shown)
        except OSError as e:
            if i.explicit:
                raise
            plan.inputs[k] = i.failed(row_text(e))
    jobs = [k for k, i in enumerate(plan.inputs) if isinstance(i.origin, Remote) and i.error is None]
    fetched = fetch_all(plan, jobs, progress)
    for k, i in enumerate(plan.inputs):
        o = i.origin
        if o is None or i.error is not None:
            continue
        if isinstance(o, Remote):
            got = fetched[k]
            if isinstance(got, BaseException):
                err = store_error(got, o.backend.url(o.key), "fetch")
                if i.explicit:
                    raise err from None
                plan.inputs[k] = i.failed(row_error(err))
                continue
            buffers[k] = as_uint8(got, i.shown)
        else:
            buffers[k] = as_uint8(o, i.shown)
    _mark_duplicates(plan, buffers, on_error)
    return buffers
