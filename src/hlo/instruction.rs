//! One instruction, `[  ][ROOT ]%name = SHAPE opcode(OPERANDS)[, ATTRS]` (FORMATS.md §3.6).
//!
//! The same parser reads module lines and the `from instruction:` texts of buffer-assignment
//! files, like the reference's `parse_instruction`. Results are slices of the text; the only
//! copies are unescaped strings and (rarely) names that a `/*…*/` comment cut in two. Lists go
//! into a reusable `Scratch`, so a steady stream of lines allocates nothing.

use std::borrow::Cow;

use super::attributes::{parse_metadata, split_attributes, Attr};
use super::scan::*;

/// Keys whose values name called computations (schema: instructions.called_computations).
pub const CALLED_KEYS: &[&[u8]] = &[
    b"calls",
    b"to_apply",
    b"body",
    b"condition",
    b"branch_computations",
    b"true_computation",
    b"false_computation",
    b"select",
    b"scatter",
    b"called_computations",
];

/// A name: a range of the instruction text, or of `Scratch::owned` when it had to be rebuilt.
#[derive(Clone, Copy, Debug)]
pub enum Piece {
    Text(usize, usize),
    Owned(usize, usize),
}

/// Reusable buffers of the instruction parser.
#[derive(Default)]
pub struct Scratch {
    pub attrs: Vec<Attr>,
    pub operands: Vec<Piece>,
    /// Per operand the end of its tuple path in `operand_paths` (`%x#0#1`: compact tuple
    /// operands, XLA 2026; a whole value has an empty path).
    pub operand_path_ends: Vec<u32>,
    pub operand_paths: Vec<i32>,
    /// Attributes with a key no XLA we know prints: (key start, key end, value end) in the
    /// instruction text (`attributes::known_attribute`; each gives a `notes` row).
    pub unknown_attrs: Vec<(usize, usize, usize)>,
    /// Metadata items whose key XLA's parser does not allow: (key start, key end, value end)
    /// in the instruction text (each gives a `notes` row).
    pub unknown_md: Vec<(usize, usize, usize)>,
    /// An item of the operand list is empty (`a, , b`, `a, )`): XLA's parser skips it (a note).
    pub empty_operand: bool,
    pub called: Vec<Piece>,
    pub owned: Vec<u8>,
    pub(super) commas: Vec<usize>,
    stripped: Vec<u8>,
    segs: Vec<(usize, usize, usize)>,
    /// The structural index of the (long) line being parsed.
    ix: HloIndex,
}

impl Scratch {
    /// The tuple path of operand `k` (`operands[k]`).
    #[inline]
    pub fn operand_path(&self, k: usize) -> &[i32] {
        let start = if k == 0 { 0 } else { self.operand_path_ends[k - 1] as usize };
        &self.operand_paths[start..self.operand_path_ends[k] as usize]
    }

    #[inline]
    pub fn piece<'a>(&'a self, text: &'a [u8], p: Piece) -> &'a [u8] {
        match p {
            Piece::Text(a, b) => &text[a..b],
            Piece::Owned(a, b) => &self.owned[a..b],
        }
    }
}

/// What one instruction text says (operands / called computations are in the `Scratch`).
#[derive(Debug)]
pub struct Instr<'a> {
    pub is_root: bool,
    pub name: &'a [u8],
    pub shape: &'a [u8],
    pub opcode: &'a [u8],
    pub operand_text: &'a [u8],
    pub attributes: &'a [u8],
    pub op_name: Option<Cow<'a, [u8]>>,
    pub op_type: Option<Cow<'a, [u8]>>,
    pub source_file: Option<Cow<'a, [u8]>>,
    pub source_line: Option<i32>,
    pub stack_frame_id: Option<i32>,
    pub custom_call_target: Option<Cow<'a, [u8]>>,
    pub backend_config: Option<Cow<'a, [u8]>>,
    pub fusion_kind: Option<&'a [u8]>,
    pub sharding: Option<&'a [u8]>,
    /// Offset in the text of the first metadata number (source_line / stack_frame_id, in
    /// printed order) that has the form of an integer but does not fit i64: the module parser
    /// reports an error there and gives no row.
    pub number_error: Option<usize>,
}

