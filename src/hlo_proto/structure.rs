//! What a decoded `HloProto` must hold before any row is made of it (docs/protos.md, "Strict
//! about structure"): the fields XLA always writes, and every id it refers to resolving. A
//! damaged proto (a flipped field number makes an instruction, a computation or an allocation
//! vanish into an unknown field) is an error here, at the byte offset of the message that
//! shows it, not a module with different figures. The reference is
//! `python/hlodump/reference/hlo_proto_structure.py`: same checks, same order, same messages.

use std::collections::{HashMap, HashSet};

use super::wire::{same_message, Msg, WireError};

type R = Result<(), WireError>;

fn bad(at: usize, message: String) -> R {
    Err(WireError { offset: at, message })
}

/// A field XLA always writes: its absence is an error at the message (`what` names the
/// message, made only then: this runs on every instruction).
fn required<W: std::fmt::Display>(m: &Msg, what: impl Fn() -> W, field: &str, number: u32) -> R {
    if m.has(field) {
        return Ok(());
    }
    bad(m.at, format!("{}: no {field} (field {number})", what()))
}

/// The module (`HloModuleProto`) and, if any, its buffer assignment.
pub fn check(m: &Msg, ba: Option<&Msg>) -> R {
    required(m, || "HloModuleProto", "name", 1)?;
    required(m, || "HloModuleProto", "computations", 3)?;
    let ids = instruction_ids(m)?;
    let comps = computation_ids(m)?;
    let frames = stack_frame_index(m)?;
    for c in m.msgs("computations") {
        computation(c, &comps)?;
        shapes(c, m.has("schedule"), frames)?;
    }
    entry(m, &comps)?;
    schedule(m, &ids)?;
    if let Some(ba) = ba {
        buffer_assignment(ba, &ids)?;
    }
    Ok(())
}

/// Every instruction's id → the id of its computation; an id given twice is an error.
fn instruction_ids(m: &Msg) -> Result<HashMap<i64, i64>, WireError> {
    let mut ids = HashMap::new();
    for c in m.msgs("computations") {
        required(c, || "HloComputationProto", "name", 1)?;
        let what = || format!("computation {}", c.str("name"));
        required(c, what, "instructions", 2)?;
        for i in c.msgs("instructions") {
            required(i, || format!("an instruction of {}", what()), "name", 1)?;
            let what = || format!("instruction {}", i.str("name"));
            required(i, what, "opcode", 2)?;
            required(i, what, "shape", 3)?;
            if i.str("opcode") == "constant" {
                required(i, what, "literal", 8)?;
            }
            if ids.insert(i.int("id"), c.int("id")).is_some() {
                bad(i.at, format!("{}: id {} given twice in the module", what(), i.int("id")))?;
            }
        }
    }
    Ok(ids)
}

/// Every computation's id → its name; an id given twice is an error.
fn computation_ids(m: &Msg) -> Result<HashMap<i64, &str>, WireError> {
    let mut comps = HashMap::new();
    for c in m.msgs("computations") {
        if comps.insert(c.int("id"), c.str("name")).is_some() {
            bad(c.at, format!("computation {}: id {} given twice in the module", c.str("name"), c.int("id")))?;
        }
    }
    Ok(comps)
}

/// Its root, and every operand, control predecessor and called computation of its
/// instructions, resolve (operands within the computation).
fn computation(c: &Msg, comps: &HashMap<i64, &str>) -> R {
    let name = c.str("name");
    let own: HashSet<i64> = c.msgs("instructions").map(|i| i.int("id")).collect();
    if !own.contains(&c.int("root_id")) {
        bad(c.at, format!("computation {name}: its root (id {}) is none of its instructions", c.int("root_id")))?;
    }
    for i in c.msgs("instructions") {
        for (field, k) in [("operand_ids", "operand"), ("control_predecessor_ids", "control predecessor")] {
            if let Some(o) = i.ints(field).into_iter().find(|o| !own.contains(o)) {
                bad(i.at, format!("instruction {}: {k} id {o} is none of the instructions of computation {name}", i.str("name")))?;
            }
        }
        if let Some(k) = i.ints("called_computation_ids").into_iter().find(|k| !comps.contains_key(k)) {
            bad(i.at, format!("instruction {}: called computation id {k} is not in the module", i.str("name")))?;
        }
    }
    Ok(())
}

