"""Turning what the user passed (a file, a directory, a glob, a list) into input files.

Both readers (the Rust core and the reference) read exactly the list ``expand`` returns, so the
walking rules below hold for both.
"""

from __future__ import annotations

import glob
import heapq
import os
import stat
from typing import Any, Optional, Union

from .exceptions import HlodumpError

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["expand", "escape_name", "unescape_name", "WalkLimitError", "MAX_FILES"]

#: (path to open, path to show, named explicitly, error): ``error`` is the ``files.error`` text
#: of an entry that is not to be read (None: read it).
Input = tuple[str, str, bool, Optional[str]]

#: Default limit on the entries one walk may meet (``read_arrow(max_files=...)``).
MAX_FILES = 1_000_000

NOT_UTF8 = "OSError: file name is not valid UTF-8 (shown with \\xNN escapes, backslashes doubled); not read"


class WalkLimitError(HlodumpError):
    """A directory walk met more entries than ``max_files``."""


def expand(path: Any, follow_links: bool = False, max_files: int = MAX_FILES) -> list[Input]:
    """(path to open, path to show, named explicitly, error) for every input, in reading order.

    * A directory is walked recursively. Its entries are sorted by their path relative to it
      (plain string order), which is also the shown path (POSIX separators).
    * Every (device, inode) is visited once: a directory met again (through a symlink, a bind
      mount) or a file met again through a symlink is listed with an ``error`` naming the path
      it was read as. The real tree is walked first, then symlinks in path order, so a real path
      wins. (Hard links of files are separate entries of the tree and are each read.)
    * Symlinks never lead out of the directory named (checked on the fully resolved target):
      one that does is listed with an ``error``, unless ``follow_links=True``; then it is
      followed like any other (still each (device, inode) once). A symlink to ``..``, ``/`` or
      ``/proc/self`` therefore gives one row. Broken or looping symlinks are listed and become
      error rows in the readers.
    * A walk stops with ``WalkLimitError`` after ``max_files`` entries.
    * FIFOs, sockets and devices are listed too and become error rows: they are never opened.
    * A name that is not UTF-8 is shown with ``\\xNN`` escapes (and backslashes doubled:
      ``unescape_name`` gives the bytes back) and listed with an ``error``; it is not read.
    * A string with glob characters that names no existing file is expanded as a glob (``**``
      recursive); matched directories are walked.
    * In a list (or a glob) every item is expanded in turn; files found in a directory item are
      then shown as ``<item>/<relative path>`` so that shown paths stay unique.
    * A missing explicit file raises ``FileNotFoundError``; other problems with an explicit
      file (unreadable, not a regular file) are raised by the reader.
    """
    if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 1:
        raise ValueError(f"max_files must be a positive integer (got {max_files!r})")
    if isinstance(path, (list, tuple)):
        out: list[Input] = []
        for p in path:
            out.extend(_expand_one(p, True, follow_links, max_files))
        return out
    return _expand_one(path, False, follow_links, max_files)


def escape_name(name: str) -> tuple[str, Optional[str]]:
    """(name to show, error): a name that is valid UTF-8 as it is, or its escaped form and why
    it is not read. Lossless: ``unescape_name`` inverts the escaping."""
    try:
        name.encode("utf-8")
        return name, None
    except UnicodeEncodeError:
        raw = os.fsencode(name)
        return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace"), NOT_UTF8


def unescape_name(shown: str) -> bytes:
    """The bytes of a name shown escaped (a ``files`` row whose error says it is not UTF-8)."""
    out = bytearray()
    raw = shown.encode("utf-8")
    i = 0
    while i < len(raw):
        if raw[i : i + 2] == b"\\\\":
            out += b"\\"
            i += 2
        elif raw[i : i + 2] == b"\\x":
            out.append(int(raw[i + 2 : i + 4], 16))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


def _input(full: str, shown: str, explicit: bool, error: Optional[str] = None) -> Input:
    shown, bad = escape_name(shown)
    return (full, shown, explicit, error or bad)


def _expand_one(path: Any, prefix_dirs: bool, follow_links: bool, max_files: int) -> list[Input]:
    p = os.fspath(path)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if os.path.isdir(p):
        return _walk(p, _shown_prefix(p) if prefix_dirs else "", follow_links, max_files)
    if not os.path.lexists(p) and any(c in p for c in "*?["):
        out: list[Input] = []
        for m in sorted(glob.glob(p, recursive=True)):
            if os.path.isdir(m):
                out.extend(_walk(m, _shown_prefix(m), follow_links, max_files))
            else:
                # readers open walked entries with O_NOFOLLOW: give them the link's target
                out.append(_input(os.path.realpath(m) if os.path.islink(m) else m, m, False))
        return out
    if not os.path.lexists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    return [_input(p, p, True)]


