//! File structure of one HLO module text (FORMATS.md §3.2–3.5): header, stack-frame tables,
//! computations and their instruction lines, in one pass over the lines.
//!
//! The driver is here (the line loop, its dispatch, headers, stack-frame rows, computations);
//! `emit.rs` turns an instruction line into its rows, `chunk.rs` parses one big file in chunks.
//!
//! The dispatch follows `reference/hlo.py` `_ModuleParser.run` line for line (same error rows
//! at the same lines), so both implementations agree also on broken files.

use std::borrow::Cow;

use super::attributes::{get, split_attributes_in};
use super::general::comp_header_at;
use super::line_forms::*;
use super::instruction::Scratch;
use super::scan::*;
use super::stack_frames::{Frames, RowError, Table};
use super::tape::{Tape, Want};
use crate::error::{FileCtx, Result};
use crate::lines::{Line, Lines};
use crate::tables::Tables;
use super::rules::{HashedName, NameMap, ScopedNames};

/// The header of the computation being read; its row is written when it closes.
struct OpenComp<'c> {
    id: i32,
    name: &'c [u8],
    is_entry: bool,
    signature: &'c [u8],
    result_shape: &'c [u8],
    line: u64,
    has_root: bool,
}

/// A module without `HloModule` header: XLA names it `module_` + its entry computation (the
/// `ENTRY` one, else the last).
#[derive(Default)]
struct Headerless<'c> {
    line: u64,
    entry: Option<&'c [u8]>,
    last: Option<&'c [u8]>,
}

impl Headerless<'_> {
    /// Its name, as XLA names it: `module_` + its entry computation (the `ENTRY` one, else the last).
    fn name(&self) -> Vec<u8> {
        let mut name = b"module_".to_vec();
        name.extend_from_slice(self.entry.or(self.last).unwrap_or(b""));
        name
    }
}

/// What one parse covers, and whether it may go on (the HLO side of chunking a big file).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// The whole file, or the prefix before its first computation: every line is ours.
    Serial,
    /// One chunk of a big file (`parse_chunk`): the stack-frame tables the prefix read are
    /// read-only, and lines that need the whole file's positions are not ours.
    Chunk,
    /// A chunk met such a line (a stack-frame table line, a comment at the start of a line, an
    /// instruction for the general grammar): it stops, and the file is parsed serially.
    Bailed,
}

impl Mode {
    /// At a line only the serial parse may read: true (and `Bailed`) when this is a chunk.
    fn bail(&mut self) -> bool {
        match self {
            Mode::Serial => false,
            Mode::Chunk | Mode::Bailed => {
                *self = Mode::Bailed;
                true
            }
        }
    }
}

/// What a line is to the module parser (`Parser::line_kind`): decided from its first bytes
/// and whether a computation is open; each kind has its handler (`Parser::dispatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind {
    /// An empty line.
    Blank,
    /// Inside a computation, a line starting with two spaces: an instruction (or its start).
    Instruction,
    /// Inside a computation, a line starting with '}'.
    Close,
    /// Inside a computation, any other line (`Parser::in_computation_other`).
    InComputationOther,
    /// `HloModule …`.
    ModuleHeader,
    /// `// -----`, between the modules of a split input.
    SplitMarker,
    /// At module level, a line starting with a blank or '/'.
    Trivia,
    /// Any other module-level line (`Parser::module_line`).
    ModuleLine,
}

