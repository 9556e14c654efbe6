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

/// `list<list<int32>>` (non-null): per row a list of paths, e.g. `instructions.operand_index`,
/// per operand its tuple path (`%x#0#1` → `[0, 1]`, a whole value → `[]`). Not built (a
/// projection without it): rows are only counted.
#[derive(Default)]
pub struct PathList {
    /// Row starts into `path_offsets` (one more than rows once a row is closed).
    row_offsets: Vec<i32>,
    /// Path starts into `values`.
    path_offsets: Vec<i32>,
    values: Vec<i32>,
    rows: usize,
    skip: bool,
}

impl PathList {
    /// One path of the current row.
    #[inline]
    pub fn push_path(&mut self, path: &[i32]) {
        if self.skip {
            return;
        }
        if self.path_offsets.is_empty() {
            self.path_offsets.push(0);
        }
        self.values.extend_from_slice(path);
        crate::runtime::push(&mut self.path_offsets, self.values.len() as i32);
    }

    /// Close the current row (after its paths).
    #[inline]
    pub fn end_row(&mut self) {
        self.rows += 1;
        if self.skip {
            return;
        }
        if self.row_offsets.is_empty() {
            self.row_offsets.push(0);
        }
        let paths = self.path_offsets.len().saturating_sub(1) as i32;
        crate::runtime::push(&mut self.row_offsets, paths);
    }

    pub fn is_built(&self) -> bool {
        !self.skip
    }

    fn inner_type() -> DataType {
        DataType::List(list_field(DataType::Int32))
    }
}

impl Column for PathList {
    fn data_type() -> DataType {
        DataType::List(list_field(Self::inner_type()))
    }
    fn nullable() -> bool {
        false
    }
    fn len(&self) -> usize {
        self.rows
    }
    fn reserve(&mut self, additional: usize) {
        if !self.skip {
            crate::runtime::reserve(&mut self.row_offsets, additional + 1);
            crate::runtime::reserve(&mut self.path_offsets, 2 * additional + 1);
        }
    }
    fn pending(&self) -> bool {
        !self.skip && self.path_offsets.len().saturating_sub(1) as i32 > self.row_offsets.last().copied().unwrap_or(0)
    }
    fn set_built(&mut self, built: bool) {
        self.skip = !built;
    }
    fn finish(mut self, _blocks: &[Buffer]) -> ArrayRef {
        if self.skip {
            // not projected (callers drop it): every row an empty list
            self.row_offsets = crate::runtime::zeros(self.rows + 1);
            self.path_offsets = vec![0];
            self.values.clear();
        }
        if self.row_offsets.is_empty() {
            self.row_offsets.push(0);
        }
        if self.path_offsets.is_empty() {
            self.path_offsets.push(0);
        }
        let values = Arc::new(arrow_array::Int32Array::from(self.values));
        let paths = Arc::new(ListArray::new(
            list_field(DataType::Int32),
            OffsetBuffer::new(ScalarBuffer::from(self.path_offsets)),
            values,
            None,
        ));
        Arc::new(ListArray::new(list_field(Self::inner_type()), OffsetBuffer::new(ScalarBuffer::from(self.row_offsets)), paths, None))
    }
}
