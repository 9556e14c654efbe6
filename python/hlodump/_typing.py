"""Types the entry points share (``read_arrow``, ``scan``, ``hlodump.ray``), as Polars' readers
share theirs: one spelling of each parameter's type."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Literal, TypeVar, Union

__all__ = ["Source", "OnError", "StorageOptions", "renamed_parameter", "check_on_error"]

#: What a read takes: a path (file, directory, glob), an object-store or fsspec URL, an
#: in-memory file ``(name, bytes_like)`` or ``{name: bytes_like}``, or a list of paths, URLs and
#: pairs (``hlodump.io.plan.plan_inputs``).
Source = Union[str, "os.PathLike[str]", tuple[str, Any], Mapping[str, Any],
               Sequence[Union[str, "os.PathLike[str]", tuple[str, Any]]]]

#: ``"raise"``: stop at the first malformed line (``hlodump.ParseError``); ``"collect"``: go on,
#: every problem a row of ``errors``.
OnError = Literal["raise", "collect"]

#: Options of the object store or fsspec filesystem of URL inputs (credentials, endpoint …).
StorageOptions = Mapping[str, Any]

F = TypeVar("F", bound=Callable[..., Any])


def renamed_parameter(old: str, new: str) -> Callable[[F], F]:
    """Accept keyword ``old`` for ``new`` (a parameter that was renamed), with a
    ``DeprecationWarning``."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs or args:
                    raise TypeError(f"{fn.__name__}() got both {old!r} (the old name) and {new!r}")
                warnings.warn(f"{fn.__name__}({old}=...) is deprecated: the parameter is now {new!r}",
                              DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def check_on_error(on_error: object) -> None:
    """``ValueError`` unless ``on_error`` is one of ``OnError``."""
    if on_error not in ("raise", "collect"):
        raise ValueError(f"on_error must be 'raise' or 'collect' (got {on_error!r})")


# ------------------------------------------------------------------------------ argument checks
# Every public function checks its arguments before any work: a TypeError (wrong kind) or
# ValueError (right kind, value not accepted) that names the function, the parameter and what it
# accepts, never an AttributeError from deep inside or a library's own wording.


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:60] + '…'}"


def check_flag(fn: str, name: str, value: Any, optional: bool = False) -> None:
    """``value`` must be True or False (or None when ``optional``): ``strict="yes"`` is refused,
    not taken as true."""
    if value is None and optional:
        return
    if not isinstance(value, bool):
        what = "True, False or None" if optional else "True or False"
        raise TypeError(f"{fn}: {name} must be {what}, not {_shown(value)}")


def check_int(fn: str, name: str, value: Any, minimum: int = 0, optional: bool = False) -> None:
    """``value`` must be an int ≥ ``minimum`` (None when ``optional``); a bool is no int here."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: {name} must be an int{' or None' if optional else ''}, not {_shown(value)}")
    if value < minimum:
        raise ValueError(f"{fn}: {name} must be {minimum} or more, not {value}")


def check_path(fn: str, name: str, value: Any, optional: bool = False) -> None:
    """``value`` must be a path: ``str`` or ``os.PathLike`` of ``str`` (bytes paths are not taken)."""
    if value is None and optional:
        return
    if isinstance(value, str) and value:
        return
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return
    if isinstance(value, str):
        raise ValueError(f"{fn}: {name} must be a path, not an empty string")
    raise TypeError(f"{fn}: {name} must be a path (str or os.PathLike){' or None' if optional else ''}, "
                    f"not {_shown(value)}")


def check_dump(fn: str, name: str, value: Any) -> None:
    """``value`` must be a ``hlodump.Dump`` (or a mapping of table name → pyarrow table, as
    ``hlodump.reference.read_arrow`` gives)."""
    if isinstance(value, Mapping) and "files" in value:
        return
    hint = ""
    if isinstance(value, (str, bytes, os.PathLike)):
        hint = f"; to read one: {fn}(hlodump.read_arrow({value!r}))"
    raise TypeError(f"{fn}: {name} must be a hlodump.Dump (hlodump.read_arrow reads one), not {_shown(value)}{hint}")


def check_module(fn: str, value: Any, name: str = "module") -> None:
    """``module=``: None, a key / name / id (str or int) or a list of them."""
    import numbers

    def one(v: Any) -> bool:
        return isinstance(v, (str, numbers.Integral)) and not isinstance(v, bool)

    if value is None or one(value):
        return
    if isinstance(value, (list, tuple, set, frozenset)) and all(one(v) for v in value):
        return
    raise TypeError(f"{fn}: {name} must be None, a module key, name or id (str or int) or a list of them, "
                    f"not {_shown(value)}")


#: How ``checked_analysis`` checks a parameter, by its name.
_DUMP_PARAMS = {"dump", "d", "a", "b"}


def checked_analysis(fn: F) -> F:
    """Check the arguments of a public analysis (``hlodump.analysis.*``) by their names: the
    dump(s) (``dump``, ``d``, ``a``, ``b``), ``module``, ``top``, ``cost``, ``by``, ``step``."""
    import inspect

    sig = inspect.signature(fn)
    label = f"hlodump.analysis.{fn.__name__}"

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{label}: {e}") from None
        for name, value in bound.arguments.items():
            if name in _DUMP_PARAMS:
                check_dump(label, name, value)
            elif name == "module":
                check_module(label, value)
            elif name == "top":
                check_int(label, name, value, 0)
            elif name == "cost":
                check_flag(label, name, value)
            elif name == "step":
                check_int(label, name, value, 0, optional=True)
            elif name == "by" and not isinstance(value, str):
                raise TypeError(f"{label}: by must be a str (a column name such as 'op_name'), not {_shown(value)}")
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            from .exceptions import engine_error

            plain = engine_error(e)  # DuckDB out of memory / interrupted: MemoryError / KeyboardInterrupt
            if plain is None:
                raise
            raise plain from None

    return call  # type: ignore[return-value]


def check_read_options(fn: str, *, string_view: Any = None, mmap: Any = None, progress: Any = None,
                       follow_links: Any = False, strict: Any = False, max_files: Any = 1,
                       storage_options: Any = None) -> None:
    """The options ``read_arrow``, ``scan`` and ``hlodump.ray.read_dumps`` share."""
    check_flag(fn, "string_view", string_view, optional=True)
    check_flag(fn, "mmap", mmap, optional=True)
    check_flag(fn, "progress", progress, optional=True)
    check_flag(fn, "follow_links", follow_links)
    check_flag(fn, "strict", strict)
    check_int(fn, "max_files", max_files, 1)
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise TypeError(f"{fn}: storage_options must be a mapping of option names to values (or None), "
                        f"not {_shown(storage_options)}")
