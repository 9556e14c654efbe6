//! The buffer-assignment family (FORMATS.md §2): allocations and their values, `Total bytes
//! used`, `Used values` blocks, `HloLiveRange` (schedule, live ranges, peak, stack-trace
//! breakdown) and the memory-usage report (table and protobuf-text forms).
//!
//! This is a line-for-line port of the reference parser
//! (`python/hlodump/reference/buffer_assignment.py`): the same section-driven state machine,
//! the same grammar walked left to right by a small cursor, so that both report every problem
//! at the same line and byte column, in the same order, and keep the same rows in collect mode.
//! Differences from the reference are bugs (tests/test_fuzz_differential.py looks for them).
//!
//! Robustness: no recursion (the protobuf-text reader is two fixed levels deep), every index is
//! checked, every number is range-checked into its column type (an error, never an overflow),
//! and the work per line is linear in its length.

use crate::error::{Error, FileCtx, Result};
use crate::lines::Lines;
use crate::tables::Tables;

const I64_MAX: u64 = i64::MAX as u64;
const I32_MAX: u64 = i32::MAX as u64;

/// Why a line handler stopped: a grammar failure at a byte position of the line (reported by
/// the driver at that line), or a fatal error (strict mode) raised by a direct report.
enum Stop {
    Bad(usize, String),
    Fatal(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Fatal(e)
    }
}

type R<T> = std::result::Result<T, Stop>;

fn bad<T>(pos: usize, msg: impl Into<String>) -> R<T> {
    Err(Stop::Bad(pos, msg.into()))
}

// --------------------------------------------------------------------------- line cursor

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// `int(digits)` if at most `limit` (digits may be many; leading zeros are fine).
fn to_int(digits: &[u8], limit: u64) -> Option<u64> {
    let first = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    let d = &digits[first..];
    if d.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in d {
        v = v * 10 + (b - b'0') as u64;
    }
    (v <= limit).then_some(v)
}

/// End of `[0-9]{1,3}(?: [0-9]{3})+|[0-9]+` at `pos` (None if no digit there).
fn grouped_end(t: &[u8], pos: usize) -> Option<usize> {
    let run = t[pos.min(t.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if run == 0 {
        return None;
    }
    let group_at = |i: usize| {
        t.len() >= i + 4 && t[i] == b' ' && t[i + 1..i + 4].iter().all(u8::is_ascii_digit)
    };
    if run <= 3 && group_at(pos + run) {
        let mut i = pos + run;
        while group_at(i) {
            i += 4;
        }
        return Some(i);
    }
    Some(pos + run)
}

/// Grouped digits → number (spaces removed), or None if above i64::MAX.
fn grouped_value(s: &[u8]) -> Option<i64> {
    let digits: Vec<u8> = s.iter().copied().filter(|&b| b != b' ').collect();
    to_int(&digits, I64_MAX).map(|v| v as i64)
}

/// `(-?)([0-9]+)(?:\.([0-9]+))?(B|KiB|…|EiB)` at `pos`: (end, sign, whole, frac, power).
/// (end, negative, whole digits, fraction digits, power of 1024).
type HumanMatch<'a> = (usize, bool, &'a [u8], &'a [u8], u32);

fn human_match(t: &[u8], pos: usize) -> Option<HumanMatch<'_>> {
    let mut i = pos;
    let neg = t.get(i) == Some(&b'-');
    if neg {
        i += 1;
    }
    let ws = i;
    while i < t.len() && t[i].is_ascii_digit() {
        i += 1;
    }
    if i == ws {
        return None;
    }
    let whole = &t[ws..i];
    let mut frac = &t[i..i];
    if t.get(i) == Some(&b'.') && t.get(i + 1).is_some_and(u8::is_ascii_digit) {
        let fs = i + 1;
        let mut j = fs;
        while j < t.len() && t[j].is_ascii_digit() {
            j += 1;
        }
        frac = &t[fs..j];
        i = j;
    }
    let rest = &t[i..];
    for (unit, power) in [
        (&b"B"[..], 0),
        (b"KiB", 1),
        (b"MiB", 2),
        (b"GiB", 3),
        (b"TiB", 4),
        (b"PiB", 5),
        (b"EiB", 6),
    ] {
        if rest.starts_with(unit) {
            return Some((i + unit.len(), neg, whole, frac, power));
        }
    }
    None
}

/// `round_half_up(whole.frac × 1024^power)`, exact for any number of digits; None if the
/// magnitude exceeds i64::MAX.
fn human_value(neg: bool, whole: &[u8], frac: &[u8], power: u32) -> Option<i64> {
    let w = to_int(whole, u64::MAX)? as i128;
    let s = 10 * power;
    // floor(0.frac × 2^(s+1)) by one in-place pass over the fraction's digits.
    let m: u128 = 1u128 << (s + 1);
    let mut carry: u128 = 0;
    for &d in frac.iter().rev() {
        let x = (d - b'0') as u128 * m + carry;
        carry = x / 10;
    }
    let twice_frac = carry as i128; // < 2^(s+1)
    let v = (w << s).checked_add((twice_frac + 1) / 2)?;
    if v > I64_MAX as i128 {
        return None;
    }
    Some(if neg { -(v as i64) } else { v as i64 })
}

/// Public form of the size conversion (`576B`, `51.1KiB`, `-2.0KiB`): None if not exactly one.
pub fn human_bytes(s: &[u8]) -> Option<i64> {
    let (end, neg, whole, frac, power) = human_match(s, 0)?;
    if end != s.len() {
        return None;
    }
    human_value(neg, whole, frac, power)
}

struct Cur<'a> {
    t: &'a [u8],
    pos: usize,
    stop: usize,
}

impl<'a> Cur<'a> {
    fn new(t: &'a [u8], pos: usize) -> Cur<'a> {
        Cur {
            t,
            pos,
            stop: t.len(),
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.stop
    }

    fn view(&self) -> &'a [u8] {
        &self.t[self.pos.min(self.stop)..self.stop]
    }

    fn accept(&mut self, lit: &str) -> bool {
        if self.view().starts_with(lit.as_bytes()) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, lit: &str, what: &str) -> R<()> {
        if self.accept(lit) {
            return Ok(());
        }
        let extra = if what.is_empty() {
            String::new()
        } else {
            format!(" {what}")
        };
        bad(self.pos, format!("expected {lit:?}{extra}"))
    }

    fn uint(&mut self, what: &str, limit: u64) -> R<u64> {
        let start = self.pos;
        let n = self
            .view()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if n == 0 {
            return bad(start, format!("expected {what} (digits)"));
        }
        self.pos += n;
        match to_int(&self.t[start..start + n], limit) {
            Some(v) => Ok(v),
            None => bad(start, format!("{what} is out of range (at most {limit})")),
        }
    }

    fn grouped(&mut self, what: &str) -> R<i64> {
        let start = self.pos;
        let Some(end) = grouped_end(&self.t[..self.stop], start) else {
            return bad(start, format!("expected {what} (digits)"));
        };
        self.pos = end;
        match grouped_value(&self.t[start..end]) {
            Some(v) => Ok(v),
            None => bad(start, format!("{what} is out of range (at most {I64_MAX})")),
        }
    }

    fn name(&mut self, what: &str) -> R<&'a [u8]> {
        let v = self.view();
        if !v.first().is_some_and(|&b| is_name_start(b)) {
            return bad(self.pos, format!("expected {what}"));
        }
        let n = 1 + v[1..].iter().take_while(|&&b| is_name_char(b)).count();
        self.pos += n;
        Ok(&v[..n])
    }

    /// An optional shape index `{[0-9,]*}`; a `{` that does not start one is an error.
    fn index(&mut self) -> R<Option<&'a [u8]>> {
        let v = self.view();
        if v.first() != Some(&b'{') {
            return Ok(None);
        }
        let n = v[1..]
            .iter()
            .take_while(|&&b| b.is_ascii_digit() || b == b',')
            .count();
        if v.get(1 + n) != Some(&b'}') {
            return bad(self.pos, "expected a shape index such as {} or {0,2}");
        }
        self.pos += n + 2;
        Ok(Some(&v[..n + 2]))
    }

    fn human(&mut self, what: &str) -> R<i64> {
        let start = self.pos;
        let Some((end, neg, whole, frac, power)) = human_match(&self.t[..self.stop], start) else {
            return bad(
                start,
                format!("expected {what} (a size such as 576B, 51.1KiB, 4.00MiB)"),
            );
        };
        self.pos = end;
        match human_value(neg, whole, frac, power) {
            Some(v) => Ok(v),
            None => bad(
                start,
                format!("{what} is out of range (at most {I64_MAX} bytes)"),
            ),
        }
    }

    fn spaces(&mut self) {
        while self.pos < self.stop && self.t[self.pos] == b' ' {
            self.pos += 1;
        }
    }

    fn rest(&mut self) -> &'a [u8] {
        let r = self.view();
        self.pos = self.stop;
        r
    }

    fn end(&self, what: &str) -> R<()> {
        if self.at_end() {
            Ok(())
        } else {
            bad(self.pos, format!("unexpected text after {what}"))
        }
    }
}

