//! Bracket-, string- and comment-aware skipping over instruction text (FORMATS.md §3.1, §3.8.1).
//!
//! Every function mirrors one helper of `reference/hlo.py` exactly (same failure cases), because
//! the tables must agree cell for cell, error rows included. They work on bytes: the structural
//! characters are ASCII, and a multi-byte UTF-8 character never contains an ASCII byte, so byte
//! scanning finds the same positions as the reference's character scanning.
//!
//! The scans are written once, generic over `lex::index::Walk`, and step from one byte of the
//! sets of `HLO` to the next (a bracket, quote, comma or '/'; a string's end; a shape's stop)
//! with one walker (`step`). A line of `INDEX_FROM` bytes or more is walked through its
//! structural index (`lex::index`, built by the SIMD classifier of `lex::classify`), so
//! multi-MB lines (base64 kernel bodies, tuples of thousands of operands) are skipped at
//! memory speed; a shorter line a byte at a time (`plain`), which is faster for the ~100-byte
//! lines of real dumps than building their index.

use std::borrow::Cow;

use memchr::memchr;

use crate::lex::classify::{ByteSet, Classes};

/// Why a scan failed (the reference's `ScanError` messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanError {
    UnterminatedString,
    UnterminatedComment,
    Unbalanced,
    UnbalancedAttribute,
    /// `expected KEY= at {pos}`: byte position in the attribute text.
    ExpectedKey(usize),
    BadMetadata,
    NoOpcode,
    /// Text the one-line fast path leaves to the general grammar (`general.rs`): a `//`
    /// comment, blanks before a ',' or after ", ", an attribute with an empty value, a byte that
    /// cannot be part of a shape.
    Irregular,
}

impl ScanError {
    /// The reference's message; positions are in characters of `text` (Python str indices).
    pub fn message(&self, text: &[u8]) -> String {
        match *self {
            ScanError::UnterminatedString => "unterminated string".into(),
            ScanError::UnterminatedComment => "unterminated comment".into(),
            ScanError::Unbalanced => "unbalanced brackets".into(),
            ScanError::UnbalancedAttribute => "unbalanced brackets in attribute value".into(),
            ScanError::ExpectedKey(pos) => format!("expected KEY= at {}", char_count(&text[..pos.min(text.len())])),
            ScanError::BadMetadata => "bad metadata item".into(),
            ScanError::NoOpcode => "shape not followed by an opcode".into(),
            ScanError::Irregular => "irregular text".into(),
        }
    }
}

pub type ScanResult<T> = std::result::Result<T, ScanError>;

