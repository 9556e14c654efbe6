//! The buffer-assignment family (FORMATS.md §2): allocations and their values, `Total bytes
//! used`, `Used values` blocks, `HloLiveRange` (schedule, live ranges, peak, stack-trace
//! breakdown) and the memory-usage report (table and protobuf-text forms).
//!
//! One section-driven state machine reads them all, whether the sections sit in one combined
//! file (older XLA, TPU seeds) or in four split files (newer XLA): every section starts with a
//! unique column-0 header, so the header decides the state, never the file name.

use crate::error::{FileCtx, Result};
use crate::lines::{Line, Lines};
use crate::tables::Tables;
use crate::text::*;

/// Which section the previous lines opened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    None,
    Allocations,
    /// `Used values:` blocks; `Sub` tells which list of the current block we are in.
    Values(ValueList),
    /// `HloLiveRange`: the two-space sub-headers choose the list.
    LiveRange(LiveList),
    Report,
    ProtoReport,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ValueList {
    Header,
    Positions,
    Uses,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LiveList {
    Top,
    Sequence,
    Buffers,
    Peak,
    Tree,
}

/// A value block of `Used values:` whose rows are written when ` from instruction:` closes it.
struct OpenValue<'a> {
    line: u64,
    header: ValueRef<'a>,
    /// Rows already pushed into the positions/uses children (to roll back an unfinished block).
    positions_at: usize,
    uses_at: usize,
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    section: Section,
    allocation: Option<i64>,
    value: Option<OpenValue<'c>>,
    uses_initialized: bool,
    peak_time: i32,
    peak_running: i64,
    tree_rows: i32,
    /// (depth, row) of the open ancestors of the next tree line.
    tree_stack: Vec<(i32, i32)>,
    report_space: Option<(usize, usize, i32)>, // (name start, name len) in line, color
    report_space_name: Option<&'c [u8]>,
    report_table: i32,
    proto: ProtoReport<'c>,
}

/// State of the protobuf-text memory report (§2.8.3).
#[derive(Default)]
struct ProtoReport<'a> {
    depth: u32,
    color: i32,
    total: Option<(i64, u64)>,
    table: i32,
    entry: Option<ProtoEntry<'a>>,
}

#[derive(Default)]
struct ProtoEntry<'a> {
    line: u64,
    index: Option<i64>,
    size: i64,
    cumulative: Option<i64>,
    positions: Vec<&'a [u8]>,
}

/// Parse one buffer-assignment-family file (`data` is the whole file).
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let mut p = Parser {
        ctx,
        t,
        section: Section::None,
        allocation: None,
        value: None,
        uses_initialized: true,
        peak_time: 0,
        peak_running: 0,
        tree_rows: 0,
        tree_stack: Vec::new(),
        report_space: None,
        report_space_name: None,
        report_table: -1,
        proto: ProtoReport::default(),
    };
    for line in Lines::new(data) {
        if let Some(col) = line.bad_utf8 {
            p.ctx.error(&mut p.t.errors, &line, col, "invalid UTF-8")?;
            continue;
        }
        p.line(&line)?;
    }
    p.finish()
}

impl<'t, 'c> Parser<'t, 'c> {
    fn err(&mut self, line: &Line<'c>, col: u64, msg: impl Into<String>) -> Result<()> {
        self.ctx.error(&mut self.t.errors, line, col, msg)
    }

