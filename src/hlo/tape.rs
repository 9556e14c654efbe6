//! The two stages of an instruction line (issue 26): a **field tape** (stage 1) that records
//! where each field of the line lies, and **decoders** (stage 2) that read the columns a read
//! asks for from it and nothing else.
//!
//! Stage 1 (`build`) is one walk over the line's structural bytes (`find_struct`: brackets,
//! quotes, commas, '/', '\\') that checks the line shape (`[ROOT ]%name = SHAPE opcode(…)`,
//! balanced brackets, closed strings and comments, `, KEY=VALUE` items) and records the spans
//! of name, shape, opcode, operands (with their depth-1 commas), every attribute, and the
//! metadata items (`op_name`, `op_type`, `source_file`, `source_line`, `stack_frame_id`).
//! It answers only when it is certain that `parse_instruction` accepts the line with exactly
//! these pieces (the certainty argument is `summary::summary_fast`'s: no '\\' outside a
//! metadata string — an escaped one is kept quoted and unescaped in stage 2 as the full parse
//! does —, comments only as complete `/*…*/` without '"', metadata in its printed
//! `{k="v" k=word}` form, metadata numbers that fit i32); otherwise it says `Unsure` and the caller runs the
//! full parse — the fallback decides every line the tape cannot, so no table changes.
//!
//! Because a line the tape accepts is one the full parse accepts with the same pieces, a
//! projected read that decodes only some columns gives those columns exactly as a full read
//! does, and the same rows and errors: the structure of every line (and the form of its
//! metadata) is still checked; only the decoding of unwanted columns (operand names, called
//! computations, metadata strings, unquoting `custom_call_target` / `backend_config`) is
//! skipped.

use std::borrow::Cow;

use super::attributes::Attr;
use super::instruction::{instr_start, name_list, opcode_end, operand_names, operands_plain, Instr, Scratch, CALLED_KEYS};
use crate::lex::structure::{self, string_end_escaped, Struct, Unsure, SHAPE_CLASS};
use super::scan::*;

/// A byte range of the line.
pub type Span = (usize, usize);

/// First occurrence of the attribute keys the tables use (`Tape::slots`).
pub(super) const METADATA: usize = 0;
pub(super) const TARGET: usize = 1;
pub(super) const BACKEND_CONFIG: usize = 2;
pub(super) const KIND: usize = 3;
pub(super) const SHARDING: usize = 4;

/// Metadata items (`Tape::md`): string values without their quotes (they hold no escapes), bare
/// words as printed; the two numbers raw (quotes included if any).
pub(super) const OP_NAME: usize = 0;
pub(super) const OP_TYPE: usize = 1;
pub(super) const SOURCE_FILE: usize = 2;
pub(super) const SOURCE_LINE: usize = 3;
pub(super) const STACK_FRAME_ID: usize = 4;

/// Where each field of one instruction line lies (reused from line to line: no allocation in a
/// steady stream of lines).
#[derive(Default, Debug)]
pub struct Tape {
    pub is_root: bool,
    pub name: Span,
    pub shape: Span,
    pub opcode: Span,
    /// Inside the parentheses.
    pub operands: Span,
    /// The operand region holds no string or comment; its depth-1 commas are in the caller's
    /// `commas` (what `instruction::operands_plain` reads).
    pub plain_operands: bool,
    /// After the ", " that follows the operands, to the end of the line (empty if none).
    pub attributes: Span,
    /// Every `KEY=VALUE` item, in order.
    pub attrs: Vec<Attr>,
    /// Values of the first `metadata`, `custom_call_target`, `backend_config`, `kind`,
    /// `sharding` items.
    pub slots: [Option<Span>; 5],
    /// The metadata items the tables use (first occurrence of each).
    pub md: [Option<Span>; 5],
    /// Bit `k` set: the string item `md[k]` holds a '\\' escape; its span then keeps the
    /// quotes, and stage 2 unescapes it as the full parse does (`unquote_or_raw`).
    pub md_escaped: u8,
}

