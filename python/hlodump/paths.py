"""Turning what the user passed (a file, a directory, a glob, a list) into input files."""

from __future__ import annotations

import glob
import os
import re
import stat
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["expand", "expand_with_dumps", "dump_roots"]

Input = tuple[str, str, bool]

# A file or directory of one XLA module: ``module_0001.jit_f.cpu_after_optimizations.txt``,
# ``module_0001.jit_f/`` (per-module sub-folder of newer jax), ``module_0001`` …
_MODULE_ENTRY = re.compile(r"^module_\d+(\.|$)")


def expand(path: Any) -> list[Input]:
    """(path to open, path to show, named explicitly) for every input file, in reading order.

    * A directory is walked recursively. Its entries are sorted by their path relative to it
      (plain string order), which is also the shown path (POSIX separators).
    * Symlinked sub-directories are followed (like ``find -L``) unless that would loop (the
      target is the directory itself or one of its ancestors): such a symlink is listed as an
      entry of its own, which the readers report as a ``files`` row with an ``error`` (it is
      not a regular file). Symlinks to files are read; broken or looping ones become error rows.
      FIFOs, sockets and devices are listed too and become error rows: they are never opened.
    * A string with glob characters that names no existing file is expanded as a glob (``**``
      recursive); matched directories are walked.
    * In a list (or a glob) every item is expanded in turn; files found in a directory item are
      then shown as ``<item>/<relative path>`` so that shown paths stay unique.
    * A missing explicit file raises ``FileNotFoundError``; other problems with an explicit
      file (unreadable, not a regular file) are raised by the reader.
    """
    return expand_with_dumps(path)[0]


def dump_roots(path: Any) -> list[str]:
    """The dump (``files.dump``) of every input file of ``path``, in ``expand`` order."""
    return expand_with_dumps(path)[1]


def expand_with_dumps(path: Any) -> tuple[list[Input], list[str]]:
    """``expand(path)`` and, for every input file, the dump it belongs to (``files.dump``).

    The dump is the directory ``--xla_dump_to`` wrote, found from the file's location:

    * A file found by walking a directory: the nearest ancestor directory (the file's own
      directory included, the walked directory at most) that directly contains files or
      folders of an XLA module (``module_NNNN.*``). A per-module folder
      (``module_0001.jit_f/module.mlir``) belongs to the directory that holds it, even when it
      holds ``module_NNNN.*`` files itself. So ``runs/a/…`` and ``runs/b/…``, ``rank0/…`` and
      ``rank1/…`` are different dumps. A file with no such ancestor: the walked directory.
    * A single named file: its own path. Several named files of one directory whose names
      are ``module_NNNN.*``: that directory (they were written by one ``--xla_dump_to``).
    * A file matched by a glob: its directory if its name is ``module_NNNN.*``, else itself.

    Dumps are shown like ``files.path``: as named, ``/``-separated, no trailing ``/``.
    """
    items = list(path) if isinstance(path, (list, tuple)) else [path]
    prefix_dirs = isinstance(path, (list, tuple))
    out: list[Input] = []
    dumps: list[str] = []
    named_files: list[int] = []
    for p in items:
        got, ds = _expand_one(p, prefix_dirs=prefix_dirs)
        if len(got) == 1 and got[0][2]:
            named_files.append(len(out))
        out.extend(got)
        dumps.extend(ds)
    # several named module files of one directory: one dump, that directory
    by_dir: dict[str, list[int]] = {}
    for i in named_files:
        full, shown, _ = out[i]
        if _MODULE_ENTRY.match(os.path.basename(shown)):
            by_dir.setdefault(os.path.dirname(os.path.abspath(full)), []).append(i)
    for idxs in by_dir.values():
        if len(idxs) > 1:
            for i in idxs:
                d = os.path.dirname(out[i][1].replace(os.sep, "/"))
                dumps[i] = d or "."
    return out, dumps


def _root_name(p: str) -> str:
    q = p.replace(os.sep, "/")
    return q.rstrip("/") or ("/" if q.startswith("/") else ".")


