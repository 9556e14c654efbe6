"""Turning what the user passed (a file, a directory, a glob, a list) into input files.

Both readers (the Rust core and the reference) read exactly the list ``expand`` returns, so the
walking rules below hold for both.
"""

from __future__ import annotations

import fnmatch
import functools
import heapq
import os
import re
import stat
from typing import Any, Optional, Union

from ..exceptions import HlodumpError

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["expand", "expand_with_dumps", "check_input", "NothingToReadError", "dump_roots", "escape_name", "unescape_name", "WalkLimitError", "MAX_FILES"]

#: (path to open, path to show, named explicitly, error): ``error`` is the ``files.error`` text
#: of an entry that is not to be read (None: read it).
Input = tuple[str, str, bool, Optional[str]]

#: Default limit on the entries one walk may meet (``read_arrow(max_files=...)``).
MAX_FILES = 1_000_000

NOT_UTF8 = "OSError: file name is not valid UTF-8 (shown with \\xNN escapes, backslashes doubled); not read"

# A file or directory of one XLA module: ``module_0001.jit_f.cpu_after_optimizations.txt``,
# ``module_0001.jit_f/`` (per-module sub-folder of newer jax), ``module_0001`` …
MODULE_ENTRY = re.compile(r"^module_\d+(\.|$)")


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
    return expand_with_dumps(path, follow_links, max_files)[0]


def dump_roots(path: Any, follow_links: bool = False, max_files: int = MAX_FILES) -> list[str]:
    """The dump (``files.dump``) of every input file of ``path``, in ``expand`` order."""
    return expand_with_dumps(path, follow_links, max_files)[1]


def expand_with_dumps(
    path: Any, follow_links: bool = False, max_files: int = MAX_FILES
) -> tuple[list[Input], list[str]]:
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
    if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 1:
        raise ValueError(f"max_files must be a positive integer (got {max_files!r})")
    check_input(path)
    items = list(path) if isinstance(path, (list, tuple)) else [path]
    prefix_dirs = isinstance(path, (list, tuple))
    out: list[Input] = []
    dumps: list[str] = []
    named_files: list[int] = []
    seen_items: dict[tuple[int, int], str] = {}
    origin: list[int] = []  # the item each entry of `out` comes from
    for k, p in enumerate(items):
        same = _same_item(p, seen_items) if len(items) > 1 else None
        if same is not None:  # `D D`, `[f, f]`, `D D/../D`: read once, one row says so
            origin.append(k)
            out.append(same)
            dumps.append(same[1])
            continue
        got, ds = expand_one(p, prefix_dirs, follow_links, max_files)
        if len(got) == 1 and got[0][2]:
            named_files.append(len(out))
        origin.extend([k] * len(got))
        out.extend(got)
        dumps.extend(ds)
    if len(items) > 1:
        _mark_files_read_twice(out, origin)
    # several named module files of one directory: one dump, that directory
    by_dir: dict[str, list[int]] = {}
    for i in named_files:
        full, shown = out[i][0], out[i][1]
        if MODULE_ENTRY.match(os.path.basename(shown)):
            by_dir.setdefault(os.path.dirname(os.path.abspath(full)), []).append(i)
    for idxs in by_dir.values():
        if len(idxs) > 1:
            for i in idxs:
                d = os.path.dirname(out[i][1].replace(os.sep, "/"))
                dumps[i] = d or "."
    # one dump, one name: `D`, `D/` and `D/../D` (as written: `..` is resolved lexically)
    return out, [_normal_dump(d) for d in dumps]


def _normal_dump(d: str) -> str:
    n = os.path.normpath(d).replace(os.sep, "/")
    return "/" if n.startswith("//") and n.strip("/") == "" else n


def _same_item(p: Any, seen: dict[tuple[int, int], str]) -> Optional[Input]:
    """An error row for item ``p`` of a list if an earlier item was the same file or directory
    (same device and inode), else None (and ``p`` is remembered)."""
    q = os.fsdecode(os.fspath(p))
    try:
        st = os.stat(q)
    except (OSError, ValueError):
        return None
    key = (st.st_dev, st.st_ino)
    if key not in seen:
        seen[key] = q
        return None
    first = seen[key]
    kind = "directory" if stat.S_ISDIR(st.st_mode) else "file"
    return walk_entry(q, _root_name(q), False, f"OSError: same {kind} as {escape_name(first)[0]} (named twice); read once")


