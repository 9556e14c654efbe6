//! The buffer-assignment family (FORMATS.md §2): allocations and their values, `Total bytes
//! used`, `Used values` blocks, `HloLiveRange` (schedule, live ranges, peak, stack-trace
//! breakdown). The memory-usage report is a format of its own (`crate::memory_report`); it
//! shares the allocation-line grammar (`allocation`), which XLA prints with the same function.
//!
//! This is a line-for-line port of the reference parser
//! (`python/hlodump/reference/buffer_assignment.py`): the same section-driven state machine,
//! the same grammar walked left to right by a small cursor, so that both report every problem
//! at the same line and byte column, in the same order, and keep the same rows in collect mode.
//! Differences from the reference are bugs (tests/test_fuzz_differential.py looks for them).
//!
//! Parser state is `State`: the section we are in, carrying what that section needs (the
//! current allocation, the open value block, the live-range list with its running peak total
//! or tree stack), so nothing outlives its section. Whether a chunk of a big file may start in
//! a state is therefore a question the state answers (`State::chunk_start`), not a list of
//! fields kept by hand. The one thing counted across sections is the tree-row number.
//!
//! Robustness: no recursion (the protobuf-text reader is two fixed levels deep), every index is
//! checked, every number is range-checked into its column type (an error, never an overflow),
//! and the work per line is linear in its length.

mod allocation;
pub mod checks;
mod live_range;
pub mod split;
mod values;

pub use values::{split_defining_line, ValueRef};

use crate::error::{FileCtx, Result};
use crate::lines::Lines;
use crate::tables::Tables;

use crate::driver::{checked_lines, feed, LineGrammar};
use crate::lex::{bad, is_name_start, Cur, R};
// --------------------------------------------------------------------------- parser state

struct Block<'a> {
    header_line: u64,
    /// None: the header was unreadable (rows are not emitted).
    header: Option<ValueRef<'a>>,
    expecting: Expecting,
    lists: Lists<'a>,
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

/// Where the parser is, carrying what that section needs: a section header or an empty line
/// replaces the whole state, so nothing outlives its section.
enum State<'c> {
    /// Before the first section, after an empty line, or after a one-line section
    /// (`Total bytes used: …`, `HloLiveRange not available …`): only a header may follow.
    Idle,
    /// `BufferAssignment:` (§2.2, §2.3): the allocation the next ` value:` lines belong to;
    /// `broken` when its line was unreadable (its values are still read, but give no rows).
    /// Neither: no allocation line yet, so a value line is an error.
    /// `reused`: after the allocation's ` reused by buffers of a different color:` line, whose
    /// `  value:` lines (two spaces) may follow, and nothing but them.
    Allocations { current: Option<i64>, broken: bool, reused: bool },
    /// `Used values:` (§2.5): the value block being read, until its ` from instruction:`.
    Values { block: Option<Block<'c>> },
    /// `HloLiveRange (max N):` (§2.6), in one of its lists.
    LiveRange(Live),
}

/// The lists of an `HloLiveRange` section. Only the peak list and the tree carry running
/// state; chunks of a big file never start inside them.
enum Live {
    /// After the section header, before any list header.
    Start,
    /// `  InstructionSequence:`
    Schedule,
    /// `  BufferLiveRange:`
    Buffers,
    /// `  Live ranges at T (peak):`: T, and the running byte total of the entries so far
    /// (entries that do not print their cumulative total get this one).
    Peak { time: i32, running: i128 },
    /// After `  Peak memory could not be determined …`: no entries follow.
    AfterPeak,
    /// `  Stack trace breakdown for peak usage: …`: the row of the last line at each depth
    /// (a line's parent is the last line one level up).
    Tree { stack: Vec<i32> },
}