/// What the parse does after a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// Go on with the next line (or the pending rest of this one).
    Next,
    /// Dispatch the same line again (a computation was closed under it).
    Again,
    /// Stop here: this chunk leaves the file to the serial parse (`Mode::Bailed`).
    Stop,
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    data: &'c [u8],
    lines: Lines<'c>,
    /// Number of the last line taken from `lines` (= the line count at the end).
    last_no: u64,
    sc: Scratch,
    frames: Frames<'c>,
    computation_id: i32,
    instruction_id: i32,
    comp: Option<OpenComp<'c>>,
    /// A module is open: its `HloModule` header was read, or (header-less, as XLA's parser
    /// also takes) its first computation.
    have_header: bool,
    /// 0-based order of the open (or last) module in the file (FORMATS.md §3.2.1).
    module_index: i32,
    /// The open module has no `HloModule` header: its row is written when it ends.
    headerless: Option<Headerless<'c>>,
    table: Option<Table>,
    mode: Mode,
    /// The rest of a line after an instruction or `}` that ended inside it, or the text after
    /// leading comments: dispatched like a line of its own.
    pending: Option<Line<'c>>,
    /// Start of every line (built the first time the general grammar needs a position).
    starts: Vec<usize>,
    /// The field tape of the instruction line being read (stage 1, `tape.rs`).
    tape: Tape,
    /// The decoders stage 2 runs: those of the columns this read builds.
    want: Want,
    /// The whole-file checks (`checks.rs`): counts of the open module, problems of the ended.
    checks: ModuleChecks,
    /// The instruction names of the open computation, each to its line (`rules.rs`: defined
    /// once, operands defined before their use).
    defined: ScopedNames<'c>,
    /// The computations of the open module read so far (called computations are defined
    /// before their callers).
    computations: NameMap<'c>,
    /// Result shapes already checked and found well-formed, with no unknown element type
    /// (`rules::check_shape`): a file has few distinct shapes, and checking one cost more than
    /// looking it up (6% of a full read's instructions, callgrind).
    good_shapes: super::rules::ShapeCache<'c>,
    /// A chunk: called computations not defined before in the chunk (byte ranges of the
    /// input), and the chunk's computations in order (`hlo/split.rs` checks the first against
    /// the chunks before).
    deferred: Vec<(usize, usize)>,
    chunk_comps: Vec<(usize, usize)>,
    /// Errors in the table when the open computation / module began, and whether a line that
    /// is not valid was skipped since: after an error, a name or computation may be missing
    /// because its line was not read, so uses of names are not judged (no error for each use).
    comp_errors: usize,
    module_errors: usize,
    damaged: bool,
    module_damaged: bool,
}

pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    parse_text(data, ctx, t, true)
}

/// Parse HLO text; `judged`: run the whole-file checks (`checks.rs`) — false for the text an
/// HLO proto prints (`hlo_proto::parse`): not a file anybody could have cut short.
pub fn parse_text<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables, judged: bool) -> Result<()> {
    let errors_before = t.errors.len();
    // The reference decodes (and reports) every line before it parses any: report invalid
    // UTF-8 first, so that errors come in the same order and strict mode fails at the same line.
    let mut lines = crate::driver::checked_lines(data, &ctx, &mut t.errors)?;
    // Size the instruction columns once (no regrowth: no copies, no second round of fresh
    // pages): instruction lines are the lines that start with two spaces. (The reader may have
    // done it for a whole group of small files: `presize`.) The same pass lists the line ends.
    let indented = index_lines(&mut lines, data, 0);
    if !ctx.presized {
        t.instructions.reserve(indented);
    }
    let mut p = Parser {
        ctx,
        t,
        data,
        lines,
        last_no: 0,
        sc: Scratch::default(),
        frames: Frames::default(),
        computation_id: -1,
        instruction_id: 0,
        comp: None,
        have_header: false,
        module_index: -1,
        headerless: None,
        table: None,
        mode: Mode::Serial,
        pending: None,
        starts: Vec::new(),
        tape: Tape::default(),
        want: Want::ALL,
        checks: ModuleChecks::default(),
        defined: ScopedNames::default(),
        computations: NameMap::default(),
        good_shapes: Default::default(),
        deferred: Vec::new(),
        chunk_comps: Vec::new(),
        comp_errors: 0,
        module_errors: 0,
        damaged: false,
        module_damaged: false,
    };
    p.want = wanted(p.t);
    p.run()?;
    p.end_module();
    if judged {
        p.ctx.report_whole_file(&mut p.t.errors, errors_before, p.checks.problems())?;
    }
    Ok(())
}

/// The stage-2 decoders a read needs: those of the instruction columns it builds (and what
/// the `custom_calls` table reads).
fn wanted(t: &Tables) -> Want {
    let (r, calls) = (&t.instructions, t.custom_calls.is_wanted());
    let _ = (r.operands.items.is_built(), r.operand_index.is_built(), r.called_computations.items.is_built());
    Want {
        // always: the rules check every operand and called computation (`rules.rs`)
        operands: true,
        called: true,
        metadata: r.op_name.is_built()
            || r.op_type.is_built()
            || r.source_file.is_built()
            || r.source_line.is_built()
            || r.source_function.is_built()
            || r.stack_frame_id.is_built(),
        target: r.custom_call_target.is_built() || calls,
        backend_config: r.backend_config.is_built() || calls,
    }
}