def _mark_files_read_twice(out: list[Input], origin: list[int]) -> None:
    """Entries of a list that reach a file an entry of an earlier item reads (a directory and a
    file inside it, overlapping globs): each becomes an error row naming the first. (Hard links
    inside one directory stay separate entries, as in a walk.)"""
    first: dict[tuple[int, int], int] = {}
    for i, (full, shown, explicit, err) in enumerate(out):
        if err is not None:
            continue
        try:
            st = os.stat(full)
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        key = (st.st_dev, st.st_ino)
        j = first.setdefault(key, i)
        if origin[j] != origin[i]:
            out[i] = (full, shown, False, f"OSError: same file as {out[j][1]} (reached twice); read once")


class NothingToReadError(HlodumpError, ValueError):
    """``read_arrow`` was given nothing to read: an empty list, dict or path."""


def check_input(path: Any) -> None:
    """``NothingToReadError`` for an empty input (``[]``, ``{}``, ``""``), ``TypeError`` for
    ``None``: clear errors instead of an empty dump or a ``TypeError`` from deep inside."""
    if path is None:
        raise TypeError("read_arrow(path): path is None; pass a dump file, a directory, a glob, a URL, "
                        "a list of these, or {name: bytes}")
    empty = (isinstance(path, (list, tuple, dict)) or hasattr(path, "keys")) and len(path) == 0
    if empty or (isinstance(path, (str, bytes)) and not path):
        raise NothingToReadError(f"nothing to read: the input is {path!r}; pass a dump file, a directory, "
                                 "a glob, a URL, a list of these, or {name: bytes}")
    if isinstance(path, (list, tuple)):
        for p in path:
            if p is None or (isinstance(p, str) and not p):
                raise NothingToReadError(f"nothing to read in item {p!r} of {path!r}")


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


def walk_entry(full: str, shown: str, explicit: bool, error: Optional[str] = None) -> Input:
    shown, bad = escape_name(shown)
    return (full, shown, explicit, error or bad)


def _root_name(p: str) -> str:
    q = p.replace(os.sep, "/")
    return q.rstrip("/") or ("/" if q.startswith("/") else ".")


def expand_one(
    path: Any, prefix_dirs: bool, follow_links: bool, max_files: int
) -> tuple[list[Input], list[str]]:
    p = os.fspath(path)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if os.path.isdir(p):
        got = _walk(p, _shown_prefix(p) if prefix_dirs else "", follow_links, max_files)
        return got, walk_dumps(got, _root_name(p), len(_shown_prefix(p)) if prefix_dirs else 0)
    if not os.path.lexists(p) and any(c in p for c in "*?["):
        out: list[Input] = []
        dumps: list[str] = []
        matches = _glob(p, follow_links, max_files)
        if not matches:  # never an empty read in silence (the CLI's --keep-going warns instead)
            raise FileNotFoundError(2, "No file matches this glob", p)
        for m, full, err, is_dir in matches:
            if is_dir and err is None:
                got = _walk(full, _shown_prefix(m), follow_links, max_files)
                out.extend(got)
                dumps.extend(walk_dumps(got, _root_name(m), len(_shown_prefix(m))))
            else:
                # readers open walked entries with O_NOFOLLOW: give them the link's target
                out.append(walk_entry(os.path.realpath(full) if os.path.islink(full) else full, m, False, err))
                mm = out[-1][1]
                dumps.append((os.path.dirname(mm) or ".") if MODULE_ENTRY.match(os.path.basename(mm)) else mm)
        return out, dumps
    if not os.path.lexists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    one = walk_entry(p, p, True)
    return [one], [one[1].replace(os.sep, "/")]


def _has_magic(part: str) -> bool:
    return any(c in part for c in "*?[")


