//! Column builders. Text columns are zero-copy: a `ViewCol` records where each string lies in
//! the input (see `source.rs`) and becomes a `StringViewArray` over the input's own buffers.
//! Strings that are not in the input (unescaped text, numbers we format) go to a small side
//! buffer owned by the column: the only copies we make.

mod dict;
mod list;
mod number;
mod text;
mod view;

pub use dict::*;
pub use list::*;
pub use number::*;
pub use text::*;
pub use view::*;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::DataType;

/// A column of a table: knows its Arrow type and how to finish into an array.
pub trait Column: Default {
    fn data_type() -> DataType;
    fn nullable() -> bool;
    fn len(&self) -> usize;
    /// Room for `additional` more rows (a hint: columns that cannot reserve ignore it).
    fn reserve(&mut self, _additional: usize) {}
    fn finish(self, blocks: &[Buffer]) -> ArrayRef;
    /// Items pushed for a row that is not closed yet (list columns between their items and
    /// `end_row`): the table cannot be flushed now.
    fn pending(&self) -> bool {
        false
    }
    /// Projection (`read_arrow(columns=...)`, `scan(columns=...)`): a column nobody asked for
    /// is told so before parsing and may stop building (it only counts rows). Text, numbers and
    /// lists stop; flags (a bit a row) keep building and are dropped when finished.
    fn set_built(&mut self, _built: bool) {}
}

/// Rows that are null, as set bits of little-endian words (bit `i % 64` of word `i / 64`, the
/// Arrow bit order). Words are only allocated up to the last null, so a column without nulls
/// costs nothing, and a non-null row costs nothing to record: the validity bitmap is the
/// complement, made once in `finish`.
#[derive(Default)]
pub struct NullBits {
    words: Vec<u64>,
    count: usize,
}

impl NullBits {
    #[inline]
    pub fn set(&mut self, row: usize) {
        let w = row / 64;
        if w >= self.words.len() {
            self.grow(w);
        }
        self.words[w] |= 1u64 << (row % 64);
        self.count += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, w: usize) {
        let add = (w + 1).saturating_sub(self.words.len()).max(self.words.len());
        crate::runtime::reserve(&mut self.words, add);
        self.words.resize(w + 1, 0);
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether row `row` was set null.
    pub fn is_set(&self, row: usize) -> bool {
        self.words.get(row / 64).is_some_and(|w| w & (1u64 << (row % 64)) != 0)
    }

    /// The validity buffer of a column of `len` rows; None when no row is null.
    pub fn finish(self, len: usize) -> Option<NullBuffer> {
        if self.count == 0 {
            return None;
        }
        let n = len.div_ceil(64);
        let mut valid: Vec<u64> = Vec::new();
        crate::runtime::reserve_exact(&mut valid, n);
        valid.extend(self.words.iter().take(n).map(|w| !w));
        valid.resize(n, !0);
        let valid: Vec<u64> = valid.into_iter().map(u64::to_le).collect();
        let bits = BooleanBuffer::new(Buffer::from_vec(valid), 0, len);
        // SAFETY: `count` bits below `len` are set in `words`, so `count` rows are null.
        Some(unsafe { NullBuffer::new_unchecked(bits, self.count) })
    }
}

/// Checks that all columns of a finished table have the same length (a bug otherwise).
pub fn check_lengths(table: &str, arrays: &[ArrayRef]) {
    if let Some(first) = arrays.first() {
        for a in arrays {
            assert_eq!(a.len(), first.len(), "table {table}: columns of different lengths");
        }
    }
}

