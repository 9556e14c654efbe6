"""The protobuf wire format, decoded by a schema of our own (the reference of ``src/proto/wire.rs``).

Only the fields we use are declared (``SCHEMAS``, field numbers from XLA's ``xla/service/hlo.proto``
and ``xla/xla_data.proto``); every other field is skipped and counted (``Decoded.unknown``), never
an error. A damaged message is a ``ProtoError`` naming the byte offset (from the start of the
file) where decoding stopped: a truncated varint or field, a wire type the schema does not allow
for the field, a length past the end of its enclosing message, nesting deeper than ``MAX_DEPTH``.
Lengths are checked against the bytes left before anything is allocated, so a length bomb costs
nothing.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["ProtoError", "decode", "SCHEMAS", "MAX_DEPTH", "varint_at"]

# Deeper nesting than any HLO proto has (tuple shapes nest a few levels): beyond it, an error
# (a bomb of nested lengths would otherwise recurse once a byte).
MAX_DEPTH = 100

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


class ProtoError(ValueError):
    def __init__(self, offset: int, message: str):
        super().__init__(f"at byte {offset}: {message}")
        self.offset = offset
        self.message = message


# Field kinds: "u64" (varint, as unsigned), "i64" (varint, two's complement), "bool", "str"
# (UTF-8: invalid UTF-8 is an error), "name" (a string the text prints bare, not quoted: a name,
# an opcode, an enum word; `[A-Za-z0-9_.-]+` or an error — a string is a value, never syntax),
# "bytes", "f32", "f64", "msg:<Name>". A leading "*" marks a repeated field (packed or not, as
# the wire says); a singular field given twice is an error (XLA writes each once).
SCHEMAS: dict[str, dict[int, tuple[str, str]]] = {
    # xla/service/hlo.proto
    "HloProto": {1: ("hlo_module", "msg:HloModuleProto"), 3: ("buffer_assignment", "msg:BufferAssignmentProto")},
    "HloModuleProto": {
        1: ("name", "name"), 2: ("entry_computation_name", "name"), 6: ("entry_computation_id", "i64"),
        3: ("computations", "*msg:HloComputationProto"), 4: ("host_program_shape", "msg:ProgramShapeProto"),
        5: ("id", "i64"), 7: ("schedule", "msg:HloScheduleProto"),
        8: ("input_output_alias", "msg:HloInputOutputAliasProto"),
        17: ("stack_frame_index", "msg:StackFrameIndexProto"),
        19: ("frontend_attributes", "msg:FrontendAttributes"),
    },
    "HloComputationProto": {
        1: ("name", "name"), 2: ("instructions", "*msg:HloInstructionProto"),
        4: ("program_shape", "msg:ProgramShapeProto"), 5: ("id", "i64"), 6: ("root_id", "i64"),
        7: ("is_fusion_computation", "bool"), 8: ("execution_thread", "name"),
    },
    "HloScheduleProto": {1: ("sequences", "*msg:ScheduleEntry")},
    "ScheduleEntry": {1: ("key", "i64"), 2: ("value", "msg:InstructionSequence")},
    "InstructionSequence": {1: ("instruction_ids", "*i64")},
    "HloInputOutputAliasProto": {1: ("entries", "*msg:AliasEntryProto")},
    "AliasEntryProto": {1: ("output_shape_index", "*i64"), 2: ("parameter_number", "i64"),
                        3: ("parameter_shape_index", "*i64"), 4: ("kind", "i64")},
    "StackFrameIndexProto": {1: ("file_names", "*str"), 2: ("function_names", "*str"),
                             3: ("file_locations", "*msg:FileLocation"), 4: ("stack_frames", "*msg:StackFrame")},
    "FileLocation": {1: ("file_name_id", "i64"), 2: ("function_name_id", "i64"), 3: ("line", "i64"),
                     4: ("column", "i64"), 5: ("end_line", "i64"), 6: ("end_column", "i64")},
    "StackFrame": {1: ("file_location_id", "i64"), 2: ("parent_frame_id", "i64")},
    "FrontendAttributes": {1: ("map", "*msg:StringEntry")},
    "StringEntry": {1: ("key", "name"), 2: ("value", "str")},
    "HloInstructionProto": {
        1: ("name", "name"), 2: ("opcode", "name"), 3: ("shape", "msg:ShapeProto"),
        7: ("metadata", "msg:OpMetadata"), 8: ("literal", "msg:LiteralProto"),
        9: ("parameter_number", "i64"), 11: ("fusion_kind", "name"), 13: ("tuple_index", "i64"),
        14: ("dimensions", "*i64"), 15: ("window", "msg:Window"),
        16: ("convolution_dimension_numbers", "msg:ConvolutionDimensionNumbers"),
        50: ("feature_group_count", "i64"), 58: ("batch_group_count", "i64"),
        17: ("slice_dimensions", "*msg:SliceDimensions"), 20: ("dynamic_slice_sizes", "*i64"),
        21: ("padding_config", "msg:PaddingConfig"), 26: ("channel_id", "i64"),
        28: ("custom_call_target", "str"), 30: ("dot_dimension_numbers", "msg:DotDimensionNumbers"),
        63: ("comparison_direction", "name"), 72: ("comparison_type", "name"),
        # newer than the hlo.proto cited: the comparison's order ("TOTAL"/"PARTIAL"), seen in
        # jax 0.11–0.12 dumps next to their text twins' `order=TOTAL`
        102: ("comparison_order", "name"),
        33: ("gather_dimension_numbers", "msg:GatherDimensionNumbers"), 34: ("gather_slice_sizes", "*i64"),
        35: ("id", "i64"), 36: ("operand_ids", "*i64"), 37: ("control_predecessor_ids", "*i64"),
        38: ("called_computation_ids", "*i64"), 40: ("sharding", "msg:OpSharding"),
        43: ("backend_config", "bytes"), 60: ("is_stable", "bool"), 67: ("indices_are_sorted", "bool"),
        69: ("unique_indices", "bool"), 68: ("frontend_attributes", "msg:FrontendAttributes"),
        48: ("scatter_dimension_numbers", "msg:ScatterDimensionNumbers"),
        51: ("precision_config", "msg:PrecisionConfig"), 65: ("custom_call_has_side_effect", "bool"),
        77: ("custom_call_api_version", "i64"), 79: ("async_execution_thread", "str"),
        49: ("replica_groups", "*msg:ReplicaGroup"), 71: ("use_global_device_ids", "bool"),
        70: ("rng_algorithm", "i64"), 23: ("distribution", "i64"),
        91: ("result_accuracy", "msg:ResultAccuracy"), 74: ("output_operand_aliasing", "*msg:OutputOperandAliasing"),
        81: ("k", "i64"), 85: ("largest", "bool"),
        18: ("exponent_bits", "i64"), 19: ("mantissa_bits", "i64"), 31: ("fft_type", "i64"),
        32: ("fft_length", "*i64"), 56: ("constrain_layout", "bool"),
        57: ("operand_shapes_with_layout", "*msg:ShapeProto"), 76: ("custom_call_schedule", "i64"),
    },
    "SliceDimensions": {1: ("start", "i64"), 2: ("limit", "i64"), 3: ("stride", "i64")},
    "OutputOperandAliasing": {1: ("output_shape_index", "*i64"), 2: ("operand_index", "i64"),
                              3: ("operand_shape_index", "*i64")},
    "ResultAccuracy": {1: ("mode", "i64")},
    # xla/xla_data.proto
    "ShapeProto": {2: ("element_type", "i64"), 3: ("dimensions", "*i64"),
                   6: ("is_dynamic_dimension", "*bool"), 4: ("tuple_shapes", "*msg:ShapeProto"),
                   5: ("layout", "msg:LayoutProto")},
    "LayoutProto": {1: ("minor_to_major", "*i64"), 6: ("tiles", "*msg:TileProto"),
                    16: ("tail_padding_alignment_in_elements", "i64"), 7: ("element_size_in_bits", "i64"),
                    8: ("memory_space", "i64"), 11: ("index_primitive_type", "i64"),
                    12: ("pointer_primitive_type", "i64"),
                    15: ("dynamic_shape_metadata_prefix_bytes", "i64"),
                    17: ("split_configs", "*msg:SplitConfigProto"), 9: ("dim_level_types", "*i64")},
    "TileProto": {1: ("dimensions", "*i64")},
    "SplitConfigProto": {1: ("dimension", "i64"), 2: ("split_indices", "*i64")},
    "ProgramShapeProto": {1: ("parameters", "*msg:ShapeProto"), 2: ("result", "msg:ShapeProto"),
                          3: ("parameter_names", "*str")},
    "OpMetadata": {1: ("op_type", "str"), 2: ("op_name", "str"), 3: ("source_file", "str"),
                   4: ("source_line", "i64"), 17: ("source_end_line", "i64"), 18: ("source_column", "i64"),
                   19: ("source_end_column", "i64"), 12: ("deduplicated_name", "str"),
                   15: ("stack_frame_id", "i64"), 16: ("scheduling_name", "str"),
                   8: ("size_of_generated_code_in_bytes", "i64"),
                   9: ("size_of_memory_working_set_in_bytes", "i64")},
    "LiteralProto": {1: ("shape", "msg:ShapeProto"), 2: ("preds", "*bool"), 15: ("s8s", "bytes"),
                     3: ("u8s", "bytes"), 4: ("s32s", "*i32"), 5: ("s64s", "*i64"), 6: ("u32s", "*u64"),
                     7: ("u64s", "*u64"), 8: ("f32s", "*f32"), 9: ("f64s", "*f64"),
                     10: ("tuple_literals", "*msg:LiteralProto"), 11: ("f16s", "bytes"),
                     12: ("c64s", "*f32"), 18: ("c128s", "*f64"),
                     13: ("bf16s", "bytes"), 16: ("u16s", "bytes"), 17: ("s16s", "bytes")},
    "Window": {1: ("dimensions", "*msg:WindowDimension")},
    "WindowDimension": {1: ("size", "i64"), 2: ("stride", "i64"), 3: ("padding_low", "i64"),
                        4: ("padding_high", "i64"), 5: ("window_dilation", "i64"),
                        6: ("base_dilation", "i64"), 7: ("window_reversal", "bool")},
    "PaddingConfig": {1: ("dimensions", "*msg:PaddingConfigDimension")},
    "PaddingConfigDimension": {1: ("edge_padding_low", "i64"), 2: ("edge_padding_high", "i64"),
                               3: ("interior_padding", "i64")},
    "DotDimensionNumbers": {1: ("lhs_contracting_dimensions", "*i64"), 2: ("rhs_contracting_dimensions", "*i64"),
                            3: ("lhs_batch_dimensions", "*i64"), 4: ("rhs_batch_dimensions", "*i64")},
    "ConvolutionDimensionNumbers": {7: ("input_batch_dimension", "i64"), 8: ("input_feature_dimension", "i64"),
                                    11: ("input_spatial_dimensions", "*i64"),
                                    3: ("kernel_input_feature_dimension", "i64"),
                                    4: ("kernel_output_feature_dimension", "i64"),
                                    6: ("kernel_spatial_dimensions", "*i64"),
                                    9: ("output_batch_dimension", "i64"),
                                    10: ("output_feature_dimension", "i64"),
                                    12: ("output_spatial_dimensions", "*i64")},
    "GatherDimensionNumbers": {1: ("offset_dims", "*i64"), 2: ("collapsed_slice_dims", "*i64"),
                               3: ("start_index_map", "*i64"), 4: ("index_vector_dim", "i64"),
                               5: ("operand_batching_dims", "*i64"), 6: ("start_indices_batching_dims", "*i64")},
    "ScatterDimensionNumbers": {1: ("update_window_dims", "*i64"), 2: ("inserted_window_dims", "*i64"),
                                3: ("scatter_dims_to_operand_dims", "*i64"), 4: ("index_vector_dim", "i64"),
                                5: ("input_batching_dims", "*i64"), 6: ("scatter_indices_batching_dims", "*i64")},
    "PrecisionConfig": {1: ("operand_precision", "*i64"), 2: ("algorithm", "i64")},
    "ReplicaGroup": {1: ("replica_ids", "*i64")},
    "OpSharding": {1: ("type", "i64"), 3: ("tile_assignment_dimensions", "*i64"),
                   4: ("tile_assignment_devices", "*i64"), 5: ("tuple_shardings", "*msg:OpSharding"),
                   6: ("replicate_on_last_tile_dim", "bool"), 8: ("last_tile_dims", "*i64"),
                   9: ("iota_reshape_dims", "*i64"), 10: ("iota_transpose_perm", "*i64")},
    # buffer assignment (hlo.proto)
    "BufferAssignmentProto": {1: ("logical_buffers", "*msg:LogicalBufferProto"),
                              2: ("buffer_aliases", "*msg:BufferAlias"),
                              3: ("buffer_allocations", "*msg:BufferAllocationProto"),
                              4: ("heap_simulator_traces", "*msg:HeapSimulatorTrace")},
    "BufferAlias": {1: ("source_buffer_id", "i64"), 2: ("location", "msg:Location")},
    "LogicalBufferProto": {1: ("id", "i64"), 2: ("size", "i64"), 3: ("defined_at", "msg:Location"),
                           4: ("color", "i64")},
    "Location": {2: ("instruction_name", "str"), 4: ("instruction_id", "i64"), 3: ("shape_index", "*i64")},
    "BufferAllocationProto": {1: ("index", "i64"), 2: ("size", "i64"), 3: ("is_thread_local", "bool"),
                              11: ("is_tuple", "bool"), 5: ("is_entry_computation_parameter", "bool"),
                              12: ("is_constant", "bool"), 6: ("parameter_number", "i64"),
                              10: ("parameter_shape_index", "*i64"), 7: ("maybe_live_out", "bool"),
                              8: ("color", "i64"), 9: ("assigned", "*msg:Assigned")},
    "Assigned": {1: ("logical_buffer_id", "i64"), 2: ("offset", "i64"), 3: ("size", "i64")},
    "HeapSimulatorTrace": {1: ("events", "*msg:HeapEvent"), 2: ("whole_module_simulation", "bool"),
                           3: ("buffer_allocation_index", "i64")},
    # the memory-usage report (`*-memory-usage-report.pb`): field names as its protobuf-text form
    # prints them (FORMATS.md §2.8.3); field 6 holds the entry's printed offset table
    "MemoryUsageReport": {1: ("memory_space_allocation_entries", "*msg:MemorySpaceAllocationEntries")},
    "MemorySpaceAllocationEntries": {1: ("total_bytes", "i64"), 2: ("memory_space_color", "i64"),
                                     3: ("allocation_entries", "*msg:AllocationEntry")},
    "AllocationEntry": {1: ("index", "i64"), 2: ("size", "i64"), 3: ("cumulative_size", "i64"),
                        4: ("cumulative_fraction", "f64"), 5: ("defining_positions", "*str"),
                        6: ("table", "str")},
    "HeapEvent": {1: ("kind", "i64"), 2: ("buffer_id", "i64"), 3: ("computation_name", "str"),
                  4: ("instruction_name", "str"), 5: ("share_with_canonical_id", "i64")},
}

# Fields XLA writes that we do not read: skipped (their wire format checked), not "unknown".
# Every other number of XLA's `hlo.proto` for these messages, and the numbers newer than it seen
# in the dumps of jax 0.10–0.12 (tests/data: HloInstructionProto 92, 93, 98, 101;
# BufferAssignmentProto 5; BufferAllocationProto 13; Assigned 4; OpSharding 14). A number not here and not in SCHEMAS is
# unknown: a `notes` row, an error with strict=True (a newer XLA, or a damaged field number).
SKIPPED: dict[str, tuple[int, ...]] = {
    "HloInstructionProto": (22, 24, 25, 27, 29, 45, 47, 52, 54, 55, 59, 61, 62, 66, 73, 75, 80, 82,
                            86, 87, 88, 89, 90, 92, 93, 98, 101),
    "HloModuleProto": (10, 11, 12, 13, 14, 15, 16, 18),
    "BufferAssignmentProto": (5,),
    "BufferAllocationProto": (13,),
    "Assigned": (4,),
    "OpSharding": (2, 7, 11, 12, 13, 14),
}

_WIRE_OF = {"u64": (VARINT,), "i64": (VARINT,), "i32": (VARINT,), "bool": (VARINT,), "str": (LEN,),
            "name": (LEN,), "bytes": (LEN,), "f32": (I32,), "f64": (I64,)}

_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class Decoded(dict):
    """A message: field name → value (absent fields are absent); ``at``: the byte offset of its
    first byte in the file (where a structure error about it points)."""

    at: int = 0


class Listing(dict):
    """The fields skipped as unknown: (message name, field number) → count; ``first_at``: the byte
    offset of the first one's tag (where a `notes` row, or a strict error, points)."""

    first_at: int | None = None


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise ProtoError(start, "truncated varint")
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            raise ProtoError(start, "varint longer than 64 bits")
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtoError(start, "varint longer than 10 bytes")