/// The stack-frame index's ids (1-based) are within it; the number of its frames.
fn stack_frame_index(m: &Msg) -> Result<usize, WireError> {
    let Some(sf) = m.msg("stack_frame_index") else { return Ok(0) };
    let count = |f: &str| sf.list(f).len() as i64;
    let (files, functions, locations, frames) = (count("file_names"), count("function_names"), count("file_locations"), count("stack_frames"));
    for (k, l) in sf.msgs("file_locations").enumerate() {
        if !(1..=files).contains(&l.int("file_name_id")) || !(0..=functions).contains(&l.int("function_name_id")) {
            bad(l.at, format!("file location {}: a file or function name not in the stack-frame index", k + 1))?;
        }
    }
    for (k, f) in sf.msgs("stack_frames").enumerate() {
        if !(1..=locations).contains(&f.int("file_location_id")) || !(0..=frames).contains(&f.int("parent_frame_id")) {
            bad(f.at, format!("stack frame {}: a file location or parent frame not in the stack-frame index", k + 1))?;
        }
    }
    Ok(frames as usize)
}

/// Every array shape, tuples' elements included (element types other than tuple 13, opaque 14
/// and token 17).
fn array_shapes<'m>(s: &'m Msg, out: &mut Vec<&'m Msg>) {
    if !matches!(s.int("element_type"), 13 | 14 | 17) {
        out.push(s);
    }
    for t in s.msgs("tuple_shapes") {
        array_shapes(t, out);
    }
}

/// The shapes XLA writes in more than one place agree: a parameter's and the root's with the
/// computation's program shape, a tuple's elements with its operands; in a scheduled module
/// (after layout assignment) every array shape has its layout; a stack frame id is in the index.
fn shapes(c: &Msg, scheduled: bool, frames: usize) -> R {
    let program = c.msg("program_shape");
    let params: Vec<&Msg> = program.map(|p| p.msgs("parameters").collect()).unwrap_or_default();
    for i in c.msgs("instructions") {
        let (name, shape) = (i.str("name"), i.msg("shape").expect("checked: every instruction has a shape"));
        if i.str("opcode") == "parameter" && program.is_some() {
            let declared = usize::try_from(i.int("parameter_number")).ok().and_then(|k| params.get(k));
            if !declared.is_some_and(|d| same_message(d, shape)) {
                bad(i.at, format!("instruction {name}: its shape is not parameter {} of its computation's program shape", i.int("parameter_number")))?;
            }
        }
        if i.int("id") == c.int("root_id") && program.is_some_and(|p| !p.msg("result").is_some_and(|r| same_message(r, shape))) {
            bad(i.at, format!("instruction {name}: the root's shape is not its computation's result shape"))?;
        }
        if i.str("opcode") == "tuple" && shape.list("tuple_shapes").len() != i.list("operand_ids").len() {
            bad(i.at, format!("instruction {name}: a tuple of {} operands with {} element shapes", i.list("operand_ids").len(), shape.list("tuple_shapes").len()))?;
        }
        let mut arrays = Vec::new();
        array_shapes(shape, &mut arrays);
        if scheduled && arrays.iter().any(|a| !a.has("layout")) {
            bad(i.at, format!("instruction {name}: an array shape without its layout in a scheduled module"))?;
        }
        let frame = i.msg("metadata").map_or(0, |md| md.int("stack_frame_id"));
        if !(0..=frames as i64).contains(&frame) {
            bad(i.at, format!("instruction {name}: stack frame {frame} is not in the stack-frame index"))?;
        }
    }
    Ok(())
}

/// The entry computation, by id, and by name where the proto names it, is in the module.
fn entry(m: &Msg, comps: &HashMap<i64, &str>) -> R {
    let id = m.int("entry_computation_id");
    let named = m.str("entry_computation_name");
    match comps.get(&id) {
        Some(&n) if named.is_empty() || n == named => Ok(()),
        _ => bad(m.at, format!("HloModuleProto: the entry computation (id {id}, name {named:?}) is not in the module")),
    }
}