def _glob(pattern: str, follow_links: bool, max_files: int) -> list[tuple[str, str, Optional[str], bool]]:
    """(path as matched, path to open, error, is a directory) of what ``pattern`` matches (``glob.glob(pattern, recursive=True)`` semantics: ``**``
    any number of directories, names starting with ``.`` only by a pattern that does), sorted.

    Not ``glob.glob``: it follows every symlink to a directory, so two ``x -> .`` links made it
    enumerate for ever. Here the directory the pattern starts from (its leading components
    without ``*?[``) is walked once with the rules of a directory walk (``_Walk``: each
    directory once, links inside it only unless ``follow_links``, ``max_files`` entries at most)
    and its entries are matched against the rest of the pattern.
    """
    parts = pattern.replace(os.sep, "/").split("/")
    k = next(i for i, part in enumerate(parts) if _has_magic(part))
    base = "/".join(parts[:k]) if k else ""
    if k == 1 and parts[0] == "":
        base = "/"
    rest = [q for q in parts[k:] if q != ""]
    top = base or "."
    if not rest or not os.path.isdir(top):
        return []
    if _glob_match(tuple(rest), ()):  # `dir/**` matches dir itself: everything under it
        return [(base.rstrip("/") or top, top, None, True)]
    w = _walked(top, follow_links, max_files)
    # every entry met: the files (and error rows) found, and the directories walked
    entries: dict[str, tuple[str, Optional[str], bool]] = {}  # rel -> (full path, error, is a dir)
    for r, full, err in w.found:
        entries[r.replace(os.sep, "/")] = (full, err, False)
    for r in w.dirs:
        entries[r] = (os.path.join(top, r), None, True)
    prefix = "" if not base else (base if base.endswith("/") else base + "/")
    hits = [r for r in entries if _glob_match(tuple(rest), tuple(r.split("/")))]
    # a directory matched is walked by the caller: nothing under it is listed on its own
    hit_dirs = {r for r in hits if entries[r][2]}
    keep = [r for r in hits if not any(r.startswith(d + "/") for d in hit_dirs)]
    return sorted((prefix + r, *entries[r]) for r in keep)


@functools.lru_cache(maxsize=4096)
def _glob_match(pat: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether path components ``parts`` match pattern components ``pat`` (see ``_glob``)."""
    if not pat:
        return not parts
    head = pat[0]
    if head == "**":
        if _glob_match(pat[1:], parts):
            return True
        return bool(parts) and not parts[0].startswith(".") and _glob_match(pat, parts[1:])
    if not parts:
        return False
    if parts[0].startswith(".") and not head.startswith("."):
        return False
    return fnmatch.fnmatchcase(parts[0], head) and _glob_match(pat[1:], parts[1:])


def walk_dumps(found: list[Input], root: str, strip: int) -> list[str]:
    """The dump of each file found by walking ``root`` (shown paths minus ``strip`` chars are
    relative to it)."""
    rels = [f[1][strip:] for f in found]
    marked: set[str] = set()  # relative directories ("" = root) holding module_NNNN.* entries
    for r in rels:
        parts = r.split("/")
        for i, part in enumerate(parts):
            if MODULE_ENTRY.match(part):
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
                if not (cur and MODULE_ENTRY.match(base) and parent in marked):
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
        self.dirs: set[str] = set()  # relative paths of the directories walked (for globs)

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
                        self.dirs.add(er)
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
                                          "(follow_links=True, or --follow-links, follows it)"))
            return
        k = (s.st_dev, s.st_ino)
        kind = "directory" if stat.S_ISDIR(s.st_mode) else "file"
        if k in self.seen:
            self.found.append((rel, full, f"OSError: same {kind} as {self.seen[k] or '.'}"))
            return
        self.seen[k] = rel
        if stat.S_ISDIR(s.st_mode):
            self.dirs.add(rel)
            self.tree(target, rel + "/", k)
        else:
            self.found.append((rel, target, None))  # opened by its resolved path


def _walked(top: str, follow_links: bool, max_files: int) -> "_Walk":
    """The walk of the tree under ``top``: each directory once (by device and inode), links
    inside the tree followed last, in name order (``_Walk``)."""
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
    return w


def _walk(top: str, prefix: str, follow_links: bool = False, max_files: int = MAX_FILES) -> list[Input]:
    """Every non-directory entry under ``top``, sorted by relative path (see ``expand``)."""
    w = _walked(top, follow_links, max_files)
    w.found.sort()
    return [walk_entry(full, prefix + r.replace(os.sep, "/"), False, err) for r, full, err in w.found]