fn char_count(s: &[u8]) -> usize {
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

const fn table(chars: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < chars.len() {
        t[chars[i] as usize] = true;
        i += 1;
    }
    t
}

/// What the bracket-, string- and comment-aware scans stop at: brackets, '"', '/' (a comment
/// may start), ',' and '\\'. (Indices of the sets of `HLO`.)
pub const STRUCT: usize = 0;
/// Inside a string: '"' and '\\'.
pub const QB: usize = 1;
/// What `scan_shape` stops at: all but the bytes a shape is made of besides brackets, the
/// space and comments (`[A-Za-z0-9_,:*<=?#+~]`).
pub const SHAPE: usize = 2;

/// The byte sets of the HLO scans, classified together in one pass (`lex::classify`).
pub static HLO: Classes<3> = Classes::new([
    ByteSet::of(b"()[]{}\"/,\\"),
    ByteSet::of(b"\"\\"),
    ByteSet::of(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_,:*<=?#+~").complement(),
]);

/// A text indexed with `HLO` (or a piece of one).
pub type Text<'a> = crate::lex::index::Text<'a, 3>;
/// The index behind `Text` (one per instruction parser, rebuilt for every long line).
pub type HloIndex = crate::lex::index::Index<3>;
/// A text walked without an index.
pub type Plain<'a> = crate::lex::index::Bytes<'a, 3>;
pub use crate::lex::index::Walk;

/// Lines at least this long are walked through their index (`lex::index`), shorter ones a
/// byte at a time: measured on real dumps (~100 bytes a line), building the index of every
/// line costs more than the scans save; on long lines (tuples of hundreds of operands, kernel
/// bodies) the index wins.
pub const INDEX_FROM: usize = 512;

/// `text` to be walked without an index.
#[inline(always)]
pub fn plain(text: &[u8]) -> Plain<'_> {
    Plain { bytes: text, classes: &HLO }
}

#[inline]
pub fn is_open(b: u8) -> bool {
    matches!(b, b'(' | b'[' | b'{')
}

#[inline]
pub fn is_close(b: u8) -> bool {
    matches!(b, b')' | b']' | b'}')
}

pub use crate::lex::is_name_start;

static NAME_CHAR: [bool; 256] = table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");

/// `lex::is_name_char` by table (the hot name scans).
#[inline]
pub fn is_name_char(b: u8) -> bool {
    NAME_CHAR[b as usize]
}

/// End of the `NAME` (`[A-Za-z_][A-Za-z0-9_.\-]*`) starting at `i`, or None.
#[inline]
pub fn name_end(text: &[u8], i: usize) -> Option<usize> {
    if i < text.len() && is_name_start(text[i]) {
        Some(crate::lex::name_chars_end(text, i + 1))
    } else {
        None
    }
}

/// `KEY=` at `i`: the index of the '='.
#[inline]
pub fn key_eq_at(text: &[u8], i: usize) -> Option<usize> {
    let e = name_end(text, i)?;
    (text.get(e) == Some(&b'=')).then_some(e)
}

/// `text[i]` is an opening '"': index just past the closing quote (`\` escapes any byte).
#[inline]
pub fn skip_string<W: Walk>(t: &W, i: usize) -> ScanResult<usize> {
    skip_string_esc(t, i).map(|(end, _)| end)
}

/// `skip_string`, and whether the string holds a backslash (if not, its unescaped value is
/// the text between the quotes).
#[inline]
pub fn skip_string_esc<W: Walk>(t: &W, i: usize) -> ScanResult<(usize, bool)> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        let Some(at) = t.next(QB, j) else { return Err(ScanError::UnterminatedString) };
        if t[at] == b'"' {
            return Ok((at + 1, escaped));
        }
        if at + 1 >= t.len() {
            return Err(ScanError::UnterminatedString);
        }
        escaped = true;
        j = at + 2;
    }
}

/// `skip_string` on a text that no caller indexed.
pub fn skip_string_in(text: &[u8], i: usize) -> ScanResult<usize> {
    skip_string(&plain(text), i)
}

/// `text[i..i+2]` is `/*`: index just past the `*/`.
#[inline]
pub fn skip_comment(text: &[u8], i: usize) -> ScanResult<usize> {
    match find_pair(text, (i + 2).min(text.len()), b'*', b'/') {
        Some(p) => Ok(p + 2),
        None => Err(ScanError::UnterminatedComment),
    }
}

/// What one step of a bracket walk met at a `STRUCT` byte (strings and comments skipped).
pub(super) enum Step {
    Open,
    Close,
    Comma,
    /// A string or comment (`plain` regions have none) was skipped.
    Skipped,
    /// A '/' that opens no comment, or a '\\' outside a string.
    Other,
}

