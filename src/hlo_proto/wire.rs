//! The protobuf wire format, decoded by a schema of our own (`schema.rs`, generated from the
//! reference's `protowire.SCHEMAS`; the reference decoder is `python/hlodump/reference/protowire.py`
//! and gives the same messages and the same errors).
//!
//! Why not prost: its decoder skips unknown fields silently (we count them, for `notes`) and
//! its errors carry no byte offset; the messages we read are a few dozen fields of XLA's
//! protos, and a small schema-driven decoder keeps both readers alike. Every length is checked
//! against the bytes left in its enclosing message before it is used, values are only ever
//! pushed as they are read (a list grows with the input, never by a stated count), and nesting
//! is bounded (`MAX_DEPTH`): a length bomb or a nesting bomb is an error, not an allocation.

pub use super::fields::{Field, Kind};
use super::schema::{MESSAGES, MESSAGE_NAMES, SKIPPED};

/// Deeper nesting than any HLO proto has (tuple shapes nest a few levels).
pub const MAX_DEPTH: usize = 100;

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// A decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    UInt(u64),
    Bool(bool),
    Str(String),
    Bytes(Vec<u8>),
    F32(f32),
    F64(f64),
    Msg(Msg),
    List(Vec<Value>),
}

/// A decoded message: its fields present, in first-seen order; `at`, the byte offset of its
/// first byte in the file (where a structure error about it points).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Msg {
    pub fields: Vec<(&'static str, Value)>,
    pub at: usize,
}

/// A damaged message: where decoding stopped (bytes from the start of the input) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub offset: usize,
    pub message: String,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

type R<T> = Result<T, WireError>;

fn err<T>(offset: usize, message: impl Into<String>) -> R<T> {
    Err(WireError { offset, message: message.into() })
}

static EMPTY_LIST: Vec<Value> = Vec::new();

impl Msg {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
    /// An integer field (0 when absent, as proto3 reads it).
    pub fn int(&self, name: &str) -> i64 {
        self.int_or(name, 0)
    }
    pub fn int_or(&self, name: &str, default: i64) -> i64 {
        match self.get(name) {
            Some(Value::Int(v)) => *v,
            Some(Value::UInt(v)) => *v as i64,
            Some(Value::Bool(b)) => *b as i64,
            _ => default,
        }
    }
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some(Value::Bool(true)))
    }
    pub fn str(&self, name: &str) -> &str {
        match self.get(name) {
            Some(Value::Str(s)) => s,
            _ => "",
        }
    }
    pub fn bytes(&self, name: &str) -> &[u8] {
        match self.get(name) {
            Some(Value::Bytes(b)) => b,
            _ => &[],
        }
    }
    pub fn msg(&self, name: &str) -> Option<&Msg> {
        match self.get(name) {
            Some(Value::Msg(m)) => Some(m),
            _ => None,
        }
    }
    pub fn list(&self, name: &str) -> &[Value] {
        match self.get(name) {
            Some(Value::List(v)) => v,
            _ => &EMPTY_LIST,
        }
    }
    pub fn msgs(&self, name: &str) -> impl Iterator<Item = &Msg> {
        self.list(name).iter().filter_map(|v| if let Value::Msg(m) = v { Some(m) } else { None })
    }
    pub fn ints(&self, name: &str) -> Vec<i64> {
        self.list(name)
            .iter()
            .map(|v| match v {
                Value::Int(i) => *i,
                Value::UInt(u) => *u as i64,
                Value::Bool(b) => *b as i64,
                _ => 0,
            })
            .collect()
    }
    pub fn bools(&self, name: &str) -> Vec<bool> {
        self.list(name).iter().map(|v| matches!(v, Value::Bool(true))).collect()
    }
    fn push(&mut self, name: &'static str, v: Value) {
        match self.fields.iter_mut().find(|(n, _)| *n == name) {
            Some((_, Value::List(l))) => l.push(v),
            _ => self.fields.push((name, Value::List(vec![v]))),
        }
    }
    fn list_mut(&mut self, name: &'static str) -> &mut Vec<Value> {
        if !self.fields.iter().any(|(n, _)| *n == name) {
            self.fields.push((name, Value::List(Vec::new())));
        }
        match self.fields.iter_mut().find(|(n, _)| *n == name) {
            Some((_, Value::List(l))) => l,
            _ => unreachable!("a repeated field holds a list"),
        }
    }
}