def varint_at(b: bytes, i: int) -> tuple[int, int] | None:
    """The varint at ``b[i]`` and the offset after it, or None (cut short, or more than 10 bytes):
    the one varint reader of the content rules (``hlo_proto``, ``memory_report_proto``), which
    look at a file's first bytes and never fail."""
    v = 0
    for k in range(10):
        if i + k >= len(b):
            return None
        c = b[i + k]
        v |= (c & 0x7F) << (7 * k)
        if c < 0x80:
            return v, i + k + 1
    return None


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(kind: str, v: int) -> Any:
    if kind == "bool":
        return v != 0
    if kind == "i64":
        return _signed(v)
    if kind == "i32":
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v
    return v


class _Counter:
    def __init__(self) -> None:
        self.unknown = 0
        self.listing = Listing()


def decode(buf: bytes, message: str, start: int = 0, end: int | None = None) -> tuple[Decoded, int]:
    """Decode ``buf[start:end]`` as ``message``; returns the message and the number of fields
    skipped (unknown to our schema) in it and all its sub-messages."""
    out, listing = decode_listing(buf, message, start, end)
    return out, sum(listing.values())


def decode_listing(buf: bytes, message: str, start: int = 0, end: int | None = None
                   ) -> tuple[Decoded, Listing]:
    """``decode``, with the fields skipped listed: (message name, field number) → count."""
    c = _Counter()
    out = _decode(memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf, message,
                  start, len(buf) if end is None else end, 0, c)
    return out, c.listing


