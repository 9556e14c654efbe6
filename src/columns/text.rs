//! Text we make (paths, kinds, messages): `large_string`, not views into the input.

use std::sync::Arc;

use arrow_array::{ArrayRef, LargeStringArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::{Column, NullBits};

/// A `large_string` column of text we make (paths, kinds, messages): not from the input.
/// 64-bit offsets: error rows quote their lines, and a `string` column of them overflowed its
/// 32-bit offsets at 2 GiB ("byte array offset overflow", no tables at all). The bytes and
/// offsets are the Arrow buffers themselves, grown fallibly (`runtime::reserve`): error rows can
/// add up to many times the file (a file of short bad lines: ~50×), and a memory limit reached
/// there is a `MemoryError`, not an abort (issue 50); `finish` copies nothing.
#[derive(Default)]
pub struct Text {
    bytes: Vec<u8>,
    /// The end of each row's text (the first start, 0, is added by `finish`).
    ends: Vec<i64>,
    nulls: NullBits,
}

impl Text {
    pub fn push(&mut self, s: impl AsRef<str>) {
        let s = s.as_ref().as_bytes();
        crate::runtime::reserve(&mut self.bytes, s.len());
        self.bytes.extend_from_slice(s);
        crate::runtime::push(&mut self.ends, self.bytes.len() as i64);
    }
    pub fn push_opt(&mut self, s: Option<impl AsRef<str>>) {
        match s {
            Some(s) => self.push(s),
            None => {
                self.nulls.set(self.ends.len());
                crate::runtime::push(&mut self.ends, self.bytes.len() as i64);
            }
        }
    }
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    /// Row `i`'s text (None: null or no such row).
    pub fn get(&self, i: usize) -> Option<&str> {
        if i >= self.ends.len() || self.is_null(i) {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        std::str::from_utf8(&self.bytes[start..self.ends[i] as usize]).ok()
    }
    fn is_null(&self, i: usize) -> bool {
        self.nulls.is_set(i)
    }
    fn finish_text(self) -> ArrayRef {
        let len = self.ends.len();
        let mut offsets: Vec<i64> = Vec::new();
        crate::runtime::reserve_exact(&mut offsets, len + 1);
        offsets.push(0);
        offsets.extend_from_slice(&self.ends);
        drop(self.ends);
        let nulls = self.nulls.finish(len);
        // SAFETY: the offsets start at 0 and never decrease (each is the length of `bytes` after
        // a push), the last is `bytes.len()`, and every row's bytes are a whole `&str`'s.
        let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
        Arc::new(unsafe { LargeStringArray::new_unchecked(offsets, Buffer::from_vec(self.bytes), nulls) })
    }
}

impl Column for Text {
    fn data_type() -> DataType {
        DataType::LargeUtf8
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.ends.len()
    }
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        self.finish_text()
    }
}

/// Nullable owned text.
#[derive(Default)]
pub struct OptText(pub Text);

impl OptText {
    pub fn push_opt(&mut self, s: Option<impl AsRef<str>>) {
        self.0.push_opt(s)
    }
}

impl Column for OptText {
    fn data_type() -> DataType {
        DataType::LargeUtf8
    }
    fn nullable() -> bool {
        true
    }
    fn len(&self) -> usize {
        self.0.ends.len()
    }
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        self.0.finish_text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn text_rows_and_nulls_finish_without_a_copy() {
        let mut t = OptText::default();
        t.push_opt(Some("ab"));
        t.push_opt(None::<&str>);
        t.push_opt(Some(String::from("")));
        t.push_opt(Some("ünï"));
        assert_eq!((t.0.get(0), t.0.get(1), t.0.get(2), t.0.get(3), t.0.get(4)), (Some("ab"), None, Some(""), Some("ünï"), None));
        let a = t.finish(&[]);
        let a = a.as_any().downcast_ref::<LargeStringArray>().unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![Some("ab"), None, Some(""), Some("ünï")]);
        assert_eq!(a.null_count(), 1);
        let empty = Text::default().finish(&[]);
        assert_eq!(empty.len(), 0);
    }
}