impl State<'_> {
    /// The kind of chunk start whose state (`ChunkStart::state`) this is, so that a chunk of
    /// that kind may begin here; None when this state holds something a chunk parsed on its own
    /// would not start with. Every variant and field is named, so that a new one must be
    /// decided on here.
    fn chunk_start(&self) -> Option<ChunkStart> {
        match self {
            // The allocation line that starts such a chunk sets all three before anything reads them.
            State::Allocations { current: _, broken: _, reused: _ } => Some(ChunkStart::Allocation),
            State::Values { block: None } => Some(ChunkStart::ValueHeader),
            State::Values { block: Some(_) } => None,
            // counted against its header's max (`Parser::sequence`): a chunk could not check it
            State::LiveRange(Live::Schedule) => None,
            State::LiveRange(Live::Buffers) => Some(ChunkStart::LiveRange),
            State::LiveRange(Live::Start | Live::AfterPeak) => None,
            State::LiveRange(Live::Peak { time: _, running: _ } | Live::Tree { stack: _ }) => None,
            State::Idle => None,
        }
    }
}

/// The `defining_*` columns that come from parsing a value's instruction text, which reports
/// nothing either way (unreadable text gives nulls, as in the reference's
/// `describe_instruction`): only parsed when one of them is wanted, and by the opcode/op_name
/// summary when only those two are.
fn push_defining(src: &crate::source::SourceRef, v: &mut crate::tables::Values, sc: &mut crate::hlo::Scratch, text: &[u8]) {
    let want_more = v.defining_shape.is_built()
        || v.defining_source_file.is_built()
        || v.defining_source_line.is_built()
        || v.defining_fusion_kind.is_built()
        || v.defining_custom_call_target.is_built();
    if want_more {
        let d = crate::hlo::instruction_defining(text, sc);
        let d = d.as_ref();
        v.defining_opcode.push_opt(src, d.map(|d| d.opcode));
        v.defining_op_name.push_opt(src, d.and_then(|d| d.op_name.as_deref()));
        v.defining_shape.push_opt(src, d.map(|d| d.shape));
        // Metadata only: a value's text has no module-level stack-frame tables to resolve in.
        v.defining_source_file.push_opt(src, d.and_then(|d| d.source_file.as_deref()));
        v.defining_source_line.push(d.and_then(|d| d.source_line));
        v.defining_fusion_kind.push_opt(src, d.and_then(|d| d.fusion_kind));
        v.defining_custom_call_target.push_opt(src, d.and_then(|d| d.custom_call_target.as_deref()));
        return;
    }
    let wanted = v.defining_opcode.is_built() || v.defining_op_name.is_built();
    let parsed = if wanted { crate::hlo::instruction_summary(text) } else { None };
    v.defining_opcode.push_opt(src, parsed.as_ref().map(|p| p.0));
    v.defining_op_name.push_opt(src, parsed.as_ref().and_then(|p| p.1.as_deref()));
    for c in [&mut v.defining_shape, &mut v.defining_source_file, &mut v.defining_fusion_kind, &mut v.defining_custom_call_target] {
        c.push_null();
    }
    v.defining_source_line.push(None);
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    state: State<'c>,
    /// The `peak_breakdown.row` of the next tree line: rows are numbered across the file, not
    /// per tree, so this outlives sections (and a chunk, which counts from 0, may not start
    /// after a tree line).
    tree_rows: i32,
    /// The emptied lists of the last value block, for the next one: a block is a few lines,
    /// and allocating its two lists anew took ~10% of a read.
    spare: Lists<'c>,
    /// Reused buffers of the instruction parser, for the `defining_*` columns that need the
    /// full parse.
    scratch: crate::hlo::Scratch,
    /// The `InstructionSequence` being counted against its `HloLiveRange (max N)` header
    /// (FORMATS.md §2.10: positions run 0 … max-1), until the list ends (`end_sequence`).
    sequence: Option<Sequence<'c>>,
    /// What the whole file is checked for at its end (`checks.rs`).
    checks: checks::Checks,
}

/// What the check of a live-range section's `InstructionSequence` needs: the header's `max`,
/// its line, and the entries read so far.
struct Sequence<'c> {
    max: i64,
    header_no: u64,
    header: &'c [u8],
    count: i64,
    /// An `InstructionSequence:` line was seen (a section without the list is not checked).
    listed: bool,
}

/// A value block's `positions` and `uses`.
#[derive(Default)]
struct Lists<'a> {
    positions: Vec<(&'a [u8], &'a [u8])>,
    uses: Vec<(&'a [u8], i32, &'a [u8])>,
}

