//! Small byte-level scanning helpers shared by the format parsers. All work on `&[u8]` (no UTF-8
//! re-validation: inputs are validated once) and never allocate.

/// An unsigned decimal number made only of ASCII digits (no sign, no spaces), or None.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return if s.len() == 20 { s.iter().try_fold(0u64, |acc, &b| digit(b).and_then(|d| acc.checked_mul(10)?.checked_add(d))) } else { None };
    }
    let mut n = 0u64;
    for &b in s {
        n = n * 10 + digit(b)?;
    }
    Some(n)
}

#[inline]
fn digit(b: u8) -> Option<u64> {
    if b.is_ascii_digit() {
        Some((b - b'0') as u64)
    } else {
        None
    }
}

/// A decimal number that fits i64 (optional leading '-').
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s {
        [b'-', rest @ ..] => parse_u64(rest).and_then(|n| if n <= i64::MAX as u64 + 1 { Some((n as i128).wrapping_neg() as i64) } else { None }),
        _ => parse_u64(s).and_then(|n| i64::try_from(n).ok()),
    }
}

/// A non-negative number that fits i64.
#[inline]
pub fn parse_nonneg(s: &[u8]) -> Option<i64> {
    parse_u64(s).and_then(|n| i64::try_from(n).ok())
}

/// A number whose digits may be grouped in threes with single spaces: `97 587 208`.
pub fn parse_grouped(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s[0] == b' ' || s[s.len() - 1] == b' ' {
        return None;
    }
    let mut n: i64 = 0;
    let mut prev_space = false;
    for &b in s {
        if b == b' ' {
            if prev_space {
                return None;
            }
            prev_space = true;
            continue;
        }
        prev_space = false;
        n = n.checked_mul(10)?.checked_add(digit(b)? as i64)?;
    }
    Some(n)
}

/// XLA's human-readable byte count (`576B`, `51.1KiB`, `4.00MiB`, `-1.5GiB`) in bytes:
/// `round_half_up(decimal × 1024^k)`, computed exactly on the digits.
pub fn human_bytes(s: &[u8]) -> Option<i64> {
    let (neg, s) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let unit_at = s.iter().position(|b| b.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(unit_at);
    let shift: u32 = match unit {
        b"B" => 0,
        b"KiB" => 10,
        b"MiB" => 20,
        b"GiB" => 30,
        b"TiB" => 40,
        b"PiB" => 50,
        b"EiB" => 60,
        _ => return None,
    };
    let (int, frac) = match num.iter().position(|&b| b == b'.') {
        Some(p) => (&num[..p], &num[p + 1..]),
        None => (num, &b""[..]),
    };
    if int.is_empty() || frac.len() > 18 || (num.len() > int.len() && frac.is_empty()) {
        return None;
    }
    let int = parse_u64(int)? as i128;
    let frac_v = if frac.is_empty() { 0 } else { parse_u64(frac)? as i128 };
    let den = 10i128.pow(frac.len() as u32);
    let scaled = (int * den + frac_v) << shift; // decimal × 1024^k × den
    let v = (scaled * 2 + den) / (2 * den); // round half up
    let v = i64::try_from(v).ok()?;
    Some(if neg { -v } else { v })
}

/// Haystacks shorter than this are searched with `memchr` on the needle's first byte plus a
/// compare: `memmem::find` builds a searcher (rare-byte ranking, prefilter) on every call, which
/// costs more than the whole search on a typical 20–200-byte dump line (profiled: 9% of the
/// buffer-assignment parser's time was `memmem::find`, part of it `FinderBuilder`).
const SHORT_HAY: usize = 256;

/// Index of the first occurrence of `needle` in `hay` at or after `from`.
#[inline]
pub fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    let h = &hay[from..];
    match needle {
        [] => Some(from),
        [b] => memchr::memchr(*b, h).map(|i| i + from),
        [first, rest @ ..] if h.len() < SHORT_HAY => {
            let mut at = 0;
            while at + needle.len() <= h.len() {
                let i = at + memchr::memchr(*first, &h[at..=h.len() - needle.len()])?;
                if &h[i + 1..i + needle.len()] == rest {
                    return Some(i + from);
                }
                at = i + 1;
            }
            None
        }
        _ => memchr::memmem::find(h, needle).map(|i| i + from),
    }
}

/// Index of the last occurrence of `needle` in `hay`.
#[inline]
pub fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [] => Some(hay.len()),
        [b] => memchr::memrchr(*b, hay),
        [first, rest @ ..] if hay.len() < SHORT_HAY => {
            let mut end = hay.len().checked_sub(needle.len())? + 1; // candidates are < end
            while end > 0 {
                let i = memchr::memrchr(*first, &hay[..end])?;
                if &hay[i + 1..i + needle.len()] == rest {
                    return Some(i);
                }
                end = i;
            }
            None
        }
        _ => memchr::memmem::rfind(hay, needle),
    }
}

/// Split `s` at the first occurrence of `sep`.
#[inline]
pub fn split_once<'a>(s: &'a [u8], sep: &[u8]) -> Option<(&'a [u8], &'a [u8])> {
    find(s, sep, 0).map(|i| (&s[..i], &s[i + sep.len()..]))
}

/// Column (1-based) of `part` within `line`, when `part` is a sub-slice of it.
#[inline]
pub fn column_of(line: &[u8], part: &[u8]) -> u64 {
    let off = (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
    (off.min(line.len()) + 1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_round_half_up() {
        assert_eq!(human_bytes(b"576B"), Some(576));
        assert_eq!(human_bytes(b"51.1KiB"), Some(52326)); // 52326.4
        assert_eq!(human_bytes(b"4.00MiB"), Some(4 << 20));
        assert_eq!(human_bytes(b"220.17MiB"), Some(230864978)); // 230864977.92
        assert_eq!(human_bytes(b"1.5KiB"), Some(1536));
        assert_eq!(human_bytes(b"0.5B"), Some(1)); // half rounds up
        assert_eq!(human_bytes(b"-12B"), Some(-12));
        assert_eq!(human_bytes(b"12"), None);
        assert_eq!(human_bytes(b"1.KiB"), None);
        assert_eq!(human_bytes(b"1.0XiB"), None);
    }

    #[test]
    fn grouped_digits() {
        assert_eq!(parse_grouped(b"97 587 208"), Some(97587208));
        assert_eq!(parse_grouped(b"97587208"), Some(97587208));
        assert_eq!(parse_grouped(b"97  587"), None);
        assert_eq!(parse_grouped(b""), None);
    }

    #[test]
    fn find_agrees_with_memmem() {
        let hays: [&[u8]; 6] = [b"", b"a", b"abcabcab", b" value: <12 foo.1 @0> (size=4,offset=0): f32[]", b"aaaa", b"xx, operand 1, operand 2"];
        let needles: [&[u8]; 7] = [b"", b"a", b"ab", b"abc", b", operand ", b"aaaaa", b"): "];
        for h in hays {
            for n in needles {
                for from in 0..=h.len() {
                    assert_eq!(find(h, n, from), memchr::memmem::find(&h[from..], n).map(|i| i + from), "{h:?} {n:?} {from}");
                }
                assert_eq!(rfind(h, n), memchr::memmem::rfind(h, n), "{h:?} {n:?}");
            }
        }
        let long = [b'x'; 1000];
        assert_eq!(find(&long, b"xy", 0), None);
        assert_eq!(rfind(&long, b"xx"), Some(998));
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_u64(b"1a"), None);
    }
}
