//! Column builders. Text columns are zero-copy: a `ViewCol` records where each string lies in
//! the input (see `source.rs`) and becomes a `StringViewArray` over the input's own buffers.
//! Strings that are not in the input (unescaped text, numbers we format) go to a small side
//! buffer owned by the column: the only copies we make.

use std::sync::Arc;

use arrow_array::builder::LargeStringBuilder;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, LargeStringArray, ListArray, PrimitiveArray,
    StringViewArray, StructArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_data::ByteView;
use arrow_schema::{DataType, Field, Fields};

use crate::lex::same_bytes;
use crate::source::SourceRef;

/// Block index placeholder for views into the column's own side buffers: `OWNED + k` for side
/// buffer `k` (patched in `finish`). A side buffer holds at most `OWNED_BLOCK_LEN` bytes, then
/// the next one starts: Arrow view offsets are 32-bit signed, and a single buffer of more than
/// 2 GiB of unescaped text made offsets that wrapped (views of the wrong bytes).
const OWNED: u32 = 0xC000_0000;
const OWNED_BLOCK_LEN: usize = i32::MAX as usize;
/// Block index placeholder for a string of the input too long for its window (≥ 1 GiB): its
/// view gets a block of its own, a zero-copy slice of the input starting at the string
/// (patched in `finish`; the offset field holds the index into `ViewCol::far`).
const FAR: u32 = 0x8000_0000;

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

// ------------------------------------------------------------------------------ text (views)

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

    /// The validity buffer of a column of `len` rows; None when no row is null.
    pub fn finish(self, len: usize) -> Option<NullBuffer> {
        if self.count == 0 {
            return None;
        }
        let n = len.div_ceil(64);
        let mut valid: Vec<u64> = Vec::with_capacity(n);
        valid.extend(self.words.iter().take(n).map(|w| !w));
        valid.resize(n, !0);
        let valid: Vec<u64> = valid.into_iter().map(u64::to_le).collect();
        let bits = BooleanBuffer::new(Buffer::from_vec(valid), 0, len);
        // SAFETY: `count` bits below `len` are set in `words`, so `count` rows are null.
        Some(unsafe { NullBuffer::new_unchecked(bits, self.count) })
    }
}

/// A view of `s` (at most 12 bytes): length and the bytes inline, built without a `memcpy`
/// call (two possibly overlapping little-endian loads instead).
#[inline(always)]
fn inline_view(s: &[u8]) -> u128 {
    let len = s.len();
    let rd4 = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap()) as u64;
    let rd8 = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    let data: u128 = if len >= 8 {
        // bytes 0..8, then bytes 8..len from the last four (shifted down past the overlap)
        rd8(0) as u128 | (((rd4(len - 4) >> (8 * (12 - len))) as u128) << 64)
    } else if len >= 4 {
        (rd4(0) | ((rd4(len - 4) >> (8 * (8 - len))) << 32)) as u128
    } else if len > 0 {
        let mut v = s[0] as u64;
        if len > 1 {
            v |= (s[1] as u64) << 8;
        }
        if len > 2 {
            v |= (s[2] as u64) << 16;
        }
        v as u128
    } else {
        0
    };
    len as u128 | (data << 32)
}

/// `string_view` builder whose views point into the input blocks.
#[derive(Default)]
pub struct ViewCol {
    views: Vec<u128>,
    nulls: NullBits,
    owned: Vec<u8>,
    /// Full side buffers before `owned` (`owned` is side buffer `owned_done.len()`).
    owned_done: Vec<Buffer>,
    /// `OWNED_BLOCK_LEN` unless a test sets a smaller one.
    owned_block_len: Option<usize>,
    /// (address, length) of strings of the input that no window holds whole.
    far: Vec<(usize, usize)>,
    /// Not projected: rows are counted here, nothing is built (see `Column::set_built`).
    skipped: Option<usize>,
}

