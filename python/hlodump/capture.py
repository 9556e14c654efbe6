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

__all__ = ["capture", "CaptureError", "MIN_JAX", "jax_figures", "read_compiled"]

#: The oldest jax release ``capture`` was tested with (the ``hlodump[jax]`` extra's floor).
MIN_JAX = "0.4.30"

_MODULE = re.compile(r"module_(\d+)\.")


class CaptureError(RuntimeError):
    """The compile ran but left nothing to read (e.g. jax took the executable from a cache), or
    the compile failed (``capture(..., target=...)``: jax's compile-time out-of-memory error
    E1000 on TPU). ``dump``: what the compiler still wrote, read as a ``Dump`` (on a TPU
    compile-time OOM: its buffer assignment, live ranges and memory report, so
    ``hlodump.analysis.fit(e.dump)`` says by how much it does not fit), else ``None``;
    ``compile_error``: the compiler's message (``None`` when the compile did not fail)."""

    def __init__(self, message: str, dump: "Optional[Dump]" = None, compile_error: Optional[str] = None) -> None:
        super().__init__(message)
        self.dump = dump
        self.compile_error = compile_error

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (str(self), None, self.compile_error))


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


class _CompileFailed(Exception):
    """The compile raised: its error and the files it wrote before failing."""

    def __init__(self, error: BaseException, written: list[str]) -> None:
        super().__init__(str(error))
        self.error = error
        self.written = written


def _on_target(jax: Any, args: tuple[Any, ...], kwargs: dict[str, Any], devices: tuple[Any, ...]) -> tuple[Any, Any]:
    """``args``/``kwargs`` for a compile on a target's devices: a ``ShapeDtypeStruct`` without a
    sharding is replicated over the devices the other arguments are sharded on (the target's
    first device when none is); a sharded one must be on the target's devices."""
    leaves = jax.tree_util.tree_leaves((args, kwargs))
    on = set(id(d) for d in devices)
    ids = {(d.platform, d.id) for d in devices}
    mesh_sharding: Any = None
    for x in leaves:
        sh = getattr(x, "sharding", None) if isinstance(x, jax.ShapeDtypeStruct) else None
        if sh is None:
            continue
        devs = getattr(sh, "device_set", None) or set()
        if not all(id(d) in on or (getattr(d, "platform", None), getattr(d, "id", None)) in ids for d in devs):
            kinds = sorted({str(getattr(d, "device_kind", d)) for d in devs})
            raise CaptureError(f"an argument is sharded on devices that are not the target's ({', '.join(kinds)}): "
                               "shard the arguments over the target's mesh (t.mesh(...)) or leave them unsharded")
        if mesh_sharding is None and hasattr(sh, "mesh"):
            from jax.sharding import NamedSharding, PartitionSpec

            mesh_sharding = NamedSharding(sh.mesh, PartitionSpec())
    if mesh_sharding is None:
        from jax.sharding import SingleDeviceSharding

        mesh_sharding = SingleDeviceSharding(devices[0])

    def fix(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct) and getattr(x, "sharding", None) is None:
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=mesh_sharding)
        if not isinstance(x, jax.ShapeDtypeStruct) and hasattr(x, "shape") and hasattr(x, "dtype") \
                and not isinstance(x, (int, float, complex, bool)):
            # a concrete array would be placed on a device: describe it instead (nothing allocated)
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=mesh_sharding)
        return x
    return jax.tree_util.tree_map(fix, args), jax.tree_util.tree_map(fix, kwargs)


def compile_into(directory: str, fn: Any, args: tuple[Any, ...] = (), kwargs: Optional[dict[str, Any]] = None,
                 passes: bool = False, fresh: bool = False, devices: Optional[tuple[Any, ...]] = None
                 ) -> tuple[Any, list[str]]:
    """Compile ``fn`` with XLA dumping into ``directory``: (the ``Compiled``, the files this
    compile wrote). The jax half of ``capture``; needs nothing of hlodump (the tests run it with
    other jax releases). ``fresh``: the directory is new, no listing before. ``devices``: a
    target's compile-only devices (unsharded ``ShapeDtypeStruct``s are placed there); a compile
    that raises then raises ``_CompileFailed`` with the files it wrote."""
    jax = _jax()
    if devices is not None:
        args, kwargs = _on_target(jax, args, kwargs or {}, devices)
    lowered = _lowered(jax, fn, args, kwargs or {})
    os.makedirs(directory, exist_ok=True)
    before = {} if fresh else _listing(directory)
    options: dict[str, Any] = {"xla_dump_to": directory}
    if passes:
        options["xla_dump_hlo_pass_re"] = ".*"
    try:
        compiled = _compile(lowered, options)
    except ImportError:
        raise
    except Exception as e:
        if devices is None:
            raise
        raise _CompileFailed(e, _changed(before, _listing(directory))) from e
    written = _changed(before, _listing(directory))
    if not written:
        raise CaptureError(f"XLA wrote no dump into {directory}: jax did not compile (the executable came from a "
                           "compilation cache: an identical compile dumped to the same directory earlier in this "
                           "process, or the persistent cache jax_compilation_cache_dir); use another dump_to or "
                           "none")
    return compiled, written


