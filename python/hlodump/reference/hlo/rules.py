"""The HLO text rules XLA's parser enforces that no single field shows (issue 50; mirrors
``src/hlo/rules.rs``): known opcodes, element types and metadata keys, the grammar of a result
shape. The per-computation names and the module's computations are checked in ``module.py``."""

from __future__ import annotations

import re

#: every opcode ``HloOpcodeString`` prints (jaxlib 0.10.2), and ``tuple-select`` (older dumps)
OPCODES = frozenset("""
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start all-reduce
all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start async-update atan2
atanh batch-norm-grad batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call
cbrt ceil cholesky clamp collective-broadcast collective-permute collective-permute-done
collective-permute-start compare complex concatenate conditional constant convert convolution copy
copy-done copy-start cosh cosine count-leading-zeros custom-call divide domain dot dynamic-reshape
dynamic-slice dynamic-update-slice erf exponential exponential-minus-one fft floor fusion gather
get-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum
minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt power
ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision reduce-scatter reduce-window
remainder replica-id reshape reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz
round-nearest-even rsqrt scaled-dot scan scatter select select-and-scatter send send-done
set-dimension-size shift-left shift-right-arithmetic shift-right-logical sign sine sinh slice sort sqrt
stochastic-convert subtract tan tanh topk transpose triangular-solve tuple tuple-select while xor
""".split())

#: element types XLA's lexer reads (``primitive_util::IsPrimitiveTypeName``)
ELEMENT_TYPES = frozenset("""
pred s1 s2 s4 s8 s16 s32 s64 u1 u2 u4 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128 f8e5m2 f8e4m3 f8e4m3fn
f8e4m3b11fnuz f8e5m2fnuz f8e4m3fnuz f8e3m4 f4e2m1fn f8e8m0fnu token opaque
""".split())

#: metadata keys XLA's parser allows (``ParseMetadata``), and ``preserve_layout`` (2022–2023)
METADATA_KEYS = frozenset("""
deduplicated_name metadata_payload op_name op_type profile_type scheduling_name source_column
source_end_column source_end_line source_file source_line stack_frame_id preserve_layout
""".split())


def known_opcode(op: str) -> bool:
    """An opcode XLA knows, or an async form of one (``custom-call-start``)."""
    if op in OPCODES:
        return True
    for suffix in ("-start", "-update", "-done"):
        if op.endswith(suffix):
            return op[:-len(suffix)] in OPCODES
    return False


class ShapeError(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(msg)
        self.pos, self.msg = pos, msg


_TYPE_CHARS = re.compile(r"[A-Za-z0-9_]*")
_DIGITS = re.compile(r"[0-9]*")


def _skip(s: str, i: int) -> int:
    while True:
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        if s.startswith("/*", i):
            j = s.find("*/", i + 2)
            if j < 0:
                return len(s)
            i = j + 2
        else:
            return i


def _what(s: str, i: int) -> str:
    if i >= len(s):
        return "the end of the shape"
    c = s[i]
    return f"'{c}'" if "\x21" <= c < "\x7f" else f"byte 0x{ord(c):02x}" if ord(c) < 256 else f"'{c}'"


def _expected(s: str, i: int, what: str) -> ShapeError:
    return ShapeError(i, f"malformed shape: expected {what}, found {_what(s, i)}")


def check_shape(s: str) -> tuple[int, int] | None:
    """Check a result shape; the first element type XLA does not know (start, end), or None.
    Raises ShapeError(position, message). Rust: ``rules.rs`` ``check_shape``."""
    unknown: list[tuple[int, int]] = []
    i = _skip(s, _shape_at(s, _skip(s, 0), unknown, 0))
    if i < len(s):
        raise ShapeError(i, f"malformed shape: unexpected {_what(s, i)} after the shape")
    return unknown[0] if unknown else None


#: tuples and buffers nested deeper are an error (the walk recurses on them)
MAX_NESTING = 100


def _shape_at(s: str, i: int, unknown: list[tuple[int, int]], depth: int) -> int:
    if depth >= MAX_NESTING:
        raise ShapeError(i, f"malformed shape: tuples nested more than {MAX_NESTING} deep")
    if s[i:i + 1] == "(":
        k = _skip(s, i + 1)
        if s[k:k + 1] == ")":
            return k + 1
        while True:
            k = _skip(s, _shape_at(s, k, unknown, depth + 1))
            c = s[k:k + 1]
            if c == ",":
                k = _skip(s, k + 1)
            elif c == ")":
                return k + 1
            else:
                raise _expected(s, k, "',' or ')' in a tuple shape")
    te = _TYPE_CHARS.match(s, i).end()
    if s[i:te] == "b" and s[te:te + 1] == "(":
        k = _skip(s, _shape_at(s, _skip(s, te + 1), unknown, depth + 1))
        if s[k:k + 1] == ")":
            return k + 1
        raise _expected(s, k, "')' after a buffer's shape")
    ty = s[i:te]
    if not ty:
        raise _expected(s, i, "an element type")
    if not re.fullmatch(r"[a-z][a-z0-9]*", ty):
        raise ShapeError(i, f"malformed shape: '{ty}' is not an element type ([a-z][a-z0-9]*)")
    if not unknown and ty not in ELEMENT_TYPES:
        unknown.append((i, te))
    k = _skip(s, te)
    if s[k:k + 1] != "[":
        raise _expected(s, k, "'[' after the element type")
    k = _skip(s, k + 1)
    if s[k:k + 1] == "]":
        k += 1
    else:
        while True:
            if s[k:k + 1] == "?":
                k += 1
            else:
                if s.startswith("<=", k):
                    k = _skip(s, k + 2)
                e = _DIGITS.match(s, k).end()
                if e == k:
                    raise _expected(s, k, "a dimension size (N, <=N or ?)")
                k = e
            k = _skip(s, k)
            c = s[k:k + 1]
            if c == ",":
                k = _skip(s, k + 1)
            elif c == "]":
                k += 1
                break
            else:
                raise _expected(s, k, "',' or ']' after a dimension size")
    lb = _skip(s, k)
    if s[lb:lb + 1] != "{":
        return k
    k = _skip(s, lb + 1)
    if s[k:k + 1] not in ("}", ":"):
        while True:
            e = _DIGITS.match(s, k).end()
            if e == k:
                raise _expected(s, k, "a dimension number in the layout")
            k = _skip(s, e)
            c = s[k:k + 1]
            if c == ",":
                k = _skip(s, k + 1)
            elif c in ("}", ":"):
                break
            else:
                raise _expected(s, k, "',', ':' or '}' in the layout")
    depth = 0
    while True:
        if k >= len(s):
            raise _expected(s, k, "'}' to end the layout")
        c = s[k]
        if c in "([{":
            depth += 1
        elif c in ")]":
            if depth == 0:
                raise _expected(s, k, "'}' to end the layout")
            depth -= 1
        elif c == "}":
            if depth == 0:
                return k + 1
            depth -= 1
        elif s.startswith("/*", k):
            k = _skip(s, k)
            continue
        k += 1