impl ViewCol {
    #[inline(always)]
    fn view(&mut self, src: &SourceRef, s: &[u8]) -> u128 {
        let len = s.len();
        if len <= 12 {
            return inline_view(s);
        }
        // every value is a piece of a line, and longer lines are errors (`lines::MAX_LINE_LEN`):
        // a longer view would be a corrupt array, so never make one
        assert!(len <= i32::MAX as usize, "a text value of {len} bytes (Arrow's limit is 2^31-1)");
        let (block, offset) = match src.locate(s) {
            Some(x) => x,
            None if src.contains(s) && s.len() <= crate::source::WINDOW_LEN => return self.far_view(s),
            None => return self.owned_view(s),
        };
        let prefix = u32::from_le_bytes(s[..4].try_into().unwrap());
        len as u128 | (prefix as u128) << 32 | (block as u128) << 64 | (offset as u128) << 96
    }

    /// A string of the input that lies across window ends (only strings of 1 GiB and more can):
    /// no copy, a block of its own at `finish` (a custom-call body and the attributes around it
    /// are two such views of the same bytes, not two copies).
    #[cold]
    #[inline(never)]
    fn far_view(&mut self, s: &[u8]) -> u128 {
        let at = self.far.len() as u32;
        self.far.push((s.as_ptr() as usize, s.len()));
        ByteView::new(s.len() as u32, &s[..4]).with_buffer_index(FAR).with_offset(at).as_u128()
    }

    #[cold]
    #[inline(never)]
    fn owned_view(&mut self, s: &[u8]) -> u128 {
        let limit = self.owned_block_len.unwrap_or(OWNED_BLOCK_LEN);
        if self.owned.len() + s.len() > limit && !self.owned.is_empty() {
            let full = std::mem::take(&mut self.owned);
            self.owned_done.push(Buffer::from_vec(full));
        }
        let at = self.owned.len() as u32;
        crate::runtime::reserve(&mut self.owned, s.len());
        self.owned.extend_from_slice(s);
        let block = OWNED + self.owned_done.len() as u32;
        ByteView::new(s.len() as u32, &s[..4]).with_buffer_index(block).with_offset(at).as_u128()
    }

    /// Room for `additional` more rows without reallocating.
    pub fn reserve(&mut self, additional: usize) {
        crate::runtime::reserve(&mut self.views, additional);
    }

    /// Append a slice of the input (copied only if it is not inside the input).
    #[inline(always)]
    pub fn push(&mut self, src: &SourceRef, s: &[u8]) {
        if let Some(n) = &mut self.skipped {
            *n += 1;
            return;
        }
        let v = self.view(src, s);
        crate::runtime::push(&mut self.views, v);
    }

    #[inline(always)]
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

    #[inline]
    pub fn push_null(&mut self) {
        if let Some(n) = &mut self.skipped {
            *n += 1;
            return;
        }
        self.nulls.set(self.views.len());
        crate::runtime::push(&mut self.views, 0);
    }

    pub fn len(&self) -> usize {
        self.views.len() + self.skipped.unwrap_or(0)
    }