/// Decode `buf` as message `message` (an index into `MESSAGES`): the message and the number of
/// fields skipped (unknown to our schema) in it and its sub-messages.
pub fn decode(buf: &[u8], message: usize) -> R<(Msg, u64)> {
    let (m, unknown) = decode_listing(buf, message)?;
    Ok((m, unknown.total()))
}

/// The fields skipped as unknown (neither read nor in `schema::SKIPPED`): (message name, field
/// number) → how many times; `first_at`, the byte offset of the first one's tag.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unknown {
    pub counts: std::collections::BTreeMap<(&'static str, u64), u64>,
    pub first_at: Option<usize>,
}

impl Unknown {
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
    fn count(&mut self, message: &'static str, number: u64, tag_at: usize) {
        *self.counts.entry((message, number)).or_insert(0) += 1;
        self.first_at.get_or_insert(tag_at);
    }
}

/// `decode`, with the fields skipped listed by message and number.
pub fn decode_listing(buf: &[u8], message: usize) -> R<(Msg, Unknown)> {
    let mut unknown = Unknown::default();
    let m = decode_at(buf, message, 0, buf.len(), 0, &mut unknown)?;
    Ok((m, unknown))
}

/// The `notes` text of the skipped fields: `Message.N×count`, by message name and number, at
/// most 20 of them, then `…`.
pub fn unknown_text(u: &Unknown) -> String {
    let mut parts: Vec<String> = u.counts.iter().take(20).map(|((m, n), c)| format!("{m}.{n}×{c}")).collect();
    if u.counts.len() > 20 {
        parts.push("…".into());
    }
    parts.join(" ")
}

fn varint(buf: &[u8], mut pos: usize, end: usize) -> R<(u64, usize)> {
    let start = pos;
    let mut result: u64 = 0;
    let mut shift = 0u32;
    loop {
        if pos >= end {
            return err(start, "truncated varint");
        }
        let b = buf[pos];
        pos += 1; // < end: no overflow
        if shift == 63 && b > 1 {
            return err(start, "varint longer than 64 bits");
        }
        result |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok((result, pos));
        }
        shift += 7;
        if shift > 63 {
            return err(start, "varint longer than 10 bytes");
        }
    }
}

/// `end - pos`, the bytes left in the message (0 if `pos` is past `end`, which the decoder never
/// lets happen: checked all the same, issue 50).
fn left(pos: usize, end: usize) -> usize {
    end.saturating_sub(pos)
}

/// A length-delimited field's length at `pos`: (its first byte, the byte after it), checked
/// against the bytes left in the message before any sum is made (a 10-byte varint is up to
/// 2^64 - 1: no `p + n` may wrap).
fn length(buf: &[u8], pos: usize, end: usize) -> R<(usize, usize)> {
    let (n, p) = varint(buf, pos, end)?;
    let room = left(p, end);
    let stop = usize::try_from(n).ok().filter(|&n| n <= room).and_then(|n| p.checked_add(n));
    match stop {
        Some(stop) => Ok((p, stop)),
        None => err(pos, format!("length {n} past the end of its message ({room} bytes left)")),
    }
}

/// `pos + k` for a fixed-size field of `k` bytes, or an error when fewer are left.
fn fixed(pos: usize, end: usize, k: usize, what: &str) -> R<usize> {
    match pos.checked_add(k) {
        Some(stop) if stop <= end => Ok(stop),
        _ => err(pos, format!("truncated {what}")),
    }
}

fn scalar(kind: Kind, v: u64) -> Value {
    match kind {
        Kind::Bool => Value::Bool(v != 0),
        Kind::I64 => Value::Int(v as i64),
        Kind::I32 => Value::Int(i64::from(v as u32 as i32)),
        _ => Value::UInt(v),
    }
}