/// `\s*(ROOT )?%?(NAME) = `: (is_root, name range, end of match).
pub(super) fn instr_start(text: &[u8]) -> Option<(bool, (usize, usize), usize)> {
    let name_at = |j: usize| -> Option<((usize, usize), usize)> {
        let j = if text.get(j) == Some(&b'%') { j + 1 } else { j };
        let e = name_end(text, j)?;
        text[e..].starts_with(b" = ").then_some(((j, e), e + 3))
    };
    // the printed form, `  %name = …`: no other blank, no `ROOT `
    if text.starts_with(b"  %") {
        return name_at(2).map(|(n, end)| (false, n, end));
    }
    let i = skip_ws(text, 0);
    if text[i..].starts_with(b"ROOT ") {
        if let Some((n, end)) = name_at(i + 5) {
            return Some((true, n, end));
        }
    }
    name_at(i).map(|(n, end)| (false, n, end))
}

/// `[a-z][a-z0-9-]*` at `i`: its end.
#[inline]
pub(super) fn opcode_end(text: &[u8], i: usize) -> Option<usize> {
    if i < text.len() && text[i].is_ascii_lowercase() {
        Some(opcode_chars_end(text, i + 1))
    } else {
        None
    }
}

/// The first byte at or after `from` that is not `[a-z0-9-]` (or the end): 16 bytes at a time.
#[inline(always)]
fn opcode_chars_end(text: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let from = {
        use std::arch::x86_64::*;
        // SAFETY (the intrinsics): SSE2 is part of x86_64.
        let stops = |v: __m128i| unsafe {
            let set = |b: u8| _mm_set1_epi8(b as i8);
            // signed compares: bytes >= 0x80 are negative, so outside both ranges
            let lower = _mm_and_si128(_mm_cmpgt_epi8(v, set(b'a' - 1)), _mm_cmplt_epi8(v, set(b'z' + 1)));
            let digit = _mm_and_si128(_mm_cmpgt_epi8(v, set(b'0' - 1)), _mm_cmplt_epi8(v, set(b'9' + 1)));
            let ok = _mm_or_si128(_mm_or_si128(lower, digit), _mm_cmpeq_epi8(v, set(b'-')));
            _mm_xor_si128(ok, set(0xFF))
        };
        match crate::lex::classify::sse2_search(text, from, stops) {
            Ok(p) => return p,
            Err(i) => i,
        }
    };
    text[from..].iter().position(|&b| !(b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')).map_or(text.len(), |p| p + from)
}

/// True for a `constant(` instruction whose parentheses do not balance on `text` (counted from
/// the opcode's '(' over every parenthesis, until the count first returns to zero).
pub fn needs_continuation(text: &[u8]) -> bool {
    let Some((_, _, i)) = instr_start(text) else { return false };
    let Ok(j) = scan_shape_in(text, i) else { return false };
    let Some(oe) = opcode_end(text, j + 1) else { return false };
    if &text[j + 1..oe] != b"constant" || text.get(oe) != Some(&b'(') {
        return false;
    }
    parens_open_after(text, oe)
}

/// True when the parentheses from the '(' at `text[open]` do not balance on `text` (every
/// parenthesis counted, strings included, until the count first returns to zero).
pub fn parens_open_after(text: &[u8], open: usize) -> bool {
    debug_assert_eq!(text.get(open), Some(&b'('));
    let mut depth = 0i64;
    let mut k = open;
    while let Some(p) = memchr::memchr2(b'(', b')', &text[k..]) {
        k += p;
        depth += if text[k] == b'(' { 1 } else { -1 };
        if depth == 0 {
            return false;
        }
        k += 1;
    }
    true
}

/// Parse one instruction; None when `text` is not one (the reference's `parse_instruction`
/// returning None: not an instruction start, unbalanced brackets, attributes outside the
/// generic rule, bad metadata).
pub fn parse_instruction<'a>(text: &'a [u8], sc: &mut Scratch) -> Option<Instr<'a>> {
    parse(text, sc).ok().flatten()
}

