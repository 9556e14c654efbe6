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

pub mod split;

use crate::error::{FileCtx, Result};
use crate::lines::Lines;
use crate::tables::Tables;

use crate::lex::{bad, feed, grouped_end, grouped_value, is_name_start, checked_lines, Cur, LineGrammar, I32_MAX, I64_MAX, R};

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

/// A ` from instruction: …` line as (start of the instruction text, its end): the end is where
/// the next block's value header starts when the old layout glued one to the line (§2.5: the
/// last `<` whose rest of the line is one whole header), else the end of the line. The chunk
/// splitter cuts at that same place (`split::cut_in`).
pub fn split_defining_line(text: &[u8]) -> (usize, usize) {
    let (start, end, _) = defining_line_parts(text);
    (start, end)
}

/// `split_defining_line`, and the glued header when there is one (parsed to find it: the
/// parser opens its block with it instead of parsing it again).
fn defining_line_parts(text: &[u8]) -> (usize, usize, Option<ValueRef<'_>>) {
    let mut start = b" from instruction:".len().min(text.len());
    if text.get(start) == Some(&b' ') {
        start += 1;
    }
    if let Some(g) = memchr::memrchr(b'<', &text[start..]).map(|lt| start + lt) {
        if let Some(header) = ValueRef::parse_whole(&text[g..]) {
            return (start, g, Some(header));
        }
    }
    (start, text.len(), None)
}

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
    Allocations { current: Option<i64>, broken: bool },
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
            // The allocation line that starts such a chunk sets both before anything reads them.
            State::Allocations { current: _, broken: _ } => Some(ChunkStart::Allocation),
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
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let mut p = Parser::new(ctx, t);
    let last = feed(&mut p, lines)?;
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
            ChunkStart::Allocation => State::Allocations { current: None, broken: false },
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
/// reported no error and the chunk before it ended in the state this one assumed.
pub fn parse_chunk<'c>(data: &'c [u8], start: usize, end: usize, kind: Option<ChunkStart>, ctx: FileCtx<'c>, t: &mut Tables) -> Result<Option<(ChunkState, u64)>> {
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
    if at_eof {
        p.finish(last)?;
    }
    Ok(Some((state, last)))
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

    fn finish(mut self, last: u64) -> Result<()> {
        self.close_block(last, "the end of the file", b"")?;
        self.end_sequence()
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
        if text == b"BufferAssignment:" {
            self.enter(State::Allocations { current: None, broken: false }, no, text)?;
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
        // Until the line has been read, the value lines after it belong to a broken allocation.
        self.state = State::Allocations { current: None, broken: true };
        let AllocationLine { index, size, flags: f, flags_text } = allocation_line(text, 0, SizeForm::Bytes)?;
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
        a.flags.push(&src, flags_text);
        a.line.push(no as i64);
        self.state = State::Allocations { current: Some(index), broken: false };
        Ok(())
    }

    fn value_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let State::Allocations { current, broken } = self.state else { unreachable!("a value line outside BufferAssignment") };
        if current.is_none() && !broken {
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
        let Some(allocation) = current else {
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
        let total = cur.bytes_and_human("the total line")?;
        self.total("buffer_assignment", "total_bytes_used", None, total, no);
        Ok(())
    }

    // ------------------------------------------------------------------ used values (§2.5)

    fn values_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if text.starts_with(b"<") {
            self.close_block(no, "the next value header", text)?;
            return self.open_block(no, text, 0);
        }
        // Only the Used values section gets here: no block means no value header yet.
        let State::Values { block: Some(block) } = &mut self.state else {
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
                block.lists.positions.push(p);
            }
        } else if expecting == Expecting::Uses {
            if text == b"  (none)" {
                block.expecting = Expecting::NoMoreUses;
            } else {
                let u = use_item(text)?;
                block.lists.uses.push(u);
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
                self.open_parsed_block(no, None);
                return Err(e);
            }
        };
        // Only in the Used values section, whose block was just closed: the block is all its state.
        self.open_parsed_block(no, header);
        Ok(())
    }

    /// Open the value block of a header read at line `no` (None: unreadable).
    fn open_parsed_block(&mut self, no: u64, header: Option<ValueRef<'c>>) {
        let lists = std::mem::take(&mut self.spare);
        self.state = State::Values { block: Some(Block::new(no, header, lists)) };
    }

    fn defining_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let (start, end, glued) = defining_line_parts(text);
        let instruction = &text[start..end];
        let State::Values { block } = &mut self.state else { unreachable!("a defining line outside Used values") };
        let block = block.take().expect("a value block is open here");
        if let Some(r) = block.header {
            let src = self.ctx.src;
            let v = &mut self.t.values;
            v.file_id.push(self.ctx.file_id);
            v.value_id.push(r.id);
            v.instruction.push(&src, r.name);
            v.shape_index.push(&src, r.index);
            v.is_phi.push(r.phi);
            v.color.push(r.color);
            for (name, index) in &block.lists.positions {
                v.positions.items.instruction.push(&src, name);
                v.positions.items.shape_index.push(&src, index);
            }
            v.positions.end_row();
            for (name, operand, index) in &block.lists.uses {
                v.uses.items.instruction.push(&src, name);
                v.uses.items.operand.push(*operand);
                v.uses.items.shape_index.push(&src, index);
            }
            v.uses.end_row();
            v.uses_initialized.push(block.uses_initialized);
            v.defining_instruction.push(&src, instruction);
            push_defining(&src, v, &mut self.scratch, instruction);
            v.line.push(block.header_line as i64);
        }
        self.spare = block.lists;
        if let Some(header) = glued {
            self.open_parsed_block(no, Some(header));
        }
        Ok(())
    }

    /// A value block cut short (no ` from instruction:`) is an error; its row is dropped.
    fn close_block(&mut self, no: u64, reason: &str, text: &[u8]) -> Result<()> {
        let State::Values { block } = &mut self.state else {
            return Ok(()); // only the Used values section has blocks
        };
        let Some(block) = block.take() else {
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

    fn live_range_header(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if text.starts_with(b"HloLiveRange not available") {
            self.total("live_range", "not_available", None, 0, no);
            return Ok(());
        }
        self.state = State::LiveRange(Live::Start); // even when the rest of the header is broken
        let mut cur = Cur::new(text, 0);
        cur.expect("HloLiveRange (max ", "or 'HloLiveRange not available …'")?;
        let max = cur.uint("the schedule length", I64_MAX)? as i64;
        cur.expect("):", "")?;
        cur.end("the HloLiveRange header")?;
        self.total("live_range", "max", None, max, no);
        self.sequence = Some(Sequence { max, header_no: no, header: text, count: 0, listed: false });
        Ok(())
    }

    fn live_range_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        const UNBOUNDED: &[u8] =
            b"  Peak memory could not be determined due to unbounded dynamic shape.";
        const STACK: &[u8] = b"  Stack trace breakdown for peak usage: ";
        const EXPECTED: &str = "expected a live-range line: '  InstructionSequence:', '  BufferLiveRange:', '  Live ranges at T (peak):', '  Stack trace breakdown …' or a 4-space-indented entry under one";
        let other_list = text == b"  BufferLiveRange:" || text.starts_with(b"  Live ranges at ") || text == UNBOUNDED || text.starts_with(STACK);
        if other_list {
            self.end_sequence().map_err(crate::lex::Stop::Fatal)?;
        }
        if text == b"  InstructionSequence:" {
            if let Some(seq) = &mut self.sequence {
                seq.listed = true;
            }
            self.state = State::LiveRange(Live::Schedule);
        } else if text == b"  BufferLiveRange:" {
            self.state = State::LiveRange(Live::Buffers);
        } else if text.starts_with(b"  Live ranges at ") {
            return self.peak_header(no, text);
        } else if text == UNBOUNDED {
            self.total("live_range", "peak_unbounded", None, 0, no);
            self.state = State::LiveRange(Live::AfterPeak);
        } else if text.starts_with(STACK) {
            let mut cur = Cur::new(text, STACK.len());
            let total = cur.grouped("the peak total")?;
            cur.expect(" bytes", "")?;
            cur.end("the stack-trace header")?;
            self.total("peak_breakdown", "total", None, total, no);
            self.state = State::LiveRange(Live::Tree { stack: Vec::new() });
        } else if text.starts_with(b"    ") {
            let State::LiveRange(live) = &self.state else { unreachable!("a live-range line outside HloLiveRange") };
            return match live {
                Live::Schedule => self.schedule_line(no, text),
                Live::Buffers => self.buffer_line(no, text),
                Live::Peak { .. } => self.peak_line(no, text),
                Live::Tree { .. } => self.tree_line(no, text),
                Live::Start | Live::AfterPeak => bad(0, EXPECTED), // no list to be an entry of
            };
        } else {
            return bad(0, EXPECTED);
        }
        Ok(())
    }

    /// `  Live ranges at T (peak):` starts the peak list at time T, running total 0.
    fn peak_header(&mut self, no: u64, text: &[u8]) -> R<()> {
        let mut cur = Cur::new(text, b"  Live ranges at ".len());
        let time = cur.uint("the peak time", I32_MAX)? as i32;
        // As in the reference, a header broken after its time still sets the time of the
        // peak list it interrupts (elsewhere the time is unread until a good header).
        if let State::LiveRange(Live::Peak { time: t, .. }) = &mut self.state {
            *t = time;
        }
        cur.expect(" (peak):", "")?;
        cur.end("the peak header")?;
        self.total("live_range", "peak_time", None, time as i64, no);
        self.state = State::LiveRange(Live::Peak { time, running: 0 });
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
        if let Some(seq) = &mut self.sequence {
            seq.count += 1;
        }
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
        let State::LiveRange(Live::Peak { time, running }) = &mut self.state else { unreachable!("a peak line outside the peak list") };
        *running += size as i128; // even when the rest of the line is broken, as the reference does
        let (time, mut cumulative, mut printed) = (*time, *running, false);
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
        t.time.push(time);
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
        if depth > self.tree_stack().len() {
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
        let row = self.tree_rows;
        let stack = self.tree_stack();
        let parent = if depth > 0 { Some(stack[depth - 1]) } else { None };
        stack.truncate(depth);
        stack.push(row);
        let src = self.ctx.src;
        let t = &mut self.t.peak_breakdown;
        t.file_id.push(self.ctx.file_id);
        t.row.push(row);
        t.parent_row.push(parent);
        t.depth.push(depth as i32);
        t.label.push(&src, label);
        t.percent.push(pct);
        t.total_bytes.push(figures[0]);
        t.current_bytes.push(figures[1]);
        t.remaining_bytes.push(figures[2]);
        t.line.push(no as i64);
        self.tree_rows = self.tree_rows.wrapping_add(1);
        Ok(())
    }

    /// The open tree's stack (only tree lines ask, and they come only in the tree).
    fn tree_stack(&mut self) -> &mut Vec<i32> {
        let State::LiveRange(Live::Tree { stack }) = &mut self.state else { unreachable!("a tree line outside the tree") };
        stack
    }
}

impl<'a> Block<'a> {
    /// A block that fills `lists` (emptied here).
    fn new(header_line: u64, header: Option<ValueRef<'a>>, mut lists: Lists<'a>) -> Block<'a> {
        lists.positions.clear();
        lists.uses.clear();
        Block { header_line, header, expecting: Expecting::PositionsHeader, lists, uses_initialized: true }
    }
}

