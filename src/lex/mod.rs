//! The lexing layer shared by the line-oriented formats (buffer assignment, memory-usage
//! report, thunk sequences, out-of-memory reports): a cursor over one line that walks a grammar
//! left to right and reports the byte position of the first thing it did not expect, and the
//! number grammars XLA prints (plain and digit-grouped integers, `HumanReadableNumBytes` sizes).
//!
//! Errors are positions within the line (`Stop::Bad`); the line driver (`crate::driver`) turns
//! them into `ParseError`s / `errors` rows at the line's number, so every format reports alike.
//! This layer sits below the tables: it knows nothing of them.

use crate::error::Error;

pub mod classify;
pub mod index;
pub mod space;
pub mod structure;

use crate::bytes::same_bytes;

pub const I64_MAX: u64 = i64::MAX as u64;
pub const I32_MAX: u64 = i32::MAX as u64;

/// Why a line handler stopped: a grammar failure at a byte position of the line (reported by
/// the driver at that line), or a fatal error (strict mode) raised by a direct report.
pub enum Stop {
    Bad(usize, String),
    Fatal(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Fatal(e)
    }
}

pub type R<T> = std::result::Result<T, Stop>;

pub fn bad<T>(pos: usize, msg: impl Into<String>) -> R<T> {
    Err(Stop::Bad(pos, msg.into()))
}

// --------------------------------------------------------------------------- line cursor

pub fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

pub fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// First position at or after `from` whose byte is not a name character
/// (`[A-Za-z0-9_.-]`), or `s.len()`. Why SIMD: names are everywhere in a line (instruction,
/// operands, attribute and metadata keys) and 10–30 bytes long; a byte-at-a-time table loop
/// costs ~7 instructions a byte, 16 bytes classified with SSE2 (part of x86-64) about one.
#[inline(always)]
pub fn name_chars_end(s: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let from = {
        use std::arch::x86_64::*;
        // SAFETY (the intrinsics): SSE2 is part of x86_64.
        let name = |v: __m128i| unsafe {
            // signed compares: bytes >= 0x80 are negative, so outside every range here
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let letter = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8(b'a' as i8 - 1)), _mm_cmplt_epi8(lower, _mm_set1_epi8(b'z' as i8 + 1)));
            let digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(b'0' as i8 - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8(b'9' as i8 + 1)));
            // '-' 0x2D and '.' 0x2E are neighbours: one range
            let dash_dot = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(b'-' as i8 - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8(b'.' as i8 + 1)));
            let under = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'_' as i8));
            let name = _mm_or_si128(_mm_or_si128(letter, digit), _mm_or_si128(dash_dot, under));
            _mm_xor_si128(name, _mm_set1_epi8(-1)) // the stops: every byte that is not a name byte
        };
        match classify::sse2_search(s, from, name) {
            Ok(p) => return p,
            Err(i) => i,
        }
    };
    let mut i = from.min(s.len());
    while i < s.len() && is_name_char(s[i]) {
        i += 1;
    }
    i
}

/// `int(digits)` if at most `limit` (digits may be many; leading zeros are fine).
pub fn to_int(digits: &[u8], limit: u64) -> Option<u64> {
    let first = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    let d = &digits[first..];
    if d.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in d {
        v = v * 10 + (b - b'0') as u64;
    }
    (v <= limit).then_some(v)
}

