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
//!
//! A nested sequence can start on its parent's line: from the `NNN: ` prefix on,
//! `SequentialThunk::ToString(indent)` appends its children's `ToString(indent + 1)` right after
//! the parent's tab, and that text opens with the child's own indentation
//! (`000: kSequential\t  001: kCopy …`, the next children on lines of their own). Text after
//! the tab that is spaces then a thunk line is therefore that child: its own row, one level
//! deeper, with the parent as `parent_thunk_id`; the parent's `annotation` is what came before.
//!
//! Per thunk, what XLA prints about what it runs becomes columns (`launch`): `instruction`
//! (the profile annotation = the HLO instruction name, where printed: the text before
//! `, kernel = …` or the whole text when it is one name), `kernel_name`, the launch dimensions
//! (`blocks: {X, Y, Z}, threads/block: {X, Y, Z}, shared memory [B]: N`; `LaunchDimensions`'
//! `<<` prints `[block: {…}, thread: {…}]`) and null where not printed. `printed_id` is the
//! `NNN: ` id a thunk line starts with (jax ≥ 0.8): jax 0.12 prints no profile annotation, and
//! the `*.thunk_metadata.txt` beside the file names each id's HLO instruction (the
//! `thunk_metadata` table, read by `options`); `analysis.thunk_instructions` joins the two.

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
    /// The line and indentation of the last thunk row (`label_indent`).
    last_thunk_at: Option<(u64, usize)>,
}

/// Parse one thunk-sequence file.
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let mut p = Parser { ctx, t, stack: Vec::new(), next_id: 0, last_thunk_at: None };
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
        let mut rest = Some(text);
        // One pass per thunk on the line: the line's own, then any child printed after its tab.
        while let Some(text) = rest {
            rest = self.one_thunk(no, text);
        }
        Ok(())
    }

    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()> {
        self.ctx.error_at(&mut self.t.errors, line, column, msg, text)
    }
}

/// A child thunk printed on its parent's line: the annotation is spaces then a thunk line.
/// Returns the child's text with its indentation.
pub fn nested_child(annotation: &[u8]) -> Option<&[u8]> {
    let n = annotation.iter().take_while(|&&b| b == b' ').count();
    (n > 0 && thunk_line(&annotation[n..]).is_some()).then_some(annotation)
}

/// What a thunk's text says about what it runs (FORMATS.md §2.11).
#[derive(Default, Debug, PartialEq)]
pub struct Launch<'c> {
    pub instruction: Option<&'c [u8]>,
    pub kernel_name: Option<&'c [u8]>,
    pub blocks: [Option<i64>; 3],
    pub threads: [Option<i64>; 3],
    pub shared_memory_bytes: Option<i64>,
}

/// An HLO instruction name as a profile annotation prints it (`fusion.1`, `%copy-start.2`).
fn is_name(s: &[u8]) -> bool {
    s.first().is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_' || b == b'%')
        && s.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'%'))
}

/// The text after `key` (first occurrence), or None.
fn after<'c>(s: &'c [u8], key: &[u8]) -> Option<&'c [u8]> {
    s.windows(key.len()).position(|w| w == key).map(|i| &s[i + key.len()..])
}

/// A decimal at the start of `s` (digits only; None on overflow).
fn number(s: &[u8]) -> Option<i64> {
    let d = s.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&s[..d]).ok()?.parse().ok()
}

/// `{X, Y, Z}` (`[X, Y, Z]` from jax 0.12) or a lone `X` (then Y and Z are not printed).
fn dims(s: &[u8]) -> [Option<i64>; 3] {
    let Some(inner) = s.strip_prefix(b"{").or_else(|| s.strip_prefix(b"[")) else {
        return [number(s), None, None];
    };
    let end = inner.iter().position(|&b| b == b'}' || b == b']').unwrap_or(inner.len());
    let mut out = [None; 3];
    for (slot, part) in out.iter_mut().zip(inner[..end].split(|&b| b == b',')) {
        let part = part.trim_ascii();
        *slot = (part.len() == part.iter().take_while(|b| b.is_ascii_digit()).count()).then(|| number(part)).flatten();
    }
    out
}