/// First `STRUCT` byte (`()[]{}"/,\\`) at or after `from`: 16 bytes at a time with SSE2
/// (part of x86-64). Why: the stretches between structural bytes of a line (operand names,
/// `stack_frame_id=59}`, attribute words) are often longer than a byte loop's break-even.
#[inline(always)]
pub fn find_struct(s: &[u8], from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    let from = {
        use std::arch::x86_64::*;
        // SAFETY (the intrinsics): SSE2 is part of x86_64.
        let structural = |v: __m128i| unsafe {
            let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            // '(' 0x28 and ')' 0x29 differ in the low bit; '[' ']' '{' '}' are 0x5B 0x5D
            // 0x7B 0x7D, which bit 0x20 folds to 0x7B 0x7D
            let paren = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(!1)), _mm_set1_epi8(b'(' as i8));
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let bracket = _mm_or_si128(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8)), _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8)));
            let rest = _mm_or_si128(_mm_or_si128(eq(b'"'), eq(b',')), _mm_or_si128(eq(b'/'), eq(b'\\')));
            _mm_or_si128(_mm_or_si128(paren, bracket), rest)
        };
        match crate::lex::classify::sse2_search(s, from, structural) {
            Ok(p) => return Some(p),
            Err(i) => i,
        }
    };
    let i = from.min(s.len());
    s[i..].iter().position(|&b| HLO.contains(STRUCT, b)).map(|p| p + i)
}

/// The one walker behind the bracket scans: from `*i`, the next `STRUCT` byte that is not
/// inside a string or a `/*…*/` comment; `*i` is left just past what it met. None at the end.
#[inline(always)]
pub(super) fn step<W: Walk>(t: &W, i: &mut usize) -> Option<ScanResult<(usize, Step)>> {
    let p = if W::INDEXED { t.next(STRUCT, *i)? } else { find_struct(t, *i)? };
    let (next, what) = match t[p] {
        b'(' | b'[' | b'{' => (p + 1, Step::Open),
        b')' | b']' | b'}' => (p + 1, Step::Close),
        b',' => (p + 1, Step::Comma),
        b'"' => match skip_string(t, p) {
            Ok(e) => (e, Step::Skipped),
            Err(e) => return Some(Err(e)),
        },
        b'/' if t[p + 1..].starts_with(b"*") => match skip_comment(t, p) {
            Ok(e) => (e, Step::Skipped),
            Err(e) => return Some(Err(e)),
        },
        _ => (p + 1, Step::Other),
    };
    *i = next;
    Some(Ok((p, what)))
}