#[inline(always)]
fn parse<'a>(text: &'a [u8], sc: &mut Scratch) -> ScanResult<Option<Instr<'a>>> {
    let Some((is_root, (na, nb), i)) = instr_start(text) else { return Ok(None) };
    if text.len() < INDEX_FROM {
        return parse_walk(text, &plain(text), sc, is_root, (na, nb), i);
    }
    let mut ix = std::mem::take(&mut sc.ix);
    let r = parse_walk(text, &ix.build(&HLO, text), sc, is_root, (na, nb), i);
    sc.ix = ix;
    r
}

#[inline(always)]
fn parse_walk<'a, W: Walk>(text: &'a [u8], t: &W, sc: &mut Scratch, is_root: bool, (na, nb): (usize, usize), i: usize) -> ScanResult<Option<Instr<'a>>> {
    let j = scan_shape(t, i)?;
    if j == i {
        return Ok(None);
    }
    let Some(oe) = opcode_end(text, j + 1) else { return Ok(None) };
    if oe >= text.len() || text[oe] != b'(' {
        return Ok(None);
    }
    let (close, plain_operands) = match_close_commas(t, oe, &mut sc.commas)?;
    if text[close - 1] != b')' {
        return Err(ScanError::Irregular); // `(…]`: the general grammar reports it
    }
    let attr_from = if close == text.len() {
        close
    } else if text[close..].starts_with(b", ") {
        close + 2
    } else {
        return Ok(None);
    };
    split_attributes(t, attr_from, &mut sc.attrs)?;
    finish(text, sc, Parts { is_root, name: (na, nb), shape: (i, j), opcode: (j + 1, oe), operands: (oe + 1, close - 1), plain_operands, attributes: (attr_from, text.len()) })
}

/// Where the pieces of one instruction lie in its text (`general.rs` finds them with the
/// general grammar, `parse` with the one-line fast path); `sc.attrs` holds the attributes.
pub struct Parts {
    pub is_root: bool,
    pub name: (usize, usize),
    pub shape: (usize, usize),
    pub opcode: (usize, usize),
    pub operands: (usize, usize),
    /// The operand region has no string or comment, and `sc.commas` holds its separators.
    pub plain_operands: bool,
    pub attributes: (usize, usize),
}

