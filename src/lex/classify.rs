//! The structural classifier: 64 bytes at a time into one `u64` bit mask per byte set, as
//! simdjson's stage 1 does (bit `j` of a block's mask is set when byte `j` of the block is in
//! the set). Every use of SIMD in the crate lives here; the grammars see only masks and
//! positions (`index.rs`, `count_indented_lines`, `find`).
//!
//! Three implementations of one function, chosen at run time and cached (`Level::best`):
//! AVX-512BW (one 64-byte register a block), AVX2 (two 32-byte halves) and a portable one
//! (a 256-entry table, one byte at a time). Each takes a `Level` argument, so the tests and the
//! fuzz targets run every level on the same input and compare (`tests` below, fuzz/). A level
//! the CPU lacks is never run: `Level::usable` falls back to the best one below it.
//!
//! A `ByteSet` is any set of ASCII bytes, plus either all or none of the bytes ≥ 0x80. The SIMD
//! paths look it up with two 16-entry nibble tables (`pshufb`): for an ASCII byte `0hhh llll`,
//! `lo[llll]` holds bit `hhh` when the byte is in the set, and `hi[hhh] = 1 << hhh`; the byte is
//! in the set when `lo[l] & hi[h] != 0`. Bytes ≥ 0x80 find `hi[8..16] = 0` (never in the set)
//! and are added as a whole from their sign bit when the set says so.
//!
//! How to add a scanner: put the bytes it stops at in a `ByteSet` of a `Classes` (several sets
//! are classified in one pass: see `hlo::scan::HLO`), build an `index::Index` of the text, and
//! walk it with `Text::next(set, from)` (the next position in the set at or after `from`).
//! Give it a test that compares `Level::ALL` (the portable level is the reference).

use std::sync::atomic::{AtomicU8, Ordering};

/// Which implementation of the classifier runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A byte at a time through a table: every target, the reference for the others.
    Portable = 1,
    /// x86-64 AVX2: 32 bytes per step.
    Avx2 = 2,
    /// x86-64 AVX-512BW: 64 bytes per step (masked loads for the tail).
    Avx512 = 3,
}

static BEST: AtomicU8 = AtomicU8::new(0);

thread_local! {
    /// `with_level`'s override for this thread (0: none).
    static FORCED: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    fn from_u8(v: u8) -> Level {
        match v {
            3 => Level::Avx512,
            2 => Level::Avx2,
            _ => Level::Portable,
        }
    }

    /// The best level this CPU runs (detected once, then cached).
    #[inline]
    pub fn best() -> Level {
        match BEST.load(Ordering::Relaxed) {
            0 => {
                let l = Level::detect();
                BEST.store(l as u8, Ordering::Relaxed);
                l
            }
            v => Level::from_u8(v),
        }
    }

    #[cold]
    fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            let popcnt = is_x86_feature_detected!("popcnt");
            if popcnt && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512f") {
                return Level::Avx512;
            }
            if popcnt && is_x86_feature_detected!("avx2") {
                return Level::Avx2;
            }
        }
        Level::Portable
    }

    /// True when this CPU can run `self`.
    pub fn supported(self) -> bool {
        self <= Level::best()
    }

    /// `self`, or the best level below it that this CPU runs.
    #[inline]
    pub fn usable(self) -> Level {
        self.min(Level::best())
    }

    /// The level parsers use on this thread: `with_level`'s while it runs, else `best()`.
    #[inline]
    pub fn current() -> Level {
        match FORCED.with(|f| f.get()) {
            0 => Level::best(),
            v => Level::from_u8(v).usable(),
        }
    }
}

/// Run `f` with the parsers of this thread classifying at `level` (tests and fuzz targets
/// compare levels this way; the parsers take their level once, when their scratch is made).
pub fn with_level<R>(level: Level, f: impl FnOnce() -> R) -> R {
    struct Restore(u8);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(level as u8)));
    f()
}

/// A set of bytes: any ASCII bytes, and all or none of the bytes ≥ 0x80.
#[derive(Clone, Copy, Debug)]
pub struct ByteSet {
    lo: [u8; 16],
    hi: [u8; 16],
    non_ascii: bool,
}

