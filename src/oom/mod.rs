//! XLA's out-of-memory report (FORMATS.md §2.9), alone, pasted, or inside a log: one
//! `oom_reports` row per figure, one `oom_buffers` row per listed buffer.
//!
//! Two printers, both found anywhere in a file (`MARKERS`):
//!
//! * **GPU/CPU** (`BufferAssignment::ToVerboseString`): `BufferAssignment OOM Debugging.`, the
//!   stats block (`BufferAssignment stats:` + `LABEL: SIZE [(P%)]` lines), `Peak buffers:`
//!   and `Buffer N:` blocks of `Size:` / `Operator:` / `Entry Parameter Subshape:` |
//!   `XLA Label:` + `Shape:` lines closed by a `====` rule. The allocator's message on the line
//!   before (`Out of memory while trying to allocate N bytes.`) becomes the `requested` figure.
//! * **TPU** (closed-source compiler): `… Ran out of memory in memory space hbm. Used X of Y
//!   hbm. Exceeded hbm capacity by Z.`, then optionally `Total hbm usage >= X:` and its entries,
//!   `Output size …`, `Program hbm requirement X:` and its entries, `Largest program
//!   allocations in hbm:` and `N. Size: X` blocks of `Operator:` / `Shape:` / `Unpadded size:`
//!   / `Extra memory due to padding:` / `XLA label:` / `Allocation type:` lines closed by a rule.
//!
//! A lone CR (a carriage return not followed by LF: a progress bar redrawing its line) ends a
//! piece of the line as a terminal shows it: each piece is read as a line of its own, with the
//! file's line number, and columns count from the start of the real line (`log_lines`). Formats
//! XLA writes itself keep rejecting a lone CR; logs are written by everything else.
//!
//! Every line first loses its log prefixes (`prefix.rs`) and its indentation: lines are matched
//! by their keys, so tabs turned into spaces and prefixes on some lines only do not matter.
//! Blank lines are skipped. A report ends at the first line that is not part of it (which is
//! then read as any other line: it may start the next report) or at the end of the file; if
//! it ends where its printer could not have stopped (inside a buffer, before `Peak buffers:`,
//! between `Total … usage` and the allocation list), that is an error at that line (at the
//! last line of the file when the file ends), and the unfinished buffer gives no row.
//!
//! A line inside a buffer that is none of its fields is, in this order: the rest of a
//! hard-wrapped `Operator:` line (joined back when the joined text starts an
//! `OpMetadataToString` list: with a space if that reads, else without one; at most
//! `MAX_JOINED` bytes and `MAX_JOINS` lines, so a file of such lines costs linear time); a report's first line (the report is
//! cut off there and the line is read again); otherwise a foreign line (another thread's log
//! line, a wrap that cannot be joined): the cut-off error at it, the buffer gives no row, and
//! the report goes on (`Part::Interrupted`: the interrupted buffer's remaining fields and rule,
//! and further foreign lines, are passed over; the next `Buffer N:` / `N. Size:` is read; a
//! line that opens a report ends it). An `Operator:` rest is joined when the joined text starts
//! an op-metadata list (`op_metadata_prefix`: the last item may be cut) and the line has no log
//! prefix.
//!
//! Rows of a report are kept until it ends; a report whose lines (from its marker on, prefixes,
//! indentation and blank lines removed) equal those of an earlier report of the file — the same
//! report printed by the log line and again by the exception — gives one `oom_reports` row
//! (`section = 'repeat'`, the earlier report's `report_id`, `line` = its first line) and no
//! other row or cut-off error. Reports are numbered (`report_id`) from 0 in the order they end.
//!
//! Reference: `reference/oom.py` (same grammar, written with regular expressions).

mod compile;
mod op_metadata;
mod prefix;
mod tpu;

use op_metadata::{op_metadata, op_metadata_prefix, OpMetadata};

use std::borrow::Cow;

use crate::error::{FileCtx, Result};
use crate::driver::LineGrammar;
use crate::lex::{bad, Cur, Stop, I32_MAX, R};
use crate::tables::Tables;

pub use prefix::content_start;
use tpu::{is_tpu_header, tpu_one_liner_at};

const GPU_MARKER: &[u8] = b"BufferAssignment OOM Debugging.";
const TPU_MARKER: &[u8] = b"Ran out of memory in memory space ";
/// Text that marks an out-of-memory report anywhere in a file (`FormatSpec::sniff`). The others
/// than the first two find reports pasted without their first lines (`Largest program
/// allocations in hbm:`, a tail that starts at the statistics or inside the buffer list).
pub const MARKERS: [&[u8]; 14] = [
    GPU_MARKER,
    TPU_MARKER,
    b"Largest program allocations in ",
    b"BufferAssignment stats:",
    b"Peak buffers:",
    b"Entry Parameter Subshape: ",
    b"XLA Label: ",
    b"Allocation type: ",
    b"Unpadded size: ",
    tpu::TPU_ONE_LINERS[0],
    tpu::TPU_ONE_LINERS[1],
    tpu::TPU_ONE_LINERS[2],
    compile::HBM_MARKER,
    compile::ALLOC_MARKER,
];
const REQUEST: &[u8] = b"Out of memory while trying to allocate ";
const REQUEST_PLATFORM: &[u8] = b"Failed to allocate request for ";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    Gpu,
    Tpu,
}

/// Where we are in a report.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Part {
    /// GPU: after the marker, `BufferAssignment stats:` comes next.
    StatsHeader,
    /// GPU: stats lines, until `Peak buffers:`.
    Stats,
    /// GPU: after `Peak buffers:`, between buffers.
    Peak,
    /// TPU: after the summary line, before any section.
    Head,
    /// TPU: the entries of `Total hbm usage >= X:`.
    Usage,
    /// TPU: the entries of `Program hbm requirement X:`.
    Program,
    /// TPU: after `Largest program allocations in hbm:`, between buffers.
    Allocs,
    /// Inside a buffer (both).
    Buffer,
    /// After a foreign line inside a buffer: a next buffer resumes the report.
    Interrupted,
}

struct Figure<'c> {
    section: &'static str,
    key: String,
    bytes: Option<i64>,
    /// Owned for a `missing` row (what the paste lacks, in words).
    value: Cow<'c, [u8]>,
    line: u64,
}

