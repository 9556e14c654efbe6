//! XLA's allocation line (`BufferAllocation::ToShortString`, FORMATS.md §2.2), printed by the
//! same function in the buffer-assignment file and the memory-usage report: one grammar for
//! both formats (`buffer_assignment`, `memory_report`), kept here, in neither.

use crate::lex::{bad, Cur, I32_MAX, I64_MAX, R};

#[derive(Default)]
pub(crate) struct Flags<'a> {
    pub color: i32,
    pub parameter: Option<(i64, &'a [u8], &'a [u8])>,
    pub output_shape: Option<&'a [u8]>,
    pub constant: bool,
    pub thread_local: bool,
    pub maybe_live_out: bool,
    pub preallocated_temp: bool,
    /// `page N` (XLA 2026, jax ≥ 0.11): `allocations.page`.
    pub page: Option<i32>,
    /// Flags this grammar does not know (a newer XLA): (byte offset in the line, raw text),
    /// kept raw in `flags` and reported once per file and word as a `notes` row.
    pub unknown: Vec<(usize, &'a [u8])>,
}

const FLAG_NAMES: [&str; 8] = [
    "color",
    "parameter",
    "output",
    "constant",
    "thread-local",
    "maybe-live-out",
    "preallocated-temp",
    "page",
];

/// Index of an unknown flag in the `seen` bits: never checked for repeats (we cannot tell
/// what a repeat of a flag we do not know means).
const UNKNOWN_FLAG: usize = usize::MAX;

/// How an allocation line prints its size: bytes (buffer-assignment file) or
/// `HumanReadableNumBytes` (memory-usage report).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SizeForm {
    Bytes,
    Human,
}

/// An allocation line, `allocation N: size S[, FLAG…]:` (§2.2), read from byte `start`.
pub(crate) struct AllocationLine<'a> {
    pub index: i64,
    pub size: i64,
    pub flags: Flags<'a>,
    /// The raw text after the size and its ", ", without the final ':' (`allocations.flags`).
    pub flags_text: &'a [u8],
}

/// `BufferAllocation::ToShortString`: the one grammar of allocation lines, for the
/// buffer-assignment file and the memory-usage report alike.
pub(crate) fn allocation_line(text: &[u8], start: usize, size_form: SizeForm) -> R<AllocationLine<'_>> {
    if !text.ends_with(b":") {
        return bad(text.len(), "expected ':' at the end of the allocation line");
    }
    let flags_end = text.len() - 1;
    let mut cur = Cur { t: text, pos: start, stop: flags_end };
    cur.expect("allocation ", "")?;
    let index = cur.uint("the allocation index", I64_MAX)? as i64;
    cur.expect(": size ", "")?;
    let size = match size_form {
        SizeForm::Bytes => cur.uint("the size in bytes", I64_MAX)? as i64,
        SizeForm::Human => cur.human("the size")?,
    };
    let flags_start = cur.pos;
    let mut f = Flags::default();
    let mut seen: u32 = 0;
    while !cur.at_end() {
        cur.expect(", ", "between allocation flags")?;
        let at = cur.pos;
        let flag = allocation_flag(&mut cur, &mut f)?;
        if flag == UNKNOWN_FLAG {
            continue; // it ran to the next ", " or the final ':' already
        }
        if seen & (1 << flag as u32) != 0 {
            return bad(at, format!("flag {:?} printed twice", FLAG_NAMES[flag]));
        }
        seen |= 1 << flag as u32;
        // A flag ends at the next ", " or at the final ':' ("constant-x" is not "constant").
        if !cur.at_end() && !text[cur.pos..].starts_with(b", ") {
            return bad(cur.pos, "expected ', ' or the final ':' after an allocation flag");
        }
    }
    // The flags' text without the ", " that parts it from the size (issue 51: it began every
    // row's `flags`); a line with no flag has "".
    let flags_text = &text[flags_start..flags_end];
    let flags_text = flags_text.strip_prefix(b", ").unwrap_or(flags_text);
    Ok(AllocationLine { index, size, flags: f, flags_text })
}

