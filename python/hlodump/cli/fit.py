"""``hlodump fit``: will a jax program fit on a TPU or GPU this machine does not have?

    hlodump fit train.py:step --args shapes --target tpu:v5e:2x4 [--set size=8b …]
    hlodump fit mypkg.train:step --args mypkg.train:shapes --target gpu:h100x8
    hlodump fit DUMP…                      (a dump that exists: its verdict, no compile)

The program is ``FILE.py:NAME`` or ``MODULE:NAME`` (a function, a ``jax.jit`` function with its
donations and static arguments, or a ``Lowered``); ``--args`` names the function that builds its
arguments the way the program does (``NAME`` in the same file, or ``FILE.py:NAME`` /
``MODULE:NAME``), called as ``NAME(target, **sets)`` with the ``hlodump.Target`` (its ``devices``
and ``mesh(data=…, model=…)``) and the ``--set KEY=VALUE`` options (ints and floats parsed); it
returns a tuple of positional arguments, or ``(args, kwargs)`` — ``jax.ShapeDtypeStruct``s
sharded over the target's mesh. The target is resolved (its plugin loaded, its environment set)
before the program's file is imported.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
from typing import Any, Optional

from .common import UsageError, add_common, read

__all__ = ["register"]


def register(sub: Any) -> None:
    sp = sub.add_parser("fit", help="does a program fit on a TPU/GPU target (compiled here, no hardware), or does a "
                                    "dump's peak fit its device: the verdict, each memory space's peak, the top "
                                    "source lines at the peak")
    add_common(sp, paths="+")
    sp.add_argument("--target", default=None, metavar="NAME",
                    help="compile PATH (FILE.py:FUNC or MODULE:FUNC) for this target: tpu:v5e:2x4, tpu:v5p:4x4x4, "
                         "tpu:v6e:8x8, tpu:v5e:2x2*4 (slices), gpu:h100x8, gpu:a100x8, gpu:h100x8x8 (hosts) … "
                         "(needs hlodump[tpu] / hlodump[cuda]); without it PATH is a dump to read")
    sp.add_argument("--args", default=None, metavar="FUNC",
                    help="the function that builds the program's arguments: FUNC(target, **sets) returns the "
                         "positional arguments (a tuple) or (args, kwargs); NAME in the program's file, FILE.py:NAME "
                         "or MODULE:NAME (default: none, the program takes no arguments)")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                    help="a keyword for --args' function (numbers parsed), e.g. --set size=8b --set batch=16; "
                         "several allowed")
    sp.add_argument("--dump-to", default=None, metavar="DIR", help="keep the compile's dump in DIR (default: a "
                                                                    "temporary directory, removed)")
    sp.add_argument("--top", type=int, default=10, metavar="N", help="source lines at the peak to show (default 10)")
    sp.add_argument("--check", action="store_true",
                    help="exit status 4 when a module does not fit (for scripts and CI); 0 otherwise")
    sp.set_defaults(func=_cmd_fit)


EXIT_DOES_NOT_FIT = 4


def _value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            continue
    return text


def _sets(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        k, eq, v = it.partition("=")
        if not eq or not k.strip().isidentifier():
            raise UsageError(f"--set takes KEY=VALUE (KEY a Python name), not {it!r}")
        out[k.strip()] = _value(v)
    return out


def _split(ref: str) -> tuple[str, str]:
    where, colon, name = ref.rpartition(":")
    if not colon or not where or not name:
        raise UsageError(f"a program is FILE.py:FUNC or MODULE:FUNC (e.g. train.py:step, mypkg.train:step), not {ref!r}")
    return where, name


_LOADED: dict[str, Any] = {}


def _load_module(where: str) -> Any:
    if where in _LOADED:
        return _LOADED[where]
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise UsageError(f"{where}: no such Python file")
        name = "_hlodump_fit_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{where}: not a Python file that can be imported")
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(path))  # its own imports: as `python FILE` would find them
        sys.modules[name] = mod
        _user(lambda: spec.loader.exec_module(mod), f"importing {where}")  # type: ignore[union-attr]
    else:
        mod = _user(lambda: importlib.import_module(where), f"importing {where}")
    _LOADED[where] = mod
    return mod


class ProgramError(Exception):
    """The user's program raised: its exception in one line, with the program's frame."""


def _user(call: Any, doing: str) -> Any:
    """Run the user's code; its exception becomes one message naming where in their file."""
    try:
        return call()
    except ModuleNotFoundError as e:
        raise UsageError(f"{doing}: {e}") from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the hlodump package
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not os.path.abspath(f.filename).startswith(ours + os.sep) and "<frozen" not in f.filename]
        last = frames[-1] if frames else None
        at = f" ({last.filename}:{last.lineno})" if last else ""
        raise ProgramError(f"{doing} raised {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                           f"{at}") from None


def _attr(mod: Any, name: str, where: str) -> Any:
    obj = mod
    for part in name.split("."):
        if not hasattr(obj, part):
            have = sorted(n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n, None)))
            raise UsageError(f"{where} has no {name!r} (its functions: {', '.join(have[:20]) or 'none'})")
        obj = getattr(obj, part)
    return obj