/// Parse one buffer-assignment-family file (`data` is the whole file).
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let errors_before = t.errors.len();
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let mut p = Parser::new(ctx, t);
    let last = feed(&mut p, lines)?;
    let checks = p.finish(last)?;
    ctx.report_whole_file(&mut t.errors, errors_before, &checks.problems())
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
    /// `    NAME{…}:A-B` (HloLiveRange BufferLiveRange)
    LiveRange,
}

/// The parser state at the end of a chunk, as far as the next chunk cares: the kind of chunk
/// start whose state it is (`State::chunk_start`), if any.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkState(Option<ChunkStart>);

impl ChunkState {
    /// Whether a chunk starting with a `next` line, parsed from `next.state()`, continues
    /// the serial parse exactly from here.
    pub fn admits(self, next: Option<ChunkStart>) -> bool {
        next.is_some() && next == self.0
    }
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
        if rest[0].is_ascii_digit() {
            return None; // `    N:NAME` of an InstructionSequence: counted, no chunk starts there
        }
        let ends_in_digit = rest.last().is_some_and(u8::is_ascii_digit);
        (is_name_start(rest[0]) && ends_in_digit && memchr::memmem::find(rest, b"}:").is_some()).then_some(ChunkStart::LiveRange)
    }

    /// The state a chunk starting with such a line is parsed from: the serial parse must be
    /// in it right before the line for the chunk to give the same rows (`State::chunk_start`
    /// is the way back).
    fn state<'c>(self) -> State<'c> {
        match self {
            ChunkStart::Allocation => State::Allocations { current: None, broken: false, reused: false },
            ChunkStart::ValueHeader => State::Values { block: None },
            ChunkStart::LiveRange => State::LiveRange(Live::Buffers),
        }
    }
}

/// Parse `data[start..end]` (`end` at a line start or the end of `data`) as the serial parse
/// would, given that the parse is in `kind.state()` before it (`kind` None: `start` is the start
/// of the file). Line numbers are local (the first line is 1); the end of `data` is handled as
/// the end of the file. Returns the state at `end` and the number of lines, or None when the
/// chunk is not valid UTF-8. `ctx` should collect: a caller keeps a chunk only when it
/// reported no error and the chunk before it ended in the state this one assumed. The
/// whole-file checks of the chunk come back unreported: the caller joins them
/// (`checks::Checks::append`) and reports them for the file.
pub fn parse_chunk<'c>(data: &'c [u8], start: usize, end: usize, kind: Option<ChunkStart>, ctx: FileCtx<'c>, t: &mut Tables) -> Result<Option<(ChunkState, u64, checks::Checks)>> {
    let at_eof = end == data.len();
    let lines = Lines::starting_at(&data[..end], start, 0);
    if lines.has_bad_lines() {
        return Ok(None);
    }
    let mut p = Parser::new(ctx, t);
    if let Some(k) = kind {
        p.state = k.state();
    }
    let last = feed(&mut p, lines)?;
    let state = p.chunk_state();
    let checks = if at_eof { p.finish(last)? } else { std::mem::take(&mut p.checks) };
    Ok(Some((state, last, checks)))
}

impl<'c> LineGrammar<'c> for Parser<'_, 'c> {
    fn tables(&mut self) -> &mut Tables {
        self.t
    }

    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()> {
        self.ctx
            .error_at(&mut self.t.errors, line, column, msg, text)
    }

    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if text.is_empty() {
            return self.blank(no);
        }
        if text[0] != b' ' && text[0] != b'<' && self.section_header(no, text)? {
            return Ok(());
        }
        match self.state {
            State::Idle => bad(0, "expected a section header (BufferAssignment:, Total bytes used: …, Used values:, HloLiveRange …) or an empty line"),
            State::Allocations { .. } => self.allocations_line(no, text),
            State::Values { .. } => self.values_line(no, text),
            State::LiveRange(_) => self.live_range_line(no, text),
        }
    }
}

