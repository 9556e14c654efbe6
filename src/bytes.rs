//! Byte-string helpers with no dependencies, for every layer (the column builders and the
//! lexers alike).

/// `a == b` without a `memcmp` call: the strings compared here are short (opcodes, shapes,
/// op names, shape indices, the literals of `Cur::accept`), where the call costs more than the
/// compare.
#[inline(always)]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let rd8 = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            if rd8(a, at) != rd8(b, at) {
                return false;
            }
            at += 8;
        }
        rd8(a, n - 8) == rd8(b, n - 8)
    } else if n >= 4 {
        let rd4 = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
        rd4(a, 0) == rd4(b, 0) && rd4(a, n - 4) == rd4(b, n - 4)
    } else {
        // 0..=3 bytes: positions 0, n/2 and n-1 cover them all. No memcmp call: glibc's AVX-512
        // memcmp (a masked 32-byte load) took 28% of a buffer-assignment profile when the shape
        // indices ("", "{}") of every position and use went through it.
        n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_slice_equality() {
        let text = b"abcdefghijklmnopqrstuvwxyzabcdefghijklmnop";
        for n in 0..30 {
            for m in 0..30 {
                for k in 0..4 {
                    let (a, b) = (&text[k..k + n], &text[..m]);
                    assert_eq!(same_bytes(a, b), a == b, "{n} {m} {k}");
                }
            }
        }
        let mut x = text.to_vec();
        for at in 0..x.len() {
            x[at] ^= 1;
            assert!(!same_bytes(&x, text), "{at}");
            x[at] ^= 1;
        }
    }
}