    fn line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        if s.is_empty() {
            return Ok(());
        }
        // Column-0 section headers decide the state wherever they appear.
        if s[0] != b' ' && s[0] != b'\t' {
            return self.top_level(line);
        }
        match self.section {
            Section::Allocations => self.value_line(line),
            Section::Values(_) => self.value_block_line(line),
            Section::LiveRange(_) => self.live_range_line(line),
            Section::Report => self.report_line(line),
            Section::ProtoReport => self.proto_line(line),
            Section::None => self.err(line, 1, "indented line outside any section"),
        }
    }

    fn top_level(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        if self.section == Section::ProtoReport {
            return self.proto_line(line);
        }
        if s.starts_with(b"allocation ") {
            self.close_value_block(line)?;
            self.section = Section::Allocations;
            return self.allocation_line(line);
        }
        if s[0] == b'<' {
            if let Section::Values(_) = self.section {
                return self.value_header(line, s);
            }
            return self.err(line, 1, "value block header outside 'Used values:'");
        }
        self.close_value_block(line)?;
        if s == b"BufferAssignment:" {
            self.section = Section::Allocations;
            self.allocation = None;
            Ok(())
        } else if let Some(rest) = s.strip_prefix(b"Total bytes used: ") {
            self.section = Section::None;
            self.total_line(line, rest, "buffer_assignment", "total_bytes_used", None)
        } else if s == b"Used values:" {
            self.section = Section::Values(ValueList::Header);
            Ok(())
        } else if let Some(rest) = s.strip_prefix(b"HloLiveRange (max ") {
            self.section = Section::LiveRange(LiveList::Top);
            match rest.strip_suffix(b"):").and_then(parse_nonneg) {
                Some(n) => {
                    self.total(line, "live_range", "max", None, n);
                    Ok(())
                }
                None => self.err(line, 19, "expected 'HloLiveRange (max N):'"),
            }
        } else if s.starts_with(b"HloLiveRange not available") {
            self.section = Section::None;
            self.total(line, "live_range", "not_available", None, 0);
            Ok(())
        } else if let Some(rest) = s.strip_prefix(b"Memory Space: ") {
            self.section = Section::Report;
            self.memory_space(line, rest)
        } else if let Some(rest) = s.strip_prefix(b"Total bytes: ") {
            if self.section != Section::Report {
                return self.err(line, 1, "'Total bytes:' outside a memory-usage report");
            }
            let color = self.report_space.map(|x| x.2);
            self.total_line(line, rest, "memory_report", "total_bytes", color)
        } else if s == b"memory_space_allocation_entries {" {
            self.section = Section::ProtoReport;
            self.proto_line(line)
        } else {
            self.err(line, 1, "unrecognised line (expected a buffer-assignment, values, live-range or memory-report line)")
        }
    }

    fn total(&mut self, line: &Line<'c>, section: &str, key: &str, color: Option<i32>, value: i64) {
        let t = &mut self.t.totals;
        t.file_id.push(self.ctx.file_id);
        t.section.push(section);
        t.key.push(key);
        t.color.push(color);
        t.value.push(value);
        t.line.push(line.no as i64);
    }

    /// `N (HUMAN)` after a `Total bytes…: ` prefix.
    fn total_line(&mut self, line: &Line<'c>, rest: &[u8], section: &str, key: &str, color: Option<i32>) -> Result<()> {
        let n = split_once(rest, b" (").and_then(|(n, h)| {
            let h = h.strip_suffix(b")")?;
            human_bytes(h)?;
            parse_nonneg(n)
        });
        match n {
            Some(n) => {
                self.total(line, section, key, color, n);
                Ok(())
            }
            None => self.err(line, column_of(line.text, rest), "expected 'N (human-readable size)'"),
        }
    }

    // ------------------------------------------------------------------ allocations (§2.2)

    fn allocation_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        let body = &s[b"allocation ".len()..];
        let Some((index, rest)) = split_once(body, b": size ") else {
            return self.err(line, 12, "expected 'allocation N: size S…:'");
        };
        let Some(index) = parse_nonneg(index) else {
            return self.err(line, 12, "expected an allocation number");
        };
        let Some(rest) = rest.strip_suffix(b":") else {
            return self.err(line, s.len() as u64 + 1, "expected ':' at the end of the allocation line");
        };
        let size_end = memchr::memchr(b',', rest).unwrap_or(rest.len());
        let size_text = &rest[..size_end];
        let Some(size) = parse_nonneg(size_text).or_else(|| human_bytes(size_text)) else {
            return self.err(line, column_of(s, size_text), "expected the allocation size in bytes");
        };
        let flags = &rest[size_end..];
        let f = parse_flags(flags);
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
        a.parameter_shape_index.push_opt(&src, f.parameter.map(|p| p.2));
        a.output_shape.push_opt(&src, f.output_shape);
        a.flags.push(&src, flags);
        a.line.push(line.no as i64);
        self.allocation = Some(index);
        Ok(())
    }

    /// ` value: <REF> (size=S,offset=O): SHAPE` under an allocation.
    fn value_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        let Some(rest) = s.strip_prefix(b" value: ") else {
            return self.err(line, 1, "expected ' value: <…>' under an allocation");
        };
        let Some(allocation) = self.allocation else {
            return self.err(line, 1, "value line before any allocation line");
        };
        let (r, used) = match ValueRef::parse(rest) {
            Ok(x) => x,
            Err(off) => return self.err(line, column_of(s, rest) + off as u64, "expected a value reference '<ID NAME[{INDEX}][ (phi)][ @COLOR]>'"),
        };
        let rest = &rest[used..];
        let parsed = (|| {
            let rest = rest.strip_prefix(b" (size=")?;
            let (size, rest) = split_once(rest, b",offset=")?;
            let (offset, shape) = split_once(rest, b"): ")?;
            Some((parse_nonneg(size)?, parse_nonneg(offset)?, shape))
        })();
        let Some((size, offset, shape)) = parsed else {
            return self.err(line, column_of(s, rest), "expected ' (size=S,offset=O): SHAPE'");
        };
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
        a.line.push(line.no as i64);
        Ok(())
    }

    // ------------------------------------------------------------------ used values (§2.5)

    fn value_header(&mut self, line: &Line<'c>, s: &'c [u8]) -> Result<()> {
        if self.value.is_some() {
            self.abandon_value_block(line, "value block ended without ' from instruction:'")?;
        }
        let (r, used) = match ValueRef::parse(s) {
            Ok(x) => x,
            Err(off) => return self.err(line, column_of(line.text, s) + off as u64, "expected a value header '<ID NAME[{INDEX}][ (phi)][ @COLOR]>'"),
        };
        if used != s.len() {
            return self.err(line, column_of(line.text, s) + used as u64, "unexpected text after the value header");
        }
        let v = &self.t.values;
        self.value = Some(OpenValue {
            line: line.no,
            header: r,
            positions_at: v.positions.items.instruction.0.len(),
            uses_at: v.uses.items.instruction.0.len(),
        });
        self.uses_initialized = true;
        self.section = Section::Values(ValueList::Header);
        Ok(())
    }

    fn value_block_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        let Section::Values(list) = self.section else { unreachable!() };
        if self.value.is_none() {
            return self.err(line, 1, "line of a value block before its '<…>' header");
        }
        if s == b" positions:" {
            self.section = Section::Values(ValueList::Positions);
            return Ok(());
        }
        if s == b" uses:" {
            self.section = Section::Values(ValueList::Uses);
            return Ok(());
        }
        if s == b" uses are not initialized yet." {
            self.uses_initialized = false;
            self.section = Section::Values(ValueList::Uses);
            return Ok(());
        }
        if let Some(rest) = s.strip_prefix(b" from instruction:") {
            return self.from_instruction(line, rest);
        }
        let Some(item) = s.strip_prefix(b"  ") else {
            return self.err(line, 1, "expected ' positions:', ' uses:', ' from instruction:' or a two-space item");
        };
        let src = self.ctx.src;
        match list {
            ValueList::Positions => {
                let (name, index) = match split_once(item, b" ") {
                    Some((n, i)) => (n, i),
                    None => (item, &b""[..]),
                };
                if name.is_empty() || !(index.is_empty() || is_shape_index(index)) {
                    return self.err(line, 3, "expected a position 'NAME[ {INDEX}]'");
                }
                let p = &mut self.t.values.positions.items;
                p.instruction.push(&src, name);
                p.shape_index.push(&src, index);
                Ok(())
            }
            ValueList::Uses => {
                if item == b"(none)" {
                    return Ok(());
                }
                let parsed = split_once(item, b", operand ").and_then(|(name, rest)| {
                    let (n, index) = match split_once(rest, b" ") {
                        Some((n, i)) => (n, i),
                        None => (rest, &b""[..]),
                    };
                    let n = i32::try_from(parse_u64(n)?).ok()?;
                    if name.is_empty() || !(index.is_empty() || is_shape_index(index)) {
                        return None;
                    }
                    Some((name, n, index))
                });
                let Some((name, n, index)) = parsed else {
                    return self.err(line, 3, "expected a use 'NAME, operand N[ {INDEX}]'");
                };
                let u = &mut self.t.values.uses.items;
                u.instruction.push(&src, name);
                u.operand.push(n);
                u.shape_index.push(&src, index);
                Ok(())
            }
            ValueList::Header => self.err(line, 1, "expected ' positions:' after the value header"),
        }
    }

    /// ` from instruction: TEXT` closes the block. Old XLA forgot the newline after TEXT, so the
    /// next block's `<…>` header may be glued to the end of the line: split it off.
    fn from_instruction(&mut self, line: &Line<'c>, rest: &'c [u8]) -> Result<()> {
        let rest = rest.strip_prefix(b" ").unwrap_or(rest);
        let (text, glued) = split_glued_header(rest);
        let open = self.value.take().expect("a value block is open here");
        let (r, src) = (open.header, self.ctx.src);
        let v = &mut self.t.values;
        v.file_id.push(self.ctx.file_id);
        v.value_id.push(r.id);
        v.instruction.push(&src, r.name);
        v.shape_index.push(&src, r.index);
        v.is_phi.push(r.phi);
        v.color.push(r.color);
        v.line.push(open.line as i64);
        v.defining_instruction.push(&src, text);
        // The defining instruction's opcode and op_name come from the HLO instruction parser.
        let parsed = crate::hlo::instruction_summary(text);
        v.defining_opcode.push_opt(&src, parsed.as_ref().map(|p| p.0));
        v.defining_op_name.push_opt(&src, parsed.as_ref().and_then(|p| p.1.as_deref()));
        v.uses_initialized.push(self.uses_initialized);
        v.positions.end_row();
        v.uses.end_row();
        self.section = Section::Values(ValueList::Header);
        match glued {
            Some(h) => self.value_header(line, h),
            None => Ok(()),
        }
    }

    fn close_value_block(&mut self, line: &Line<'c>) -> Result<()> {
        if self.value.is_some() {
            self.abandon_value_block(line, "value block ended without ' from instruction:'")?;
        }
        Ok(())
    }

    /// Drop the rows of an unfinished value block (reported at its header line).
    fn abandon_value_block(&mut self, _line: &Line<'c>, msg: &str) -> Result<()> {
        let open = self.value.take().expect("an open value block");
        let v = &mut self.t.values;
        truncate_values_row(v, open.positions_at, open.uses_at);
        self.ctx.error_at(&mut self.t.errors, open.line, 1, msg.to_string(), b"")
    }

    // ------------------------------------------------------------------ live range (§2.6–2.7)

    fn live_range_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        match s {
            b"  InstructionSequence:" => return self.set_live(LiveList::Sequence),
            b"  BufferLiveRange:" => return self.set_live(LiveList::Buffers),
            b"  Peak memory could not be determined due to unbounded dynamic shape." => {
                self.total(line, "live_range", "peak_unbounded", None, 0);
                return self.set_live(LiveList::Top);
            }
            _ => {}
        }
        if let Some(rest) = s.strip_prefix(b"  Live ranges at ") {
            let Some(t) = rest.strip_suffix(b" (peak):").and_then(parse_nonneg).and_then(|t| i32::try_from(t).ok()) else {
                return self.err(line, 18, "expected '  Live ranges at T (peak):'");
            };
            self.total(line, "live_range", "peak_time", None, t as i64);
            self.peak_time = t;
            self.peak_running = 0;
            return self.set_live(LiveList::Peak);
        }
        if let Some(rest) = s.strip_prefix(b"  Stack trace breakdown for peak usage: ") {
            let Some(n) = rest.strip_suffix(b" bytes").and_then(parse_grouped) else {
                return self.err(line, 41, "expected '… peak usage: N bytes'");
            };
            self.total(line, "peak_breakdown", "total", None, n);
            self.tree_rows = 0;
            self.tree_stack.clear();
            return self.set_live(LiveList::Tree);
        }
        let Section::LiveRange(list) = self.section else { unreachable!() };
        match list {
            LiveList::Sequence => self.schedule_line(line),
            LiveList::Buffers => self.buffer_live_range(line),
            LiveList::Peak => self.peak_line(line),
            LiveList::Tree => self.tree_line(line),
            LiveList::Top => self.err(line, 1, "expected a live-range sub-header"),
        }
    }

    fn set_live(&mut self, l: LiveList) -> Result<()> {
        self.section = Section::LiveRange(l);
        Ok(())
    }

    fn schedule_line(&mut self, line: &Line<'c>) -> Result<()> {
        let parsed = line.text.strip_prefix(b"    ").and_then(|r| split_once(r, b":")).and_then(|(n, name)| {
            let n = i32::try_from(parse_u64(n)?).ok()?;
            (!name.is_empty()).then_some((n, name))
        });
        let Some((n, name)) = parsed else {
            return self.err(line, 5, "expected '    N:NAME' in InstructionSequence");
        };
        let src = self.ctx.src;
        let t = &mut self.t.schedule;
        t.file_id.push(self.ctx.file_id);
        t.position.push(n);
        t.instruction.push(&src, name);
        t.line.push(line.no as i64);
        Ok(())
    }

    fn buffer_live_range(&mut self, line: &Line<'c>) -> Result<()> {
        let parsed = line.text.strip_prefix(b"    ").and_then(|r| {
            let colon = memchr::memrchr(b':', r)?;
            let (buffer, range) = (&r[..colon], &r[colon + 1..]);
            let (a, b) = split_once(range, b"-")?;
            let (name, index) = split_buffer_name(buffer)?;
            Some((buffer, name, index, i32::try_from(parse_u64(a)?).ok()?, i32::try_from(parse_u64(b)?).ok()?))
        });
        let Some((buffer, name, index, start, end)) = parsed else {
            return self.err(line, 5, "expected '    NAME{INDEX}:START-END' in BufferLiveRange");
        };
        let src = self.ctx.src;
        let t = &mut self.t.live_ranges;
        t.file_id.push(self.ctx.file_id);
        t.buffer.push(&src, buffer);
        t.instruction.push(&src, name);
        t.shape_index.push(&src, index);
        t.start.push(start);
        t.end.push(end);
        t.line.push(line.no as i64);
        Ok(())
    }

    /// `    NAME{IDX}: B bytes (cumulative: C bytes)` or, in old XLA, `    NAME: B bytes`.
    fn peak_line(&mut self, line: &Line<'c>) -> Result<()> {
        let parsed = line.text.strip_prefix(b"    ").and_then(|r| {
            let (buffer, rest) = split_once(r, b": ")?;
            let (bytes, cumulative) = match split_once(rest, b" bytes (cumulative: ") {
                Some((b, c)) => (b, Some(parse_nonneg(c.strip_suffix(b" bytes)")?)?)),
                None => (rest.strip_suffix(b" bytes")?, None),
            };
            let (name, index) = if buffer.last() == Some(&b'}') { split_buffer_name(buffer)? } else { (buffer, &b""[..]) };
            Some((buffer, name, index, parse_nonneg(bytes)?, cumulative))
        });
        let Some((buffer, name, index, bytes, cumulative)) = parsed else {
            return self.err(line, 5, "expected '    NAME{INDEX}: B bytes (cumulative: C bytes)' in the peak list");
        };
        self.peak_running += bytes;
        let src = self.ctx.src;
        let t = &mut self.t.peak;
        t.file_id.push(self.ctx.file_id);
        t.time.push(self.peak_time);
        t.buffer.push(&src, buffer);
        t.instruction.push(&src, name);
        t.shape_index.push(&src, index);
        t.bytes.push(bytes);
        t.cumulative_bytes.push(cumulative.unwrap_or(self.peak_running));
        t.cumulative_is_printed.push(cumulative.is_some());
        t.line.push(line.no as i64);
        Ok(())
    }

    /// A line of the stack-trace tree: `LEAD LABEL (P%, total: T bytes, current: C bytes,
    /// remaining: R bytes)`; the depth comes from the lead's width in characters.
    fn tree_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        let Some(parsed) = parse_tree_line(s) else {
            return self.err(line, 1, "expected a stack-trace tree line 'LABEL (P%, total: … bytes, current: … bytes, remaining: … bytes)'");
        };
        let (depth, label, pct, total, current, remaining) = parsed;
        while let Some(&(d, _)) = self.tree_stack.last() {
            if d >= depth {
                self.tree_stack.pop();
            } else {
                break;
            }
        }
        let parent = self.tree_stack.last().filter(|(d, _)| *d == depth - 1).map(|&(_, r)| r);
        if depth > 0 && parent.is_none() {
            return self.err(line, 1, "tree line deeper than its parent allows");
        }
        let row = self.tree_rows;
        self.tree_rows += 1;
        self.tree_stack.push((depth, row));
        let src = self.ctx.src;
        let t = &mut self.t.peak_breakdown;
        t.file_id.push(self.ctx.file_id);
        t.row.push(row);
        t.parent_row.push(parent);
        t.depth.push(depth);
        t.label.push(&src, label);
        t.percent.push(pct);
        t.total_bytes.push(total);
        t.current_bytes.push(current);
        t.remaining_bytes.push(remaining);
        t.line.push(line.no as i64);
        Ok(())
    }

    // ------------------------------------------------------------------ memory report (§2.8)

    fn memory_space(&mut self, line: &Line<'c>, rest: &'c [u8]) -> Result<()> {
        let parsed = rest.strip_suffix(b")").and_then(|r| {
            let at = rfind(r, b" (color=")?;
            let color = i32::try_from(parse_u64(&r[at + 8..])?).ok()?;
            Some((&r[..at], color))
        });
        let Some((name, color)) = parsed else {
            return self.err(line, 15, "expected 'Memory Space: NAME (color=C)'");
        };
        self.report_space = Some((0, 0, color));
        self.report_space_name = Some(name);
        self.report_table = -1;
        Ok(())
    }

    fn report_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = line.text;
        if s.starts_with(b"  cumulative_size;") {
            self.report_table += 1;
            return Ok(());
        }
        if s.len() > 2 && s[2..].iter().all(|&b| b == b'-') && s.starts_with(b"  -") {
            return Ok(());
        }
        if let Some(rest) = s.strip_prefix(b"  The rest ") {
            let parsed = split_once(rest, b" values are less than ").and_then(|(n, r)| {
                let p = r.strip_suffix(b"% of the total size and not shown.")?;
                Some((parse_nonneg(n)?, parse_nonneg(p)?))
            });
            let Some((n, p)) = parsed else {
                return self.err(line, 12, "expected '  The rest N values are less than P% of the total size and not shown.'");
            };
            let color = self.report_space.map(|x| x.2);
            self.total(line, "memory_report", "rest_values", color, n);
            self.total(line, "memory_report", "rest_percent", color, p);
            return Ok(());
        }
        if self.report_table < 0 {
            return self.err(line, 1, "memory-report row before its table header");
        }
        let Some(row) = parse_report_row(s) else {
            return self.err(line, 1, "expected a memory-report row 'CUM(P%); SIZE; OFFSET; N; SHAPES'");
        };
        let src = self.ctx.src;
        let name = self.report_space_name;
        let color = self.report_space.map(|x| x.2);
        let t = &mut self.t.memory_report;
        t.file_id.push(self.ctx.file_id);
        t.memory_space.push_opt(&src, name);
        t.color.push(color);
        t.table.push(self.report_table);
        t.allocation.push(None);
        t.cumulative_bytes.push(Some(row.cumulative));
        t.percent.push(Some(row.percent));
        t.size.push(row.size);
        t.offset.push(row.offset);
        t.used_by_n_values.push(row.n);
        t.shapes.push(&src, row.shapes);
        t.line.push(line.no as i64);
        Ok(())
    }

    /// The protobuf-text report: `memory_space_allocation_entries { … allocation_entries { … } }`.
    fn proto_line(&mut self, line: &Line<'c>) -> Result<()> {
        let s = trim_start(line.text);
        let depth = self.proto.depth;
        if s.ends_with(b" {") {
            let name = &s[..s.len() - 2];
            match (depth, name) {
                (0, b"memory_space_allocation_entries") => {
                    self.proto = ProtoReport { depth: 1, ..Default::default() };
                }
                (1, b"allocation_entries") => {
                    self.proto.depth = 2;
                    self.proto.entry = Some(ProtoEntry { line: line.no, ..Default::default() });
                }
                _ => return self.err(line, 1, "unexpected message in the protobuf-text memory report"),
            }
            return Ok(());
        }
        if s == b"}" {
            match depth {
                2 => self.proto_entry_done(line),
                1 => {
                    self.proto.depth = 0;
                    if let Some((total, at)) = self.proto.total.take() {
                        let l = Line { no: at, ..*line };
                        self.total(&l, "memory_report", "total_bytes", Some(self.proto.color), total);
                    }
                    self.section = Section::None;
                }
                _ => return self.err(line, 1, "unbalanced '}' in the protobuf-text memory report"),
            }
            return Ok(());
        }
        let Some((key, value)) = split_once(s, b": ") else {
            return self.err(line, 1, "expected 'key: value' in the protobuf-text memory report");
        };
        let ok = match (depth, key) {
            (1, b"total_bytes") => parse_nonneg(value).map(|v| self.proto.total = Some((v, line.no))).is_some(),
            (1, b"memory_space_color") => parse_u64(value).and_then(|v| i32::try_from(v).ok()).map(|c| self.proto.color = c).is_some(),
            (2, _) => {
                let e = self.proto.entry.as_mut().expect("open entry at depth 2");
                match key {
                    b"index" => parse_nonneg(value).map(|v| e.index = Some(v)).is_some(),
                    b"size" => parse_nonneg(value).map(|v| e.size = v).is_some(),
                    b"cumulative_size" => parse_nonneg(value).map(|v| e.cumulative = Some(v)).is_some(),
                    b"cumulative_percentage" => true,
                    b"defining_positions" => match value.strip_prefix(b"\"").and_then(|v| v.strip_suffix(b"\"")) {
                        Some(v) => {
                            e.positions.push(v);
                            true
                        }
                        None => false,
                    },
                    _ => true, // unknown fields of newer revisions: tolerated
                }
            }
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            self.err(line, column_of(line.text, value), "unexpected value in the protobuf-text memory report")
        }
    }

    fn proto_entry_done(&mut self, _line: &Line<'c>) {
        self.proto.depth = 1;
        let e = self.proto.entry.take().expect("open entry");
        let shapes: Vec<u8> = e.positions.join(&b"; "[..]);
        let t = &mut self.t.memory_report;
        t.file_id.push(self.ctx.file_id);
        t.memory_space.push_null();
        t.color.push(Some(self.proto.color));
        t.table.push(self.proto.table);
        t.allocation.push(e.index);
        t.cumulative_bytes.push(e.cumulative);
        t.percent.push(None);
        t.size.push(e.size);
        t.offset.push(0);
        t.used_by_n_values.push(e.positions.len() as i32);
        t.shapes.push_owned(&shapes);
        t.line.push(e.line as i64);
        self.proto.table += 1;
    }

    fn finish(mut self) -> Result<()> {
        if let Some(open) = self.value.take() {
            truncate_values_row(&mut self.t.values, open.positions_at, open.uses_at);
            let msg = "file ended inside a value block (no ' from instruction:')".to_string();
            self.ctx.error_at(&mut self.t.errors, open.line, 1, msg, b"")?;
        }
        if self.section == Section::ProtoReport && self.proto.depth > 0 {
            let msg = "file ended inside the protobuf-text memory report".to_string();
            self.ctx.error_at(&mut self.t.errors, 0, 1, msg, b"")?;
        }
        Ok(())
    }
}