impl<'t, 'c> Parser<'t, 'c> {
    fn new(ctx: FileCtx<'c>, t: &'t mut Tables) -> Parser<'t, 'c> {
        Parser {
            ctx,
            t,
            state: State::Idle,
            tree_rows: 0,
            spare: Lists::default(),
            scratch: Default::default(),
            sequence: None,
            checks: Default::default(),
        }
    }

    /// See `ChunkState`. A chunk numbers tree rows from 0, so none may start after a tree line;
    /// nor inside an `InstructionSequence` being counted (a chunk could not check it).
    fn chunk_state(&self) -> ChunkState {
        ChunkState(self.state.chunk_start().filter(|_| self.tree_rows == 0 && self.sequence.is_none()))
    }

    fn blank(&mut self, no: u64) -> R<()> {
        self.close_block(no, "an empty line", b"")?;
        self.end_sequence().map_err(crate::lex::Stop::Fatal)?;
        self.state = State::Idle;
        Ok(())
    }

    fn finish(mut self, last: u64) -> Result<checks::Checks> {
        self.close_block(last, "the end of the file", b"")?;
        self.end_sequence()?;
        Ok(self.checks)
    }

    /// The `InstructionSequence` is over (another list, the end of the section or file): an
    /// error at its header if it did not list `max` instructions (a file cut short).
    fn end_sequence(&mut self) -> Result<()> {
        let Some(seq) = self.sequence.take() else { return Ok(()) };
        if !seq.listed || seq.count == seq.max {
            return Ok(());
        }
        let msg = format!(
            "the InstructionSequence lists {} instruction(s) but its header says max {}: the file is cut short or edited",
            seq.count, seq.max
        );
        self.ctx.error_at(&mut self.t.errors, seq.header_no, 1, msg, seq.header)
    }

    fn section_header(&mut self, no: u64, text: &'c [u8]) -> R<bool> {
        let r = self.section_header_line(no, text);
        if matches!(r, Ok(true)) {
            self.checks.section(text == b"BufferAssignment:");
        }
        r
    }

    fn section_header_line(&mut self, no: u64, text: &'c [u8]) -> R<bool> {
        if text == b"BufferAssignment:" {
            self.enter(State::Allocations { current: None, broken: false, reused: false }, no, text)?;
        } else if text.starts_with(b"Total bytes used: ") {
            self.enter(State::Idle, no, text)?;
            self.total_line(no, text)?;
        } else if text == b"Used values:" {
            self.enter(State::Values { block: None }, no, text)?;
        } else if text.starts_with(b"HloLiveRange") {
            self.enter(State::Idle, no, text)?;
            self.live_range_header(no, text)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// A section header ends the section before it (and an open value block, an error).
    fn enter(&mut self, state: State<'c>, no: u64, text: &[u8]) -> R<()> {
        self.close_block(no, "a new section", text)?;
        self.end_sequence().map_err(crate::lex::Stop::Fatal)?;
        self.state = state;
        Ok(())
    }

    fn total(&mut self, section: &str, key: &str, color: Option<i32>, value: i64, line: u64) {
        let t = &mut self.t.totals;
        t.file_id.push(self.ctx.file_id);
        t.section.push(section);
        t.key.push(key);
        t.color.push(color);
        t.value.push(value);
        t.line.push(line as i32);
    }

    // ------------------------------------------------------------------ total line (§2.4)

    fn total_line(&mut self, no: u64, text: &[u8]) -> R<()> {
        let mut cur = Cur::new(text, 0);
        cur.expect("Total bytes used: ", "")?;
        let total = cur.bytes_and_human("the total line")?;
        self.total("buffer_assignment", "total_bytes_used", None, total, no);
        Ok(())
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    use super::live_range::*;
    use super::values::*;

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

    /// `ChunkStart::state` and `State::chunk_start` are each other's inverse.
    #[test]
    fn chunk_start_states_round_trip() {
        for k in [ChunkStart::Allocation, ChunkStart::ValueHeader, ChunkStart::LiveRange] {
            assert_eq!(k.state().chunk_start(), Some(k));
            assert!(ChunkState(Some(k)).admits(Some(k)) && !ChunkState(None).admits(Some(k)));
        }
        assert!(!ChunkState(None).admits(None));
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
        crate::driver::assert_never_panics(cases, parse);
    }
}