impl ByteSet {
    /// The ASCII `bytes` (a byte ≥ 0x80 is a compile-time error).
    pub const fn of(bytes: &[u8]) -> ByteSet {
        let mut lo = [0u8; 16];
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            assert!(b < 0x80, "ByteSet::of takes ASCII bytes");
            lo[(b & 15) as usize] |= 1 << (b >> 4);
            i += 1;
        }
        ByteSet { lo, hi: HI, non_ascii: false }
    }

    /// Every byte not in `self` (bytes ≥ 0x80 included when `self` has none of them).
    pub const fn complement(self) -> ByteSet {
        let mut lo = self.lo;
        let mut i = 0;
        while i < 16 {
            lo[i] = !lo[i];
            i += 1;
        }
        ByteSet { lo, hi: HI, non_ascii: !self.non_ascii }
    }

    #[inline]
    pub const fn contains(&self, b: u8) -> bool {
        if b >= 0x80 {
            self.non_ascii
        } else {
            self.lo[(b & 15) as usize] & (1 << (b >> 4)) != 0
        }
    }
}

const HI: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0];

/// `N` byte sets classified together (at most 8): one pass gives `N` masks a block.
pub struct Classes<const N: usize> {
    sets: [ByteSet; N],
    /// Portable path: bit `k` of `table[b]` is `sets[k].contains(b)`.
    table: [u8; 256],
    /// `sets[k].contains(b)` as one table a set (`find_near`'s byte loop: one load a byte).
    member: [[bool; 256]; N],
    /// Sets of one or two ASCII bytes: those bytes (`find_near` compares them 16 at a time).
    pairs: [Option<(u8, u8)>; N],
}

impl<const N: usize> Classes<N> {
    pub const fn new(sets: [ByteSet; N]) -> Classes<N> {
        assert!(N >= 1 && N <= 8);
        let mut table = [0u8; 256];
        let mut member = [[false; 256]; N];
        let mut members = [[0u8; 3]; N];
        let mut count = [0usize; N];
        let mut b = 0;
        while b < 256 {
            let mut k = 0;
            while k < N {
                if sets[k].contains(b as u8) {
                    table[b] |= 1 << k;
                    member[k][b] = true;
                    if count[k] < 3 {
                        members[k][count[k]] = b as u8;
                    }
                    count[k] += 1;
                }
                k += 1;
            }
            b += 1;
        }
        let mut pairs = [None; N];
        let mut k = 0;
        while k < N {
            match count[k] {
                1 => pairs[k] = Some((members[k][0], members[k][0])),
                2 => pairs[k] = Some((members[k][0], members[k][1])),
                _ => {}
            }
            k += 1;
        }
        Classes { sets, table, member, pairs }
    }

