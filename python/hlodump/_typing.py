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
