"""The files that say how a module was compiled (FORMATS.md §1.6, §1.6.1): ``*.debug_options``,
``compile_options.textproto``, the other protobuf text a compiler writes beside a module
(``NAMED_FILES``) and libtpu's ``flagfile`` (``--name=value`` lines). One ``options`` row per
field: nested messages as dotted keys, a field printed by number keyed by its number, a repeated
field (or a ``[a, b]`` list) a row per element, a string value without its quotes and not
unescaped. ``source`` names the file (``NAMED_FILES``), else what its first line says.
Mirrors ``src/options/mod.rs``."""

from __future__ import annotations

import re
from typing import Any

from .lex import _Bad, _column

# [A-Za-z_][A-Za-z0-9_]*, a field number (a field the printer's schema lacks), or an extension /
# Any name in brackets
_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|\[[^\]]*\]")
_COMPILE_OPTIONS_STARTS = ("executable_build_options {", "argument_layouts {",
                           "parameter_is_tupled_arguments: ")

# (end of a base name with its leading '.', or a whole base name; options.source)
NAMED_FILES = (
    (".execution_options.txt", "execution_options"),
    (".hlo_module_config.txt", "hlo_module_config"),
    (".target_arguments.txt", "target_arguments"),
    (".tpu_comp_env.txt", "tpu_comp_env"),
    (".basic_compiler_metadata.txt", "basic_compiler_metadata"),
    (".transfer_stats.txt", "transfer_stats"),
    (".sparse_core_specific_metadata.txt", "sparse_core_specific_metadata"),
    (".host_transfers.txt", "host_transfers"),
    (".thunk_metadata.txt", "thunk_metadata"),
    (".priority_fusion_dump.txt", "priority_fusion_dump"),
    (".autotune_results.pbtxt", "autotune_results"),
    (".gpu_target_config.pbtxt", "gpu_target_config"),
    (".config.pbtxt", "hlo_module_config"),
    (".metadata.textproto", "module_metadata"),
    (".flagfile", "flagfile"),
    ("topology.textproto", "topology"),
    ("compile_options.textproto", "compile_options"),
)


def source_of_name(path: str) -> str | None:
    """The ``source`` a file's name gives (``NAMED_FILES``), if any."""
    base = re.split(r"[/\\]", path)[-1]
    return next((src for s, src in NAMED_FILES if (base.endswith(s) if s.startswith(".") else base == s)), None)


def is_compile_options_line(line: bytes) -> bool:
    """The first line of a ``compile_options.textproto`` (``CompileOptionsProto`` in field
    order; every file XLA writes holds ``executable_build_options``)."""
    return any(line.startswith(p.encode()) for p in _COMPILE_OPTIONS_STARTS)


def _field_len(body: str) -> int:
    m = _FIELD_RE.match(body)
    return m.end() if m else 0


def _opener(rest: str) -> str | None:
    """The closer a message opened by ``rest`` (what follows the field) expects, or None."""
    r = rest[1:] if rest.startswith(":") else rest
    r = r[1:] if r.startswith(" ") else r
    return {"{": "}", "<": ">"}.get(r)


