//! List columns: `StrList` (`list<string_view>`) and `StructList` (`list<struct>`).

use std::sync::Arc;

use arrow_array::{ArrayRef, ListArray, StructArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};

use super::{Column, ViewCol};

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
        crate::runtime::push(&mut self.offsets, self.items.len() as i32);
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
    /// Room for `additional` rows and (a guess) twice as many items.
    fn reserve(&mut self, additional: usize) {
        crate::runtime::reserve(&mut self.offsets, additional + 1);
        Column::reserve(&mut self.items, 2 * additional);
    }
    fn pending(&self) -> bool {
        self.items.len() as i32 > self.offsets.last().copied().unwrap_or(0)
    }
    fn set_built(&mut self, built: bool) {
        self.items.set_built(built)
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
        crate::runtime::push(&mut self.offsets, self.items.count() as i32);
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
    fn pending(&self) -> bool {
        self.items.count() as i32 > self.offsets.last().copied().unwrap_or(0)
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
