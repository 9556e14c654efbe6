"""What a decoded ``HloProto`` must hold before any row is made of it (docs/protos.md, "Strict
about structure"): the fields XLA always writes, and every id it refers to resolving. A damaged
proto (a flipped field number makes an instruction, a computation or an allocation vanish into
an unknown field) is an error here, at the byte offset of the message that shows it, not a
module with different figures. The reference of ``src/hlo_proto/structure.rs``: same checks,
same order, same messages.
"""

from __future__ import annotations

from .protowire import ProtoError

__all__ = ["check"]


def _at(m: dict) -> int:
    return getattr(m, "at", 0)


def _required(m: dict, what: str, field: str, number: int) -> None:
    """A field XLA always writes: its absence is an error at the message."""
    if field not in m:
        raise ProtoError(_at(m), f"{what}: no {field} (field {number})")


def check(m: dict, ba: dict | None) -> None:
    """The module (``HloModuleProto``) and, if any, its buffer assignment."""
    _required(m, "HloModuleProto", "name", 1)
    _required(m, "HloModuleProto", "computations", 3)
    ids = _instruction_ids(m)
    comps = _computation_ids(m)
    frames = _stack_frame_index(m)
    for c in m["computations"]:
        _computation(c, comps)
        _shapes(c, "schedule" in m, frames)
    _entry(m, comps)
    _schedule(m, ids)
    if ba is not None:
        _buffer_assignment(ba, ids)


def _instruction_ids(m: dict) -> dict[int, int]:
    """Every instruction's id → the id of its computation; an id given twice is an error."""
    ids: dict[int, int] = {}
    for c in m["computations"]:
        _required(c, "HloComputationProto", "name", 1)
        what = f"computation {c['name']}"
        _required(c, what, "instructions", 2)
        for i in c["instructions"]:
            _required(i, f"an instruction of {what}", "name", 1)
            iwhat = f"instruction {i['name']}"
            _required(i, iwhat, "opcode", 2)
            _required(i, iwhat, "shape", 3)
            if i["opcode"] == "constant":
                _required(i, iwhat, "literal", 8)
            iid = i.get("id", 0)
            if iid in ids:
                raise ProtoError(_at(i), f"{iwhat}: id {iid} given twice in the module")
            ids[iid] = c.get("id", 0)
    return ids


def _computation_ids(m: dict) -> dict[int, str]:
    """Every computation's id → its name; an id given twice is an error."""
    comps: dict[int, str] = {}
    for c in m["computations"]:
        cid = c.get("id", 0)
        if cid in comps:
            raise ProtoError(_at(c), f"computation {c['name']}: id {cid} given twice in the module")
        comps[cid] = c["name"]
    return comps


def _computation(c: dict, comps: dict[int, str]) -> None:
    """Its root, and every operand, control predecessor and called computation of its
    instructions, resolve (operands within the computation)."""
    name = c["name"]
    own = {i.get("id", 0) for i in c["instructions"]}
    if c.get("root_id", 0) not in own:
        raise ProtoError(_at(c), f"computation {name}: its root (id {c.get('root_id', 0)}) is none of its instructions")
    for i in c["instructions"]:
        for field, k in (("operand_ids", "operand"), ("control_predecessor_ids", "control predecessor")):
            o = next((o for o in i.get(field, []) if o not in own), None)
            if o is not None:
                raise ProtoError(_at(i), f"instruction {i['name']}: {k} id {o} is none of the instructions of computation {name}")
        k = next((k for k in i.get("called_computation_ids", []) if k not in comps), None)
        if k is not None:
            raise ProtoError(_at(i), f"instruction {i['name']}: called computation id {k} is not in the module")


def _stack_frame_index(m: dict) -> int:
    """The stack-frame index's ids (1-based) are within it; the number of its frames."""
    sf = m.get("stack_frame_index")
    if sf is None:
        return 0
    files, functions = len(sf.get("file_names", [])), len(sf.get("function_names", []))
    locations, frames = len(sf.get("file_locations", [])), len(sf.get("stack_frames", []))
    for k, loc in enumerate(sf.get("file_locations", [])):
        if not 1 <= loc.get("file_name_id", 0) <= files or not 0 <= loc.get("function_name_id", 0) <= functions:
            raise ProtoError(_at(loc), f"file location {k + 1}: a file or function name not in the stack-frame index")
    for k, fr in enumerate(sf.get("stack_frames", [])):
        if not 1 <= fr.get("file_location_id", 0) <= locations or not 0 <= fr.get("parent_frame_id", 0) <= frames:
            raise ProtoError(_at(fr), f"stack frame {k + 1}: a file location or parent frame not in the stack-frame index")
    return frames


def _array_shapes(s: dict) -> list[dict]:
    """Every array shape, tuples' elements included (element types other than tuple 13, opaque
    14 and token 17)."""
    out = [] if s.get("element_type", 0) in (13, 14, 17) else [s]
    for t in s.get("tuple_shapes", []):
        out += _array_shapes(t)
    return out


