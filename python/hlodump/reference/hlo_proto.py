"""HLO protos (``--xla_dump_hlo_as_proto``: ``*.hlo.pb``, an ``HloProto`` or ``HloModuleProto``) as
the text XLA prints for the same module (the reference of ``src/hlo_proto/``).

The proto is decoded here (``protowire``), printed the way XLA's ``HloModule::ToString`` prints a
dump (``hlo_proto_render``: shapes with layouts, ``%`` names, operands by name, attributes,
metadata, the stack-frame index), and that text is read by the HLO text parser: so a proto gives
the rows its text twin gives, by construction, and the rules of what a column holds live in one
place. What the proto does not carry is not printed (docs/protos.md lists it): the module's
config attributes of the header (``allow_spmd_sharding_propagation_*``, …), and a
``backend_config`` is printed as stored when it is one JSON dict on one line, else quoted and
escaped (XLA's text may order its JSON keys differently). Before anything is printed the proto
is checked (``protowire``: names, UTF-8, singular fields; ``hlo_proto_structure``: what XLA
always writes, ids that must resolve): a string is a value, never syntax.

The after-optimizations ``HloProto`` also carries the buffer assignment: ``allocation_rows``,
``assignment_rows`` and ``heap_trace_rows`` give its rows, ``memory_analysis`` jax's figures.
"""

from __future__ import annotations

from typing import Any

from .hlo_proto_render import TooLong, render_module, text_budget
from .hlo_proto_structure import check as check_structure
from .hlo_proto_values import shape_str
from .protowire import ProtoError, decode_listing, unknown_note, varint_at

__all__ = ["decode_hlo", "render_module", "is_hlo_proto", "parse", "heap_trace_rows", "heap_peaks",
           "allocation_rows", "assignment_rows", "memory_analysis", "ProtoError"]


def is_hlo_proto(data: bytes) -> bool:
    """Content rule: an ``HloModuleProto`` (field 1: a name XLA would print, field 2 the entry
    computation's name if any, then field 3: a computation whose field 1 is a name) or an
    ``HloProto`` (field 1: such a module): checked on the first bytes only. A name and one more
    string (a foreign protobuf: an autotune result) is not a module."""
    return _module_at(data, 0) is not None


_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _name_field(b: bytes, i: int, tag: int = 0x0A) -> int | None:
    """``tag <len> name`` at i (a name XLA would print): the end of it, or None."""
    if i >= len(b) or b[i] != tag:
        return None
    r = varint_at(b, i + 1)
    if r is None:
        return None
    n, j = r
    if n == 0 or n > 4096 or j + n > len(b):
        return None
    name = b[j:j + n]
    if not all(c in _NAME_CHARS for c in name):
        return None
    return j + n


def _module_start(b: bytes, i: int) -> int | None:
    """The start of a module at i: its name, its entry computation's name if written, then the
    first computation's tag, length and name (``1a <len> 0a <len> NAME``); the byte after that."""
    end = _name_field(b, i)
    if end is None:
        return None
    if end < len(b) and b[end] == 0x12:
        end = _name_field(b, end, 0x12)
        if end is None:
            return None
    if end >= len(b) or b[end] != 0x1A:
        return None
    # the computation's length may run past the end of a file cut short: read, that is an error
    # at the byte where it stops
    r = varint_at(b, end + 1)
    return None if r is None else _name_field(b, r[1])


def _module_at(b: bytes, i: int) -> str | None:
    """'proto' for an HloProto, 'module' for an HloModuleProto, at b[i:] (whole file)."""
    if _module_start(b, i) is not None:
        return "module"
    if i < len(b) and b[i] == 0x0A:
        r = varint_at(b, i + 1)
        if r is not None:
            n, j = r
            # the module's length may run past the end of a file cut short: still a proto (read,
            # it is an error at the byte where it stops), not an unknown file
            if n > 0:
                end = _module_start(b, j)
                if end is not None and end <= j + n:
                    return "proto"
    return None


def decode_hlo(data: bytes) -> tuple[dict, dict | None, int]:
    """(HloModuleProto, BufferAssignmentProto or None, unknown fields skipped)."""
    m, ba, listing = decode_hlo_listing(data)
    return m, ba, sum(listing.values())