def unknown_text(listing: dict[tuple[str, int], int]) -> str:
    """The ``notes`` text of the skipped fields: ``Message.N×count`` by message name and number,
    at most 20 of them, then ``…`` (Rust: ``wire::unknown_text``)."""
    items = sorted(listing.items())
    parts = [f"{m}.{n}×{c}" for (m, n), c in items[:20]]
    if len(items) > 20:
        parts.append("…")
    return " ".join(parts)


def unknown_note(listing: Listing, ctx) -> None:
    """One ``notes`` row for the unknown field numbers (neither read nor in ``SKIPPED``: a newer
    XLA's, or a damaged number), at line 1, column = the first one's byte offset + 1; with
    strict=True an error there, like every other note (``FileContext.note``)."""
    if not listing:
        return
    n = sum(listing.values())
    ctx.note(1, "", (listing.first_at or 0) + 1, "unknown_proto_fields", "", unknown_text(listing),
             f"{n} fields of numbers this reader does not know were skipped (a newer XLA's, or a damaged proto)")


def _decode(buf: bytes, message: str, pos: int, end: int, depth: int, c: _Counter) -> Decoded:
    if depth > MAX_DEPTH:
        raise ProtoError(pos, f"messages nested deeper than {MAX_DEPTH}")
    schema = SCHEMAS[message]
    skipped = SKIPPED.get(message, ())
    out = Decoded()
    out.at = pos
    while pos < end:
        tag_at = pos
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ProtoError(tag_at, "field number 0")
        field = schema.get(number)
        if field is None:
            pos = _skip(buf, pos, end, wire, tag_at, number)
            if number not in skipped:
                c.unknown += 1
                c.listing[(message, number)] = c.listing.get((message, number), 0) + 1
                if c.listing.first_at is None:
                    c.listing.first_at = tag_at
            continue
        name, kind = field
        repeated = kind.startswith("*")
        kind = kind.lstrip("*")
        if not repeated and name in out:
            raise ProtoError(tag_at, f"field {number} ({message}.{name}): a second value of a singular field")
        if kind.startswith("msg:"):
            if wire != LEN:
                raise ProtoError(tag_at, f"field {number} ({message}.{name}): wire type {wire}, expected 2 (a message)")
            n, pos = _length(buf, pos, end)
            value = _decode(buf, kind[4:], pos, pos + n, depth + 1, c)
            pos += n
            if repeated:
                out.setdefault(name, []).append(value)
            else:
                out[name] = value
            continue
        allowed = _WIRE_OF[kind]
        if repeated and wire == LEN and kind not in ("str", "name", "bytes"):
            n, pos = _length(buf, pos, end)
            vals = out.setdefault(name, [])
            stop = pos + n
            if kind in ("f32", "f64"):
                size = 4 if kind == "f32" else 8
                if n % size:
                    raise ProtoError(tag_at, f"field {number} ({message}.{name}): packed length {n} not a multiple of {size}")
                vals.extend(struct.unpack_from(f"<{n // size}{'f' if size == 4 else 'd'}", buf, pos))
                pos = stop
            else:
                while pos < stop:
                    v, pos = _varint(buf, pos, stop)
                    vals.append(_scalar(kind, v))
            continue
        if wire not in allowed:
            raise ProtoError(tag_at, f"field {number} ({message}.{name}): wire type {wire}, expected {allowed[0]}")
        if wire == VARINT:
            v, pos = _varint(buf, pos, end)
            value = _scalar(kind, v)
        elif wire == LEN:
            n, pos = _length(buf, pos, end)
            raw = bytes(buf[pos:pos + n])
            value = _string(raw, pos, kind, f"field {number} ({message}.{name})")
            pos += n
        elif wire == I32:
            if end - pos < 4:
                raise ProtoError(pos, "truncated fixed32")
            value = struct.unpack_from("<f", buf, pos)[0]
            pos += 4
        else:
            if end - pos < 8:
                raise ProtoError(pos, "truncated fixed64")
            value = struct.unpack_from("<d", buf, pos)[0]
            pos += 8
        if repeated:
            out.setdefault(name, []).append(value)
        else:
            out[name] = value
    return out


