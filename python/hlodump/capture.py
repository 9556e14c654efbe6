"""``hlodump.capture``: the dump of one jax compile, in the same process, as a ``Dump``.

jax takes XLA debug options per compile (``Lowered.compile(compiler_options={...})``), so one
function can be compiled with ``xla_dump_to`` set while every other compile of the process goes on
as before: no ``XLA_FLAGS``, no restart. jax is imported only when ``capture`` is called
(``pip install "hlodump[jax]"``); ``import hlodump`` never imports it.

Tested with jax 0.4.30, 0.5.3, 0.8.3 and 0.10.2 (each accepts ``xla_dump_to`` and
``xla_dump_hlo_pass_re`` as per-compile options); 0.4.30 is the minimum the ``jax`` extra asks for.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:  # pragma: no cover
    from .dump import Dump

__all__ = ["capture", "CaptureError", "MIN_JAX"]

#: The oldest jax release ``capture`` was tested with (the ``hlodump[jax]`` extra's floor).
MIN_JAX = "0.4.30"

_MODULE = re.compile(r"module_(\d+)\.")


class CaptureError(RuntimeError):
    """The compile ran but left nothing to read (e.g. jax took the executable from a cache)."""


def _jax() -> Any:
    try:
        import jax
    except ImportError as e:
        raise ImportError(f'hlodump.capture needs jax (>= {MIN_JAX}): pip install "hlodump[jax]" '
                          f"(or pip install jax)") from e
    return jax


def _lowered(jax: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn`` as a ``jax.stages.Lowered``: a plain callable is jitted, a jitted function (or
    anything with ``.lower``) lowered with the arguments, a ``Traced`` lowered, a ``Lowered``
    taken as it is."""
    stages = getattr(jax, "stages", None)
    lowered_t = getattr(stages, "Lowered", None)
    traced_t = getattr(stages, "Traced", None)
    compiled_t = getattr(stages, "Compiled", None)
    if compiled_t is not None and isinstance(fn, compiled_t):
        raise TypeError("hlodump.capture got a Compiled: it is compiled already, so nothing can be dumped; "
                        "pass the jitted function, its Lowered (jitted.lower(...)) or its Traced")
    staged = (lowered_t is not None and isinstance(fn, lowered_t)) or (traced_t is not None and isinstance(fn, traced_t))
    if staged:
        if args or kwargs:
            raise TypeError(f"hlodump.capture got a {type(fn).__name__} and arguments: a "
                            f"{type(fn).__name__} carries its arguments already")
        return fn if lowered_t is not None and isinstance(fn, lowered_t) else fn.lower()
    if isinstance(fn, (str, bytes, os.PathLike)):
        raise TypeError(f"hlodump.capture needs a function, a jax.jit function, a Lowered or a Traced, not "
                        f"{type(fn).__name__} {fn!r}" + ("" if not isinstance(fn, (str, os.PathLike)) else
                                                         "; to read a dump that exists, use hlodump.read_arrow(path)"))
    if callable(getattr(fn, "lower", None)):  # jax.jit(...) objects: donate/static arguments honoured
        lowered = fn.lower(*args, **kwargs)
        if not callable(getattr(lowered, "compile", None)):
            raise TypeError(f"hlodump.capture: {type(fn).__name__}.lower(...) gave a {type(lowered).__name__}, not a "
                            "jax Lowered: pass a function, a jax.jit function, a Lowered or a Traced")
        return lowered
    if callable(fn):
        return jax.jit(fn).lower(*args, **kwargs)
    raise TypeError(f"hlodump.capture needs a function, a jax.jit function, a Lowered or a Traced, "
                    f"not {type(fn).__name__}")


def _compile(lowered: Any, options: dict[str, Any]) -> Any:
    try:
        return lowered.compile(compiler_options=options)
    except TypeError as e:
        if "compiler_options" in str(e):
            raise ImportError(f"this jax cannot take per-compile XLA options (Lowered.compile(compiler_options=...)): "
                              f"hlodump.capture needs jax >= {MIN_JAX}") from e
        raise