/// Forget the position/use items of an unfinished value block (its row was never written).
fn truncate_values_row(v: &mut crate::tables::Values, positions_at: usize, uses_at: usize) {
    v.positions.items.instruction.0.truncate(positions_at);
    v.positions.items.shape_index.0.truncate(positions_at);
    v.uses.items.instruction.0.truncate(uses_at);
    v.uses.items.operand.0.truncate(uses_at);
    v.uses.items.shape_index.0.truncate(uses_at);
}

// ---------------------------------------------------------------------------- small grammars

/// `<ID NAME[{INDEX}][ (phi)][ @COLOR]>`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef<'a> {
    pub id: i64,
    pub name: &'a [u8],
    /// `{…}` as printed, or empty when not printed.
    pub index: &'a [u8],
    pub phi: bool,
    pub color: i32,
}

impl<'a> ValueRef<'a> {
    /// Parse a value reference at the start of `s`; returns it and the bytes used, or the
    /// offset where it goes wrong.
    pub fn parse(s: &'a [u8]) -> std::result::Result<(ValueRef<'a>, usize), usize> {
        if s.first() != Some(&b'<') {
            return Err(0);
        }
        let sp = memchr::memchr(b' ', s).ok_or(1usize)?;
        let id = parse_nonneg(&s[1..sp]).ok_or(1usize)?;
        let mut i = sp + 1;
        let name_start = i;
        while i < s.len() && !matches!(s[i], b'{' | b' ' | b'>') {
            i += 1;
        }
        if i == name_start {
            return Err(i);
        }
        let name = &s[name_start..i];
        let mut index = &s[i..i];
        if s.get(i) == Some(&b'{') {
            let close = memchr::memchr(b'}', &s[i..]).ok_or(i)? + i;
            index = &s[i..=close];
            if !is_shape_index(index) {
                return Err(i);
            }
            i = close + 1;
        }
        let mut phi = false;
        if s[i..].starts_with(b" (phi)") {
            phi = true;
            i += 6;
        }
        let mut color = 0;
        if s[i..].starts_with(b" @") {
            let start = i + 2;
            let mut j = start;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            color = parse_u64(&s[start..j]).and_then(|c| i32::try_from(c).ok()).ok_or(start)?;
            i = j;
        }
        if s.get(i) != Some(&b'>') {
            return Err(i);
        }
        Ok((ValueRef { id, name, index, phi, color }, i + 1))
    }
}