/// Stage 1: the tape of `text` (an instruction line, or any instruction text) into `tp`, the
/// operands' depth-1 commas into `commas`. `Err(Unsure)` when the full parse must decide.
pub fn build(text: &[u8], tp: &mut Tape, commas: &mut Vec<usize>) -> Result<(), Unsure> {
    let (is_root, name, i) = instr_start(text).ok_or(Unsure)?;
    let j = shape_end(text, i)?;
    if j == i {
        return Err(Unsure);
    }
    let oe = opcode_end(text, j + 1).ok_or(Unsure)?;
    if text.get(oe) != Some(&b'(') {
        return Err(Unsure);
    }
    let n = text.len();
    // a last value ending in blanks (the module parser gives such lines to the general grammar)
    if matches!(text[n - 1], b' ' | b'\t' | b'\r') {
        return Err(Unsure);
    }
    tp.is_root = is_root;
    tp.name = name;
    tp.shape = (i, j);
    tp.opcode = (j + 1, oe);
    tp.attrs.clear();
    tp.slots = [None; 5];
    tp.md = [None; 5];
    tp.md_escaped = 0;
    let close = operands(text, oe, commas, &mut tp.plain_operands)?;
    tp.operands = (oe + 1, close - 1);
    let from = if close == n {
        n
    } else if text[close..].starts_with(b", ") {
        close + 2
    } else {
        return Err(Unsure);
    };
    tp.attributes = (from, n);
    if from < n {
        attributes(text, from, tp)?;
    }
    Ok(())
}

/// `scan::scan_shape` as one state machine (`shape_end_bytes`), its common stretches taken 16
/// bytes at a time: the first space at depth 0, `/*…*/` comments skipped. Unsure where
/// `scan_shape` fails (the full parse then reports it).
#[inline(always)]
fn shape_end(text: &[u8], i: usize) -> Result<usize, Unsure> {
    #[cfg(target_arch = "x86_64")]
    {
        let (i, depth) = match shape_blocks_sse2(text, i) {
            Ok(end) => return Ok(end),
            Err(resume) => resume,
        };
        shape_end_bytes(text, i, depth)
    }
    #[cfg(not(target_arch = "x86_64"))]
    shape_end_bytes(text, i, 0)
}

/// The 16-byte blocks of a shape that hold only letters, digits, ',', ':', brackets and
/// spaces (nearly every shape XLA prints: `f32[48,192]{1,0}`, `(f32[2]{0}, s32[])`,
/// `bf16[8,128]{1,0:T(8,128)(2,1)}`): the byte loop would only move the depth over them, so
/// they are skipped with it moved by the count of open minus close brackets. Ok(end) when a
/// block's first space lies at depth 0; Err((position, depth)) where the byte loop must go on
/// (any other byte, a space inside brackets, fewer than 16 bytes left), in the byte loop's
/// exact state there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn shape_blocks_sse2(text: &[u8], mut i: usize) -> Result<usize, (usize, i64)> {
    use std::arch::x86_64::*;
    let mut depth: i64 = 0;
    while i + 16 <= text.len() {
        // SAFETY: SSE2 is part of x86_64; i + 16 <= len, so the load reads text[i..i + 16].
        let (good, space, open, close) = unsafe {
            let v = _mm_loadu_si128(text.as_ptr().add(i) as *const __m128i);
            let set = |b: u8| _mm_set1_epi8(b as i8);
            let lower = _mm_or_si128(v, set(0x20));
            let letter = _mm_and_si128(_mm_cmpgt_epi8(lower, set(b'a' - 1)), _mm_cmplt_epi8(lower, set(b'z' + 1)));
            let digit = _mm_and_si128(_mm_cmpgt_epi8(v, set(b'0' - 1)), _mm_cmplt_epi8(v, set(b'9' + 1)));
            let punct = _mm_or_si128(_mm_cmpeq_epi8(v, set(b',')), _mm_cmpeq_epi8(v, set(b':')));
            // '[' ']' are '{' '}' with bit 0x20 folded in (letters never reach 0x7B/0x7D)
            let open = _mm_or_si128(_mm_cmpeq_epi8(v, set(b'(')), _mm_cmpeq_epi8(lower, set(b'{')));
            let close = _mm_or_si128(_mm_cmpeq_epi8(v, set(b')')), _mm_cmpeq_epi8(lower, set(b'}')));
            let space = _mm_cmpeq_epi8(v, set(b' '));
            let good = _mm_or_si128(_mm_or_si128(_mm_or_si128(letter, digit), _mm_or_si128(punct, space)), _mm_or_si128(open, close));
            let mask = |m: __m128i| _mm_movemask_epi8(m) as u32;
            (mask(good), mask(space), mask(open), mask(close))
        };
        // the bytes before the first space (all 16 if none)
        let before = if space == 0 { 0xFFFF } else { (1u32 << space.trailing_zeros()) - 1 };
        if !good & before != 0 {
            return Err((i, depth));
        }
        let d = depth + (open & before).count_ones() as i64 - (close & before).count_ones() as i64;
        if space != 0 {
            return if d == 0 { Ok(i + space.trailing_zeros() as usize) } else { Err((i, depth)) };
        }
        depth = d;
        i += 16;
    }
    Err((i, depth))
}

