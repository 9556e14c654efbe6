"""Turning what the user passed (a file, a directory, a glob, a list) into input files."""

from __future__ import annotations

import glob
import os
import stat
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["expand"]

Input = tuple[str, str, bool]


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
    if isinstance(path, (list, tuple)):
        out: list[Input] = []
        for p in path:
            out.extend(_expand_one(p, prefix_dirs=True))
        return out
    return _expand_one(path, prefix_dirs=False)


def _expand_one(path: Any, prefix_dirs: bool) -> list[Input]:
    p = os.fspath(path)
    if os.path.isdir(p):
        return _walk(p, _shown_prefix(p) if prefix_dirs else "")
    if not os.path.lexists(p) and any(c in p for c in "*?["):
        out: list[Input] = []
        for m in sorted(glob.glob(p, recursive=True)):
            if os.path.isdir(m):
                out.extend(_walk(m, _shown_prefix(m)))
            else:
                out.append((m, m, False))
        return out
    if not os.path.lexists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    return [(p, p, True)]


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
