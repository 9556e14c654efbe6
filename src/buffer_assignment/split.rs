//! The buffer-assignment family in chunks (FORMATS.md §4.4): chunks start at `allocation`
//! lines, value headers (`<…>` at column 0, or glued to the end of a ` from instruction:` line
//! in the old layout: then the chunk before ends inside that line and the next one starts at
//! the `<`, the same physical line) and entries of the InstructionSequence and BufferLiveRange
//! lists; the peak list and the stack-trace tree are never cut (their lines carry running
//! state). Each chunk must start in the state the one before it ended in, or the caller parses
//! serially.

use rayon::prelude::*;

use super::{self as ba, ChunkStart};
use crate::error::{FileCtx, Result};
use crate::source::Source;
use crate::split::{line_at, plan_cuts, spans, tables_for, Finished};
use crate::tables::Tables;

pub fn parse(data: &[u8], source: &Source, ctx: FileCtx<'_>, n: usize, min_chunk: usize) -> Result<Option<Vec<Finished>>> {
    let cuts = plan_cuts(data, 0, n, min_chunk, &|pos| cut_in(data, pos));
    if cuts.len() < 2 {
        return Ok(None);
    }
    let parts: Vec<Option<(Tables, Option<ChunkStart>, ba::ChunkState, u64, ba::checks::Checks)>> = spans(&cuts, data.len())
        .into_par_iter()
        .map(|(s, e)| {
            let kind = if s == 0 { None } else { ChunkStart::of(line_at(data, s)) };
            let (mut t, c) = tables_for(source, ctx);
            let r = ba::parse_chunk(data, s, e, kind, c, &mut t)?;
            Ok(r.filter(|_| t.errors.is_empty()).map(|(state, lines, checks)| (t, kind, state, lines, checks)))
        })
        .collect::<Result<_>>()?;
    let Some(parts) = parts.into_iter().collect::<Option<Vec<_>>>() else { return Ok(None) };
    // Each chunk must start in the state the one before it ended in.
    for w in parts.windows(2) {
        if !w[0].2.admits(w[1].1) {
            return Ok(None);
        }
    }
    let mut base = 0u64;
    let mut shifted = Vec::with_capacity(parts.len());
    let mut checks = ba::checks::Checks::default();
    for ((t, _, _, lines, c), (_, end)) in parts.into_iter().zip(spans(&cuts, data.len())) {
        checks.append(c, base);
        shifted.push((t, base));
        // A chunk cut at a glued header ends inside a line that the next chunk starts with.
        let ends_inside_a_line = end < data.len() && data[end - 1] != b'\n';
        base += lines - ends_inside_a_line as u64;
    }
    // the whole file's checks (no chunk reported an error), in the first chunk's rows: its
    // lines are the file's (it is not shifted)
    let errors = &mut shifted[0].0.errors;
    let before = errors.len();
    ctx.report_whole_file(errors, before, &checks.problems())?;
    Ok(Some(
        shifted
            .into_par_iter()
            .map(|(mut t, b)| {
                t.shift_lines(b as i64);
                t.finish()
            })
            .collect(),
    ))
}


/// Where a chunk may start in the line at `pos`: the line itself when `ChunkStart::of` accepts
/// it, or the value header glued to the end of a ` from instruction:` line. A glued header is a
/// cut only if the chunk before, which then ends with the line cut short there, reads that line
/// as the serial parse does: with no glued header of its own.
pub fn cut_in(data: &[u8], pos: usize) -> Option<usize> {
    let line = line_at(data, pos);
    if ChunkStart::of(line).is_some() {
        return Some(pos);
    }
    if !line.starts_with(b" from instruction:") {
        return None;
    }
    let (_, glued) = ba::split_defining_line(line);
    let alone = &line[..glued];
    (glued < line.len() && ba::split_defining_line(alone).1 == alone.len()).then_some(pos + glued)
}
