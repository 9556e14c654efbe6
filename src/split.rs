//! Parallelism inside one big file: cut it at safe boundaries (FORMATS.md §4.4), parse the
//! chunks on rayon threads, and stitch the results in order. The tables are the serial parse's,
//! cell for cell (row order, ids, `line`, `offset`, `errors`):
//!
//! * every chunk numbers its lines (and HLO ids) from 0; the counts of the chunks before it are
//!   added afterwards, before the chunk's tables are finished (on the thread pool too);
//! * a chunk is parsed in the state the serial parse is expected to be in at its first line, and
//!   that is checked: a chunk that reports any error (chunks always collect), meets a line that
//!   changes state shared with later chunks, or ends in a state other than the one the next
//!   chunk assumed, discards the whole chunked result, and the file is parsed serially (with
//!   the caller's error mode). Errors are rare, so their rows and positions come from the
//!   serial parse for free.
//!
//! This file is the format-independent part (when to split, where cuts may go, fresh table
//! sets); each format that can be cut says how in its own `split.rs` (`FormatSpec::split`).

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::error::{FileCtx, Result};
use crate::source::Source;
use crate::tables::Tables;

/// One finished table set (every table, canonical order).
pub type Finished = Vec<(&'static str, RecordBatch)>;

/// How a format cuts one big file and parses the chunks (`FormatSpec::split`, each format's
/// `split.rs`): (data, source, context, chunks wanted, smallest chunk) → the table sets in
/// order, or None (parse serially).
pub type SplitFn = fn(&[u8], &Source, FileCtx<'_>, usize, usize) -> Result<Option<Vec<Finished>>>;

/// Files smaller than this are parsed by one thread.
pub const MIN_SPLIT_BYTES: usize = 32 << 20;
/// Smallest chunk.
pub const MIN_CHUNK_BYTES: usize = 16 << 20;
/// Chunks per thread (some are larger than others: more chunks balance the load).
const CHUNKS_PER_THREAD: usize = 4;

/// (smallest file to split, smallest chunk). `HLODUMP_MIN_SPLIT_BYTES=N` (tests) lowers both:
/// files of N bytes and more, chunks of N/2 bytes and more.
pub fn limits() -> (usize, usize) {
    match std::env::var("HLODUMP_MIN_SPLIT_BYTES").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(n) => (n.max(2), (n / 2).max(1)),
        None => (MIN_SPLIT_BYTES, MIN_CHUNK_BYTES),
    }
}

/// Parse one file in chunks when it is big enough, more than one thread is there and its
/// format can be cut (`split`: its `FormatSpec::split`). None: not split (too small, one
/// thread, no boundaries) or the chunked result was discarded — the caller parses serially.
/// Otherwise the table sets, in order, to follow the one holding the file's `files` row.
pub fn parse(split: Option<SplitFn>, data: &[u8], source: &Source, ctx: FileCtx<'_>) -> Result<Option<Vec<Finished>>> {
    let Some(split) = split else { return Ok(None) };
    let threads = rayon::current_num_threads();
    if threads < 2 {
        return Ok(None);
    }
    let (min_file, min_chunk) = limits();
    if data.len() < min_file {
        return Ok(None);
    }
    split(data, source, ctx, CHUNKS_PER_THREAD * threads, min_chunk)
}

/// A fresh table set reading `source`, and a collecting context pointing into it.
pub fn tables_for<'c>(source: &Source, ctx: FileCtx<'c>) -> (Tables, FileCtx<'c>) {
    let mut t = Tables::default();
    if let Some(p) = ctx.proj {
        t.project(p);
    }
    let src = t.add_source(source);
    (t, FileCtx { src, collect: true, presized: false, ..ctx })
}