/// A schedule's sequences name computations of the module and list exactly their
/// instructions (XLA schedules every instruction of a scheduled computation: one missing from
/// its computation was lost).
fn schedule(m: &Msg, ids: &HashMap<i64, i64>) -> R {
    let Some(s) = m.msg("schedule") else { return Ok(()) };
    let comps: HashMap<i64, &Msg> = m.msgs("computations").map(|c| (c.int("id"), c)).collect();
    for e in s.msgs("sequences") {
        let comp = e.int("key");
        let seq: HashSet<i64> = e.msg("value").map(|v| v.ints("instruction_ids")).unwrap_or_default().into_iter().collect();
        if let Some(i) = e.msg("value").map(|v| v.ints("instruction_ids")).unwrap_or_default().into_iter().find(|i| ids.get(i) != Some(&comp)) {
            bad(e.at, format!("schedule: instruction id {i} is none of computation id {comp}'s"))?;
        }
        let own = comps.get(&comp).into_iter().flat_map(|c| c.msgs("instructions"));
        if let Some(i) = own.map(|i| i.int("id")).find(|i| !seq.contains(i)) {
            bad(e.at, format!("schedule: instruction id {i} of computation id {comp} is not in its sequence"))?;
        }
    }
    Ok(())
}

/// Allocations numbered 0, 1, … in order; every logical buffer an allocation holds or an event
/// names is one of the assignment's, defined at an instruction of the module.
fn buffer_assignment(ba: &Msg, ids: &HashMap<i64, i64>) -> R {
    let mut buffers = HashSet::new();
    for b in ba.msgs("logical_buffers") {
        if !buffers.insert(b.int("id")) {
            bad(b.at, format!("logical buffer id {} given twice", b.int("id")))?;
        }
        required(b, || format!("logical buffer {}", b.int("id")), "defined_at", 3)?;
        let at = b.msg("defined_at");
        if let Some(i) = at.filter(|a| a.has("instruction_id")).map(|a| a.int("instruction_id")) {
            if !ids.contains_key(&i) {
                bad(b.at, format!("logical buffer {}: defined at instruction id {i}, not in the module", b.int("id")))?;
            }
        }
    }
    for (k, al) in ba.msgs("buffer_allocations").enumerate() {
        if al.int("index") != k as i64 {
            bad(al.at, format!("allocation {} listed at position {k} (XLA lists them 0, 1, … in order)", al.int("index")))?;
        }
        for x in al.msgs("assigned") {
            if !buffers.contains(&x.int("logical_buffer_id")) {
                bad(x.at, format!("allocation {k}: logical buffer {} is not in the buffer assignment", x.int("logical_buffer_id")))?;
            }
        }
    }
    let assigned: HashSet<i64> = ba.msgs("buffer_allocations").flat_map(|al| al.msgs("assigned")).map(|x| x.int("logical_buffer_id")).collect();
    // XLA lists the logical buffers it assigned: one in no allocation lost its allocation
    if let Some(b) = ba.msgs("logical_buffers").find(|b| !assigned.contains(&b.int("id"))) {
        bad(b.at, format!("logical buffer {} is in no allocation", b.int("id")))?;
    }
    for tr in ba.msgs("heap_simulator_traces") {
        heap_events_pair(tr)?;
        for e in tr.msgs("events") {
            let shared = if e.int("kind") == 2 { Some(e.int("share_with_canonical_id")) } else { None };
            if let Some(b) = std::iter::once(e.int("buffer_id")).chain(shared).find(|b| !buffers.contains(b)) {
                bad(e.at, format!("heap-simulator event: logical buffer {b} is not in the buffer assignment"))?;
            }
        }
    }
    Ok(())
}

/// In one heap-simulator trace every buffer is allocated (or shared) once, then freed once: an
/// event lost to damage breaks a pair.
fn heap_events_pair(tr: &Msg) -> R {
    let mut state: HashMap<i64, bool> = HashMap::new(); // buffer → freed
    for e in tr.msgs("events") {
        let b = e.int("buffer_id");
        match (e.int("kind"), state.get(&b).copied()) {
            (0 | 2, None) => {
                state.insert(b, false);
            }
            (0 | 2, Some(_)) => bad(e.at, format!("heap-simulator event: logical buffer {b} allocated twice"))?,
            (1, Some(false)) => {
                state.insert(b, true);
            }
            (1, _) => bad(e.at, format!("heap-simulator event: logical buffer {b} freed when not allocated"))?,
            (k, _) => bad(e.at, format!("heap-simulator event: kind {k} (expected 0 alloc, 1 free, 2 share_with)"))?,
        }
    }
    if let Some(b) = tr.msgs("events").map(|e| e.int("buffer_id")).find(|b| state.get(b) == Some(&false)) {
        bad(tr.at, format!("heap-simulator trace: logical buffer {b} is never freed"))?;
    }
    Ok(())
}
