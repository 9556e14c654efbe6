//! HLO protos (`--xla_dump_hlo_as_proto`: `*.hlo.pb`, an `HloProto` or an `HloModuleProto`;
//! docs/protos.md): decoded by our own schema (`wire`, `schema`: field numbers from XLA's
//! `xla/service/hlo.proto` and `xla/xla_data.proto`; names, UTF-8 and singular fields checked
//! as it decodes), checked (`structure`: what XLA always writes, ids that must resolve — a
//! damaged proto is an error at its byte offset, never other figures), printed as XLA prints the module's text
//! dump (`render`), and that text read by the HLO text parser — so a proto gives the rows its
//! text twin gives, by construction (`line`/`offset`: those of the printed text, which are the
//! text twin's where XLA printed the same). The after-optimizations `HloProto` also carries the
//! buffer assignment: its `allocations`, `assignments` and the heap simulator's trace
//! (`heap_trace`). The reference is `python/hlodump/reference/hlo_proto.py`.

pub mod fields;
pub mod memory_report;
pub mod render;
pub mod schema;
pub mod structure;
pub mod wire;

use std::collections::HashMap;

use crate::buffer_assignment::checks::Checks;
use crate::error::{FileCtx, Result};
use crate::source::Source;
use crate::tables::Tables;
use wire::{Msg, WireError};

/// Content rule (`Sniff::binary`): an `HloModuleProto` (field 1: a name XLA would print, field 2
/// the entry computation's name if any, then field 3: a computation, whose field 1 is a name) or
/// an `HloProto` (field 1: such a module), from the first bytes. Not a name and one more string:
/// a foreign protobuf with a short string in field 1 and another in field 2 (an autotune
/// result) is not a module.
pub fn is_hlo_proto(data: &[u8]) -> bool {
    module_at(data).is_some()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Top {
    Module,
    Proto,
}

/// A varint at byte `i` of `b` (the value, the byte after it), None when cut or longer than 10
/// bytes: the sniffing of both proto kinds (this file and `memory_report.rs`).
pub(super) fn varint_at(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for k in 0..10 {
        let c = *b.get(i.checked_add(k)?)?;
        v |= u64::from(c & 0x7f) << (7 * k);
        if c < 0x80 {
            return Some((v, i + k + 1));
        }
    }
    None
}

/// `tag <len> NAME` at `i` (NAME: `[A-Za-z0-9_.-]{1,4096}`, whole): the byte after it.
fn name_field_with(b: &[u8], i: usize, tag: u8) -> Option<usize> {
    if b.get(i) != Some(&tag) {
        return None;
    }
    let (n, j) = varint_at(b, i.checked_add(1)?)?;
    if n == 0 || n > 4096 {
        return None;
    }
    let end = j.checked_add(n as usize).filter(|&end| end <= b.len())?;
    b[j..end].iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')).then_some(end)
}

fn name_field(b: &[u8], i: usize) -> Option<usize> {
    name_field_with(b, i, 0x0a)
}

/// The start of a module at `i`: its name, its entry computation's name if written, then the
/// first computation's tag, length and name (`1a <len> 0a <len> NAME`); the byte after that.
fn module_start(b: &[u8], i: usize) -> Option<usize> {
    let mut end = name_field(b, i)?;
    if b.get(end) == Some(&0x12) {
        end = name_field_with(b, end, 0x12)?;
    }
    if b.get(end) != Some(&0x1a) {
        return None;
    }
    // the computation's length may run past the end of a file cut short: read, that is an
    // error at the byte where it stops
    let (_, j) = varint_at(b, end + 1)?;
    name_field(b, j)
}

fn module_at(b: &[u8]) -> Option<Top> {
    if module_start(b, 0).is_some() {
        return Some(Top::Module);
    }
    if b.first() == Some(&0x0a) {
        let (n, j) = varint_at(b, 1)?;
        // the module's length may run past the end of a file cut short: still a proto (read, it
        // is an error at the byte where it stops), not an unknown file
        if n > 0 {
            let end = module_start(b, j)?;
            // saturating: a 10-byte varint length is up to 2^64 - 1 (issue 50: `j + n` overflowed)
            if (end as u64) <= (j as u64).saturating_add(n) {
                return Some(Top::Proto);
            }
        }
    }
    None
}

/// (HloModuleProto, BufferAssignmentProto if any, unknown fields skipped).
pub fn decode_hlo(data: &[u8]) -> std::result::Result<(Msg, Option<Msg>, wire::Unknown), WireError> {
    if module_at(data) == Some(Top::Module) {
        let (m, unknown) = wire::decode_listing(data, schema::HLOMODULEPROTO)?;
        return Ok((m, None, unknown));
    }
    let (mut p, unknown) = wire::decode_listing(data, schema::HLOPROTO)?;
    let take = |p: &mut Msg, name: &str| -> Option<Msg> {
        let i = p.fields.iter().position(|(n, _)| *n == name)?;
        match p.fields.remove(i).1 {
            wire::Value::Msg(m) => Some(m),
            _ => None,
        }
    };
    let Some(m) = take(&mut p, "hlo_module") else {
        return Err(WireError { offset: 0, message: "an HloProto without its module (field 1)".into() });
    };
    let ba = take(&mut p, "buffer_assignment");
    Ok((m, ba, unknown))
}

/// Parse one `.hlo.pb` file (`FormatSpec::parse`). A damaged proto is one error at line 1,
/// its column the byte offset + 1 where decoding stopped.
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let errors_before = t.errors.len();
    let decoded = decode_hlo(data).and_then(|(m, ba, unknown)| structure::check(&m, ba.as_ref()).map(|()| (m, ba, unknown)));
    let (m, ba, unknown) = match decoded {
        Ok(x) => x,
        Err(e) => return ctx.error_at(&mut t.errors, 1, e.offset as u64 + 1, format!("not a valid HLO proto: {e}"), b""),
    };
    let text = match render::render_module(&m, render::text_budget(data.len())) {
        Ok(t) => t.into_bytes(),
        Err(render::TooLong(n)) => {
            let msg = format!("not read: its module would print as more than {n} bytes of text ({} bytes of proto)", data.len());
            return ctx.error_at(&mut t.errors, 1, 1, msg, b"");
        }
    };
    let source = Source::from_vec(text);
    let src = t.add_source(&source);
    let bytes: &[u8] = source.bytes();
    let text_ctx = FileCtx { file_id: ctx.file_id, path: ctx.path, collect: ctx.collect, src, proj: ctx.proj, presized: false, strict: ctx.strict, xla_named: false };
    crate::hlo::module::parse_text(bytes, text_ctx, t, false)?;
    if let Some(ba) = ba {
        let checks = buffer_rows(&m, &ba, ctx.file_id, t);
        // the buffer assignment's whole-file checks (an allocation listed twice, a value past
        // its allocation), as for the text; lines are 0: a proto has none
        ctx.report_whole_file(&mut t.errors, errors_before, &checks.problems())?;
    }
    unknown_note(&unknown, &ctx, t)
}