def decode_hlo_listing(data: bytes) -> tuple[dict, dict | None, dict]:
    """``decode_hlo`` with the skipped fields listed (``protowire.decode_listing``)."""
    kind = _module_at(data, 0)
    if kind == "module":
        m, listing = decode_listing(data, "HloModuleProto")
        return m, None, listing
    p, listing = decode_listing(data, "HloProto")
    if "hlo_module" not in p:
        raise ProtoError(0, "an HloProto without its module (field 1)")
    return p["hlo_module"], p.get("buffer_assignment"), listing


# ---- buffer assignment -----------------------------------------------------------------------

HEAP_KINDS = {0: "alloc", 1: "free", 2: "share_with"}


def _names(m: dict) -> dict[int, str]:
    return {i.get("id", 0): i.get("name", "") for c in m.get("computations", []) for i in c.get("instructions", [])}


def heap_trace_rows(ba: dict) -> list[dict[str, Any]]:
    """The ``heap_trace`` rows: one per heap-simulator event, in trace order (``step`` counts
    across the traces, one trace per simulated allocation or the whole module)."""
    sizes = {b.get("id", 0): b.get("size", 0) for b in ba.get("logical_buffers", [])}
    rows = []
    step = 0
    for t in ba.get("heap_simulator_traces", []):
        for e in t.get("events", []):
            bid, kind = e.get("buffer_id", 0), e.get("kind", 0)
            share = e.get("share_with_canonical_id", 0)
            rows.append({"step": step, "kind": HEAP_KINDS.get(kind, str(kind)), "buffer_id": bid,
                         "size": sizes.get(bid, 0), "instruction": e.get("instruction_name", ""),
                         "computation": e.get("computation_name", ""),
                         "share_with": None if share == 0 and kind != 2 else share})
            step += 1
    return rows


def heap_peaks(ba: dict) -> list[int]:
    """The most bytes live at once in each heap-simulator trace (a shared buffer takes no room of
    its own)."""
    sizes = {b.get("id", 0): b.get("size", 0) for b in ba.get("logical_buffers", [])}
    peaks = []
    for t in ba.get("heap_simulator_traces", []):
        live = peak = 0
        owned: dict[int, int] = {}
        for e in t.get("events", []):
            kind, bid = e.get("kind", 0), e.get("buffer_id", 0)
            if kind == 0:
                owned[bid] = sizes.get(bid, 0)
                live += owned[bid]
                peak = max(peak, live)
            elif kind == 1:
                live -= owned.pop(bid, 0)
        peaks.append(peak)
    return peaks


def subshape(s: dict, index: list[int]) -> dict | None:
    for k in index:
        parts = s.get("tuple_shapes", [])
        if not 0 <= k < len(parts):
            return None
        s = parts[k]
    return s


def _index_text(v: list[int]) -> str:
    return "{" + ",".join(map(str, v)) + "}"


def _clamp_i32(v: int) -> int:
    """An int64 field into an int32 column (a damaged proto's color may not fit): clamped."""
    return max(-(1 << 31), min((1 << 31) - 1, v))


def allocation_rows(ba: dict, m: dict) -> list[dict[str, Any]]:
    """``allocations`` rows from the ``BufferAllocationProto``s (the flags as the text dump names
    them; a temporary is what is none of parameter, constant, thread-local or live out; the
    output's shape, the flags' text and the line are not in the proto)."""
    params = m.get("host_program_shape", {}).get("parameters", [])
    rows = []
    for a in ba.get("buffer_allocations", []):
        param = a.get("is_entry_computation_parameter", False)
        index = a.get("parameter_shape_index", [])
        n = a.get("parameter_number", 0)
        shape = subshape(params[n], index) if param and 0 <= n < len(params) else None
        rows.append({
            "allocation": a.get("index", 0), "size": a.get("size", 0), "color": _clamp_i32(a.get("color", 0)),
            "is_thread_local": a.get("is_thread_local", False), "is_constant": a.get("is_constant", False),
            "is_maybe_live_out": a.get("maybe_live_out", False),
            "is_preallocated_temp": not (param or a.get("is_constant") or a.get("is_thread_local")
                                         or a.get("maybe_live_out")),
            "is_output": a.get("maybe_live_out", False),
            "parameter": n if param else None,
            "parameter_shape": shape_str(shape, layout=False) if shape is not None else None,
            "parameter_shape_index": _index_text(index) if param else None,
            "output_shape": None, "page": None, "flags": "", "line": 0,
        })
    return rows