    /// Per set: all ones when it holds the bytes ≥ 0x80 (the SIMD paths add their sign bits).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn non_ascii_masks(&self) -> [u64; N] {
        let mut na = [0u64; N];
        for (m, s) in na.iter_mut().zip(&self.sets) {
            *m = if s.non_ascii { u64::MAX } else { 0 };
        }
        na
    }

    #[inline]
    pub fn contains(&self, k: usize, b: u8) -> bool {
        self.table[b as usize] >> k & 1 != 0
    }

    /// Classify `data` block by block: `f(block_start, masks)` for every 64 bytes (the last
    /// block may be shorter: its bits past the end are 0) until `f` returns false.
    #[inline]
    pub fn blocks<F: FnMut(usize, [u64; N]) -> bool>(&self, level: Level, data: &[u8], f: F) {
        match level.usable() {
            // SAFETY: `usable` returns a SIMD level only when the CPU has its features.
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => unsafe { x86::blocks_avx512(self, data, f) },
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => unsafe { x86::blocks_avx2(self, data, f) },
            _ => self.blocks_portable(data, f),
        }
    }

    fn blocks_portable<F: FnMut(usize, [u64; N]) -> bool>(&self, data: &[u8], mut f: F) {
        for (b, chunk) in data.chunks(64).enumerate() {
            let mut m = [0u64; N];
            for (j, &byte) in chunk.iter().enumerate() {
                let c = self.table[byte as usize] as u64;
                for (k, mk) in m.iter_mut().enumerate() {
                    *mk |= (c >> k & 1) << j;
                }
            }
            if !f(b * 64, m) {
                return;
            }
        }
    }

    /// First position at or after `from` of a byte of set `k`, found without a dispatched
    /// call (for the short distances of a line): 16 bytes at a time with SSE2 (part of x86-64)
    /// for a set of one or two bytes, else a byte at a time through the table.
    #[inline(always)]
    pub fn find_near(&self, k: usize, s: &[u8], from: usize) -> Option<usize> {
        let from = from.min(s.len());
        match self.pairs[k] {
            Some((a, b)) => find2(a, b, &s[from..]).map(|p| p + from),
            None => s[from..].iter().position(|&x| self.member[k][x as usize]).map(|p| p + from),
        }
    }

    /// First position at or after `from` of a byte of set `k` (a `memchr` for a set).
    pub fn find(&self, level: Level, k: usize, data: &[u8], from: usize) -> Option<usize> {
        let from = from.min(data.len());
        let mut found = None;
        self.blocks(level, &data[from..], |at, m| {
            if m[k] != 0 {
                found = Some(from + at + m[k].trailing_zeros() as usize);
                return false;
            }
            true
        });
        found
    }
}

/// The one SSE2 loop behind the short searches (`find2`, `lex::name_chars_end`,
/// `hlo::scan::find_struct`): from `from`, 16 bytes at a time, `hits` marks (0xFF) the bytes
/// searched for. Ok(position of the first hit), or Err(where the scalar tail of fewer than 16
/// bytes starts). SSE2 is part of x86-64: inline, no dispatch.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn sse2_search(s: &[u8], from: usize, hits: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i) -> Result<usize, usize> {
    use std::arch::x86_64::*;
    let mut i = from.min(s.len());
    while i + 16 <= s.len() {
        // SAFETY: SSE2 is part of x86_64; i + 16 <= len, so the load reads s[i..i + 16].
        let v = unsafe { _mm_loadu_si128(s.as_ptr().add(i) as *const __m128i) };
        let m = unsafe { _mm_movemask_epi8(hits(v)) } as u32;
        if m != 0 {
            return Ok(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    // Fewer than 16 bytes left: the last 16 bytes of `s` once more, the ones before `i`
    // masked off (a short search near a line's end then needs no byte loop).
    if i < s.len() && s.len() >= 16 {
        let at = s.len() - 16;
        // SAFETY: as above; at + 16 == len.
        let v = unsafe { _mm_loadu_si128(s.as_ptr().add(at) as *const __m128i) };
        let m = (unsafe { _mm_movemask_epi8(hits(v)) } as u32) >> (i - at) << (i - at);
        return if m != 0 { Ok(at + m.trailing_zeros() as usize) } else { Err(s.len()) };
    }
    Err(i)
}

/// First `a` or `b` in `s`: `memchr2`, but inline and 16 bytes at a time without a call
/// (strings in HLO are short: the call and setup of `memchr2` cost more than the search).
#[inline(always)]
pub fn find2(a: u8, b: u8, s: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY (the intrinsics): SSE2 is part of x86_64.
        let (va, vb) = unsafe { (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8)) };
        match sse2_search(s, 0, |v| unsafe { _mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)) }) {
            Ok(p) => Some(p),
            Err(i) => s[i..].iter().position(|&x| x == a || x == b).map(|p| p + i),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    memchr::memchr2(a, b, s)
}

/// Lines that start with two spaces: `data` starting with "  ", and every "\n  " (the HLO
/// parser sizes its instruction columns with it; one pass over the file).
pub fn count_indented_lines(level: Level, data: &[u8]) -> usize {
    indented_lines_and(level, data, |_, _| {})
}

