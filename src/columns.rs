//! Column builders. Text columns are zero-copy: a `ViewCol` records where each string lies in
//! the input (see `source.rs`) and becomes a `StringViewArray` over the input's own buffers.
//! Strings that are not in the input (unescaped text, numbers we format) go to a small side
//! buffer owned by the column: the only copies we make.

use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, BooleanBuilder, Float64Builder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, ListArray, PrimitiveArray, StringViewArray, StructArray,
};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_data::ByteView;
use arrow_schema::{DataType, Field, Fields};

use crate::source::SourceRef;

/// Block index placeholder for views into the column's own side buffer (patched in `finish`).
const OWNED: u32 = u32::MAX;

/// A column of a table: knows its Arrow type and how to finish into an array.
pub trait Column: Default {
    fn data_type() -> DataType;
    fn nullable() -> bool;
    fn len(&self) -> usize;
    fn finish(self, blocks: &[Buffer]) -> ArrayRef;
}

// ------------------------------------------------------------------------------ text (views)

/// `string_view` builder whose views point into the input blocks.
#[derive(Default)]
pub struct ViewCol {
    views: Vec<u128>,
    nulls: Option<NullBufferBuilder>,
    owned: Vec<u8>,
}

impl ViewCol {
    #[inline]
    fn view(&mut self, src: &SourceRef, s: &[u8]) -> u128 {
        let len = s.len();
        if len <= 12 {
            let mut v = [0u8; 16];
            v[..4].copy_from_slice(&(len as u32).to_le_bytes());
            v[4..4 + len].copy_from_slice(s);
            return u128::from_le_bytes(v);
        }
        let (block, offset) = match src.locate(s) {
            Some(x) => x,
            None => {
                let at = self.owned.len() as u32;
                self.owned.extend_from_slice(s);
                (OWNED, at)
            }
        };
        ByteView::new(len as u32, &s[..4]).with_buffer_index(block).with_offset(offset).as_u128()
    }

    /// Append a slice of the input (copied only if it is not inside the input).
    #[inline]
    pub fn push(&mut self, src: &SourceRef, s: &[u8]) {
        let v = self.view(src, s);
        self.views.push(v);
        if let Some(n) = self.nulls.as_mut() {
            n.append_non_null();
        }
    }

    #[inline]
    pub fn push_opt(&mut self, src: &SourceRef, s: Option<&[u8]>) {
        match s {
            Some(s) => self.push(src, s),
            None => self.push_null(),
        }
    }

    /// Append text that is not in the input (always copied to the side buffer).
    pub fn push_owned(&mut self, s: &[u8]) {
        self.push(&SourceRef::none(), s)
    }

