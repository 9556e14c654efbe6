//! The HLO text rules XLA's parser enforces that no single field shows (issue 50): what the
//! module parser (`module/emit.rs`) checks on every instruction it reads, mirrored by
//! `reference/hlo/rules.py`.
//!
//! * **opcodes** XLA knows (`HloOpcode`, spelled as printed, and the async forms
//!   `<opcode>-start` / `-update` / `-done` of its parser's `ParseOpcode`); another opcode is
//!   a newer XLA's: its row is kept and it gives a `notes` row (strict: an error);
//! * **shapes**: `TYPE[dims]{layout}`, tuples `( … )`, buffers `b( … )` — a dimension is a
//!   number, `<=N` or `?` (`f32[3,]` is an error, as `expects integer` in XLA's parser); an
//!   element type is `[a-z][a-z0-9]*` (anything else is an error), and one XLA does not know is
//!   a newer XLA's (a note, like an opcode); the minor-to-major list of a layout is numbers;
//! * **metadata keys** (`OpMetadata`'s fields as XLA prints them): another is a note;
//! * per computation, **instruction names** defined once and **operands** defined before their
//!   use (XLA's `AddInstruction` / `FindInstruction` in the computation's own scope); per
//!   module, **called computations** defined before (XLA's `ParseComputationName`).

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::OnceLock;

/// Every opcode `HloOpcodeString` prints (jaxlib 0.10.2's `HloOpcode`, 133 of them), plus
/// `tuple-select` (removed in 2022; older dumps print it).
const OPCODES: &[&[u8]] = &[
    b"abs", b"acos", b"acosh", b"add", b"add-dependency", b"after-all", b"all-gather", b"all-gather-done",
    b"all-gather-start", b"all-reduce", b"all-reduce-done", b"all-reduce-start", b"all-to-all", b"and", b"asin",
    b"asinh", b"async-done", b"async-start", b"async-update", b"atan2", b"atanh", b"batch-norm-grad",
    b"batch-norm-inference", b"batch-norm-training", b"bitcast", b"bitcast-convert", b"broadcast", b"call", b"cbrt",
    b"ceil", b"cholesky", b"clamp", b"collective-broadcast", b"collective-permute", b"collective-permute-done",
    b"collective-permute-start", b"compare", b"complex", b"concatenate", b"conditional", b"constant", b"convert",
    b"convolution", b"copy", b"copy-done", b"copy-start", b"cosh", b"cosine", b"count-leading-zeros", b"custom-call",
    b"divide", b"domain", b"dot", b"dynamic-reshape", b"dynamic-slice", b"dynamic-update-slice", b"erf",
    b"exponential", b"exponential-minus-one", b"fft", b"floor", b"fusion", b"gather", b"get-dimension-size",
    b"get-tuple-element", b"imag", b"infeed", b"iota", b"is-finite", b"log", b"log-plus-one", b"logistic", b"map",
    b"maximum", b"minimum", b"mulhi", b"multiply", b"negate", b"not", b"opt-barrier", b"or", b"outfeed", b"pad",
    b"parameter", b"partition-id", b"popcnt", b"power", b"ragged-all-to-all", b"ragged-dot", b"real", b"recv",
    b"recv-done", b"reduce", b"reduce-precision", b"reduce-scatter", b"reduce-window", b"remainder", b"replica-id",
    b"reshape", b"reverse", b"rng", b"rng-bit-generator", b"rng-get-and-update-state", b"round-nearest-afz",
    b"round-nearest-even", b"rsqrt", b"scaled-dot", b"scan", b"scatter", b"select", b"select-and-scatter", b"send",
    b"send-done", b"set-dimension-size", b"shift-left", b"shift-right-arithmetic", b"shift-right-logical", b"sign",
    b"sine", b"sinh", b"slice", b"sort", b"sqrt", b"stochastic-convert", b"subtract", b"tan", b"tanh", b"topk",
    b"transpose", b"triangular-solve", b"tuple", b"tuple-select", b"while", b"xor",
];