/// One `notes` row for the unknown field numbers (neither read nor in `schema::SKIPPED`: a newer
/// XLA's, or a damaged number) at line 1, column = the first one's byte offset + 1; with
/// `strict` an error there, like every other note (`FileCtx::note`).
pub fn unknown_note(unknown: &wire::Unknown, ctx: &FileCtx<'_>, t: &mut Tables) -> Result<()> {
    if unknown.is_empty() {
        return Ok(());
    }
    let text = wire::unknown_text(unknown);
    let message = format!("{} fields of numbers this reader does not know were skipped (a newer XLA's, or a damaged proto)", unknown.total());
    let column = unknown.first_at.unwrap_or(0) as u64 + 1;
    ctx.note(t, 1, b"", column, crate::driver::Note { kind: "unknown_proto_fields", token: b"", text: text.as_bytes(), message })
}

/// Every instruction by id: (name, shape).
fn instructions(m: &Msg) -> HashMap<i64, (&str, Option<&Msg>)> {
    m.msgs("computations").flat_map(|c| c.msgs("instructions")).map(|i| (i.int("id"), (i.str("name"), i.msg("shape")))).collect()
}

/// The sub-shape at `index` (None past the shape).
pub fn subshape<'m>(mut s: &'m Msg, index: &[i64]) -> Option<&'m Msg> {
    for &k in index {
        s = s.msgs("tuple_shapes").nth(usize::try_from(k).ok()?)?;
    }
    Some(s)
}

