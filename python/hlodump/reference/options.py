"""The files that say how a module was compiled (FORMATS.md §2.12): ``*.debug_options`` and
``compile_options.textproto``, one ``options`` row per field (nested messages as dotted keys, a
repeated field a row per element, a string value without its quotes and not unescaped).
Mirrors ``src/options/mod.rs``."""

from __future__ import annotations

import re
from typing import Any

from .lex import _Bad, _column

_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMPILE_OPTIONS_STARTS = ("executable_build_options {", "argument_layouts {",
                           "parameter_is_tupled_arguments: ")


def is_compile_options_line(line: bytes) -> bool:
    """The first line of a ``compile_options.textproto`` (``CompileOptionsProto`` in field
    order; every file XLA writes holds ``executable_build_options``)."""
    return any(line.startswith(p.encode()) for p in _COMPILE_OPTIONS_STARTS)


def parse(lines: list[str | None], ctx: Any) -> None:
    first = next((t for t in lines if t is not None and t.strip(" \t\n\r\v\f") != ""), "")
    source = "compile_options" if is_compile_options_line(first.encode()) else "debug_options"
    open_: list[str] = []
    last = 0
    for lineno, text in enumerate(lines, start=1):
        if text is None:
            continue
        last = lineno
        try:
            _line(lineno, text, source, open_, ctx)
        except _Bad as bad:
            ctx.error(lineno, _column(text, bad.pos), bad.message, text)
    if open_:
        ctx.error(max(last, 1), 1, f"the file ends inside message '{'.'.join(open_)}' "
                                   "(a '}' is missing: cut short?)", "")


def _line(lineno: int, text: str, source: str, open_: list[str], ctx: Any) -> None:
    start = len(text) - len(text.lstrip(" \t"))
    body = text[start:]
    if body.endswith("\r"):
        body = body[:-1]
    if body == "" or body.startswith("#"):
        return
    if body == "}":
        if not open_:
            raise _Bad(start, "'}' closes no message")
        open_.pop()
        return
    m = _FIELD_RE.match(body)
    if m is None:
        raise _Bad(start, "expected a field name ('NAME: VALUE', 'NAME {' or '}')")
    name, rest = m.group(0), body[m.end():]
    if rest in (" {", ": {", "{"):
        open_.append(name)
        return
    if rest.startswith(": "):
        value = rest[2:]
    elif rest.startswith(":"):
        value = rest[1:]
    else:
        raise _Bad(start + m.end(), "expected ': VALUE' or ' {' after the field name")
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        value = value[1:-1]
    ctx.add("options", {"source": source, "key": ".".join(open_ + [name]), "value": value,
                        "line": lineno})