/// `<ID NAME[IDX][ (phi)][ @C]>` (§2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef<'a> {
    pub id: i64,
    pub name: &'a [u8],
    /// `{…}` as printed, or empty when not printed.
    pub index: &'a [u8],
    pub phi: bool,
    pub color: i32,
}

fn value_ref<'a>(cur: &mut Cur<'a>) -> R<ValueRef<'a>> {
    cur.expect("<", "(start of a value reference <ID NAME …>)")?;
    let id = cur.uint("a value id", I64_MAX)? as i64;
    cur.expect(" ", "after the value id")?;
    let name = cur.name("an instruction name")?;
    let index = cur.index()?.unwrap_or(&[]);
    let phi = cur.accept(" (phi)");
    let color = if cur.accept(" @") {
        cur.uint("a color", I32_MAX)? as i32
    } else {
        0
    };
    cur.expect(">", "(end of the value reference)")?;
    Ok(ValueRef {
        id,
        name,
        index,
        phi,
        color,
    })
}

impl<'a> ValueRef<'a> {
    /// A whole `<…>` (nothing else in `s`), or None.
    pub fn parse_whole(s: &'a [u8]) -> Option<ValueRef<'a>> {
        let mut cur = Cur::new(s, 0);
        let r = value_ref(&mut cur).ok()?;
        cur.at_end().then_some(r)
    }
}

// --------------------------------------------------------------------------- parser state

struct Block<'a> {
    header_line: u64,
    /// None: the header was unreadable (rows are not emitted).
    header: Option<ValueRef<'a>>,
    expecting: Expecting,
    positions: Vec<(&'a [u8], &'a [u8])>,
    uses: Vec<(&'a [u8], i32, &'a [u8])>,
    uses_initialized: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Expecting {
    PositionsHeader,
    Positions,
    Uses,
    NoMoreUses,
    NotInitialized,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Allocations,
    Values,
    LiveRange,
    Report,
    Proto,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LiveSub {
    Schedule,
    Buffers,
    Peak,
    AfterPeak,
    Tree,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TableSub {
    Rule,
    Rows,
    Cut,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Ident,
    Number,
    Str,
    LBrace,
    RBrace,
    Colon,
}

struct Token<'a> {
    kind: Kind,
    /// The token's text (ident, number, punctuation) or, for strings, the C-unescaped bytes
    /// decoded as UTF-8 with U+FFFD for invalid sequences.
    value: std::borrow::Cow<'a, [u8]>,
    line: u64,
    text: &'a [u8],
    pos: usize,
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    section: Option<Section>,
    allocation: Option<i64>,
    allocation_broken: bool,
    block: Option<Block<'c>>,
    live_sub: Option<LiveSub>,
    peak_time: i32,
    peak_running: i128,
    tree_row: i32,
    tree_stack: Vec<i32>,
    space: Option<&'c [u8]>,
    space_color: Option<i32>,
    tables_in_space: i32,
    table: i32,
    table_sub: Option<TableSub>,
    proto_tokens: Vec<Token<'c>>,
    proto_depth: u64,
    proto_broken: bool,
}

/// Parse one buffer-assignment-family file (`data` is the whole file).
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    // Like the reference reader, which decodes the whole file before parsing: invalid UTF-8 is
    // reported first (strict mode stops at the first bad byte of the file).
    // Lone CRs likewise (lines.rs).
    let lines = Lines::new(data);
    if lines.has_bad_lines() {
        for line in lines.clone() {
            if let Some(bad) = line.bad {
                ctx.error_at(
                    &mut t.errors,
                    line.no,
                    bad.col,
                    bad.message().to_string(),
                    line.text,
                )?;
            }
        }
    }
    let mut p = Parser::new(ctx, t);
    let last = p.lines(lines)?;
    p.finish(last)
}

// --------------------------------------------------------------------------- chunks of a big file

/// The kind of line a chunk of a big file may start with (`read.rs` parses big files in
/// chunks on several threads); each implies the state the serial parse is in before it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChunkStart {
    /// `allocation N: …` (BufferAssignment section)
    Allocation,
    /// `<ID NAME …>` at column 0 (Used values section, not glued to the previous line)
    ValueHeader,
    /// `    N:NAME` (HloLiveRange InstructionSequence)
    Scheduled,
    /// `    NAME{…}:A-B` (HloLiveRange BufferLiveRange)
    LiveRange,
}

/// The parser state between two lines, reduced to what a chunk start can differ in: the
/// section and live-range list, and whether everything else is as a fresh parser has it
/// (no open value block or protobuf message, no peak / tree / report state). The current
/// allocation is left out: only value lines of the BufferAssignment section read it, and an
/// `allocation` line (the only chunk start there) sets it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkState {
    section: Option<Section>,
    live_sub: Option<LiveSub>,
    rest_fresh: bool,
}

impl ChunkStart {
    /// The kind of `line` (without its terminator), if a chunk may start with it.
    pub fn of(line: &[u8]) -> Option<ChunkStart> {
        if line.starts_with(b"allocation ") {
            return Some(ChunkStart::Allocation);
        }
        if line.starts_with(b"<") {
            return Some(ChunkStart::ValueHeader);
        }
        let rest = line.strip_prefix(b"    ")?;
        if rest.is_empty() || rest.contains(&b' ') {
            return None; // peak and tree lines have spaces
        }
        if rest[0].is_ascii_digit() && memchr::memchr(b':', rest).is_some() {
            return Some(ChunkStart::Scheduled);
        }
        let ends_in_digit = rest.last().is_some_and(u8::is_ascii_digit);
        (is_name_start(rest[0]) && ends_in_digit && memchr::memmem::find(rest, b"}:").is_some()).then_some(ChunkStart::LiveRange)
    }

    /// The state the serial parse must be in right before such a line for a chunk starting
    /// there to give the same rows.
    pub fn state(self) -> ChunkState {
        let (section, live_sub) = match self {
            ChunkStart::Allocation => (Section::Allocations, None),
            ChunkStart::ValueHeader => (Section::Values, None),
            ChunkStart::Scheduled => (Section::LiveRange, Some(LiveSub::Schedule)),
            ChunkStart::LiveRange => (Section::LiveRange, Some(LiveSub::Buffers)),
        };
        ChunkState { section: Some(section), live_sub, rest_fresh: true }
    }
}

/// Parse `data[start..end]` (`end` at a line start or the end of `data`) as the serial parse
/// would, given that the parse is in `kind.state()` before it (`kind` None: `start` is the start
/// of the file). Line numbers are local (the first line is 1); the end of `data` is handled as
/// the end of the file. Returns the state at `end` and the number of lines, or None when the
/// chunk is not valid UTF-8. `ctx` should collect: a caller keeps a chunk only when it
/// reported no error and the chunk before it ended in the state this one assumed.
pub fn parse_chunk<'c>(data: &'c [u8], start: usize, end: usize, kind: Option<ChunkStart>, ctx: FileCtx<'c>, t: &mut Tables) -> Result<Option<(ChunkState, u64)>> {
    let at_eof = end == data.len();
    let lines = Lines::starting_at(&data[..end], start, 0);
    if lines.has_bad_lines() {
        return Ok(None);
    }
    let mut p = Parser::new(ctx, t);
    if let Some(k) = kind {
        let s = k.state();
        p.section = s.section;
        p.live_sub = s.live_sub;
    }
    let last = p.lines(lines)?;
    let state = p.chunk_state();
    if at_eof {
        p.finish(last)?;
    }
    Ok(Some((state, last)))
}