/// Element types XLA's lexer reads (`primitive_util::IsPrimitiveTypeName`, as printed).
const ELEMENT_TYPES: &[&[u8]] = &[
    b"pred", b"s1", b"s2", b"s4", b"s8", b"s16", b"s32", b"s64", b"u1", b"u2", b"u4", b"u8", b"u16", b"u32", b"u64",
    b"f16", b"bf16", b"f32", b"f64", b"c64", b"c128", b"f8e5m2", b"f8e4m3", b"f8e4m3fn", b"f8e4m3b11fnuz",
    b"f8e5m2fnuz", b"f8e4m3fnuz", b"f8e3m4", b"f4e2m1fn", b"f8e8m0fnu", b"token", b"opaque",
];

/// The metadata keys XLA's parser allows (`ParseMetadata`, listed in its own error message),
/// and `preserve_layout`, which XLA printed in 2022–2023.
const METADATA_KEYS: &[&[u8]] = &[
    b"deduplicated_name", b"metadata_payload", b"op_name", b"op_type", b"profile_type", b"scheduling_name",
    b"source_column", b"source_end_column", b"source_end_line", b"source_file", b"source_line", b"stack_frame_id",
    b"preserve_layout",
];

/// `OPCODES` as a set (asked once per instruction: one hash, not a scan of 134 names).
fn opcode_set() -> &'static HashSet<&'static [u8], BuildHasherDefault<NameHasher>> {
    static SET: OnceLock<HashSet<&'static [u8], BuildHasherDefault<NameHasher>>> = OnceLock::new();
    SET.get_or_init(|| OPCODES.iter().copied().collect())
}

/// An opcode XLA knows, or an async form of one (`custom-call-start`: `ParseOpcode`).
#[inline]
pub fn known_opcode(op: &[u8]) -> bool {
    let set = opcode_set();
    if set.contains(op) {
        return true;
    }
    for suffix in [&b"-start"[..], b"-update", b"-done"] {
        if let Some(wrapped) = op.strip_suffix(suffix) {
            return set.contains(wrapped);
        }
    }
    false
}

#[inline]
pub fn known_element_type(t: &[u8]) -> bool {
    // the common ones first, without a scan
    matches!(t, b"f32" | b"s32" | b"bf16" | b"pred" | b"u32" | b"f16" | b"s64" | b"u8" | b"s8") || ELEMENT_TYPES.contains(&t)
}

#[inline]
pub fn known_metadata_key(k: &[u8]) -> bool {
    METADATA_KEYS.contains(&k)
}

/// What a shape holds besides its structure: the first element type XLA does not know
/// (start, end in the shape), for a note.
pub type UnknownType = Option<(usize, usize)>;

/// Check the result shape `s` (`TYPE[dims]{layout}`, tuple, `b( … )`; blanks and `/* … */`
/// comments between tokens, as the general grammar lets them in): Ok with the first unknown
/// element type, or Err(position in `s`, message).
pub fn check_shape(s: &[u8]) -> Result<UnknownType, (usize, String)> {
    let mut unknown: UnknownType = None;
    let i = shape_at(s, skip(s, 0), &mut unknown, 0)?;
    let i = skip(s, i);
    if i < s.len() {
        return Err((i, format!("malformed shape: unexpected {} after the shape", what(s, i))));
    }
    Ok(unknown)
}

/// Past blanks and complete `/* … */` comments (the tape and the general grammar have checked
/// that comments close).
fn skip(s: &[u8], mut i: usize) -> usize {
    loop {
        while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        if s[i..].starts_with(b"/*") {
            match memchr::memmem::find(&s[i + 2..], b"*/") {
                Some(p) => i = i + 2 + p + 2,
                None => return s.len(),
            }
        } else {
            return i;
        }
    }
}

fn what(s: &[u8], i: usize) -> String {
    match s.get(i) {
        None => "the end of the shape".into(),
        Some(&b) if (0x21..0x7f).contains(&b) => format!("'{}'", b as char),
        Some(&b) => format!("byte 0x{b:02x}"),
    }
}

fn expected(s: &[u8], i: usize, what_: &str) -> (usize, String) {
    (i, format!("malformed shape: expected {what_}, found {}", what(s, i)))
}

