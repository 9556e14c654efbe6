//! What buffer assignments take from an instruction text (` from instruction: …`): opcode and
//! `op_name` (`instruction_summary`), the `values.defining_*` fields (`instruction_defining`).
//! These run once per used value of a buffer assignment: read from the field tape
//! (`tape::build`) when it is certain, else by the full parse (`instruction::parse_instruction`).
//! (Here, above both, so that `instruction.rs` and `tape.rs` import one way: tape → instruction.)

use std::borrow::Cow;

use super::instruction::{parse_instruction, Scratch};
use super::scan::ascii_i32;
use super::tape::{self, Tape};
use crate::lex::structure::Unsure;

/// What the `values.defining_*` columns take from an instruction text: the `Instr` fields of
/// the same names (source from the metadata only).
#[derive(Debug, PartialEq)]
pub struct Defining<'a> {
    pub opcode: &'a [u8],
    pub op_name: Option<Cow<'a, [u8]>>,
    pub shape: &'a [u8],
    pub source_file: Option<Cow<'a, [u8]>>,
    pub source_line: Option<i32>,
    pub fusion_kind: Option<&'a [u8]>,
    pub custom_call_target: Option<Cow<'a, [u8]>>,
}

/// `Defining` of an instruction text: the fast path when it is certain, else the full parse.
/// Same result as `instruction_defining_full`.
pub fn instruction_defining<'a>(text: &'a [u8], sc: &mut Scratch) -> Option<Defining<'a>> {
    if let Ok(d) = defining_fast(text) {
        return Some(d);
    }
    instruction_defining_full(text, sc)
}

/// `instruction_defining` by the full parse (a metadata number out of range is a null
/// source_line here: the text is not a module line, nothing reports it).
pub fn instruction_defining_full<'a>(text: &'a [u8], sc: &mut Scratch) -> Option<Defining<'a>> {
    let i = parse_instruction(text, sc)?;
    Some(Defining {
        opcode: i.opcode,
        op_name: i.op_name,
        shape: i.shape,
        source_file: i.source_file,
        source_line: i.source_line,
        fusion_kind: i.fusion_kind,
        custom_call_target: i.custom_call_target,
    })
}

/// `summary_fast`'s argument, plus: a `custom_call_target` string has no escapes (no '\\'
/// anywhere), so `unquote_or_raw` is its inside when it is one whole string, the raw value when
/// it has no '"'; a mix is left to the full parse.
#[inline]
fn defining_fast(text: &[u8]) -> Result<Defining<'_>, Unsure> {
    let f = fast_fields(text)?;
    let target = match f.target {
        Some(t) => Some(match memchr::memchr_iter(b'"', t).count() {
            0 => t,
            2 if t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"' => &t[1..t.len() - 1],
            _ => return Err(Unsure),
        }),
        None => None,
    };
    Ok(Defining {
        opcode: f.opcode,
        op_name: f.op_name.map(Cow::Borrowed),
        shape: f.shape,
        source_file: f.source_file.map(Cow::Borrowed),
        source_line: f.source_line.and_then(|v| ascii_i32(v, true).ok().flatten()),
        fusion_kind: f.kind,
        custom_call_target: target.map(Cow::Borrowed),
    })
}

/// Opcode and `op_name` of an instruction text (what buffer-assignment `from instruction:`
/// texts need): the fast path when it is certain, else the full parse. Same result as
/// `parse_instruction(text).map(|i| (i.opcode, i.op_name))`.
pub fn instruction_summary(text: &[u8]) -> Option<(&[u8], Option<Cow<'_, [u8]>>)> {
    if let Ok((opcode, op_name)) = summary_fast(text) {
        return Some((opcode, op_name.map(Cow::Borrowed)));
    }
    instruction_summary_full(text)
}

/// `instruction_summary` by the full parse.
pub fn instruction_summary_full(text: &[u8]) -> Option<(&[u8], Option<Cow<'_, [u8]>>)> {
    let mut sc = Scratch::default();
    let i = parse_instruction(text, &mut sc)?;
    Some((i.opcode, i.op_name))
}

/// Opcode and op_name of an instruction text without the full parse: `Ok(..)` only when it is
/// certain that the full parse succeeds with this opcode and op_name, `Err(Unsure)` otherwise
/// (comments, escapes, unbalanced or unusual text, metadata that is not the plain
/// `{key="string" key=word …}` form): the caller then runs `parse_instruction`.
///
/// Certainty argument: with no '\\' anywhere, '/' outside strings only in complete `/*…*/`
/// comments without '"', and no '/' in operand strings (the operands' comment stripping is
/// string-blind), the full parser's scans (shape, operands' `match_close`, `split_attributes`,
/// operand names, called-computation names) cannot fail once the brackets balance with depth
/// never below zero, and `split_attributes`' items are exactly the depth-0 ", KEY=" cuts made
/// here; the first `metadata` item is then the one the full parser reads, and its plain form is
/// read here exactly as `parse_metadata` does (first `op_name` wins; a string value without
/// escapes is borrowed without its quotes, a bare word as it is).
///
/// `fast_fields` also gives the shape and the raw values of the first `kind` and
/// `custom_call_target` items and metadata (the slots `finish` fills from the same items).
#[inline]
fn summary_fast(text: &[u8]) -> Result<(&[u8], Option<&[u8]>), Unsure> {
    let f = fast_fields(text)?;
    Ok((f.opcode, f.op_name))
}

/// What the fast paths take from an instruction text: pieces of it, values raw, metadata items
/// as the tape records them (strings without their quotes, numbers raw).
struct FastFields<'a> {
    opcode: &'a [u8],
    shape: &'a [u8],
    kind: Option<&'a [u8]>,
    target: Option<&'a [u8]>,
    op_name: Option<&'a [u8]>,
    source_file: Option<&'a [u8]>,
    source_line: Option<&'a [u8]>,
}

