//! File structure of one HLO module text (FORMATS.md §3.2–3.5): header, stack-frame tables,
//! computations and their instruction lines, in one pass over the lines.
//!
//! The dispatch follows `reference/hlo.py` `_ModuleParser.run` line for line (same error rows
//! at the same lines), so both implementations agree also on broken files.

use std::borrow::Cow;

use super::attributes::{get, split_attributes_in};
use super::custom_call::custom_call_info;
use super::general::{comp_header_at, general_instruction, skip_trivia, skip_trivia_in_line};
use super::line_forms::*;
use super::instruction::{needs_continuation, parens_open_after, parse_instruction, Instr, Scratch};
use super::scan::*;
use super::stack_frames::{Frames, RowError, Table};
use super::tape::{self, Tape, Want};
use crate::error::{FileCtx, Result};
use crate::lines::{Line, Lines};
use crate::tables::Tables;

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
}

pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
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
    };
    p.want = wanted(p.t);
    p.run()
}

/// The stage-2 decoders a read needs: those of the instruction columns it builds (and what
/// the `custom_calls` table reads).
fn wanted(t: &Tables) -> Want {
    let (r, calls) = (&t.instructions, t.custom_calls.is_wanted());
    Want {
        operands: r.operands.items.is_built() || r.operand_index.is_built(),
        called: r.called_computations.items.is_built(),
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
        self.write_headerless_row();
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

    /// Start a module at a computation header with no `HloModule` header before it.
    fn begin_headerless(&mut self, line: u64) {
        self.module_index += 1;
        self.have_header = true;
        self.headerless = Some(Headerless { line, ..Default::default() });
    }

    /// The module ends (a `// -----` line, the next `HloModule` header): the next line that is
    /// not a comment starts a new one.
    fn end_module(&mut self) {
        self.write_headerless_row();
        self.have_header = false;
        self.table = None;
        self.frames = Frames::default();
    }

    /// The `modules` row of a header-less module, named as XLA names it.
    fn write_headerless_row(&mut self) {
        let Some(h) = self.headerless.take() else { return };
        let mut name = b"module_".to_vec();
        name.extend_from_slice(h.entry.or(h.last).unwrap_or(b""));
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

    fn instruction(&mut self, line: &Line<'c>) -> Result<()> {
        if self.taped_instruction(line)? {
            return Ok(());
        }
        // Only a `constant(` line can continue, and only if its parentheses do not balance:
        // parse first, and look at continuation only when that fails or the opcode is constant
        // (a string could hold a '(' that the reference's plain count sees).
        let first = parse_instruction(line.text, &mut self.sc);
        let continued = match &first {
            None => needs_continuation(line.text),
            // the opcode is the one `needs_continuation` finds (same scans): count from its '('
            Some(i) if i.opcode == b"constant" => {
                let paren = i.opcode.as_ptr() as usize - line.text.as_ptr() as usize + i.opcode.len();
                parens_open_after(line.text, paren)
            }
            Some(_) => false,
        };
        if continued {
            let text = match self.join(line, |t| !needs_continuation(t)) {
                Some(t) => t,
                None => return self.err(line, 1, "constant literal not closed before end of file"),
            };
            // The join always adds a line, so the joined text is new: parse it.
            let Some(ins) = parse_instruction(&text, &mut self.sc) else {
                return self.err(line, 1, "cannot parse instruction");
            };
            return self.emit(line, &text, 0, &ins);
        }
        match first {
            // trailing blanks or a ',' continue into the general grammar (a next line may
            // start with ',': XLA reads line breaks as blanks)
            // (a line ending in ',' continues: `custom_call_target="x",` then `backend_config=…`
            // on a line of its own, as XLA's test inputs write)
            Some(ins) if !matches!(line.text.last(), Some(b' ' | b'\t' | b',')) && !self.next_starts_with_comma(line) => {
                self.emit(line, line.text, 0, &ins)
            }
            _ => match self.leading_trivia(line)? {
                None => Ok(()),
                Some(rest) if rest.start != line.start => {
                    self.pending = Some(rest);
                    Ok(())
                }
                Some(rest) => match blanks(rest.text) {
                    b if rest.text.get(b) == Some(&b'}') => self.close_computation(&trim_start(&rest, b)),
                    _ => self.general(&rest),
                },
            },
        }
    }

    /// An instruction line through its field tape (`tape.rs`): stage 1, then the decoders of
    /// the columns this read builds, then its rows. False (nothing done) when the tape cannot
    /// decide the line, or the line is one `instruction` gives to more than the line parser (a
    /// `constant(` whose parentheses stay open, a continuation on the next line): the caller
    /// then reads it as before.
    #[inline]
    fn taped_instruction(&mut self, line: &Line<'c>) -> Result<bool> {
        let text = line.text;
        if matches!(text.last(), Some(b' ' | b'\t' | b',')) || tape::build(text, &mut self.tape, &mut self.sc.commas).is_err() {
            return Ok(false);
        }
        let (oa, ob) = self.tape.opcode;
        if &text[oa..ob] == b"constant" && parens_open_after(text, ob) {
            return Ok(false);
        }
        if self.next_starts_with_comma(line) {
            return Ok(false);
        }
        let Some(ins) = tape::decode(text, &self.tape, &mut self.sc, self.want) else { return Ok(false) };
        self.emit(line, text, 0, &ins)?;
        Ok(true)
    }

    /// True when the next token after `line` (blanks, line breaks and comments skipped) is a
    /// ',' on a later line: the instruction continues there. Cheap: normally a few bytes.
    #[inline]
    fn next_starts_with_comma(&self, line: &Line<'c>) -> bool {
        let e = line.start + line.text.len();
        // The usual next line starts with an instruction or '}' after at most two blanks: no
        // comment or ',' can come first (the full skip below costs ~60 instructions a line).
        if let Some(&[b'\n', a, b, c]) = self.data.get(e..e + 4) {
            let first = if a != b' ' { a } else if b != b' ' { b } else { c };
            if first.is_ascii_alphanumeric() || first == b'%' || first == b'}' {
                return false;
            }
        }
        match skip_trivia(self.data, e) {
            Ok(i) => self.data.get(i) == Some(&b',') && memchr::memchr(b'\n', &self.data[e..i]).is_some(),
            Err(_) => false,
        }
    }

    /// Skip blanks and comments at the start of `line` (a `/* … */` comment may end on a later
    /// line). None: nothing else is on the line(s). Some: the line, or the rest of the line
    /// where the comment ended.
    fn leading_trivia(&mut self, line: &Line<'c>) -> Result<Option<Line<'c>>> {
        let s = line.text;
        let i = blanks(s);
        if i < s.len() && s[i] != b'/' {
            return Ok(Some(*line));
        }
        if self.mode.bail() {
            return Ok(None);
        }
        match skip_trivia_in_line(self.data, line.start + i) {
            Err((at, msg)) => {
                self.error_pos(at, msg)?;
                // the rest of the file is inside the comment
                while self.next_line().is_some() {}
                Ok(None)
            }
            Ok(pos) => Ok(self.resume(line, pos)),
        }
    }

    /// Lines up to the one holding `pos` are consumed; the rest of that line from `pos`, unless
    /// it is empty.
    fn resume(&mut self, line: &Line<'c>, pos: usize) -> Option<Line<'c>> {
        let mut cur = *line;
        while pos > cur.start + cur.text.len() {
            match self.next_line() {
                Some(l) => cur = l,
                None => return None,
            }
        }
        let end = cur.start + cur.text.len();
        let pos = pos.max(cur.start);
        (pos < end).then(|| Line { no: cur.no, start: pos, text: &self.data[pos..end], bad: cur.bad })
    }

    /// An error at byte `pos` of the file: its line and column.
    #[cold]
    fn error_pos(&mut self, pos: usize, msg: String) -> Result<()> {
        if self.starts.is_empty() {
            self.starts.push(0);
            self.starts.extend(memchr::memchr_iter(b'\n', self.data).map(|p| p + 1));
        }
        let k = self.starts.partition_point(|&s| s <= pos) - 1;
        let start = self.starts[k];
        let end = memchr::memchr(b'\n', &self.data[start..]).map_or(self.data.len(), |p| start + p);
        let text = &self.data[start..end];
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = if std::str::from_utf8(text).is_ok() { text } else { b"" };
        self.ctx.error_at(&mut self.t.errors, k as u64 + 1, (pos - start) as u64 + 1, msg, text)
    }

    /// An instruction read with the general grammar (`general.rs`), starting at `line` and
    /// possibly continuing over the following lines.
    #[cold]
    fn general(&mut self, line: &Line<'c>) -> Result<()> {
        if self.mode.bail() {
            return Ok(()); // positions and later lines are the serial parse's business
        }
        let data = self.data;
        let mut sc = std::mem::take(&mut self.sc);
        let res = general_instruction(data, line.start, &mut sc);
        let out = match res {
            Err((at, msg)) => {
                self.error_pos(at, msg)?;
                // go on after the line of the error
                let mut cur = *line;
                while at > cur.start + cur.text.len() {
                    match self.next_line() {
                        Some(l) => cur = l,
                        None => break,
                    }
                }
                Ok(())
            }
            Ok((ins, end)) => {
                // the lines it spans must all be valid
                let mut cur = *line;
                let mut bad = false;
                while end > cur.start + cur.text.len() {
                    match self.next_line() {
                        Some(l) => {
                            bad |= l.bad.is_some();
                            cur = l;
                        }
                        None => break,
                    }
                }
                let r = if bad {
                    self.err(line, 1, "instruction runs into a line that is not valid (see its error)")
                } else {
                    std::mem::swap(&mut self.sc, &mut sc);
                    let r = self.emit(line, data, line.start, &ins);
                    std::mem::swap(&mut self.sc, &mut sc);
                    r
                };
                let e = cur.start + cur.text.len();
                if end < e {
                    self.pending = Some(Line { no: cur.no, start: end, text: &data[end..e], bad: None });
                }
                r
            }
        };
        self.sc = sc;
        out
    }

    /// A metadata number out of range at byte `at` of the instruction `text` (which may span
    /// lines, joined with "\n"): an error at its line and column, and no row.
    #[cold]
    fn number_error(&mut self, line: &Line<'c>, text: &[u8], base: usize, at: usize) -> Result<()> {
        let msg = format!("metadata number is out of range (at most {})", i32::MAX);
        let nl = memchr::memrchr(b'\n', &text[base..at]).map(|p| p + base);
        let Some(nl) = nl else {
            return self.err(line, (at - base) as u64 + 1, msg);
        };
        let no = line.no + memchr::memchr_iter(b'\n', &text[base..at]).count() as u64;
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |e| at + e);
        let lt = &text[nl + 1..end];
        let lt = lt.strip_suffix(b"\r").unwrap_or(lt);
        self.ctx.error_at(&mut self.t.errors, no, (at - nl) as u64, msg, lt)
    }

    /// A `notes` row per attribute key no XLA we know prints (`Scratch::unknown_attrs`), at its
    /// line and column (`text` may span lines, joined with "\n", from `base`).
    #[cold]
    fn unknown_attributes(&mut self, line: &Line<'c>, text: &[u8], base: usize) -> Result<()> {
        for k in 0..self.sc.unknown_attrs.len() {
            let (ks, ke, ve) = self.sc.unknown_attrs[k];
            let key = &text[ks..ke];
            let nl = memchr::memrchr(b'\n', &text[base..ks]).map(|p| p + base);
            let (no, col, lt) = match nl {
                None => (line.no, (ks - base) as u64 + 1, line.text),
                Some(nl) => {
                    let no = line.no + memchr::memchr_iter(b'\n', &text[base..ks]).count() as u64;
                    let end = memchr::memchr(b'\n', &text[ks..]).map_or(text.len(), |e| ks + e);
                    let lt = &text[nl + 1..end];
                    (no, (ks - nl) as u64, lt.strip_suffix(b"\r").unwrap_or(lt))
                }
            };
            let message = format!("unknown attribute '{}' (newer XLA?); kept raw in attributes", String::from_utf8_lossy(key));
            let note = crate::driver::Note { kind: "unknown_attribute", token: key, text: &text[ks..ve], message };
            self.ctx.note(self.t, no, lt, col, note)?;
        }
        Ok(())
    }

    /// The rows of one parsed instruction (`text` is what was parsed: operand pieces point
    /// into it); passed by reference, so the (large) `Instr` is never moved.
    #[inline]
    fn emit(&mut self, line: &Line<'c>, text: &[u8], base: usize, ins: &Instr<'_>) -> Result<()> {
        if let Some(at) = ins.number_error {
            return self.number_error(line, text, base, at);
        }
        let comp = self.comp.as_mut().expect("a computation is open");
        let comp_id = comp.id;
        if ins.is_root {
            let second = comp.has_root;
            comp.has_root = true;
            if second {
                self.ctx.error(&mut self.t.errors, line, 3, "second ROOT in computation")?;
            }
        }
        let (src, sc, r) = (self.ctx.src, &self.sc, &mut self.t.instructions);
        let id = self.instruction_id;
        self.instruction_id += 1;
        r.file_id.push(self.ctx.file_id);
        r.computation_id.push(comp_id);
        r.instruction_id.push(id);
        r.name.push(&src, ins.name);
        r.is_root.push(ins.is_root);
        r.opcode.push(&src, ins.opcode);
        r.shape.push(&src, ins.shape);
        for (k, &p) in sc.operands.iter().enumerate() {
            r.operands.items.push(&src, sc.piece(text, p));
            r.operand_index.push_path(sc.operand_path(k));
        }
        r.operands.end_row();
        r.operand_index.end_row();
        r.operand_text.push(&src, ins.operand_text);
        for &p in &sc.called {
            r.called_computations.items.push(&src, sc.piece(text, p));
        }
        r.called_computations.end_row();
        r.attributes.push(&src, ins.attributes);
        r.op_name.push_opt(&src, ins.op_name.as_deref());
        r.op_type.push_opt(&src, ins.op_type.as_deref());
        // Stack-frame tables win over metadata when they know the frame (schema decision). The
        // lookup reports nothing, so it is skipped when no source column is wanted.
        let want_source = r.source_file.is_built() || r.source_line.is_built() || r.source_function.is_built();
        match ins.stack_frame_id.filter(|_| want_source).and_then(|f| self.frames.resolve(f)) {
            Some((file, function, source_line)) => {
                r.source_file.push_opt(&src, file);
                r.source_line.push(Some(source_line));
                r.source_function.push_opt(&src, function);
            }
            None => {
                r.source_file.push_opt(&src, ins.source_file.as_deref());
                r.source_line.push(ins.source_line);
                r.source_function.push_null();
            }
        }
        r.stack_frame_id.push(ins.stack_frame_id);
        r.custom_call_target.push_opt(&src, ins.custom_call_target.as_deref());
        r.backend_config.push_opt(&src, ins.backend_config.as_deref());
        r.fusion_kind.push_opt(&src, ins.fusion_kind);
        r.sharding.push_opt(&src, ins.sharding);
        r.line.push(line.no as i32);
        r.offset.push(line.start as i64);
        if !self.sc.unknown_attrs.is_empty() {
            self.unknown_attributes(line, text, base)?;
        }

        // (the body's base64 check costs a pass over what can be megabytes: only when wanted)
        if ins.opcode == b"custom-call" && self.t.custom_calls.is_wanted() {
            let info = custom_call_info(ins.backend_config.as_deref());
            let c = &mut self.t.custom_calls;
            c.file_id.push(self.ctx.file_id);
            c.instruction_id.push(id);
            c.name.push(&src, ins.name);
            c.target.push(&src, ins.custom_call_target.as_deref().unwrap_or(b""));
            c.body_length.push(info.body_length);
            c.decoded_length.push(info.decoded_length);
            c.format.push(info.format);
            c.kernel_name.push_opt(&src, info.kernel_name.as_deref());
        }
        Ok(())
    }
}

// ------------------------------------------------------------------ one big file in chunks

/// What the part of a module before its first computation (header, stack-frame tables) leaves
/// to the computations that follow: chunks of a big file start from it (`read.rs`).
pub struct Prefix<'c> {
    frames: Frames<'c>,
    have_header: bool,
    module_index: i32,
    table: Option<Table>,
    /// Lines in the prefix.
    pub lines: u64,
}

/// Counts of one parsed chunk: its ids and line numbers start at 0 and are shifted by the
/// caller by the counts of the chunks before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChunkCounts {
    pub lines: u64,
    pub computations: i32,
    pub instructions: i32,
}

/// True when the line starting at `pos` is one the serial parse takes as a computation header
/// whenever no computation is open (not a module header, table name or table row). Whether
/// none is open there is checked by parsing: a chunk that ends inside a computation or a
/// multi-line text reports an error, and then the file is parsed serially.
pub fn is_computation_start(data: &[u8], pos: usize) -> bool {
    let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
    let mut s = &data[pos..end];
    if let [head @ .., b'\r'] = s {
        s = head;
    }
    !s.is_empty() && !s[0].is_ascii_digit() && !s.starts_with(b"HloModule ") && Table::from_line(s).is_none() && comp_header(s).is_some()
}

/// Start of the first line `is_computation_start` accepts: the end of the prefix.
pub fn first_computation(data: &[u8]) -> Option<usize> {
    let mut pos = 0;
    while pos < data.len() {
        if is_computation_start(data, pos) {
            return Some(pos);
        }
        pos += memchr::memchr(b'\n', &data[pos..])? + 1;
    }
    None
}

fn chunk_parser<'t, 'c>(ctx: FileCtx<'c>, t: &'t mut Tables, data: &'c [u8], lines: Lines<'c>, prefix: Option<&Prefix<'c>>) -> Parser<'t, 'c> {
    let want = wanted(t);
    Parser {
        ctx,
        t,
        data,
        lines,
        last_no: 0,
        sc: Scratch::default(),
        frames: prefix.map(|p| p.frames.clone()).unwrap_or_default(),
        computation_id: -1,
        instruction_id: 0,
        comp: None,
        have_header: prefix.is_some_and(|p| p.have_header),
        module_index: prefix.map_or(-1, |p| p.module_index),
        headerless: None,
        table: prefix.and_then(|p| p.table),
        mode: if prefix.is_some() { Mode::Chunk } else { Mode::Serial },
        pending: None,
        starts: Vec::new(),
        tape: Tape::default(),
        want,
    }
}

/// Parse `data[..end]` (the prefix) as the serial parse does. None when it cannot stand for
/// the serial parse (invalid UTF-8 or any error): the caller then parses the file serially.
/// `ctx` should collect (errors are rows to look at, not failures).
pub fn parse_prefix<'c>(data: &'c [u8], end: usize, ctx: FileCtx<'c>, t: &mut Tables) -> Result<Option<Prefix<'c>>> {
    let data = &data[..end];
    let lines = Lines::new(data);
    if lines.has_bad_lines() {
        return Ok(None);
    }
    let mut p = chunk_parser(ctx, t, data, lines, None);
    p.run()?;
    if !p.t.errors.is_empty() {
        return Ok(None);
    }
    if p.headerless.is_some() {
        return Ok(None); // (cannot happen: the prefix ends before the first computation)
    }
    Ok(Some(Prefix { frames: p.frames, have_header: p.have_header, module_index: p.module_index, table: p.table, lines: p.last_no }))
}

/// Parse `data[start..end]`, which starts with a computation header (`is_computation_start`)
/// and ends at a line start, in the state the prefix left. Ids and line numbers are local
/// (from 0). None when the chunk cannot be parsed alone: invalid UTF-8, any error (a
/// computation or multi-line text open at the end included), or a stack-frame table line.
pub fn parse_chunk<'c>(data: &'c [u8], start: usize, end: usize, prefix: &Prefix<'c>, ctx: FileCtx<'c>, t: &mut Tables) -> Result<Option<ChunkCounts>> {
    let data = &data[..end];
    let mut lines = Lines::starting_at(data, start, 0);
    if lines.has_bad_lines() {
        return Ok(None);
    }
    let indented = index_lines(&mut lines, data, start);
    t.instructions.reserve(indented);
    let mut p = chunk_parser(ctx, t, data, lines, Some(prefix));
    p.run()?;
    if p.mode == Mode::Bailed || !p.t.errors.is_empty() {
        return Ok(None);
    }
    Ok(Some(ChunkCounts { lines: p.last_no, computations: p.computation_id + 1, instructions: p.instruction_id }))
}

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