fn digits_end(s: &[u8], i: usize) -> usize {
    i + s[i..].iter().take_while(|b| b.is_ascii_digit()).count()
}

/// Tuples and buffers nested deeper are an error (the walk recurses on them; no input's
/// structure may exhaust the stack: 200,000 nested `(` are just text).
pub const MAX_NESTING: usize = 100;

/// One shape at `s[i]` (not a blank), `depth` tuples or buffers deep: its end.
fn shape_at(s: &[u8], i: usize, unknown: &mut UnknownType, depth: usize) -> Result<usize, (usize, String)> {
    if depth >= MAX_NESTING {
        return Err((i, format!("malformed shape: tuples nested more than {MAX_NESTING} deep")));
    }
    if s.get(i) == Some(&b'(') {
        // a tuple: `()` or shapes separated by ','
        let mut k = skip(s, i + 1);
        if s.get(k) == Some(&b')') {
            return Ok(k + 1);
        }
        loop {
            k = skip(s, shape_at(s, k, unknown, depth + 1)?);
            match s.get(k) {
                Some(b',') => k = skip(s, k + 1),
                Some(b')') => return Ok(k + 1),
                _ => return Err(expected(s, k, "',' or ')' in a tuple shape")),
            }
        }
    }
    let te = i + s[i..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
    if &s[i..te] == b"b" && s.get(te) == Some(&b'(') {
        let k = skip(s, shape_at(s, skip(s, te + 1), unknown, depth + 1)?);
        return if s.get(k) == Some(&b')') { Ok(k + 1) } else { Err(expected(s, k, "')' after a buffer's shape")) };
    }
    let ty = &s[i..te];
    if ty.is_empty() {
        return Err(expected(s, i, "an element type"));
    }
    if !(ty[0].is_ascii_lowercase() && ty.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())) {
        return Err((i, format!("malformed shape: '{}' is not an element type ([a-z][a-z0-9]*)", String::from_utf8_lossy(ty))));
    }
    if unknown.is_none() && !known_element_type(ty) {
        *unknown = Some((i, te));
    }
    let mut k = skip(s, te);
    if s.get(k) != Some(&b'[') {
        return Err(expected(s, k, "'[' after the element type"));
    }
    // dimensions: none, or DIM {',' DIM}; DIM is N, <=N or ?
    k = skip(s, k + 1);
    if s.get(k) == Some(&b']') {
        k += 1;
    } else {
        loop {
            if s.get(k) == Some(&b'?') {
                k += 1;
            } else {
                if s[k..].starts_with(b"<=") {
                    k = skip(s, k + 2);
                }
                let e = digits_end(s, k);
                if e == k {
                    return Err(expected(s, k, "a dimension size (N, <=N or ?)"));
                }
                k = e;
            }
            k = skip(s, k);
            match s.get(k) {
                Some(b',') => k = skip(s, k + 1),
                Some(b']') => {
                    k += 1;
                    break;
                }
                _ => return Err(expected(s, k, "',' or ']' after a dimension size")),
            }
        }
    }
    // the layout: `{` minor-to-major numbers [`:` items] `}` (items: balanced brackets)
    let l = skip(s, k);
    if s.get(l) != Some(&b'{') {
        return Ok(k);
    }
    k = skip(s, l + 1);
    if !matches!(s.get(k), Some(b'}' | b':')) {
        loop {
            let e = digits_end(s, k);
            if e == k {
                return Err(expected(s, k, "a dimension number in the layout"));
            }
            k = skip(s, e);
            match s.get(k) {
                Some(b',') => k = skip(s, k + 1),
                Some(b'}' | b':') => break,
                _ => return Err(expected(s, k, "',', ':' or '}' in the layout")),
            }
        }
    }
    // the items after ':' up to the matching '}'
    let mut depth = 0usize;
    loop {
        match s.get(k) {
            None => return Err(expected(s, k, "'}' to end the layout")),
            Some(b'(' | b'[' | b'{') => depth += 1,
            Some(b')' | b']') => depth = depth.checked_sub(1).ok_or_else(|| expected(s, k, "'}' to end the layout"))?,
            Some(b'}') => {
                if depth == 0 {
                    return Ok(k + 1);
                }
                depth -= 1;
            }
            Some(b'/') if s[k..].starts_with(b"/*") => {
                k = skip(s, k);
                continue;
            }
            _ => {}
        }
        k += 1;
    }
}