    /// Keep the first `n` rows (used to drop the items of an unfinished record).
    pub fn truncate(&mut self, n: usize) {
        assert!(self.nulls.count() == 0, "truncate is for columns without nulls");
        match &mut self.skipped {
            Some(k) => *k = (*k).min(n),
            None => self.views.truncate(n),
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


    pub fn finish_array(mut self, blocks: &[Buffer]) -> StringViewArray {
        if let Some(n) = self.skipped {
            // not projected (callers drop it): empty strings, not a copy of anything
            return StringViewArray::new(ScalarBuffer::from(vec![0u128; n]), vec![], None);
        }
        let mut buffers: Vec<Buffer> = blocks.to_vec();
        if !self.far.is_empty() {
            let first = buffers.len() as u32;
            for &(ptr, len) in &self.far {
                buffers.push(far_block(blocks, ptr, len));
            }
            for v in self.views.iter_mut() {
                let bv = ByteView::from(*v);
                if bv.length > 12 && bv.buffer_index == FAR {
                    *v = bv.with_buffer_index(first + bv.offset).with_offset(0).as_u128();
                }
            }
        }
        if !self.owned.is_empty() || !self.owned_done.is_empty() {
            let first_owned = buffers.len() as u32;
            for v in self.views.iter_mut() {
                let bv = ByteView::from(*v);
                if bv.length > 12 && bv.buffer_index >= OWNED {
                    *v = bv.with_buffer_index(first_owned + (bv.buffer_index - OWNED)).as_u128();
                }
            }
            buffers.append(&mut self.owned_done);
            buffers.push(Buffer::from_vec(std::mem::take(&mut self.owned)));
        }
        let len = self.views.len();
        let nulls = std::mem::take(&mut self.nulls).finish(len);
        // SAFETY: every view was made by `view()` from a slice of a block (or of the side
        // buffer) at the recorded offset. Inputs are validated as UTF-8 before parsing and
        // slices are only cut at ASCII delimiters, so every view is valid UTF-8.
        unsafe { StringViewArray::new_unchecked(ScalarBuffer::from(self.views), buffers, nulls) }
    }
}

/// A buffer over `[ptr, ptr+len)`, memory of the input that one of `blocks` (a window of it)
/// keeps alive.
fn far_block(blocks: &[Buffer], ptr: usize, len: usize) -> Buffer {
    let owner = blocks
        .iter()
        .find(|b| (b.as_ptr() as usize) <= ptr && ptr < b.as_ptr() as usize + b.len())
        .expect("a far string lies in one of its table set's windows");
    // SAFETY: `ptr..ptr+len` lies inside the input (`SourceRef::contains` when the view was
    // made); the input is one allocation (a map or a vector) that `owner`, a window of it,
    // keeps alive as long as the new buffer holds it.
    unsafe {
        Buffer::from_custom_allocation(
            std::ptr::NonNull::new(ptr as *mut u8).expect("non-null"),
            len,
            Arc::new(owner.clone()),
        )
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
        ViewCol::len(self)
    }
    fn reserve(&mut self, additional: usize) {
        if self.skipped.is_none() {
            ViewCol::reserve(self, additional)
        }
    }
    fn finish(self, blocks: &[Buffer]) -> ArrayRef {
        Arc::new(self.finish_array(blocks))
    }
    fn set_built(&mut self, built: bool) {
        ViewCol::set_built(self, built)
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
    fn reserve(&mut self, additional: usize) {
        Column::reserve(&mut self.0, additional)
    }
    fn finish(self, blocks: &[Buffer]) -> ArrayRef {
        Arc::new(self.0.finish_array(blocks))
    }
    fn set_built(&mut self, built: bool) {
        self.0.set_built(built)
    }
}

/// Nullable `string_view` column.
pub type OptStr = ViewCol;

// ------------------------------------------------------------------------------ text (dictionary)

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
            let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(vec![0i32; n]), None);
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

// ------------------------------------------------------------------------------ owned text

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

// ------------------------------------------------------------------------------ numbers

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
                let values = if self.1.built() { self.0 } else { vec![0; self.1.rows()] };
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
                    return Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(vec![0; self.skipped.rows()]), None));
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

