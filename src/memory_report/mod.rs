//! The memory-usage report (`*-memory-usage-report.txt`, FORMATS.md §2.8) in every layout XLA
//! has printed, into `memory_report` rows (and `totals`):
//!
//! * **allocation list** (jax 0.4.3x – 0.9, §2.8.2): `Total bytes used: N (H)`, then
//!   `Allocations sorted by size:` with one row per allocation (cumulative size and percentage,
//!   bytes remaining, the allocation line), then `Allocations sorted by size with their
//!   values:` where each allocation line is followed by its offset-group table;
//! * **table form** (jax 0.10, §2.8.1): `Memory Space: NAME (color=C)`, `Total bytes: N (H)`
//!   and one offset-group table per allocation (which allocation is not printed: join by rank);
//! * **protobuf text** (§2.8.3, `proto.rs`).
//!
//! `row_kind` says what a row is: `allocation` (a row of the allocation list, or a protobuf
//! entry) or `offsets` (a row of an offset-group table: the values sharing one offset).
//!
//! Parser state is `Layout`: which section we are in, carrying what that section needs, so
//! nothing outlives its section. The reference parser (`reference/memory_report.py`) follows
//! the same grammar; differences are bugs.
//!
//! Hackers: a new layout is a new `Layout` variant, its header in `section_header`, its line
//! handler in `line`, and the same in the reference; add a sample under `tests/data`.

mod checks;
mod proto;

use crate::allocation_line::{allocation_line, AllocationLine, SizeForm};
use crate::error::{FileCtx, Result};
use crate::driver::{checked_lines, feed, LineGrammar};
use crate::lex::{bad, Cur, I32_MAX, I64_MAX, R};
use crate::tables::Tables;

use proto::{proto_tokens, Kind, ProtoBad, ProtoReader, Token};

/// Where we are in an offset-group table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TableSub {
    /// Not in a table (before its column header, or after an empty line).
    Outside,
    /// After the column header: the dashed rule comes next.
    Rule,
    Rows,
    /// After `The rest N values …`: the table is over.
    Cut,
}

/// Where we are in the allocation list (`Allocations sorted by size:`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ListSub {
    Header,
    Rule,
    Rows,
}

enum Layout<'c> {
    /// Before the first section, or after a section that an empty line ended.
    Idle,
    /// Table form: one memory space and its tables.
    Space { name: &'c [u8], color: i32, tables: i32, sub: TableSub },
    /// The allocation list.
    List { sub: ListSub, rank: i32 },
    /// `Allocations sorted by size with their values:`; `allocation` is the allocation line
    /// that the next table belongs to.
    WithValues { allocation: Option<(i64, i32)>, tables: i32, sub: TableSub },
    /// A protobuf-text message being collected (depth > 0) or between messages.
    Proto { tokens: Vec<Token<'c>>, depth: u64, broken: bool },
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    layout: Layout<'c>,
    /// Rows of the offset table being read (a table XLA prints has at least one).
    rows_in_table: u64,
    /// The sections seen: the allocation list is always followed by the list with values.
    saw_list: bool,
    saw_with_values: bool,
    /// The last non-empty line (number, text): where a file cut short is reported.
    last: (u64, &'c [u8]),
    /// A line was reported: the file's end is not judged again.
    had_error: bool,
    /// The whole-file checks (`checks.rs`): tables cut between their rows.
    ends: checks::TableEnds,
}

/// Parse one memory-usage report (`data` is the whole file).
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let errors_before = t.errors.len();
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let mut p = Parser { ctx, t, layout: Layout::Idle, rows_in_table: 0, saw_list: false, saw_with_values: false,
                         last: (0, &data[..0]), had_error: false, ends: Default::default() };
    let _ = feed(&mut p, lines)?;
    p.finish(errors_before)
}

impl<'c> LineGrammar<'c> for Parser<'_, 'c> {
    fn tables(&mut self) -> &mut Tables {
        self.t
    }

    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if let Layout::Proto { depth, .. } = self.layout {
            if depth > 0 {
                return self.proto_line(no, text); // inside a message every line belongs to it
            }
        }
        if text.is_empty() {
            self.blank();
            return Ok(());
        }
        self.last = (no, text);
        if self.section_header(no, text)? {
            return Ok(());
        }
        match self.layout {
            Layout::Proto { .. } => self.proto_line(no, text),
            Layout::Idle => bad(0, "expected a memory-usage report section (Total bytes used: …, Allocations sorted by size:, Allocations sorted by size with their values:, Memory Space: …, memory_space_allocation_entries {) or an empty line"),
            Layout::Space { .. } => self.space_line(no, text),
            Layout::List { .. } => self.list_line(no, text),
            Layout::WithValues { .. } => self.with_values_line(no, text),
        }
    }

    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()> {
        self.had_error = true;
        self.ctx.error_at(&mut self.t.errors, line, column, msg, text)
    }
}

