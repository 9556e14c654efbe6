//! What no single line of a buffer assignment shows (FORMATS.md §2.10), gathered while parsing
//! and reported at the end of a file that has no error (a file with errors is known to be
//! incomplete: no second report of the same cut): an allocation listed twice (two buffer
//! assignments concatenated into one file: every figure would count twice), a value past the
//! end of its allocation (offset + size > the largest size the file gives it), and an
//! `HloLiveRange (max N)` header with N > 0 in a file with no `InstructionSequence` line at all
//! (cut right after its header), and a file opened by `BufferAssignment:` without a single
//! allocation line (cut right after it). A file read in chunks gathers them per chunk and joins them
//! (`Checks::append`). The reference is `reference/buffer_assignment.py` `whole_file_problems`.

use std::collections::HashMap;

/// What the checks gather of one file (or of one chunk, its lines counted from the chunk's start).
///
/// Why a list and not a map: XLA lists each allocation once, in increasing index order, and a
/// value right under its allocation. So the common case is checked without hashing: the
/// allocations are a strictly increasing run (then none is listed twice, and each has one
/// size), and a value is compared with the allocation just listed. A map is built only when
/// the run is broken (an allocation listed twice, or out of order) or a value names another
/// allocation — rare, and exact either way. Joining chunks is appending their lists.
#[derive(Default)]
pub struct Checks {
    /// (line, allocation, size) of every allocation line, in file order.
    allocations: Vec<(u64, i64, i64)>,
    /// The allocation indices so far strictly increase (no allocation listed twice).
    increasing: bool,
    /// (line, value, allocation, offset, size) of the values that may lie past their allocation:
    /// past the allocation listed just before them, or of another allocation (judged at the end
    /// against the largest size the file gives it).
    candidates: Vec<(u64, i64, i64, i64, i64)>,
    /// (line, N) of `HloLiveRange (max N)` headers with N > 0
    live_max: Vec<(u64, i64)>,
    /// A schedule (`InstructionSequence`) line was read.
    scheduled: bool,
    /// Whether the first section header was `BufferAssignment:` (None: no header yet).
    opened_by_allocations: Option<bool>,
}

impl Checks {
    pub fn allocation(&mut self, line: u64, allocation: i64, size: i64) {
        self.increasing = match self.allocations.last() {
            None => true,
            Some(&(_, last, _)) => self.increasing && allocation > last,
        };
        self.allocations.push((line, allocation, size));
    }

    /// A value row of `allocation` (in the text, the allocation listed just before it).
    #[inline]
    pub fn value(&mut self, line: u64, value: i64, allocation: i64, offset: i64, size: i64) {
        let fits = match self.allocations.last() {
            Some(&(_, a, largest)) if a == allocation && self.increasing => offset as i128 + size as i128 <= largest as i128,
            _ => false,
        };
        if !fits {
            self.candidates.push((line, value, allocation, offset, size));
        }
    }

    pub fn live_range_max(&mut self, line: u64, max: i64) {
        if max > 0 {
            self.live_max.push((line, max));
        }
    }

    pub fn scheduled(&mut self) {
        self.scheduled = true;
    }

    /// A section header; `allocations`: it is `BufferAssignment:`.
    pub fn section(&mut self, allocations: bool) {
        self.opened_by_allocations.get_or_insert(allocations);
    }

    /// Join the checks of the chunk after this one (its lines counted from `base`).
    pub fn append(&mut self, next: Checks, base: u64) {
        if let Some(&(_, first, _)) = next.allocations.first() {
            self.increasing = match self.allocations.last() {
                None => next.increasing,
                Some(&(_, last, _)) => self.increasing && next.increasing && first > last,
            };
        }
        self.allocations.extend(next.allocations.into_iter().map(|(l, a, s)| (l + base, a, s)));
        self.candidates.extend(next.candidates.into_iter().map(|(l, v, a, o, s)| (l + base, v, a, o, s)));
        self.live_max.extend(next.live_max.into_iter().map(|(l, n)| (l + base, n)));
        self.scheduled |= next.scheduled;
        // (the first chunk starts the file: its first header is the file's)
        self.opened_by_allocations = self.opened_by_allocations.or(next.opened_by_allocations);
    }

    /// The problems, as (line, message), in the order they are reported: allocations listed
    /// again, values past their allocation's largest size, live ranges cut after their header,
    /// a buffer assignment without allocations.
    pub fn problems(&self) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        // allocation -> (the line it is first listed at, the largest size listed for it), only
        // when something needs looking up
        let mut listed: HashMap<i64, (u64, i64)> = HashMap::new();
        if !self.increasing || !self.candidates.is_empty() {
            for &(line, a, size) in &self.allocations {
                match listed.get_mut(&a) {
                    None => {
                        listed.insert(a, (line, size));
                    }
                    Some(seen) => {
                        out.push((line, format!("allocation {a} again (first at line {}): two buffer assignments in one file?", seen.0)));
                        seen.1 = seen.1.max(size);
                    }
                }
            }
        }
        for &(line, value, a, offset, size) in &self.candidates {
            // a value of an allocation the file does not list: nothing to hold it against
            let Some(&(_, largest)) = listed.get(&a) else { continue };
            if offset as i128 + size as i128 > largest as i128 {
                out.push((line, format!("value {value} lies past the end of allocation {a} (offset {offset} + size {size} > {largest} bytes)")));
            }
        }
        if !self.scheduled {
            for &(line, n) in &self.live_max {
                out.push((line, format!("HloLiveRange (max {n}) but no InstructionSequence follows: the file is cut short after its header")));
            }
        }
        if self.opened_by_allocations == Some(true) && self.allocations.is_empty() {
            out.push((1, "BufferAssignment without a single allocation (the file is cut short?)".to_string()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocations and values fed in one piece or cut in chunks (lines counted from each
    /// chunk's start, joined with `append`): the same problems, in the same order.
    #[test]
    fn chunks_joined_equal_one_piece() {
        // (line, allocation, size) of allocation lines; (line, value, allocation, offset, size)
        let allocs = [(2, 0, 64), (4, 1, 32), (6, 0, 16), (8, 2, 8), (10, 1, 64), (12, 3, 8)];
        let values = [(3, 10, 0, 0, 64), (7, 11, 0, 8, 60), (9, 12, 2, 4, 8), (11, 13, 1, 0, 40), (13, 14, 3, 0, 8)];
        let feed = |c: &mut Checks, from: u64, to: u64, base: u64| {
            for &(l, a, s) in allocs.iter().filter(|r| r.0 >= from && r.0 < to) {
                c.allocation(l - base, a, s);
            }
            for &(l, v, a, o, s) in values.iter().filter(|r| r.0 >= from && r.0 < to) {
                c.value(l - base, v, a, o, s);
            }
        };
        let mut one = Checks::default();
        feed(&mut one, 0, 100, 0);
        let want = one.problems();
        assert_eq!(want.len(), 4, "{want:?}"); // 0 and 1 listed again; values 11 (8 + 60 > 64) and 12 past
        // (chunks start at allocation lines, as `split.rs` cuts: a value is in its allocation's chunk)
        for cuts in [vec![4u64], vec![6, 10], vec![4, 8, 12]] {
            let bounds: Vec<u64> = std::iter::once(1).chain(cuts.iter().copied()).chain(std::iter::once(100)).collect();
            let mut joined = Checks::default();
            for w in bounds.windows(2) {
                let mut c = Checks::default();
                feed(&mut c, w[0], w[1], w[0] - 1);
                joined.append(c, w[0] - 1);
            }
            assert_eq!(joined.problems(), want, "cuts {cuts:?}");
        }
    }
}