impl<'t, 'c> Parser<'t, 'c> {
    fn new(ctx: FileCtx<'c>, t: &'t mut Tables) -> Parser<'t, 'c> {
        Parser {
            ctx,
            t,
            section: None,
            allocation: None,
            allocation_broken: false,
            block: None,
            live_sub: None,
            peak_time: 0,
            peak_running: 0,
            tree_row: 0,
            tree_stack: Vec::new(),
            space: None,
            space_color: None,
            tables_in_space: 0,
            table: 0,
            table_sub: None,
            proto_tokens: Vec::new(),
            proto_depth: 0,
            proto_broken: false,
        }
    }

    /// Feed every line; returns the number of the last line read (undecodable lines skipped).
    fn lines(&mut self, lines: Lines<'c>) -> Result<u64> {
        let mut last = 0;
        for line in lines {
            if line.bad.is_some() {
                continue;
            }
            last = line.no;
            match self.line(line.no, line.text) {
                Ok(()) => {}
                Err(Stop::Bad(pos, msg)) => self.ctx.error_at(&mut self.t.errors, line.no, pos as u64 + 1, msg, line.text)?,
                Err(Stop::Fatal(e)) => return Err(e),
            }
        }
        Ok(last)
    }

    /// See `ChunkState`. (A field added to `Parser` belongs in `rest_fresh`.)
    fn chunk_state(&self) -> ChunkState {
        let rest_fresh = self.block.is_none()
            && self.peak_time == 0
            && self.peak_running == 0
            && self.tree_row == 0
            && self.tree_stack.is_empty()
            && self.space.is_none()
            && self.space_color.is_none()
            && self.tables_in_space == 0
            && self.table == 0
            && self.table_sub.is_none()
            && self.proto_tokens.is_empty()
            && self.proto_depth == 0
            && !self.proto_broken;
        ChunkState { section: self.section, live_sub: self.live_sub, rest_fresh }
    }

    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()> {
        self.ctx
            .error_at(&mut self.t.errors, line, column, msg, text)
    }

    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if self.section == Some(Section::Proto) && self.proto_depth > 0 {
            return self.proto_line(no, text);
        }
        if text.is_empty() {
            return self.blank(no);
        }
        if text[0] != b' ' && text[0] != b'<' && self.section_header(no, text)? {
            return Ok(());
        }
        match self.section {
            None => bad(0, "expected a section header (BufferAssignment:, Total bytes used: …, Used values:, HloLiveRange …, Memory Space: …) or an empty line"),
            Some(Section::Allocations) => self.allocations_line(no, text),
            Some(Section::Values) => self.values_line(no, text),
            Some(Section::LiveRange) => self.live_range_line(no, text),
            Some(Section::Report) => self.report_line(no, text),
            Some(Section::Proto) => self.proto_line(no, text),
        }
    }

    fn blank(&mut self, no: u64) -> R<()> {
        match self.section {
            Some(Section::Report) => {
                self.table_sub = None;
                Ok(())
            }
            Some(Section::Proto) => Ok(()),
            _ => {
                self.close_block(no, "an empty line", b"")?;
                self.section = None;
                Ok(())
            }
        }
    }

    fn finish(mut self, last: u64) -> Result<()> {
        self.close_block(last, "the end of the file", b"")?;
        if self.section == Some(Section::Proto) && self.proto_depth > 0 {
            let tok = &self.proto_tokens[0];
            let (line, col, text) = (tok.line, tok.pos as u64 + 1, tok.text);
            self.report(
                line,
                col,
                "file ended inside a memory_space_allocation_entries block (missing '}')".into(),
                text,
            )?;
        }
        Ok(())
    }

    fn section_header(&mut self, no: u64, text: &'c [u8]) -> R<bool> {
        if text == b"BufferAssignment:" {
            self.enter(Some(Section::Allocations), no, text)?;
            self.allocation = None;
            self.allocation_broken = false;
        } else if text.starts_with(b"Total bytes used: ") {
            self.enter(None, no, text)?;
            self.total_line(no, text)?;
        } else if text == b"Used values:" {
            self.enter(Some(Section::Values), no, text)?;
        } else if text.starts_with(b"HloLiveRange") {
            self.enter(None, no, text)?;
            self.live_range_header(no, text)?;
        } else if text.starts_with(b"Memory Space: ") {
            self.enter(Some(Section::Report), no, text)?;
            self.memory_space_line(text)?;
        } else if text.starts_with(b"memory_space_allocation_entries") {
            self.enter(Some(Section::Proto), no, text)?;
            self.proto_line(no, text)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    fn enter(&mut self, section: Option<Section>, no: u64, text: &[u8]) -> R<()> {
        self.close_block(no, "a new section", text)?;
        self.section = section;
        Ok(())
    }

    fn total(&mut self, section: &str, key: &str, color: Option<i32>, value: i64, line: u64) {
        let t = &mut self.t.totals;
        t.file_id.push(self.ctx.file_id);
        t.section.push(section);
        t.key.push(key);
        t.color.push(color);
        t.value.push(value);
        t.line.push(line as i64);
    }

    // ------------------------------------------------------------------ allocations (§2.2, §2.3)

    fn allocations_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if text.starts_with(b"allocation ") {
            self.allocation_line(no, text)
        } else if text.starts_with(b" value: ") {
            self.value_line(no, text)
        } else {
            bad(0, "expected 'allocation N: size S…:' or ' value: <…> (size=…,offset=…): SHAPE' in the BufferAssignment section")
        }
    }

    fn allocation_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        self.allocation = None;
        self.allocation_broken = true;
        if !text.ends_with(b":") {
            return bad(text.len(), "expected ':' at the end of the allocation line");
        }
        let flags_end = text.len() - 1;
        let mut cur = Cur {
            t: text,
            pos: 0,
            stop: flags_end,
        };
        cur.expect("allocation ", "")?;
        let index = cur.uint("the allocation index", I64_MAX)? as i64;
        cur.expect(": size ", "")?;
        let size = cur.uint("the size in bytes", I64_MAX)? as i64;
        let flags_start = cur.pos;
        let mut f = Flags::default();
        let mut seen: u32 = 0;
        while !cur.at_end() {
            cur.expect(", ", "between allocation flags")?;
            let start = cur.pos;
            let flag = allocation_flag(&mut cur, &mut f)?;
            if seen & (1 << flag as u32) != 0 {
                return bad(
                    start,
                    format!("flag {:?} printed twice", FLAG_NAMES[flag as usize]),
                );
            }
            seen |= 1 << flag as u32;
            if !cur.at_end() && !text[cur.pos..].starts_with(b", ") {
                return bad(
                    cur.pos,
                    "expected ', ' or the final ':' after an allocation flag",
                );
            }
        }
        let src = self.ctx.src;
        let a = &mut self.t.allocations;
        a.file_id.push(self.ctx.file_id);
        a.allocation.push(index);
        a.size.push(size);
        a.color.push(f.color);
        a.is_thread_local.push(f.thread_local);
        a.is_constant.push(f.constant);
        a.is_maybe_live_out.push(f.maybe_live_out);
        a.is_preallocated_temp.push(f.preallocated_temp);
        a.is_output.push(f.output_shape.is_some());
        a.parameter.push(f.parameter.map(|p| p.0));
        a.parameter_shape.push_opt(&src, f.parameter.map(|p| p.1));
        a.parameter_shape_index
            .push_opt(&src, f.parameter.map(|p| p.2));
        a.output_shape.push_opt(&src, f.output_shape);
        a.flags.push(&src, &text[flags_start..flags_end]);
        a.line.push(no as i64);
        self.allocation = Some(index);
        self.allocation_broken = false;
        Ok(())
    }

    fn value_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if self.allocation.is_none() && !self.allocation_broken {
            return bad(
                0,
                "value line outside an allocation (expected 'allocation N: …' first)",
            );
        }
        let mut cur = Cur::new(text, 0);
        cur.expect(" value: ", "")?;
        let r = value_ref(&mut cur)?;
        cur.expect(" (size=", "")?;
        let size = cur.uint("the value's size", I64_MAX)? as i64;
        cur.expect(",offset=", "")?;
        let offset = cur.uint("the value's offset", I64_MAX)? as i64;
        cur.expect("): ", "")?;
        if cur.at_end() {
            return bad(cur.pos, "expected the value's shape");
        }
        let Some(allocation) = self.allocation else {
            return Ok(()); // under an unreadable allocation line (already reported)
        };
        let shape = cur.rest();
        let src = self.ctx.src;
        let a = &mut self.t.assignments;
        a.file_id.push(self.ctx.file_id);
        a.allocation.push(allocation);
        a.value_id.push(r.id);
        a.instruction.push(&src, r.name);
        a.shape_index.push(&src, r.index);
        a.is_phi.push(r.phi);
        a.color.push(r.color);
        a.offset.push(offset);
        a.size.push(size);
        a.shape.push(&src, shape);
        a.line.push(no as i64);
        Ok(())
    }

    // ------------------------------------------------------------------ total line (§2.4)

    fn total_line(&mut self, no: u64, text: &[u8]) -> R<()> {
        let mut cur = Cur::new(text, 0);
        cur.expect("Total bytes used: ", "")?;
        let total = cur.uint("the total in bytes", I64_MAX)? as i64;
        cur.expect(" (", "")?;
        cur.human("the rounded total")?;
        cur.expect(")", "")?;
        cur.end("the total line")?;
        self.total("buffer_assignment", "total_bytes_used", None, total, no);
        Ok(())
    }

    // ------------------------------------------------------------------ used values (§2.5)

    fn values_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if text.starts_with(b"<") {
            self.close_block(no, "the next value header", text)?;
            return self.open_block(no, text, 0);
        }
        let Some(block) = self.block.as_mut() else {
            return bad(
                0,
                "expected a value header '<ID NAME …>' in the Used values section",
            );
        };
        let expecting = block.expecting;
        if expecting == Expecting::PositionsHeader {
            if text != b" positions:" {
                return bad(0, "expected ' positions:' after the value header");
            }
            block.expecting = Expecting::Positions;
        } else if text.starts_with(b" from instruction:") {
            if expecting == Expecting::Positions {
                return bad(0, "expected ' uses:' or ' uses are not initialized yet.' before ' from instruction:'");
            }
            return self.defining_line(no, text);
        } else if expecting == Expecting::Positions {
            if text == b" uses:" {
                block.expecting = Expecting::Uses;
            } else if text == b" uses are not initialized yet." {
                block.uses_initialized = false;
                block.expecting = Expecting::NotInitialized;
            } else {
                let p = position(text)?;
                block.positions.push(p);
            }
        } else if expecting == Expecting::Uses {
            if text == b"  (none)" {
                block.expecting = Expecting::NoMoreUses;
            } else {
                let u = use_item(text)?;
                block.uses.push(u);
            }
        } else {
            return bad(0, "expected ' from instruction: …' to end the value block");
        }
        Ok(())
    }

    fn open_block(&mut self, no: u64, text: &'c [u8], start: usize) -> R<()> {
        let mut cur = Cur::new(text, start);
        let parsed = value_ref(&mut cur).and_then(|r| cur.end("the value header").map(|_| r));
        let header = match parsed {
            Ok(r) => Some(r),
            Err(e) => {
                self.block = Some(Block::new(no, None));
                return Err(e);
            }
        };
        self.block = Some(Block::new(no, header));
        Ok(())
    }

    fn defining_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let mut start = b" from instruction:".len();
        if text.get(start) == Some(&b' ') {
            start += 1;
        }
        let mut end = text.len();
        if let Some(lt) = memchr::memrchr(b'<', &text[start..]) {
            let glued = start + lt;
            if ValueRef::parse_whole(&text[glued..]).is_some() {
                end = glued;
            }
        }
        let instruction = &text[start..end];
        let block = self.block.take().expect("a value block is open here");
        if let Some(r) = block.header {
            let src = self.ctx.src;
            let v = &mut self.t.values;
            v.file_id.push(self.ctx.file_id);
            v.value_id.push(r.id);
            v.instruction.push(&src, r.name);
            v.shape_index.push(&src, r.index);
            v.is_phi.push(r.phi);
            v.color.push(r.color);
            for (name, index) in &block.positions {
                v.positions.items.instruction.push(&src, name);
                v.positions.items.shape_index.push(&src, index);
            }
            v.positions.end_row();
            for (name, operand, index) in &block.uses {
                v.uses.items.instruction.push(&src, name);
                v.uses.items.operand.push(*operand);
                v.uses.items.shape_index.push(&src, index);
            }
            v.uses.end_row();
            v.uses_initialized.push(block.uses_initialized);
            v.defining_instruction.push(&src, instruction);
            let parsed = crate::hlo::instruction_summary(instruction);
            v.defining_opcode
                .push_opt(&src, parsed.as_ref().map(|p| p.0));
            match parsed.and_then(|p| p.1) {
                Some(std::borrow::Cow::Borrowed(b)) => v.defining_op_name.push(&src, b),
                Some(std::borrow::Cow::Owned(o)) => v.defining_op_name.push_owned(&o),
                None => v.defining_op_name.push_null(),
            }
            v.line.push(block.header_line as i64);
        }
        if end < text.len() {
            return self.open_block(no, text, end);
        }
        Ok(())
    }

    /// A value block cut short (no ` from instruction:`) is an error; its row is dropped.
    fn close_block(&mut self, no: u64, reason: &str, text: &[u8]) -> Result<()> {
        let Some(block) = self.block.take() else {
            return Ok(());
        };
        let Some(r) = block.header else { return Ok(()) };
        let msg = format!(
            "value block <{} {}{}…> (line {}) ended by {reason} before its ' from instruction:' line",
            r.id,
            String::from_utf8_lossy(r.name),
            String::from_utf8_lossy(r.index),
            block.header_line
        );
        self.report(no, 1, msg, text)
    }

    // ------------------------------------------------------------------ HloLiveRange (§2.6)

    fn live_range_header(&mut self, no: u64, text: &[u8]) -> R<()> {
        if text.starts_with(b"HloLiveRange not available") {
            self.total("live_range", "not_available", None, 0, no);
            return Ok(());
        }
        self.section = Some(Section::LiveRange);
        self.live_sub = None;
        let mut cur = Cur::new(text, 0);
        cur.expect("HloLiveRange (max ", "or 'HloLiveRange not available …'")?;
        let max = cur.uint("the schedule length", I64_MAX)? as i64;
        cur.expect("):", "")?;
        cur.end("the HloLiveRange header")?;
        self.total("live_range", "max", None, max, no);
        Ok(())
    }

    fn live_range_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        const UNBOUNDED: &[u8] =
            b"  Peak memory could not be determined due to unbounded dynamic shape.";
        const STACK: &[u8] = b"  Stack trace breakdown for peak usage: ";
        if text == b"  InstructionSequence:" {
            self.live_sub = Some(LiveSub::Schedule);
        } else if text == b"  BufferLiveRange:" {
            self.live_sub = Some(LiveSub::Buffers);
        } else if text.starts_with(b"  Live ranges at ") {
            let mut cur = Cur::new(text, b"  Live ranges at ".len());
            self.peak_time = cur.uint("the peak time", I32_MAX)? as i32;
            cur.expect(" (peak):", "")?;
            cur.end("the peak header")?;
            self.total("live_range", "peak_time", None, self.peak_time as i64, no);
            self.peak_running = 0;
            self.live_sub = Some(LiveSub::Peak);
        } else if text == UNBOUNDED {
            self.total("live_range", "peak_unbounded", None, 0, no);
            self.live_sub = Some(LiveSub::AfterPeak);
        } else if text.starts_with(STACK) {
            let mut cur = Cur::new(text, STACK.len());
            let total = cur.grouped("the peak total")?;
            cur.expect(" bytes", "")?;
            cur.end("the stack-trace header")?;
            self.total("peak_breakdown", "total", None, total, no);
            self.tree_stack.clear();
            self.live_sub = Some(LiveSub::Tree);
        } else if text.starts_with(b"    ")
            && !matches!(self.live_sub, None | Some(LiveSub::AfterPeak))
        {
            return match self.live_sub {
                Some(LiveSub::Schedule) => self.schedule_line(no, text),
                Some(LiveSub::Buffers) => self.buffer_line(no, text),
                Some(LiveSub::Peak) => self.peak_line(no, text),
                _ => self.tree_line(no, text),
            };
        } else {
            return bad(0, "expected a live-range line: '  InstructionSequence:', '  BufferLiveRange:', '  Live ranges at T (peak):', '  Stack trace breakdown …' or a 4-space-indented entry under one");
        }
        Ok(())
    }

    fn schedule_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let mut cur = Cur::new(text, 4);
        let position = cur.uint("the schedule position", I32_MAX)? as i32;
        cur.expect(":", "")?;
        let name = cur.name("an instruction name")?;
        cur.end("the scheduled instruction")?;
        let src = self.ctx.src;
        let t = &mut self.t.schedule;
        t.file_id.push(self.ctx.file_id);
        t.position.push(position);
        t.instruction.push(&src, name);
        t.line.push(no as i64);
        Ok(())
    }

    fn buffer_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let mut cur = Cur::new(text, 4);
        let name = cur.name("an instruction name")?;
        let start = cur.pos;
        let Some(index) = cur.index()? else {
            return bad(
                start,
                "expected the buffer's shape index, e.g. {} (always printed here)",
            );
        };
        let buffer = &text[4..cur.pos];
        cur.expect(":", "")?;
        let begin = cur.uint("the start time", I32_MAX)? as i32;
        cur.expect("-", "")?;
        let end = cur.uint("the end time", I32_MAX)? as i32;
        cur.end("the live range")?;
        let src = self.ctx.src;
        let t = &mut self.t.live_ranges;
        t.file_id.push(self.ctx.file_id);
        t.buffer.push(&src, buffer);
        t.instruction.push(&src, name);
        t.shape_index.push(&src, index);
        t.start.push(begin);
        t.end.push(end);
        t.line.push(no as i64);
        Ok(())
    }

    fn peak_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let mut cur = Cur::new(text, 4);
        let name = cur.name("an instruction name")?;
        let index = cur.index()?;
        let buffer = &text[4..cur.pos];
        cur.expect(": ", "")?;
        let size_at = cur.pos;
        let size = cur.uint("the byte count", I64_MAX)? as i64;
        cur.expect(" bytes", "")?;
        self.peak_running += size as i128;
        let (mut cumulative, mut printed) = (self.peak_running, false);
        if cur.at_end() && cumulative > I64_MAX as i128 {
            return bad(
                size_at,
                format!("the running byte total is out of range (at most {I64_MAX})"),
            );
        }
        if !cur.at_end() {
            cur.expect(" (cumulative: ", "or the end of the line")?;
            cumulative = cur.uint("the cumulative byte count", I64_MAX)? as i128;
            printed = true;
            cur.expect(" bytes)", "")?;
            cur.end("the peak entry")?;
        }
        let src = self.ctx.src;
        let t = &mut self.t.peak;
        t.file_id.push(self.ctx.file_id);
        t.time.push(self.peak_time);
        t.buffer.push(&src, buffer);
        t.instruction.push(&src, name);
        t.shape_index.push(&src, index.unwrap_or(&[]));
        t.bytes.push(size);
        t.cumulative_bytes.push(cumulative as i64);
        t.cumulative_is_printed.push(printed);
        t.line.push(no as i64);
        Ok(())
    }

    fn tree_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let Some(m) = tree_tail(text) else {
            let pos = match memchr::memmem::rfind(text, b" (") {
                Some(t) => t + 1,
                None => text.len(),
            };
            return bad(pos, "expected a tree line ending in '(P%, total: N bytes, current: N bytes, remaining: N bytes)'");
        };
        let head = &text[..m.start];
        let (depth, label_start) = tree_depth(head)?;
        let label = &head[label_start..];
        if label.is_empty() {
            return bad(label_start, "expected a label before ' (P%, total: …)'");
        }
        if depth > self.tree_stack.len() {
            return bad(
                label_start,
                format!(
                    "tree depth {depth} under no line of depth {}",
                    depth as i64 - 1
                ),
            );
        }
        let mut figures = [0i64; 3];
        for (k, (name, (a, b))) in ["total", "current", "remaining"]
            .iter()
            .zip(m.groups)
            .enumerate()
        {
            match grouped_value(&text[a..b]) {
                Some(v) => figures[k] = v,
                None => {
                    return bad(
                        a,
                        format!("the {name} byte count is out of range (at most {I64_MAX})"),
                    )
                }
            }
        }
        let pct: f64 = std::str::from_utf8(&text[m.pct.0..m.pct.1])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(f64::NAN);
        let parent = if depth > 0 {
            Some(self.tree_stack[depth - 1])
        } else {
            None
        };
        self.tree_stack.truncate(depth);
        self.tree_stack.push(self.tree_row);
        let src = self.ctx.src;
        let t = &mut self.t.peak_breakdown;
        t.file_id.push(self.ctx.file_id);
        t.row.push(self.tree_row);
        t.parent_row.push(parent);
        t.depth.push(depth as i32);
        t.label.push(&src, label);
        t.percent.push(pct);
        t.total_bytes.push(figures[0]);
        t.current_bytes.push(figures[1]);
        t.remaining_bytes.push(figures[2]);
        t.line.push(no as i64);
        self.tree_row = self.tree_row.wrapping_add(1);
        Ok(())
    }

    // ------------------------------------------------------------------ memory report (§2.8.1)

    fn memory_space_line(&mut self, text: &'c [u8]) -> R<()> {
        self.space = None;
        self.space_color = None;
        self.tables_in_space = 0;
        self.table_sub = None;
        let Some(marker) = memchr::memmem::rfind(text, b" (color=") else {
            return bad(
                text.len(),
                "expected ' (color=N)' after the memory space name",
            );
        };
        let mut cur = Cur::new(text, marker + b" (color=".len());
        let color = cur.uint("the color", I32_MAX)? as i32;
        cur.expect(")", "")?;
        cur.end("the memory space line")?;
        let name_start = b"Memory Space: ".len();
        self.space = Some(if marker > name_start {
            &text[name_start..marker]
        } else {
            &text[..0]
        });
        self.space_color = Some(color);
        Ok(())
    }

    fn report_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let Some(color) = self.space_color else {
            return bad(
                0,
                "expected 'Memory Space: NAME (color=N)' before report lines",
            );
        };
        if text.starts_with(b"Total bytes: ") {
            let mut cur = Cur::new(text, b"Total bytes: ".len());
            let total = cur.uint("the total in bytes", I64_MAX)? as i64;
            cur.expect(" (", "")?;
            cur.human("the rounded total")?;
            cur.expect(")", "")?;
            cur.end("the total line")?;
            self.total("memory_report", "total_bytes", Some(color), total, no);
        } else if is_report_header(text) {
            self.table = self.tables_in_space;
            self.tables_in_space = self.tables_in_space.wrapping_add(1);
            self.table_sub = Some(TableSub::Rule);
        } else if text.len() > 2 && text.starts_with(b"  ") && text[2..].iter().all(|&b| b == b'-')
        {
            if self.table_sub != Some(TableSub::Rule) {
                return bad(0, "dashed rule not after the column header");
            }
            self.table_sub = Some(TableSub::Rows);
        } else if text.starts_with(b"  The rest ") {
            if self.table_sub != Some(TableSub::Rows) {
                return bad(0, "'The rest N values …' outside an allocation table");
            }
            let mut cur = Cur::new(text, b"  The rest ".len());
            let rest = cur.uint("the number of values not shown", I64_MAX)? as i64;
            cur.expect(" values are less than ", "")?;
            let percent = cur.uint("the percentage", I64_MAX)? as i64;
            cur.expect("% of the total size and not shown.", "")?;
            cur.end("the cut-off line")?;
            self.total("memory_report", "rest_values", Some(color), rest, no);
            self.total("memory_report", "rest_percent", Some(color), percent, no);
            self.table_sub = Some(TableSub::Cut);
        } else if self.table_sub == Some(TableSub::Rows) {
            self.report_row(no, text, color)?;
        } else {
            return bad(0, "expected 'Total bytes: N (…)', the column header '  cumulative_size; size; offset; used_by_n_values; shapes_list', its dashed rule, a table row, or an empty line");
        }
        Ok(())
    }

    fn report_row(&mut self, no: u64, text: &'c [u8], color: i32) -> R<()> {
        let mut cur = Cur::new(text, 0);
        cur.spaces();
        let cumulative = cur.human("the cumulative size")?;
        cur.expect("(", "")?;
        cur.spaces();
        let percent = cur.uint("the percentage", I32_MAX)? as i32;
        cur.expect("%); ", "")?;
        cur.spaces();
        let size = cur.human("the size")?;
        cur.expect("; ", "")?;
        cur.spaces();
        let offset = cur.uint("the offset", I64_MAX)? as i64;
        cur.expect("; ", "")?;
        cur.spaces();
        let count = cur.uint("used_by_n_values", I32_MAX)? as i32;
        cur.expect("; ", "")?;
        let shapes = cur.rest();
        let src = self.ctx.src;
        let space = self.space;
        let t = &mut self.t.memory_report;
        t.file_id.push(self.ctx.file_id);
        t.memory_space.push_opt(&src, space);
        t.color.push(Some(color));
        t.table.push(self.table);
        t.allocation.push(None);
        t.cumulative_bytes.push(Some(cumulative));
        t.percent.push(Some(percent));
        t.size.push(size);
        t.offset.push(offset);
        t.used_by_n_values.push(count);
        t.shapes.push(&src, shapes);
        t.line.push(no as i64);
        Ok(())
    }

    // ------------------------------------------------------------------ protobuf text (§2.8.3)

    fn proto_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let tokens = match proto_tokens(no, text) {
            Ok(t) => t,
            Err(e) => {
                if self.proto_depth > 0 || !self.proto_tokens.is_empty() {
                    self.proto_broken = true;
                }
                return Err(e);
            }
        };
        for tok in tokens {
            if self.proto_depth == 0 {
                let expected =
                    [Kind::Ident, Kind::Colon, Kind::LBrace][self.proto_tokens.len().min(2)];
                if tok.kind != expected && !(expected == Kind::Colon && tok.kind == Kind::LBrace) {
                    self.proto_tokens.clear();
                    return bad(tok.pos, "expected 'memory_space_allocation_entries {'");
                }
            }
            let kind = tok.kind;
            let pos = tok.pos;
            self.proto_tokens.push(tok);
            if kind == Kind::LBrace {
                self.proto_depth += 1;
            } else if kind == Kind::RBrace {
                if self.proto_depth == 0 {
                    return bad(pos, "'}' without a matching '{'");
                }
                self.proto_depth -= 1;
                if self.proto_depth == 0 {
                    let message = std::mem::take(&mut self.proto_tokens);
                    let broken = std::mem::replace(&mut self.proto_broken, false);
                    if !broken {
                        self.proto_message(&message)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn proto_message(&mut self, tokens: &[Token<'c>]) -> Result<()> {
        let mut reader = ProtoReader { tokens, i: 0 };
        let parsed = (|| {
            let name = reader.next()?;
            if &*name.value != b"memory_space_allocation_entries" {
                return Err(ProtoBad(
                    reader.i - 1,
                    "expected 'memory_space_allocation_entries {'".into(),
                ));
            }
            let name_line = name.line;
            let fields = reader.space_message()?;
            reader.done()?;
            Ok((name_line, fields))
        })();
        let (name_line, fields) = match parsed {
            Ok(x) => x,
            Err(ProtoBad(i, msg)) => {
                let tok = &tokens[i];
                return self.report(tok.line, tok.pos as u64 + 1, msg, tok.text);
            }
        };
        let color = fields.color.last().copied().unwrap_or(0) as i32;
        let (total, total_line) = fields.total_bytes.last().copied().unwrap_or((0, name_line));
        self.total(
            "memory_report",
            "total_bytes",
            Some(color),
            total,
            total_line,
        );
        for (rank, (entry, entry_line)) in fields.entries.iter().enumerate() {
            let shapes: Vec<u8> = entry.positions.join(&b"; "[..]);
            let t = &mut self.t.memory_report;
            t.file_id.push(self.ctx.file_id);
            t.memory_space.push_null();
            t.color.push(Some(color));
            t.table.push(rank as i32);
            t.allocation.push(Some(entry.index.unwrap_or(0)));
            t.cumulative_bytes.push(Some(entry.cumulative.unwrap_or(0)));
            t.percent.push(None);
            t.size.push(entry.size.unwrap_or(0));
            t.offset.push(0);
            t.used_by_n_values.push(entry.positions.len() as i32);
            t.shapes.push_owned(&shapes);
            t.line.push(*entry_line as i64);
        }
        Ok(())
    }
}

impl<'a> Block<'a> {
    fn new(header_line: u64, header: Option<ValueRef<'a>>) -> Block<'a> {
        Block {
            header_line,
            header,
            expecting: Expecting::PositionsHeader,
            positions: Vec::new(),
            uses: Vec::new(),
            uses_initialized: true,
        }
    }
}

// --------------------------------------------------------------------------- small grammars

#[derive(Default)]
struct Flags<'a> {
    color: i32,
    parameter: Option<(i64, &'a [u8], &'a [u8])>,
    output_shape: Option<&'a [u8]>,
    constant: bool,
    thread_local: bool,
    maybe_live_out: bool,
    preallocated_temp: bool,
}

const FLAG_NAMES: [&str; 7] = [
    "color",
    "parameter",
    "output",
    "constant",
    "thread-local",
    "maybe-live-out",
    "preallocated-temp",
];

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
    for (i, kw) in FLAG_NAMES.iter().enumerate().skip(3) {
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
    bad(cur.pos, "expected an allocation flag (color N, parameter N, shape |…| at ShapeIndex {…}, output shape is |…|, constant, thread-local, maybe-live-out, preallocated-temp)")
}

fn bar_text<'a>(cur: &mut Cur<'a>) -> R<&'a [u8]> {
    let Some(close) = memchr::memchr(b'|', cur.view()) else {
        return bad(cur.pos, "expected the closing '|' of the shape");
    };
    let shape = &cur.view()[..close];
    cur.pos += close + 1;
    Ok(shape)
}

fn position(text: &[u8]) -> R<(&[u8], &[u8])> {
    let mut cur = Cur::new(text, 0);
    cur.expect("  ", "(a position, or ' uses:')")?;
    let name = cur.name("an instruction name")?;
    let mut index: &[u8] = &[];
    if cur.accept(" ") {
        let start = cur.pos;
        match cur.index()? {
            Some(i) => index = i,
            None => return bad(start, "expected a shape index after the space"),
        }
    }
    cur.end("the position")?;
    Ok((name, index))
}

fn use_item(text: &[u8]) -> R<(&[u8], i32, &[u8])> {
    let mut cur = Cur::new(text, 0);
    cur.expect("  ", "(a use, '  (none)' or ' from instruction:')")?;
    let name = cur.name("an instruction name")?;
    cur.expect(", operand ", "")?;
    let operand = cur.uint("the operand number", I32_MAX)? as i32;
    let mut index: &[u8] = &[];
    if cur.accept(" ") {
        let start = cur.pos;
        match cur.index()? {
            Some(i) => index = i,
            None => return bad(start, "expected a shape index after the space"),
        }
    }
    cur.end("the use")?;
    Ok((name, operand, index))
}

/// `  cumulative_size; +size; +offset; +used_by_n_values; +shapes_list` (whole line).
fn is_report_header(t: &[u8]) -> bool {
    let Some(mut rest) = t.strip_prefix(b"  cumulative_size;") else {
        return false;
    };
    for word in [
        &b"size;"[..],
        b"offset;",
        b"used_by_n_values;",
        b"shapes_list",
    ] {
        let n = rest.iter().take_while(|&&b| b == b' ').count();
        if n == 0 || !rest[n..].starts_with(word) {
            return false;
        }
        rest = &rest[n + word.len()..];
    }
    rest.is_empty()
}

struct TreeTail {
    start: usize,
    pct: (usize, usize),
    groups: [(usize, usize); 3],
}

/// The leftmost ` (P%, total: G bytes, current: G bytes, remaining: G bytes)` that ends the line.
fn tree_tail(t: &[u8]) -> Option<TreeTail> {
    let mut from = 0;
    while let Some(k) = memchr::memmem::find(&t[from..], b" (") {
        let start = from + k;
        if let Some(m) = tree_tail_at(t, start) {
            return Some(m);
        }
        from = start + 1;
    }
    None
}

fn tree_tail_at(t: &[u8], start: usize) -> Option<TreeTail> {
    let lit = |i: usize, s: &[u8]| t[i.min(t.len())..].starts_with(s).then_some(i + s.len());
    let mut i = lit(start, b" (")?;
    let ps = i;
    while i < t.len() && t[i].is_ascii_digit() {
        i += 1;
    }
    if i == ps || t.get(i) != Some(&b'.') || !t.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    i += 2;
    let pct = (ps, i);
    i = lit(i, b"%, total: ")?;
    let mut groups = [(0, 0); 3];
    let seps: [&[u8]; 3] = [b" bytes, current: ", b" bytes, remaining: ", b" bytes)"];
    for (g, sep) in seps.iter().enumerate() {
        let e = grouped_end(t, i)?;
        groups[g] = (i, e);
        i = lit(e, sep)?;
    }
    (i == t.len()).then_some(TreeTail { start, pct, groups })
}

/// (depth, label start) from the prefix geometry of §2.7, counted in characters as the
/// reference does; positions returned are byte offsets.
fn tree_depth(head: &[u8]) -> R<(usize, usize)> {
    const TEE: &[u8] = "├── ".as_bytes();
    const ELL: &[u8] = "└── ".as_bytes();
    let found = [
        memchr::memmem::find(head, TEE),
        memchr::memmem::find(head, ELL),
    ]
    .into_iter()
    .flatten()
    .min();
    let Some(k) = found else {
        if head.starts_with(b"    ")
            && head.len() > 4
            && head[4] != b' '
            && !head[4..].starts_with("│".as_bytes())
        {
            return Ok((0, 4));
        }
        return bad(
            0,
            "expected four spaces and a label (depth 0) or a '├── '/'└── ' connector",
        );
    };
    let kc = head[..k].iter().filter(|&&b| (b & 0xC0) != 0x80).count(); // characters before it
    if kc < 6 || !head.starts_with(b"      ") {
        return bad(0, "expected six spaces before the first level's connector");
    }
    if (kc - 2) % 4 != 0 {
        return bad(k, "connector not at a 4-character column (2 + 4·depth)");
    }
    let mut b = 6;
    let mut g = 6;
    while g < kc {
        if head[b..].starts_with(b"    ") {
            b += 4;
        } else if head[b..].starts_with("│   ".as_bytes()) {
            b += "│   ".len();
        } else {
            return bad(b, "expected four spaces or '│   ' in the tree prefix");
        }
        g += 4;
    }
    Ok(((kc - 2) / 4, k + TEE.len()))
}

// ---- protobuf text ---------------------------------------------------------------------------

/// Python's `str.isspace()` (what `\s` matches in the reference's regular expressions).
fn py_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\u{1c}'..='\u{20}' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// Bytes of Python whitespace at the start of `s` (valid UTF-8).
fn py_spaces_len(s: &[u8]) -> usize {
    let mut n = 0;
    while n < s.len() {
        let w = utf8_width(s[n]);
        let Some(c) = std::str::from_utf8(&s[n..(n + w).min(s.len())])
            .ok()
            .and_then(|x| x.chars().next())
        else {
            break;
        };
        if !py_space(c) {
            break;
        }
        n += w;
    }
    n
}

fn utf8_width(b: u8) -> usize {
    match b {
        0..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

fn proto_tokens(no: u64, text: &[u8]) -> R<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let ws = py_spaces_len(&text[pos..]);
        if pos + ws == text.len() {
            break;
        }
        let start = pos + ws;
        let rest = &text[start..];
        let c = rest[0];
        let (kind, end) = if c == b'#' {
            break;
        } else if is_name_start(c) {
            (
                Kind::Ident,
                start
                    + 1
                    + rest[1..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                        .count(),
            )
        } else if let Some(n) = proto_number_len(rest) {
            (Kind::Number, start + n)
        } else if c == b'"' || c == b'\'' {
            match proto_string_len(rest) {
                Some(n) => (Kind::Str, start + n),
                None => return proto_token_error(text, pos),
            }
        } else if matches!(c, b'{' | b'}' | b':') {
            (
                match c {
                    b'{' => Kind::LBrace,
                    b'}' => Kind::RBrace,
                    _ => Kind::Colon,
                },
                start + 1,
            )
        } else {
            return proto_token_error(text, pos);
        };
        let raw = &text[start..end];
        let value = if kind == Kind::Str {
            let s = c_unescape(&raw[1..raw.len() - 1]);
            std::borrow::Cow::Owned(String::from_utf8_lossy(&s).into_owned().into_bytes())
        } else {
            std::borrow::Cow::Borrowed(raw)
        };
        out.push(Token {
            kind,
            value,
            line: no,
            text,
            pos: start,
        });
        pos = end;
    }
    Ok(out)
}

fn proto_token_error<T>(text: &[u8], mut pos: usize) -> R<T> {
    while pos < text.len() && matches!(text[pos], b' ' | b'\t') {
        pos += 1;
    }
    bad(
        pos,
        "expected a protobuf-text token (name, number, string, '{', '}', ':')",
    )
}

/// `[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[fF]?`
fn proto_number_len(s: &[u8]) -> Option<usize> {
    let digits = |i: usize| {
        s[i.min(s.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut i = 0;
    if matches!(s.first(), Some(b'-' | b'+')) {
        i = 1;
    }
    let d = digits(i);
    if d > 0 {
        i += d;
        if s.get(i) == Some(&b'.') {
            i += 1 + digits(i + 1);
        }
    } else if s.get(i) == Some(&b'.') && digits(i + 1) > 0 {
        i += 1 + digits(i + 1);
    } else {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let e = digits(j);
        if e > 0 {
            i = j + e;
        }
    }
    if matches!(s.get(i), Some(b'f' | b'F')) {
        i += 1;
    }
    Some(i)
}

/// A quoted string `"(?:[^"\\]|\\.)*"` (or with single quotes): its length with the quotes.
fn proto_string_len(s: &[u8]) -> Option<usize> {
    let q = s[0];
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b if b == q => return Some(i + 1),
            b'\\' => {
                if i + 1 >= s.len() {
                    return None;
                }
                i += 1 + utf8_width(s[i + 1]);
            }
            _ => i += 1,
        }
    }
    None
}

/// Protobuf text strings are C-escaped bytes (octal for non-ASCII). Protobuf's escape set
/// (`\?`, `\x` with one or two hex digits, a lone trailing backslash kept) is not XLA's HLO
/// string escaping, which `hlo::scan::c_unescape` implements; the two are kept apart on purpose.
fn c_unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let Some(&nxt) = s.get(i + 1) else {
            out.push(b'\\');
            break;
        };
        let simple = match nxt {
            b'n' => Some(10),
            b't' => Some(9),
            b'r' => Some(13),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' => Some(92),
            b'\'' => Some(39),
            b'"' => Some(34),
            b'?' => Some(63),
            _ => None,
        };
        if let Some(v) = simple {
            out.push(v);
            i += 2;
        } else if (b'0'..=b'7').contains(&nxt) {
            let mut j = i + 1;
            let mut v: u32 = 0;
            while j < s.len() && j < i + 4 && (b'0'..=b'7').contains(&s[j]) {
                v = v * 8 + (s[j] - b'0') as u32;
                j += 1;
            }
            out.push((v & 0xff) as u8);
            i = j;
        } else if nxt == b'x' {
            let mut j = i + 2;
            let mut v: u32 = 0;
            while j < s.len() && j < i + 4 && s[j].is_ascii_hexdigit() {
                v = v * 16 + (s[j] as char).to_digit(16).unwrap_or(0);
                j += 1;
            }
            out.push(v as u8);
            i = j;
        } else {
            let w = utf8_width(nxt).min(s.len() - i - 1);
            out.extend_from_slice(&s[i + 1..i + 1 + w]);
            i += 1 + w;
        }
    }
    out
}

struct ProtoBad(usize, String);

#[derive(Default)]
struct SpaceFields {
    total_bytes: Vec<(i64, u64)>,
    color: Vec<i64>,
    entries: Vec<(EntryFields, u64)>,
}

#[derive(Default)]
struct EntryFields {
    index: Option<i64>,
    size: Option<i64>,
    cumulative: Option<i64>,
    positions: Vec<Vec<u8>>,
}

/// Reads the tokens of one whole, balanced top-level message (two fixed levels: no recursion).
struct ProtoReader<'r, 'a> {
    tokens: &'r [Token<'a>],
    i: usize,
}

impl<'r, 'a> ProtoReader<'r, 'a> {
    fn next(&mut self) -> std::result::Result<&'r Token<'a>, ProtoBad> {
        match self.tokens.get(self.i) {
            Some(t) => {
                self.i += 1;
                Ok(t)
            }
            None => Err(ProtoBad(
                self.tokens.len() - 1,
                "unexpected end of the message".into(),
            )),
        }
    }

    fn done(&self) -> std::result::Result<(), ProtoBad> {
        if self.i != self.tokens.len() {
            return Err(ProtoBad(self.i, "unexpected text after the message".into()));
        }
        Ok(())
    }

    /// `[:] {`
    fn open(&mut self) -> std::result::Result<(), ProtoBad> {
        let mut tok = self.next()?;
        if tok.kind == Kind::Colon {
            tok = self.next()?;
        }
        if tok.kind != Kind::LBrace {
            return Err(ProtoBad(self.i - 1, "expected '{'".into()));
        }
        Ok(())
    }

    /// The next field name, or None at the closing `}`.
    fn field(
        &mut self,
        known: &[&str],
    ) -> std::result::Result<Option<(&'r Token<'a>, usize)>, ProtoBad> {
        let tok = self.next()?;
        if tok.kind == Kind::RBrace {
            return Ok(None);
        }
        if tok.kind != Kind::Ident {
            return Err(ProtoBad(self.i - 1, "expected a field name or '}'".into()));
        }
        match known.iter().position(|k| k.as_bytes() == &*tok.value) {
            Some(k) => Ok(Some((tok, k))),
            None => Err(ProtoBad(
                self.i - 1,
                format!(
                    "unknown field '{}' (expected one of {})",
                    String::from_utf8_lossy(&tok.value),
                    known.join(", ")
                ),
            )),
        }
    }

    fn space_message(&mut self) -> std::result::Result<SpaceFields, ProtoBad> {
        self.open()?;
        let mut f = SpaceFields::default();
        while let Some((tok, k)) =
            self.field(&["total_bytes", "memory_space_color", "allocation_entries"])?
        {
            match k {
                0 => f.total_bytes.push((self.int(false)?, tok.line)),
                1 => f.color.push(self.int(true)?),
                _ => {
                    let e = self.entry_message()?;
                    f.entries.push((e, tok.line));
                }
            }
        }
        Ok(f)
    }

    fn entry_message(&mut self) -> std::result::Result<EntryFields, ProtoBad> {
        self.open()?;
        let mut e = EntryFields::default();
        while let Some((_, k)) = self.field(&[
            "index",
            "size",
            "cumulative_size",
            "cumulative_percentage",
            "defining_positions",
        ])? {
            match k {
                0 => e.index = Some(self.int(false)?),
                1 => e.size = Some(self.int(false)?),
                2 => e.cumulative = Some(self.int(false)?),
                3 => {
                    self.scalar_token(Kind::Number, "expected a number (float)")?;
                }
                _ => {
                    let t = self.scalar_token(Kind::Str, "expected a quoted string")?;
                    e.positions.push(t.value.to_vec());
                }
            }
        }
        Ok(e)
    }

    fn scalar_token(
        &mut self,
        kind: Kind,
        msg: &str,
    ) -> std::result::Result<&'r Token<'a>, ProtoBad> {
        let colon = self.next()?;
        if colon.kind != Kind::Colon {
            return Err(ProtoBad(
                self.i - 1,
                "expected ':' after the field name".into(),
            ));
        }
        let tok = self.next()?;
        if tok.kind != kind {
            return Err(ProtoBad(self.i - 1, msg.into()));
        }
        Ok(tok)
    }

    fn int(&mut self, int32: bool) -> std::result::Result<i64, ProtoBad> {
        let what = if int32 { "int32" } else { "int" };
        let tok = self.scalar_token(Kind::Number, &format!("expected a number ({what})"))?;
        let v = &*tok.value;
        let (neg, digits) = match v.first() {
            Some(b'-') => (true, &v[1..]),
            Some(b'+') => (false, &v[1..]),
            _ => (false, v),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(ProtoBad(self.i - 1, "expected an integer".into()));
        }
        let limit = if int32 { I32_MAX } else { I64_MAX };
        match to_int(digits, limit + 1) {
            Some(n) if n <= limit || neg => Ok(if neg {
                (n as i128).wrapping_neg() as i64
            } else {
                n as i64
            }),
            _ => Err(ProtoBad(
                self.i - 1,
                format!("integer out of range ({what})"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_round_half_up() {
        assert_eq!(human_bytes(b"576B"), Some(576));
        assert_eq!(human_bytes(b"51.1KiB"), Some(52326));
        assert_eq!(human_bytes(b"4.00MiB"), Some(4 << 20));
        assert_eq!(human_bytes(b"220.17MiB"), Some(230864978));
        assert_eq!(human_bytes(b"0.5B"), Some(1));
        assert_eq!(human_bytes(b"-2.5B"), Some(-3));
        assert_eq!(
            human_bytes(b"7.99999999999999999999999999999999999999999999EiB"),
            None
        );
        assert_eq!(
            human_bytes(b"0.0000000000000000000000000000000000000000000001EiB"),
            Some(0)
        );
        assert_eq!(human_bytes(b"99999999999999999999999EiB"), None);
        assert_eq!(human_bytes(b"1.KiB"), None);
    }

    #[test]
    fn grouped() {
        assert_eq!(grouped_end(b"1 234 bytes", 0), Some(5));
        assert_eq!(grouped_end(b"1234 567", 0), Some(4));
        assert_eq!(grouped_end(b"12 34 bytes", 0), Some(2));
        assert_eq!(grouped_end(b"x", 0), None);
    }

    #[test]
    fn value_refs() {
        let r = ValueRef::parse_whole(b"<131 arg_tuple.5{1} (phi) @2>").unwrap();
        assert_eq!(
            (r.id, r.name, r.index, r.phi, r.color),
            (131, &b"arg_tuple.5"[..], &b"{1}"[..], true, 2)
        );
        assert!(ValueRef::parse_whole(b"<x add>").is_none());
        assert!(ValueRef::parse_whole(b"<5 add @99999999999>").is_none());
    }

    #[test]
    fn tree_depths() {
        let l = "      │   └── while.5_computation (95.3%, total: 241 bytes, current: 0 bytes, remaining: 253 bytes)";
        let m = tree_tail(l.as_bytes()).unwrap();
        let (d, s) = tree_depth(&l.as_bytes()[..m.start]).ok().unwrap();
        assert_eq!(
            (d, &l.as_bytes()[s..m.start]),
            (2, &b"while.5_computation"[..])
        );
    }

    /// Inputs that would panic or overflow in a careless port (regressions of review/fuzzing).
    #[test]
    fn nasty_inputs_do_not_panic() {
        let cases: &[&[u8]] = &[
            b"Memory Space: (color=0)\n",                     // name slice end before start
            b"Memory Space:  (color=0)\nTotal bytes: 1 (9999999999999999999.9EiB)\n",
            b"Memory Space: x (color=0)\n  cumulative_size; size; offset; used_by_n_values; shapes_list\n  --\n 99999999999999999999999999999999999999EiB(1%); 1B; 0; 1; x\n",
            b"HloLiveRange (max 1):\n  Live ranges at 0 (peak):\n    a: 9223372036854775807 bytes\n    b: 9223372036854775807 bytes\n    c: 1 bytes\n",
            b"memory_space_allocation_entries {\n  allocation_entries { defining_positions: \"\\\" }\n",
            b"memory_space_allocation_entries { memory_space_color: -9223372036854775808 }\n}\n}\n",
            b"memory_space_allocation_entries : : {\n}\n",
            b"Used values:\n<1 a>\n positions:\n uses:\n from instruction:<2 b>\n",
            b"HloLiveRange (max 1):\n  Stack trace breakdown for peak usage: 1 bytes\n      \xe2\x94\x82 \xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 a (1.0%, total: 1 bytes, current: 1 bytes, remaining: 99999999999999999999 bytes)\n",
        ];
        for data in cases {
            for collect in [true, false] {
                let ctx = FileCtx {
                    file_id: 0,
                    path: "t",
                    collect,
                    src: crate::source::SourceRef::none(),
                };
                let mut t = Tables::default();
                let _ = parse(data, ctx, &mut t);
                let _ = t.finish();
            }
        }
    }

    #[test]
    fn proto_numbers_and_strings() {
        assert_eq!(proto_number_len(b"1.5e3f x"), Some(6));
        assert_eq!(proto_number_len(b"1e x"), Some(1));
        assert_eq!(proto_number_len(b".5"), Some(2));
        assert_eq!(proto_number_len(b"-."), None);
        assert_eq!(proto_string_len(b"\"a\\\"b\" x"), Some(6));
        assert_eq!(proto_string_len(b"\"a\\"), None);
        assert_eq!(c_unescape(b"p\\303\\251 \\x41\\q"), "pé Aq".as_bytes());
    }
}