/// The instruction from its pieces: operand names, called computations, the attributes the
/// tables use, metadata.
pub fn finish<'a>(text: &'a [u8], sc: &mut Scratch, p: Parts) -> ScanResult<Option<Instr<'a>>> {
    let opcode = &text[p.opcode.0..p.opcode.1];
    let operand_text = &text[p.operands.0..p.operands.1];
    let (is_root, (na, nb), (i, j), (attr_from, attr_end)) = (p.is_root, p.name, p.shape, p.attributes);

    sc.operands.clear();
    sc.operand_paths.clear();
    sc.operand_path_ends.clear();
    sc.unknown_attrs.clear();
    sc.unknown_md.clear();
    sc.empty_operand = false;
    sc.called.clear();
    sc.owned.clear();
    if opcode != b"parameter" && opcode != b"constant" {
        if p.plain_operands {
            operands_plain(text, p.operands, sc);
        } else {
            operand_names(text, p.operands, sc)?;
        }
    }

    // One pass over the attributes: called computations (in order) and the keys the tables
    // use (first occurrence wins).
    let mut slots: [Option<&'a [u8]>; 5] = [None; 5];
    for k in 0..sc.attrs.len() {
        let a = sc.attrs[k];
        let slot = match &text[a.key.0..a.key.1] {
            b"metadata" => 0,
            b"custom_call_target" => 1,
            b"backend_config" => 2,
            b"kind" => 3,
            b"sharding" => 4,
            key => {
                if CALLED_KEYS.contains(&key) {
                    name_list(text, a.value, sc);
                } else if !super::attributes::known_attribute(key) {
                    sc.unknown_attrs.push((a.key.0, a.key.1, a.value.1));
                }
                continue;
            }
        };
        if slots[slot].is_none() {
            slots[slot] = Some(&text[a.value.0..a.value.1]);
        }
    }
    let [metadata, target, backend_config, kind, sharding] = slots;
    let md = match metadata {
        Some(v) => parse_metadata(v)?,
        None => Default::default(),
    };
    if let Some(v) = metadata {
        let base = v.as_ptr() as usize - text.as_ptr() as usize;
        sc.unknown_md.extend(md.unknown.iter().map(|&(a, b, c)| (base + a, base + b, base + c)));
    }
    // Metadata numbers by ASCII byte rules (`-?[0-9]+`); anything else is null, an integer
    // that does not fit i32 (int32 columns) is an error at its first character.
    let mut number_error: Option<usize> = None;
    let mut md_int = |v: Option<&[u8]>| -> Option<i32> {
        let v = v?;
        ascii_i32(v, true).unwrap_or_else(|()| {
            let at = v.as_ptr() as usize - text.as_ptr() as usize;
            number_error = Some(number_error.map_or(at, |e| e.min(at)));
            None
        })
    };
    let source_line = md_int(md.source_line);
    let stack_frame_id = md_int(md.stack_frame_id);
    Ok(Some(Instr {
        is_root,
        name: &text[na..nb],
        shape: &text[i..j],
        opcode,
        operand_text,
        attributes: &text[attr_from..attr_end],
        op_name: md_text(md.op_name, md.plain[0]),
        op_type: md_text(md.op_type, md.plain[1]),
        source_file: md_text(md.source_file, md.plain[2]),
        source_line,
        stack_frame_id,
        custom_call_target: target.map(unquote_or_raw),
        backend_config: backend_config.map(unquote_or_raw),
        fusion_kind: kind,
        sharding,
        number_error,
    }))
}

/// A metadata string value, unescaped (`plain`: a quoted string without escapes).
#[inline]
pub(super) fn md_text(v: Option<&[u8]>, plain: bool) -> Option<Cow<'_, [u8]>> {
    let v = v?;
    Some(if plain { Cow::Borrowed(&v[1..v.len() - 1]) } else { unquote_or_raw(v) })
}

/// `operand_names` for a region without strings or comments, whose depth-0 commas
/// `match_close_commas` has recorded in `sc.commas`: the same items, without a second scan.
pub(super) fn operands_plain(text: &[u8], r: (usize, usize), sc: &mut Scratch) {
    let (a, b) = py_strip(&text[r.0..r.1]);
    if a == b {
        return;
    }
    let (a, b) = (r.0 + a, r.0 + b);
    let mut start = a;
    let n = sc.commas.len();
    for k in 0..=n {
        let end = if k < n { sc.commas[k] } else { b };
        let piece = start;
        start = end + 1;
        let (x, y) = py_strip(&text[piece..end]);
        let item_at = piece + x;
        let item = &text[item_at..piece + y];
        if item.is_empty() || item.starts_with(b"...(") {
            sc.empty_operand |= item.is_empty();
            continue;
        }
        // the usual item, `%name` alone: no space in it, so it is its own last word (the name
        // is searched in the line, not in `item`: a search 16 bytes at a time needs 16 bytes
        // to read, and the name ends where the item does)
        if item[0] == b'%' && name_end(text, item_at + 1) == Some(item_at + item.len()) {
            sc.operands.push(Piece::Text(item_at + 1, item_at + item.len()));
            sc.operand_path_ends.push(sc.operand_paths.len() as u32);
            continue;
        }
        let last_at = item.iter().rposition(|&c| c == b' ').map_or(0, |p| p + 1);
        let last = &item[last_at..];
        let (p, q) = operand_tail(last, &mut sc.operand_paths).unwrap_or((0, last.len()));
        sc.operands.push(Piece::Text(item_at + last_at + p, item_at + last_at + q));
        sc.operand_path_ends.push(sc.operand_paths.len() as u32);
    }
}

