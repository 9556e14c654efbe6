//! `HloLiveRange` (§2.6, §2.7): the schedule, live ranges, the peak and its stack-trace
//! breakdown tree.

#![allow(unused_imports)]
use super::*;
use super::values::*;
use crate::lex::{bad, grouped_end, grouped_value, is_name_start, Cur, I32_MAX, I64_MAX, R};

impl<'t, 'c> Parser<'t, 'c> {
    // ------------------------------------------------------------------ HloLiveRange (§2.6)

    pub(super) fn live_range_header(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
        self.checks.live_range_max(no, max);
        self.sequence = Some(Sequence { max, header_no: no, header: text, count: 0, listed: false });
        Ok(())
    }

    pub(super) fn live_range_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
    pub(super) fn peak_header(&mut self, no: u64, text: &[u8]) -> R<()> {
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

    pub(super) fn schedule_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
        t.line.push(no as i32);
        self.checks.scheduled();
        if let Some(seq) = &mut self.sequence {
            seq.count += 1;
        }
        Ok(())
    }

    pub(super) fn buffer_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
        t.line.push(no as i32);
        Ok(())
    }

    pub(super) fn peak_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
        t.line.push(no as i32);
        Ok(())
    }

    pub(super) fn tree_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
        t.line.push(no as i32);
        self.tree_rows = self.tree_rows.wrapping_add(1);
        Ok(())
    }

    /// The open tree's stack (only tree lines ask, and they come only in the tree).
    pub(super) fn tree_stack(&mut self) -> &mut Vec<i32> {
        let State::LiveRange(Live::Tree { stack }) = &mut self.state else { unreachable!("a tree line outside the tree") };
        stack
    }
}

/// `  cumulative_size; +size; +offset; +used_by_n_values; +shapes_list` (whole line).
pub(super) struct TreeTail {
    pub(super) start: usize,
    pub(super) pct: (usize, usize),
    pub(super) groups: [(usize, usize); 3],
}

/// The leftmost ` (P%, total: G bytes, current: G bytes, remaining: G bytes)` that ends the line.
pub(super) fn tree_tail(t: &[u8]) -> Option<TreeTail> {
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

pub(super) fn tree_tail_at(t: &[u8], start: usize) -> Option<TreeTail> {
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
pub(super) fn tree_depth(head: &[u8]) -> R<(usize, usize)> {
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