def jax_figures(compiled: Any) -> tuple[Optional[dict[str, Any]], Optional[dict[str, Any]]]:
    """jax's own ``memory_analysis()`` (every numeric field, by name) and ``cost_analysis()``
    (the first module's dict) of a ``Compiled``; ``None`` where jax gives none."""
    mem: Optional[dict[str, Any]] = None
    cost: Optional[dict[str, Any]] = None
    try:
        m = compiled.memory_analysis()
    except Exception:
        m = None
    if m is not None:
        mem = {}
        for k in dir(m):
            if k.startswith("_"):
                continue
            try:
                v = getattr(m, k)
            except Exception:
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                mem[k] = v
    try:
        c = compiled.cost_analysis()
    except Exception:
        c = None
    if isinstance(c, (list, tuple)):
        c = c[0] if c else None
    if isinstance(c, dict):
        cost = {str(k): v for k, v in c.items()}
    return mem, cost


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def capture(fn: Any, *args: Any, dump_to: Optional[Union[str, "os.PathLike[str]"]] = None,
            passes: bool = False, target: Any = None, **kwargs: Any) -> "Dump":
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
    are), ``jax_memory_analysis`` and ``jax_cost_analysis`` (jax's own ``memory_analysis()``
    fields and ``cost_analysis()`` dict of the compile, to compare with ``hlodump.analysis``'s)
    and ``target`` (the ``Target``, or ``None``). ``ImportError`` without jax; ``CaptureError``
    when XLA wrote nothing (jax took the executable from a compilation cache: an identical
    compile with the same ``dump_to`` earlier in the process, or ``jax_compilation_cache_dir``).

    ``target``: a name (``"tpu:v5e:2x4"``, ``"gpu:h100x8"``; see ``hlodump.target``) or a
    ``Target``: the compile is for that TPU or GPU, on this machine, with nothing allocated.
    Arguments are ``jax.ShapeDtypeStruct``s sharded over the target's devices
    (``NamedSharding(t.mesh(data=4, model=2), P(...))``); one without a sharding is replicated
    over the mesh the others use (the first device when none is sharded); a concrete array is
    taken as its shape and dtype. A compile that fails there (jax's compile-time out of memory,
    E1000) raises ``CaptureError`` with ``.dump``: what the compiler wrote before failing
    (``hlodump.analysis.fit(e.dump)``: "does not fit by …" and the buffers that make it) and
    ``.compile_error``: the compiler's message.
    """
    from ._typing import check_flag, check_path

    check_path("hlodump.capture", "dump_to", dump_to, optional=True)
    check_flag("hlodump.capture", "passes", passes)
    _jax()  # before making a directory: no jax, a clear ImportError
    from .targets import resolve

    tgt = resolve(target)
    temporary = dump_to is None
    directory = tempfile.mkdtemp(prefix="hlodump-capture-") if dump_to is None else os.path.abspath(os.fspath(dump_to))
    try:
        try:
            compiled, written = compile_into(directory, fn, args, kwargs, passes=passes, fresh=temporary,
                                             devices=None if tgt is None else tgt.devices)
        except _CompileFailed as f:
            raise _failed(directory, f, tgt, temporary) from f.error
        from .reader import read_arrow

        d = read_arrow(directory) if temporary else _read_files(directory, _module_files(directory, written))
    except CaptureError as e:
        if temporary and e.dump is None:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    except BaseException:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    d.compiled = compiled  # type: ignore[attr-defined]
    d.dump_dir = directory  # type: ignore[attr-defined]
    d.target = tgt  # type: ignore[attr-defined]
    d.jax_memory_analysis, d.jax_cost_analysis = jax_figures(compiled)  # type: ignore[attr-defined]
    if temporary:
        # Mapped files stay readable after their names are gone (POSIX), so tables taken from the
        # Dump outlive the directory.
        weakref.finalize(d, shutil.rmtree, directory, True)
    return d


def _failed(directory: str, f: "_CompileFailed", tgt: Any, temporary: bool) -> CaptureError:
    """The ``CaptureError`` of a compile that failed on a target, with what the compiler wrote."""
    from .reader import read_arrow

    where = f" for {tgt.name}" if tgt is not None else ""
    msg = f"the compile{where} failed: {_first_line(f.error)}"
    d = None
    try:
        files = [w for w in f.written if _MODULE.match(os.path.relpath(w, directory))]
        if files:
            d = read_arrow(directory) if temporary else _read_files(directory, files)
    except Exception as e:  # what the compiler wrote could not be read: the error says so
        msg += f" (and what it wrote in {directory} could not be read: {_first_line(e)})"
    if d is None:
        msg += " (it wrote no buffer assignment to read)"
    else:
        d.compiled = None  # type: ignore[attr-defined]
        d.dump_dir = directory  # type: ignore[attr-defined]
        d.target = tgt  # type: ignore[attr-defined]
        d.jax_memory_analysis, d.jax_cost_analysis = None, None  # type: ignore[attr-defined]
        d.compile_error = str(f.error)  # type: ignore[attr-defined]
        if temporary:
            weakref.finalize(d, shutil.rmtree, directory, True)
    return CaptureError(msg, dump=d, compile_error=str(f.error))


# ------------------------------------------------------------------ without a dump folder

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def read_compiled(compiled: Any) -> "Dump":
    """A ``jax.stages.Compiled`` read without a dump folder: its optimized module
    (``runtime_executable().hlo_modules()``) and the buffer assignment jax hands out as
    ``memory_analysis().serialized_buffer_assignment_proto`` (the CPU and GPU clients fill it),
    put together as the ``HloProto`` XLA dumps (``after_optimizations.hlo.pb``: field 1 the
    module, field 3 the buffer assignment) and read into the same tables as a dump's
    (``allocations``, ``assignments``, ``instructions``, ``heap_trace`` …; docs/protos.md). No
    live ranges: ``memory_analysis`` figures, allocations and buffers, but no timeline or peak
    in use. ``CaptureError`` when jax gives no buffer assignment (libtpu does not fill it: use
    ``capture(..., target=...)``, which dumps)."""
    from .reader import read_arrow

    try:
        ma = compiled.memory_analysis()
    except Exception as e:
        raise CaptureError(f"jax's memory_analysis() failed: {_first_line(e)}") from e
    ba = getattr(ma, "serialized_buffer_assignment_proto", None) if ma is not None else None
    if not ba:
        raise CaptureError("jax's memory_analysis() gives no buffer assignment for this compile "
                           "(serialized_buffer_assignment_proto is empty: libtpu does not fill it, and jax before "
                           "0.8 has no such field); capture the compile with a dump instead: "
                           "hlodump.capture(fn, *args, target=...)")
    try:
        modules = compiled.runtime_executable().hlo_modules()
    except Exception as e:
        raise CaptureError(f"this Compiled gives no optimized module (runtime_executable().hlo_modules(): "
                           f"{_first_line(e)})") from e
    if len(modules) != 1:
        raise CaptureError(f"this Compiled has {len(modules)} optimized modules; read_compiled reads one")
    mod = modules[0]
    platform = ""
    try:
        platform = str(compiled.input_shardings[0][0]._device_assignment[0].platform)  # noqa: SLF001
    except Exception:
        platform = ""
    tag = {"cpu": "cpu_", "gpu": "gpu_", "cuda": "gpu_", "rocm": "gpu_"}.get(platform, "")
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(mod.name))
    proto = _field(1, mod.as_serialized_hlo_module_proto()) + _field(3, bytes(ba))
    d = read_arrow({f"module_0000.{name}.{tag}after_optimizations.hlo.pb": proto})
    d.compiled = compiled  # type: ignore[attr-defined]
    d.dump_dir = None  # type: ignore[attr-defined]
    d.target = None  # type: ignore[attr-defined]
    d.jax_memory_analysis, d.jax_cost_analysis = jax_figures(compiled)  # type: ignore[attr-defined]
    return d