def _listing(directory: str) -> dict[str, tuple[int, int, int, int]]:
    """Every file under ``directory``: its (inode, size, mtime, ctime), to tell which files a
    compile wrote or rewrote."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for root, _dirs, names in os.walk(directory):
        for n in names:
            p = os.path.join(root, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out


def _changed(before: dict[str, tuple[int, int, int, int]], after: dict[str, tuple[int, int, int, int]]) -> list[str]:
    """The files of ``after`` that are new or rewritten since ``before``."""
    return sorted(p for p, st in after.items() if before.get(p) != st)


def _module_files(directory: str, written: list[str]) -> list[str]:
    """The files of ``written`` that belong to a module (``module_NNNN.*``, in a per-module
    folder too): exactly this compile's files, never an earlier compile's that shares a module
    id with it (XLA numbers modules per process, so a second run dumps ``module_0001`` again)."""
    files = [w for w in written if _MODULE.match(os.path.relpath(w, directory))]
    if not files:
        raise CaptureError(f"XLA wrote no module into {directory} (new files: {', '.join(written[:5])})")
    return files


def _read_files(directory: str, files: list[str]) -> "Dump":
    """``files`` (found in ``directory``, not named by the user: a file that is none of our
    formats is an ``other`` row, as in a walked directory), read as one dump: ``directory``."""
    from .io.paths import walk_entry
    from .io.plan import Plan
    from .reader import read_plan

    plan = Plan()
    shown_dir = directory.replace(os.sep, "/").rstrip("/")
    for f in files:
        rel = os.path.relpath(f, directory).replace(os.sep, "/")
        plan.add(walk_entry(f, f"{shown_dir}/{rel}", False), shown_dir)
    return read_plan(plan, None)


def compile_into(directory: str, fn: Any, args: tuple[Any, ...] = (), kwargs: Optional[dict[str, Any]] = None,
                 passes: bool = False, fresh: bool = False) -> tuple[Any, list[str]]:
    """Compile ``fn`` with XLA dumping into ``directory``: (the ``Compiled``, the files this
    compile wrote). The jax half of ``capture``; needs nothing of hlodump (the tests run it with
    other jax releases). ``fresh``: the directory is new, no listing before."""
    jax = _jax()
    lowered = _lowered(jax, fn, args, kwargs or {})
    os.makedirs(directory, exist_ok=True)
    before = {} if fresh else _listing(directory)
    options: dict[str, Any] = {"xla_dump_to": directory}
    if passes:
        options["xla_dump_hlo_pass_re"] = ".*"
    compiled = _compile(lowered, options)
    written = _changed(before, _listing(directory))
    if not written:
        raise CaptureError(f"XLA wrote no dump into {directory}: jax did not compile (the executable came from a "
                           "compilation cache: an identical compile dumped to the same directory earlier in this "
                           "process, or the persistent cache jax_compilation_cache_dir); use another dump_to or "
                           "none")
    return compiled, written


def capture(fn: Any, *args: Any, dump_to: Optional[Union[str, "os.PathLike[str]"]] = None,
            passes: bool = False, **kwargs: Any) -> "Dump":
    """Compile ``fn`` for ``args``/``kwargs`` with XLA dumping this one compile, and read the dump.

    ``fn``: a plain function (jitted for you with ``jax.jit``), a ``jax.jit`` function (its
    ``donate_argnums``, ``static_argnums``, shardings … honoured), a ``jax.stages.Lowered`` or a
    ``jax.stages.Traced`` (then no arguments). The compile gets the per-compile options
    ``xla_dump_to`` (and, with ``passes=True``, ``xla_dump_hlo_pass_re=".*"``: the module after
    every pass that changed it, for ``hlodump.analysis.passes``); other compiles of the process and
    ``XLA_FLAGS`` are untouched.

    ``dump_to``: the directory to dump into (kept; created if missing). Without it the dump goes to
    a temporary directory that lives as long as the returned ``Dump`` (removed when the ``Dump`` is
    garbage-collected; tables taken from it stay readable). Only the files this compile wrote or
    rewrote are read (by name, inode, size and times before and after it), so ``dump_to`` may
    already hold other dumps, an earlier run's compile with the same module id included.

    Returns a ``Dump`` (as ``hlodump.read_arrow``) with two attributes more: ``compiled`` (the
    ``jax.stages.Compiled`` of this very compile: ``d.compiled.memory_analysis()`` gives jax's own
    figures of what ``hlodump.analysis.summary(d)`` computes) and ``dump_dir`` (where the files
    are). ``ImportError`` without jax; ``CaptureError`` when XLA wrote nothing (jax took the
    executable from a compilation cache: an identical compile with the same ``dump_to`` earlier in
    the process, or ``jax_compilation_cache_dir``).
    """
    from ._typing import check_flag, check_path

    check_path("hlodump.capture", "dump_to", dump_to, optional=True)
    check_flag("hlodump.capture", "passes", passes)
    _jax()  # before making a directory: no jax, a clear ImportError
    temporary = dump_to is None
    directory = tempfile.mkdtemp(prefix="hlodump-capture-") if dump_to is None else os.path.abspath(os.fspath(dump_to))
    try:
        compiled, written = compile_into(directory, fn, args, kwargs, passes=passes, fresh=temporary)
        from .reader import read_arrow

        d = read_arrow(directory) if temporary else _read_files(directory, _module_files(directory, written))
    except BaseException:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    d.compiled = compiled  # type: ignore[attr-defined]
    d.dump_dir = directory  # type: ignore[attr-defined]
    if temporary:
        # Mapped files stay readable after their names are gone (POSIX), so tables taken from the
        # Dump outlive the directory.
        weakref.finalize(d, shutil.rmtree, directory, True)
    return d
