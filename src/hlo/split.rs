//! HLO text in chunks (FORMATS.md §4.4): the part before the first computation (header,
//! stack-frame tables) is parsed first; chunks start at computation headers and read its
//! stack-frame tables; computation and instruction ids and lines are shifted afterwards.

use rayon::prelude::*;

use super::module;
use crate::error::{FileCtx, Result};
use crate::source::Source;
use crate::split::{plan_cuts, spans, tables_for, Finished};
use crate::tables::Tables;

pub fn parse(data: &[u8], source: &Source, ctx: FileCtx<'_>, n: usize, min_chunk: usize) -> Result<Option<Vec<Finished>>> {
    let Some(first) = module::first_computation(data) else { return Ok(None) };
    let cuts = plan_cuts(data, first, n, min_chunk, &|pos| module::is_computation_start(data, pos).then_some(pos));
    if cuts.len() < 2 {
        return Ok(None);
    }
    let (mut head, hctx) = tables_for(source, ctx);
    let Some(prefix) = module::parse_prefix(data, first, hctx, &mut head)? else { return Ok(None) };
    let parts: Vec<Option<(Tables, (module::ChunkCounts, module::ChunkNames))>> = spans(&cuts, data.len())
        .into_par_iter()
        .map(|(s, e)| {
            let (mut t, c) = tables_for(source, ctx);
            Ok(module::parse_chunk(data, s, e, &prefix, c, &mut t)?.map(|k| (t, k)))
        })
        .collect::<Result<_>>()?;
    let Some(parts) = parts.into_iter().collect::<Option<Vec<_>>>() else { return Ok(None) };
    // a computation a chunk calls but did not define must be one of a chunk before it (XLA's
    // parser needs it defined earlier); else the serial parse reports it
    let mut defined = std::collections::HashSet::new();
    for (_, (_, names)) in &parts {
        if names.called.iter().any(|&(a, b)| !defined.contains(&data[a..b])) {
            return Ok(None);
        }
        defined.extend(names.computations.iter().map(|&(a, b)| &data[a..b]));
    }
    let parts: Vec<(Tables, module::ChunkCounts)> = parts.into_iter().map(|(t, (k, _))| (t, k)).collect();
    // Shift every chunk by the counts of the chunks before it.
    let mut base = module::ChunkCounts { lines: prefix.lines, ..Default::default() };
    let mut shifted = Vec::with_capacity(parts.len());
    for (t, k) in parts {
        shifted.push((t, base));
        base.lines += k.lines;
        base.computations += k.computations;
        base.instructions += k.instructions;
        base.entries += k.entries;
    }
    // the whole file's checks (no chunk reported an error), in the prefix's rows (its lines
    // are the file's)
    if let Some((line, name)) = &prefix.module {
        let problems: Vec<(u64, String)> = module::judge(name, base.computations, base.entries, ctx.xla_named).map(|m| (*line, m)).into_iter().collect();
        let before = head.errors.len(); // (no chunk reported an error: the split was kept)
        ctx.report_whole_file(&mut head.errors, before, &problems)?;
    }
    let mut out = vec![head.finish()];
    out.par_extend(shifted.into_par_iter().map(|(mut t, b)| {
        t.shift_lines(b.lines as i64);
        let add = |v: &mut Vec<i32>, by: i32| v.iter_mut().for_each(|x| *x += by);
        add(&mut t.computations.computation_id.0, b.computations);
        add(&mut t.instructions.computation_id.0, b.computations);
        add(&mut t.instructions.instruction_id.0, b.instructions);
        add(&mut t.custom_calls.instruction_id.0, b.instructions);
        t.finish()
    }));
    Ok(Some(out))
}