/// `{}` / `{1}` / `{0,2}`
pub fn is_shape_index(s: &[u8]) -> bool {
    let Some(inner) = s.strip_prefix(b"{").and_then(|s| s.strip_suffix(b"}")) else {
        return false;
    };
    inner.is_empty() || inner.split(|&b| b == b',').all(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit))
}

/// `NAME{INDEX}` → (NAME, {INDEX}); names never contain `{`.
fn split_buffer_name(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let open = memchr::memrchr(b'{', b)?;
    let (name, index) = b.split_at(open);
    (!name.is_empty() && is_shape_index(index)).then_some((name, index))
}

/// If `text` ends with a value header glued on by old XLA, split it off.
fn split_glued_header(text: &[u8]) -> (&[u8], Option<&[u8]>) {
    if text.last() != Some(&b'>') {
        return (text, None);
    }
    let mut end = text.len();
    while let Some(lt) = memchr::memrchr(b'<', &text[..end]) {
        if let Ok((_, used)) = ValueRef::parse(&text[lt..]) {
            if lt + used == text.len() && lt > 0 {
                return (&text[..lt], Some(&text[lt..]));
            }
        }
        end = lt;
    }
    (text, None)
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ').count();
    &s[n..]
}

struct ReportRow<'a> {
    cumulative: i64,
    percent: i32,
    size: i64,
    offset: i64,
    n: i32,
    shapes: &'a [u8],
}

