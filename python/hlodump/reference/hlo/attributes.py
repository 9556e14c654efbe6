"""The generic ``KEY=VALUE`` attribute rule (FORMATS.md §3.8.1), ``metadata={…}`` (§3.9) and the
integers in them (mirrors ``src/hlo/attributes.rs``)."""

from __future__ import annotations

import re

from .rules import METADATA_KEYS

from .scan import (
    ScanError,
    _KEY_EQ_RE,
    _OPEN,
    _match_close,
    _structure,
    _skip_string,
    _strip_comments,
)


# ----------------------------------------------------------------------------- attributes


def split_attributes(text: str) -> list[tuple[str, str]]:
    """Split an attribute list ``k1=v1, k2=v2, …`` per FORMATS.md §3.8.1.

    A value ends right before a ", " at depth 0 (()[]{} counted together, strings and /*…*/
    comments skipped) that is followed by ``KEY=``, or at the end of the text. So the generic
    ``calls=%a, %b`` form keeps ``%a, %b`` as one value. Returns (key, raw value) pairs in
    printed order. Raises ScanError for unbalanced text or an item without ``KEY=``.
    """
    return [(k, text[a:b]) for k, a, b in _attribute_spans(text)]


def _attribute_spans(text: str) -> list[tuple[str, int, int]]:
    """``split_attributes`` as (key, value start, value end) in ``text``."""
    out: list[tuple[str, int, int]] = []
    n = len(text)
    if n == 0:
        return out
    pos = 0
    while True:
        m = _KEY_EQ_RE.match(text, pos)
        if m is None:
            raise ScanError(f"expected KEY= at {pos}")
        key = text[pos:m.end() - 1]
        vstart = m.end()
        if vstart >= n or text[vstart] in " \t,":
            raise ScanError("irregular text")  # empty value / blank after '=': general grammar
        depth = 0
        end = n
        for i, c, depth in _structure(text, vstart, _ATTR_SPECIAL_RE):
            if c == "/":
                if text.startswith("//", i):
                    raise ScanError("irregular text")
            elif c == "," and depth == 0:
                if i > 0 and text[i - 1] in " \t":
                    raise ScanError("irregular text")
                if text.startswith(", ", i) and _KEY_EQ_RE.match(text, i + 2):
                    end = i
                    break
                if _KEY_EQ_RE.match(text, _skip_blanks(text, i + 1)):
                    raise ScanError("irregular text")
        if depth != 0:
            raise ScanError("unbalanced brackets in attribute value")
        out.append((key, vstart, end))
        if end >= n:
            return out
        pos = end + 2


_ATTR_SPECIAL_RE = re.compile(r'[()\[\]{}"/,]')


def _skip_blanks(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _attr_dict(pairs: list[tuple[str, str]]) -> dict[str, str]:
    d: dict[str, str] = {}
    for k, v in pairs:
        d.setdefault(k, v)
    return d


_MD_ITEM_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.\-]*)=")


def parse_metadata(value: str) -> dict[str, str]:
    """``{op_name="…" source_line=3 …}`` → {key: raw value} (space-separated items, §3.9)."""
    return {k: raw for k, (_, raw) in _metadata_spans(value).items()}


def _metadata_spans(value: str, unknown: list | None = None) -> dict[str, tuple[int, str]]:
    """``parse_metadata`` with the offset of each raw value in ``value``; ``unknown`` gets
    (key, key start, value end) of each item whose key XLA's parser does not allow."""
    out: dict[str, tuple[int, str]] = {}
    v = value.strip()
    base = len(value) - len(value.lstrip())
    if v.startswith("{") and v.endswith("}"):
        v = v[1:-1]
        base += 1
    pos = 0
    n = len(v)
    while pos < n:
        m = _MD_ITEM_RE.match(v, pos)
        if m is None:
            if v[pos:].strip() == "":
                break
            raise ScanError("bad metadata item")
        key = m.group(1)
        i = m.end()
        if i < n and v[i] == '"':
            j = _skip_string(v, i)
        elif i < n and v[i] in _OPEN:
            j = _match_close(v, i)
        else:
            j = i
            while j < n and v[j] != " ":
                j += 1
        out.setdefault(key, (base + i, v[i:j]))
        if unknown is not None and key not in METADATA_KEYS:
            unknown.append((key, base + m.start(1), base + j))
        pos = j
    return out