def _shown_prefix(d: str) -> str:
    d = d.replace(os.sep, "/")
    return d if d.endswith("/") else d + "/"


def _within(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


class _Walk:
    def __init__(self, top: str, follow_links: bool, max_files: int) -> None:
        self.top = top
        self.root = os.path.realpath(top)
        self.follow_links = follow_links
        self.max_files = max_files
        self.entries = 0
        self.found: list[tuple[str, str, Optional[str]]] = []  # (relative path, full path, error)
        self.seen: dict[tuple[int, int], str] = {}  # (device, inode) -> relative path read as
        self.links: list[tuple[str, str]] = []  # heap of symlinks met: (relative path, full path)

    def count(self) -> None:
        self.entries += 1
        if self.entries > self.max_files:
            raise WalkLimitError(
                f"{self.top}: more than {self.max_files:,} entries; walk stopped "
                "(read_arrow(..., max_files=N) raises the limit)"
            )

    def tree(self, top: str, rel: str, key: Optional[tuple[int, int]]) -> None:
        """The real tree under ``top`` (no symlink followed; symlinks are queued)."""
        files: list[tuple[str, str, Optional[tuple[int, int]]]] = []
        stack: list[tuple[str, str, Optional[int]]] = [(top, rel, key[0] if key else None)]
        while stack:
            d, r, dev = stack.pop()
            try:
                it = os.scandir(d)
            except OSError:
                if r:  # an unreadable sub-directory: one error row for it
                    self.found.append((r.rstrip("/"), d, None))
                continue
            with it:
                for e in it:
                    self.count()
                    er = r + e.name
                    if e.is_symlink():
                        heapq.heappush(self.links, (er, e.path))
                        continue
                    try:
                        is_dir = e.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if is_dir:
                        try:
                            s = e.stat(follow_symlinks=False)
                        except OSError:
                            self.found.append((er, e.path, None))
                            continue
                        k = (s.st_dev, s.st_ino)
                        if k in self.seen:  # a bind mount of a directory already walked
                            self.found.append((er, e.path, f"OSError: same directory as {self.seen[k] or '.'}"))
                            continue
                        self.seen[k] = er
                        stack.append((e.path, er + "/", s.st_dev))
                        continue
                    # d_ino from the directory listing, no stat per file; same device as d
                    files.append((er, e.path, (dev, e.inode()) if dev is not None else None))
        # Hard links of the real tree are entries of their own (only symlinks alias: a symlink
        # to a file read here is not read again).
        files.sort()
        for er, full, k in files:
            if k is not None:
                self.seen.setdefault(k, er)
            self.found.append((er, full, None))

    def link(self, rel: str, full: str) -> None:
        try:
            s = os.stat(full)  # follows the link; fails for broken / looping links
        except OSError:
            self.found.append((rel, full, None))  # the readers report why
            return
        target = os.path.realpath(full)
        if not self.follow_links and not _within(target, self.root):
            self.found.append((rel, full, f"OSError: symlink to {escape_name(target)[0]} leaves the directory read "
                                          "(read_arrow(..., follow_links=True) follows it)"))
            return
        k = (s.st_dev, s.st_ino)
        kind = "directory" if stat.S_ISDIR(s.st_mode) else "file"
        if k in self.seen:
            self.found.append((rel, full, f"OSError: same {kind} as {self.seen[k] or '.'}"))
            return
        self.seen[k] = rel
        if stat.S_ISDIR(s.st_mode):
            self.tree(target, rel + "/", k)
        else:
            self.found.append((rel, target, None))  # opened by its resolved path


def _walk(top: str, prefix: str, follow_links: bool = False, max_files: int = MAX_FILES) -> list[Input]:
    """Every non-directory entry under ``top``, sorted by relative path (see ``expand``)."""
    w = _Walk(top, follow_links, max_files)
    try:
        st = os.stat(top)
        key: Optional[tuple[int, int]] = (st.st_dev, st.st_ino)
        w.seen[key] = ""
    except OSError:
        key = None
    w.tree(top, "", key)
    while w.links:
        rel, full = heapq.heappop(w.links)
        w.link(rel, full)
    w.found.sort()
    return [_input(full, prefix + r.replace(os.sep, "/"), False, err) for r, full, err in w.found]
