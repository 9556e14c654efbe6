//! GPU thunk sequences (`*.thunk_sequence.txt`, `*.thunk_sequence_after_thunk_passes.txt`;
//! FORMATS.md §2.11): the order in which the GPU runtime launches kernels, copies, collectives
//! and control flow, one `thunks` row per line.
//!
//! XLA prints them with `ThunkSequence::ToString(indent, annotation)`: per thunk
//! `INDENT KIND PADDING "\t" ANNOTATION THUNK_TEXT`, where INDENT is two spaces per nesting
//! level, KIND is `Thunk::KindToString` (`kKernel`, `kCopy`, `kWhile`, `kNcclAllReduceStart` …)
//! padded to the longest kind of its sequence, and THUNK_TEXT is what the thunk adds about
//! itself — for control-flow thunks the nested sequences, each under a label line
//! (`condition:`, `body:`, `branch 0:` …) one level deeper. An empty sequence prints
//! `No thunks.`.
//!
//! Rows: every thunk line (`kind` set); every other non-empty line (labels excepted: they
//! become the `section` of the thunks below them) with `kind` null and the text in
//! `annotation`, so no line is lost. `parent_thunk_id` is the nearest thunk above with a
//! smaller indentation. The grammar has no failure mode beyond invalid UTF-8 and lone CRs:
//! unknown text is kept, never rejected. Reference: `reference/thunks.py`.

use crate::error::{FileCtx, Result};
use crate::driver::{checked_lines, feed, LineGrammar};
use crate::lex::R;
use crate::tables::Tables;

/// One open level of nesting: the indentation of its lines, and the thunk and label it is under.
struct Level<'c> {
    indent: usize,
    /// The thunk that rows of this level are nested in.
    thunk_above: Option<i32>,
    /// The label (`body`, `condition` …) that rows of this level are under.
    section: Option<&'c [u8]>,
    /// The last thunk row of this level: deeper lines are nested in it.
    last_thunk: Option<i32>,
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    /// Levels from the outermost; the last is where the previous line sat.
    stack: Vec<Level<'c>>,
    next_id: i32,
}

/// Parse one thunk-sequence file.
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let mut p = Parser { ctx, t, stack: Vec::new(), next_id: 0 };
    feed(&mut p, lines)?;
    Ok(())
}

/// A file's first line that makes it a thunk sequence (`FormatSpec::sniff`): a thunk line,
/// indented or not.
pub fn is_first_line(line: &[u8]) -> bool {
    thunk_line(&line[line.iter().take_while(|&&b| b == b' ').count()..]).is_some()
}

/// A thunk line (after its indentation) → (kind, annotation). Layouts (FORMATS.md §2.11):
/// `kKernel  \tTEXT` (KIND, padding, a tab); from jax 0.8 with a `NNN: ` thunk-id prefix; from
/// 0.9.2 `NNN: kKind [prev=… | next=…] TEXT` (a space, no tab). KIND is a `k`, an uppercase
/// letter, then ASCII letters and digits. The id prefix stays in neither column: it is the
/// line's own numbering (see `printed_id`).
pub fn thunk_line(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let body = &body[printed_id(body).map_or(0, |(_, n)| n)..];
    if body.len() < 2 || body[0] != b'k' || !body[1].is_ascii_uppercase() {
        return None;
    }
    let n = body.iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    let pad = body[n..].iter().take_while(|&&b| b == b' ').count();
    match body.get(n + pad) {
        None if pad == 0 => Some((&body[..n], &body[n..])),
        Some(b'\t') => Some((&body[..n], &body[n + pad + 1..])),
        Some(_) if pad > 0 => Some((&body[..n], &body[n + pad..])),
        _ => None,
    }
}

/// The `NNN: ` id prefix of newer thunk lines: (id, bytes of the prefix).
pub fn printed_id(body: &[u8]) -> Option<(i64, usize)> {
    let d = body.iter().take_while(|b| b.is_ascii_digit()).count();
    if d == 0 || d > 18 || !body[d..].starts_with(b": ") {
        return None;
    }
    let id = std::str::from_utf8(&body[..d]).ok()?.parse().ok()?;
    Some((id, d + 2))
}

/// A label that opens a nested sequence: `condition:`, `body:`, `branch 0:` — short text
/// ending in ':' without a tab.
fn label(body: &[u8]) -> Option<&[u8]> {
    let l = body.strip_suffix(b":")?;
    (!l.is_empty() && l.len() <= 64 && !l.contains(&b'\t') && !l.contains(&b':')).then_some(l)
}

impl<'c> LineGrammar<'c> for Parser<'_, 'c> {
    fn tables(&mut self) -> &mut Tables {
        self.t
    }

    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let indent = text.iter().take_while(|&&b| b == b' ').count();
        let body = &text[indent..];
        if body.is_empty() {
            return Ok(());
        }
        // Close the levels deeper than this line.
        while self.stack.last().is_some_and(|l| l.indent > indent) {
            self.stack.pop();
        }
        if self.stack.last().is_none_or(|l| l.indent < indent) {
            let (thunk_above, section) = self.enclosing();
            self.stack.push(Level { indent, thunk_above, section, last_thunk: None });
        }
        if let Some(l) = label(body) {
            // The thunks below, one level deeper, belong to this label of the thunk above.
            let thunk_above = self.stack.last().and_then(|l| l.last_thunk.or(l.thunk_above));
            self.stack.push(Level { indent: indent + 1, thunk_above, section: Some(l), last_thunk: None });
            return Ok(());
        }
        let (kind, annotation) = match thunk_line(body) {
            Some((k, a)) => (Some(k), a),
            None => (None, body),
        };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let level = self.stack.last().expect("a level was pushed");
        let (parent, section) = (level.thunk_above, level.section);
        let src = self.ctx.src;
        let t = &mut self.t.thunks;
        t.file_id.push(self.ctx.file_id);
        t.thunk_id.push(id);
        t.parent_thunk_id.push(parent);
        t.depth.push((indent / 2) as i32);
        t.kind.push_opt(&src, kind);
        t.section.push_opt(&src, section);
        t.annotation.push(&src, annotation);
        t.line.push(no as i64);
        if kind.is_some() {
            // Lines deeper than this one are nested in this thunk.
            self.stack.last_mut().expect("a level").last_thunk = Some(id);
        }
        Ok(())
    }

    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()> {
        self.ctx.error_at(&mut self.t.errors, line, column, msg, text)
    }
}

impl<'c> Parser<'_, 'c> {
    /// The thunk and label a new, deeper level is nested in.
    fn enclosing(&self) -> (Option<i32>, Option<&'c [u8]>) {
        match self.stack.last() {
            Some(l) => (l.last_thunk.or(l.thunk_above), l.section),
            None => (None, None),
        }
    }
}
