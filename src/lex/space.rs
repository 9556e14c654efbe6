//! Python's whitespace (`str.isspace`, what `\s` and `str.strip()` mean in the reference
//! parser) over UTF-8 bytes, for every format whose grammar the reference states with them: HLO
//! text (`hlo::scan`) and the memory report's protobuf text (`memory_report::proto`).

/// Length of the whitespace character (Python `str.isspace`) starting at `s[i]`, or 0.
#[inline(always)]
pub fn ws_len(s: &[u8], i: usize) -> usize {
    let b = s[i];
    if b > b' ' && b < 0x80 {
        return 0; // printable ASCII: the common case
    }
    if b == b' ' {
        return 1;
    }
    ws_len_slow(s, i)
}

#[inline(never)]
fn ws_len_slow(s: &[u8], i: usize) -> usize {
    match s[i] {
        b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1f => 1,
        b if b < 0x80 => 0,
        0xC2 => matches!(s.get(i + 1), Some(0x85 | 0xA0)) as usize * 2,
        0xE1 => (s.get(i + 1..i + 3) == Some(&[0x9A, 0x80][..])) as usize * 3,
        0xE2 => match (s.get(i + 1), s.get(i + 2)) {
            (Some(0x80), Some(0x80..=0x8A | 0xA8 | 0xA9 | 0xAF)) | (Some(0x81), Some(0x9F)) => 3,
            _ => 0,
        },
        0xE3 => (s.get(i + 1..i + 3) == Some(&[0x80, 0x80][..])) as usize * 3,
        _ => 0,
    }
}

/// Length of the whitespace character ending at `s[..end]`, or 0.
#[inline]
fn ws_len_back(s: &[u8], end: usize) -> usize {
    let b = s[end - 1];
    if b < 0x80 {
        return ws_len(s, end - 1);
    }
    for n in [2, 3] {
        if end >= n && ws_len(s, end - n) == n {
            return n;
        }
    }
    0
}

/// `s.strip()` as a range.
#[inline]
pub fn py_strip(s: &[u8]) -> (usize, usize) {
    let mut a = 0;
    while a < s.len() {
        let n = ws_len(s, a);
        if n == 0 {
            break;
        }
        a += n;
    }
    let mut b = s.len();
    while b > a {
        let n = ws_len_back(s, b);
        if n == 0 {
            break;
        }
        b -= n;
    }
    (a, b)
}

/// Index of the first non-whitespace character at or after `i`.
#[inline]
pub fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        let n = ws_len(s, i);
        if n == 0 {
            break;
        }
        i += n;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's `str.isspace()` as the list of its code points (the naive reference).
    fn py_space(c: char) -> bool {
        matches!(c, '\t'..='\r' | '\u{1c}'..='\u{20}' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
    }

    #[test]
    fn every_code_point_is_classified_as_python_does() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let s = c.encode_utf8(&mut buf).as_bytes();
            let want = if py_space(c) { s.len() } else { 0 };
            assert_eq!(ws_len(s, 0), want, "U+{:04X}", c as u32);
            let text = [b"x", s, b"y"].concat();
            assert_eq!(ws_len_back(&text[..1 + s.len()], 1 + s.len()), want, "back U+{:04X}", c as u32);
            assert_eq!(skip_ws(&text, 1), 1 + want);
        }
        assert_eq!(py_strip(" \u{3000}a b\u{a0}\t".as_bytes()), (4, 7));
    }
}