/// `shape_end` a byte at a time from `i` at bracket depth `depth` (shapes are short and dense
/// in brackets: no search pays).
#[inline(always)]
fn shape_end_bytes(text: &[u8], mut i: usize, mut depth: i64) -> Result<usize, Unsure> {
    while i < text.len() {
        match SHAPE_CLASS[text[i] as usize] {
            0 => {}
            1 => depth += 1,
            2 => depth -= 1,
            3 => {
                if depth == 0 {
                    return Ok(i);
                }
            }
            4 if text.get(i + 1) == Some(&b'*') => {
                i = skip_comment(text, i).map_err(|_| Unsure)?;
                continue;
            }
            _ => return Err(Unsure),
        }
        i += 1;
    }
    Err(Unsure)
}

/// The operand list from its '(' at `open`: index just past its ')'; depth-1 commas recorded,
/// `plain` false when a string or comment is in it.
#[inline(always)]
fn operands(text: &[u8], open: usize, commas: &mut Vec<usize>, plain: &mut bool) -> Result<usize, Unsure> {
    commas.clear();
    *plain = true;
    let mut depth: usize = 0;
    let mut k = open;
    loop {
        k = find_struct(text, k).ok_or(Unsure)?;
        match structure::at(text, k)? {
            Struct::Open => depth += 1,
            Struct::Close => {
                depth -= 1; // >= 1 here: the first byte is the '('
                if depth == 0 {
                    break;
                }
            }
            Struct::String(e) => {
                *plain = false;
                // the full parse strips comments from the operands with a string-blind rule
                if memchr::memchr(b'/', &text[k..e]).is_some() {
                    return Err(Unsure);
                }
                k = e - 1;
            }
            Struct::Comma => {
                if depth == 1 {
                    commas.push(k);
                }
            }
            Struct::Comment(e) => {
                *plain = false;
                k = e - 1;
            }
        }
        k += 1;
    }
    if text[k] != b')' {
        return Err(Unsure); // `(…]`: the general grammar reports it
    }
    Ok(k + 1)
}