def _string(raw: bytes, at: int, kind: str, what: str) -> Any:
    """A length-delimited value of kind str, name or bytes, whose first byte is at ``at``."""
    if kind == "bytes":
        return raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtoError(at + e.start, f"{what}: invalid UTF-8") from None
    if kind == "name":
        if not raw:
            raise ProtoError(at, f"{what}: an empty name")
        bad = next((k for k, b in enumerate(raw) if b not in _NAME_BYTES), None)
        if bad is not None:
            raise ProtoError(at + bad, f"{what}: byte 0x{raw[bad]:02x} in a name (expected [A-Za-z0-9_.-])")
    return text


def _length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    at = pos
    n, pos = _varint(buf, pos, end)
    if n > end - pos:
        raise ProtoError(at, f"length {n} past the end of its message ({end - pos} bytes left)")
    return n, pos


def _skip(buf: bytes, pos: int, end: int, wire: int, tag_at: int, number: int) -> int:
    if wire == VARINT:
        return _varint(buf, pos, end)[1]
    if wire == I64:
        if end - pos < 8:
            raise ProtoError(pos, "truncated fixed64")
        return pos + 8
    if wire == I32:
        if end - pos < 4:
            raise ProtoError(pos, "truncated fixed32")
        return pos + 4
    if wire == LEN:
        n, pos = _length(buf, pos, end)
        return pos + n
    # groups (3, 4) are proto2 only: XLA's protos are proto3
    raise ProtoError(tag_at, f"field {number}: wire type {wire} (groups are not proto3)")