/// Runs `f` on the comment-stripped form of `text[r]` with a mapper from its ranges to pieces.
fn with_stripped<R>(
    text: &[u8],
    r: (usize, usize),
    sc: &mut Scratch,
    f: impl FnOnce(&[u8], &mut dyn FnMut(usize, usize) -> Piece) -> R,
) -> R {
    let region = &text[r.0..r.1];
    let mut stripped = std::mem::take(&mut sc.stripped);
    let mut segs = std::mem::take(&mut sc.segs);
    let out = if strip_comments(region, &mut stripped, &mut segs) {
        let owned = &mut sc.owned;
        let mut map = |a: usize, b: usize| match unstrip(&segs, a, b) {
            Some((x, y)) => Piece::Text(r.0 + x, r.0 + y),
            None => {
                let at = owned.len();
                owned.extend_from_slice(&stripped[a..b]);
                Piece::Owned(at, owned.len())
            }
        };
        f(&stripped, &mut map)
    } else {
        f(region, &mut |a, b| Piece::Text(r.0 + a, r.0 + b))
    };
    sc.stripped = stripped;
    sc.segs = segs;
    out
}

/// Operand names of an operand region (§3.6): comments removed, items split at depth-0 commas,
/// an old-style shape prefix dropped (text after the last space), '%' and `#N` removed,
/// `...(+N)` skipped.
pub(super) fn operand_names(text: &[u8], r: (usize, usize), sc: &mut Scratch) -> ScanResult<()> {
    let mut names = std::mem::take(&mut sc.operands);
    let mut paths = std::mem::take(&mut sc.operand_paths);
    let mut ends = std::mem::take(&mut sc.operand_path_ends);
    let mut empty = false;
    let res = with_stripped(text, r, sc, |s, map| {
        let (a, b) = py_strip(s);
        if a == b {
            return Ok(());
        }
        let s = &s[a..b];
        split_top(s, |ia, ib| {
            let item = &s[ia..ib];
            let (x, y) = py_strip(item);
            let item = &item[x..y];
            if item.is_empty() || item.starts_with(b"...(") {
                empty |= item.is_empty();
                return;
            }
            let base = a + ia + x;
            let last_at = memchr::memrchr(b' ', item).map_or(0, |p| p + 1);
            let last = &item[last_at..];
            let (p, q) = operand_tail(last, &mut paths).unwrap_or((0, last.len()));
            names.push(map(base + last_at + p, base + last_at + q));
            ends.push(paths.len() as u32);
        })
    });
    sc.operands = names;
    sc.operand_paths = paths;
    sc.operand_path_ends = ends;
    sc.empty_operand |= empty;
    res
}