def _expand_one(path: Any, prefix_dirs: bool) -> tuple[list[Input], list[str]]:
    p = os.fspath(path)
    if os.path.isdir(p):
        got = _walk(p, _shown_prefix(p) if prefix_dirs else "")
        return got, _walk_dumps(got, _root_name(p), len(_shown_prefix(p)) if prefix_dirs else 0)
    if not os.path.lexists(p) and any(c in p for c in "*?["):
        out: list[Input] = []
        dumps: list[str] = []
        for m in sorted(glob.glob(p, recursive=True)):
            if os.path.isdir(m):
                got = _walk(m, _shown_prefix(m))
                out.extend(got)
                dumps.extend(_walk_dumps(got, _root_name(m), len(_shown_prefix(m))))
            else:
                out.append((m, m, False))
                mm = m.replace(os.sep, "/")
                dumps.append((os.path.dirname(mm) or ".") if _MODULE_ENTRY.match(os.path.basename(mm)) else mm)
        return out, dumps
    if not os.path.lexists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    return [(p, p, True)], [p.replace(os.sep, "/")]


def _walk_dumps(found: list[Input], root: str, strip: int) -> list[str]:
    """The dump of each file found by walking ``root`` (shown paths minus ``strip`` chars are
    relative to it)."""
    rels = [shown[strip:] for _, shown, _ in found]
    marked: set[str] = set()  # relative directories ("" = root) holding module_NNNN.* entries
    for r in rels:
        parts = r.split("/")
        for i, part in enumerate(parts):
            if _MODULE_ENTRY.match(part):
                marked.add("/".join(parts[:i]))
    cache: dict[str, str] = {}

    def dump_of(d: str) -> str:
        hit = cache.get(d)
        if hit is not None:
            return hit
        cur = d
        res = ""
        while True:
            if cur in marked:
                parent = cur.rsplit("/", 1)[0] if "/" in cur else ""
                base = cur.rsplit("/", 1)[-1]
                # a per-module folder belongs to the dump that holds it
                if not (cur and _MODULE_ENTRY.match(base) and parent in marked):
                    res = cur
                    break
            if not cur:
                res = ""
                break
            cur = cur.rsplit("/", 1)[0] if "/" in cur else ""
        cache[d] = res
        return res

    out = []
    for r in rels:
        d = dump_of(r.rsplit("/", 1)[0] if "/" in r else "")
        out.append(root if not d else (root + "/" + d if root != "/" else "/" + d))
    return out


def _shown_prefix(d: str) -> str:
    d = d.replace(os.sep, "/")
    return d if d.endswith("/") else d + "/"


def _walk(top: str, prefix: str) -> list[Input]:
    """Every non-directory entry under ``top``, sorted by relative path."""
    found: list[tuple[str, str]] = []  # (relative path, full path)
    try:
        st = os.stat(top)
        top_key = (st.st_dev, st.st_ino)
    except OSError:
        top_key = None
    # stack of (directory, its relative path with trailing "/", keys of it and its ancestors)
    stack: list[tuple[str, str, frozenset[tuple[int, int]]]] = [(top, "", frozenset([top_key] if top_key else []))]
    while stack:
        d, rel, ancestors = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            if rel:  # an unreadable sub-directory: one error row for it
                found.append((rel.rstrip("/"), d))
            continue
        with it:
            for e in it:
                r = rel + e.name
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    try:
                        s = e.stat(follow_symlinks=False)
                        key = (s.st_dev, s.st_ino)
                    except OSError:
                        found.append((r, e.path))
                        continue
                    stack.append((e.path, r + "/", ancestors | {key}))
                    continue
                if e.is_symlink():
                    try:
                        s = os.stat(e.path)  # follows the link; fails for broken / looping links
                    except OSError:
                        found.append((r, e.path))
                        continue
                    if stat.S_ISDIR(s.st_mode):
                        key = (s.st_dev, s.st_ino)
                        if key in ancestors:
                            found.append((r, e.path))  # would loop: an error row
                        else:
                            stack.append((e.path, r + "/", ancestors | {key}))
                        continue
                found.append((r, e.path))
    found.sort()
    return [(full, prefix + r.replace(os.sep, "/"), False) for r, full in found]
