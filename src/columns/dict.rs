//! Dictionary-encoded text: `DictCol` and its wrappers.

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, LargeStringArray, PrimitiveArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::bytes::same_bytes;
use crate::source::SourceRef;

use super::{Column, NullBits};

/// The Arrow type of a dictionary-encoded text column: int32 keys into the distinct values of
/// the batch. Values are `large_string` (copies of the distinct strings, so a batch owns its
/// dictionary and never points into the input): 64-bit offsets, so no input is too big for
/// one batch's dictionary, and every consumer takes it (pyarrow's cast to `large_string`,
/// Parquet, Polars — a Categorical —, DuckDB — VARCHAR —, Arrow C streams).
pub fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::LargeUtf8))
}

/// A hash of a short byte string (opcodes, shapes, paths: mostly ≤ 64 bytes): words read
/// little-endian, folded with 128-bit multiplies (the folded-multiply mix of foldhash/wyhash).
/// Not for untrusted collision resistance: a bad case only makes the probe sequence longer.
#[inline(always)]
fn hash_bytes(s: &[u8]) -> u64 {
    const K0: u64 = 0x243f_6a88_85a3_08d3;
    const K1: u64 = 0x1319_8a2e_0370_7344;
    const K2: u64 = 0xa409_3822_299f_31d0;
    #[inline(always)]
    fn mix(a: u64, b: u64) -> u64 {
        let m = (a as u128).wrapping_mul(b as u128);
        (m as u64) ^ ((m >> 64) as u64)
    }
    let rd8 = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    let rd4 = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap()) as u64;
    let len = s.len();
    let (a, b) = if len >= 16 {
        let mut h = K2 ^ len as u64;
        let mut at = 0;
        while at + 16 < len {
            h = mix(rd8(at) ^ K0, rd8(at + 8) ^ h);
            at += 16;
        }
        (rd8(len - 16) ^ h, rd8(len - 8))
    } else if len >= 8 {
        (rd8(0), rd8(len - 8))
    } else if len >= 4 {
        (rd4(0), rd4(len - 4))
    } else if len > 0 {
        ((s[0] as u64) << 16 | (s[len / 2] as u64) << 8 | s[len - 1] as u64, 0)
    } else {
        (0, 0)
    };
    mix(a ^ K0, b ^ K1 ^ (len as u64).rotate_left(32))
}

/// Dictionary-encoded text (`dictionary<int32, large_string>`) for columns with few distinct
/// values (opcodes, shapes, source files, kinds …): 4 bytes per row instead of a 16-byte view,
/// and the distinct strings once per batch. Same push interface as `ViewCol`; every flushed
/// batch carries its own dictionary (`finish`), in first-seen order.
///
/// Lookup: a one-entry cache (the previous row's value: runs of the same source file, shape …)
/// then an open-addressing table of (32 hash bits, key + 1) slots, at most half full.
pub struct DictCol {
    keys: Vec<i32>,
    nulls: NullBits,
    /// The distinct values, concatenated in first-seen order; value `k` is
    /// `bytes[offsets[k]..offsets[k + 1]]`.
    bytes: Vec<u8>,
    offsets: Vec<i64>,
    /// Slots: 0 empty, else (hash >> 32) << 32 | (key + 1). Length a power of two (or 0).
    slots: Vec<u64>,
    /// The key of the last non-null row (the one-entry cache), -1 none.
    last: i32,
    /// Not projected: rows are counted here, nothing is built (see `Column::set_built`).
    skipped: Option<usize>,
}

impl Default for DictCol {
    fn default() -> Self {
        DictCol { keys: Vec::new(), nulls: NullBits::default(), bytes: Vec::new(), offsets: vec![0], slots: Vec::new(), last: -1, skipped: None }
    }
}