/// `  CUM(PPP%); SIZE; OFFSET; N; SHAPES` — fields right-aligned, so split on "; ".
fn parse_report_row(s: &[u8]) -> Option<ReportRow<'_>> {
    let (cum, rest) = split_once(s, b"; ")?;
    let (size, rest) = split_once(rest, b"; ")?;
    let (offset, rest) = split_once(rest, b"; ")?;
    let (n, shapes) = split_once(rest, b"; ")?;
    let cum = trim_start(cum);
    let open = memchr::memchr(b'(', cum)?;
    let pct = cum[open + 1..].strip_suffix(b"%)")?;
    Some(ReportRow {
        cumulative: human_bytes(&cum[..open])?,
        percent: i32::try_from(parse_u64(trim_start(pct))?).ok()?,
        size: human_bytes(trim_start(size))?,
        offset: parse_nonneg(trim_start(offset))?,
        n: i32::try_from(parse_u64(trim_start(n))?).ok()?,
        shapes,
    })
}

type TreeLine<'a> = (i32, &'a [u8], f64, i64, i64, i64);

fn parse_tree_line(s: &[u8]) -> Option<TreeLine<'_>> {
    let body = s.strip_suffix(b" bytes)")?;
    // The figures group: the last " (" followed by "D.D%, total: ".
    let mut end = body.len();
    let (open, figures) = loop {
        let open = rfind(&body[..end], b" (")?;
        let f = &body[open + 2..];
        if f.first().is_some_and(u8::is_ascii_digit) && find(f, b"%, total: ", 0).is_some() {
            break (open, f);
        }
        end = open;
    };
    let (pct, rest) = split_once(figures, b"%, total: ")?;
    let (total, rest) = split_once(rest, b" bytes, current: ")?;
    let (current, remaining) = split_once(rest, b" bytes, remaining: ")?;
    let pct: f64 = std::str::from_utf8(pct).ok()?.parse().ok()?;
    if !pct.is_finite() || !pct_is_decimal(figures) {
        return None;
    }
    let head = &body[..open];
    // Lead: spaces and '│', then an optional connector "├── " / "└── "; count characters.
    let mut i = 0;
    let mut chars = 0usize;
    let mut connector = false;
    loop {
        if head[i..].starts_with(b" ") {
            i += 1;
        } else if head[i..].starts_with("│".as_bytes()) {
            i += 3;
        } else if head[i..].starts_with("├── ".as_bytes()) || head[i..].starts_with("└── ".as_bytes()) {
            i += "├── ".len();
            chars += 4;
            connector = true;
            break;
        } else {
            break;
        }
        chars += 1;
    }
    let label = &head[i..];
    if label.is_empty() {
        return None;
    }
    let depth = if connector {
        if chars < 10 || (chars - 6) % 4 != 0 {
            return None;
        }
        ((chars - 6) / 4) as i32
    } else {
        if chars != 4 {
            return None;
        }
        0
    };
    Some((depth, label, pct, parse_grouped(total)?, parse_grouped(current)?, parse_grouped(remaining)?))
}

