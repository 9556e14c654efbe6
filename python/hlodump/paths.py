"""Turning what the user passed (a file, a directory, a glob, a list) into input files."""

from __future__ import annotations

import glob
import os
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["expand"]


def expand(path: Any) -> list[tuple[str, str, bool]]:
    """(path to open, path to show, named explicitly) for every input file, in reading order.

    A directory is walked recursively (symlinked directories are not followed, so symlink loops
    cannot hang the walk); its files are sorted by their path relative to it, which is also the
    shown path. A string with glob characters that names no existing file is expanded as a glob.
    Missing explicit files raise ``FileNotFoundError``.
    """
    if isinstance(path, (list, tuple)):
        out: list[tuple[str, str, bool]] = []
        for p in path:
            out.extend(expand(p))
        return out
    p = os.fspath(path)
    if os.path.isdir(p):
        found = []
        for root, dirs, names in os.walk(p):
            dirs.sort()
            for n in names:
                full = os.path.join(root, n)
                found.append((full, os.path.relpath(full, p).replace(os.sep, "/"), False))
        found.sort(key=lambda x: x[1])
        return found
    if not os.path.lexists(p) and any(c in p for c in "*?["):
        return [(m, m, False) for m in sorted(glob.glob(p, recursive=True)) if not os.path.isdir(m)]
    if not os.path.lexists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    return [(p, p, True)]