def assignment_rows(ba: dict, m: dict) -> list[dict[str, Any]]:
    """``assignments`` rows: the logical buffers (XLA's value ids) in each allocation, with their
    offset, size, defining instruction and shape."""
    instrs = {i.get("id", 0): i for c in m.get("computations", []) for i in c.get("instructions", [])}
    buffers = {b.get("id", 0): b for b in ba.get("logical_buffers", [])}
    rows = []
    for a in ba.get("buffer_allocations", []):
        for x in a.get("assigned", []):
            b = buffers.get(x.get("logical_buffer_id", 0))
            at = b.get("defined_at") if b is not None else None
            index = at.get("shape_index", []) if at is not None else []
            ins = instrs.get(at.get("instruction_id", 0)) if at is not None else None
            if ins is not None:
                name, shape = ins.get("name", ""), ins.get("shape")
            else:
                name, shape = (at.get("instruction_name", "") if at is not None else ""), None
            sub = subshape(shape, index) if shape is not None else None
            rows.append({"allocation": a.get("index", 0), "value_id": x.get("logical_buffer_id", 0),
                         "instruction": name, "shape_index": _index_text(index), "is_phi": False,
                         "color": _clamp_i32(b.get("color", 0)) if b is not None else 0,
                         "offset": x.get("offset", 0), "size": x.get("size", 0),
                         "shape": shape_str(sub) if sub is not None else "", "line": 0})
    return rows


def memory_analysis(ba: dict) -> dict[str, int]:
    """jax's ``compiled.memory_analysis()`` figures from the allocations alone."""
    al = ba.get("buffer_allocations", [])
    def total(pred) -> int:
        return sum(a.get("size", 0) for a in al if pred(a))
    param = lambda a: a.get("is_entry_computation_parameter", False)  # noqa: E731
    out = lambda a: a.get("maybe_live_out", False)  # noqa: E731
    return {
        "argument_size_in_bytes": total(param),
        "output_size_in_bytes": total(out),
        "alias_size_in_bytes": total(lambda a: param(a) and out(a)),
        "temp_size_in_bytes": total(lambda a: not (param(a) or out(a) or a.get("is_constant") or a.get("is_thread_local"))),
    }


def parse(data: bytes, ctx: Any) -> None:
    """One ``.hlo.pb`` file into rows: the module's tables through its printed text (line and
    offset are those of that text), the buffer assignment's where the proto has one. A damaged
    proto is one error at line 1, the column its byte offset + 1."""
    from .hlo import parse_module

    try:
        m, ba, listing = decode_hlo_listing(data)
        check_structure(m, ba)
    except ProtoError as e:
        ctx.error(1, e.offset + 1, f"not a valid HLO proto: {e}", "")
        return
    try:
        text = render_module(m, text_budget(len(data)))
    except TooLong as e:
        ctx.error(1, 1, f"not read: its module would print as more than {e.budget} bytes of text ({len(data)} bytes of proto)", "")
        return
    from .lines import split_lines

    raw = text.encode("utf-8", "surrogatepass")
    # the printed text is read as a text file is (its lines checked as the core's driver does)
    parse_module(split_lines(raw, ctx), ctx, raw, judged=False)
    if ba is not None:
        allocations, assignments = allocation_rows(ba, m), assignment_rows(ba, m)
        for table, rows in (("allocations", allocations), ("assignments", assignments),
                            ("heap_trace", heap_trace_rows(ba))):
            for r in rows:
                ctx.add(table, r)
        if not ctx.has_errors():  # a file with errors is known to be incomplete
            for line, col, message in _allocation_problems(allocations, assignments):
                ctx.error(line, col, message)
    unknown_note(listing, ctx)


def _allocation_problems(allocations: list[dict], assignments: list[dict]) -> list[tuple[int, int, str]]:
    """The buffer assignment's whole-file checks, as for its text (an allocation listed twice,
    a value past the end of its allocation): ``buffer_assignment.whole_file_problems``."""
    from .buffer_assignment import whole_file_problems

    seen: dict[int, list[int]] = {}  # allocation -> [line first listed, largest size]
    again = []
    for r in allocations:
        first = seen.get(r["allocation"])
        if first is None:
            seen[r["allocation"]] = [r["line"], r["size"]]
        else:
            again.append((r["line"], r["allocation"], first[0]))
            first[1] = max(first[1], r["size"])
    past = [(r["line"], r["value_id"], r["allocation"], r["offset"], r["size"]) for r in assignments
            if r["allocation"] in seen and r["offset"] + r["size"] > seen[r["allocation"]][1]]
    return whole_file_problems(seen, again, past, [], True)