/// End of `[0-9]{1,3}(?: [0-9]{3})+|[0-9]+` at `pos` (None if no digit there).
pub fn grouped_end(t: &[u8], pos: usize) -> Option<usize> {
    let run = t[pos.min(t.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if run == 0 {
        return None;
    }
    let group_at = |i: usize| {
        t.len() >= i + 4 && t[i] == b' ' && t[i + 1..i + 4].iter().all(u8::is_ascii_digit)
    };
    if run <= 3 && group_at(pos + run) {
        let mut i = pos + run;
        while group_at(i) {
            i += 4;
        }
        return Some(i);
    }
    Some(pos + run)
}

/// Grouped digits → number (spaces removed), or None if above i64::MAX.
pub fn grouped_value(s: &[u8]) -> Option<i64> {
    let digits: Vec<u8> = s.iter().copied().filter(|&b| b != b' ').collect();
    to_int(&digits, I64_MAX).map(|v| v as i64)
}

/// `(-?)([0-9]+)(?:\.([0-9]+))?(B|KiB|…|EiB)` at `pos`: (end, sign, whole, frac, power).
/// (end, negative, whole digits, fraction digits, power of 1024).
pub type HumanMatch<'a> = (usize, bool, &'a [u8], &'a [u8], u32);

pub fn human_match(t: &[u8], pos: usize) -> Option<HumanMatch<'_>> {
    size_match(t, pos, &HUMAN_UNITS)
}

/// Units of `HumanReadableNumBytes` (tsl): powers of 1024 written `KiB`, `MiB`, ….
pub const HUMAN_UNITS: [(&[u8], u32); 7] = [(b"B", 0), (b"KiB", 1), (b"MiB", 2), (b"GiB", 3), (b"TiB", 4), (b"PiB", 5), (b"EiB", 6)];

/// Units of the TPU compiler's out-of-memory report (`530.00M`, `4.0K`, `0B`; FORMATS.md
/// §2.9.3). They are powers of 1024, not 1000, although written without `i`: real reports
/// print both the shape and the size of a buffer, and e.g. `s32[8388608,8,4]` (2^30 bytes) is
/// `1.00G`, `f32[29184,2,2560]` (597 688 320 bytes) is `570.00M`, `f32[1024,245,64]` is
/// `61.25M` (decimal units would give `1.07G`, `597.69M`, `64.23M`).
pub const TPU_UNITS: [(&[u8], u32); 7] = [(b"B", 0), (b"K", 1), (b"M", 2), (b"G", 3), (b"T", 4), (b"P", 5), (b"E", 6)];

/// A TPU size (`TPU_UNITS`) at `pos`.
pub fn tpu_size_match(t: &[u8], pos: usize) -> Option<HumanMatch<'_>> {
    size_match(t, pos, &TPU_UNITS)
}

/// `(-?)([0-9]+)(?:\.([0-9]+))?(UNIT)` at `pos`, the first unit of `units` that matches.
pub fn size_match<'a>(t: &'a [u8], pos: usize, units: &[(&[u8], u32)]) -> Option<HumanMatch<'a>> {
    let mut i = pos;
    let neg = t.get(i) == Some(&b'-');
    if neg {
        i += 1;
    }
    let ws = i;
    while i < t.len() && t[i].is_ascii_digit() {
        i += 1;
    }
    if i == ws {
        return None;
    }
    let whole = &t[ws..i];
    let mut frac = &t[i..i];
    if t.get(i) == Some(&b'.') && t.get(i + 1).is_some_and(u8::is_ascii_digit) {
        let fs = i + 1;
        let mut j = fs;
        while j < t.len() && t[j].is_ascii_digit() {
            j += 1;
        }
        frac = &t[fs..j];
        i = j;
    }
    let rest = &t[i..];
    for &(unit, power) in units {
        if rest.starts_with(unit) {
            return Some((i + unit.len(), neg, whole, frac, power));
        }
    }
    None
}

/// `round_half_up(whole.frac × 1024^power)`, exact for any number of digits; None if the
/// magnitude exceeds i64::MAX.
pub fn human_value(neg: bool, whole: &[u8], frac: &[u8], power: u32) -> Option<i64> {
    let w = to_int(whole, u64::MAX)? as i128;
    let s = 10 * power;
    // floor(0.frac × 2^(s+1)) by one in-place pass over the fraction's digits.
    let m: u128 = 1u128 << (s + 1);
    let mut carry: u128 = 0;
    for &d in frac.iter().rev() {
        let x = (d - b'0') as u128 * m + carry;
        carry = x / 10;
    }
    let twice_frac = carry as i128; // < 2^(s+1)
    let v = (w << s).checked_add((twice_frac + 1) / 2)?;
    if v > I64_MAX as i128 {
        return None;
    }
    Some(if neg { -(v as i64) } else { v as i64 })
}

