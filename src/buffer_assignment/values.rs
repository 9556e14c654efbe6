//! The values of buffer assignment: value references `<ID NAME …>` (§2.3) and the `Used values`
//! blocks (§2.5).

#![allow(unused_imports)]
use super::*;
use crate::lex::{bad, grouped_end, grouped_value, is_name_start, Cur, I32_MAX, I64_MAX, R};

/// `<ID NAME[IDX][ (phi)][ @C]>` (§2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef<'a> {
    pub id: i64,
    pub name: &'a [u8],
    /// `{…}` as printed, or `{}` when not printed (XLA prints the index of tuple-shaped
    /// instructions only: a value of an array-shaped one is its whole value `{}`, the spelling
    /// `live_ranges` and the peak list use, so every table joins on one spelling).
    pub index: &'a [u8],
    pub phi: bool,
    pub color: i32,
}

pub(super) fn value_ref<'a>(cur: &mut Cur<'a>) -> R<ValueRef<'a>> {
    cur.expect("<", "(start of a value reference <ID NAME …>)")?;
    let id = cur.uint("a value id", I64_MAX)? as i64;
    cur.expect(" ", "after the value id")?;
    let name = cur.name("an instruction name")?;
    let index = cur.index()?.unwrap_or(WHOLE);
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
pub(super) fn defining_line_parts(text: &[u8]) -> (usize, usize, Option<ValueRef<'_>>) {
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

impl<'t, 'c> Parser<'t, 'c> {
    // ------------------------------------------------------------------ used values (§2.5)

    pub(super) fn values_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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

    pub(super) fn open_block(&mut self, no: u64, text: &'c [u8], start: usize) -> R<()> {
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
    pub(super) fn open_parsed_block(&mut self, no: u64, header: Option<ValueRef<'c>>) {
        let lists = std::mem::take(&mut self.spare);
        self.state = State::Values { block: Some(Block::new(no, header, lists)) };
    }

    pub(super) fn defining_line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
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
            v.line.push(block.header_line as i32);
        }
        self.spare = block.lists;
        if let Some(header) = glued {
            self.open_parsed_block(no, Some(header));
        }
        Ok(())
    }

    /// A value block cut short (no ` from instruction:`) is an error; its row is dropped.
    pub(super) fn close_block(&mut self, no: u64, reason: &str, text: &[u8]) -> Result<()> {
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
}

impl<'a> Block<'a> {
    /// A block that fills `lists` (emptied here).
    pub(super) fn new(header_line: u64, header: Option<ValueRef<'a>>, mut lists: Lists<'a>) -> Block<'a> {
        lists.positions.clear();
        lists.uses.clear();
        Block { header_line, header, expecting: Expecting::PositionsHeader, lists, uses_initialized: true }
    }
}

/// The shape index of a whole value, where XLA prints none.
pub(super) const WHOLE: &[u8] = b"{}";

/// An optional ` {i,j}` shape index after a name (`{}` when absent, as in `ValueRef`).
fn space_index<'c>(cur: &mut Cur<'c>) -> R<&'c [u8]> {
    if !cur.accept(" ") {
        return Ok(WHOLE);
    }
    let start = cur.pos;
    match cur.index()? {
        Some(i) => Ok(i),
        None => bad(start, "expected a shape index after the space"),
    }
}

pub(super) fn position(text: &[u8]) -> R<(&[u8], &[u8])> {
    let mut cur = Cur::new(text, 0);
    cur.expect("  ", "(a position, or ' uses:')")?;
    let name = cur.name("an instruction name")?;
    let index = space_index(&mut cur)?;
    cur.end("the position")?;
    Ok((name, index))
}

pub(super) fn use_item(text: &[u8]) -> R<(&[u8], i32, &[u8])> {
    let mut cur = Cur::new(text, 0);
    cur.expect("  ", "(a use, '  (none)' or ' from instruction:')")?;
    let name = cur.name("an instruction name")?;
    cur.expect(", operand ", "")?;
    let operand = cur.uint("the operand number", I32_MAX)? as i32;
    let index = space_index(&mut cur)?;
    cur.end("the use")?;
    Ok((name, operand, index))
}