impl<'t, 'c> Parser<'t, 'c> {
    fn finish(mut self, errors_before: usize) -> Result<()> {
        if let Layout::Proto { tokens, depth, .. } = &self.layout {
            if *depth > 0 {
                let tok = &tokens[0];
                let (line, col, text) = (tok.line, tok.pos as u64 + 1, tok.text);
                self.report(line, col, "file ended inside a memory_space_allocation_entries block (missing '}')".into(), text)?;
            }
        }
        if let Some(what) = self.cut_short().filter(|_| !self.had_error) {
            let (line, text) = self.last;
            self.report(line, text.len() as u64 + 1, format!("the file ends {what} (cut short)"), text)?;
        }
        self.ends.end();
        self.ctx.report_whole_file(&mut self.t.errors, errors_before, self.ends.problems())
    }

    /// What a file that ends here lacks, when every complete report has it (FORMATS.md §2.8):
    /// a memory space has at least one table, a table its rule and a row, the allocation list
    /// its rows and then the list with values.
    fn cut_short(&self) -> Option<&'static str> {
        let no_rows = self.rows_in_table == 0;
        match self.layout {
            Layout::Space { tables: 0, .. } => Some("after the memory space's header: its allocation tables are missing"),
            Layout::Space { sub: TableSub::Rule, .. } | Layout::WithValues { sub: TableSub::Rule, .. } => {
                Some("after a table's column header: its dashed rule and rows are missing")
            }
            Layout::Space { sub: TableSub::Rows, .. } | Layout::WithValues { sub: TableSub::Rows, .. } if no_rows => {
                Some("after a table's dashed rule: its rows are missing")
            }
            Layout::List { sub: ListSub::Header | ListSub::Rule, .. } | Layout::List { sub: ListSub::Rows, rank: 0 } => {
                Some("before the rows of 'Allocations sorted by size:'")
            }
            Layout::WithValues { allocation: None, tables: 0, .. } => {
                Some("after 'Allocations sorted by size with their values:': its allocations are missing")
            }
            _ if self.saw_list && !self.saw_with_values => {
                Some("before 'Allocations sorted by size with their values:', which follows the allocation list")
            }
            _ => None,
        }
    }

    /// An empty line ends a table (table forms) or the allocation list.
    fn blank(&mut self) {
        self.ends.end();
        match &mut self.layout {
            Layout::Space { sub, .. } | Layout::WithValues { sub, .. } => *sub = TableSub::Outside,
            Layout::List { sub: ListSub::Header, .. } => {}
            Layout::List { .. } => self.layout = Layout::Idle,
            Layout::Idle | Layout::Proto { .. } => {}
        }
    }

    fn section_header(&mut self, no: u64, text: &'c [u8]) -> R<bool> {
        let header = self.section_header_line(no, text);
        if matches!(header, Ok(true)) {
            self.ends.end(); // a new section: the table before it is over
        }
        header
    }

    fn section_header_line(&mut self, no: u64, text: &'c [u8]) -> R<bool> {
        if text.starts_with(b"Total bytes used: ") {
            self.layout = Layout::Idle;
            let total = Cur::new(text, b"Total bytes used: ".len()).bytes_and_human("the total line")?;
            self.total("total_bytes_used", None, total, no);
        } else if text == b"Allocations sorted by size:" {
            self.saw_list = true;
            self.layout = Layout::List { sub: ListSub::Header, rank: 0 };
        } else if text == b"Allocations sorted by size with their values:" {
            self.saw_with_values = true;
            self.layout = Layout::WithValues { allocation: None, tables: 0, sub: TableSub::Outside };
        } else if text.starts_with(b"Memory Space: ") {
            self.memory_space_line(text)?;
        } else if text.starts_with(b"memory_space_allocation_entries") {
            self.layout = Layout::Proto { tokens: Vec::new(), depth: 0, broken: false };
            self.proto_line(no, text)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    fn total(&mut self, key: &str, color: Option<i32>, value: i64, line: u64) {
        let t = &mut self.t.totals;
        t.file_id.push(self.ctx.file_id);
        t.section.push("memory_report");
        t.key.push(key);
        t.color.push(color);
        t.value.push(value);
        t.line.push(line as i32);
    }

    // ------------------------------------------------------------------ table form (§2.8.1)

    fn memory_space_line(&mut self, text: &'c [u8]) -> R<()> {
        self.layout = Layout::Idle;
        let Some(marker) = memchr::memmem::rfind(text, b" (color=") else {
            return bad(text.len(), "expected ' (color=N)' after the memory space name");
        };
        let mut cur = Cur::new(text, marker + b" (color=".len());
        let color = cur.uint("the color", I32_MAX)? as i32;
        cur.expect(")", "")?;
        cur.end("the memory space line")?;
        let name_start = b"Memory Space: ".len();
        let name = if marker > name_start { &text[name_start..marker] } else { &text[..0] };
        self.layout = Layout::Space { name, color, tables: 0, sub: TableSub::Outside };
        Ok(())
    }

    fn space_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let Layout::Space { name, color, tables, sub } = self.layout else { unreachable!() };
        if text.starts_with(b"Total bytes: ") {
            let total = Cur::new(text, b"Total bytes: ".len()).bytes_and_human("the total line")?;
            self.total("total_bytes", Some(color), total, no);
            return Ok(());
        }
        let row = GroupRow { space: Some(name), color: Some(color), table: tables - 1, allocation: None };
        let (tables, sub) = self.table_line(no, text, tables, sub, row, "'Total bytes: N (…)', ")?;
        self.layout = Layout::Space { name, color, tables, sub };
        Ok(())
    }

    /// A line of an offset-group table (both table forms): its column header (which starts a
    /// table: `tables` + 1), dashed rule, rows and cut-off line. Returns the new (tables, sub).
    fn table_line(&mut self, no: u64, text: &'c [u8], tables: i32, sub: TableSub, row: GroupRow<'c>, other: &str) -> R<(i32, TableSub)> {
        let body = skip_ws(text);
        if is_table_header(&text[body..]) {
            self.ends.end();
            self.rows_in_table = 0;
            return Ok((tables.wrapping_add(1), TableSub::Rule));
        }
        if body > 0 && body < text.len() && text[body..].iter().all(|&b| b == b'-') {
            if sub != TableSub::Rule {
                return bad(0, "dashed rule not after the column header");
            }
            return Ok((tables, TableSub::Rows));
        }
        if text[body..].starts_with(b"The rest ") {
            if sub != TableSub::Rows {
                return bad(0, "'The rest N values …' outside an allocation table");
            }
            let color = row.color;
            let (rest, percent) = rest_line(text, body, "values")?;
            self.ends.rest();
            self.total("rest_values", color, rest, no);
            self.total("rest_percent", color, percent, no);
            return Ok((tables, TableSub::Cut));
        }
        if sub == TableSub::Rows {
            self.group_row(no, text, row)?;
            self.rows_in_table += 1;
            return Ok((tables, sub));
        }
        bad(0, format!("expected {other}the column header 'cumulative_size; size; offset; used_by_n_values; shapes_list', its dashed rule, a table row, or an empty line"))
    }

    fn group_row(&mut self, no: u64, text: &'c [u8], row: GroupRow<'c>) -> R<()> {
        let (mut cur, cumulative, percent) = cumulative_prefix(text)?;
        let size_is_rounded = human_is_rounded(text, cur.pos);
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
        let t = &mut self.t.memory_report;
        t.file_id.push(self.ctx.file_id);
        t.memory_space.push_opt(&src, row.space);
        t.color.push(row.color);
        t.table.push(row.table);
        t.allocation.push(row.allocation);
        t.cumulative_bytes.push(Some(cumulative));
        t.percent.push(percent);
        t.size.push(size);
        t.size_is_rounded.push(size_is_rounded);
        t.offset.push(Some(offset));
        t.used_by_n_values.push(Some(count));
        t.shapes.push(&src, shapes);
        t.row_kind.push("offsets");
        t.remaining_bytes.push(None);
        t.flags.push_null();
        t.line.push(no as i32);
        self.ends.table_row(no, percent);
        Ok(())
    }

    // ------------------------------------------------------------------ allocation list (§2.8.2)

    fn list_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let Layout::List { sub, rank } = self.layout else { unreachable!() };
        match sub {
            ListSub::Header => {
                if text != b"cumulative_size; total_size - cumulative_size; allocation" {
                    return bad(0, "expected the column header 'cumulative_size; total_size - cumulative_size; allocation'");
                }
                self.layout = Layout::List { sub: ListSub::Rule, rank };
            }
            ListSub::Rule => {
                if !text.iter().all(|&b| b == b'-') {
                    return bad(0, "expected the dashed rule under the column header");
                }
                self.layout = Layout::List { sub: ListSub::Rows, rank };
            }
            ListSub::Rows if text.starts_with(b"The rest ") => {
                // `The rest N allocations are less than P% of the total size and not shown.`
                let (rest, percent) = rest_line(text, 0, "allocations")?;
                self.ends.rest();
                self.total("rest_allocations", None, rest, no);
                self.total("rest_percent", None, percent, no);
                self.layout = Layout::Idle;
            }
            ListSub::Rows => {
                self.list_row(no, text, rank)?;
                self.layout = Layout::List { sub, rank: rank.wrapping_add(1) };
            }
        }
        Ok(())
    }

    /// `   1.17MiB( 38%);    1.90MiB; allocation 528: size 1.17MiB, preallocated-temp:`
    fn list_row(&mut self, no: u64, text: &'c [u8], rank: i32) -> R<()> {
        let (mut cur, cumulative, percent) = cumulative_prefix(text)?;
        let remaining = cur.human("the bytes remaining (total_size - cumulative_size)")?;
        cur.expect("; ", "")?;
        let line = allocation_line(text, cur.pos, SizeForm::Human)?;
        let rounded = human_is_rounded(text, cur.pos + memchr::memmem::find(&text[cur.pos..], b": size ").expect("an allocation line") + 7);
        self.allocation_row(no, rank, &line, Some(cumulative), percent, Some(remaining), rounded);
        self.ends.list_row(no, Some(remaining));
        self.unknown_flags(no, text, &line)
    }

    /// A `notes` row per allocation flag a newer XLA prints (kept raw in `flags`).
    fn unknown_flags(&mut self, no: u64, text: &[u8], a: &AllocationLine<'_>) -> R<()> {
        for &(at, raw) in &a.flags.unknown {
            let note = crate::allocation_line::unknown_flag_note(raw);
            self.ctx.note(self.t, no, text, at as u64 + 1, note)?;
        }
        Ok(())
    }

    fn allocation_row(&mut self, no: u64, rank: i32, a: &AllocationLine<'c>, cumulative: Option<i64>, percent: Option<i32>, remaining: Option<i64>, size_is_rounded: bool) {
        let src = self.ctx.src;
        let t = &mut self.t.memory_report;
        t.file_id.push(self.ctx.file_id);
        t.memory_space.push_null();
        t.color.push(Some(a.flags.color));
        t.table.push(rank);
        t.allocation.push(Some(a.index));
        t.cumulative_bytes.push(cumulative);
        t.percent.push(percent);
        t.size.push(a.size);
        t.size_is_rounded.push(size_is_rounded);
        t.offset.push(None);
        t.used_by_n_values.push(None);
        t.shapes.push_null();
        t.row_kind.push("allocation");
        t.remaining_bytes.push(remaining);
        t.flags.push(&src, a.flags_text);
        t.line.push(no as i32);
    }

    // ------------------------------------------------------------------ with their values (§2.8.2)

    fn with_values_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let Layout::WithValues { allocation, tables, sub } = self.layout else { unreachable!() };
        if text.starts_with(b"allocation ") {
            self.ends.end(); // the next allocation's table follows
            // Unreadable: later table rows belong to no known allocation (and say so).
            self.layout = Layout::WithValues { allocation: None, tables, sub: TableSub::Outside };
            let a = allocation_line(text, 0, SizeForm::Human)?;
            self.layout = Layout::WithValues { allocation: Some((a.index, a.flags.color)), tables, sub: TableSub::Outside };
            return self.unknown_flags(no, text, &a);
        }
        let row = GroupRow { space: None, color: allocation.map(|a| a.1), table: tables - 1, allocation: allocation.map(|a| a.0) };
        let before = tables;
        let (tables, sub) = self.table_line(no, text, tables, sub, row, "'allocation N: size …:', ")?;
        self.layout = Layout::WithValues { allocation, tables, sub };
        if tables != before && allocation.is_none() {
            return bad(0, "an offset table before any 'allocation N: size …:' line");
        }
        Ok(())
    }

    // ------------------------------------------------------------------ protobuf text (§2.8.3)

    fn proto_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let Layout::Proto { tokens: collected, depth, broken } = &mut self.layout else { unreachable!() };
        let tokens = match proto_tokens(no, text) {
            Ok(t) => t,
            Err(e) => {
                if *depth > 0 || !collected.is_empty() {
                    *broken = true;
                }
                return Err(e);
            }
        };
        for tok in tokens {
            let Layout::Proto { tokens: collected, depth, broken } = &mut self.layout else { unreachable!() };
            if *depth == 0 {
                let expected = [Kind::Ident, Kind::Colon, Kind::LBrace][collected.len().min(2)];
                if tok.kind != expected && !(expected == Kind::Colon && tok.kind == Kind::LBrace) {
                    collected.clear();
                    return bad(tok.pos, "expected 'memory_space_allocation_entries {'");
                }
            }
            let kind = tok.kind;
            let pos = tok.pos;
            collected.push(tok);
            if kind == Kind::LBrace {
                *depth += 1;
            } else if kind == Kind::RBrace {
                if *depth == 0 {
                    return bad(pos, "'}' without a matching '{'");
                }
                *depth -= 1;
                if *depth == 0 {
                    let message = std::mem::take(collected);
                    let was_broken = std::mem::replace(broken, false);
                    if !was_broken {
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
                return Err(ProtoBad(reader.i - 1, "expected 'memory_space_allocation_entries {'".into()));
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
        self.total("total_bytes", Some(color), total, total_line);
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
            t.size_is_rounded.push(false); // the protobuf states bytes
            t.offset.push(Some(0));
            t.used_by_n_values.push(Some(entry.positions.len() as i32));
            t.shapes.push_owned(&shapes);
            t.row_kind.push("allocation");
            t.remaining_bytes.push(None);
            t.flags.push_null();
            t.line.push(*entry_line as i32);
        }
        Ok(())
    }
}

/// Where the rows of an offset-group table belong.
#[derive(Clone, Copy)]
struct GroupRow<'c> {
    space: Option<&'c [u8]>,
    color: Option<i32>,
    table: i32,
    allocation: Option<i64>,
}

