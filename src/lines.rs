//! Line scanning: memchr over the whole input, slices into it, CRLF tolerated, UTF-8 checked.

use memchr::memchr;

/// One line of input, without its line terminator (and without a trailing `\r`).
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    /// 1-based line number.
    pub no: u64,
    /// Byte offset of the line's first byte in the input.
    pub start: usize,
    pub text: &'a [u8],
    /// 1-based column of the first byte that is not valid UTF-8, if any.
    pub bad_utf8: Option<u64>,
}

/// Iterates over the lines of an input. Lines are split at `\n`; a final piece without `\n`
/// is a line; nothing follows the final `\n`. Cloning saves a position to come back to.
#[derive(Clone)]
pub struct Lines<'a> {
    data: &'a [u8],
    pos: usize,
    no: u64,
    /// Positions of invalid UTF-8 bytes (sorted), found once up front; empty for valid input.
    bad: Vec<usize>,
    next_bad: usize,
}

impl<'a> Lines<'a> {
    pub fn new(data: &'a [u8]) -> Lines<'a> {
        Lines::starting_at(data, 0, 0)
    }

    /// Lines of `data[pos..]`, numbered as if `no` lines came before.
    pub fn starting_at(data: &'a [u8], pos: usize, no: u64) -> Lines<'a> {
        Lines { data, pos, no, bad: invalid_utf8_positions(&data[pos..], pos), next_bad: 0 }
    }

    /// True when some line of the input is not valid UTF-8.
    pub fn has_invalid_utf8(&self) -> bool {
        !self.bad.is_empty()
    }

    /// Byte offset where the next line starts.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    #[inline]
    fn next(&mut self) -> Option<Line<'a>> {
        if self.pos >= self.data.len() {
            return None;
        }
        let start = self.pos;
        let rest = &self.data[start..];
        let end = match memchr(b'\n', rest) {
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
        let mut bad_utf8 = None;
        while self.next_bad < self.bad.len() && self.bad[self.next_bad] < end {
            let b = self.bad[self.next_bad];
            if b >= start && bad_utf8.is_none() {
                bad_utf8 = Some((b - start + 1) as u64);
            }
            self.next_bad += 1;
        }
        Some(Line { no: self.no, start, text, bad_utf8 })
    }
}

/// Positions (offset by `base`) of every byte where a UTF-8 decoding error starts. The common
/// case — valid input — costs one fast validation pass and allocates nothing.
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
    fn splits_lf_crlf_and_last_line() {
        let l: Vec<_> = Lines::new(b"a\r\nbb\n\nc").map(|l| (l.no, l.start, l.text)).collect();
        assert_eq!(l, vec![(1, 0, &b"a"[..]), (2, 3, &b"bb"[..]), (3, 6, &b""[..]), (4, 7, &b"c"[..])]);
        assert_eq!(Lines::new(b"x\n").count(), 1);
        assert_eq!(Lines::new(b"").count(), 0);
    }

    #[test]
    fn reports_first_bad_byte_per_line() {
        let l: Vec<_> = Lines::new(b"ok\nab\xffc\xfe\nfine\n").map(|l| l.bad_utf8).collect();
        assert_eq!(l, vec![None, Some(3), None]);
    }
}
