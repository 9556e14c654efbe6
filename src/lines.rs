//! Line scanning: memchr over the whole input, slices into it, CRLF tolerated, UTF-8 checked,
//! a lone CR (not followed by LF) reported.

use memchr::memchr;

/// One line of input, without its line terminator (and without a trailing `\r`).
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    /// 1-based line number.
    pub no: u64,
    /// Byte offset of the line's first byte in the input.
    pub start: usize,
    pub text: &'a [u8],
    /// The first problem of the line, if any: a byte that is not valid UTF-8, or a lone CR
    /// (a carriage return not followed by a line feed; a CR at the end of a file without a final
    /// LF is one too). Parsers report it and skip the line.
    pub bad: Option<Bad>,
}

/// What is wrong with a line, and where (1-based byte column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bad {
    pub col: u64,
    pub lone_cr: bool,
    /// The line is longer than `max_line_len()`: no text value cut from it could be an Arrow
    /// string (reported at column 1, before any UTF-8 problem of the line).
    pub too_long: bool,
}

impl Bad {
    pub fn message(&self) -> &'static str {
        if self.too_long {
            TOO_LONG
        } else if self.lone_cr {
            LONE_CR
        } else {
            "invalid UTF-8"
        }
    }
}

/// The error message for a line longer than Arrow's largest string (same text in the
/// reference's `split_lines`).
pub const TOO_LONG: &str = "line longer than 2147483647 bytes, the most one Arrow text value can hold";

/// The longest line a parser sees. Every text value we keep is a piece of one line, and an Arrow
/// `string_view` (and any `string`) value holds at most `i32::MAX` bytes: a longer value would
/// be a corrupt array (consumers crash on it), so such a line is an error instead.
pub const MAX_LINE_LEN: usize = i32::MAX as usize;

static MAX_LINE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(MAX_LINE_LEN);