def _scan_quotes(v: str, stop: str) -> int:
    """The index of the first ``stop`` character outside quotes (a ``\\`` escaping the next
    character inside them), or len(v)."""
    quote = ""
    i = 0
    while i < len(v):
        c = v[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == stop:
            return i
        i += 1
    return len(v)


def _is_quoted(v: str) -> bool:
    return len(v) >= 2 and v[0] in "\"'" and v[-1] == v[0]


def _comment_start(v: str) -> int:
    """Where a ``#`` comment starts in what follows a field; none when the value (after ``:``
    and blanks) is one quoted string
    (``*.debug_options`` does not escape its strings)."""
    return len(v) if _is_quoted(v.lstrip(": \t")) else _scan_quotes(v, "#")


def _trim(v: str) -> str:
    return v.strip(" \t")


def _unquoted(v: str) -> str:
    return v[1:-1] if _is_quoted(v) else v


def _list_items(inner: str) -> list[str]:
    """The elements of a ``[a, b, "c,d"]`` list's inside, split at commas outside quotes."""
    out = []
    while True:
        i = _scan_quotes(inner, ",")
        if i == len(inner):
            break
        out.append(_trim(inner[:i]))
        inner = inner[i + 1:]
    last = _trim(inner)
    if last or out:
        out.append(last)
    return out


def _source_of_content(first: str) -> tuple[str, bool]:
    if first.startswith("--"):
        return "flagfile", True
    if is_compile_options_line(first.encode()):
        return "compile_options", False
    if first.startswith("xla_"):
        return "debug_options", False
    return "proto_text", False


def parse(lines: list[str | None], ctx: Any) -> None:
    first = next((t for t in lines if t is not None and t.strip(" \t\n\r\v\f") != ""), "")
    by_content, flags = _source_of_content(first)
    source = source_of_name(ctx.path) or by_content
    # per open message: [name, closer, line it opened on, whether a row came since]
    open_: list[list[Any]] = []
    # the open top-level `thunk_metadata { … }` message of a *.thunk_metadata.txt (one holder)
    thunk: list[dict[str, Any] | None] = [None]
    last = 0
    for lineno, text in enumerate(lines, start=1):
        if text is None:
            continue
        last = lineno
        try:
            _line(lineno, text, source, flags, open_, ctx, thunk)
        except _Bad as bad:
            ctx.error(lineno, _column(text, bad.pos), bad.message, text)
    if open_:
        name = ".".join(o[0] for o in open_)
        ctx.error(max(last, 1), 1, f"the file ends inside message '{name}' "
                                   f"(a '{open_[-1][1]}' is missing: cut short?)", "")


def _add(ctx: Any, lineno: int, source: str, open_: list[list[Any]], name: str, value: str,
         thunk: list[dict[str, Any] | None] | None = None) -> None:
    key = ".".join([o[0] for o in open_] + [name])
    ctx.add("options", {"source": source, "key": key, "value": value, "line": lineno})
    for o in open_:
        o[3] = True
    if thunk and thunk[0] is not None:
        _thunk_field(thunk[0], key[len("thunk_metadata."):], value)


# A `thunk_metadata { … }` message's fields → its `thunk_metadata` row (the options rows alone
# cannot group them: protobuf's printer omits a field at its default, e.g. thunk_id 0).
_THUNK_FIELDS = {"thunk_info.thunk_id": "thunk_id", "thunk_info.profile_annotation": "instruction",
                 "thunk_kind": "kind"}


def _thunk_field(row: dict[str, Any], key: str, value: str) -> None:
    col = _THUNK_FIELDS.get(key)
    if col == "thunk_id":
        # Rust's i64 parse: an optional sign, then digits only, within i64
        ok = re.fullmatch(r"[+-]?[0-9]+", value) is not None and -2**63 <= int(value) < 2**63
        row[col] = int(value) if ok else None
    elif col is not None:
        row[col] = value


def _open(lineno: int, name: str, closer: str, source: str, open_: list[list[Any]],
          thunk: list[dict[str, Any] | None]) -> None:
    open_.append([name, closer, lineno, False])
    if source == "thunk_metadata" and len(open_) == 1 and name == "thunk_metadata":
        thunk[0] = {"thunk_id": None, "instruction": None, "kind": None, "line": lineno}


def _flag(lineno: int, start: int, body: str, source: str, ctx: Any) -> None:
    """``--name=value`` (a flag without ``=``: value empty, as printed)."""
    if not body.startswith("--"):
        raise _Bad(start, "expected a flag ('--name=value')")
    flag = body[2:]
    n = _field_len(flag)
    if n == 0 or not (len(flag) == n or flag[n] == "="):
        raise _Bad(start + 2, "expected a flag name ('--name=value')")
    _add(ctx, lineno, source, [], flag[:n], flag[n + 1:])


def _close(start: int, closer: str, source: str, open_: list[list[Any]], thunk: list[dict[str, Any] | None],
           ctx: Any) -> None:
    if not open_:
        raise _Bad(start, f"'{closer}' closes no message")
    if open_[-1][1] != closer:
        raise _Bad(start, f"'{closer}' where '{open_[-1][1]}' closes the open message")
    name, _, line, had_row = open_.pop()
    if not had_row:
        # a message set and empty (`host_dma_sizes { }`) is a row with the value `{}`: a file of
        # empty messages (libtpu's transfer_stats.txt) is not silent (as src/options/mod.rs)
        _add(ctx, line, source, open_, name, "{}", thunk)
    if not open_ and thunk[0] is not None:
        ctx.add("thunk_metadata", thunk[0])
        thunk[0] = None


def _list(lineno: int, at: int, name: str, value: str, source: str, open_: list[list[Any]],
          ctx: Any, thunk: list[dict[str, Any] | None]) -> None:
    """``NAME: [a, b]``: a row per element (``[]`` none); a list of messages is not read."""
    if not value.endswith("]"):
        raise _Bad(at, "a list ('[…]') must close on its line")
    for item in _list_items(value[1:-1]):
        if not item or item[0] in "{<":
            raise _Bad(at, "expected a scalar in the list (messages in a list are not read)")
        _add(ctx, lineno, source, open_, name, _unquoted(item), thunk)


def _line(lineno: int, text: str, source: str, flags: bool, open_: list[list[Any]], ctx: Any,
          thunk: list[dict[str, Any] | None]) -> None:
    start = len(text) - len(text.lstrip(" \t"))
    body = text[start:]
    if body.endswith("\r"):
        body = body[:-1]
    if body == "" or body.startswith("#"):
        return
    if flags:
        _flag(lineno, start, body.rstrip(" \t"), source, ctx)
        return
    if body.rstrip(" \t") in ("}", ">"):
        _close(start, body.rstrip(" \t"), source, open_, thunk, ctx)
        return
    n = _field_len(body)
    if n == 0:
        raise _Bad(start, "expected a field name or number ('NAME: VALUE', 'NAME {', '}' or '>')")
    name, rest = body[:n], body[n:]
    rest = rest[:_comment_start(rest)].rstrip(" \t")
    closer = _opener(rest)
    if closer is not None:
        _open(lineno, name, closer, source, open_, thunk)
        return
    if rest.startswith(": "):
        value = rest[2:]
    elif rest.startswith(":"):
        value = rest[1:]
    else:
        raise _Bad(start + n, "expected ': VALUE', ' {' or ' <' after the field name")
    if value.startswith("["):
        _list(lineno, start + n, name, value, source, open_, ctx, thunk)
        return
    _add(ctx, lineno, source, open_, name, _unquoted(value), thunk)


# ------------------------------------------------------------------------------ content rule

_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-+.]+")


