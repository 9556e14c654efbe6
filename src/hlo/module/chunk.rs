//! One big file in chunks (the HLO side of `split.rs`): the prefix before the first
//! computation is parsed serially, then each chunk from a computation header on in the state
//! the prefix left.

use super::{index_lines, wanted, Mode, Parser};
use crate::error::{FileCtx, Result};
use crate::hlo::instruction::Scratch;
use crate::hlo::line_forms::*;
use crate::hlo::stack_frames::{Frames, Table};
use crate::hlo::tape::Tape;
use crate::lines::Lines;
use crate::tables::Tables;

/// What the part of a module before its first computation (header, stack-frame tables) leaves
/// to the computations that follow: chunks of a big file start from it (`read.rs`).
pub struct Prefix<'c> {
    frames: Frames<'c>,
    have_header: bool,
    module_index: i32,
    table: Option<Table>,
    /// Lines in the prefix.
    pub lines: u64,
    /// The module the prefix opened (its line and name): judged once every chunk has counted
    /// its computations (`hlo/split.rs`, `checks::judge`).
    pub module: Option<(u64, Vec<u8>)>,
}

/// Counts of one parsed chunk: its ids and line numbers start at 0 and are shifted by the
/// caller by the counts of the chunks before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChunkCounts {
    pub lines: u64,
    pub computations: i32,
    pub instructions: i32,
    /// `ENTRY` computations.
    pub entries: i32,
}

/// The names a chunk leaves to the split (byte ranges of the input): its computations in
/// order, and the computations its instructions call that it did not define before them —
/// each must be a computation of a chunk before (XLA's parser needs a called computation
/// defined earlier), or the file is parsed serially, which reports it.
#[derive(Debug, Default)]
pub struct ChunkNames {
    pub computations: Vec<(usize, usize)>,
    pub called: Vec<(usize, usize)>,
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
        checks: Default::default(),
        defined: Default::default(),
        computations: Default::default(),
        good_shapes: Default::default(),
        deferred: Vec::new(),
        chunk_comps: Vec::new(),
        comp_errors: 0,
        module_errors: 0,
        damaged: false,
        module_damaged: false,
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
    if p.headerless.is_some() || !p.checks.problems().is_empty() {
        // (a header-less module cannot start before the first computation; a module that
        // ended in the prefix had none: the serial parse reports it)
        return Ok(None);
    }
    let module = p.checks.open_module().map(|(line, name)| (line, name.to_vec()));
    Ok(Some(Prefix { frames: p.frames, have_header: p.have_header, module_index: p.module_index, table: p.table, lines: p.last_no, module }))
}

/// Parse `data[start..end]`, which starts with a computation header (`is_computation_start`)
/// and ends at a line start, in the state the prefix left. Ids and line numbers are local
/// (from 0). None when the chunk cannot be parsed alone: invalid UTF-8, any error (a
/// computation or multi-line text open at the end included), or a stack-frame table line.
pub fn parse_chunk<'c>(data: &'c [u8], start: usize, end: usize, prefix: &Prefix<'c>, ctx: FileCtx<'c>, t: &mut Tables) -> Result<Option<(ChunkCounts, ChunkNames)>> {
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
    let counts = ChunkCounts { lines: p.last_no, computations: p.computation_id + 1, instructions: p.instruction_id, entries: p.checks.entries };
    Ok(Some((counts, ChunkNames { computations: p.chunk_comps, called: p.deferred })))
}
