//! Text we make (paths, kinds, messages): `large_string`, not views into the input.

use std::sync::Arc;

use arrow_array::builder::LargeStringBuilder;
use arrow_array::ArrayRef;
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::Column;

/// A `large_string` column of text we make (paths, kinds, messages): not from the input.
/// 64-bit offsets: error rows quote their lines, and a `string` column of them overflowed its
/// 32-bit offsets at 2 GiB ("byte array offset overflow", no tables at all).
#[derive(Default)]
pub struct Text(pub Vec<Option<String>>);

impl Text {
    pub fn push(&mut self, s: impl Into<String>) {
        self.0.push(Some(s.into()))
    }
    pub fn push_opt(&mut self, s: Option<impl Into<String>>) {
        self.0.push(s.map(Into::into))
    }
}

fn finish_text(v: Vec<Option<String>>) -> ArrayRef {
    let bytes = v.iter().map(|s| s.as_ref().map_or(0, |s| s.len())).sum();
    let mut b = LargeStringBuilder::with_capacity(v.len(), bytes);
    for s in v {
        b.append_option(s);
    }
    Arc::new(b.finish())
}

impl Column for Text {
    fn data_type() -> DataType {
        DataType::LargeUtf8
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        finish_text(self.0)
    }
}

/// Nullable owned text.
#[derive(Default)]
pub struct OptText(pub Text);

impl OptText {
    pub fn push_opt(&mut self, s: Option<impl Into<String>>) {
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
        self.0.len()
    }
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        finish_text(self.0 .0)
    }
}