#[derive(Default)]
struct Buf<'c> {
    rank: i32,
    line: u64,
    size: Option<(&'c [u8], i64)>,
    /// Owned when a hard-wrapped line was joined back.
    operator: Option<Cow<'c, [u8]>>,
    /// The last field read was `Operator:` (a wrapped rest of it may follow).
    wrap: bool,
    /// Wrapped lines joined to `operator` so far (at most `MAX_JOINS`).
    joins: u32,
    shape: Option<&'c [u8]>,
    unpadded: Option<i64>,
    padding: Option<(&'c [u8], i64)>,
    xla_label: Option<&'c [u8]>,
    allocation_type: Option<&'c [u8]>,
    entry_subshape: Option<&'c [u8]>,
    /// A line of it was reported: the buffer gives no row.
    broken: bool,
    /// Its `Size:` value stopped where a size can go on (`Size: 384` of `Size: 384.0KiB`): a
    /// paste cut on that line if the file ends there (a note, as every cut paste), else the
    /// error it is, reported at the next line: (line, column, message, real line).
    cut_size: Option<(u64, u64, String, &'c [u8])>,
}

/// A `Size:` value cut short: a proper prefix of XLA's HumanReadableNumBytes text (`384`,
/// `384.`, `384.0K`, `1.50Gi`: digits, a fraction, a unit without its `B`), or nothing.
pub(super) fn cut_short_size(v: &[u8]) -> bool {
    let d = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if d == 0 {
        return v.is_empty();
    }
    let mut i = d;
    if v.get(i) == Some(&b'.') {
        i += 1;
        i += v[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    }
    if i < v.len() && b"KMGTPE".contains(&v[i]) {
        i += 1;
        if v.get(i) == Some(&b'i') {
            i += 1;
        }
    }
    i == v.len()
}

struct Report<'c> {
    backend: Backend,
    memory_space: Option<&'c [u8]>,
    part: Part,
    figures: Vec<Figure<'c>>,
    buffers: Vec<Buf<'c>>,
    buf: Option<Buf<'c>>,
    /// The report's lines as compared for duplicates.
    key: Vec<&'c [u8]>,
    /// The last line read into the report.
    last: Here<'c>,
    /// TPU: a section after the summary line was printed, so the allocation list must follow.
    detailed: bool,
    /// The report's first line.
    first: u64,
    /// Opened by a line inside a report (a paste of its tail only): given only if it holds a
    /// figure or a buffer.
    tail: bool,
    /// Cut-off errors inside the report (foreign lines in a buffer), given when it ends unless
    /// it repeats an earlier report: (line, column, message, real line).
    cuts: Vec<(u64, u64, String, &'c [u8])>,
}

/// A piece of a line: its number, its text, where it starts in the real line, the real line.
#[derive(Clone, Copy)]
struct Here<'c> {
    no: u64,
    text: &'c [u8],
    off: usize,
    full: &'c [u8],
}

impl Report<'_> {
    /// What was expected next, when the report may not end here.
    fn expected(&self) -> Option<String> {
        let what = match self.part {
            Part::Peak | Part::Allocs | Part::Interrupted => return None,
            Part::Head if !self.detailed => return None,
            Part::StatsHeader => "'BufferAssignment stats:'".to_string(),
            Part::Stats => "a statistics line (LABEL: SIZE) or 'Peak buffers:'".to_string(),
            Part::Head | Part::Usage | Part::Program => {
                "the rest of the report up to 'Largest program allocations in …:'".to_string()
            }
            Part::Buffer => {
                let rank = self.buf.as_ref().map_or(0, |b| b.rank);
                match self.backend {
                    Backend::Gpu => format!("the next line of Buffer {rank} (Size:, Operator:, Entry Parameter Subshape:, XLA Label:, Shape:) or its ==== rule"),
                    Backend::Tpu => format!("the next line of allocation {rank} (Operator:, Shape:, Unpadded size:, Extra memory due to padding:, XLA label:, Allocation type:) or its ==== rule"),
                }
            }
        };
        Some(what)
    }
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    report: Option<Report<'c>>,
    /// Keys of the reports given so far.
    seen: Vec<Vec<&'c [u8]>>,
    /// The allocator's request on the last non-blank line outside a report: (line, text, bytes).
    request: Option<(u64, &'c [u8], i64)>,
    /// The real line being read, and where its current piece starts in it (errors count
    /// columns on the real line).
    full: &'c [u8],
    off: usize,
}

/// Parse the out-of-memory reports found in one file.
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let lines = log_lines(data, &ctx, &mut t.errors)?;
    let mut p = Parser { ctx, t, report: None, seen: Vec::new(), request: None, full: b"", off: 0 };
    for line in lines {
        if line.bad.is_some_and(|b| !b.lone_cr) || (line.bad.is_some() && std::str::from_utf8(line.text).is_err()) {
            continue; // not UTF-8: reported by log_lines
        }
        p.t.line_end()?; // a streaming read hands out a batch here when one is full
        p.full = line.text;
        p.off = 0;
        for piece in line.text.split(|&b| b == b'\r') {
            match p.line(line.no, piece) {
                Ok(()) => {}
                Err(Stop::Bad(pos, msg)) => p.report(line.no, pos as u64 + 1, msg, piece)?,
                Err(Stop::Fatal(e)) => return Err(e),
            }
            p.off += piece.len() + 1;
        }
    }
    if p.report.is_some() {
        p.end_report(None)?;
    }
    Ok(())
}

/// The lines of a log, after every line that is not valid UTF-8 has been reported at its first
/// bad byte (as `driver::checked_lines` does), but a lone CR is no error: it stays in the line and
/// `parse` splits the line there, as a terminal redraws it.
fn log_lines<'c>(data: &'c [u8], ctx: &FileCtx<'_>, errors: &mut crate::tables::Errors) -> Result<crate::lines::Lines<'c>> {
    let lines = crate::lines::Lines::new(data);
    if lines.has_bad_lines() {
        for line in lines.clone() {
            let Some(bad) = line.bad else { continue };
            let col = if bad.lone_cr {
                match std::str::from_utf8(line.text) {
                    Ok(_) => continue,
                    Err(e) => e.valid_up_to() as u64 + 1,
                }
            } else {
                bad.col
            };
            ctx.error_at(errors, line.no, col, "invalid UTF-8".to_string(), line.text)?;
        }
    }
    Ok(lines)
}

fn trim_end(t: &[u8]) -> &[u8] {
    let n = t.iter().rev().take_while(|&&b| b == b' ' || b == b'\t').count();
    let t = &t[..t.len() - n];
    // Ray's log deduplication: ` [repeated 7x across cluster]` at the end
    if let Some(head) = t.strip_suffix(b"x across cluster]") {
        let d = head.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        if d > 0 {
            if let Some(rest) = head[..head.len() - d].strip_suffix(b" [repeated ") {
                let n = rest.iter().rev().take_while(|&&b| b == b' ' || b == b'\t').count();
                return &rest[..rest.len() - n];
            }
        }
    }
    t
}

/// The longest `Operator:` text a wrapped line is joined to (XLA's op names are far shorter;
/// the bound keeps a file of endless continuation lines linear).
const MAX_JOINED: usize = 16 << 10;
/// The most wrapped lines joined to one `Operator:` line (16 KiB wrapped at 256 columns).
const MAX_JOINS: u32 = 64;

const GPU_KEYS: [&[u8]; 5] = [b"Size:", b"Operator:", b"Entry Parameter Subshape:", b"XLA Label:", b"Shape:"];
const TPU_KEYS: [&[u8]; 6] = [b"Operator:", b"Shape:", b"Unpadded size:", b"Extra memory due to padding:", b"XLA label:", b"Allocation type:"];

/// A line of a report's inside that opens a report when it is read outside one (a paste of the
/// report's tail: no first line): (backend, where it leaves the report, what the paste lacks).
/// A line of a buffer opens it between buffers (`Interrupted`): the next buffer is read.
fn tail_opener(c: &[u8]) -> Option<(Backend, Part, &'static str)> {
    if c == b"BufferAssignment stats:" {
        return Some((Backend::Gpu, Part::Stats, "the paste starts inside the report, at its statistics: its first line and what failed are not in it"));
    }
    if c == b"Peak buffers:" {
        return Some((Backend::Gpu, Part::Peak, "the paste starts inside the report, at 'Peak buffers:': what failed and the statistics are not in it"));
    }
    if c.strip_prefix(b"Buffer ").is_some_and(|r| r.len() > 1 && r.ends_with(b":") && r[..r.len() - 1].iter().all(u8::is_ascii_digit)) {
        return Some((Backend::Gpu, Part::Peak, "the paste starts inside the report's buffer list: what failed, the statistics and the buffers before it are not in it"));
    }
    if [&b"Entry Parameter Subshape:"[..], b"XLA Label:"].iter().any(|k| c.starts_with(k)) {
        return Some((Backend::Gpu, Part::Interrupted, "the paste starts inside a buffer of the report: what failed, the statistics and the buffers up to the next 'Buffer N:' are not in it"));
    }
    let n = c.iter().take_while(|b| b.is_ascii_digit()).count();
    if n > 0 && c[n..].starts_with(b". Size:") {
        return Some((Backend::Tpu, Part::Allocs, "the paste starts inside the report's allocation list: what failed, the usage figures and the allocations before it are not in it"));
    }
    if [&b"Unpadded size:"[..], b"Extra memory due to padding:", b"XLA label:", b"Allocation type:"].iter().any(|k| c.starts_with(k)) {
        return Some((Backend::Tpu, Part::Interrupted, "the paste starts inside an allocation of the report: what failed, the usage figures and the allocations up to the next 'N. Size:' are not in it"));
    }
    None
}

/// Whether a line read outside a report would open one.
fn opens_report(c: &[u8]) -> bool {
    c.ends_with(GPU_MARKER)
        || memchr::memmem::find(c, TPU_MARKER).is_some()
        || is_tpu_header(c)
        || tpu_one_liner_at(c).is_some()
        || compile::opener_at(c).is_some()
}

fn is_rule(c: &[u8]) -> bool {
    c.len() >= 3 && c.iter().all(|&b| b == b'=')
}

/// The failed request in `c`: `Out of memory while trying to allocate N bytes` (the BFC
/// allocator: `N bytes`, N) or `Failed to allocate request for H (NB) on device ordinal D`
/// (the platform allocator, ROCm's and CUDA's without BFC: `H (NB)`, N).
fn request_in(c: &[u8]) -> Option<(&[u8], i64)> {
    request_bfc(c).or_else(|| request_platform(c))
}

fn request_platform(c: &[u8]) -> Option<(&[u8], i64)> {
    let at = memchr::memmem::find(c, REQUEST_PLATFORM)? + REQUEST_PLATFORM.len();
    let open = at + memchr::memmem::find(&c[at..], b" (")?;
    let d = open + 2;
    let n = c[d..].iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || open == at || !c[d + n..].starts_with(b"B) on device ordinal ") || c[at..open].contains(&b' ') {
        return None;
    }
    let v = crate::lex::to_int(&c[d..d + n], crate::lex::I64_MAX)? as i64;
    Some((&c[at..d + n + 2], v))
}

/// `… allocate N bytes`, or in newer XLA `… allocate 101.99MiB.` (the rounded size; value
/// `101.99MiB`).
fn request_bfc(c: &[u8]) -> Option<(&[u8], i64)> {
    let at = memchr::memmem::find(c, REQUEST)? + REQUEST.len();
    let n = c[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || !c[at + n..].starts_with(b" bytes") {
        let (end, neg, whole, frac, power) = crate::lex::human_match(c, at)?;
        return Some((&c[at..end], crate::lex::human_value(neg, whole, frac, power)?));
    }
    let v = crate::lex::to_int(&c[at..at + n], crate::lex::I64_MAX)? as i64;
    Some((&c[at..at + n + 6], v))
}

impl<'c> LineGrammar<'c> for Parser<'_, 'c> {
    fn tables(&mut self) -> &mut Tables {
        self.t
    }

    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let start = content_start(text);
        let c = trim_end(&text[start..]);
        if c.is_empty() {
            return Ok(());
        }
        if self.report.is_some() {
            if self.report_line(no, text, start, c)? {
                return Ok(());
            }
            self.end_report(Some((no, text, start)))?;
        }
        self.idle_line(no, text, start, c)
    }

    /// `column` counts on the current piece of the line; the error names the real line.
    fn report(&mut self, line: u64, column: u64, msg: String, _piece: &[u8]) -> Result<()> {
        self.ctx.error_at(&mut self.t.errors, line, self.off as u64 + column, msg, self.full)
    }
}

impl<'t, 'c> Parser<'t, 'c> {
    fn rep(&mut self) -> &mut Report<'c> {
        self.report.as_mut().expect("inside a report")
    }

    fn here(&self, no: u64, text: &'c [u8]) -> Here<'c> {
        Here { no, text, off: self.off, full: self.full }
    }

    fn figure(&mut self, section: &'static str, key: impl Into<String>, bytes: Option<i64>, value: &'c [u8], line: u64) {
        self.rep().figures.push(Figure { section, key: key.into(), bytes, value: Cow::Borrowed(value), line });
    }

    /// A report cut off (`column` counts on the real line `full`): a note, or in strict mode
    /// the error it was before (the paste is answered with what it holds, and says what is
    /// missing); the report gets a `missing` row with the same words.
    fn cut_off(&mut self, fig: &mut Vec<Figure<'c>>, no: u64, column: u64, msg: String, full: &[u8]) -> Result<()> {
        fig.push(Figure { section: "missing", key: "cut off".to_string(), bytes: None, value: Cow::Owned(msg.clone().into_bytes()), line: no });
        if self.ctx.strict {
            return self.ctx.error_at(&mut self.t.errors, no, column, msg, full);
        }
        let token = format!("{no}:{column}");
        let note = crate::driver::Note { kind: "oom_report_cut_off", token: token.as_bytes(), text: full, message: msg };
        self.ctx.note(self.t, no, full, column, note)
    }

    /// A line outside any report: a report's first line, or remember an allocator request.
    fn idle_line(&mut self, no: u64, text: &'c [u8], start: usize, c: &'c [u8]) -> R<()> {
        if c.ends_with(GPU_MARKER) {
            let at = c.len() - GPU_MARKER.len();
            {
                let request = match request_in(&c[..at]) {
                    Some((v, b)) => Some((no, v, b)),
                    None => self.request,
                };
                self.request = None;
                self.open(Backend::Gpu, Part::StatsHeader, &c[at..], no, text);
                if let Some((line, value, bytes)) = request {
                    self.figure("summary", "requested", Some(bytes), value, line);
                }
                return Ok(());
            }
        }
        if let Some(at) = memchr::memmem::find(c, TPU_MARKER) {
            self.request = None;
            self.open(Backend::Tpu, Part::Head, &c[at..], no, text);
            self.error_code(no, &c[..at]);
            return self.tpu_summary(no, text, start + at + TPU_MARKER.len(), start + c.len());
        }
        if let Some(at) = compile::opener_at(c) {
            // The TPU compiler's one-line compile-time message (E1000, E1001).
            self.request = None;
            self.open(Backend::Tpu, Part::Head, &c[at..], no, text);
            self.error_code(no, &c[..at]);
            return self.compile_message(no, text, start + at, start + c.len());
        }
        if is_tpu_header(c) {
            // A TPU report pasted without its first line.
            self.request = None;
            self.open(Backend::Tpu, Part::Head, c, no, text);
            self.missing_head(no, "the report's first line (what failed: the memory used of the capacity) is not in the paste");
            let cur = Cur { t: text, pos: start, stop: start + c.len() };
            self.tpu_line(no, Part::Head, cur, c)?;
            return Ok(());
        }
        if let Some(at) = tpu_one_liner_at(c) {
            // The TPU runtime's or compiler's one-line message: a report of its figures only.
            self.request = None;
            self.open(Backend::Tpu, Part::Head, &c[at..], no, text);
            self.error_code(no, &c[..at]);
            self.tpu_one_liner(no, &c[at..]);
            return Ok(());
        }
        if let Some((backend, part, msg)) = tail_opener(c) {
            // A paste of a report's tail: what it holds is read, what it lacks is said.
            self.request = None;
            self.open(backend, part, c, no, text);
            self.rep().tail = true;
            self.missing_head(no, msg);
            if matches!(part, Part::Peak | Part::Allocs) {
                let cur = Cur { t: text, pos: start, stop: start + c.len() };
                match backend {
                    Backend::Gpu => self.gpu_line(no, part, cur, c)?,
                    Backend::Tpu => self.tpu_line(no, part, cur, c)?,
                };
            }
            return Ok(());
        }
        self.request = request_in(c).map(|(v, b)| (no, v, b));
        Ok(())
    }

    /// A `missing` row: the paste starts inside the report.
    fn missing_head(&mut self, no: u64, msg: &str) {
        self.rep().figures.push(Figure { section: "missing", key: "start".to_string(), bytes: None, value: Cow::Owned(msg.as_bytes().to_vec()), line: no });
    }

    fn open(&mut self, backend: Backend, part: Part, key: &'c [u8], no: u64, text: &'c [u8]) {
        self.report = Some(Report {
            backend,
            memory_space: None,
            part,
            figures: Vec::new(),
            buffers: Vec::new(),
            buf: None,
            key: vec![key],
            last: self.here(no, text),
            detailed: false,
            first: no,
            tail: false,
            cuts: Vec::new(),
        });
    }

    /// A line while a report is open: true if it is part of the report.
    fn report_line(&mut self, no: u64, text: &'c [u8], start: usize, c: &'c [u8]) -> R<bool> {
        let (backend, part) = {
            let r = self.rep();
            (r.backend, r.part)
        };
        // a Size: value cut short on the line before, and the file goes on: the error it is
        if let Some((l, column, msg, full)) = self.rep().buf.as_mut().and_then(|b| b.cut_size.take()) {
            self.ctx.error_at(&mut self.t.errors, l, column, msg, full)?;
        }
        let cur = Cur { t: text, pos: start, stop: start + c.len() };
        let taken = match (backend, part) {
            (_, Part::Interrupted) => self.interrupted_line(no, backend, cur, c),
            (Backend::Gpu, _) => self.gpu_line(no, part, cur, c),
            (Backend::Tpu, _) => self.tpu_line(no, part, cur, c),
        };
        let taken = match taken {
            Ok(false) if self.rep().part == Part::Buffer => Ok(self.foreign_buffer_line(no, text, start, c)),
            other => other,
        };
        let consumed = match &taken {
            Ok(b) => *b,
            Err(_) => true,
        };
        if consumed {
            let here = self.here(no, text);
            let r = self.rep();
            r.key.push(c);
            r.last = here;
        }
        if taken.is_err() {
            if let Some(b) = self.rep().buf.as_mut() {
                b.broken = true;
            }
        }
        taken
    }

    /// A line inside a buffer that is none of its fields (see the module's header): true if the
    /// report keeps it (a wrapped `Operator:` rest, or a foreign line), false if it opens a
    /// report (this one is cut off there).
    fn foreign_buffer_line(&mut self, no: u64, text: &[u8], start: usize, c: &'c [u8]) -> bool {
        // (a wrapped rest has no log prefix: only blanks before it)
        let unprefixed = text[..start].iter().all(|&b| b == b' ' || b == b'\t');
        if unprefixed && self.rep().buf.as_ref().is_some_and(|b| b.wrap) && self.join_operator(c) {
            return true;
        }
        if opens_report(c) {
            return false;
        }
        let (off, full) = (self.off, self.full);
        let r = self.rep();
        let what = r.expected().expect("inside a buffer");
        r.cuts.push((no, (off + start) as u64 + 1, format!("out-of-memory report cut off: expected {what}"), full));
        r.part = Part::Interrupted;
        r.buf = None;
        self.request = request_in(c).map(|(v, b)| (no, v, b));
        true
    }

    /// Join `c` (a line with no prefix or indentation) to the buffer's `Operator:` text if the
    /// result starts an op-metadata list (with a space if that reads, else without one).
    fn join_operator(&mut self, c: &'c [u8]) -> bool {
        let b = self.rep().buf.as_mut().expect("inside a buffer");
        let head_len = b.operator.as_deref().map_or(0, <[u8]>::len);
        if head_len + 1 + c.len() > MAX_JOINED || b.joins >= MAX_JOINS {
            return false;
        }
        // appended in place, taken back if it does not read
        let text = b.operator.get_or_insert(Cow::Borrowed(b"")).to_mut();
        for sep in [&b" "[..], b""] {
            text.extend_from_slice(sep);
            text.extend_from_slice(c);
            if op_metadata_prefix(text) {
                b.joins += 1;
                return true;
            }
            text.truncate(head_len);
        }
        false
    }

    /// After a foreign line in a buffer: the next buffer resumes the report; the remaining
    /// fields and rule of the interrupted buffer, and other foreign lines, are passed over; a
    /// line that opens a report ends it.
    fn interrupted_line(&mut self, no: u64, backend: Backend, cur: Cur<'c>, c: &'c [u8]) -> R<bool> {
        let resumes = match backend {
            Backend::Gpu => c.strip_prefix(b"Buffer ").is_some_and(|r| r.len() > 1 && r.ends_with(b":") && r[..r.len() - 1].iter().all(u8::is_ascii_digit)),
            Backend::Tpu => {
                let n = c.iter().take_while(|b| b.is_ascii_digit()).count();
                n > 0 && c[n..].starts_with(b". Size:")
            }
        };
        if resumes {
            let part = if backend == Backend::Gpu { Part::Peak } else { Part::Allocs };
            self.rep().part = part;
            return match backend {
                Backend::Gpu => self.gpu_line(no, part, cur, c),
                Backend::Tpu => self.tpu_line(no, part, cur, c),
            };
        }
        let keys: &[&[u8]] = if backend == Backend::Gpu { &GPU_KEYS } else { &TPU_KEYS };
        if is_rule(c) || keys.iter().any(|k| c.starts_with(k)) {
            return Ok(true);
        }
        if opens_report(c) {
            return Ok(false);
        }
        self.request = request_in(c).map(|(v, b)| (no, v, b));
        Ok(true)
    }

    fn gpu_line(&mut self, no: u64, part: Part, mut cur: Cur<'c>, c: &'c [u8]) -> R<bool> {
        match part {
            Part::StatsHeader => {
                if c != b"BufferAssignment stats:" {
                    return Ok(false);
                }
                self.rep().part = Part::Stats;
            }
            Part::Stats => {
                if c == b"Peak buffers:" {
                    self.rep().part = Part::Peak;
                    return Ok(true);
                }
                // `LABEL: SIZE [(P%)]`, LABEL letters, '_' and spaces.
                let Some(colon) = memchr::memchr(b':', c) else { return Ok(false) };
                let label = &c[..colon];
                if label.is_empty() || !label.iter().all(|&b| b.is_ascii_alphabetic() || b == b'_' || b == b' ') || c.get(colon + 1) != Some(&b' ') {
                    return Ok(false);
                }
                cur.pos += colon + 1;
                cur.spaces();
                let at = cur.pos;
                let bytes = cur.human("the size")?;
                if cur.accept(" (") {
                    if !(cur.accept("nan") || cur.accept("-nan") || cur.accept("inf") || cur.accept("-inf")) {
                        let n = cur.view().iter().take_while(|&&b| b.is_ascii_digit() || b == b'.').count();
                        if n == 0 {
                            return bad(cur.pos, "expected a percentage");
                        }
                        cur.pos += n;
                    }
                    cur.expect("%)", "")?;
                }
                cur.end("the statistics line")?;
                let key = std::str::from_utf8(label).expect("UTF-8 line").to_string();
                self.figure("stats", key, Some(bytes), &cur.t[at..cur.stop], no);
            }
            Part::Peak | Part::Buffer => {
                if let Some(rest) = c.strip_prefix(b"Buffer ") {
                    if rest.ends_with(b":") && rest.len() > 1 && rest[..rest.len() - 1].iter().all(u8::is_ascii_digit) {
                        cur.pos += b"Buffer ".len();
                        let rank = cur.uint("the buffer number", I32_MAX);
                        self.open_buffer(no, cur.t, rank.as_ref().map_or(0, |&v| v as i32))?;
                        rank?;
                        return Ok(true);
                    }
                }
                if part == Part::Peak {
                    return Ok(false);
                }
                return self.buffer_line(no, cur, c);
            }
            _ => unreachable!("a GPU report is in a GPU part"),
        }
        Ok(true)
    }

    /// Start buffer `rank` at line `no`; an unclosed buffer before it is reported and dropped.
    fn open_buffer(&mut self, no: u64, text: &'c [u8], rank: i32) -> R<()> {
        let r = self.rep();
        let prev = r.buf.take();
        r.part = Part::Buffer;
        r.buf = Some(Buf { rank, line: no, ..Buf::default() });
        // (a previous buffer cut by a foreign line was dropped then: `buf` is None)
        if let Some(b) = prev {
            if !b.broken {
                let msg = format!("buffer {} has no closing ==== rule (the report lost lines here)", b.rank);
                let mut fig = std::mem::take(&mut self.rep().figures);
                let r = self.cut_off(&mut fig, no, self.off as u64 + 1 + content_start(text) as u64, msg, self.full);
                self.rep().figures = fig;
                r?;
            }
        }
        Ok(())
    }

    /// The open buffer's `Size:` value stops where a size can go on (`cut_short_size`): no row
    /// for it; a note if the file ends here, else the error at `pos` (reported at the next line).
    fn size_cut_short(&mut self, no: u64, pos: usize, msg: String) {
        let (column, full) = (self.off as u64 + pos as u64 + 1, self.full);
        let b = self.rep().buf.as_mut().expect("inside a buffer");
        b.broken = true;
        b.cut_size = Some((no, column, msg, full));
    }

    /// A keyed line of a buffer, or its rule.
    fn buffer_line(&mut self, no: u64, mut cur: Cur<'c>, c: &'c [u8]) -> R<bool> {
        let backend = self.rep().backend;
        if is_rule(c) {
            let r = self.rep();
            r.part = if backend == Backend::Gpu { Part::Peak } else { Part::Allocs };
            let b = r.buf.take().expect("inside a buffer");
            if b.broken {
                return Ok(true);
            }
            if b.size.is_none() {
                return bad(cur.pos, format!("buffer {} has no Size: line", b.rank));
            }
            r.buffers.push(b);
            return Ok(true);
        }
        let keys: &[&[u8]] = if backend == Backend::Gpu { &GPU_KEYS } else { &TPU_KEYS };
        let Some(&key) = keys.iter().find(|k| c.starts_with(k)) else { return Ok(false) };
        let key_at = cur.pos;
        cur.pos += key.len();
        cur.spaces();
        let at = cur.pos;
        let value = &cur.t[at..cur.stop];
        let name = std::str::from_utf8(&key[..key.len() - 1]).expect("ASCII");
        let b = self.rep().buf.as_mut().expect("inside a buffer");
        b.wrap = key == b"Operator:";
        let twice = match key {
            b"Size:" => b.size.is_some(),
            b"Operator:" => b.operator.is_some(),
            b"Entry Parameter Subshape:" => b.entry_subshape.is_some(),
            b"XLA Label:" | b"XLA label:" => b.xla_label.is_some(),
            b"Shape:" => b.shape.is_some(),
            b"Unpadded size:" => b.unpadded.is_some(),
            b"Extra memory due to padding:" => b.padding.is_some(),
            _ => b.allocation_type.is_some(),
        };
        if twice {
            return bad(key_at, format!("{name:?} printed twice in buffer {}", b.rank));
        }
        match key {
            b"Size:" => {
                let v = match cur.human("the size") {
                    Ok(v) => v,
                    Err(Stop::Bad(pos, msg)) if cut_short_size(value) => {
                        // the paste may end on this line (issue 51): decided at the next line
                        self.size_cut_short(no, pos, msg);
                        return Ok(true);
                    }
                    Err(e) => return Err(e),
                };
                cur.end("the size")?;
                self.rep().buf.as_mut().expect("buffer").size = Some((value, v));
            }
            b"Unpadded size:" => {
                let v = cur.tpu_size("the unpadded size")?;
                cur.end("the unpadded size")?;
                self.rep().buf.as_mut().expect("buffer").unpadded = Some(v);
            }
            b"Extra memory due to padding:" => {
                let v = cur.tpu_size("the padding")?;
                self.rep().buf.as_mut().expect("buffer").padding = Some((value, v));
            }
            b"Operator:" => b.operator = Some(Cow::Borrowed(value)),
            b"Entry Parameter Subshape:" => b.entry_subshape = Some(value),
            b"XLA Label:" | b"XLA label:" => b.xla_label = Some(value),
            b"Shape:" => b.shape = Some(value),
            _ => b.allocation_type = Some(value),
        }
        Ok(true)
    }

    /// The report ended before line `at` (None: at the end of the file).
    fn end_report(&mut self, at: Option<(u64, &'c [u8], usize)>) -> Result<()> {
        let mut r = self.report.take().expect("a report is open");
        if r.tail && r.buffers.is_empty() && r.figures.iter().all(|f| f.section == "missing") {
            return Ok(()); // a stray line that looked like the inside of a report
        }
        let src = self.ctx.src;
        let backend = if r.backend == Backend::Gpu { "gpu" } else { "tpu" };
        if let Some(earlier) = self.seen.iter().position(|k| *k == r.key) {
            // Printed again (the log line, then the exception): one row that says so.
            let t = &mut self.t.oom_reports;
            t.file_id.push(self.ctx.file_id);
            t.report_id.push(earlier as i32);
            t.backend.push(backend);
            t.memory_space.push_opt(&src, r.memory_space);
            t.section.push("repeat");
            t.key.push("repeats report".to_string());
            t.bytes.push(None);
            t.value.push(&src, r.key[0]);
            t.line.push(r.first as i32);
            return Ok(());
        }
        let mut fig = std::mem::take(&mut r.figures);
        for (no, column, msg, full) in std::mem::take(&mut r.cuts) {
            self.cut_off(&mut fig, no, column, msg, full)?;
        }
        let cut_size = r.buf.as_mut().and_then(|b| b.cut_size.take());
        if let (Some((no, column, _, full)), None) = (cut_size, at) {
            // the paste ends inside a Size: value (`Size: 384`): cut there, like every cut paste
            let rank = r.buf.as_ref().map_or(0, |b| b.rank);
            let msg = format!("out-of-memory report cut off by the end of the file inside the Size: of buffer {rank}");
            self.cut_off(&mut fig, no, column, msg, full)?;
        } else if let Some(what) = r.expected() {
            match at {
                Some((no, _text, start)) => {
                    let column = self.off as u64 + start as u64 + 1;
                    self.cut_off(&mut fig, no, column, format!("out-of-memory report cut off: expected {what}"), self.full)?
                }
                None => {
                    let last = r.last;
                    let column = (last.off + last.text.len()) as u64 + 1;
                    self.cut_off(&mut fig, last.no, column, format!("out-of-memory report cut off by the end of the file: expected {what}"), last.full)?
                }
            }
        }
        r.figures = fig;
        let id = self.seen.len() as i32;
        let t = &mut self.t.oom_reports;
        for f in &r.figures {
            t.file_id.push(self.ctx.file_id);
            t.report_id.push(id);
            t.backend.push(backend);
            t.memory_space.push_opt(&src, r.memory_space);
            t.section.push(f.section);
            t.key.push(f.key.clone());
            t.bytes.push(f.bytes);
            match &f.value {
                Cow::Borrowed(v) => t.value.push(&src, v),
                Cow::Owned(v) => t.value.push_owned(v),
            }
            t.line.push(f.line as i32);
        }
        let t = &mut self.t.oom_buffers;
        for b in &r.buffers {
            let (size, size_bytes) = b.size.expect("checked at the rule");
            // A joined (owned) operator's fields are copied: views point into the input only.
            let meta = match &b.operator {
                Some(Cow::Borrowed(s)) => op_metadata(s),
                Some(Cow::Owned(v)) => op_metadata(v).map(OpMetadata::into_owned),
                None => None,
            }
            .unwrap_or_default();
            let push_cow = |col: &mut crate::columns::ViewCol, v: &Option<Cow<'c, [u8]>>| match v {
                Some(Cow::Borrowed(s)) => col.push(&src, s),
                Some(Cow::Owned(s)) => col.push_owned(s),
                None => col.push_null(),
            };
            t.file_id.push(self.ctx.file_id);
            t.report_id.push(id);
            t.rank.push(b.rank);
            t.size_bytes.push(size_bytes);
            t.size.push(&src, size);
            push_cow(&mut t.operator, &b.operator);
            push_cow(&mut t.op_type, &meta.op_type);
            push_cow(&mut t.op_name, &meta.op_name);
            push_cow(&mut t.source_file, &meta.source_file);
            t.source_line.push(meta.source_line);
            t.shape.push_opt(&src, b.shape);
            t.unpadded_size_bytes.push(b.unpadded);
            t.padding_bytes.push(b.padding.map(|p| p.1));
            t.padding.push_opt(&src, b.padding.map(|p| p.0));
            t.xla_label.push_opt(&src, b.xla_label);
            t.allocation_type.push_opt(&src, b.allocation_type);
            t.entry_parameter_subshape.push_opt(&src, b.entry_subshape);
            t.line.push(b.line as i32);
        }
        self.seen.push(r.key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(data: &[u8], collect: bool) -> (Tables, Result<()>) {
        run_in(data, collect, false)
    }

    fn run_in(data: &[u8], collect: bool, strict: bool) -> (Tables, Result<()>) {
        let ctx = FileCtx { file_id: 0, path: "t", collect, src: crate::source::SourceRef::none(), proj: None, presized: false, strict, xla_named: false };
        let mut t = Tables::default();
        let r = parse(data, ctx, &mut t);
        (t, r)
    }

    fn i64s(t: Tables, table: &str, col: &str) -> Vec<i64> {
        let (_, b) = t.finish().into_iter().find(|(n, _)| *n == table).unwrap();
        let a = b.column_by_name(col).unwrap();
        let a = a.as_any().downcast_ref::<arrow_array::Int64Array>().unwrap();
        a.iter().map(|v| v.unwrap()).collect()
    }

    const GPU: &str = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.
BufferAssignment OOM Debugging.
BufferAssignment stats:
             parameter allocation:    6.00MiB
              constant allocation:         0B
        maybe_live_out allocation:    6.00MiB
     preallocated temp allocation:         0B
                 total allocation:   12.00MiB
              total fragmentation:         0B (0.00%)
Peak buffers:
\tBuffer 1:
\t\tSize: 6.00MiB
\t\tOperator: op_name=\"jit(concatenate)/jit(main)/concatenate[dimension=0]\" source_file=\"/x/models.py\" source_line=689
\t\tXLA Label: concatenate
\t\tShape: f32[4096,128,3]
\t\t==========================

\tBuffer 2:
\t\tSize: 384.0KiB
\t\tEntry Parameter Subshape: f32[256,128,3]
\t\t==========================

";

    #[test]
    fn gpu_report() {
        let (t, r) = run(GPU.as_bytes(), false);
        r.unwrap();
        assert_eq!(t.oom_reports.len(), 7); // requested + 6 stats
        assert_eq!(t.oom_buffers.len(), 2);
        assert_eq!(t.oom_buffers.size_bytes.0, vec![6 << 20, 384 << 10]);
        assert_eq!(i64s(t, "oom_reports", "bytes"), vec![6291456, 6 << 20, 0, 6 << 20, 0, 12 << 20, 0]);
    }

    #[test]
    fn twice_is_once_and_cut_is_an_error() {
        let twice = format!("{GPU}{GPU}");
        let (t, r) = run(twice.as_bytes(), false);
        r.unwrap();
        assert_eq!(t.oom_buffers.len(), 2);
        let cut = &GPU[..GPU.find("\t\tEntry").unwrap()];
        // strict: an error, as every cut-off
        let (t, r) = run_in(format!("{cut}other log line\n").as_bytes(), true, true);
        r.unwrap();
        assert_eq!(t.oom_buffers.len(), 1);
        assert_eq!(t.errors.line.0, vec![20]);
        let (_, r) = run_in(cut.as_bytes(), false, true);
        let e = r.unwrap_err().to_string();
        assert!(e.starts_with("t:19:"), "{e}");
        // by default: what is there, a note and a `missing` row
        let (t, r) = run(cut.as_bytes(), false);
        r.unwrap();
        assert_eq!((t.oom_buffers.len(), t.errors.len(), t.notes.len()), (1, 0, 1));
        assert!(t.oom_reports.section.0.iter().any(|s| s.as_deref() == Some("missing")), "a missing row");
    }

    #[test]
    fn tpu_report() {
        let data = b"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 63.80G of 30.75G hbm. Exceeded hbm capacity by 33.05G.

Total hbm usage >= 65.05G:
    reserved          1.25G
    program          63.80G
    arguments            0B

Output size 0B; shares 0B with arguments.

Program hbm requirement 63.80G:
    global            1.14M
    scoped            4.56M
    HLO temp         63.79G (100.0% utilization: Unpadded (63.58G) Padded (63.58G), 0.3% fragmentation (210.89M))

  Largest program allocations in hbm:

  1. Size: 2.00G
     Operator: op_name=\"a\\\"b\" source_line=1059
     Shape: f32[32,4096,4096]{1,2,0:T(8,128)}
     Unpadded size: 2.00G
     Extra memory due to padding: 31.00G (32.0x expansion)
     XLA label: fusion.1265.remat3 = fusion(custom-call.224), kind=kOutput
     Allocation type: HLO temp
     ==========================

";
        let (t, r) = run(data, false);
        r.unwrap();
        assert_eq!(t.oom_buffers.len(), 1);
        assert_eq!(t.oom_buffers.size_bytes.0, vec![2 << 30]);
        let keys: Vec<_> = t.oom_reports.key.0.iter().map(|k| k.clone().unwrap()).collect();
        assert_eq!(i64s(t, "oom_buffers", "padding_bytes"), vec![31 << 30]);
        assert_eq!(keys, ["used", "capacity", "exceeded", "total", "reserved", "program", "arguments", "output size", "shared with arguments", "total", "global", "scoped", "HLO temp", "HLO temp unpadded", "HLO temp padded", "HLO temp fragmentation"]);
    }

    #[test]
    fn lone_cr_is_a_redraw_and_columns_count_on_the_real_line() {
        let with_cr = GPU.replacen("BufferAssignment OOM Debugging.", " 10%|#  |\r100%|###|\rBufferAssignment OOM Debugging.", 1);
        let (t, r) = run(with_cr.as_bytes(), false);
        r.unwrap();
        assert_eq!(t.oom_buffers.len(), 2);
        // a redraw before a field: the size's column counts the CR
        let bad = with_cr.replacen("\t\tSize: 384.0KiB", "\r\t\tSize: 384.0XiB", 1);
        let (t, r) = run(bad.as_bytes(), true);
        r.unwrap();
        assert_eq!(t.errors.line.0, vec![19]);
        assert_eq!(t.errors.column.0, vec![1 + 2 + 6 + 1]); // "\r", "\t\t", "Size: "
    }

    #[test]
    fn wrapped_operator_is_joined() {
        let line = "\t\tOperator: op_name=\"jit(concatenate)/jit(main)/concatenate[dimension=0]\" source_file=\"/x/models.py\" source_line=689";
        let wrapped = "\t\tOperator: op_name=\"jit(concatenate)/jit(ma\nin)/concatenate[dimension=0]\"\nsource_file=\"/x/models.py\" source_li\nne=689";
        let (t, r) = run(GPU.replacen(line, wrapped, 1).as_bytes(), false);
        r.unwrap();
        assert_eq!(t.oom_buffers.len(), 2);
        let (_, b) = t.finish().into_iter().find(|(n, _)| *n == "oom_buffers").unwrap();
        let lines = b.column_by_name("source_line").unwrap();
        let lines = lines.as_any().downcast_ref::<arrow_array::Int32Array>().unwrap();
        assert_eq!(lines.iter().collect::<Vec<_>>(), vec![Some(689), None]);
    }

    #[test]
    fn metadata_prefixes() {
        for ok in [&b"op_name=\"a b"[..], b"op_name=\"x\" source_li", b"op_name=", b"a={x y", b"source_line=1", b"k=v kk=\"\\\""] {
            assert!(op_metadata_prefix(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [&b""[..], b" op_name=x", b"op_name=x  y=1", b"Traceback (most", b"op_name=\"x\"source", b"k= v"] {
            assert!(!op_metadata_prefix(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn metadata() {
        let m = op_metadata(br#"op_type="add" op_name="a\"b" source_file="/f.py" source_line=7 profile_type={a b}"#);
        assert_eq!(m.unwrap().source_file.as_deref(), Some(&b"/f.py"[..]));
        let m = op_metadata(br#"op_type="add" op_name="a\"b" source_file="/f.py" source_line=7"#).unwrap();
        assert_eq!(m.op_name.as_deref(), Some(&b"a\"b"[..]));
        assert_eq!(m.source_line, Some(7));
        assert!(op_metadata(b"garbage").is_none());
    }

    #[test]
    fn nasty_inputs_do_not_panic() {
        let cases: &[&[u8]] = &[
            b"BufferAssignment OOM Debugging.\n",
            b"BufferAssignment OOM Debugging.\nBufferAssignment stats:\n x: 99999999999999999999EiB (1.0%)\nPeak buffers:\nBuffer 99999999999:\n====\n",
            b"Ran out of memory in memory space \n",
            b"Ran out of memory in memory space hbm. Used 1.0X\nTotal hbm usage >= :\n",
            b"Ran out of memory in memory space hbm.\nProgram hbm requirement 1G:\n HLO temp 1G (Unpadded (x\nLargest program allocations in hbm:\n1. Size: 1G\n1. Size: 2G\n===\n",
            b"Ran out of memory in memory space hbm.\nTotal x usage 1G:\nOutput size 1G; shares\n",
        ];
        for data in cases {
            for collect in [true, false] {
                let (t, _) = run(data, collect);
                let _ = t.finish();
            }
        }
    }
}