impl DictCol {
    #[inline(always)]
    fn value(&self, k: usize) -> &[u8] {
        &self.bytes[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }

    /// The rows so far, decoded into copies (tests, debugging): None for a null row.
    pub fn iter(&self) -> impl Iterator<Item = Option<String>> + '_ {
        let nulls = &self.nulls;
        self.keys.iter().enumerate().map(move |(row, &k)| {
            let null = nulls.words.get(row / 64).is_some_and(|w| (w >> (row % 64)) & 1 == 1);
            (!null).then(|| String::from_utf8(self.value(k as usize).to_vec()).expect("values are UTF-8"))
        })
    }

    /// Distinct values so far.
    pub fn distinct(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The key of `s`, added to the dictionary if new.
    #[inline(always)]
    fn key(&mut self, s: &[u8]) -> i32 {
        if self.last >= 0 && same_bytes(self.value(self.last as usize), s) {
            return self.last;
        }
        let k = self.lookup(s);
        self.last = k;
        k
    }

    #[inline]
    fn lookup(&mut self, s: &[u8]) -> i32 {
        if 2 * (self.distinct() + 1) > self.slots.len() {
            self.rehash();
        }
        let h = hash_bytes(s);
        let tag = h >> 32;
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return self.insert(s, i, tag);
            }
            if slot >> 32 == tag {
                let k = (slot as u32 - 1) as usize;
                if same_bytes(self.value(k), s) {
                    return k as i32;
                }
            }
            i = (i + 1) & mask;
        }
    }

    #[inline(never)]
    fn insert(&mut self, s: &[u8], slot: usize, tag: u64) -> i32 {
        let k = self.distinct();
        assert!(k < i32::MAX as usize, "more than 2^31 distinct values in one batch");
        crate::runtime::reserve(&mut self.bytes, s.len());
        self.bytes.extend_from_slice(s);
        crate::runtime::push(&mut self.offsets, self.bytes.len() as i64);
        self.slots[slot] = tag << 32 | (k as u64 + 1);
        k as i32
    }

    /// Double the table (or make the first one) and put every value back.
    #[cold]
    #[inline(never)]
    fn rehash(&mut self) {
        let n = (2 * self.slots.len()).max(64);
        let mut slots: Vec<u64> = Vec::new();
        crate::runtime::reserve_exact(&mut slots, n);
        slots.resize(n, 0);
        let mask = n - 1;
        for k in 0..self.distinct() {
            let h = hash_bytes(self.value(k));
            let mut i = h as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = (h >> 32) << 32 | (k as u64 + 1);
        }
        self.slots = slots;
    }

    /// Room for `additional` more rows without reallocating.
    pub fn reserve(&mut self, additional: usize) {
        crate::runtime::reserve(&mut self.keys, additional);
    }

    /// Append a string (its bytes are copied into the dictionary the first time they are seen;
    /// `_src` is there for the interface `ViewCol` has).
    #[inline(always)]
    pub fn push(&mut self, _src: &SourceRef, s: &[u8]) {
        self.push_owned(s)
    }

    #[inline(always)]
    pub fn push_opt(&mut self, src: &SourceRef, s: Option<&[u8]>) {
        match s {
            Some(s) => self.push(src, s),
            None => self.push_null(),
        }
    }

    /// Append text that is not in the input (the same as `push`: values are copies anyway).
    #[inline(always)]
    pub fn push_owned(&mut self, s: &[u8]) {
        if let Some(n) = &mut self.skipped {
            *n += 1;
            return;
        }
        let k = self.key(s);
        crate::runtime::push(&mut self.keys, k);
    }

    /// Append text we make (kinds, sections, paths …).
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.push_owned(s.as_bytes())
    }

    #[inline]
    pub fn push_null(&mut self) {
        if let Some(n) = &mut self.skipped {
            *n += 1;
            return;
        }
        self.nulls.set(self.keys.len());
        crate::runtime::push(&mut self.keys, 0);
    }

    pub fn len(&self) -> usize {
        self.keys.len() + self.skipped.unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keep the first `n` rows (the dictionary keeps every value seen: still a valid batch).
    pub fn truncate(&mut self, n: usize) {
        assert!(self.nulls.count() == 0, "truncate is for columns without nulls");
        match &mut self.skipped {
            Some(k) => *k = (*k).min(n),
            None => self.keys.truncate(n),
        }
    }

    /// See `Column::set_built`; only before the first row.
    pub fn set_built(&mut self, built: bool) {
        debug_assert_eq!(self.len(), 0, "projection is decided before parsing");
        self.skipped = if built { None } else { Some(0) };
    }

    /// Whether values pushed are kept (a format may skip deriving values nobody will see).
    pub fn is_built(&self) -> bool {
        self.skipped.is_none()
    }

    pub fn finish_array(self) -> DictionaryArray<Int32Type> {
        if let Some(n) = self.skipped {
            // not projected (callers drop it): empty strings, not a copy of anything
            let values = LargeStringArray::from(vec![""]);
            let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(crate::runtime::zeros::<i32>(n)), None);
            return DictionaryArray::new(keys, Arc::new(values));
        }
        let len = self.keys.len();
        let nulls = self.nulls.finish(len);
        let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(self.keys), nulls);
        // SAFETY: offsets start at 0 and grow with `bytes`; every value is a whole string we were
        // given (input slices cut at ASCII delimiters of UTF-8-checked text, or Rust strings).
        let values = unsafe {
            LargeStringArray::new_unchecked(OffsetBuffer::new_unchecked(ScalarBuffer::from(self.offsets)), Buffer::from_vec(self.bytes), None)
        };
        // SAFETY: every key of a valid row was returned by `key`, so it is below the number of
        // values; null rows hold 0 (never read).
        unsafe { DictionaryArray::new_unchecked(keys, Arc::new(values)) }
    }
}