/// The line length limit in force (`MAX_LINE_LEN`, lowered only by tests: `set_max_line_len`).
#[inline]
pub fn max_line_len() -> usize {
    MAX_LINE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Lower the limit (tests prove the 2 GiB rule on small inputs: `_core._set_max_line_len`);
/// returns the previous one. Values above `MAX_LINE_LEN` are clamped to it.
pub fn set_max_line_len(n: usize) -> usize {
    MAX_LINE.swap(n.min(MAX_LINE_LEN), std::sync::atomic::Ordering::Relaxed)
}

/// The most lines a file may have: every `line` column (and `errors.line`) is int32 (issue 26:
/// output size), so line numbers must fit it. A file with more is refused before it is parsed
/// (`check_line_count`): never a line number that wraps.
pub const MAX_LINES: u64 = i32::MAX as u64;

static MAX_LINE_COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(MAX_LINES);

/// The line count limit in force (`MAX_LINES`, lowered only by tests: `set_max_lines`).
pub fn max_lines() -> u64 {
    MAX_LINE_COUNT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Lower the limit (tests prove the 2^31-line rule on small inputs: `_core._set_max_lines`);
/// returns the previous one. Values above `MAX_LINES` are clamped to it.
pub fn set_max_lines(n: u64) -> u64 {
    MAX_LINE_COUNT.swap(n.min(MAX_LINES), std::sync::atomic::Ordering::Relaxed)
}

/// The error message for a file of more than `max` lines (same text in the reference's
/// `check_line_count`).
pub fn too_many_lines(max: u64) -> String {
    format!("more than {max} lines: line numbers are int32 columns, which number at most {max}")
}

/// None when `data` has at most `max_lines()` lines (as `Lines` counts them); else the number
/// of the first line past the limit. Only an input longer than the limit can have more lines
/// than it (each line but a last one holds at least its LF), so inputs under 2 GiB cost nothing
/// here and larger ones one counting pass.
pub fn check_line_count(data: &[u8]) -> Option<u64> {
    line_past(data, max_lines())
}

/// `check_line_count` with an explicit limit.
fn line_past(data: &[u8], max: u64) -> Option<u64> {
    if data.len() as u64 <= max {
        return None;
    }
    // a plain byte compare in 1 MiB steps: vectorized by the compiler, and stops at the limit
    let mut lines = 0u64;
    for chunk in data.chunks(1 << 20) {
        lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if lines > max {
            return Some(max + 1);
        }
    }
    let last_open = !data.ends_with(b"\n"); // a final piece without LF is a line
    (lines + last_open as u64 > max).then_some(max + 1)
}

/// The error message for a lone CR (same text in the reference's `split_lines`).
pub const LONE_CR: &str = "lone CR (a carriage return not followed by a line feed)";

/// Iterates over the lines of an input. Lines are split at `\n`; a final piece without `\n`
/// is a line; nothing follows the final `\n`. Cloning saves a position to come back to.
#[derive(Clone)]
pub struct Lines<'a> {
    data: &'a [u8],
    pos: usize,
    no: u64,
    /// Positions of invalid UTF-8 bytes and lone CRs (sorted; true for a CR), found once up
    /// front; empty for valid LF or CRLF input.
    bad: Vec<(usize, bool)>,
    next_bad: usize,
    /// `max_line_len()` when the lines were made; `has_long_lines`: some line is longer.
    max_len: usize,
    has_long_lines: bool,
    /// Every '\n' from where the lines started (`use_newlines`), and the index of the next one
    /// not yet passed; None: each line end is searched for.
    newlines: Option<std::sync::Arc<[u32]>>,
    next_newline: usize,
}

impl<'a> Lines<'a> {
    pub fn new(data: &'a [u8]) -> Lines<'a> {
        Lines::starting_at(data, 0, 0)
    }

    /// Lines of `data[pos..]`, numbered as if `no` lines came before.
    pub fn starting_at(data: &'a [u8], pos: usize, no: u64) -> Lines<'a> {
        Lines::with_max_len(data, pos, no, max_line_len())
    }

    /// `starting_at` with an explicit line length limit.
    pub fn with_max_len(data: &'a [u8], pos: usize, no: u64, max_len: usize) -> Lines<'a> {
        let rest = &data[pos..];
        // only an input longer than the limit can hold a long line (one memchr pass then)
        let has_long_lines = rest.len() > max_len && longest_line(rest) > max_len;
        Lines { data, pos, no, bad: bad_positions(rest, pos), next_bad: 0, max_len, has_long_lines, newlines: None, next_newline: 0 }
    }

    /// Take line ends from `newlines`: the position of every '\n' of the input from the
    /// current position on, in order (`lex::classify::newlines_and_indented`, which finds them
    /// in the pass that also counts instruction lines), instead of searching for each.
    pub fn use_newlines(&mut self, newlines: Vec<u32>) {
        debug_assert!(newlines.first().is_none_or(|&p| p as usize >= self.pos));
        self.newlines = Some(newlines.into());
        self.next_newline = 0;
    }

    /// True when some line of the input is not valid UTF-8, holds a lone CR or is too long.
    pub fn has_bad_lines(&self) -> bool {
        !self.bad.is_empty() || self.has_long_lines
    }

    /// Byte offset where the next line starts.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<Line<'a>> {
        if self.pos >= self.data.len() {
            return None;
        }
        let start = self.pos;
        let newline = match &self.newlines {
            Some(ends) => {
                // (skipping any a caller passed by position: none of the parsers does)
                while ends.get(self.next_newline).is_some_and(|&e| (e as usize) < start) {
                    self.next_newline += 1;
                }
                let e = ends.get(self.next_newline).map(|&e| e as usize);
                self.next_newline += 1;
                e.map(|e| e - start)
            }
            None => find_newline(&self.data[start..]),
        };
        let end = match newline {
            Some(i) => {
                self.pos = start + i + 1;
                start + i
            }
            None => {
                self.pos = self.data.len();
                self.data.len()
            }
        };
        let mut text = &self.data[start..end];
        if let [head @ .., b'\r'] = text {
            text = head;
        }
        self.no += 1;
        if self.no % 4096 == 0 {
            crate::runtime::check(); // a read asked to stop (Ctrl-C, memory) stops here
        }
        let mut bad = None;
        if self.has_long_lines && text.len() > self.max_len {
            bad = Some(Bad { col: 1, lone_cr: false, too_long: true });
        }
        while self.next_bad < self.bad.len() && self.bad[self.next_bad].0 < end {
            let (b, lone_cr) = self.bad[self.next_bad];
            if b >= start && bad.is_none() {
                bad = Some(Bad { col: (b - start + 1) as u64, lone_cr, too_long: false });
            }
            self.next_bad += 1;
        }
        Some(Line { no: self.no, start, text, bad })
    }
}

/// First '\n' in `s`. Why not `memchr` alone: lines are ~100 bytes, where the call and setup of
/// `memchr` cost more than the search; an inline SSE2 loop looks at the first 256 bytes and
/// `memchr` (AVX2) takes over for longer lines.
#[inline(always)]
fn find_newline(s: &[u8]) -> Option<usize> {
    let near = s.len().min(256);
    if let Some(p) = crate::lex::classify::find2(b'\n', b'\n', &s[..near]) {
        return Some(p);
    }
    memchr(b'\n', &s[near..]).map(|p| p + near)
}

/// The length of the longest line of `data` (without its LF; a CR before it counts).
fn longest_line(data: &[u8]) -> usize {
    let mut longest = 0;
    let mut start = 0;
    for p in memchr::memchr_iter(b'\n', data) {
        longest = longest.max(p - start);
        start = p + 1;
    }
    longest.max(data.len() - start)
}

/// Positions (offset by `base`) of every byte where a UTF-8 decoding error starts, and of every
/// lone CR (true), sorted. The common case — valid LF input — costs one fast validation pass and
/// one `memchr` pass, and allocates nothing.
fn bad_positions(data: &[u8], base: usize) -> Vec<(usize, bool)> {
    let mut out: Vec<(usize, bool)> = invalid_utf8_positions(data, base).into_iter().map(|p| (p, false)).collect();
    let before = out.len();
    for p in memchr::memchr_iter(b'\r', data) {
        if data.get(p + 1) != Some(&b'\n') {
            out.push((base + p, true));
        }
    }
    if before > 0 && out.len() > before {
        out.sort_unstable();
    }
    out
}

fn invalid_utf8_positions(data: &[u8], base: usize) -> Vec<usize> {
    // in steps, so that a read asked to stop does not first validate gigabytes
    const STEP: usize = 16 << 20;
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        crate::runtime::check();
        let end = (at + STEP).min(data.len());
        // (dumps are nearly all ASCII, which this checks faster than UTF-8 validation does)
        if data[at..end].is_ascii() {
            at = end;
            continue;
        }
        match std::str::from_utf8(&data[at..end]) {
            Ok(_) => at = end,
            Err(e) => {
                let bad = at + e.valid_up_to();
                if e.error_len().is_none() && end < data.len() {
                    at = bad; // a character cut by the step's end: the next step starts with it
                    continue;
                }
                out.push(base + bad);
                at = bad + e.error_len().unwrap_or(data.len() - bad).max(1);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_count_limit_counts_lines_as_lines_does() {
        for data in [&b""[..], b"\n", b"a", b"a\nb", b"a\nb\n", b"\n\n\n", b"ab\r\ncd\r\n", b"abcdef"] {
            let n = Lines::new(data).count() as u64;
            for max in 0..6u64 {
                assert_eq!(line_past(data, max), (n > max).then_some(max + 1), "{data:?} max {max}");
            }
        }
        // more than one counting step
        let big = b"x\n".repeat(1 << 20);
        assert_eq!(line_past(&big, (1 << 20) - 1), Some(1 << 20));
        assert_eq!(line_past(&big, 1 << 20), None);
        assert_eq!(set_max_lines(u64::MAX), MAX_LINES); // clamped
        assert_eq!(max_lines(), MAX_LINES);
    }

    #[test]
    fn finds_newlines_near_and_far() {
        for len in [0usize, 1, 15, 16, 17, 255, 256, 257, 300, 1000] {
            for at in (0..len).step_by(7).chain([len.saturating_sub(1)]) {
                let mut s = vec![b'x'; len];
                if len > 0 {
                    s[at] = b'\n';
                }
                let want = s.iter().position(|&b| b == b'\n');
                assert_eq!(find_newline(&s), want, "len {len} at {at}");
            }
        }
    }

    #[test]
    fn splits_lf_crlf_and_last_line() {
        let l: Vec<_> = Lines::new(b"a\r\nbb\n\nc").map(|l| (l.no, l.start, l.text)).collect();
        assert_eq!(l, vec![(1, 0, &b"a"[..]), (2, 3, &b"bb"[..]), (3, 6, &b""[..]), (4, 7, &b"c"[..])]);
        assert_eq!(Lines::new(b"x\n").count(), 1);
        assert_eq!(Lines::new(b"").count(), 0);
    }

    #[test]
    fn reports_first_bad_byte_per_line() {
        let l: Vec<_> = Lines::new(b"ok\nab\xffc\xfe\nfine\n").map(|l| l.bad.map(|b| b.col)).collect();
        assert_eq!(l, vec![None, Some(3), None]);
    }

    /// A line over the limit is bad at column 1 (before its UTF-8 problems), shorter ones are
    /// not; the limit is `i32::MAX` bytes in a read (`MAX_LINE_LEN`), small here.
    #[test]
    fn reports_lines_longer_than_the_limit() {
        let bad = |d: &[u8], max: usize| {
            Lines::with_max_len(d, 0, 0, max).map(|l| l.bad.map(|b| (b.col, b.too_long))).collect::<Vec<_>>()
        };
        assert_eq!(bad(b"12345\n123456\n\n12\xff456", 5), vec![None, Some((1, true)), None, Some((1, true))]);
        assert_eq!(bad(b"12345\r\n", 5), vec![None], "a CR LF line end is not part of the line");
        assert_eq!(bad(b"12345", 5), vec![None]);
        assert!(Lines::with_max_len(b"123456", 0, 0, 5).has_bad_lines());
        assert!(!Lines::with_max_len(b"12345\n12345", 0, 0, 5).has_bad_lines());
        assert_eq!(MAX_LINE_LEN, i32::MAX as usize);
        assert_eq!(Bad { col: 1, lone_cr: false, too_long: true }.message(), TOO_LONG);
    }

    #[test]
    fn reports_lone_cr() {
        let bad = |d: &[u8]| Lines::new(d).map(|l| l.bad.map(|b| (b.col, b.lone_cr))).collect::<Vec<_>>();
        assert_eq!(bad(b"a\r\nb\rc\n\xff\rd\r\nx\r"), vec![None, Some((2, true)), Some((1, false)), Some((2, true))]);
        assert_eq!(bad(b"HloModule m\r\rENTRY e {\r}\r"), vec![Some((12, true))]);
        assert!(!Lines::new(b"a\r\nb\r\n").has_bad_lines());
        assert!(Lines::new(b"a\rb").has_bad_lines());
    }
}