/// `R(HUMAN)(R3(PERCENT)%); ` after the indentation, which starts every row of the report's
/// tables: (cursor after it and its padding, cumulative bytes, percent).
fn cumulative_prefix(text: &[u8]) -> R<(Cur<'_>, i64, Option<i32>)> {
    let mut cur = Cur::new(text, skip_ws(text));
    let cumulative = cur.human("the cumulative size")?;
    cur.expect("(", "")?;
    let percent = percentage(&mut cur)?;
    cur.expect("%); ", "")?;
    cur.spaces();
    Ok((cur, cumulative, percent))
}

/// Whether the `HumanReadableNumBytes` text at `pos` was rounded: any unit above `B` prints one
/// or two decimals (`29.49MiB`), so its byte count is approximate (`memory_report.size_is_rounded`).
fn human_is_rounded(text: &[u8], pos: usize) -> bool {
    let n = text[pos..].iter().take_while(|&&b| b.is_ascii_digit() || b == b'.' || b == b'-').count();
    text.get(pos + n) != Some(&b'B')
}

/// `The rest N WHAT are less than P% of the total size and not shown.` from `start`
/// (WHAT: `allocations` under the allocation list, `values` under an offset table).
fn rest_line(text: &[u8], start: usize, what: &str) -> R<(i64, i64)> {
    let mut cur = Cur::new(text, start + b"The rest ".len());
    let rest = cur.uint(&format!("the number of {what} not shown"), I64_MAX)? as i64;
    cur.expect(&format!(" {what} are less than "), "")?;
    let percent = cur.uint("the percentage", I64_MAX)? as i64;
    cur.expect("% of the total size and not shown.", "")?;
    cur.end("the cut-off line")?;
    Ok((rest, percent))
}