fn index_text(v: &[i64]) -> String {
    format!("{{{}}}", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// An int64 field into an int32 column (a damaged proto's color may not fit): clamped.
fn clamp_i32(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

const HEAP_KINDS: [&str; 3] = ["alloc", "free", "share_with"];

/// The buffer assignment's rows (`allocations`, `assignments`, `heap_trace`), and its
/// whole-file checks (`buffer_assignment::checks`) to report.
fn buffer_rows(m: &Msg, ba: &Msg, file_id: i32, t: &mut Tables) -> Checks {
    let mut checks = Checks::default();
    let names = instructions(m);
    let params: Vec<&Msg> = m.msg("host_program_shape").map(|h| h.msgs("parameters").collect()).unwrap_or_default();
    let buffers: HashMap<i64, &Msg> = ba.msgs("logical_buffers").map(|b| (b.int("id"), b)).collect();
    let a = &mut t.allocations;
    for al in ba.msgs("buffer_allocations") {
        let param = al.flag("is_entry_computation_parameter");
        checks.allocation(0, al.int("index"), al.int("size"));
        a.file_id.push(file_id);
        a.allocation.push(al.int("index"));
        a.size.push(al.int("size"));
        a.color.push(clamp_i32(al.int("color")));
        a.is_thread_local.push(al.flag("is_thread_local"));
        a.is_constant.push(al.flag("is_constant"));
        a.is_maybe_live_out.push(al.flag("maybe_live_out"));
        a.is_preallocated_temp.push(!(param || al.flag("is_constant") || al.flag("is_thread_local") || al.flag("maybe_live_out")));
        a.is_output.push(al.flag("maybe_live_out"));
        let index = al.ints("parameter_shape_index");
        if param {
            a.parameter.push(Some(al.int("parameter_number")));
            let shape = usize::try_from(al.int("parameter_number")).ok().and_then(|n| params.get(n)).and_then(|p| subshape(p, &index));
            match shape {
                Some(s) => a.parameter_shape.push_owned(render::shape_str(s, false).as_bytes()),
                None => a.parameter_shape.push_null(),
            }
            a.parameter_shape_index.push_owned(index_text(&index).as_bytes());
        } else {
            a.parameter.push(None);
            a.parameter_shape.push_null();
            a.parameter_shape_index.push_null();
        }
        a.output_shape.push_null();
        a.page.push(None); // not in BufferAllocationProto (the text's `page N`)
        a.flags.push_owned(b"");
        a.line.push(0);
    }
    let s = &mut t.assignments;
    for al in ba.msgs("buffer_allocations") {
        for x in al.msgs("assigned") {
            let b = buffers.get(&x.int("logical_buffer_id"));
            let at = b.and_then(|b| b.msg("defined_at"));
            let index = at.map(|a| a.ints("shape_index")).unwrap_or_default();
            let (name, shape) = at.and_then(|a| names.get(&a.int("instruction_id")).copied()).unwrap_or((at.map_or("", |a| a.str("instruction_name")), None));
            checks.value(0, x.int("logical_buffer_id"), al.int("index"), x.int("offset"), x.int("size"));
            s.file_id.push(file_id);
            s.allocation.push(al.int("index"));
            s.value_id.push(x.int("logical_buffer_id"));
            s.instruction.push_owned(name.as_bytes());
            s.shape_index.push_owned(index_text(&index).as_bytes());
            s.is_phi.push(false);
            s.color.push(clamp_i32(b.map_or(0, |b| b.int("color"))));
            s.offset.push(x.int("offset"));
            s.size.push(x.int("size"));
            let shape = shape.and_then(|sh| subshape(sh, &index)).map(|sh| render::shape_str(sh, true)).unwrap_or_default();
            s.shape.push_owned(shape.as_bytes());
            s.line.push(0);
        }
    }
    let sizes: HashMap<i64, i64> = ba.msgs("logical_buffers").map(|b| (b.int("id"), b.int("size"))).collect();
    let h = &mut t.heap_trace;
    let mut step = 0i64;
    for tr in ba.msgs("heap_simulator_traces") {
        for e in tr.msgs("events") {
            let kind = e.int("kind");
            h.file_id.push(file_id);
            h.step.push(step);
            match usize::try_from(kind).ok().and_then(|k| HEAP_KINDS.get(k)) {
                Some(k) => h.kind.push(k),
                None => h.kind.push(kind.to_string()),
            }
            h.buffer_id.push(e.int("buffer_id"));
            h.size.push(sizes.get(&e.int("buffer_id")).copied().unwrap_or(0));
            h.instruction.push(e.str("instruction_name"));
            h.computation.push(e.str("computation_name"));
            match e.int("share_with_canonical_id") {
                0 if kind != 2 => h.share_with.push(None),
                c => h.share_with.push(Some(c)),
            }
            step += 1;
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceRef;

    /// A module whose length is a 10-byte varint near 2^64 (the fuzzer's 29-byte input, issue 50):
    /// a proto cut short (its length runs past the end), sniffed without an overflow (before: a
    /// panic in debug builds, a wrapped sum and `None` in release).
    #[test]
    fn huge_module_length_does_not_overflow() {
        let mut b = vec![0x0a];
        b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        b.extend_from_slice(&[0x0a, 0x03, b'a', b'b', b'c', 0x1a, 0x03, 0x0a, 0x01, b'c']);
        assert!(module_at(&b) == Some(Top::Proto));
    }

    fn samples() -> Vec<std::path::PathBuf> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/proto_twins");
        let mut out = Vec::new();
        for rel in std::fs::read_dir(root).unwrap() {
            let rel = rel.unwrap().path();
            if !rel.is_dir() {
                continue;
            }
            for prog in std::fs::read_dir(rel).unwrap() {
                let prog = prog.unwrap().path();
                if !prog.is_dir() {
                    continue;
                }
                for f in std::fs::read_dir(prog).unwrap() {
                    let p = f.unwrap().path();
                    if p.to_string_lossy().ends_with(".hlo.pb") {
                        out.push(p);
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// Collect and strict mode on `data`: strict fails exactly at collect's first error (the
    /// fuzz target's check, without libFuzzer).
    fn check(data: &[u8]) -> usize {
        let ctx = |collect| FileCtx { file_id: 0, path: "t", collect, src: SourceRef::none(), proj: None, presized: false, strict: false, xla_named: false };
        let mut collected = Tables::default();
        parse(data, ctx(true), &mut collected).expect("collect mode never fails");
        let first = collected.errors.line.0.first().copied().zip(collected.errors.column.0.first().copied());
        let mut strict = Tables::default();
        match (parse(data, ctx(false), &mut strict), first) {
            (Ok(()), None) => {}
            (Err(crate::Error::Parse(e)), Some((l, c))) => assert_eq!((e.line as i32, e.column as i32), (l, c)),
            (r, f) => panic!("modes disagree: {:?} vs {f:?}", r.err().map(|e| e.to_string())),
        }
        let rows = collected.instructions.len();
        for (_, b) in collected.finish() {
            assert!(b.num_rows() <= data.len() + 1);
        }
        rows
    }

    #[test]
    fn every_sample_reads_and_every_damage_is_an_error_not_a_panic() {
        let files = samples();
        assert!(files.len() >= 40, "{} samples", files.len());
        for p in &files {
            let data = std::fs::read(p).unwrap();
            assert!(is_hlo_proto(&data), "{}", p.display());
            assert!(check(&data) > 0, "{}", p.display());
            for n in (0..data.len()).step_by(7) {
                check(&data[..n]);
            }
            for k in (0..data.len()).step_by(13) {
                let mut d = data.clone();
                d[k] ^= 0x5a;
                check(&d);
            }
            check(&[data.as_slice(), data.as_slice()].concat());
        }
    }

    #[test]
    fn amplification_is_refused() {
        // one instruction with a 1000-byte name, used 20000 times by another: 20 MB of text from
        // 40 KB of proto, past the budget (16× + 1 MiB)
        let name = "n".repeat(1000);
        let mut ins1 = vec![0x0a];
        push_len(&mut ins1, name.len());
        ins1.extend_from_slice(name.as_bytes());
        ins1.extend_from_slice(b"\x12\x09parameter\x1a\x02\x10\x0b\x98\x02\x01"); // opcode, shape f32[], id=1
        let mut ins2 = b"\x0a\x01x\x12\x03add\x1a\x02\x10\x0b\x98\x02\x02".to_vec(); // name x, shape, id=2
        let mut packed = Vec::new();
        for _ in 0..20000 {
            packed.push(0x01);
        }
        ins2.push(0xa2);
        ins2.push(0x02); // field 36 (operand_ids), packed
        push_len(&mut ins2, packed.len());
        ins2.extend_from_slice(&packed);
        let mut comp = b"\x0a\x01c".to_vec();
        for ins in [&ins1, &ins2] {
            comp.push(0x12);
            push_len(&mut comp, ins.len());
            comp.extend_from_slice(ins);
        }
        comp.extend_from_slice(b"\x30\x02"); // root_id=2
        let mut module = b"\x0a\x01m\x12\x01c".to_vec();
        module.push(0x1a);
        push_len(&mut module, comp.len());
        module.extend_from_slice(&comp);
        let mut t = Tables::default();
        let ctx = FileCtx { file_id: 0, path: "t", collect: true, src: SourceRef::none(), proj: None, presized: false, strict: false, xla_named: false };
        parse(&module, ctx, &mut t).unwrap();
        assert_eq!(t.errors.len(), 1);
        assert!(t.errors.message.get(0).unwrap_or("").contains("would print as more than"), "{:?}", t.errors.message.get(0));
        assert_eq!(t.instructions.len(), 0);
    }

    fn push_len(v: &mut Vec<u8>, mut n: usize) {
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            v.push(b | if n > 0 { 0x80 } else { 0 });
            if n == 0 {
                break;
            }
        }
    }
}