/// One classifier pass over `data[from..]`: its line ends into `lines` (which then need not
/// search for them) and the number of its lines that start with two spaces (`count_indented_lines`).
/// Inputs of 4 GiB and more keep searching (positions are u32).
fn index_lines(lines: &mut Lines<'_>, data: &[u8], from: usize) -> usize {
    let level = crate::lex::classify::Level::current();
    if data.len() > u32::MAX as usize {
        return crate::lex::classify::count_indented_lines(level, &data[from..]);
    }
    let (ends, indented) = crate::lex::classify::newlines_and_indented(level, data, from);
    lines.use_newlines(ends);
    indented
}

/// Number of lines starting with two spaces (≈ instruction lines; multi-line constants add a
/// few): one pass of the classifier.
pub fn count_indented_lines(data: &[u8]) -> usize {
    crate::lex::classify::count_indented_lines(crate::lex::classify::Level::current(), data)
}

impl<'t, 'c> Parser<'t, 'c> {
    fn next_line(&mut self) -> Option<Line<'c>> {
        let l = self.lines.next()?;
        self.last_no = l.no;
        Some(l)
    }

    fn err(&mut self, line: &Line<'c>, col: u64, msg: impl Into<String>) -> Result<()> {
        self.ctx.error(&mut self.t.errors, line, col, msg)
    }

    fn run(&mut self) -> Result<()> {
        loop {
            self.t.line_end()?; // a streaming read hands out a batch here when one is full
            let Some(line) = self.pending.take().or_else(|| self.next_line()) else { break };
            if line.bad.is_some() {
                // (its error is in the table: names may be missing after it)
                (self.damaged, self.module_damaged) = (true, true);
                continue;
            }
            if self.mode == Mode::Bailed || self.dispatch(&line)? == Flow::Stop {
                return Ok(());
            }
        }
        if self.comp.is_some() {
            let n = self.last_no;
            self.ctx.error_at(&mut self.t.errors, n, 1, "file ends inside a computation".into(), b"")?;
            self.finish_computation(None);
        }
        Ok(())
    }

    /// What `line` is here (`LineKind`): its first bytes, and whether a computation is open.
    #[inline(always)]
    fn line_kind(&self, s: &[u8]) -> LineKind {
        if self.comp.is_some() {
            return if s.starts_with(b"  ") {
                LineKind::Instruction
            } else if s.starts_with(b"}") {
                LineKind::Close
            } else if s.is_empty() {
                LineKind::Blank // XLA never prints an empty line inside a computation
            } else {
                LineKind::InComputationOther
            };
        }
        if s.is_empty() {
            LineKind::Blank
        } else if s.starts_with(b"HloModule ") {
            LineKind::ModuleHeader
        } else if is_split_marker(s) {
            LineKind::SplitMarker
        } else if matches!(s[0], b' ' | b'\t' | b'/') {
            LineKind::Trivia
        } else {
            LineKind::ModuleLine
        }
    }

    /// One line (or the rest of one) by its kind. A module-level line met inside a
    /// computation closes it (an error) and is dispatched again at module level.
    #[inline(always)]
    fn dispatch(&mut self, line: &Line<'c>) -> Result<Flow> {
        loop {
            let flow = match self.line_kind(line.text) {
                LineKind::Blank => Flow::Next,
                LineKind::Instruction => {
                    self.instruction(line)?;
                    Flow::Next
                }
                LineKind::Close => {
                    self.close_computation(line)?;
                    Flow::Next
                }
                LineKind::InComputationOther => self.in_computation_other(line)?,
                LineKind::ModuleHeader => {
                    if self.have_header && self.mode.bail() {
                        return Ok(Flow::Stop); // a second module: the serial parse numbers it
                    }
                    self.header(line)?;
                    Flow::Next
                }
                LineKind::SplitMarker => {
                    if self.mode.bail() {
                        return Ok(Flow::Stop);
                    }
                    self.end_module();
                    Flow::Next
                }
                LineKind::Trivia => self.module_trivia(line)?,
                LineKind::ModuleLine => self.module_line(line)?,
            };
            if flow != Flow::Again {
                return Ok(flow);
            }
        }
    }

    /// Inside a computation, a line that is neither an instruction line nor a '}' line:
    /// blanks or comments first (the rest is dispatched on its own), a '}' or an instruction
    /// after other indentation, or a module-level line: the computation was not closed.
    #[cold]
    fn in_computation_other(&mut self, line: &Line<'c>) -> Result<Flow> {
        let s = line.text;
        let Some(rest) = self.leading_trivia(line)? else { return Ok(Flow::Next) };
        if rest.start != line.start {
            self.pending = Some(rest);
            return Ok(Flow::Next);
        }
        let b = blanks(s);
        if s.get(b) == Some(&b'}') {
            self.close_computation(&trim_start(line, b))?;
            return Ok(Flow::Next);
        }
        if !starts_module_item(s) {
            // an instruction at column 0, or after one space or a tab
            self.general(line)?;
            return Ok(Flow::Next);
        }
        self.err(line, 1, "computation not closed before this line")?;
        self.finish_computation(None);
        Ok(Flow::Again)
    }

    /// At module level, a line starting with a blank or '/': comments and blanks before its
    /// content (the rest is dispatched on its own); a '/' that starts no comment is a module
    /// line.
    fn module_trivia(&mut self, line: &Line<'c>) -> Result<Flow> {
        let s = line.text;
        match self.leading_trivia(line)? {
            None => Ok(Flow::Next),
            Some(rest) if rest.start != line.start => {
                self.pending = Some(rest);
                Ok(Flow::Next)
            }
            Some(_) if blanks(s) > 0 => {
                // blanks before a module-level line are insignificant
                self.pending = Some(trim_start(line, blanks(s)));
                Ok(Flow::Next)
            }
            Some(_) => self.module_line(line),
        }
    }

    /// A module-level line: a computation header (of a header-less module too), a stack-frame
    /// table name or row, a header for the general grammar, or an error.
    fn module_line(&mut self, line: &Line<'c>) -> Result<Flow> {
        let s = line.text;
        if !self.have_header {
            match comp_header(s).or_else(|| comp_header(strip_line_comment(s))) {
                // XLA's parser takes a module without header: computations only
                Some(_) if self.mode.bail() => return Ok(Flow::Stop),
                Some(_) => self.begin_headerless(line.no),
                None if self.general_header(line) => return Ok(Flow::Next),
                None => {
                    self.err(line, 1, "expected 'HloModule' header")?;
                    return Ok(Flow::Next);
                }
            }
        }
        // a table line would change the stack-frame tables later chunks read
        if (s[0].is_ascii_digit() || Table::from_line(s).is_some()) && self.mode.bail() {
            return Ok(Flow::Stop);
        }
        if let Some(t) = Table::from_line(s) {
            self.table = Some(t);
            return Ok(Flow::Next);
        }
        if s[0].is_ascii_digit() {
            self.stack_frame_row(line)?;
            return Ok(Flow::Next);
        }
        if let Some((name, is_entry, signature, result_shape)) = comp_header(s).or_else(|| comp_header(strip_line_comment(s))) {
            self.table = None;
            self.computation_id += 1;
            self.open_names();
            self.comp = Some(OpenComp { id: self.computation_id, name, is_entry, signature, result_shape, line: line.no, has_root: false });
            return Ok(Flow::Next);
        }
        if !self.general_header(line) {
            self.err(line, 1, "unrecognised line")?;
        }
        Ok(Flow::Next)
    }

    /// A row of the stack-frame table being read.
    fn stack_frame_row(&mut self, line: &Line<'c>) -> Result<()> {
        let (fid, src) = (self.ctx.file_id, self.ctx.src);
        match self.frames.row(self.table, line.text, line.no, fid, &src, &mut self.t.stack_frames) {
            Ok(()) => Ok(()),
            Err(RowError::Bad) => {
                let msg = format!("bad stack-frame table row ({})", Table::name(self.table));
                self.err(line, 1, msg)
            }
            Err(RowError::Range(at, limit)) => {
                let msg = format!("stack-frame table number is out of range (at most {limit})");
                self.err(line, at as u64 + 1, msg)
            }
        }
    }

    /// A computation header the one-line form does not take (`comp_header_at`): true when one
    /// starts at `line` (its computation is then open, and the rest of its last line pending),
    /// or when this chunk gives the file to the serial parse.
    #[cold]
    fn general_header(&mut self, line: &Line<'c>) -> bool {
        if self.mode.bail() {
            return true;
        }
        let Some(h) = comp_header_at(self.data, line.start) else { return false };
        if !self.have_header {
            self.begin_headerless(line.no);
        }
        let d = self.data;
        self.table = None;
        self.computation_id += 1;
        self.open_names();
        self.comp = Some(OpenComp {
            id: self.computation_id,
            name: &d[h.name.0..h.name.1],
            is_entry: h.is_entry,
            signature: &d[h.signature.0..h.signature.1],
            result_shape: &d[h.result_shape.0..h.result_shape.1],
            line: line.no,
            has_root: false,
        });
        self.pending = self.resume(line, h.end);
        true
    }

    /// A computation opens: no instruction name is defined in it yet.
    fn open_names(&mut self) {
        self.defined.open_scope();
        self.comp_errors = self.t.errors.len();
        self.damaged = false;
    }

    /// A module begins: no computation is defined in it yet.
    fn begin_module_names(&mut self) {
        self.computations.clear();
        self.module_errors = self.t.errors.len();
        self.module_damaged = false;
    }

    /// Start a module at a computation header with no `HloModule` header before it.
    fn begin_headerless(&mut self, line: u64) {
        self.checks.begin(line, b"");
        self.begin_module_names();
        self.module_index += 1;
        self.have_header = true;
        self.headerless = Some(Headerless { line, ..Default::default() });
    }

    /// The module ends (a `// -----` line, the next `HloModule` header, the end of the file):
    /// it is judged (`checks.rs`), and the next line that is not a comment starts a new one.
    fn end_module(&mut self) {
        let name = self.headerless.as_ref().map(Headerless::name);
        self.checks.end(name.as_deref(), self.ctx.xla_named);
        self.write_headerless_row();
        self.have_header = false;
        self.table = None;
        self.frames = Frames::default();
        self.computations.clear();
    }

    /// The `modules` row of a header-less module, named as XLA names it.
    fn write_headerless_row(&mut self) {
        let Some(h) = self.headerless.take() else { return };
        let name = h.name();
        let m = &mut self.t.modules;
        m.file_id.push(self.ctx.file_id);
        m.name.push_owned(&name);
        m.is_scheduled.push(false);
        m.entry_computation_layout.push_opt(&self.ctx.src, None);
        m.attributes.push_owned(b"");
        m.line.push(h.line as i32);
        m.module_index.push(self.module_index);
    }

    /// Join `first` with the following lines ("\n" between, as the reference's decoded lines
    /// are joined) until `done` holds; None at the end of the file. Borrowed from the input
    /// when the lines are contiguous there (no CR, no undecodable line).
    fn join(&mut self, first: &Line<'c>, done: impl Fn(&[u8]) -> bool) -> Option<Cow<'c, [u8]>> {
        let data = self.data;
        let start = first.start;
        let mut end = first.start + first.text.len();
        let mut owned: Option<Vec<u8>> = None;
        loop {
            let cur: &[u8] = match &owned {
                Some(v) => v,
                None => &data[start..end],
            };
            if done(cur) {
                break;
            }
            let l = self.next_line()?;
            let lt: &[u8] = if l.bad.is_some() { b"" } else { l.text };
            if owned.is_none() && l.start == end + 1 && l.bad.is_none() {
                end = l.start + l.text.len();
            } else {
                let v = owned.get_or_insert_with(|| data[start..end].to_vec());
                v.push(b'\n');
                v.extend_from_slice(lt);
            }
        }
        Some(match owned {
            Some(v) => Cow::Owned(v),
            None => Cow::Borrowed(&data[start..end]),
        })
    }

    fn header(&mut self, line: &Line<'c>) -> Result<()> {
        if self.have_header {
            // the next module of a file holding several (concatenated dumps)
            self.end_module();
        }
        let saved = self.lines.clone();
        let saved_no = self.last_no;
        let Some(text) = self.join(line, balanced) else {
            // Unbalanced to the end: report and go on with the next line.
            self.lines = saved;
            self.last_no = saved_no;
            return self.err(line, line.text.len() as u64 + 1, "module header: unbalanced brackets");
        };
        let Some((name, attrs_text)) = module_header(&text).or_else(|| name_then_comment(&text)) else {
            return self.err(line, 1, "bad module header");
        };
        let from = match attrs_text {
            Some(a) => a.as_ptr() as usize - text.as_ptr() as usize,
            None => text.len(),
        };
        let attrs_text = &text[from..];
        if let Err(e) = split_attributes_in(&text, from, &mut self.sc.attrs) {
            let msg = format!("module header attributes: {}", e.message(attrs_text));
            return self.err(line, 1, msg);
        }
        let attrs = &self.sc.attrs;
        let is_scheduled = get(&text, attrs, b"is_scheduled") == Some(b"true");
        let layout = get(&text, attrs, b"entry_computation_layout").map(|l| {
            if l.len() >= 2 && l[0] == b'{' && l[l.len() - 1] == b'}' {
                &l[1..l.len() - 1]
            } else {
                l
            }
        });
        self.have_header = true;
        self.module_index += 1;
        self.checks.begin(line.no, name);
        self.begin_module_names();
        let (src, m) = (self.ctx.src, &mut self.t.modules);
        m.file_id.push(self.ctx.file_id);
        m.name.push(&src, name);
        m.is_scheduled.push(is_scheduled);
        m.entry_computation_layout.push_opt(&src, layout);
        m.attributes.push(&src, attrs_text);
        m.line.push(line.no as i32);
        m.module_index.push(self.module_index);
        Ok(())
    }

    fn close_computation(&mut self, line: &Line<'c>) -> Result<()> {
        match comp_close(line.text) {
            Some(thread) => {
                self.finish_computation(thread);
                Ok(())
            }
            None => match next_on_line(line.text) {
                // `} ENTRY main {`: XLA's lexer reads on; what follows is dispatched on its own
                Some(p) => {
                    self.finish_computation(None);
                    self.pending = Some(trim_start(line, p));
                    Ok(())
                }
                None => self.err(line, 1, "bad computation end"),
            },
        }
    }

    fn finish_computation(&mut self, thread: Option<&'c [u8]>) {
        let c = self.comp.take().expect("a computation is open");
        self.checks.computation(c.is_entry);
        // defined for the computations after it (XLA adds a computation once it is read)
        let key = self.name_key(c.name);
        self.computations.insert(HashedName::new(key), c.line);
        if self.mode != Mode::Serial {
            let at = c.name.as_ptr() as usize - self.data.as_ptr() as usize;
            self.chunk_comps.push((at, at + c.name.len()));
        }
        if let Some(h) = &mut self.headerless {
            h.last = Some(c.name);
            if c.is_entry {
                h.entry = Some(c.name);
            }
        }
        let (src, r) = (self.ctx.src, &mut self.t.computations);
        r.file_id.push(self.ctx.file_id);
        r.computation_id.push(c.id);
        r.name.push(&src, c.name);
        r.is_entry.push(c.is_entry);
        r.signature.push(&src, c.signature);
        r.result_shape.push(&src, c.result_shape);
        r.execution_thread.push_opt(&src, thread);
        r.line.push(c.line as i32);
        r.module_index.push(self.module_index.max(0));
    }
}