/// The percentage is printed `%.1f`: digits, a point, one digit.
fn pct_is_decimal(figures: &[u8]) -> bool {
    let Some(end) = find(figures, b"%", 0) else { return false };
    let p = &figures[..end];
    match memchr::memchr(b'.', p) {
        Some(dot) => dot > 0 && p[..dot].iter().all(u8::is_ascii_digit) && p.len() - dot == 2 && p[dot + 1].is_ascii_digit(),
        None => false,
    }
}

struct Flags<'a> {
    color: i32,
    parameter: Option<(i64, &'a [u8], &'a [u8])>,
    output_shape: Option<&'a [u8]>,
    constant: bool,
    thread_local: bool,
    maybe_live_out: bool,
    preallocated_temp: bool,
}

/// The `, flag` list of an allocation line. Shapes between bars can contain ", ", so bars are
/// matched first. Unknown flags are tolerated: they stay in the raw `flags` column.
fn parse_flags(mut s: &[u8]) -> Flags<'_> {
    let mut f = Flags { color: 0, parameter: None, output_shape: None, constant: false, thread_local: false, maybe_live_out: false, preallocated_temp: false };
    while let Some(rest) = s.strip_prefix(b", ") {
        let (item, next) = next_flag(rest);
        s = next;
        if let Some(c) = item.strip_prefix(b"color ") {
            f.color = parse_u64(c).and_then(|c| i32::try_from(c).ok()).unwrap_or(0);
        } else if let Some(p) = item.strip_prefix(b"parameter ") {
            f.parameter = (|| {
                let (n, rest) = split_once(p, b", shape |")?;
                let bar = memchr::memchr(b'|', rest)?;
                let index = rest[bar + 1..].strip_prefix(b" at ShapeIndex ")?;
                Some((parse_nonneg(n)?, &rest[..bar], index))
            })();
        } else if let Some(o) = item.strip_prefix(b"output shape is |") {
            f.output_shape = o.strip_suffix(b"|");
        } else {
            match item {
                b"constant" => f.constant = true,
                b"thread-local" => f.thread_local = true,
                b"maybe-live-out" => f.maybe_live_out = true,
                b"preallocated-temp" => f.preallocated_temp = true,
                _ => {}
            }
        }
    }
    f
}