/// Public form of the size conversion (`576B`, `51.1KiB`, `-2.0KiB`): None if not exactly one.
pub fn human_bytes(s: &[u8]) -> Option<i64> {
    let (end, neg, whole, frac, power) = human_match(s, 0)?;
    if end != s.len() {
        return None;
    }
    human_value(neg, whole, frac, power)
}

/// Public form of the TPU size conversion (`530.00M` → 555745280): None if not exactly one.
pub fn tpu_bytes(s: &[u8]) -> Option<i64> {
    let (end, neg, whole, frac, power) = tpu_size_match(s, 0)?;
    if end != s.len() {
        return None;
    }
    human_value(neg, whole, frac, power)
}

/// The one unescaping loop of the formats' quoted strings: the bytes between backslashes are
/// copied (found with `memchr`), and at each backslash `escape(rest, out)` — `rest` starts
/// with the backslash — appends what the format's escape rule makes of it and returns how many
/// bytes it read (at least 1, at most `rest.len()`). HLO strings (`hlo::scan::c_unescape`),
/// JSON strings (`hlo::custom_call`) and protobuf-text strings (`memory_report::proto`) differ
/// only in that rule.
pub fn unescape(s: &[u8], mut escape: impl FnMut(&[u8], &mut Vec<u8>) -> usize) -> Vec<u8> {
    let mut out = Vec::new();
    crate::runtime::reserve_exact(&mut out, s.len()); // fallible: a huge body must not abort
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &s[i..]) {
        out.extend_from_slice(&s[i..i + p]);
        i += p;
        i += escape(&s[i..], &mut out).clamp(1, s.len() - i);
    }
    out.extend_from_slice(&s[i..]);
    out
}

pub struct Cur<'a> {
    pub t: &'a [u8],
    pub pos: usize,
    pub stop: usize,
}

impl<'a> Cur<'a> {
    pub fn new(t: &'a [u8], pos: usize) -> Cur<'a> {
        Cur {
            t,
            pos,
            stop: t.len(),
        }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.stop
    }

    pub fn view(&self) -> &'a [u8] {
        &self.t[self.pos.min(self.stop)..self.stop]
    }

    #[inline]
    pub fn accept(&mut self, lit: &str) -> bool {
        let (v, lit_b) = (self.view(), lit.as_bytes());
        if v.len() >= lit_b.len() && same_bytes(&v[..lit_b.len()], lit_b) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    // The lexer's hot calls are inlined into the line grammars; their error messages are built
    // out of line (`#[cold]`), so that the inlined part is the test and the step.

    #[inline]
    pub fn expect(&mut self, lit: &str, what: &str) -> R<()> {
        if self.accept(lit) {
            return Ok(());
        }
        self.expected_lit(lit, what)
    }

    #[cold]
    #[inline(never)]
    fn expected_lit(&self, lit: &str, what: &str) -> R<()> {
        let extra = if what.is_empty() {
            String::new()
        } else {
            format!(" {what}")
        };
        bad(self.pos, format!("expected {lit:?}{extra}"))
    }

    #[inline]
    pub fn uint(&mut self, what: &str, limit: u64) -> R<u64> {
        let start = self.pos;
        let v = self.view();
        // Up to 19 digits (they fit a u64) are read in the same pass that finds them; a
        // longer run goes through `to_int` (leading zeros, out of range).
        let (mut n, mut value) = (0, 0u64);
        while n < 19 && n < v.len() && v[n].is_ascii_digit() {
            value = value * 10 + (v[n] - b'0') as u64;
            n += 1;
        }
        if n == 0 {
            return self.expected_digits(start, what);
        }
        let value = if n == 19 {
            n += v[19..].iter().take_while(|b| b.is_ascii_digit()).count();
            to_int(&v[..n], limit)
        } else {
            (value <= limit).then_some(value)
        };
        self.pos += n;
        match value {
            Some(v) => Ok(v),
            None => self.out_of_range(start, what, limit),
        }
    }

    #[cold]
    #[inline(never)]
    fn expected<T>(&self, what: &str) -> R<T> {
        bad(self.pos, format!("expected {what}"))
    }

    #[cold]
    #[inline(never)]
    fn expected_digits<T>(&self, at: usize, what: &str) -> R<T> {
        bad(at, format!("expected {what} (digits)"))
    }

    #[cold]
    #[inline(never)]
    fn out_of_range<T>(&self, at: usize, what: &str, limit: u64) -> R<T> {
        bad(at, format!("{what} is out of range (at most {limit})"))
    }

    pub fn grouped(&mut self, what: &str) -> R<i64> {
        let start = self.pos;
        let Some(end) = grouped_end(&self.t[..self.stop], start) else {
            return bad(start, format!("expected {what} (digits)"));
        };
        self.pos = end;
        match grouped_value(&self.t[start..end]) {
            Some(v) => Ok(v),
            None => bad(start, format!("{what} is out of range (at most {I64_MAX})")),
        }
    }

    #[inline]
    pub fn name(&mut self, what: &str) -> R<&'a [u8]> {
        let v = self.view();
        if !v.first().is_some_and(|&b| is_name_start(b)) {
            return self.expected(what);
        }
        let n = name_chars_end(v, 1);
        self.pos += n;
        Ok(&v[..n])
    }