/// Chunk starts: `first`, then nominal positions about `(len − first) / n` apart (at least
/// `min_chunk`), each moved forward to the first line where `cut` finds a chunk start before
/// the next nominal position (dropped when there is none). Increasing.
///
/// `cut(pos)` looks at the line starting at `pos` and gives where a chunk may start in it: `pos`
/// itself, a record glued to the end of that line (the old `Used values` layout), or None.
pub fn plan_cuts(data: &[u8], first: usize, n: usize, min_chunk: usize, cut: &(dyn Fn(usize) -> Option<usize> + Sync)) -> Vec<usize> {
    let len = data.len();
    let step = ((len - first) / n.max(1)).max(min_chunk).max(1);
    let nominal: Vec<usize> = (1..).map(|i| first + i * step).take_while(|&p| p < len).collect();
    let found: Vec<Option<usize>> = nominal
        .par_iter()
        .map(|&p| {
            let limit = (p + step).min(len);
            // the first line start at or after p
            let mut pos = if data[p - 1] == b'\n' { p } else { p + memchr::memchr(b'\n', &data[p..])? + 1 };
            while pos < limit {
                if let Some(at) = cut(pos) {
                    return Some(at);
                }
                pos += memchr::memchr(b'\n', &data[pos..])? + 1;
            }
            None
        })
        .collect();
    let mut cuts = vec![first];
    for c in found.into_iter().flatten() {
        if c > *cuts.last().unwrap() && c < len {
            cuts.push(c);
        }
    }
    cuts
}

/// The line starting at `pos`, without its terminator.
pub fn line_at(data: &[u8], pos: usize) -> &[u8] {
    let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
    let s = &data[pos..end];
    s.strip_suffix(b"\r").unwrap_or(s)
}

