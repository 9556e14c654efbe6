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
}

impl Bad {
    pub fn message(&self) -> &'static str {
        if self.lone_cr {
            LONE_CR
        } else {
            "invalid UTF-8"
        }
    }
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
}

impl<'a> Lines<'a> {
    pub fn new(data: &'a [u8]) -> Lines<'a> {
        Lines::starting_at(data, 0, 0)
    }

    /// Lines of `data[pos..]`, numbered as if `no` lines came before.
    pub fn starting_at(data: &'a [u8], pos: usize, no: u64) -> Lines<'a> {
        Lines { data, pos, no, bad: bad_positions(&data[pos..], pos), next_bad: 0 }
    }

    /// True when some line of the input is not valid UTF-8 or holds a lone CR.
    pub fn has_bad_lines(&self) -> bool {
        !self.bad.is_empty()
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
        let rest = &self.data[start..];
        let end = match find_newline(rest) {
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
        while self.next_bad < self.bad.len() && self.bad[self.next_bad].0 < end {
            let (b, lone_cr) = self.bad[self.next_bad];
            if b >= start && bad.is_none() {
                bad = Some(Bad { col: (b - start + 1) as u64, lone_cr });
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

    #[test]
    fn reports_lone_cr() {
        let bad = |d: &[u8]| Lines::new(d).map(|l| l.bad.map(|b| (b.col, b.lone_cr))).collect::<Vec<_>>();
        assert_eq!(bad(b"a\r\nb\rc\n\xff\rd\r\nx\r"), vec![None, Some((2, true)), Some((1, false)), Some((2, true))]);
        assert_eq!(bad(b"HloModule m\r\rENTRY e {\r}\r"), vec![Some((12, true))]);
        assert!(!Lines::new(b"a\r\nb\r\n").has_bad_lines());
        assert!(Lines::new(b"a\rb").has_bad_lines());
    }
}