/// A fast hasher for names (FxHash's rule, 8 bytes at a time): the per-computation sets are hit
/// once per instruction and operand.
#[derive(Default, Clone, Copy)]
pub struct NameHasher(u64);

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            h = (h.rotate_left(5) ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(K);
        }
        self.0 = h;
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    /// A final avalanche (MurmurHash3's `fmix64`): the word rule mixes only upwards, and the
    /// maps index their buckets by the low bits — names that differ in a middle word
    /// (`fused_computation.12.clone.r1`) would otherwise share buckets.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A name (a slice of the input, or owned where the text was joined) with its hash, computed
/// once. Why: growing a map rehashes every key, and a key's bytes lie scattered over the mapped
/// input (a cache miss each) — the module's computation names cost more in rehashing than in
/// inserting. The map hashes the stored hash only.
#[derive(Clone, Debug)]
pub struct HashedName<'c> {
    hash: u64,
    name: Cow<'c, [u8]>,
}

/// A name to look up: its bytes (any lifetime) and their hash.
pub struct NameRef<'a> {
    hash: u64,
    name: &'a [u8],
}

/// The hash of a name (`NameHasher`'s rule).
#[inline]
pub fn name_hash(name: &[u8]) -> u64 {
    let mut h = NameHasher::default();
    h.write(name);
    h.finish()
}

impl<'c> HashedName<'c> {
    #[inline]
    pub fn new(name: Cow<'c, [u8]>) -> Self {
        HashedName { hash: name_hash(&name), name }
    }
}

impl<'a> NameRef<'a> {
    #[inline]
    pub fn new(name: &'a [u8]) -> Self {
        NameRef { hash: name_hash(name), name }
    }
}

impl Hash for HashedName<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

impl Hash for NameRef<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

impl PartialEq for HashedName<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.name == other.name
    }
}

impl Eq for HashedName<'_> {}

impl<'c> hashbrown::Equivalent<HashedName<'c>> for NameRef<'_> {
    #[inline]
    fn equivalent(&self, key: &HashedName<'c>) -> bool {
        self.hash == key.hash && self.name == &key.name[..]
    }
}

/// Hashes a stored hash (one word): the final mix only.
#[derive(Default, Clone, Copy)]
pub struct StoredHash(u64);

impl Hasher for StoredHash {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // (only `write_u64` is called: `HashedName` and `NameRef` hash one word)
        let mut b = [0u8; 8];
        let n = bytes.len().min(8);
        b[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(b);
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Names to a value (a line number), hashed once.
pub type NameMap<'c, V = u64> = hashbrown::HashMap<HashedName<'c>, V, BuildHasherDefault<StoredHash>>;

/// Shapes (slices of the input) checked and found good: `check_shape` is skipped for them.
#[derive(Default)]
pub struct ShapeCache<'c> {
    seen: NameMap<'c, ()>,
}

impl<'c> ShapeCache<'c> {
    /// Past this many distinct shapes the cache starts again (a file of generated shapes).
    const MAX: usize = 1 << 16;

    /// Whether `shape` was checked and found good before.
    #[inline]
    pub fn contains(&self, shape: &[u8]) -> bool {
        self.seen.contains_key(&NameRef::new(shape))
    }