/// (start, end) of every chunk.
pub fn spans(cuts: &[usize], len: usize) -> Vec<(usize, usize)> {
    cuts.iter().enumerate().map(|(k, &s)| (s, cuts.get(k + 1).copied().unwrap_or(len))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer_assignment::ChunkStart;
    use crate::tables::Tables;

    /// `data` parsed serially (one table set) and in chunks of at least `min_chunk` bytes.
    fn both(data: &[u8], hlo: bool, min_chunk: usize) -> (Finished, Option<Vec<Finished>>) {
        let source = Source::from_vec(data.to_vec());
        let data = source.bytes();
        let mut t = Tables::default();
        let src = t.add_source(&source);
        let ctx = FileCtx { file_id: 3, path: "x", collect: true, src, proj: None, presized: false, strict: false, xla_named: false };
        if hlo {
            crate::hlo::parse(data, ctx, &mut t).unwrap();
        } else {
            crate::buffer_assignment::parse(data, ctx, &mut t).unwrap();
        }
        let chunked = if hlo { crate::hlo::split::parse(data, &source, ctx, 64, min_chunk) } else { crate::buffer_assignment::split::parse(data, &source, ctx, 64, min_chunk) };
        (t.finish(), chunked.unwrap())
    }

    /// The chunks, stitched, are the serial tables cell for cell; returns the number of sets.
    fn assert_same(serial: &Finished, chunks: &[Finished]) -> usize {
        for (i, (name, whole)) in serial.iter().enumerate() {
            let mut at = 0;
            for set in chunks {
                let part = &set[i].1;
                for c in 0..whole.num_columns() {
                    assert_eq!(whole.column(c).slice(at, part.num_rows()).to_data(), part.column(c).to_data(), "{name} column {c} at row {at}");
                }
                at += part.num_rows();
            }
            assert_eq!(at, whole.num_rows(), "{name}");
        }
        chunks.len()
    }

    fn hlo_text(comps: usize) -> Vec<u8> {
        let mut s = String::from("HloModule m, is_scheduled=true\n\nFileNames\n1 \"a.py\"\n\nFunctionNames\n1 \"f\"\n\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=1 end_column=2}\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}\n\n");
        for k in 0..comps {
            s += &format!("%c{k} (p: f32[]) -> f32[] {{\n  %p = f32[] parameter(0)\n  %n = f32[] negate(f32[] %p), metadata={{op_name=\"n{k}\" stack_frame_id=1}}\n  ROOT %cc = f32[] custom-call(f32[] %n), custom_call_target=\"t\"\n}}\n\n");
        }
        s += "ENTRY %main (a: f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n";
        s.into_bytes()
    }

    #[test]
    fn hlo_chunks_equal_serial() {
        let data = hlo_text(40);
        for min_chunk in [1, 100, 700] {
            let (serial, chunks) = both(&data, true, min_chunk);
            assert!(assert_same(&serial, &chunks.expect("split")) > 2);
        }
    }

    #[test]
    fn hlo_falls_back_when_a_chunk_cannot_decide_alone() {
        let good = String::from_utf8(hlo_text(40)).unwrap();
        // a computation left open across cuts; a stack-frame row after computations; a second ROOT
        let broken = [
            good.replacen("}\n\n%c20", "\n%c20", 1),
            good.replacen("\n\n%c20", "\n\n1 {file_location_id=1 parent_frame_id=0}\n\n%c20", 1),
            good.replacen("  %p = f32[] parameter(0)\n  %n", "  ROOT %p = f32[] parameter(0)\n  %n", 1),
        ];
        for b in broken {
            let (serial, chunks) = both(b.as_bytes(), true, 1);
            assert!(chunks.is_none());
            assert!(serial.iter().any(|(n, b)| *n == "errors" && b.num_rows() > 0) || b.contains("\n\n1 {"));
        }
    }

    fn ba_text(copies: usize, glued: bool) -> Vec<u8> {
        let mut s = String::from("BufferAssignment:\n");
        for k in 0..copies {
            s += &format!("allocation {k}: size 64, parameter 0, shape |f32[16]| at ShapeIndex {{}}:\n value: <{k} p{k} @0> (size=64,offset=0): f32[16]{{0}}\n");
        }
        s += "\nTotal bytes used: 64 (64B)\n\nUsed values:\n";
        for k in 0..copies {
            let sep = if glued && k + 1 < copies { "" } else { "\n" };
            s += &format!("<{k} p{k} @0>\n positions:\n  p{k}\n uses:\n  (none)\n from instruction: %p{k} = f32[16]{{0}} parameter(0){sep}");
        }
        s += &format!("\nHloLiveRange (max {copies}):\n  InstructionSequence:\n");
        for k in 0..copies {
            s += &format!("    {k}:p{k}\n");
        }
        s += "  BufferLiveRange:\n";
        for k in 0..copies {
            s += &format!("    p{k}{{}}:{k}-{copies}\n");
        }
        s += "  Live ranges at 1 (peak):\n";
        for k in 0..copies {
            s += &format!("    p{k}{{}}: 64 bytes\n");
        }
        s.into_bytes()
    }

    #[test]
    fn buffer_assignment_chunks_equal_serial() {
        for glued in [false, true] {
            let data = ba_text(60, glued);
            for min_chunk in [1, 200, 1500] {
                let (serial, chunks) = both(&data, false, min_chunk);
                assert!(assert_same(&serial, &chunks.expect("split")) > 2, "glued {glued} min_chunk {min_chunk}");
            }
        }
    }

    #[test]
    fn buffer_assignment_falls_back_on_errors_and_open_blocks() {
        let good = String::from_utf8(ba_text(60, false)).unwrap();
        let broken = [
            good.replacen(" from instruction: %p30 = f32[16]{0} parameter(0)\n", "", 1), // block open at a cut
            good.replacen("allocation 30:", "allocation x30:", 1),
            good.replacen("    31:p31\n", "    31:p31 junk\n", 1),
        ];
        for b in broken {
            let (serial, chunks) = both(b.as_bytes(), false, 1);
            assert!(chunks.is_none());
            assert!(serial.iter().any(|(n, b)| *n == "errors" && b.num_rows() > 0));
        }
    }

    /// The parser state ends with its section: chunks may start in a second copy after the
    /// first one's peak list (its running total is gone with it), but not after a tree line
    /// (tree rows are numbered across the file; a chunk counts from 0).
    #[test]
    fn buffer_assignment_chunks_after_a_peak_list_not_after_a_tree() {
        let copy = |tree: bool| {
            let mut s = ba_text(30, false);
            if tree {
                s.extend_from_slice(b"  Stack trace breakdown for peak usage: 64 bytes\n    p0 (100.0%, total: 64 bytes, current: 64 bytes, remaining: 0 bytes)\n");
            }
            s
        };
        // (the second copy's allocations renumbered: listed twice, they would be an error)
        let second = String::from_utf8(copy(false)).unwrap().replace("allocation ", "allocation 9999").into_bytes();
        for tree in [false, true] {
            let data = [copy(tree), b"\n".to_vec(), second.clone()].concat();
            let (serial, chunks) = both(&data, false, 1);
            assert!(serial.iter().all(|(n, b)| *n != "errors" || b.num_rows() == 0));
            if tree {
                assert!(chunks.is_none());
            } else {
                assert!(assert_same(&serial, &chunks.expect("split")) > 2);
            }
        }
    }

    #[test]
    fn glued_value_headers_are_cuts_inside_their_line() {
        let data = ba_text(60, true);
        let cut = |p: usize| crate::buffer_assignment::split::cut_in(&data, p);
        let cuts = plan_cuts(&data, 0, 64, 1, &cut);
        let inside: Vec<usize> = cuts[1..].iter().copied().filter(|&c| data[c - 1] != b'\n').collect();
        assert!(inside.len() > 10, "the Used values section is cut at its glued headers");
        for c in inside {
            assert!(data[..c].ends_with(b"parameter(0)") && data[c] == b'<', "{}", String::from_utf8_lossy(line_at(&data, c)));
        }
        // the line numbers of rows after a cut inside a line are those of the serial parse
        let (serial, chunks) = both(&data, false, 1);
        assert!(assert_same(&serial, &chunks.expect("split")) > 20);
    }

    #[test]
    fn a_glued_header_is_no_cut_when_the_shortened_line_reads_differently() {
        // Serially the last whole `<…>` is the glued header and `<1 x>` belongs to the
        // instruction; a chunk ending before `<2 y>` would take `<1 x>` for a header.
        let line = b" from instruction: %p = f32[] parameter(0) <1 x><2 y>\n";
        assert_eq!(crate::buffer_assignment::split::cut_in(line, 0), None);
        let plain = b" from instruction: %p = f32[] parameter(0)<2 y>\n";
        assert_eq!(crate::buffer_assignment::split::cut_in(plain, 0), Some(plain.len() - 6));
        let data = String::from_utf8(ba_text(60, true)).unwrap().replace(
            " from instruction: %p30 = f32[16]{0} parameter(0)<31",
            " from instruction: %p30 = f32[16]{0} parameter(0) <1 x><31",
        );
        let (serial, chunks) = both(data.as_bytes(), false, 1);
        assert!(assert_same(&serial, &chunks.expect("split")) > 20);
    }

    #[test]
    fn cuts_are_increasing_line_starts_accepted() {
        let data = ba_text(50, false);
        let ok = |p: usize| ChunkStart::of(line_at(&data, p)).map(|_| p);
        let cuts = plan_cuts(&data, 0, 16, 1, &ok);
        assert!(cuts.len() > 8);
        assert!(cuts.windows(2).all(|w| w[0] < w[1]));
        assert!(cuts[1..].iter().all(|&c| data[c - 1] == b'\n' && ok(c) == Some(c)));
        assert_eq!(ChunkStart::of(b"    12:abc"), None); // the InstructionSequence is counted whole
        assert_eq!(ChunkStart::of(b"    a.1{}:3-9"), Some(ChunkStart::LiveRange));
        assert_eq!(ChunkStart::of(b"    a.1{}: 64 bytes"), None);
        assert_eq!(ChunkStart::of(b"    label (50%, total: 1 bytes)"), None);
    }
}