/// The `KEY=VALUE` items of `text[from..]` (items start at depth-0 ", KEY="), as
/// `attributes::split_attributes` cuts them.
#[inline(always)]
fn attributes(text: &[u8], from: usize, tp: &mut Tape) -> Result<(), Unsure> {
    let n = text.len();
    let mut item = from;
    // the '=' of the item at `item` (the cut before it already found it)
    let mut eq = key_eq_at(text, item).ok_or(Unsure)?;
    loop {
        let vstart = eq + 1;
        if matches!(text.get(vstart), None | Some(b' ' | b'\t' | b',')) {
            return Err(Unsure);
        }
        if tp.slots[METADATA].is_none() && &text[item..eq] == b"metadata" {
            // the metadata value walked once, item by item: its end is the '}' after the last
            // item, where the generic walk below would end it too (strings are skipped the
            // same way, words hold no structural byte) if a ", KEY=" or the line end follows
            let vend = metadata(text, vstart, &mut tp.md, &mut tp.md_escaped)? + 1;
            let next_eq = if vend < n && text[vend..].starts_with(b", ") { key_eq_at(text, vend + 2) } else { None };
            if vend < n && next_eq.is_none() {
                return Err(Unsure);
            }
            tp.attrs.push(Attr { key: (item, eq), value: (vstart, vend) });
            tp.slots[METADATA] = Some((vstart, vend));
            match next_eq {
                None => return Ok(()),
                Some(e) => (item, eq) = (vend + 2, e),
            }
            continue;
        }
        let mut q = vstart;
        let mut depth: usize = 0;
        let mut next_eq = 0;
        let vend = loop {
            let Some(p) = find_struct(text, q) else {
                if depth != 0 {
                    return Err(Unsure);
                }
                break n;
            };
            q = p;
            match structure::at(text, q)? {
                Struct::Open => depth += 1,
                Struct::Close => depth = depth.checked_sub(1).ok_or(Unsure)?,
                Struct::String(e) | Struct::Comment(e) => q = e - 1,
                Struct::Comma => {
                    if depth == 0 {
                        if matches!(text[q - 1], b' ' | b'\t') {
                            return Err(Unsure);
                        }
                        if text.get(q + 1) == Some(&b' ') {
                            if let Some(e) = key_eq_at(text, q + 2) {
                                next_eq = e;
                                break q;
                            }
                        }
                        if super::attributes::irregular_comma(text, q) {
                            return Err(Unsure);
                        }
                    }
                }
            }
            q += 1;
        };
        tp.attrs.push(Attr { key: (item, eq), value: (vstart, vend) });
        let slot = match &text[item..eq] {
            b"metadata" => METADATA,
            b"custom_call_target" => TARGET,
            b"backend_config" => BACKEND_CONFIG,
            b"kind" => KIND,
            b"sharding" => SHARDING,
            _ => usize::MAX,
        };
        if slot != usize::MAX && tp.slots[slot].is_none() {
            tp.slots[slot] = Some((vstart, vend));
        }
        if vend == n {
            return Ok(());
        }
        (item, eq) = (vend + 2, next_eq);
    }
}

/// The `KEY=` of a metadata item the tables use, read 8 bytes at a time as they are printed
/// (`op_name=`, `op_type=`, `source_file=`, `source_line=`, `stack_frame_id=`): the index of
/// its '=' and its `md` slot, the same as `key_eq_at` and the key's name give. None: any other
/// text (then the caller asks `key_eq_at`).
#[inline(always)]
fn known_metadata_key(text: &[u8], pos: usize) -> Option<(usize, usize)> {
    const fn word(s: &[u8; 8]) -> u64 {
        u64::from_le_bytes(*s)
    }
    let first = u64::from_le_bytes(text.get(pos..pos + 8)?.try_into().ok()?);
    let then = |tail: &[u8]| text.get(pos + 8..pos + 8 + tail.len()) == Some(tail);
    match first {
        w if w == word(b"op_name=") => Some((pos + 7, OP_NAME)),
        w if w == word(b"op_type=") => Some((pos + 7, OP_TYPE)),
        w if w == word(b"source_f") && then(b"ile=") => Some((pos + 11, SOURCE_FILE)),
        w if w == word(b"source_l") && then(b"ine=") => Some((pos + 11, SOURCE_LINE)),
        w if w == word(b"stack_fr") && then(b"ame_id=") => Some((pos + 14, STACK_FRAME_ID)),
        _ => None,
    }
}