/// `%?(NAME)(#[0-9]{1,9})*$` on the last word of an operand: the NAME range; the tuple path
/// (`%x#2`, `%x#0#1`: compact tuple operands, which XLA's parser turns into get-tuple-elements)
/// is appended to `path`. Not of that form: None, and `path` as it was.
fn operand_tail(last: &[u8], path: &mut Vec<i32>) -> Option<(usize, usize)> {
    let s = if last.first() == Some(&b'%') { 1 } else { 0 };
    let e = name_end(last, s)?;
    let mark = path.len();
    let mut i = e;
    while i < last.len() {
        // at most 9 digits: every index fits int32 (XLA's are int64, but no tuple has 10^9
        // elements); longer is not this form
        let digits = last[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if last[i] != b'#' || digits == 0 || digits > 9 {
            path.truncate(mark);
            return None;
        }
        let k = last[i + 1..i + 1 + digits].iter().fold(0i32, |n, &c| n * 10 + (c - b'0') as i32);
        path.push(k);
        i += 1 + digits;
    }
    Some((s, e))
}

/// `%a` / `{%a, %b}` / `%a, %b` → names (comments removed, '%' dropped, empties skipped).
pub(super) fn name_list(text: &[u8], r: (usize, usize), sc: &mut Scratch) {
    let mut names = std::mem::take(&mut sc.called);
    with_stripped(text, r, sc, |s, map| {
        let (mut a, mut b) = py_strip(s);
        if b - a >= 2 && s[a] == b'{' && s[b - 1] == b'}' {
            a += 1;
            b -= 1;
        }
        let v = &s[a..b];
        let mut start = 0;
        loop {
            let end = memchr::memchr(b',', &v[start..]).map_or(v.len(), |p| p + start);
            let (x, y) = py_strip(&v[start..end]);
            let (mut x, y) = (start + x, start + y);
            if x < y && v[x] == b'%' {
                x += 1;
            }
            if x < y {
                names.push(map(a + x, a + y));
            }
            if end == v.len() {
                break;
            }
            start = end + 1;
        }
    });
    sc.called = names;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `opcode_chars_end` is the byte rule `[a-z0-9-]*`: every byte value at every position of
    /// a block and of the tail.
    #[test]
    fn opcode_chars_end_agrees_with_the_byte_rule() {
        let rule = |s: &[u8], from: usize| s[from..].iter().position(|&b| !(b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')).map_or(s.len(), |p| p + from);
        for len in [1usize, 15, 16, 17, 31, 40] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    for from in [0, at.saturating_sub(1), at, len] {
                        assert_eq!(opcode_chars_end(&s, from), rule(&s, from), "{len} {at} {b} {from}");
                    }
                }
            }
        }
    }


    fn names(text: &[u8], sc: &Scratch, list: &[Piece]) -> Vec<String> {
        list.iter().map(|&p| String::from_utf8(sc.piece(text, p).to_vec()).unwrap()).collect()
    }

    #[test]
    fn forms() {
        let mut sc = Scratch::default();
        let t = br#"%multiply.8 = f32[] multiply(f32[] %Arg_.6, f32[] %constant.7), metadata={op_name="m" source_file="/a.py" source_line=67}"#;
        let i = parse_instruction(t, &mut sc).unwrap();
        assert_eq!(names(t, &sc, &sc.operands), ["Arg_.6", "constant.7"]);
        assert_eq!(i.operand_text, b"f32[] %Arg_.6, f32[] %constant.7");
        assert_eq!(i.op_name.as_deref(), Some(&b"m"[..]));
        assert_eq!(i.source_line, Some(67));

        let t = b"%tuple.15 = (f32[], s32[]) tuple((f32[], s32[]) %t.1, f32[] %multiply.8)";
        let i = parse_instruction(t, &mut sc).unwrap();
        assert_eq!(i.shape, b"(f32[], s32[])");
        assert_eq!(names(t, &sc, &sc.operands), ["t.1", "multiply.8"]);

        let t = b"  ROOT %x = f32[] negate(%y)";
        let i = parse_instruction(t, &mut sc).unwrap();
        assert!(i.is_root && i.name == b"x");
        let t = b"  ROOT = f32[] negate(%y)";
        let i = parse_instruction(t, &mut sc).unwrap();
        assert!(!i.is_root && i.name == b"ROOT");

        let t = b"%iota.1 = s32[8]{0} iota(), iota_dimension=0";
        let i = parse_instruction(t, &mut sc).unwrap();
        assert!(sc.operands.is_empty() && i.attributes == b"iota_dimension=0");

        assert!(parse_instruction(b"allocation 0: size 4, parameter 0", &mut sc).is_none());
        assert!(parse_instruction(b"%x = f32[] negate(%y", &mut sc).is_none());
        assert!(parse_instruction(b"", &mut sc).is_none());
        assert!(parse_instruction(b"%x = f32[] negate(%y) junk", &mut sc).is_none());
        assert!(parse_instruction(b"%x = f32[] negate(%y), metadata={op_name=\"a\" !}", &mut sc).is_none());
    }

    #[test]
    fn operands_comments_and_calls() {
        let mut sc = Scratch::default();
        let t = b"  ROOT %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(%a0, %a1, %a2, %a3, %a4, /*index=5*/%a5), sharding={{replicated}, /*index=5*/{devices=[2]0,1}}";
        let i = parse_instruction(t, &mut sc).unwrap();
        assert_eq!(names(t, &sc, &sc.operands), ["a0", "a1", "a2", "a3", "a4", "a5"]);
        assert!(matches!(sc.operands[5], Piece::Text(..)));
        assert_eq!(i.sharding, Some(&b"{{replicated}, /*index=5*/{devices=[2]0,1}}"[..]));

        let t = b"%m = f32[8]{0} call(%a, %b/*x*/c, %g#2, ...(+3)), calls=%sum, %w, control-predecessors={%ar}, to_apply={%q, /*c*/%r}";
        parse_instruction(t, &mut sc).unwrap();
        assert_eq!(names(t, &sc, &sc.operands), ["a", "bc", "g"]);
        assert!(matches!(sc.operands[1], Piece::Owned(..)));
        assert_eq!(names(t, &sc, &sc.called), ["sum", "w", "q", "r"]);
    }

    #[test]
    fn escapes_and_backend_config() {
        let mut sc = Scratch::default();
        let t = br#"  ROOT %c.2 = f32[] custom-call(%p.1), custom_call_target="my\"target", backend_config="a\" b, c=d\\", metadata={op_type="my op" op_name="scope/\"q\"\n" source_file="m\303\251.py" stack_frame_id=3}"#;
        let i = parse_instruction(t, &mut sc).unwrap();
        assert_eq!(i.custom_call_target.as_deref(), Some(&b"my\"target"[..]));
        assert_eq!(i.backend_config.as_deref(), Some(&b"a\" b, c=d\\"[..]));
        assert_eq!(i.op_name.as_deref(), Some(&b"scope/\"q\"\n"[..]));
        assert_eq!(i.source_file.as_deref(), Some("mé.py".as_bytes()));
        assert_eq!(i.stack_frame_id, Some(3));
        let t = br#"%k = f32[8]{0} custom-call(%p), custom_call_target="x", backend_config={"a": "}, b=", "c": [1]}"#;
        let i = parse_instruction(t, &mut sc).unwrap();
        assert_eq!(i.backend_config.as_deref(), Some(&br#"{"a": "}, b=", "c": [1]}"#[..]));
        assert!(matches!(i.backend_config, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn short_form_and_constants() {
        let mut sc = Scratch::default();
        let t = b"  ROOT r = f32[] reduce(p, c), dimensions={0}, to_apply=add.1";
        parse_instruction(t, &mut sc).unwrap();
        assert_eq!(names(t, &sc, &sc.operands), ["p", "c"]);
        assert_eq!(names(t, &sc, &sc.called), ["add.1"]);
        assert!(needs_continuation(b"  %c = f32[2,3]{1,0} constant({"));
        assert!(!needs_continuation(b"  %c = f32[2]{0} constant({1, 2})"));
        assert!(!needs_continuation(b"  %c = f32[2]{0} negate({"));
        let t = b"  %c = f32[2,3]{1,0} constant({\n    { 1, 2, 3 },\n    { 4, 5, 6 }\n  })";
        let i = parse_instruction(t, &mut sc).unwrap();
        assert_eq!(i.operand_text, &b"{\n    { 1, 2, 3 },\n    { 4, 5, 6 }\n  }"[..]);
        assert!(sc.operands.is_empty());
    }
}