def _program(ref: str) -> tuple[Any, str]:
    where, name = _split(ref)
    return _attr(_load_module(where), name, where), where


def _builder(ref: Optional[str], program_where: str) -> Any:
    if ref is None:
        return None
    if ":" in ref:
        where, name = _split(ref)
    else:
        where, name = program_where, ref
    fn = _attr(_load_module(where), name, where)
    if not callable(fn):
        raise UsageError(f"--args {ref}: {name} is not a function")
    return fn


def _arguments(built: Any, ref: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], (tuple, list)) and isinstance(built[1], dict):
        return tuple(built[0]), dict(built[1])
    if isinstance(built, (tuple, list)):
        return tuple(built), {}
    raise UsageError(f"--args {ref} returned a {type(built).__name__}: it must return a tuple of the program's "
                     "positional arguments, or (args, kwargs)")


def _cmd_fit(args: argparse.Namespace) -> int:
    from ..analysis.fit import fit, fit_text

    if args.top < 0:
        raise UsageError(f"--top must be 0 or more, not {args.top}")
    if args.target is None:
        if args.args or args.sets or args.dump_to:
            raise UsageError("--args, --set and --dump-to go with --target (a program to compile); without "
                             "--target the paths are dumps to read")
        d = read(args.paths, args)
        rows = fit(d, module=args.module, top=args.top)
        return _show(rows, args, None)
    if len(args.paths) != 1:
        raise UsageError(f"with --target, one program (FILE.py:FUNC or MODULE:FUNC), not {len(args.paths)} paths")
    from ..capture import CaptureError, capture
    from ..targets import TargetError, target

    sets = _sets(args.sets)
    t0 = time.perf_counter()
    try:
        tgt = target(args.target)
    except TargetError as e:
        raise UsageError(str(e)) from None
    t_target = time.perf_counter() - t0
    try:
        fn, where = _program(args.paths[0])
        builder = _builder(args.args, where)
        call_args: tuple[Any, ...] = ()
        call_kwargs: dict[str, Any] = {}
        if builder is not None:
            built = _user(lambda: builder(tgt, **sets), f"--args {args.args}")
            call_args, call_kwargs = _arguments(built, args.args)
        elif sets:
            raise UsageError("--set goes with --args (the keywords of the function building the arguments)")
    except ProgramError as e:
        raise UsageError(str(e)) from None
    t1 = time.perf_counter()
    failed: Optional[CaptureError] = None
    try:
        d = capture(fn, *call_args, target=tgt, dump_to=args.dump_to, **call_kwargs)
    except CaptureError as e:
        if e.dump is None:
            raise UsageError(str(e)) from None
        failed, d = e, e.dump
    except (TypeError, ValueError) as e:  # jax rejecting the arguments (shapes, shardings, static args)
        raise UsageError(f"compiling {args.paths[0]} for {tgt.name}: {type(e).__name__}: "
                         f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from None
    seconds = time.perf_counter() - t1
    rows = fit(d, top=args.top)
    timing = {"target_seconds": round(t_target, 3), "compile_seconds": round(seconds, 3)}
    return _show(rows, args, timing, failed)


def _show(rows: list[dict[str, Any]], args: argparse.Namespace, timing: Optional[dict[str, float]],
          failed: Any = None) -> int:
    from ..analysis.fit import fit_text

    if not rows:
        raise UsageError("nothing to answer: no module with a buffer assignment")
    if args.json:
        out: dict[str, Any] = {"modules": rows}
        if timing is not None:
            out.update(timing)
        if failed is not None:
            out["compile_error"] = failed.compile_error
        print(json.dumps(out, indent=1, default=str))
    else:
        text = fit_text(rows)
        print(text, end="")
        if timing is not None:
            print(f"(target {timing['target_seconds']:.1f} s, compile{' (failed)' if failed is not None else ''} "
                  f"{timing['compile_seconds']:.1f} s)")
    if args.check and any(r["fits"] is False for r in rows):
        return EXIT_DOES_NOT_FIT
    return 0