/// `%3.0f` of a percentage: digits, or `nan` / `-nan` when the total is 0 (None).
fn percentage(cur: &mut Cur<'_>) -> R<Option<i32>> {
    cur.spaces();
    if cur.accept("nan") || cur.accept("-nan") {
        return Ok(None);
    }
    Ok(Some(cur.uint("the percentage", I32_MAX)? as i32))
}

/// Bytes of leading spaces and tabs (the table form indents with two spaces, the allocation
/// list's tables with a tab).
fn skip_ws(t: &[u8]) -> usize {
    t.iter().take_while(|&&b| b == b' ' || b == b'\t').count()
}

/// `cumulative_size;  size;  offset;  used_by_n_values;  shapes_list` (any spaces between).
fn is_table_header(t: &[u8]) -> bool {
    let Some(mut rest) = t.strip_prefix(b"cumulative_size;") else {
        return false;
    };
    for word in [&b"size;"[..], b"offset;", b"used_by_n_values;", b"shapes_list"] {
        let n = rest.iter().take_while(|&&b| b == b' ').count();
        if n == 0 || !rest[n..].starts_with(word) {
            return false;
        }
        rest = &rest[n + word.len()..];
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::proto::{c_unescape, proto_number_len, proto_string_len};
    use super::*;

    fn run(data: &[u8]) -> (Tables, Result<()>) {
        let ctx = FileCtx::for_test(true);
        let mut t = Tables::default();
        let r = parse(data, ctx, &mut t);
        (t, r)
    }

    #[test]
    fn allocation_list_layout() {
        let data = b"Total bytes used: 1004 (1004B)\n\nAllocations sorted by size:\n\ncumulative_size; total_size - cumulative_size; allocation\n------------------------------------------------------------------------------\n      388B( 39%);       616B; allocation 4: size 388B, preallocated-temp:\n     1004B(100%);         0B; allocation 3: size 16B, output shape is |(f32[6], c64[6,6])|, maybe-live-out:\n\n\nAllocations sorted by size with their values:\nallocation 4: size 388B, preallocated-temp:\n\n\tcumulative_size;       size;       offset; used_by_n_values; shapes_list\n\t------------------------------------------------------------\n\t     288B(100%);       288B;           64;                2; 2\xc3\x97c64[6,6]\n\nallocation 3: size 16B, maybe-live-out:\n";
        let (t, r) = run(data);
        r.unwrap();
        assert_eq!(t.errors.file_id.0.len(), 0);
        assert_eq!(t.memory_report.len(), 3);
        assert_eq!(t.totals.len(), 1);
    }

    #[test]
    fn nasty_inputs_do_not_panic() {
        let cases: &[&[u8]] = &[
            b"Memory Space: (color=0)\n",
            b"Memory Space:  (color=0)\nTotal bytes: 1 (9999999999999999999.9EiB)\n",
            b"Memory Space: x (color=0)\n  cumulative_size; size; offset; used_by_n_values; shapes_list\n  --\n 99999999999999999999999999999999999999EiB(1%); 1B; 0; 1; x\n",
            b"memory_space_allocation_entries {\n  allocation_entries { defining_positions: \"\\\" }\n",
            b"memory_space_allocation_entries { memory_space_color: -9223372036854775808 }\n}\n}\n",
            b"memory_space_allocation_entries : : {\n}\n",
            b"Allocations sorted by size:\ncumulative_size; total_size - cumulative_size; allocation\n-\n 1B(1%); 1B; allocation 9999999999999999999999: size 1B:\n",
            b"Allocations sorted by size with their values:\n\tcumulative_size; size; offset; used_by_n_values; shapes_list\n",
        ];
        crate::driver::assert_never_panics(cases, parse);
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
