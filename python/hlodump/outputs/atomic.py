"""Every file hlodump writes (``report``, ``plot``, ``cost -o``, ``comms -o``, ``query -o``, the
out-of-memory page) is written atomically by ``replaced``: into a temporary file in the target's
own folder, with an unpredictable name and opened without following links
(``tempfile.mkstemp``: ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600 until the end), then renamed
over the target (``os.replace``: one rename in one directory). A failure at any point (a full
disk, an exception while the content is made, Ctrl-C) removes the temporary and leaves the
target as it was: never a half-written page, never a stray ``.hlodump-…`` file.

A target that exists and is not a regular file (``/dev/stdout``, a FIFO) is written directly;
a symlink to a file has its target replaced (the link stays). A replaced file keeps its mode;
a new one gets ``0666 & ~umask`` as ``open`` would give it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Any, Iterator, Optional, Union

__all__ = ["replaced", "write_replaced", "TEMP_PREFIX"]

#: The name every temporary starts with (a hidden file beside the target).
TEMP_PREFIX = ".hlodump-"


@contextlib.contextmanager
def replaced(path: Union[str, "os.PathLike[str]"], binary: bool = False,
             newline: Optional[str] = None) -> Iterator[IO[Any]]:
    """A file object whose content becomes ``path`` only if the block succeeds (see the module
    docstring). ``newline``: as ``open`` takes it (text mode)."""
    path = os.fspath(path)
    target = os.path.realpath(path) if os.path.islink(path) else path
    if os.path.exists(target) and not os.path.isfile(target):
        with (open(target, "wb") if binary else open(target, "w", encoding="utf-8", newline=newline)) as f:
            yield f
        return
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=folder)
    try:
        try:
            mode = os.stat(target).st_mode & 0o7777  # keep the mode of the file replaced
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        f = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline=newline)
        fd = -1
        with f:
            yield f
            f.flush()
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_replaced(path: Union[str, "os.PathLike[str]"], data: Union[str, bytes]) -> str:
    """Write ``data`` (text or bytes) to ``path`` atomically (``replaced``); returns ``path``."""
    with replaced(path, binary=isinstance(data, (bytes, bytearray, memoryview))) as f:
        f.write(data)
    return os.fspath(path)


def save_figure(fig: Any, path: Union[str, "os.PathLike[str]"]) -> str:
    """``fig.savefig(path)`` (matplotlib) through ``replaced``: the format from the suffix
    (PNG when it names none)."""
    out = os.fspath(path)
    ext = os.path.splitext(out)[1].lstrip(".").lower()
    with replaced(out, binary=True) as f:
        fig.savefig(f, format=ext or "png")
    return out