fn wire_of(kind: Kind) -> u8 {
    match kind {
        Kind::U64 | Kind::I64 | Kind::I32 | Kind::Bool => VARINT,
        Kind::Str | Kind::Name | Kind::Bytes | Kind::Msg(_) => LEN,
        Kind::F32 => I32,
        Kind::F64 => I64,
    }
}

fn decode_at(buf: &[u8], message: usize, mut pos: usize, end: usize, depth: usize, unknown: &mut Unknown) -> R<Msg> {
    if depth > MAX_DEPTH {
        return err(pos, format!("messages nested deeper than {MAX_DEPTH}"));
    }
    let schema = MESSAGES[message];
    let mname = MESSAGE_NAMES[message];
    let mut out = Msg { fields: Vec::new(), at: pos };
    while pos < end {
        let tag_at = pos;
        let (tag, p) = varint(buf, pos, end)?;
        pos = p;
        let number = tag >> 3;
        let wire = (tag & 7) as u8;
        if number == 0 {
            return err(tag_at, "field number 0");
        }
        let Some(field) = schema.iter().find(|f| u64::from(f.number) == number) else {
            pos = skip(buf, pos, end, wire, tag_at, number)?;
            if !SKIPPED[message].iter().any(|&k| u64::from(k) == number) {
                unknown.count(mname, number, tag_at);
            }
            continue;
        };
        let (name, kind) = (field.name, field.kind);
        if !field.repeated && out.has(name) {
            return err(tag_at, format!("field {number} ({mname}.{name}): a second value of a singular field"));
        }
        if let Kind::Msg(sub) = kind {
            if wire != LEN {
                return err(tag_at, format!("field {number} ({mname}.{name}): wire type {wire}, expected 2 (a message)"));
            }
            let (p, stop) = length(buf, pos, end)?;
            let value = decode_at(buf, sub, p, stop, depth + 1, unknown)?;
            pos = stop;
            if field.repeated {
                out.push(name, Value::Msg(value));
            } else {
                out.fields.push((name, Value::Msg(value)));
            }
            continue;
        }
        if field.repeated && wire == LEN && !matches!(kind, Kind::Str | Kind::Name | Kind::Bytes) {
            let (p, stop) = length(buf, pos, end)?;
            pos = p;
            let n = stop - p;
            let vals = out.list_mut(name);
            match kind {
                Kind::F32 | Kind::F64 => {
                    let size = if kind == Kind::F32 { 4 } else { 8 };
                    if n % size != 0 {
                        return err(tag_at, format!("field {number} ({mname}.{name}): packed length {n} not a multiple of {size}"));
                    }
                    for c in buf[pos..stop].chunks_exact(size) {
                        vals.push(if size == 4 {
                            Value::F32(f32::from_le_bytes(c.try_into().expect("4 bytes")))
                        } else {
                            Value::F64(f64::from_le_bytes(c.try_into().expect("8 bytes")))
                        });
                    }
                    pos = stop;
                }
                _ => {
                    while pos < stop {
                        let (v, p) = varint(buf, pos, stop)?;
                        pos = p;
                        vals.push(scalar(kind, v));
                    }
                }
            }
            continue;
        }
        if wire != wire_of(kind) {
            return err(tag_at, format!("field {number} ({mname}.{name}): wire type {wire}, expected {}", wire_of(kind)));
        }
        let value = match wire {
            VARINT => {
                let (v, p) = varint(buf, pos, end)?;
                pos = p;
                scalar(kind, v)
            }
            LEN => {
                let (p, stop) = length(buf, pos, end)?;
                let value = string(&buf[p..stop], p, kind, || format!("field {number} ({mname}.{name})"))?;
                pos = stop;
                value
            }
            I32 => {
                let stop = fixed(pos, end, 4, "fixed32")?;
                let v = f32::from_le_bytes(buf[pos..stop].try_into().expect("4 bytes"));
                pos = stop;
                Value::F32(v)
            }
            _ => {
                let stop = fixed(pos, end, 8, "fixed64")?;
                let v = f64::from_le_bytes(buf[pos..stop].try_into().expect("8 bytes"));
                pos = stop;
                Value::F64(v)
            }
        };
        if field.repeated {
            out.push(name, value);
        } else {
            out.fields.push((name, value));
        }
    }
    Ok(out)
}