impl Column for DictCol {
    fn data_type() -> DataType {
        dict_type()
    }
    fn nullable() -> bool {
        true
    }
    fn len(&self) -> usize {
        DictCol::len(self)
    }
    fn reserve(&mut self, additional: usize) {
        if self.skipped.is_none() {
            DictCol::reserve(self, additional)
        }
    }
    fn finish(self, _: &[Buffer]) -> ArrayRef {
        Arc::new(self.finish_array())
    }
    fn set_built(&mut self, built: bool) {
        DictCol::set_built(self, built)
    }
}

/// A dictionary-encoded text column that never holds nulls (the schema says non-nullable).
#[derive(Default)]
pub struct Dict(pub DictCol);

impl Dict {
    #[inline(always)]
    pub fn push(&mut self, src: &SourceRef, s: &[u8]) {
        self.0.push(src, s)
    }
    pub fn push_owned(&mut self, s: &[u8]) {
        self.0.push_owned(s)
    }
    pub fn push_str(&mut self, s: &str) {
        self.0.push_str(s)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Nullable dictionary-encoded text.
pub type OptDict = DictCol;

/// Dictionary-encoded text we make (kinds, sections, keys, dump paths …), never null: the
/// interface of `Text` with the type of `Dict`.
#[derive(Default)]
pub struct DictText(pub DictCol);

impl DictText {
    #[inline]
    pub fn push(&mut self, s: impl AsRef<str>) {
        self.0.push_str(s.as_ref())
    }
}

/// Nullable dictionary-encoded text we make: the interface of `OptText`.
#[derive(Default)]
pub struct OptDictText(pub DictCol);

impl OptDictText {
    #[inline]
    pub fn push_opt(&mut self, s: Option<impl AsRef<str>>) {
        match s {
            Some(s) => self.0.push_str(s.as_ref()),
            None => self.0.push_null(),
        }
    }
}

/// `Column` for a wrapper of `DictCol` (`Dict`, `DictText`, `OptDictText`): everything goes to
/// the inner column; only whether the schema allows nulls differs.
macro_rules! dict_wrapper_column {
    ($t:ty, $nullable:expr) => {
        impl Column for $t {
            fn data_type() -> DataType {
                dict_type()
            }
            fn nullable() -> bool {
                $nullable
            }
            fn len(&self) -> usize {
                self.0.len()
            }
            fn reserve(&mut self, additional: usize) {
                Column::reserve(&mut self.0, additional)
            }
            fn finish(self, _: &[Buffer]) -> ArrayRef {
                Arc::new(self.0.finish_array())
            }
            fn set_built(&mut self, built: bool) {
                Column::set_built(&mut self.0, built)
            }
        }
    };
}

dict_wrapper_column!(Dict, false);
dict_wrapper_column!(DictText, false);
dict_wrapper_column!(OptDictText, true);

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn dictionaries_encode_first_seen_order_with_null_keys() {
        let data = b"add multiply f32[8,128]{1,0} add f32[8,128]{1,0}".to_vec();
        let src = SourceRef::new(&data, 0, 1);
        let mut c = DictCol::default();
        c.push(&src, &data[0..3]); // add
        c.push(&src, &data[4..12]); // multiply
        c.push_null();
        c.push(&src, &data[13..28]); // f32[8,128]{1,0}
        c.push(&src, &data[29..32]); // add (another copy of the same text)
        c.push_owned(b"f32[8,128]{1,0}");
        c.push_owned(b"");
        c.push_opt(&src, None);
        assert_eq!(c.distinct(), 4);
        let rows: Vec<_> = c.iter().collect();
        let want = [Some("add"), Some("multiply"), None, Some("f32[8,128]{1,0}"), Some("add"), Some("f32[8,128]{1,0}"), Some(""), None];
        assert_eq!(rows, want.map(|r| r.map(String::from)));
        let a = c.finish_array();
        assert_eq!(a.len(), 8);
        assert_eq!(a.null_count(), 2);
        assert_eq!(a.keys().iter().collect::<Vec<_>>(), vec![Some(0), Some(1), None, Some(2), Some(0), Some(2), Some(3), None]);
        let v = a.values().as_any().downcast_ref::<LargeStringArray>().unwrap();
        assert_eq!(v.iter().map(Option::unwrap).collect::<Vec<_>>(), vec!["add", "multiply", "f32[8,128]{1,0}", ""]);
        assert_eq!(a.data_type(), &dict_type());
        a.to_data().validate_full().unwrap();
    }

    #[test]
    fn dictionaries_grow_and_find_every_value() {
        // many distinct values of every length (rehashes; the hash's short and long paths)
        let words: Vec<String> = (0..5000).map(|i| "x".repeat(i % 40) + &i.to_string()).collect();
        let mut c = Dict::default();
        for round in 0..3 {
            for (i, w) in words.iter().enumerate() {
                if (i + round) % 3 != 0 {
                    c.push_str(w);
                }
            }
        }
        let n = c.len();
        let a = c.0.finish_array();
        assert_eq!(a.len(), n);
        a.to_data().validate_full().unwrap();
        let v = a.values().as_any().downcast_ref::<LargeStringArray>().unwrap();
        assert_eq!(v.len(), words.len());
        let decoded: Vec<&str> = a.keys().iter().map(|k| v.value(k.unwrap() as usize)).collect();
        let want: Vec<&str> = (0..3)
            .flat_map(|round| words.iter().enumerate().filter(move |(i, _)| (i + round) % 3 != 0).map(|(_, w)| w.as_str()))
            .collect();
        assert_eq!(decoded, want);
        // not projected: rows counted, nothing kept
        let mut s = DictCol::default();
        s.set_built(false);
        s.push_owned(b"abc");
        s.push_null();
        assert_eq!((s.len(), s.distinct()), (2, 0));
        assert_eq!(s.finish_array().len(), 2);
    }
}
