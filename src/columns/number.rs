//! Numbers and flags: `I32`, `I64` and their nullable forms, `F64`, `Bool`.

use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, ScalarBuffer};
use arrow_schema::DataType;

use super::{Column, NullBits};

/// Rows of a number column nobody asked for (`Column::set_built(false)`): counted, not stored,
/// so a projected read writes (and faults in) no memory for them.
#[derive(Default, Clone, Copy, Debug)]
pub struct Skipped(Option<usize>);

impl Skipped {
    /// True (and the row counted) when the column is not built.
    #[inline(always)]
    fn count(&mut self) -> bool {
        match &mut self.0 {
            Some(n) => {
                *n += 1;
                true
            }
            None => false,
        }
    }
    fn rows(self) -> usize {
        self.0.unwrap_or(0)
    }
    fn built(self) -> bool {
        self.0.is_none()
    }
    fn set(&mut self, built: bool) {
        self.0 = if built { None } else { Some(0) };
    }
}

macro_rules! number_column {
    ($name:ident, $opt:ident, $native:ty, $arrow:ty, $dt:expr) => {
        /// Numbers (the values in `.0`; `.1`: not built, rows only counted).
        #[derive(Default)]
        pub struct $name(pub Vec<$native>, Skipped);

        impl $name {
            #[inline]
            pub fn push(&mut self, v: $native) {
                if self.1.count() {
                    return;
                }
                crate::runtime::push(&mut self.0, v)
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
                self.0.len() + self.1.rows()
            }
            fn reserve(&mut self, additional: usize) {
                if self.1.built() {
                    crate::runtime::reserve(&mut self.0, additional)
                }
            }
            fn set_built(&mut self, built: bool) {
                debug_assert_eq!(Column::len(self), 0, "projection is decided before parsing");
                self.1.set(built);
            }
            fn finish(self, _: &[Buffer]) -> ArrayRef {
                // not projected (callers drop it): zeros, pages never touched
                let values = if self.1.built() { self.0 } else { crate::runtime::zeros(self.1.rows()) };
                Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(values), None))
            }
        }

        /// Nullable numbers: values and (lazily) the null rows; a null's value slot is 0.
        #[derive(Default)]
        pub struct $opt {
            values: Vec<$native>,
            nulls: NullBits,
            skipped: Skipped,
        }

        impl $opt {
            /// Whether values pushed are kept (see `ViewCol::is_built`).
            pub fn is_built(&self) -> bool {
                self.skipped.built()
            }

            #[inline]
            pub fn push(&mut self, v: Option<$native>) {
                if self.skipped.count() {
                    return;
                }
                match v {
                    Some(v) => crate::runtime::push(&mut self.values, v),
                    None => {
                        self.nulls.set(self.values.len());
                        crate::runtime::push(&mut self.values, 0);
                    }
                }
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
                self.values.len() + self.skipped.rows()
            }
            fn reserve(&mut self, additional: usize) {
                if self.skipped.built() {
                    crate::runtime::reserve(&mut self.values, additional)
                }
            }
            fn set_built(&mut self, built: bool) {
                debug_assert_eq!(Column::len(self), 0, "projection is decided before parsing");
                self.skipped.set(built);
            }
            fn finish(self, _: &[Buffer]) -> ArrayRef {
                if !self.skipped.built() {
                    return Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(crate::runtime::zeros::<$native>(self.skipped.rows())), None));
                }
                let len = self.values.len();
                let nulls = self.nulls.finish(len);
                Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(self.values), nulls))
            }
        }
    };
}

number_column!(I32, OptI32, i32, Int32Type, DataType::Int32);
number_column!(I64, OptI64, i64, Int64Type, DataType::Int64);

/// `float64` (values in a `Vec` that grows fallibly, like every builder here).
#[derive(Default)]
pub struct F64(pub Vec<f64>);

impl F64 {
    pub fn push(&mut self, v: f64) {
        crate::runtime::push(&mut self.0, v)
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
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        Arc::new(Float64Array::new(ScalarBuffer::from(self.0), None))
    }
}

/// `bool`, packed 64 rows to a word as rows come (grows fallibly).
#[derive(Default)]
pub struct Bool {
    words: Vec<u64>,
    len: usize,
}

impl Bool {
    #[inline]
    pub fn push(&mut self, v: bool) {
        if self.len % 64 == 0 {
            crate::runtime::push(&mut self.words, 0);
        }
        if v {
            *self.words.last_mut().expect("a word for this row") |= 1u64 << (self.len % 64);
        }
        self.len += 1;
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
        self.len
    }
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        let words: Vec<u64> = self.words.into_iter().map(u64::to_le).collect();
        Arc::new(BooleanArray::new(BooleanBuffer::new(Buffer::from_vec(words), 0, self.len), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn bools_and_floats() {
        let mut b = Bool::default();
        let want: Vec<bool> = (0..130).map(|i| i % 3 == 0 || i == 129).collect();
        want.iter().for_each(|&v| b.push(v));
        let a = b.finish(&[]);
        let a = a.as_any().downcast_ref::<BooleanArray>().unwrap();
        assert_eq!(a.iter().map(Option::unwrap).collect::<Vec<_>>(), want);
        let mut f = F64::default();
        f.push(1.5);
        f.push(-2.0);
        let a = f.finish(&[]);
        assert_eq!(a.as_any().downcast_ref::<Float64Array>().unwrap().values().to_vec(), vec![1.5, -2.0]);
        assert_eq!(Bool::default().finish(&[]).len(), 0);
    }

    #[test]
    fn numbers_not_projected_count_rows_and_store_nothing() {
        let mut a = I64::default();
        Column::set_built(&mut a, false);
        let mut b = OptI32::default();
        Column::set_built(&mut b, false);
        for k in 0..1000 {
            a.push(k);
            b.push((k % 2 == 0).then_some(k as i32));
        }
        assert_eq!((Column::len(&a), a.0.capacity()), (1000, 0));
        assert_eq!((Column::len(&b), b.values.capacity()), (1000, 0));
        assert_eq!(Column::finish(a, &[]).len(), 1000);
        assert_eq!(Column::finish(b, &[]).len(), 1000);
        // built (the default): the values
        let mut c = OptI32::default();
        c.push(Some(7));
        c.push(None);
        let c = Column::finish(c, &[]);
        let c = c.as_any().downcast_ref::<arrow_array::Int32Array>().unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![Some(7), None]);
    }
}