/// Checks that all columns of a finished table have the same length (a bug otherwise).
pub fn check_lengths(table: &str, arrays: &[ArrayRef]) {
    if let Some(first) = arrays.first() {
        for a in arrays {
            assert_eq!(a.len(), first.len(), "table {table}: columns of different lengths");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_views_match_arrow() {
        let text = b"abcdefghijklmnop";
        for len in 0..=12 {
            let s = &text[..len];
            let mut v = [0u8; 16];
            v[..4].copy_from_slice(&(len as u32).to_le_bytes());
            v[4..4 + len].copy_from_slice(s);
            assert_eq!(inline_view(s), u128::from_le_bytes(v), "len {len}");
        }
    }

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
    fn far_strings_are_views_of_their_own_block_not_copies() {
        // what a string of >= 1 GiB that no window holds whole gets (only the mechanism here:
        // `view` picks it for such strings of inputs over 2 GiB)
        let data = b"header; a string far into a huge input, and its tail".to_vec();
        let block = Buffer::from_vec(data.clone());
        let bytes = block.as_slice();
        let mut a = ViewCol::default();
        let mut b = ViewCol::default();
        a.push(&SourceRef::new(bytes, 0, 1), &bytes[..6]);
        let v = a.far_view(&bytes[8..40]);
        a.views.push(v);
        let v = b.far_view(&bytes[10..40]); // an overlapping string in another column
        b.views.push(v);
        let (a, b) = (a.finish_array(&[block.clone()]), b.finish_array(&[block.clone()]));
        assert_eq!(a.value(0), "header");
        assert_eq!(a.value(1), std::str::from_utf8(&data[8..40]).unwrap());
        assert_eq!(b.value(0), std::str::from_utf8(&data[10..40]).unwrap());
        // no copy: the new blocks point into the input
        let base = bytes.as_ptr() as usize;
        assert_eq!(a.data_buffers()[1].as_ptr() as usize, base + 8);
        assert_eq!(b.data_buffers()[1].as_ptr() as usize, base + 10);
    }

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

    /// Owned text goes to side buffers of at most `OWNED_BLOCK_LEN` bytes (2 GiB - 1 in a read,
    /// 40 here): every view offset stays inside its buffer and within Arrow's 32-bit range, and
    /// the `string`/errors text we make has 64-bit offsets (no 2 GiB ceiling at all).
    #[test]
    fn owned_text_rotates_side_buffers_and_made_text_is_large() {
        let mut c = ViewCol { owned_block_len: Some(40), ..ViewCol::default() };
        let words: Vec<String> = (0..20).map(|i| format!("owned value number {i:02}")).collect();
        for w in &words {
            c.push_owned(w.as_bytes());
        }
        let a = c.finish_array(&[]);
        assert_eq!(a.data_buffers().len(), 20, "one 22-byte value per 40-byte side buffer");
        assert!(a.data_buffers().iter().all(|b| b.len() <= 40));
        assert_eq!(a.iter().map(|v| v.unwrap().to_string()).collect::<Vec<_>>(), words);
        arrow_data::ArrayData::from(a).validate_full().expect("valid views");

        assert_eq!(Text::data_type(), DataType::LargeUtf8);
        assert_eq!(OptText::data_type(), DataType::LargeUtf8);
    }

    #[test]
    fn views_nulls_and_owned() {
        let data = b"short, a string longer than twelve bytes".to_vec();
        let src = SourceRef::new(&data, 0, 1);
        let mut c = ViewCol::default();
        c.push(&src, &data[..5]);
        c.push_null();
        c.push(&src, &data[7..]);
        c.push_owned(b"an owned string of some length");
        for _ in 0..70 {
            c.push(&src, b"");
        }
        c.push_null();
        let a = c.finish_array(&[Buffer::from_vec(data.clone())]);
        assert_eq!(a.len(), 75);
        assert_eq!(a.null_count(), 2);
        assert_eq!(a.value(0), "short");
        assert!(a.is_null(1) && a.is_null(74) && a.is_valid(73));
        assert_eq!(a.value(2), "a string longer than twelve bytes");
        assert_eq!(a.value(3), "an owned string of some length");
        assert_eq!(a.value(4), "");

        let mut n = OptI64::default();
        n.push(Some(3));
        n.push(None);
        n.push(Some(-1));
        let a = n.finish(&[]);
        let a = a.as_any().downcast_ref::<arrow_array::Int64Array>().unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![Some(3), None, Some(-1)]);
        let mut n = OptI32::default();
        n.push(Some(1));
        assert_eq!(n.finish(&[]).null_count(), 0);
    }
}