I64_MAX = 2**63 - 1
#: The int32 columns' most (metadata ``source_line`` / ``stack_frame_id``, FileLocations line
#: and column numbers: issue 26, output size).
I32_MAX = 2**31 - 1
_ASCII_INT_RE = re.compile(r"-?[0-9]+")


class _OutOfRange(Exception):
    pass


def _i64(text: str, signed: bool = True, limit: int = I64_MAX) -> int | None:
    """An HLO number by ASCII byte rules: ``-?[0-9]+`` (``[0-9]+`` unless ``signed``), leading
    zeros allowed. None when ``text`` is not such a number; raises _OutOfRange when it is one
    that does not fit int64 (``limit``: I32_MAX for int32; never converts long digit strings
    whole: Python's int() refuses > 4300 digits)."""
    if _ASCII_INT_RE.fullmatch(text) is None or (not signed and text.startswith("-")):
        return None
    neg = text.startswith("-")
    d = text[1:] if neg else text
    d = d.lstrip("0") or "0"
    if len(d) > 19:
        raise _OutOfRange
    v = -int(d) if neg else int(d)
    if not -limit - 1 <= v <= limit:
        raise _OutOfRange
    return v


def _name_list(value: str) -> list[str]:
    """``%a`` / ``{%a, %b}`` / ``%a, %b`` → ["a", "b"]."""
    v = _strip_comments(value).strip()
    if v.startswith("{") and v.endswith("}"):
        v = v[1:-1]
    names = []
    for part in v.split(","):
        p = part.strip()
        if p.startswith("%"):
            p = p[1:]
        if p:
            names.append(p)
    return names


#: Every instruction attribute key XLA's HLO text uses (Rust: ``attributes::known_attribute``,
#: where the sources are cited); another key is a newer XLA's: a ``notes`` row.
KNOWN_ATTRIBUTES = frozenset({
    "algorithm",
    "api_version",
    "async_execution_thread",
    "async_group_id",
    "async_wrapped_opcode",
    "backend_config",
    "batch_group_count",
    "block_scaling_config",
    "body",
    "branch_computations",
    "called_computations",
    "calls",
    "channel_id",
    "collapsed_slice_dims",
    "condition",
    "constrain_layout",
    "control-predecessors",
    "conv_kind",
    "convolution_kind",
    "cross_program_prefetch_index",
    "custom_call_has_side_effect",
    "custom_call_schedule",
    "custom_call_target",
    "debug_attributes",
    "delta",
    "device_ids",
    "dim_labels",
    "dimensions",
    "direction",
    "distribution",
    "domain",
    "dynamic_slice_sizes",
    "epsilon",
    "exponent_bits",
    "false_computation",
    "feature_group_count",
    "feature_index",
    "fft_length",
    "fft_type",
    "frontend_attributes",
    "has_dynamic_root",
    "index",
    "index_vector_dim",
    "indices_are_sorted",
    "infeed_config",
    "inferred_dimension",
    "input_batching_dims",
    "inserted_window_dims",
    "iota_dimension",
    "is_associative",
    "is_composite",
    "is_host_transfer",
    "is_reverse",
    "is_stable",
    "k",
    "kind",
    "largest",
    "left_side",
    "lhs_batch_dims",
    "lhs_contracting_dims",
    "lhs_ragged_dims",
    "literal",
    "lower",
    "mantissa_bits",
    "metadata",
    "mode",
    "num_carries",
    "offset_dims",
    "operand_batching_dims",
    "operand_layout_constraints",
    "operand_precision",
    "order",
    "origin",
    "outfeed_config",
    "outfeed_shape",
    "output_to_operand_aliasing",
    "padding",
    "padding_type",
    "parameter_replication",
    "replica_groups",
    "result_accuracy",
    "rhs_batch_dims",
    "rhs_contracting_dims",
    "rhs_group_dims",
    "scatter",
    "scatter_dims_to_operand_dims",
    "scatter_indices_batching_dims",
    "schedule",
    "select",
    "sharding",
    "shifts",
    "shuffle_mode",
    "slice",
    "slice_sizes",
    "source_target_pairs",
    "sparsity_config",
    "start_index_map",
    "start_indices_batching_dims",
    "statistics",
    "to_apply",
    "transpose_a",
    "true_computation",
    "type",
    "unique_indices",
    "unit_diagonal",
    "update_window_dims",
    "use_global_device_ids",
    "window",
})