    /// `shape` (a slice of the input) is good.
    #[inline]
    pub fn insert(&mut self, shape: &'c [u8]) {
        if self.seen.len() >= Self::MAX {
            self.seen.clear();
        }
        self.seen.insert(HashedName::new(Cow::Borrowed(shape)), ());
    }
}

/// The instruction names of the open computation, each to its line, kept in one map for every
/// computation of the input: each entry carries the scope (computation) that defined it, and
/// opening a computation only starts a new scope. Why: a map per computation is cleared (a pass
/// over its capacity) or re-grown (a rehash of every name) for each of the thousands of
/// computations of a module (most of them fusions of a few instructions, each growing its map
/// from nothing: four reallocations for ten names) — that was a tenth of a full read. An entry
/// of an older scope is simply overwritten. XLA's names are unique in a module, so the map
/// fills up across computations: past `MAX_KEPT` names it is emptied, keeping its capacity (no
/// regrowth), so that it stays small enough for the cache (one map of every name of a 100 MB
/// module was slower than a fresh map per computation).
#[derive(Default)]
pub struct ScopedNames<'c> {
    map: NameMap<'c, (u64, u32)>,
    scope: u32,
}

impl<'c> ScopedNames<'c> {
    /// Past this many names (about 160 KiB of map: the L2 cache), a new scope also empties
    /// the map (measured: 16 Ki names spent a quarter of the rules' time on cache misses).
    const MAX_KEPT: usize = 1 << 12;

    /// A computation opens: no name is defined in it yet.
    pub fn open_scope(&mut self) {
        if self.map.len() > Self::MAX_KEPT || self.scope == u32::MAX {
            self.map.clear();
            // (a huge computation grew it: back to a size the cache holds)
            self.map.shrink_to(2 * Self::MAX_KEPT);
            self.scope = 0;
        }
        self.scope += 1;
    }

    /// Whether `name` is defined in the open scope.
    #[inline]
    pub fn contains(&self, name: &[u8]) -> bool {
        self.map.get(&NameRef::new(name)).is_some_and(|&(_, scope)| scope == self.scope)
    }

    /// Define `name` at `line` in the open scope: `Err(first line)` when it already is.
    #[inline]
    pub fn define(&mut self, name: Cow<'c, [u8]>, line: u64) -> Result<(), u64> {
        use hashbrown::hash_map::Entry;
        match self.map.entry(HashedName::new(name)) {
            Entry::Vacant(v) => {
                v.insert((line, self.scope));
                Ok(())
            }
            Entry::Occupied(mut e) => {
                let (first, scope) = *e.get();
                if scope == self.scope {
                    return Err(first);
                }
                e.insert((line, self.scope));
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let ok = |s: &[u8]| check_shape(s).unwrap_or_else(|e| panic!("{}: {e:?}", String::from_utf8_lossy(s)));
        for s in [
            &b"f32[]"[..],
            b"f32[3]{0}",
            b"bf16[8,2048,128]{2,1,0:T(8,128)(2,1)S(1)}",
            b"f32[]{:T(128)}",
            b"(f32[8,2048]{1,0:T(8,128)S(1)}, f32[8,2048,2048]{1,2,0:T(8,128)})",
            b"s32[<=16,?]",
            b"()",
            b"(s32[], /*index=5*/u32[])",
            b"b(f32[2]{0})",
            b"token[]",
            b"f32[2] {0}",
            b"f32[3]{0:D(D,C)#(s32)*(s32)E(4)P(f32[2]{0})}",
        ] {
            assert_eq!(ok(s), None);
        }
        assert_eq!(ok(b"(f32[], f99[2])"), Some((8, 11)));
        let err = |s: &[u8]| check_shape(s).unwrap_err();
        assert_eq!(err(b"f32[3,]").0, 6);
        assert_eq!(err(b"f32[,3]").0, 4);
        assert_eq!(err(b"f32[-3]").0, 4);
        assert_eq!(err(b"f32[3]{0,}").0, 9);
        assert_eq!(err(b"f32[3]{0}{0}").0, 9);
        assert_eq!(err(b"F32[3]").0, 0);
        assert_eq!(err(b"(f32[],)").0, 7);
        assert_eq!(err(b"f32").0, 3);
    }

    #[test]
    fn opcodes() {
        assert!(known_opcode(b"add") && known_opcode(b"custom-call-start") && known_opcode(b"all-reduce-done"));
        assert!(!known_opcode(b"frobnicate") && !known_opcode(b"frob-start"));
    }
}