def _is_proto_text_line(line: str) -> bool:
    """A field then ``: `` and one token (number, name, quoted string, list) or a message
    opener; or a closer. Prose (``Note: the …``) and most YAML are not."""
    body = _trim(line[:-1] if line.endswith("\r") else line)
    if body in ("}", ">"):
        return True
    n = _field_len(body)
    if n == 0:
        return False
    rest = body[n:]
    rest = rest[:_comment_start(rest)].rstrip(" \t")
    if _opener(rest) is not None:
        return True
    if not rest.startswith(": "):
        return False
    v = rest[2:]
    return _is_quoted(v) or (v.startswith("[") and v.endswith("]")) or _TOKEN_RE.fullmatch(v) is not None


def is_proto_text_start(first: bytes, second: bytes | None) -> bool:
    """The first two lines of protobuf text (a content rule): both protobuf-text lines, or a
    one-line file that is a ``NAME: VALUE`` line (a lone ``NAME {`` is no more protobuf than an
    HLO computation header cut short)."""
    f = first.decode("utf-8", "replace")
    if second is not None:
        s = second.decode("utf-8", "replace")
        # `module {` then `}` is an empty MLIR module as much as an empty message: a first
        # message must hold a field
        closer = _trim(s[:-1] if s.endswith("\r") else s) in ("}", ">")
        return _is_proto_text_line(f) and _is_proto_text_line(s) and not (_is_opener_line(f) and closer)
    return _is_proto_text_line(f) and not _is_opener_line(f) and _trim(f) not in ("}", ">")


def _is_opener_line(line: str) -> bool:
    """``NAME {`` / ``NAME <`` alone on a line."""
    t = _trim(line[:-1] if line.endswith("\r") else line)
    n = _field_len(t)
    return n > 0 and _opener(t[n:]) is not None