/// A name's bytes (`Kind::Name`): what the HLO text prints bare.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// A length-delimited value of kind `Str`, `Name` or `Bytes`, whose first byte is at `at`:
/// invalid UTF-8 and a name with a byte the text would read as syntax are errors there.
fn string(raw: &[u8], at: usize, kind: Kind, what: impl Fn() -> String) -> R<Value> {
    if kind == Kind::Bytes {
        return Ok(Value::Bytes(raw.to_vec()));
    }
    let text = match std::str::from_utf8(raw) {
        Ok(t) => t,
        Err(e) => return err(at + e.valid_up_to(), format!("{}: invalid UTF-8", what())),
    };
    if kind == Kind::Name {
        if raw.is_empty() {
            return err(at, format!("{}: an empty name", what()));
        }
        if let Some(k) = raw.iter().position(|&b| !is_name_byte(b)) {
            return err(at + k, format!("{}: byte 0x{:02x} in a name (expected [A-Za-z0-9_.-])", what(), raw[k]));
        }
    }
    Ok(Value::Str(text.to_owned()))
}

fn skip(buf: &[u8], pos: usize, end: usize, wire: u8, tag_at: usize, number: u64) -> R<usize> {
    match wire {
        VARINT => Ok(varint(buf, pos, end)?.1),
        I64 => fixed(pos, end, 8, "fixed64"),
        I32 => fixed(pos, end, 4, "fixed32"),
        LEN => Ok(length(buf, pos, end)?.1),
        // groups (3, 4) are proto2 only: XLA's protos are proto3
        _ => err(tag_at, format!("field {number}: wire type {wire} (groups are not proto3)")),
    }
}

// ---- encoding (the fuzz target's decode == re-decode of re-encode; tests) -------------------

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        out.push(b | if v > 0 { 0x80 } else { 0 });
        if v == 0 {
            return;
        }
    }
}