    /// An optional shape index `{[0-9,]*}`; a `{` that does not start one is an error.
    pub fn index(&mut self) -> R<Option<&'a [u8]>> {
        let v = self.view();
        if v.first() != Some(&b'{') {
            return Ok(None);
        }
        let n = v[1..]
            .iter()
            .take_while(|&&b| b.is_ascii_digit() || b == b',')
            .count();
        if v.get(1 + n) != Some(&b'}') {
            return bad(self.pos, "expected a shape index such as {} or {0,2}");
        }
        self.pos += n + 2;
        Ok(Some(&v[..n + 2]))
    }

    pub fn human(&mut self, what: &str) -> R<i64> {
        let start = self.pos;
        let Some((end, neg, whole, frac, power)) = human_match(&self.t[..self.stop], start) else {
            return bad(
                start,
                format!("expected {what} (a size such as 576B, 51.1KiB, 4.00MiB)"),
            );
        };
        self.pos = end;
        match human_value(neg, whole, frac, power) {
            Some(v) => Ok(v),
            None => bad(
                start,
                format!("{what} is out of range (at most {I64_MAX} bytes)"),
            ),
        }
    }

    /// `N (H)` to the end of the line: a byte count and its rounded human-readable form, as
    /// XLA prints totals (`Total bytes used: 3225152 (3.08MiB)`). Returns N.
    pub fn bytes_and_human(&mut self, what: &str) -> R<i64> {
        let total = self.uint("the total in bytes", I64_MAX)? as i64;
        self.expect(" (", "")?;
        self.human("the rounded total")?;
        self.expect(")", "")?;
        self.end(what)?;
        Ok(total)
    }

    /// A TPU size (`530.00M`, `0B`): exact bytes as `human`, units of `TPU_UNITS`.
    pub fn tpu_size(&mut self, what: &str) -> R<i64> {
        let start = self.pos;
        let Some((end, neg, whole, frac, power)) = tpu_size_match(&self.t[..self.stop], start) else {
            return bad(start, format!("expected {what} (a size such as 0B, 4.0K, 530.00M, 20.43G)"));
        };
        self.pos = end;
        match human_value(neg, whole, frac, power) {
            Some(v) => Ok(v),
            None => bad(start, format!("{what} is out of range (at most {I64_MAX} bytes)")),
        }
    }

    pub fn spaces(&mut self) {
        while self.pos < self.stop && self.t[self.pos] == b' ' {
            self.pos += 1;
        }
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let r = self.view();
        self.pos = self.stop;
        r
    }

    pub fn end(&self, what: &str) -> R<()> {
        if self.at_end() {
            Ok(())
        } else {
            bad(self.pos, format!("unexpected text after {what}"))
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    /// `Cur::uint` reads up to 19 digits in one pass: the same value, error and position as
    /// the digit run through `to_int`.
    #[test]
    fn uint_agrees_with_to_int() {
        let mut cases: Vec<String> = vec!["0".into(), "7x".into(), "x".into(), "".into()];
        for n in 1..=24 {
            cases.push("9".repeat(n));
            cases.push(format!("{}1", "0".repeat(n)));
            cases.push(format!("1{}", "0".repeat(n - 1)));
        }
        cases.push("18446744073709551615".into());
        // runs of every length before every kind of byte
        for n in 1..=10 {
            for stop in [" ", ":", "/", "@", ">", ",", "\u{e9}", "\x7f", "9"] {
                let digits: String = (0..n).map(|k| char::from(b'0' + ((k * 7 + 3) % 10) as u8)).collect();
                cases.push(format!("{digits}{stop}tail of the line"));
                cases.push(format!("{digits}{stop}"));
            }
        }
        cases.push("9223372036854775807 ".into());
        cases.push("9223372036854775808".into());
        for c in &cases {
            for limit in [0, 9, 1000, I64_MAX, u64::MAX] {
                let run = c.bytes().take_while(u8::is_ascii_digit).count();
                let want = (run > 0).then(|| to_int(&c.as_bytes()[..run], limit));
                let mut cur = Cur::new(c.as_bytes(), 0);
                let got = cur.uint("n", limit);
                match want {
                    None => assert!(got.is_err() && cur.pos == 0, "{c:?}"),
                    Some(v) => {
                        assert_eq!(got.ok(), v, "{c:?} limit {limit}");
                        assert_eq!(cur.pos, run, "{c:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn name_chars_end_agrees_with_the_byte_rule() {
        // every byte value at every position of a 16-byte block, and in the scalar tail
        for len in [1usize, 15, 16, 17, 31, 40] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    for from in [0, at.saturating_sub(1), at] {
                        let want = (from..len).find(|&k| !super::is_name_char(s[k])).unwrap_or(len);
                        assert_eq!(super::name_chars_end(&s, from), want, "len {len} at {at} byte {b} from {from}");
                    }
                }
            }
        }
        assert_eq!(super::name_chars_end(b"abc", 7), 3);
    }

    #[test]
    fn human_sizes_round_half_up() {
        assert_eq!(human_bytes(b"576B"), Some(576));
        assert_eq!(human_bytes(b"51.1KiB"), Some(52326));
        assert_eq!(human_bytes(b"4.00MiB"), Some(4 << 20));
        assert_eq!(human_bytes(b"220.17MiB"), Some(230864978));
        assert_eq!(human_bytes(b"0.5B"), Some(1));
        assert_eq!(human_bytes(b"-2.5B"), Some(-3));
        assert_eq!(
            human_bytes(b"7.99999999999999999999999999999999999999999999EiB"),
            None
        );
        assert_eq!(
            human_bytes(b"0.0000000000000000000000000000000000000000000001EiB"),
            Some(0)
        );
        assert_eq!(human_bytes(b"99999999999999999999999EiB"), None);
        assert_eq!(human_bytes(b"1.KiB"), None);
    }

    #[test]
    fn tpu_sizes_are_binary() {
        assert_eq!(tpu_bytes(b"0B"), Some(0));
        assert_eq!(tpu_bytes(b"4.0K"), Some(4096));
        assert_eq!(tpu_bytes(b"530.00M"), Some(530 << 20));
        assert_eq!(tpu_bytes(b"1.00G"), Some(1 << 30));
        assert_eq!(tpu_bytes(b"61.25M"), Some(64225280)); // f32[1024,245,64]
        assert_eq!(tpu_bytes(b"570.00M"), Some(597688320)); // f32[29184,2,2560]
        assert_eq!(tpu_bytes(b"1.5GiB"), None);
        assert_eq!(tpu_bytes(b"12"), None);
    }

    #[test]
    fn grouped() {
        assert_eq!(grouped_end(b"1 234 bytes", 0), Some(5));
        assert_eq!(grouped_end(b"1234 567", 0), Some(4));
        assert_eq!(grouped_end(b"12 34 bytes", 0), Some(2));
        assert_eq!(grouped_end(b"x", 0), None);
    }
}
