//! A structural index of one text (arrow-json's tape idea, at the level of bits): the
//! classifier's masks for the whole text, built in one pass, then asked "where is the next
//! byte of set `k` at or after `i`?" by every scan over that text — no byte-at-a-time loop
//! and no second classification, however many scans (shape, operands, attributes, strings)
//! walk the same line.
//!
//! `Index` owns the masks (reuse one: building clears it and keeps its buffer); `Text` is a
//! view of the indexed text, or of a piece of it, that the scanners take: it dereferences to
//! the bytes and answers `next` in its own positions.

use super::classify::{Classes, Level};

/// The masks of `N` byte sets over one text: block `b`, set `k` at `words[b * N + k]`.
pub struct Index<const N: usize> {
    words: Vec<u64>,
    len: usize,
    level: Level,
}

impl<const N: usize> Default for Index<N> {
    /// An empty index that builds at `Level::current()` (this thread's level).
    fn default() -> Self {
        Index::new(Level::current())
    }
}

impl<const N: usize> Index<N> {
    pub fn new(level: Level) -> Index<N> {
        Index { words: Vec::new(), len: 0, level }
    }

    pub fn level(&self) -> Level {
        self.level
    }

    /// Classify `text` with `classes` (replacing what the index held); returns its view.
    pub fn build<'a>(&'a mut self, classes: &Classes<N>, text: &'a [u8]) -> Text<'a, N> {
        let need = text.len().div_ceil(64) * N;
        if self.words.capacity() > 4 * need && self.words.capacity() > 1 << 20 {
            self.words = Vec::new(); // after a multi-MB line: do not keep its index
        }
        self.words.clear();
        self.words.reserve(need);
        let words = &mut self.words;
        classes.blocks(self.level, text, |_, m| {
            words.extend_from_slice(&m);
            true
        });
        self.len = text.len();
        Text { bytes: text, ix: self, off: 0 }
    }

    /// First position in `[from, end)` where `f(block's masks)` has a bit (`end` ≤ the
    /// text's length).
    #[inline(always)]
    fn next_by(&self, from: usize, end: usize, f: impl Fn(&[u64]) -> u64) -> Option<usize> {
        if from >= end {
            return None;
        }
        let mut b = from >> 6;
        let mut m = f(&self.words[b * N..b * N + N]) & (u64::MAX << (from & 63));
        loop {
            if m != 0 {
                let p = b * 64 + m.trailing_zeros() as usize;
                return (p < end).then_some(p);
            }
            b += 1;
            if b * 64 >= end {
                return None;
            }
            m = f(&self.words[b * N..b * N + N]);
        }
    }

    /// `g(position)` for every bit of `f(masks)` in `[a, b)`, in order; returns their number.
    #[inline(always)]
    fn each_by(&self, a: usize, b: usize, f: impl Fn(&[u64]) -> u64, mut g: impl FnMut(usize)) -> u32 {
        let mut n = 0;
        let mut w = a >> 6;
        while a < b && w * 64 < b {
            let mut m = f(&self.words[w * N..w * N + N]);
            if w == a >> 6 {
                m &= u64::MAX << (a & 63);
            }
            if b - w * 64 < 64 {
                m &= (1u64 << (b - w * 64)) - 1;
            }
            n += m.count_ones();
            while m != 0 {
                g(w * 64 + m.trailing_zeros() as usize);
                m &= m - 1;
            }
            w += 1;
        }
        n
    }
}

/// An indexed text, or a piece of one: its bytes (`Deref`) and the positions of its
/// structural bytes (`next`), both relative to the piece.
#[derive(Clone, Copy)]
pub struct Text<'a, const N: usize> {
    pub bytes: &'a [u8],
    ix: &'a Index<N>,
    /// Where `bytes` starts in the indexed text.
    off: usize,
}

impl<'a, const N: usize> std::ops::Deref for Text<'a, N> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl<'a, const N: usize> Text<'a, N> {
    /// Position (in this piece) of the first byte of set `k` at or after `from`.
    #[inline(always)]
    pub fn next(&self, k: usize, from: usize) -> Option<usize> {
        self.next_by(from, |w| w[k])
    }

    /// Position of the first byte at or after `from` where `f(masks of its block)` has its
    /// bit (e.g. `|w| w[A] | w[B]`: a byte of set A or B).
    #[inline(always)]
    pub fn next_by(&self, from: usize, f: impl Fn(&[u64]) -> u64) -> Option<usize> {
        self.ix.next_by(self.off + from, self.off + self.bytes.len(), f).map(|p| p - self.off)
    }

    /// Number of bytes of set `k` in `[a, b)`.
    #[inline(always)]
    pub fn count(&self, k: usize, a: usize, b: usize) -> u32 {
        self.ix.each_by(self.off + a, self.off + b, |w| w[k], |_| {})
    }

    /// True when `[a, b)` holds a byte where `f(masks)` has its bit.
    #[inline(always)]
    pub fn any_by(&self, a: usize, b: usize, f: impl Fn(&[u64]) -> u64) -> bool {
        self.ix.next_by(self.off + a, self.off + b, f).is_some()
    }

