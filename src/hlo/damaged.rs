//! Test support: every file under tests/data, and damaged variants of a line (bytes inserted, replaced and removed around the
//! places a parser decides on), for the tests that hold a fast path to the full parse.

/// `n` variants of `t`, each with one or two random edits: an insertion of one of `inserts`,
/// a byte replaced by the first byte of one, or 1–4 bytes removed. `rng` is a xorshift state
/// (the same sequence on every run).
pub(crate) fn damaged_variants(t: &[u8], inserts: &[&[u8]], n: usize, rng: &mut u64) -> Vec<Vec<u8>> {
    let mut next = |k: usize| {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        (*rng % k as u64) as usize
    };
    (0..n)
        .map(|_| {
            let mut m = t.to_vec();
            for _ in 0..1 + next(2) {
                let at = next(m.len() + 1);
                match next(3) {
                    0 => {
                        let ins = inserts[next(inserts.len())];
                        m.splice(at..at, ins.iter().copied());
                    }
                    1 if at < m.len() => m[at] = inserts[next(inserts.len())][0],
                    _ => {
                        let e = (at + 1 + next(4)).min(m.len());
                        m.drain(at.min(e)..e);
                    }
                }
            }
            m
        })
        .collect()
}

/// Every file under tests/data (recursively).
pub(crate) fn test_data_files() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = vec![];
    walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"), &mut files);
    files
}