/// `count_indented_lines` of `data[from..]` that also records where every '\n' of it lies
/// (absolute positions in `data`, which must be shorter than 4 GiB): the line splitter then
/// reads line ends from the list instead of searching each line (`Lines::use_newlines`).
pub fn newlines_and_indented(level: Level, data: &[u8], from: usize) -> (Vec<u32>, usize) {
    assert!(data.len() <= u32::MAX as usize, "newline positions are u32");
    let rest = &data[from..];
    // lines are rarely shorter than 32 bytes: one reservation for nearly every input
    let mut ends: Vec<u32> = Vec::new();
    crate::runtime::reserve_exact(&mut ends, rest.len() / 32 + 16);
    let n = indented_lines_and(level, rest, |at, mut nl| {
        let base = (from + at) as u32;
        while nl != 0 {
            crate::runtime::push(&mut ends, base + nl.trailing_zeros());
            nl &= nl - 1;
        }
    });
    (ends, n)
}

/// The one pass behind both: counts the lines of `data` that start with two spaces, and hands
/// `newlines(block_start, mask)` each block's '\n' mask on the way.
#[inline(always)]
fn indented_lines_and(level: Level, data: &[u8], mut newlines: impl FnMut(usize, u64)) -> usize {
    static NL_SP: Classes<2> = Classes::new([ByteSet::of(b"\n"), ByteSet::of(b" ")]);
    let mut n = data.starts_with(b"  ") as usize;
    // A block's newlines are counted when the next block is there (its first two spaces).
    let (mut nl, mut sp) = (0u64, 0u64);
    NL_SP.blocks(level, data, |at, [nl2, sp2]| {
        let sp1 = sp >> 1 | sp2 << 63;
        let sp_2 = sp >> 2 | sp2 << 62;
        n += (nl & sp1 & sp_2).count_ones() as usize;
        newlines(at, nl2);
        (nl, sp) = (nl2, sp2);
        true
    });
    n + (nl & sp >> 1 & sp >> 2).count_ones() as usize
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Classes;
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must have AVX-512F, AVX-512BW and POPCNT.
    #[target_feature(enable = "avx512f,avx512bw,popcnt")]
    pub(super) unsafe fn blocks_avx512<const N: usize, F: FnMut(usize, [u64; N]) -> bool>(c: &Classes<N>, data: &[u8], mut f: F) {
        let mut lo = [_mm512_setzero_si512(); N];
        let mut hi = [_mm512_setzero_si512(); N];
        let mut k = 0;
        while k < N {
            lo[k] = _mm512_broadcast_i32x4(_mm_loadu_si128(c.sets[k].lo.as_ptr() as *const __m128i));
            hi[k] = _mm512_broadcast_i32x4(_mm_loadu_si128(c.sets[k].hi.as_ptr() as *const __m128i));
            k += 1;
        }
        let na = c.non_ascii_masks();
        let nib = _mm512_set1_epi8(0x0f);
        let p = data.as_ptr();
        let n = data.len();
        let mut i = 0;
        while i < n {
            let (v, valid) = if i + 64 <= n {
                (_mm512_loadu_si512(p.add(i) as *const _), u64::MAX)
            } else {
                // bytes past the end are neither loaded nor faulted on
                let valid = (1u64 << (n - i)) - 1;
                (_mm512_maskz_loadu_epi8(valid, p.add(i) as *const i8), valid)
            };
            let l = _mm512_and_si512(v, nib);
            let h = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
            let sign = _mm512_movepi8_mask(v);
            let mut m = [0u64; N];
            let mut k = 0;
            while k < N {
                let bits = _mm512_test_epi8_mask(_mm512_shuffle_epi8(lo[k], l), _mm512_shuffle_epi8(hi[k], h));
                m[k] = (bits | sign & na[k]) & valid;
                k += 1;
            }
            if !f(i, m) {
                return;
            }
            i += 64;
        }
    }

    /// # Safety
    /// The CPU must have AVX2 and POPCNT.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn blocks_avx2<const N: usize, F: FnMut(usize, [u64; N]) -> bool>(c: &Classes<N>, data: &[u8], mut f: F) {
        let mut lo = [_mm256_setzero_si256(); N];
        let mut hi = [_mm256_setzero_si256(); N];
        let mut k = 0;
        while k < N {
            lo[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(c.sets[k].lo.as_ptr() as *const __m128i));
            hi[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(c.sets[k].hi.as_ptr() as *const __m128i));
            k += 1;
        }
        let na = c.non_ascii_masks();
        let nib = _mm256_set1_epi8(0x0f);
        let zero = _mm256_setzero_si256();
        let n = data.len();
        let mut tail = [0u8; 64];
        let mut i = 0;
        while i < n {
            let (p, valid) = if i + 64 <= n {
                (data.as_ptr().add(i), u64::MAX)
            } else {
                tail[..n - i].copy_from_slice(&data[i..]);
                tail[n - i..].fill(0);
                (tail.as_ptr(), (1u64 << (n - i)) - 1)
            };
            let v0 = _mm256_loadu_si256(p as *const __m256i);
            let v1 = _mm256_loadu_si256(p.add(32) as *const __m256i);
            let (l0, l1) = (_mm256_and_si256(v0, nib), _mm256_and_si256(v1, nib));
            let h0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), nib);
            let h1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib);
            let sign = _mm256_movemask_epi8(v0) as u32 as u64 | (_mm256_movemask_epi8(v1) as u32 as u64) << 32;
            let mut m = [0u64; N];
            let mut k = 0;
            while k < N {
                let t0 = _mm256_and_si256(_mm256_shuffle_epi8(lo[k], l0), _mm256_shuffle_epi8(hi[k], h0));
                let t1 = _mm256_and_si256(_mm256_shuffle_epi8(lo[k], l1), _mm256_shuffle_epi8(hi[k], h1));
                let z0 = !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(t0, zero)) as u32);
                let z1 = !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(t1, zero)) as u32);
                m[k] = (z0 as u64 | (z1 as u64) << 32 | sign & na[k]) & valid;
                k += 1;
            }
            if !f(i, m) {
                return;
            }
            i += 64;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// xorshift: the tests' random bytes (no dependency, reproducible).
    pub(crate) struct Rng(pub u64);
    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        pub fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        /// Random bytes, biased towards the structural ones and newlines/spaces.
        pub fn bytes(&mut self, n: usize) -> Vec<u8> {
            const HOT: &[u8] = b"()[]{}\"\\,/=*  \n\n\r\t%a0.-:\x00\x7f\x80\xc3\xa9\xff";
            (0..n).map(|_| if self.below(3) == 0 { self.next() as u8 } else { HOT[self.below(HOT.len())] }).collect()
        }
    }

    static SETS: Classes<4> = Classes::new([
        ByteSet::of(b"()[]{}\",/\\="),
        ByteSet::of(b"\"\\"),
        ByteSet::of(b"ABCabc012_,:*<=?#+~").complement(),
        ByteSet::of(b"\n"),
    ]);

    fn masks(level: Level, data: &[u8]) -> Vec<[u64; 4]> {
        let mut out = vec![];
        SETS.blocks(level, data, |at, m| {
            assert_eq!(at, out.len() * 64);
            out.push(m);
            true
        });
        out
    }

    #[test]
    fn sets_are_exact() {
        for b in 0..=255u8 {
            assert_eq!(SETS.contains(0, b), b"()[]{}\",/\\=".contains(&b), "{b}");
            assert_eq!(SETS.contains(2, b), !b"ABCabc012_,:*<=?#+~".contains(&b), "{b}");
        }
        let m = masks(Level::Portable, b"a(b\xffc\"");
        assert_eq!(m, vec![[0b100010, 0b100000, 0b101010, 0]]);
    }

    #[test]
    fn detected_level() {
        assert!(Level::Portable.supported());
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512bw") {
            assert_eq!(Level::best(), Level::Avx512);
        }
        assert_eq!(with_level(Level::Portable, Level::current), Level::Portable);
        assert_eq!(Level::current(), Level::best());
    }

    /// Every level gives the portable level's masks: random bytes, every length up to 200 and
    /// longer ones, every start offset within a block (unaligned loads, short tails).
    #[test]
    fn levels_agree_on_random_bytes() {
        let mut rng = Rng(0x9e3779b97f4a7c15);
        let data = rng.bytes(4096);
        for len in (0..=200).chain([255, 256, 257, 1000, 4000]) {
            for off in 0..64 {
                if off + len > data.len() {
                    continue;
                }
                let d = &data[off..off + len];
                let want = masks(Level::Portable, d);
                assert_eq!(want.len(), len.div_ceil(64));
                for level in Level::ALL.into_iter().filter(|l| l.supported()) {
                    assert_eq!(masks(level, d), want, "{level:?} len {len} off {off}");
                    for from in [0, 1, len / 2, len.saturating_sub(1), len] {
                        let naive = d.get(from..).and_then(|s| s.iter().position(|&b| SETS.contains(0, b))).map(|p| p + from);
                        assert_eq!(SETS.find(level, 0, d, from), naive);
                    }
                    assert_eq!(count_indented_lines(level, d), naive_indented(d), "{level:?} len {len} off {off}");
                }
            }
        }
    }

    #[test]
    fn find2_matches_memchr2() {
        let mut text = vec![b'a'; 100];
        for (k, at) in [(b'"', 0), (b'\\', 15), (b'"', 16), (b'\\', 33), (b'"', 99)] {
            text[at] = k;
        }
        for from in 0..=text.len() {
            for end in from..=text.len() {
                assert_eq!(find2(b'"', b'\\', &text[from..end]), memchr::memchr2(b'"', b'\\', &text[from..end]));
            }
        }
    }

    /// The newline list and count of `newlines_and_indented` at every level: every '\n' of the
    /// text from `from`, and `count_indented_lines` of it.
    #[test]
    fn newlines_and_indented_lines() {
        let mut rng = Rng(7);
        for len in [0usize, 1, 2, 63, 64, 65, 127, 128, 129, 1000] {
            let data: Vec<u8> = (0..len).map(|_| b"\n  a"[rng.below(4)]).collect();
            for from in [0, len / 3, len] {
                let want: Vec<u32> = (from..len).filter(|&i| data[i] == b'\n').map(|i| i as u32).collect();
                for level in Level::ALL.into_iter().filter(|l| l.supported()) {
                    let (ends, n) = newlines_and_indented(level, &data, from);
                    assert_eq!(ends, want, "{len} {from} {level:?}");
                    assert_eq!(n, count_indented_lines(Level::Portable, &data[from..]), "{len} {from} {level:?}");
                }
            }
        }
    }

    fn naive_indented(d: &[u8]) -> usize {
        d.starts_with(b"  ") as usize + d.windows(3).filter(|w| w == b"\n  ").count()
    }

    #[test]
    fn indented_lines() {
        let mut text = b"HloModule m\n\nENTRY e {\n  a = f32[] parameter(0)\n ".to_vec();
        for k in 0..1000 {
            text.extend_from_slice(if k % 3 == 0 { b"\n  x = f32[] negate(a)" } else { b"\n x\n" });
        }
        text.extend_from_slice(b"\n  ");
        for level in Level::ALL {
            for cut in [0, 1, 2, 3, 17, 18, 19, 40, 62, 63, 64, 65, 66, text.len() - 1, text.len()] {
                assert_eq!(count_indented_lines(level, &text[..cut]), naive_indented(&text[..cut]), "cut {cut}");
                assert_eq!(count_indented_lines(level, &text[cut..]), naive_indented(&text[cut..]), "from {cut}");
            }
            assert_eq!(count_indented_lines(level, b"  "), 1);
            // "\n  " across a block boundary, at every position
            for at in 55..70 {
                let mut t = vec![b'x'; 140];
                t[at..at + 3].copy_from_slice(b"\n  ");
                assert_eq!(count_indented_lines(level, &t), 1, "at {at}");
            }
        }
    }
}