/// The metadata value at `text[open]` in its printed form `{k="v" k=word …}` (single spaces;
/// a string with '\\' escapes is kept quoted, its bit set in `escaped`): the items the tables
/// use into `md`, as `attributes::parse_metadata` reads them; returns the index of its closing
/// '}'. Unsure for any other form (the first metadata value included), for a quoted number
/// with an escape, and for a number that has the form of an integer but does not fit i32 (the
/// full parse reports it).
#[inline(always)]
fn metadata(text: &[u8], open: usize, md: &mut [Option<Span>; 5], escaped: &mut u8) -> Result<usize, Unsure> {
    if text[open] != b'{' {
        return Err(Unsure);
    }
    let mut pos = open + 1;
    if text.get(pos) == Some(&b'}') {
        return Ok(pos);
    }
    loop {
        let (eq, k) = match known_metadata_key(text, pos) {
            Some(known) => known,
            None => {
                let eq = key_eq_at(text, pos).ok_or(Unsure)?;
                let k = match &text[pos..eq] {
                    b"op_name" => OP_NAME,
                    b"op_type" => OP_TYPE,
                    b"source_file" => SOURCE_FILE,
                    b"source_line" => SOURCE_LINE,
                    b"stack_frame_id" => STACK_FRAME_ID,
                    // a key XLA does not allow gives a note: the full parse records it
                    key if !super::rules::known_metadata_key(key) => return Err(Unsure),
                    _ => usize::MAX,
                };
                (eq, k)
            }
        };
        let i = eq + 1;
        let mut has_escape = false;
        let (val, j) = if text.get(i) == Some(&b'"') {
            let (j, esc) = string_end_escaped(text, i)?;
            has_escape = esc;
            // an escaped string keeps its quotes: stage 2 unquotes it
            (if esc { (i, j) } else { (i + 1, j - 1) }, j)
        } else {
            let j = text[i..].iter().position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'+'))).map_or(text.len(), |p| p + i);
            ((i, j), j)
        };
        // the two numbers raw (quotes included if any), strings without their quotes
        let value = if k == SOURCE_LINE || k == STACK_FRAME_ID { (i, j) } else { val };
        if k != usize::MAX && md[k].is_none() {
            if has_escape {
                if k >= SOURCE_LINE {
                    return Err(Unsure); // a number in quotes with an escape: the full parse decides
                }
                *escaped |= 1 << k;
            }
            // (fewer than 10 characters always fit i32, the full parse's range: `ascii_i32`)
            if k >= SOURCE_LINE && j - i >= 10 && ascii_i32(&text[i..j], true).is_err() {
                return Err(Unsure);
            }
            md[k] = Some(value);
        }
        match text.get(j) {
            Some(b'}') => return Ok(j),
            Some(b' ') if text.get(j + 1) != Some(&b'}') => pos = j + 1,
            _ => return Err(Unsure),
        }
    }
}

/// Which decoders stage 2 runs (the columns a read builds).
#[derive(Clone, Copy, Debug)]
pub struct Want {
    /// `operands`
    pub operands: bool,
    /// `called_computations`
    pub called: bool,
    /// `op_name`, `op_type`, `source_*`, `stack_frame_id`
    pub metadata: bool,
    /// `custom_call_target` (also the `custom_calls` table)
    pub target: bool,
    /// `backend_config` (also the `custom_calls` table)
    pub backend_config: bool,
}

impl Want {
    pub const ALL: Want = Want { operands: true, called: true, metadata: true, target: true, backend_config: true };
}

/// Stage 2: the instruction from its tape, the wanted fields decoded (operand and called names
/// into `sc`), the others empty/None. With `Want::ALL`, what `parse_instruction` gives.
/// `commas` must be what `build` recorded. None: a decoder met what the tape could not rule
/// out (not expected; the caller then runs the full parse).
#[inline(always)]
pub fn decode<'a>(text: &'a [u8], tp: &Tape, sc: &mut Scratch, want: Want) -> Option<Instr<'a>> {
    let span = |s: Span| &text[s.0..s.1];
    let opcode = span(tp.opcode);
    sc.operands.clear();
    sc.operand_paths.clear();
    sc.operand_path_ends.clear();
    sc.unknown_attrs.clear();
    sc.unknown_md.clear(); // (the tape leaves a metadata key XLA does not allow to the full parse)
    sc.empty_operand = false;
    for a in &tp.attrs {
        if !super::attributes::known_attribute(span(a.key)) {
            sc.unknown_attrs.push((a.key.0, a.key.1, a.value.1));
        }
    }
    sc.called.clear();
    sc.owned.clear();
    if want.operands && opcode != b"parameter" && opcode != b"constant" {
        if tp.plain_operands {
            operands_plain(text, tp.operands, sc);
        } else {
            operand_names(text, tp.operands, sc).ok()?;
        }
    }
    if want.called {
        for a in &tp.attrs {
            if CALLED_KEYS.contains(&span(a.key)) {
                name_list(text, a.value, sc);
            }
        }
    }
    let md = |k: usize| if want.metadata { tp.md[k].map(span) } else { None };
    // a string item with an escape is kept quoted by stage 1: unescaped here, as the full parse
    let md_text = |k: usize| md(k).map(|v| if tp.md_escaped >> k & 1 != 0 { unquote_or_raw(v) } else { Cow::Borrowed(v) });
    let int = |k: usize| md(k).and_then(|v| ascii_i32(v, true).ok().flatten());
    let slot = |k: usize| tp.slots[k].map(span);
    Some(Instr {
        is_root: tp.is_root,
        name: span(tp.name),
        shape: span(tp.shape),
        opcode,
        operand_text: span(tp.operands),
        attributes: span(tp.attributes),
        op_name: md_text(OP_NAME),
        op_type: md_text(OP_TYPE),
        source_file: md_text(SOURCE_FILE),
        source_line: int(SOURCE_LINE),
        stack_frame_id: int(STACK_FRAME_ID),
        custom_call_target: if want.target { slot(TARGET).map(unquote_or_raw) } else { None },
        backend_config: if want.backend_config { slot(BACKEND_CONFIG).map(unquote_or_raw) } else { None },
        fusion_kind: slot(KIND),
        sharding: slot(SHARDING),
        number_error: None,
    })
}