/// The fields of `text` from its field tape (`tape::build`, which makes the certainty argument
/// of `summary_fast`), built in a per-thread tape: these paths run once per used value of a
/// buffer assignment, so no allocation per call.
#[inline]
fn fast_fields(text: &[u8]) -> Result<FastFields<'_>, Unsure> {
    thread_local! {
        static TAPE: std::cell::RefCell<(Tape, Vec<usize>)> = std::cell::RefCell::new(Default::default());
    }
    TAPE.with(|cell| {
        let (tp, commas) = &mut *cell.borrow_mut();
        tape::build(text, tp, commas)?;
        if tp.md_escaped != 0 {
            return Err(Unsure); // (these fields are borrowed text: an escaped string needs the full parse)
        }
        let span = |s: (usize, usize)| &text[s.0..s.1];
        let f = FastFields {
            opcode: span(tp.opcode),
            shape: span(tp.shape),
            kind: tp.slots[tape::KIND].map(span),
            target: tp.slots[tape::TARGET].map(span),
            op_name: tp.md[tape::OP_NAME].map(span),
            source_file: tp.md[tape::SOURCE_FILE].map(span),
            source_line: tp.md[tape::SOURCE_LINE].map(span),
        };
        // (a last value ending in blanks: whether the full parse keeps them is not argued here)
        for v in [f.kind, f.target].into_iter().flatten() {
            if matches!(v.last(), Some(b' ' | b'\t' | b'\r')) {
                return Err(Unsure);
            }
        }
        Ok(f)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ` from instruction:` text under tests/data, and damaged variants of it: the fast
    /// summary path gives what the full parse gives.
    #[test]
    fn summary_fast_path_equals_full_parse() {
        let files = super::super::damaged::test_data_files();
        let mut texts: Vec<Vec<u8>> = vec![];
        for f in files {
            let data = std::fs::read(&f).unwrap();
            for line in data.split(|&b| b == b'\n') {
                if let Some(p) = memchr::memmem::find(line, b"from instruction:") {
                    let t = &line[p + 17..];
                    let t = t.strip_prefix(b" ").unwrap_or(t);
                    texts.push(t.strip_suffix(b"\r").unwrap_or(t).to_vec());
                }
            }
        }
        assert!(texts.len() > 1000, "{} texts", texts.len());
        let mut sc = Scratch::default();
        let mut check = |t: &[u8]| {
            assert_eq!(instruction_summary(t), instruction_summary_full(t), "{:?}", String::from_utf8_lossy(t));
            let fast = instruction_defining(t, &mut sc);
            assert_eq!(fast, instruction_defining_full(t, &mut sc), "{:?}", String::from_utf8_lossy(t));
        };
        // (old XLA glues the next "<N …>" header onto the line: those texts do not parse)
        let (mut fast, mut fast_defining, mut checked) = (0, 0, 0);
        for t in &texts {
            if instruction_summary_full(t).is_some() {
                checked += 1;
                fast += summary_fast(t).is_ok() as usize;
                fast_defining += defining_fast(t).is_ok() as usize;
                if summary_fast(t).is_err() && std::env::var("SHOW_UNSURE").is_ok() {
                    println!("UNSURE {}", String::from_utf8_lossy(t));
                }
            }
            check(t);
        }
        // nearly all real texts take the fast path
        assert!(fast * 10 > checked * 9, "{fast} of {checked} fast");
        assert!(fast_defining * 10 > checked * 9, "{fast_defining} of {checked} fast");
        println!("fast path: summary {fast}, defining {fast_defining} of {checked}");
        // damaged variants: bytes inserted, replaced and removed around the interesting places
        let inserts: [&[u8]; 22] = [b"\"", b"\\", b"/*", b"*/", b"{", b"}", b"(", b")", b",", b", ", b", a=", b" ", b"=", b"op_name=", b"\xc2\xa0", b"metadata={op_name=\"q\"}",
            b"source_line=", b"source_file=", b", kind=kLoop", b", custom_call_target=\"t\"", b"99999999999999999999", b" \t"];
        let mut rng = 0x9e3779b97f4a7c15u64;
        for t in texts.iter().step_by(3) {
            for m in super::super::damaged::damaged_variants(t, &inserts, 20, &mut rng) {
                check(&m);
            }
        }
        check(b"%a = f32[] add(%b, %c), metadata={}");
        check(b"%a = f32[] add(%b, %c), metadata={op_name=\"x\" op_name=\"y\"}, metadata={op_name=\"z\"}");
        check(b"%a = f32[] add(%b, %c), metadata={op_name=bare.word-1 source_line=3}");
        check(b"%a = f32[] add(%b, %c), metadata={op_name=\"x\"y}");
        check(b"%a = f32[] add(%b, %c), calls=%a, %b, metadata={op_name=\"a, b=c\"}, ");
        check(b"%a = f32[] custom-call(%b), custom_call_target=\"x\", custom_call_target=y, kind=kLoop ");
        check(b"%a = f32[] custom-call(%b), custom_call_target=x\"y\", kind=kLoop, kind=kInput");
        check(b"%a = f32[] custom-call(%b), custom_call_target=\"x\" ");
        check(b"%a = f32[] add(%b, %c), metadata={source_line=\"3\" source_file=f.py source_line=4}");
        check(b"%a = f32[] add(%b, %c), metadata={source_line=99999999999999999999 source_file=\"a b\"}");
        check(b"%a = f32[] add(%b, %c), metadata={source_line=-3x source_file=\"\"}");
    }
}