/// The text after the `[source | next=002 (1)]` links jax 0.12 prints before a thunk's own text.
fn after_links(text: &[u8]) -> Option<&[u8]> {
    let inner = text.strip_prefix(b"[")?;
    let end = inner.iter().position(|&b| b == b']')?;
    let links = &inner[..end];
    let linked = [&b"prev="[..], b"next=", b"source", b"sink"].iter().any(|k| after(links, k).is_some());
    linked.then(|| inner[end + 1..].trim_ascii())
}

/// jax 0.12's kernel text after the links: `NAME grid: [X, Y, Z] threads: [X, Y, Z]
/// shared_memory: N bytes` (the kernel's name, not the HLO instruction's: no profile annotation
/// is printed; other thunks echo their kind).
fn launch_linked(text: &[u8]) -> Launch<'_> {
    let mut l = Launch::default();
    if let Some(i) = text.windows(7).position(|w| w == b" grid: ") {
        l.kernel_name = is_name(&text[..i]).then(|| &text[..i]);
    }
    l.blocks = after(text, b"grid: ").map(dims).unwrap_or_default();
    l.threads = after(text, b"threads: ").map(dims).unwrap_or_default();
    l.shared_memory_bytes = after(text, b"shared_memory: ").and_then(number);
    l
}

/// The launch facts of one thunk's annotation (text after the tab).
pub fn launch(annotation: &[u8]) -> Launch<'_> {
    let text = annotation.trim_ascii();
    if let Some(rest) = after_links(text) {
        return launch_linked(rest);
    }
    let mut l = Launch::default();
    // `NAME, kernel = …` (profile annotation, then the kernel thunk's own text) or `NAME`.
    let head = text.split(|&b| b == b',').next().unwrap_or(b"");
    if is_name(head) {
        l.instruction = Some(head);
    }
    if let Some(k) = after(text, b"kernel = ").or_else(|| after(text, b"kernel=")) {
        let n = k.iter().take_while(|&&b| b != b',' && !b.is_ascii_whitespace()).count();
        l.kernel_name = (n > 0).then(|| &k[..n]);
    }
    if let Some(b) = after(text, b"blocks: ").or_else(|| after(text, b"[block: ")) {
        l.blocks = dims(b);
    }
    if let Some(t) = after(text, b"threads/block: ").or_else(|| after(text, b"thread: ")) {
        l.threads = dims(t);
    }
    l.shared_memory_bytes = after(text, b"shared memory [B]: ").and_then(number);
    l
}