    /// `g(position)` for every byte of set `k` in `[a, b)`, in order.
    #[inline(always)]
    pub fn each(&self, k: usize, a: usize, b: usize, mut g: impl FnMut(usize)) {
        let off = self.off;
        self.ix.each_by(off + a, off + b, |w| w[k], |p| g(p - off));
    }

    /// The piece `[a, b)` of this text, indexed.
    #[inline]
    pub fn sub(&self, a: usize, b: usize) -> Text<'a, N> {
        Text { bytes: &self.bytes[a..b], ix: self.ix, off: self.off + a }
    }

    /// The piece that `part` (a subslice of this text's bytes) is.
    pub fn piece(&self, part: &'a [u8]) -> Text<'a, N> {
        let a = part.as_ptr() as usize - self.bytes.as_ptr() as usize;
        assert!(a + part.len() <= self.bytes.len(), "not a piece of this text");
        self.sub(a, a + part.len())
    }
}

/// What a scanner walks: a text (`Deref`) and, for a set `k` of its classes, the next byte of
/// that set at or after a position. Scanners are written once, generic over it; a long text is
/// walked through its index (`Text`), a short one a byte at a time (`Bytes`), where building
/// an index would cost more than it saves.
pub trait Walk: std::ops::Deref<Target = [u8]> + Sized {
    /// True when `next` answers from an index; false for a byte walk, where a scanner may
    /// use a search written for its set instead (`hlo::scan::find_struct`).
    const INDEXED: bool;
    fn next(&self, k: usize, from: usize) -> Option<usize>;
    /// The piece `[a, b)`, walked the same way.
    fn sub(&self, a: usize, b: usize) -> Self;
}

impl<const N: usize> Walk for Text<'_, N> {
    const INDEXED: bool = true;
    #[inline(always)]
    fn next(&self, k: usize, from: usize) -> Option<usize> {
        Text::next(self, k, from)
    }
    #[inline(always)]
    fn sub(&self, a: usize, b: usize) -> Self {
        Text::sub(self, a, b)
    }
}

/// A text walked without an index (`Classes::find_near`).
#[derive(Clone, Copy)]
pub struct Bytes<'a, const N: usize> {
    pub bytes: &'a [u8],
    pub classes: &'static Classes<N>,
}

impl<const N: usize> std::ops::Deref for Bytes<'_, N> {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl<const N: usize> Walk for Bytes<'_, N> {
    const INDEXED: bool = false;
    #[inline(always)]
    fn next(&self, k: usize, from: usize) -> Option<usize> {
        self.classes.find_near(k, self.bytes, from)
    }

    #[inline(always)]
    fn sub(&self, a: usize, b: usize) -> Self {
        Bytes { bytes: &self.bytes[a..b], classes: self.classes }
    }
}

#[cfg(test)]
mod tests {
    use super::super::classify::tests::Rng;
    use super::super::classify::ByteSet;
    use super::*;

    static C: Classes<2> = Classes::new([ByteSet::of(b"()[]{}\",/\\"), ByteSet::of(b"\"\\")]);

    #[test]
    fn next_agrees_with_a_byte_loop_at_every_level() {
        let mut rng = Rng(0x2545f4914f6cdd1d);
        for round in 0..300 {
            let len = if round < 200 { round } else { rng.below(3000) };
            let data = rng.bytes(len);
            for level in Level::ALL.into_iter().filter(|l| l.supported()) {
                let mut ix = Index::<2>::new(level);
                let t = ix.build(&C, &data);
                let plain = Bytes { bytes: &data, classes: &C };
                for k in 0..2 {
                    for from in 0..=len + 1 {
                        let want = data.get(from..).and_then(|s| s.iter().position(|&b| C.contains(k, b))).map(|p| p + from);
                        assert_eq!(t.next(k, from), want, "{level:?} len {len} k {k} from {from}");
                        assert_eq!(Walk::next(&plain, k, from), want, "bytes: len {len} k {k} from {from}");
                    }
                }
                // pieces answer in their own positions and stop at their end
                for _ in 0..20 {
                    let a = rng.below(len + 1);
                    let b = a + rng.below(len - a + 1);
                    let p = t.sub(a, b);
                    for from in 0..=p.len() {
                        let want = data[a + from..b].iter().position(|&x| C.contains(0, x)).map(|q| q + from);
                        assert_eq!(p.next(0, from), want);
                        let to = from + rng.below(p.len() - from + 1);
                        let want: Vec<usize> = (from..to).filter(|&q| C.contains(1, data[a + q])).collect();
                        let mut got = vec![];
                        p.each(1, from, to, |q| got.push(q));
                        assert_eq!(got, want);
                        assert_eq!(p.count(1, from, to) as usize, want.len());
                        assert_eq!(p.any_by(from, to, |w| w[1]), !want.is_empty());
                    }
                }
            }
        }
    }
}