    pub fn push_null(&mut self) {
        let len = self.views.len();
        let n = self.nulls.get_or_insert_with(|| {
            let mut b = NullBufferBuilder::new(len + 1);
            b.append_n_non_nulls(len);
            b
        });
        n.append_null();
        self.views.push(0);
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Keep the first `n` rows (used to drop the items of an unfinished record).
    pub fn truncate(&mut self, n: usize) {
        assert!(self.nulls.is_none(), "truncate is for columns without nulls");
        self.views.truncate(n);
    }

    pub fn finish_array(mut self, blocks: &[Buffer]) -> StringViewArray {
        let mut buffers: Vec<Buffer> = blocks.to_vec();
        if !self.owned.is_empty() {
            let owned_block = buffers.len() as u32;
            for v in self.views.iter_mut() {
                let bv = ByteView::from(*v);
                if bv.length > 12 && bv.buffer_index == OWNED {
                    *v = bv.with_buffer_index(owned_block).as_u128();
                }
            }
            buffers.push(Buffer::from_vec(std::mem::take(&mut self.owned)));
        }
        let nulls = self.nulls.as_mut().and_then(|n| n.finish());
        // SAFETY: every view was made by `view()` from a slice of a block (or of the side
        // buffer) at the recorded offset. Inputs are validated as UTF-8 before parsing and
        // slices are only cut at ASCII delimiters, so every view is valid UTF-8.
        unsafe { StringViewArray::new_unchecked(ScalarBuffer::from(self.views), buffers, nulls) }
    }
}

impl Column for ViewCol {
    fn data_type() -> DataType {
        DataType::Utf8View
    }
    fn nullable() -> bool {
        true
    }
    fn len(&self) -> usize {
        self.views.len()
    }
    fn finish(self, blocks: &[Buffer]) -> ArrayRef {
        Arc::new(self.finish_array(blocks))
    }
}

/// A `string_view` column that never holds nulls (the schema says non-nullable).
#[derive(Default)]
pub struct Str(pub ViewCol);

impl Str {
    #[inline]
    pub fn push(&mut self, src: &SourceRef, s: &[u8]) {
        self.0.push(src, s)
    }
    pub fn push_owned(&mut self, s: &[u8]) {
        self.0.push_owned(s)
    }
}

impl Column for Str {
    fn data_type() -> DataType {
        DataType::Utf8View
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn finish(self, blocks: &[Buffer]) -> ArrayRef {
        Arc::new(self.0.finish_array(blocks))
    }
}

/// Nullable `string_view` column.
pub type OptStr = ViewCol;

// ------------------------------------------------------------------------------ owned text

/// A `string` (utf8) column of text we make (paths, kinds, messages): not from the input.
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
    let mut b = StringBuilder::with_capacity(v.len(), bytes);
    for s in v {
        b.append_option(s);
    }
    Arc::new(b.finish())
}

impl Column for Text {
    fn data_type() -> DataType {
        DataType::Utf8
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
        DataType::Utf8
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

// ------------------------------------------------------------------------------ numbers

macro_rules! number_column {
    ($name:ident, $opt:ident, $native:ty, $arrow:ty, $dt:expr) => {
        #[derive(Default)]
        pub struct $name(pub Vec<$native>);

        impl $name {
            #[inline]
            pub fn push(&mut self, v: $native) {
                self.0.push(v)
            }
        }

        impl Column for $name {
            fn data_type() -> DataType {
                $dt
            }
            fn nullable() -> bool {
                false
            }
            fn len(&self) -> usize {
                self.0.len()
            }
            fn finish(self, _: &[Buffer]) -> ArrayRef {
                Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(self.0), None))
            }
        }

        #[derive(Default)]
        pub struct $opt(pub PrimitiveBuilder<$arrow>);

        impl $opt {
            #[inline]
            pub fn push(&mut self, v: Option<$native>) {
                self.0.append_option(v)
            }
        }

        impl Column for $opt {
            fn data_type() -> DataType {
                $dt
            }
            fn nullable() -> bool {
                true
            }
            fn len(&self) -> usize {
                self.0.len()
            }
            fn finish(mut self, _: &[Buffer]) -> ArrayRef {
                Arc::new(self.0.finish())
            }
        }
    };
}

number_column!(I32, OptI32, i32, Int32Type, DataType::Int32);
number_column!(I64, OptI64, i64, Int64Type, DataType::Int64);

#[derive(Default)]
pub struct F64(pub Float64Builder);

impl F64 {
    pub fn push(&mut self, v: f64) {
        self.0.append_value(v)
    }
}

impl Column for F64 {
    fn data_type() -> DataType {
        DataType::Float64
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn finish(mut self, _: &[Buffer]) -> ArrayRef {
        let a: Float64Array = self.0.finish();
        Arc::new(a)
    }
}

#[derive(Default)]
pub struct Bool(pub BooleanBuilder);

impl Bool {
    #[inline]
    pub fn push(&mut self, v: bool) {
        self.0.append_value(v)
    }
}

impl Column for Bool {
    fn data_type() -> DataType {
        DataType::Boolean
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn finish(mut self, _: &[Buffer]) -> ArrayRef {
        let a: BooleanArray = self.0.finish();
        Arc::new(a)
    }
}

// ------------------------------------------------------------------------------ lists

/// `list<string_view>` (non-null items): e.g. operand names.
#[derive(Default)]
pub struct StrList {
    offsets: Vec<i32>,
    pub items: ViewCol,
}

impl StrList {
    /// Close the current list (call after pushing its items into `items`).
    pub fn end_row(&mut self) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.offsets.push(self.items.len() as i32);
    }
}

fn list_field(item: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", item, false))
}

impl Column for StrList {
    fn data_type() -> DataType {
        DataType::List(list_field(DataType::Utf8View))
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    fn finish(mut self, blocks: &[Buffer]) -> ArrayRef {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let values = Arc::new(self.items.finish_array(blocks));
        Arc::new(ListArray::new(
            list_field(DataType::Utf8View),
            OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
            values,
            None,
        ))
    }
}

/// Builds a `list<struct<…>>` column from child columns that the caller fills row by row.
pub struct StructList<C> {
    offsets: Vec<i32>,
    len: usize,
    pub items: C,
}

impl<C: Default> Default for StructList<C> {
    fn default() -> Self {
        StructList { offsets: vec![0], len: 0, items: C::default() }
    }
}

/// The children of a struct item: how many items, their fields, and their arrays.
pub trait StructItems: Default {
    fn fields() -> Fields;
    fn count(&self) -> usize;
    fn finish(self, blocks: &[Buffer]) -> Vec<ArrayRef>;
}

impl<C: StructItems> StructList<C> {
    pub fn end_row(&mut self) {
        self.offsets.push(self.items.count() as i32);
        self.len += 1;
    }
}

impl<C: StructItems> Column for StructList<C> {
    fn data_type() -> DataType {
        DataType::List(list_field(DataType::Struct(C::fields())))
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.len
    }
    fn finish(self, blocks: &[Buffer]) -> ArrayRef {
        let arrays = self.items.finish(blocks);
        let values = Arc::new(StructArray::new(C::fields(), arrays, None));
        Arc::new(ListArray::new(
            list_field(DataType::Struct(C::fields())),
            OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
            values,
            None,
        ))
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