impl<'c> Parser<'_, 'c> {
    /// One thunk (or other text) starting at `text` (with its indentation); returns the text of
    /// a child thunk printed on the same line, if any.
    fn one_thunk(&mut self, no: u64, text: &'c [u8]) -> Option<&'c [u8]> {
        let indent = text.iter().take_while(|&&b| b == b' ').count();
        let body = &text[indent..];
        if body.is_empty() {
            return None;
        }
        let indent = self.label_indent(no, indent, body);
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
            return None;
        }
        let (kind, annotation) = match thunk_line(body) {
            Some((k, a)) => (Some(k), a),
            None => (None, body),
        };
        // A child printed after the tab is not this thunk's annotation but its own row.
        let child = kind.and(nested_child(annotation));
        let annotation = if child.is_some() { &annotation[..0] } else { annotation };
        let facts = if kind.is_some() { launch(annotation) } else { Launch::default() };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let level = self.stack.last().expect("a level was pushed");
        let (parent, section) = (level.thunk_above, level.section);
        let src = self.ctx.src;
        let t = &mut self.t.thunks;
        t.file_id.push(self.ctx.file_id);
        t.thunk_id.push(id);
        // The id XLA printed (`NNN: `, jax ≥ 0.8): the key of the thunk's `thunk_metadata` row.
        t.printed_id.push(kind.and(printed_id(body)).map(|(n, _)| n));
        t.parent_thunk_id.push(parent);
        t.depth.push((indent / 2) as i32);
        t.kind.push_opt(&src, kind);
        t.section.push_opt(&src, section);
        // A kernel thunk without a profile annotation prints `, kernel = …` (the comma is there to
        // follow an annotation): the column leaves that separator out (issue 51).
        let shown = if kind.is_some() { annotation.strip_prefix(b", ").unwrap_or(annotation) } else { annotation };
        t.annotation.push(&src, shown);
        t.line.push(no as i32);
        t.instruction.push_opt(&src, facts.instruction);
        t.kernel_name.push_opt(&src, facts.kernel_name);
        let [bx, by, bz] = facts.blocks;
        let [tx, ty, tz] = facts.threads;
        t.blocks_x.push(bx);
        t.blocks_y.push(by);
        t.blocks_z.push(bz);
        t.threads_x.push(tx);
        t.threads_y.push(ty);
        t.threads_z.push(tz);
        t.shared_memory_bytes.push(facts.shared_memory_bytes);
        if kind.is_some() {
            // Lines deeper than this one are nested in this thunk.
            self.stack.last_mut().expect("a level").last_thunk = Some(id);
            self.last_thunk_at = Some((no, indent));
        }
        child
    }

    /// The indentation a line counts with. `WhileThunk::ToString(indent)` writes its
    /// indentation before the newline, so its `condition:` label starts a line at column 0
    /// whatever the loop's depth (its `body:` label and both sequences are indented): a label at
    /// column 0 right below a thunk line counts as one level deeper than that thunk.
    fn label_indent(&self, no: u64, indent: usize, body: &[u8]) -> usize {
        match self.last_thunk_at {
            Some((line, at)) if indent == 0 && line + 1 == no && label(body).is_some() => at + 2,
            _ => indent,
        }
    }

    /// The thunk and label a new, deeper level is nested in.
    fn enclosing(&self) -> (Option<i32>, Option<&'c [u8]>) {
        match self.stack.last() {
            Some(l) => (l.last_thunk.or(l.thunk_above), l.section),
            None => (None, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_of_a_kernel_thunk_as_xla_prints_it() {
        let l = launch(b"fusion.1, kernel = fusion_1, launch dimensions = blocks: {2, 3, 1}, threads/block: {256, 1, 1}, shared memory [B]: 64, cluster_dim = nullopt");
        assert_eq!(l.instruction, Some(&b"fusion.1"[..]));
        assert_eq!(l.kernel_name, Some(&b"fusion_1"[..]));
        assert_eq!((l.blocks, l.threads, l.shared_memory_bytes), ([Some(2), Some(3), Some(1)], [Some(256), Some(1), Some(1)], Some(64)));
        let l = launch(b", kernel = k, launch dimensions = [block: {5, 6, 7}, thread: {8, 9, 10}]");
        assert_eq!((l.instruction, l.kernel_name), (None, Some(&b"k"[..])));
        assert_eq!((l.blocks, l.threads, l.shared_memory_bytes), ([Some(5), Some(6), Some(7)], [Some(8), Some(9), Some(10)], None));
        // a lone count, an overflowing one, text that is not a name
        let l = launch(b"(no description) blocks: 12, threads/block: {99999999999999999999, x, 3}");
        assert_eq!((l.instruction, l.blocks, l.threads), (None, [Some(12), None, None], [None, None, Some(3)]));
    }

    #[test]
    fn launch_of_a_kernel_thunk_as_jax_0_12_prints_it() {
        let l = launch(b"[source       | next=002 (1)] gemm_fusion_dot_2 grid: [8192, 1, 1] threads: [64, 1, 1]  shared_memory: 768 bytes");
        assert_eq!((l.instruction, l.kernel_name), (None, Some(&b"gemm_fusion_dot_2"[..])));
        assert_eq!((l.blocks, l.threads, l.shared_memory_bytes), ([Some(8192), Some(1), Some(1)], [Some(64), Some(1), Some(1)], Some(768)));
        assert_eq!(launch(b"[prev=004 (1) | sink        ] kAllReduce"), Launch::default());
    }

    #[test]
    fn a_child_after_the_tab_is_found() {
        assert_eq!(nested_child(b"  001: kCopy  \t"), Some(&b"  001: kCopy  \t"[..]));
        assert_eq!(nested_child(b"  "), None);
        assert_eq!(nested_child(b"001: kCopy\t"), None); // no indentation: not a nested sequence
        assert_eq!(nested_child(b"  copy.5"), None);
    }
}