mod checks;
mod chunk;
mod emit;

use checks::ModuleChecks;
pub use checks::judge;

pub use chunk::{first_computation, is_computation_start, parse_chunk, parse_prefix, ChunkCounts, ChunkNames, Prefix};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_over_lines() {
        use crate::hlo::general::comp_header_at;
        let f = b"ENTRY main\n{\n";
        let h = comp_header_at(f, 0).unwrap();
        assert_eq!((&f[h.name.0..h.name.1], h.is_entry, h.end), (&b"main"[..], true, 12));
        let f = b"add (a: f32[],\n  b: f32[]) /* c */\n -> f32[2]{0}{ ROOT";
        let h = comp_header_at(f, 0).unwrap();
        assert_eq!(&f[h.signature.0..h.signature.1], b"(a: f32[],\n  b: f32[])");
        assert_eq!(&f[h.result_shape.0..h.result_shape.1], b"f32[2]{0}");
        assert_eq!(&f[h.end..], b" ROOT");
        // a `{ … }` after the result shape is the body when no second `{` follows
        let f = b"e () -> f32[] {}";
        assert_eq!(comp_header_at(f, 0).map(|h| (h.result_shape, h.end)), Some(((8, 13), 15)));
        assert_eq!(comp_header_at(b"ENTRY{", 0).map(|h| (h.name, h.is_entry)), Some(((0, 5), false)));
        for not_one in [&b"x = f32[] add(a, b)"[..], b"add (a) f32[] {", b"add () -> {", b"/* open"] {
            assert_eq!(comp_header_at(not_one, 0), None, "{}", String::from_utf8_lossy(not_one));
        }
        assert_eq!(next_on_line(b"} ENTRY e {"), Some(2));
        assert_eq!(next_on_line(b"}ENTRY"), Some(1));
        assert_eq!(next_on_line(b"} // x"), None);
        assert_eq!(next_on_line(b"}, execution_thread=\"t\""), None);
        assert!(is_split_marker(b"// -----") && is_split_marker(b"// -----  ") && !is_split_marker(b"// ------x"));
        assert_eq!(name_then_comment(b"HloModule m // c"), Some((&b"m"[..], None)));
        assert_eq!(name_then_comment(b"HloModule m x"), None);
    }

    #[test]
    fn computation_headers() {
        let h = comp_header(b"ENTRY %main.47 (Arg_0.1: bf16[8], /*index=5*/a: (f32[], s32[])) -> (f32[], f32[]) {").unwrap();
        assert_eq!(h.0, b"main.47");
        assert!(h.1);
        assert_eq!(h.2, &b"(Arg_0.1: bf16[8], /*index=5*/a: (f32[], s32[]))"[..]);
        assert_eq!(h.3, b"(f32[], f32[])");
        assert_eq!(comp_header(b"add.1 {"), Some((&b"add.1"[..], false, &b""[..], &b""[..])));
        assert_eq!(comp_header(b"ENTRY main.4 {"), Some((&b"main.4"[..], true, &b""[..], &b""[..])));
        assert_eq!(comp_header(b"ENTRY {"), Some((&b"ENTRY"[..], false, &b""[..], &b""[..])));
        assert_eq!(comp_header(b"%f (a: f32[]) -> {").map(|h| h.3), Some(&b""[..]));
        assert_eq!(comp_header(b"%f (a: f32[]) -> f32[]"), None);
        assert_eq!(comp_header(b"garbage at column 0"), None);
        assert_eq!(comp_header(b"ENTRY /* c */ /**/first {"), Some((&b"first"[..], true, &b""[..], &b""[..])));
        assert_eq!(comp_header(b"ENTRY /* c */ ENTRY first {"), None);
        assert_eq!(comp_header(b"%add(a: f32[]) -> f32[] {").map(|h| (h.0, h.2)), Some((&b"add"[..], &b"(a: f32[])"[..])));
        assert_eq!(comp_header(b"ENTRY %main(a: f32[]) -> f32[] {").map(|h| (h.0, h.1)), Some((&b"main"[..], true)));
    }

    #[test]
    fn closers_and_headers() {
        assert_eq!(comp_close(b"}"), Some(None));
        assert_eq!(comp_close(b"}, execution_thread=\"host\""), Some(Some(&b"host"[..])));
        assert_eq!(comp_close(b"}, execution_thread=\"host\" // x"), Some(Some(&b"host"[..])));
        assert_eq!(comp_close(b"} // fused"), Some(None));
        assert_eq!(comp_close(b"}x"), None);
        assert_eq!(module_header(b"HloModule my.module.v2, is_scheduled=true"), Some((&b"my.module.v2"[..], Some(&b"is_scheduled=true"[..]))));
        assert_eq!(module_header(b"HloModule a,b, c=1"), Some((&b"a,b"[..], Some(&b"c=1"[..]))));
        assert_eq!(module_header(b"HloModule x"), Some((&b"x"[..], None)));
        assert_eq!(module_header(b"HloModule a b"), None);
        assert_eq!(module_header(b"HloModule , x=1"), None);
        assert_eq!(module_header(b"HloModule a, "), Some((&b"a"[..], Some(&b""[..]))));
    }
}
