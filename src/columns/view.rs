//! Text as views into the input (`string_view`): `ViewCol`, `Str`, `OptStr`.

use std::sync::Arc;

use arrow_array::{ArrayRef, StringViewArray};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_data::ByteView;
use arrow_schema::DataType;

use crate::source::SourceRef;

use super::{Column, NullBits};

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
            return StringViewArray::new(ScalarBuffer::from(crate::runtime::zeros::<u128>(n)), vec![], None);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::*;
    use arrow_array::Array;

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
