//! Allocations of buffer assignment (§2.2, §2.3): the `allocation` lines (their grammar is
//! shared with the memory-usage report: `crate::allocation_line`) and the value lines under them.

#![allow(unused_imports)]
use super::*;
use crate::allocation_line::{allocation_line, bar_text, AllocationLine, SizeForm};
use super::values::*;
use super::live_range::*;
use crate::lex::{bad, grouped_end, grouped_value, is_name_start, Cur, I32_MAX, I64_MAX, R};

/// The header of a block XLA 2026 prints after an allocation's values.
const REUSED_BY_OTHER_COLOR: &[u8] = b" reused by buffers of a different color:";

impl<'t, 'c> Parser<'t, 'c> {
    // ------------------------------------------------------------------ allocations (§2.2, §2.3)

    pub(super) fn allocations_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        if text.starts_with(b"allocation ") {
            self.allocation_line(no, text)
        } else if text.starts_with(b" value: ") {
            self.value_line(no, text)
        } else if text.starts_with(b"  value: ") {
            self.reused_value_line(text)
        } else if text.starts_with(REUSED_BY_OTHER_COLOR) {
            self.reused_by_other_color(no, text)
        } else {
            bad(0, "expected 'allocation N: size S…:' or ' value: <…> (size=…,offset=…): SHAPE' in the BufferAssignment section")
        }
    }

    /// ` reused by buffers of a different color:` (XLA 2026: a preallocated temp buffer of a
    /// color other than 0 that also holds values of other colors), after an allocation's value
    /// lines: its `  value: <…> (color=N)` lines are not read into a table yet; one note per
    /// file says so.
    fn reused_by_other_color(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let State::Allocations { current, broken, reused } = self.state else { unreachable!("a BufferAssignment line outside it") };
        if current.is_none() && !broken {
            return bad(0, "' reused by buffers of a different color:' outside an allocation (expected 'allocation N: …' first)");
        }
        if reused {
            return bad(0, "' reused by buffers of a different color:' twice in one allocation");
        }
        // the block is open even when its header is damaged: its lines are checked, not errors too
        self.state = State::Allocations { current, broken, reused: true };
        if text.len() > REUSED_BY_OTHER_COLOR.len() {
            return bad(REUSED_BY_OTHER_COLOR.len(), "expected the end of the line after ' reused by buffers of a different color:'");
        }
        let note = crate::driver::Note {
            kind: "unknown_section",
            token: &REUSED_BY_OTHER_COLOR[1..REUSED_BY_OTHER_COLOR.len() - 1],
            text: text.trim_ascii(),
            message: "allocation block 'reused by buffers of a different color:' (XLA 2026): its value lines are not read into a table".to_string(),
        };
        self.ctx.note(self.t, no, text, 2, note)?;
        Ok(())
    }

    /// `  value: <…> (color=N)` (two spaces): a line of the block above, and only there (issue
    /// 50: anywhere else it was dropped without a word); checked against its grammar.
    fn reused_value_line(&mut self, text: &'c [u8]) -> R<()> {
        let State::Allocations { reused, .. } = self.state else { unreachable!("a BufferAssignment line outside it") };
        if !reused {
            return bad(0, "'  value: …' (two spaces) outside a ' reused by buffers of a different color:' block (a value line has one space)");
        }
        let mut cur = Cur::new(text, 0);
        cur.expect("  value: ", "")?;
        value_ref(&mut cur)?;
        cur.expect(" (color=", "")?;
        cur.uint("the color", I32_MAX)?;
        cur.expect(")", "")?;
        cur.end("the value line")?;
        Ok(())
    }

    pub(super) fn allocation_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        // Until the line has been read, the value lines after it belong to a broken allocation.
        self.state = State::Allocations { current: None, broken: true, reused: false };
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
        a.page.push(f.page);
        a.flags.push(&src, flags_text);
        a.line.push(no as i32);
        self.checks.allocation(no, index, size);
        self.state = State::Allocations { current: Some(index), broken: false, reused: false };
        for &(at, raw) in &f.unknown {
            let note = crate::allocation_line::unknown_flag_note(raw);
            self.ctx.note(self.t, no, text, at as u64 + 1, note)?;
        }
        Ok(())
    }

    pub(super) fn value_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let State::Allocations { current, broken, reused } = self.state else { unreachable!("a value line outside BufferAssignment") };
        if current.is_none() && !broken {
            return bad(
                0,
                "value line outside an allocation (expected 'allocation N: …' first)",
            );
        }
        if reused {
            return bad(0, "value line after the allocation's ' reused by buffers of a different color:' block");
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
        a.line.push(no as i32);
        self.checks.value(no, r.id, allocation, offset, size);
        Ok(())
    }
}