/// Test support (`tape::tests` and the fuzz target `hlo`): when the tape answers for `text`,
/// the full parse accepts it, a full decode is the full parse field for field, and a decode
/// of no column gives the same spans and decodes nothing. Returns whether the tape answered.
#[doc(hidden)]
pub fn assert_tape_agrees(text: &[u8], tp: &mut Tape, commas: &mut Vec<usize>, sc: &mut Scratch, sc2: &mut Scratch) -> bool {
    use super::instruction::{parse_instruction, Piece};
    fn names(text: &[u8], sc: &Scratch, list: &[Piece]) -> Vec<Vec<u8>> {
        list.iter().map(|&p| sc.piece(text, p).to_vec()).collect()
    }
    // the instruction as text, for comparing two parses (pieces resolved)
    fn shown(text: &[u8], i: &Instr<'_>, sc: &Scratch) -> String {
        format!("{i:?} operands={:?} called={:?}", names(text, sc, &sc.operands), names(text, sc, &sc.called))
    }
    let full = parse_instruction(text, sc2);
    if build(text, tp, commas).is_err() {
        return false;
    }
    let full = full.unwrap_or_else(|| panic!("tape accepted what the full parse rejects: {:?}", String::from_utf8_lossy(text)));
    assert_eq!(full.number_error, None, "{:?}", String::from_utf8_lossy(text));
    std::mem::swap(&mut sc.commas, commas);
    let ins = decode(text, tp, sc, Want::ALL).expect("decodes");
    std::mem::swap(&mut sc.commas, commas);
    assert_eq!(shown(text, &ins, sc), shown(text, &full, sc2), "{:?}", String::from_utf8_lossy(text));
    let none = Want { operands: false, called: false, metadata: false, target: false, backend_config: false };
    let p = decode(text, tp, sc, none).expect("decodes");
    assert_eq!(
        (p.name, p.opcode, p.shape, p.is_root, p.operand_text, p.attributes, p.fusion_kind, p.sharding),
        (full.name, full.opcode, full.shape, full.is_root, full.operand_text, full.attributes, full.fusion_kind, full.sharding)
    );
    assert!(sc.operands.is_empty() && sc.called.is_empty() && p.op_name.is_none() && p.backend_config.is_none());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::instruction::parse_instruction;

    /// The tape's walks jump between the bytes of `find_struct` and read them by
    /// `structure::CLASS`: the two sets are one.
    #[test]
    fn structure_class_bytes_are_the_struct_set() {
        for b in 0..=255u8 {
            assert_eq!(structure::CLASS[b as usize] != 0, HLO.contains(STRUCT, b), "byte {b}");
        }
    }

    /// `shape_end` is `scan_shape` wherever that succeeds, from every position of every line.
    #[test]
    fn shape_end_is_scan_shape() {
        let mut lines = hlo_lines();
        lines.truncate(20_000);
        lines.push(b"(f32[], /*i=1*/ s32[]) /*x*/ ) ] [ } a".to_vec());
        for l in &lines {
            for i in 0..l.len().min(60) {
                match scan_shape_in(l, i) {
                    Ok(j) => assert_eq!(shape_end(l, i).ok(), Some(j), "{:?} at {i}", String::from_utf8_lossy(l)),
                    Err(_) => assert!(shape_end(l, i).is_err(), "{:?} at {i}", String::from_utf8_lossy(l)),
                }
            }
        }
    }

    /// The 16-byte skip of `shape_end` is the byte loop's result on every shape-like text: every
    /// probe byte at every position, around real shapes.
    #[test]
    fn shape_blocks_equal_the_byte_loop() {
        let bases: [&[u8]; 5] = [b"f32[48,192]{1,0} add(", b"(f32[2]{0}, s32[]) tuple(", b"bf16[8,128]{1,0:T(8,128)(2,1)} copy(", b"((f32[1], s32[2,3]{1,0}), pred[]) while(", b"f32[] c("];
        let probes: &[u8] = b" ([{)]}/*,:a0_#+<=?~\"\x80\x00T";
        for base in bases {
            for len in [base.len(), 17, 33] {
                let base: Vec<u8> = base.iter().copied().cycle().take(len.max(base.len())).collect();
                for at in 0..base.len() {
                    for &b in probes {
                        let mut t = base.clone();
                        t[at] = b;
                        assert_eq!(shape_end(&t, 0), shape_end_bytes(&t, 0, 0), "{:?}", String::from_utf8_lossy(&t));
                    }
                }
            }
        }
    }

    fn hlo_lines() -> Vec<Vec<u8>> {
        let files = super::super::damaged::test_data_files();
        let mut lines = vec![];
        for f in files {
            let data = std::fs::read(&f).unwrap();
            for line in data.split(|&b| b == b'\n') {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.starts_with(b"  ") && line.len() < 100_000 {
                    lines.push(line.to_vec());
                }
            }
        }
        lines
    }

    /// Every indented line under tests/data (instruction lines and more), and damaged variants:
    /// the tape answers only where the full parse agrees, and for nearly all instruction lines.
    #[test]
    fn tape_equals_full_parse() {
        let lines = hlo_lines();
        let (mut tp, mut commas, mut sc, mut sc2) = (Tape::default(), vec![], Scratch::default(), Scratch::default());
        let (mut parsed, mut taped) = (0usize, 0usize);
        for l in &lines {
            let ok = parse_instruction(l, &mut sc2).is_some_and(|i| i.number_error.is_none());
            parsed += ok as usize;
            taped += assert_tape_agrees(l, &mut tp, &mut commas, &mut sc, &mut sc2) as usize;
        }
        assert!(parsed > 10_000, "{parsed} instruction lines");
        assert!(taped * 100 > parsed * 95, "tape answered {taped} of {parsed}");
        println!("tape answered {taped} of {parsed} parsed lines ({} indented)", lines.len());
        let inserts: [&[u8]; 27] = [b"\"", b"\\", b"/*", b"*/", b"{", b"}", b"(", b")", b",", b", ", b", a=", b" ", b"=", b"op_name=", b"\xc2\xa0", b"metadata={op_name=\"q\"}",
            b"source_line=", b"stack_frame_id=", b", kind=kLoop", b", custom_call_target=\"t\"", b"99999999999999999999", b" \t", b", calls=%x", b"/",
            b"2147483647", b"2147483648", b"-2147483649"];
        let mut rng = 0x9e3779b97f4a7c15u64;
        for t in lines.iter().step_by(7) {
            for m in super::super::damaged::damaged_variants(t, &inserts, 10, &mut rng) {
                assert_tape_agrees(&m, &mut tp, &mut commas, &mut sc, &mut sc2);
            }
        }
        // metadata numbers are int32 columns: the tape answers only for numbers that fit
        let out_of_range: [&[u8]; 4] = [
            b"  %a = f32[] add(%b, %c), metadata={source_line=99999999999999999999}",
            b"  %a = f32[] add(%b, %c), metadata={stack_frame_id=9223372036854775807 source_line=-9223372036854775808}",
            b"  %a = f32[] add(%b, %c), metadata={source_line=2147483648}",
            b"  %a = f32[] add(%b, %c), metadata={op_name=\"x\" stack_frame_id=-2147483649}",
        ];
        for t in out_of_range {
            assert!(!assert_tape_agrees(t, &mut tp, &mut commas, &mut sc, &mut sc2), "{:?}", String::from_utf8_lossy(t));
            assert!(parse_instruction(t, &mut sc).unwrap().number_error.is_some());
        }
        for t in [
            &b"  %a = f32[] add(%b, %c), metadata={source_line=2147483647 stack_frame_id=-2147483648}"[..],
            b"  %a = f32[] add(%b, %c), metadata={source_line=0002147483647 stack_frame_id=999999999}",
            b"  %a = f32[] add(%b, %c), metadata={op_name=\"x\" op_name=\"y\" op_type=w source_file=\"\"}, metadata={op_name=\"z\"}",
            b"  %m = f32[8]{0} call(%a, %b/*x*/c, %g#2, ...(+3)), calls=%sum, %w, control-predecessors={%ar}, to_apply={%q, /*c*/%r}",
            b"  %k = f32[8]{0} custom-call(%p), custom_call_target=\"x\", backend_config={\"a\": \"}, b=\", \"c\": [1]}",
            b"  %t = (f32[], /*index=1*/f32[]) tuple(%a0, /*index=1*/%a5), sharding={{replicated}, /*index=1*/{maximal device=0}}",
            b"  %p = f32[] parameter(0), metadata={op_name=a}",
        ] {
            let answered = assert_tape_agrees(t, &mut tp, &mut commas, &mut sc, &mut sc2);
            assert!(answered, "{:?}", String::from_utf8_lossy(t));
        }
        // the ends of a metadata value (walked item by item, not by the generic cut)
        let mut answered = 0;
        for md in [
            &b"{}"[..], b"{}, kind=kLoop", b"{op_name=\"a\"}x", b"{op_name=\"a\"} , kind=x", b"{op_name=\"a\" }", b"{op_name=\"a\"}}", b"x",
            b"{op_name=\"a\"},kind=kLoop", b"{op_name=\"a\"}, notakey", b"{op_name=\"a\"}, k=v", b"{op_name=\"a}, k=v\"}", b"{op_name={x}}",
            b"{ op_name=\"a\"}", b"{op_name=\"a\"  source_line=1}", b"{op_name=a-b.c+d source_line=1}", b"{op_name=\"a\" source_line=1", b"{op_name=}",
            b"{op_name= source_line=2}", b"{=1}", b"{op_name=\"a\"}, metadata={op_name=\"b\"}",
        ] {
            let t = [&b"  %a = f32[] add(%b, %c), metadata="[..], md].concat();
            answered += assert_tape_agrees(&t, &mut tp, &mut commas, &mut sc, &mut sc2) as usize;
        }
        assert!(answered >= 6, "{answered}");
        // escapes in metadata strings (jax prints parameter names as `params[\'emb\']`): the
        // tape answers and unescapes as the full parse does; a quoted number with an escape is
        // left to the full parse
        for (t, answers) in [
            (&br#"  %p = f32[96,48]{1,0} parameter(0), metadata={op_name="params[\'emb\']"}"#[..], true),
            (br#"  %a = f32[] add(%b, %c), metadata={op_type="x\"y" op_name="a\\b" source_file="f\"" source_line=3}"#, true),
            (br#"  %a = f32[] add(%b, %c), metadata={op_name="a\"}, kind=kLoop"#, false),
            (br#"  %a = f32[] add(%b, %c), metadata={op_name="a" source_line="1\2"}"#, false),
            (br#"  %a = f32[] add(%b, %c), metadata={op_name="a\"#, false),
        ] {
            assert_eq!(assert_tape_agrees(t, &mut tp, &mut commas, &mut sc, &mut sc2), answers, "{:?}", String::from_utf8_lossy(t));
        }
    }
}