fn put_len(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    put_varint(out, u64::from(number) << 3 | u64::from(LEN));
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

fn scalar_bits(v: &Value) -> u64 {
    match v {
        Value::Int(i) => *i as u64,
        Value::UInt(u) => *u,
        Value::Bool(b) => u64::from(*b),
        _ => 0,
    }
}

/// `m` (decoded as message `message`) encoded again by the schema: fields by number, repeated
/// scalars packed. What decoding it gives is what decoding the original gave (offsets aside):
/// the fuzz target checks it.
pub fn encode(m: &Msg, message: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut fields: Vec<&Field> = MESSAGES[message].iter().collect();
    fields.sort_by_key(|f| f.number);
    for f in fields {
        let Some(v) = m.get(f.name) else { continue };
        let values: &[Value] = match v {
            Value::List(l) => l,
            v => std::slice::from_ref(v),
        };
        match f.kind {
            Kind::Msg(sub) => {
                for v in values {
                    if let Value::Msg(x) = v {
                        put_len(&mut out, f.number, &encode(x, sub));
                    }
                }
            }
            Kind::Str | Kind::Name | Kind::Bytes => {
                for v in values {
                    match v {
                        Value::Str(t) => put_len(&mut out, f.number, t.as_bytes()),
                        Value::Bytes(b) => put_len(&mut out, f.number, b),
                        _ => {}
                    }
                }
            }
            Kind::F32 | Kind::F64 => {
                let mut packed = Vec::new();
                for v in values {
                    match v {
                        Value::F32(x) => packed.extend_from_slice(&x.to_le_bytes()),
                        Value::F64(x) => packed.extend_from_slice(&x.to_le_bytes()),
                        _ => {}
                    }
                }
                if f.repeated {
                    put_len(&mut out, f.number, &packed);
                } else {
                    put_varint(&mut out, u64::from(f.number) << 3 | u64::from(wire_of(f.kind)));
                    out.extend_from_slice(&packed);
                }
            }
            _ if f.repeated => {
                let mut packed = Vec::new();
                for v in values {
                    put_varint(&mut packed, scalar_bits(v));
                }
                put_len(&mut out, f.number, &packed);
            }
            _ => {
                put_varint(&mut out, u64::from(f.number) << 3);
                put_varint(&mut out, scalar_bits(v));
            }
        }
    }
    out
}

/// The same fields and values, in any order (each name is there once), offsets (`Msg::at`)
/// aside; floats by their bits (a NaN is itself).
pub fn same_message(a: &Msg, b: &Msg) -> bool {
    a.fields.len() == b.fields.len() && a.fields.iter().all(|(n, va)| b.get(n).is_some_and(|vb| same_value(va, vb)))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Msg(x), Value::Msg(y)) => same_message(x, y),
        (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q)),
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::*;
    use super::*;

    /// The fuzz target's property on every sample and its damaged copies: what decodes, encoded
    /// again, decodes to the same message.
    #[test]
    fn decode_equals_decode_of_re_encode() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/proto_twins/jax-0.12.0.1");
        let mut n = 0;
        for prog in std::fs::read_dir(root).unwrap() {
            for f in std::fs::read_dir(prog.unwrap().path()).unwrap() {
                let p = f.unwrap().path();
                if !p.to_string_lossy().ends_with(".hlo.pb") {
                    continue;
                }
                let data = std::fs::read(&p).unwrap();
                for k in (0..data.len()).step_by(97).chain([usize::MAX]) {
                    let mut d = data.clone();
                    if let Some(b) = d.get_mut(k) {
                        *b ^= 0x21;
                    }
                    if let Ok((m, _)) = decode(&d, HLOPROTO) {
                        let (again, _) = decode(&encode(&m, HLOPROTO), HLOPROTO).expect("a re-encoded message decodes");
                        assert!(same_message(&m, &again), "{} byte {k}", p.display());
                        n += 1;
                    }
                }
            }
        }
        assert!(n > 20, "{n}");
    }

    #[test]
    fn bombs_and_damage_are_errors_with_offsets() {
        let e = decode(b"\x0a\xff\xff\xff\xff\x0f", HLOPROTO).unwrap_err();
        assert_eq!(e.offset, 1);
        assert!(e.message.contains("past the end"), "{e}");
        let mut inner: Vec<u8> = Vec::new();
        for _ in 0..MAX_DEPTH + 5 {
            let mut n = vec![0x22];
            let mut l = inner.len();
            loop {
                let b = (l & 0x7f) as u8;
                l >>= 7;
                n.push(b | if l > 0 { 0x80 } else { 0 });
                if l == 0 {
                    break;
                }
            }
            n.extend_from_slice(&inner);
            inner = n;
        }
        assert!(decode(&inner, SHAPEPROTO).unwrap_err().message.contains("nested deeper"));
        let e = decode(b"\x0d\x00\x00\x00\x00", HLOPROTO).unwrap_err();
        assert_eq!((e.offset, e.message.contains("wire type 5")), (0, true));
        let e = decode(b"\x28\xff\xff", HLOMODULEPROTO).unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (1, "truncated varint"));
        assert!(decode(b"\x13", HLOPROTO).unwrap_err().message.contains("groups"));
    }

    #[test]
    fn unknown_fields_are_counted() {
        let (m, unknown) = decode(b"\x0a\x03abc\xf8\x07\x01\x12\x01x", HLOMODULEPROTO).unwrap();
        assert_eq!((m.str("name"), m.str("entry_computation_name"), unknown), ("abc", "x", 1));
    }

    #[test]
    fn every_prefix_of_a_real_proto_decodes_or_fails_cleanly() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/proto_twins/jax-0.12.0.1/loop");
        let path = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with("after_optimizations.hlo.pb")).unwrap();
        let data = std::fs::read(path).unwrap();
        decode(&data, HLOPROTO).unwrap();
        for n in 0..data.len() {
            if let Err(e) = decode(&data[..n], HLOPROTO) {
                assert!(e.offset <= n);
            }
        }
    }
}