// --------------------------------------------------------------------------- small grammars

#[derive(Default)]
pub(crate) struct Flags<'a> {
    pub color: i32,
    pub parameter: Option<(i64, &'a [u8], &'a [u8])>,
    pub output_shape: Option<&'a [u8]>,
    pub constant: bool,
    pub thread_local: bool,
    pub maybe_live_out: bool,
    pub preallocated_temp: bool,
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
    /// The raw text after the size, without the final ':' (`allocations.flags`).
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
        if seen & (1 << flag as u32) != 0 {
            return bad(at, format!("flag {:?} printed twice", FLAG_NAMES[flag]));
        }
        seen |= 1 << flag as u32;
        // A flag ends at the next ", " or at the final ':' ("constant-x" is not "constant").
        if !cur.at_end() && !text[cur.pos..].starts_with(b", ") {
            return bad(cur.pos, "expected ', ' or the final ':' after an allocation flag");
        }
    }
    Ok(AllocationLine { index, size, flags: f, flags_text: &text[flags_start..flags_end] })
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

pub(crate) fn bar_text<'a>(cur: &mut Cur<'a>) -> R<&'a [u8]> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        for data in cases {
            for collect in [true, false] {
                let ctx = FileCtx {
                    file_id: 0,
                    path: "t",
                    collect,
                    src: crate::source::SourceRef::none(),
                    proj: None,
                };
                let mut t = Tables::default();
                let _ = parse(data, ctx, &mut t);
                let _ = t.finish();
            }
        }
    }
}