/// `text[i]` is an opening bracket: index just past its matching close. `()[]{}` count
/// together; strings and `/*…*/` comments are skipped.
pub fn match_close<W: Walk>(t: &W, mut i: usize) -> ScanResult<usize> {
    let mut depth: i64 = 0;
    while let Some(s) = step(t, &mut i) {
        match s?.1 {
            Step::Open => depth += 1,
            Step::Close => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
    }
    Err(ScanError::Unbalanced)
}

/// `match_close` for an operand list: also records the ',' at depth 1 (the separators of the
/// operands) in `commas`. Returns (end, plain): `plain` is false when the region holds a '"'
/// or '/' (strings, comments), where the commas must be found the slow way on the
/// comment-stripped text.
pub fn match_close_commas<W: Walk>(t: &W, mut i: usize, commas: &mut Vec<usize>) -> ScanResult<(usize, bool)> {
    commas.clear();
    let mut depth: i64 = 0;
    let mut plain = true;
    while let Some(s) = step(t, &mut i) {
        let (p, what) = s?;
        match what {
            Step::Comma if depth == 1 => commas.push(p),
            Step::Open => depth += 1,
            Step::Close => {
                depth -= 1;
                if depth == 0 {
                    return Ok((i, plain));
                }
            }
            Step::Skipped => plain = false,
            Step::Other if t[p] == b'/' => plain = false,
            _ => {}
        }
    }
    Err(ScanError::Unbalanced)
}

/// Split `text` at ',' lying at depth 0 outside strings and comments; calls `f(start, end)`
/// for every piece (also the last, possibly empty, one).
pub fn split_top(text: &[u8], f: impl FnMut(usize, usize)) -> ScanResult<()> {
    if text.len() < INDEX_FROM {
        return split_top_walk(&plain(text), f);
    }
    let mut ix = HloIndex::default();
    split_top_walk(&ix.build(&HLO, text), f)
}

fn split_top_walk<W: Walk>(t: &W, mut f: impl FnMut(usize, usize)) -> ScanResult<()> {
    let text: &[u8] = t;
    let mut depth: i64 = 0;
    let mut start = 0;
    let mut i = 0;
    while let Some(s) = step(t, &mut i) {
        match s? {
            (p, Step::Comma) if depth == 0 => {
                f(start, p);
                start = p + 1;
            }
            (_, Step::Open) => depth += 1,
            (_, Step::Close) => depth -= 1,
            _ => {}
        }
    }
    f(start, text.len());
    Ok(())
}

/// End of the shape starting at `text[i]`: the first space at depth 0 (comments skipped).
/// `ScanError::Irregular` for a byte that cannot be part of a shape (a NUL, a quote, a tab,
/// `//`, non-ASCII …): the general grammar then reports it.
pub fn scan_shape<W: Walk>(t: &W, mut i: usize) -> ScanResult<usize> {
    let mut depth: i64 = 0;
    while let Some(p) = t.next(SHAPE, i) {
        i = p;
        match t[i] {
            b' ' => {
                if depth == 0 {
                    return Ok(i);
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth -= 1;
                i += 1;
            }
            b'/' if t[i + 1..].starts_with(b"*") => i = skip_comment(t, i)?,
            _ => return Err(ScanError::Irregular),
        }
    }
    Err(ScanError::NoOpcode)
}

/// `scan_shape` on a text that no caller indexed.
pub fn scan_shape_in(text: &[u8], i: usize) -> ScanResult<usize> {
    scan_shape(&plain(text), i)
}

/// The reference's `_balanced`: depth ≤ 0 at the end and no unterminated string or comment.
pub fn balanced(text: &[u8]) -> bool {
    let t = plain(text);
    let mut depth: i64 = 0;
    let mut i = 0;
    while let Some(s) = step(&t, &mut i) {
        match s {
            Err(_) => return false,
            Ok((_, Step::Open)) => depth += 1,
            Ok((_, Step::Close)) => depth -= 1,
            Ok(_) => {}
        }
    }
    depth <= 0
}

/// Remove every `/*…*/` comment (string-unaware, like the reference's regex; an unterminated
/// `/*` and what follows stay). Returns None when there is no comment. Otherwise fills `out`
/// with the remaining text and `segs` with (start in `out`, start in `text`, length) of each
/// kept piece, so that a range of `out` can be mapped back to the input.
pub fn strip_comments(text: &[u8], out: &mut Vec<u8>, segs: &mut Vec<(usize, usize, usize)>) -> bool {
    let Some(first) = find_comment(text, 0) else { return false };
    out.clear();
    segs.clear();
    let mut kept = 0; // start of the current kept piece in `text`
    let mut at = first;
    loop {
        let Some(e) = find_pair(text, at + 2, b'*', b'/').map(|p| p - at - 2) else { break };
        segs.push((out.len(), kept, at - kept));
        out.extend_from_slice(&text[kept..at]);
        kept = at + 2 + e + 2;
        match find_comment(text, kept) {
            Some(p) => at = p,
            None => break,
        }
    }
    segs.push((out.len(), kept, text.len() - kept));
    out.extend_from_slice(&text[kept..]);
    true
}

/// First `/*` at or after `from`.
#[inline]
fn find_comment(text: &[u8], from: usize) -> Option<usize> {
    find_pair(text, from, b'/', b'*')
}

/// First occurrence of the two bytes `a b` at or after `from` (memchr on `a`: cheaper than
/// building a memmem finder for the short texts we search).
#[inline]
pub fn find_pair(text: &[u8], mut from: usize, a: u8, b: u8) -> Option<usize> {
    while let Some(p) = memchr(a, &text[from..]) {
        let at = from + p;
        if text.get(at + 1) == Some(&b) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Map `out[a..b]` (after `strip_comments`) back to a range of the original text when it lies
/// within one kept piece.
pub fn unstrip(segs: &[(usize, usize, usize)], a: usize, b: usize) -> Option<(usize, usize)> {
    let k = segs.partition_point(|s| s.0 <= a).checked_sub(1)?;
    let (o, t, n) = segs[k];
    (b <= o + n).then(|| (t + a - o, t + b - o))
}

// ------------------------------------------------------------------------ Python whitespace

pub use crate::lex::space::{py_strip, skip_ws, ws_len};

/// An HLO number read by ASCII byte rules: `-?[0-9]+` (`signed`) or `[0-9]+`, leading zeros
/// allowed. `Ok(Some(v))` when it fits i64, `Err(())` when it has that form but does not fit
/// (an error at its first character, like the buffer-assignment numbers), `Ok(None)` when `s`
/// is not such a number.
pub fn ascii_i64(s: &[u8], signed: bool) -> std::result::Result<Option<i64>, ()> {
    let (neg, digits) = match s.first() {
        Some(b'-') if signed => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Ok(None);
    }
    digits_i64(neg, digits).map(Some).ok_or(())
}

/// `ascii_i64` for the metadata numbers kept as int32 columns (`source_line`,
/// `stack_frame_id`; issue 26: output size): `Err(())` when the number does not fit i32.
pub fn ascii_i32(s: &[u8], signed: bool) -> std::result::Result<Option<i32>, ()> {
    match ascii_i64(s, signed)? {
        Some(v) => i32::try_from(v).map(Some).map_err(|_| ()),
        None => Ok(None),
    }
}

/// The value of ASCII `digits` (negated with `neg`) if it fits i64.
pub fn digits_i64(neg: bool, digits: &[u8]) -> Option<i64> {
    if neg {
        // -2^63 is the one magnitude that fits negated but not positive
        crate::lex::to_int(digits, 1 << 63).map(|v| (v as i64).wrapping_neg())
    } else {
        crate::lex::to_int(digits, i64::MAX as u64).map(|v| v as i64)
    }
}

// ------------------------------------------------------------------------ strings

/// C-unescape the inside of a quoted HLO string (FORMATS.md §3.1.4): octal and `\xHH` give
/// bytes, the result is decoded as UTF-8 with U+FFFD for invalid sequences; unknown escapes keep
/// the character. Borrowed when there is nothing to unescape (the common case).
pub fn c_unescape(s: &[u8]) -> Cow<'_, [u8]> {
    if memchr(b'\\', s).is_none() {
        return Cow::Borrowed(s);
    }
    let out = crate::lex::unescape(s, |r, out| {
        if r.len() < 2 {
            out.push(b'\\'); // a lone trailing backslash is kept
            return 1;
        }
        match r[1] {
            b'0'..=b'7' => {
                let mut v: u32 = 0;
                let mut j = 1;
                while j < r.len() && j < 4 && (b'0'..=b'7').contains(&r[j]) {
                    v = v * 8 + (r[j] - b'0') as u32;
                    j += 1;
                }
                out.push((v & 0xFF) as u8);
                j
            }
            b'x' if r.get(2).is_some_and(|b| b.is_ascii_hexdigit()) => {
                let mut v: u32 = 0;
                let mut j = 2;
                while j < r.len() && j < 4 && r[j].is_ascii_hexdigit() {
                    v = v * 16 + (r[j] as char).to_digit(16).unwrap();
                    j += 1;
                }
                out.push(v as u8);
                j
            }
            e => {
                out.push(match e {
                    b'n' => 0x0A,
                    b'r' => 0x0D,
                    b't' => 0x09,
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'v' => 0x0B,
                    other => other, // \\ \" \' \? and unknown escapes keep the character
                });
                2
            }
        }
    });
    match String::from_utf8_lossy(&out) {
        Cow::Borrowed(_) => Cow::Owned(out),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// A value that is exactly one quoted string, unescaped; None otherwise.
pub fn unquote(value: &[u8]) -> Option<Cow<'_, [u8]>> {
    if value.len() >= 2 && value[0] == b'"' && skip_string_in(value, 0) == Ok(value.len()) {
        Some(c_unescape(&value[1..value.len() - 1]))
    } else {
        None
    }
}

/// `unquote(v)` or `v` itself (the reference's "unquoted value kept raw").
#[inline]
pub fn unquote_or_raw(v: &[u8]) -> Cow<'_, [u8]> {
    unquote(v).unwrap_or(Cow::Borrowed(v))
}

/// Test support (the unit tests here, `attributes::assert_walks_agree` and `fuzz/`): every scan
/// started at `i` gives the same result, errors included, walked through `a` and through `b` (a
/// byte loop and an index); shapes too when `shapes` (the parser starts those after a blank only).
#[doc(hidden)]
pub fn assert_scans_agree<A: Walk, B: Walk>(a: &A, b: &B, i: usize, shapes: bool) {
    let text: &[u8] = a;
    let (mut c1, mut c2) = (vec![], vec![]);
    if is_open(text[i]) {
        assert_eq!(match_close(a, i), match_close(b, i), "match_close at {i}");
        assert_eq!(match_close_commas(a, i, &mut c1), match_close_commas(b, i, &mut c2), "match_close_commas at {i}");
        assert_eq!(c1, c2, "commas at {i}");
    }
    if text[i] == b'"' {
        assert_eq!(skip_string_esc(a, i), skip_string_esc(b, i), "skip_string_esc at {i}");
    }
    if shapes {
        assert_eq!(scan_shape(a, i), scan_shape(b, i), "scan_shape at {i}");
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn find_struct_agrees_with_the_set() {
        for len in [1usize, 15, 16, 17, 33] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    for from in [0, at] {
                        let want = (from..len).find(|&k| HLO.contains(STRUCT, s[k]));
                        assert_eq!(find_struct(&s, from), want, "len {len} at {at} byte {b} from {from}");
                    }
                }
            }
        }
        assert_eq!(find_struct(b"a,", 5), None);
    }

    /// Random instruction-like texts (400, from a fixed seed) and a random number source, for
    /// the walk tests here and in `attributes.rs`.
    pub(crate) fn random_texts() -> (Vec<Vec<u8>>, impl FnMut(usize) -> usize) {
        const PIECES: &[&[u8]] = &[b"(", b")", b"[", b"]", b"{", b"}", b"\"", b"\\", b"/*", b"*/", b"/", b",", b", ", b" ", b"a=", b"op_name=", b"%x.1", b"f32[2,3]{1,0}", b"\xc2\xa0", b"\t", b"~#", b"\x00", b"//"];
        let mut rng = crate::lex::classify::tests::Rng(0x9e3779b97f4a7c15);
        let texts = (0..400)
            .map(|round| {
                let n = if round % 10 == 0 { 200 } else { rng.below(40) };
                (0..n).flat_map(|_| PIECES[rng.below(PIECES.len())].iter().copied()).collect()
            })
            .collect();
        (texts, move |n: usize| rng.below(n))
    }

    /// Every scan gives the same result (errors included) walked a byte at a time and through
    /// the index built at every classifier level: random instruction-like texts, every start.
    #[test]
    fn walks_agree() {
        use crate::lex::classify::Level;
        let (texts, mut next) = random_texts();
        for text in texts {
            let p = plain(&text);
            for level in Level::ALL.into_iter().filter(|l| l.supported()) {
                let mut ix = HloIndex::new(level);
                let t = ix.build(&HLO, &text);
                let (mut c1, mut c2) = (vec![], vec![]);
                let r1 = split_top_walk(&p, |a, b| c1.push(a * 1000 + b));
                let r2 = split_top_walk(&t, |a, b| c2.push(a * 1000 + b));
                assert_eq!((r1, &c1), (r2, &c2));
                for i in 0..text.len() {
                    assert_scans_agree(&p, &t, i, true);
                    let e = i + next(text.len() - i + 1);
                    assert_eq!(scan_shape(&p.sub(i, e), 0), scan_shape(&t.sub(i, e), 0));
                }
            }
        }
    }

    #[test]
    fn strings_and_comments() {
        assert_eq!(skip_string_in(br#""a\"b" x"#, 0), Ok(6));
        assert_eq!(skip_string_in(br#""a\"#, 0), Err(ScanError::UnterminatedString));
        assert_eq!(skip_string_in(b"\"abc", 0), Err(ScanError::UnterminatedString));
        assert_eq!(skip_comment(b"/*/ */x", 0), Ok(6));
        assert_eq!(skip_comment(b"/*/", 0), Err(ScanError::UnterminatedComment));
    }

    #[test]
    fn brackets() {
        let t = br#"(a, {b: "}"}, /*)*/ [c]) tail"#;
        assert_eq!(match_close(&plain(t), 0), Ok(t.len() - 5));
        assert_eq!(match_close(&plain(b"(a"), 0), Err(ScanError::Unbalanced));
        assert!(balanced(b"a={b}"));
        assert!(balanced(b"a=}"));
        assert!(!balanced(b"a={"));
        assert!(!balanced(b"a=\"{"));
        assert!(!balanced(b"a=/*"));
        let mut parts = vec![];
        split_top(b"a, (b, c), \"d,e\", /*,*/f", |a, b| parts.push((a, b))).unwrap();
        assert_eq!(parts.len(), 4);
    }

    #[test]
    fn shapes() {
        let t = b"(f32[], /*index=5*/s32[2]{0}) tuple()";
        assert_eq!(scan_shape_in(t, 0), Ok(29));
        assert_eq!(scan_shape_in(b"f32[]", 0), Err(ScanError::NoOpcode));
    }

    #[test]
    fn comment_stripping_maps_back() {
        let t = b"%a0, /*index=5*/%a5, %b/*x*/c";
        let (mut out, mut segs) = (vec![], vec![]);
        assert!(strip_comments(t, &mut out, &mut segs));
        assert_eq!(out, b"%a0, %a5, %bc");
        assert_eq!(unstrip(&segs, 5, 8), Some((16, 19)));
        assert_eq!(&t[16..19], b"%a5");
        assert_eq!(unstrip(&segs, 10, 13), None);
        assert!(!strip_comments(b"no comments", &mut out, &mut segs));
        assert!(strip_comments(b"a /* open", &mut out, &mut segs));
        assert_eq!(out, b"a /* open");
    }

    #[test]
    fn unescape() {
        assert_eq!(&*c_unescape(br#"scope/\"q\"/it\'s\n"#), b"scope/\"q\"/it's\n");
        assert_eq!(&*c_unescape(br"C:\\src\\m\303\251.py"), "C:\\src\\mé.py".as_bytes());
        assert_eq!(&*c_unescape(br"\x41\xg\q\"), b"Axgq\\");
        assert_eq!(&*c_unescape(br"\377"), "\u{FFFD}".as_bytes());
        assert!(matches!(c_unescape(b"plain"), Cow::Borrowed(_)));
        assert_eq!(unquote(br#""a\" b""#).as_deref(), Some(&b"a\" b"[..]));
        assert_eq!(unquote(br#""a" b"#), None);
    }

    #[test]
    fn python_whitespace_and_ints() {
        assert_eq!(py_strip(" \u{a0}x y\u{3000}\n".as_bytes()), (3, 6));
        assert_eq!(ascii_i64(b"000000000000000000000000012", false), Ok(Some(12)));
        assert_eq!(ascii_i64(b"-9223372036854775808", true), Ok(Some(i64::MIN)));
        assert_eq!(ascii_i64(b"9223372036854775808", true), Err(()));
        assert_eq!(ascii_i64(b"-5", false), Ok(None));
        assert_eq!(ascii_i64(b"+1_0", true), Ok(None));
        assert_eq!(ascii_i64(b"\xd9\xa1", true), Ok(None));
    }
}