/// One flag from `s` (after its ", "): up to the next ", " outside `|…|` bars.
fn next_flag(s: &[u8]) -> (&[u8], &[u8]) {
    let mut in_bars = false;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'|' => in_bars = !in_bars,
            b',' if !in_bars && s.get(i + 1) == Some(&b' ') => {
                // `parameter N, shape |…|` keeps its inner ", shape" together.
                if !s[i..].starts_with(b", shape |") {
                    return (&s[..i], &s[i..]);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (s, &s[s.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_refs() {
        let (r, n) = ValueRef::parse(b"<131 arg_tuple.5{1} (phi) @2> rest").unwrap();
        assert_eq!((r.id, r.name, r.index, r.phi, r.color, n), (131, &b"arg_tuple.5"[..], &b"{1}"[..], true, 2, 29));
        let (r, _) = ValueRef::parse(b"<5 add.35 @0>").unwrap();
        assert_eq!((r.name, r.index, r.phi), (&b"add.35"[..], &b""[..], false));
        assert!(ValueRef::parse(b"<x add>").is_err());
    }

    #[test]
    fn glued_headers_split_off() {
        let (t, h) = split_glued_header(b"%a = f32[] parameter(0)<1 Arg_1.12 @0>");
        assert_eq!((t, h), (&b"%a = f32[] parameter(0)"[..], Some(&b"<1 Arg_1.12 @0>"[..])));
        let (t, h) = split_glued_header(b"%c = f32[] custom-call(), frontend_attributes={a=\"<x>\"}");
        assert!(h.is_none() && t.ends_with(b"}"));
    }

    #[test]
    fn flags_with_bars() {
        let f = parse_flags(b", parameter 2, shape |(f32[], f32[2])| at ShapeIndex {1}, output shape is |(f32[], s32[])|, maybe-live-out");
        assert_eq!(f.parameter, Some((2, &b"(f32[], f32[2])"[..], &b"{1}"[..])));
        assert_eq!(f.output_shape, Some(&b"(f32[], s32[])"[..]));
        assert!(f.maybe_live_out && !f.constant);
        assert_eq!(parse_flags(b", color 2, preallocated-temp").color, 2);
    }

    #[test]
    fn tree_lines() {
        let l = "      │   └── while.5_computation (95.3%, total: 241 bytes, current: 0 bytes, remaining: 253 bytes)";
        let (d, label, pct, t, c, r) = parse_tree_line(l.as_bytes()).unwrap();
        assert_eq!((d, label, pct, t, c, r), (2, &b"while.5_computation"[..], 95.3, 241, 0, 253));
        let l = "    main.31 (100.0%, total: 97 587 208 bytes, current: 0 bytes, remaining: 97 587 208 bytes)";
        assert_eq!(parse_tree_line(l.as_bytes()).unwrap().0, 0);
        let l = "      ├── f (x) (1.0%) (30.1%, total: 4 bytes, current: 4 bytes, remaining: 0 bytes)";
        assert_eq!(parse_tree_line(l.as_bytes()).unwrap().1, b"f (x) (1.0%)");
    }

    #[test]
    fn report_rows() {
        let r = parse_report_row(b"   20.00MiB( 25%);    4.00MiB;     37748736;                4; 2\xc3\x97f32[1024,1024], 2\xc3\x97f32[1024,256]").unwrap();
        assert_eq!((r.cumulative, r.percent, r.size, r.offset, r.n), (20 << 20, 25, 4 << 20, 37748736, 4));
    }
}