/// One flag (§2.2): fills `f`, returns its index in `FLAG_NAMES`.
fn allocation_flag<'a>(cur: &mut Cur<'a>, f: &mut Flags<'a>) -> R<usize> {
    if cur.accept("color ") {
        f.color = cur.uint("the color", I32_MAX)? as i32;
        return Ok(0);
    }
    if cur.accept("parameter ") {
        let n = cur.uint("the parameter number", I64_MAX)? as i64;
        cur.expect(", shape |", "")?;
        let shape = bar_text(cur)?;
        cur.expect(" at ShapeIndex ", "")?;
        let start = cur.pos;
        let Some(index) = cur.index()? else {
            return bad(start, "expected a shape index such as {} or {0,2}");
        };
        f.parameter = Some((n, shape, index));
        return Ok(1);
    }
    if cur.accept("output shape is |") {
        f.output_shape = Some(bar_text(cur)?);
        return Ok(2);
    }
    if cur.accept("page ") {
        f.page = Some(cur.uint("the page number", I32_MAX)? as i32);
        return Ok(7);
    }
    for (i, kw) in FLAG_NAMES.iter().enumerate().skip(3).take(4) {
        if cur.accept(kw) {
            match i {
                3 => f.constant = true,
                4 => f.thread_local = true,
                5 => f.maybe_live_out = true,
                _ => f.preallocated_temp = true,
            }
            return Ok(i);
        }
    }
    unknown_flag(cur, f)
}

/// A flag this grammar does not know: a lower-case word, then anything up to the next ", "
/// outside `|…|`, brackets and braces (a shape may hold ", "), or to the final ':'. Tolerant of
/// the unknown (a newer XLA), strict on structure: anything else is an error.
fn unknown_flag<'a>(cur: &mut Cur<'a>, f: &mut Flags<'a>) -> R<usize> {
    let start = cur.pos;
    let view = cur.view();
    if !view.first().is_some_and(u8::is_ascii_lowercase) {
        return bad(cur.pos, "expected an allocation flag (color N, parameter N, shape |…| at ShapeIndex {…}, output shape is |…|, constant, thread-local, maybe-live-out, preallocated-temp, page N, or another lower-case word)");
    }
    let end = flag_end(view);
    if end == usize::MAX {
        return bad(cur.pos, "unbalanced '|', bracket or brace in an allocation flag");
    }
    cur.pos += end;
    f.unknown.push((start, &view[..end]));
    Ok(UNKNOWN_FLAG)
}

/// Where the flag at the start of `v` ends: the next ", " at depth 0 outside `|…|`, or the end
/// of `v`; `usize::MAX` when a bracket closes what is not open or stays open.
fn flag_end(v: &[u8]) -> usize {
    let (mut depth, mut in_bars) = (0i32, false);
    for (i, &c) in v.iter().enumerate() {
        match c {
            b'|' => in_bars = !in_bars,
            _ if in_bars => {}
            b'[' | b'{' | b'(' => depth += 1,
            b']' | b'}' | b')' => {
                depth -= 1;
                if depth < 0 {
                    return usize::MAX;
                }
            }
            b',' if depth == 0 && v.get(i + 1) == Some(&b' ') => return i,
            _ => {}
        }
    }
    if depth != 0 || in_bars { usize::MAX } else { v.len() }
}

impl<'a> AllocationLine<'a> {
    /// The keyword of unknown flag `raw` (its first word): what a note is deduplicated by.
    pub fn flag_word(raw: &[u8]) -> &[u8] {
        let end = raw.iter().position(|&c| c == b' ').unwrap_or(raw.len());
        &raw[..end]
    }
}

pub(crate) fn bar_text<'a>(cur: &mut Cur<'a>) -> R<&'a [u8]> {
    let Some(close) = memchr::memchr(b'|', cur.view()) else {
        return bad(cur.pos, "expected the closing '|' of the shape");
    };
    let shape = &cur.view()[..close];
    cur.pos += close + 1;
    Ok(shape)
}


/// The note of an allocation flag a newer XLA prints (`allocation_line`'s `unknown`), for the
/// buffer-assignment file and the memory-usage report alike.
pub(crate) fn unknown_flag_note(raw: &[u8]) -> crate::driver::Note<'_> {
    crate::driver::Note {
        kind: "unknown_flag",
        token: AllocationLine::flag_word(raw),
        text: raw,
        message: format!("unknown allocation flag '{}' (newer XLA?); kept raw in flags", String::from_utf8_lossy(raw)),
    }
}