def _shapes(c: dict, scheduled: bool, frames: int) -> None:
    """The shapes XLA writes in more than one place agree: a parameter's and the root's with the
    computation's program shape, a tuple's elements with its operands; in a scheduled module
    (after layout assignment) every array shape has its layout; a stack frame id is in the
    index."""
    program = c.get("program_shape")
    params = program.get("parameters", []) if program is not None else []
    for i in c["instructions"]:
        name, shape = i["name"], i["shape"]
        if i["opcode"] == "parameter" and program is not None:
            k = i.get("parameter_number", 0)
            if not (0 <= k < len(params) and params[k] == shape):
                raise ProtoError(_at(i), f"instruction {name}: its shape is not parameter {k} of its computation's program shape")
        if i.get("id", 0) == c.get("root_id", 0) and program is not None and program.get("result") != shape:
            raise ProtoError(_at(i), f"instruction {name}: the root's shape is not its computation's result shape")
        if i["opcode"] == "tuple" and len(shape.get("tuple_shapes", [])) != len(i.get("operand_ids", [])):
            raise ProtoError(_at(i), f"instruction {name}: a tuple of {len(i.get('operand_ids', []))} operands with "
                                     f"{len(shape.get('tuple_shapes', []))} element shapes")
        if scheduled and any("layout" not in a for a in _array_shapes(shape)):
            raise ProtoError(_at(i), f"instruction {name}: an array shape without its layout in a scheduled module")
        frame = i.get("metadata", {}).get("stack_frame_id", 0)
        if not 0 <= frame <= frames:
            raise ProtoError(_at(i), f"instruction {name}: stack frame {frame} is not in the stack-frame index")


def _rust_debug_str(s: str) -> str:
    """``{:?}`` of a Rust string, for the names this message quotes (names are [A-Za-z0-9_.-]:
    no escapes)."""
    return '"' + s + '"'


def _entry(m: dict, comps: dict[int, str]) -> None:
    """The entry computation, by id, and by name where the proto names it, is in the module."""
    cid = m.get("entry_computation_id", 0)
    named = m.get("entry_computation_name", "")
    n = comps.get(cid)
    if n is None or (named and n != named):
        raise ProtoError(_at(m), f"HloModuleProto: the entry computation (id {cid}, name {_rust_debug_str(named)}) is not in the module")


def _schedule(m: dict, ids: dict[int, int]) -> None:
    """A schedule's sequences name computations of the module and list exactly their
    instructions (XLA schedules every instruction of a scheduled computation: one missing from
    its computation was lost)."""
    s = m.get("schedule")
    if s is None:
        return
    for e in s.get("sequences", []):
        comp = e.get("key", 0)
        seq = e.get("value", {}).get("instruction_ids", [])
        i = next((i for i in seq if ids.get(i) != comp), None)
        if i is not None:
            raise ProtoError(_at(e), f"schedule: instruction id {i} is none of computation id {comp}'s")
        listed = set(seq)
        own = (i.get("id", 0) for c in m["computations"] if c.get("id", 0) == comp for i in c["instructions"])
        i = next((i for i in own if i not in listed), None)
        if i is not None:
            raise ProtoError(_at(e), f"schedule: instruction id {i} of computation id {comp} is not in its sequence")


def _buffer_assignment(ba: dict, ids: dict[int, int]) -> None:
    """Allocations numbered 0, 1, … in order; every logical buffer an allocation holds or an
    event names is one of the assignment's, defined at an instruction of the module."""
    buffers: set[int] = set()
    for b in ba.get("logical_buffers", []):
        bid = b.get("id", 0)
        if bid in buffers:
            raise ProtoError(_at(b), f"logical buffer id {bid} given twice")
        buffers.add(bid)
        _required(b, f"logical buffer {bid}", "defined_at", 3)
        at = b.get("defined_at")
        if at is not None and "instruction_id" in at and at["instruction_id"] not in ids:
            raise ProtoError(_at(b), f"logical buffer {bid}: defined at instruction id {at['instruction_id']}, not in the module")
    for k, al in enumerate(ba.get("buffer_allocations", [])):
        if al.get("index", 0) != k:
            raise ProtoError(_at(al), f"allocation {al.get('index', 0)} listed at position {k} (XLA lists them 0, 1, … in order)")
        for x in al.get("assigned", []):
            if x.get("logical_buffer_id", 0) not in buffers:
                raise ProtoError(_at(x), f"allocation {k}: logical buffer {x.get('logical_buffer_id', 0)} is not in the buffer assignment")
    assigned = {x.get("logical_buffer_id", 0) for al in ba.get("buffer_allocations", []) for x in al.get("assigned", [])}
    # XLA lists the logical buffers it assigned: one in no allocation lost its allocation
    b = next((b for b in ba.get("logical_buffers", []) if b.get("id", 0) not in assigned), None)
    if b is not None:
        raise ProtoError(_at(b), f"logical buffer {b.get('id', 0)} is in no allocation")
    for tr in ba.get("heap_simulator_traces", []):
        _heap_events_pair(tr)
        for e in tr.get("events", []):
            names = [e.get("buffer_id", 0)] + ([e.get("share_with_canonical_id", 0)] if e.get("kind", 0) == 2 else [])
            b = next((b for b in names if b not in buffers), None)
            if b is not None:
                raise ProtoError(_at(e), f"heap-simulator event: logical buffer {b} is not in the buffer assignment")


def _heap_events_pair(tr: dict) -> None:
    """In one heap-simulator trace every buffer is allocated (or shared) once, then freed once:
    an event lost to damage breaks a pair."""
    freed: dict[int, bool] = {}
    for e in tr.get("events", []):
        b, kind = e.get("buffer_id", 0), e.get("kind", 0)
        if kind in (0, 2):
            if b in freed:
                raise ProtoError(_at(e), f"heap-simulator event: logical buffer {b} allocated twice")
            freed[b] = False
        elif kind == 1:
            if freed.get(b) is not False:
                raise ProtoError(_at(e), f"heap-simulator event: logical buffer {b} freed when not allocated")
            freed[b] = True
        else:
            raise ProtoError(_at(e), f"heap-simulator event: kind {kind} (expected 0 alloc, 1 free, 2 share_with)")
    b = next((e.get("buffer_id", 0) for e in tr.get("events", []) if freed.get(e.get("buffer_id", 0)) is False), None)
    if b is not None:
        raise ProtoError(_at(tr), f"heap-simulator trace: logical buffer {b} is never freed")
