//! `custom_calls` rows: the custom-call body (base64, often MLIR bytecode) and kernel name found
//! in `backend_config` (schema.py, custom_calls decisions).
//!
//! The reference decides with Python's `json.loads`, so a small JSON reader here accepts exactly
//! what that accepts (strict strings, NaN/Infinity, last duplicate key wins). Strings stay
//! slices of the config and are only unescaped when returned. The body is not decoded to learn
//! its length: after the strict base64 check the length follows from the text, and the MLIR
//! magic from its first quad pair — so a 50 MB body costs one scan, no allocation.

use std::borrow::Cow;

use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

use super::scan::skip_ws;

pub const MLIR_MAGIC: &[u8] = b"ML\xefR";

/// Python's `base64.b64decode(validate=True)`: standard alphabet, padding not checked for
/// canonical trailing bits.
const B64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true).with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A JSON string as printed (between the quotes) and whether it holds escapes.
#[derive(Clone, Copy, Debug)]
pub struct JStr<'a> {
    raw: &'a [u8],
    escaped: bool,
}

impl<'a> JStr<'a> {
    pub fn decode(&self) -> Cow<'a, [u8]> {
        if !self.escaped {
            return Cow::Borrowed(self.raw);
        }
        // the string was checked when it was read: every backslash starts a whole escape
        Cow::Owned(crate::lex::unescape(self.raw, |r, out| {
            let (ch, n) = match r[1] {
                b'n' => ('\n', 2),
                b'r' => ('\r', 2),
                b't' => ('\t', 2),
                b'b' => ('\u{8}', 2),
                b'f' => ('\u{c}', 2),
                b'u' => {
                    let hi = hex4(&r[2..6]).unwrap_or(0xFFFD);
                    if (0xD800..0xDC00).contains(&hi) && r[6..].starts_with(b"\\u") {
                        match r.get(8..12).and_then(hex4).filter(|lo| (0xDC00..0xE000).contains(lo)) {
                            Some(lo) => (char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).unwrap_or('\u{FFFD}'), 12),
                            None => ('\u{FFFD}', 6),
                        }
                    } else {
                        (char::from_u32(hi).unwrap_or('\u{FFFD}'), 6)
                    }
                }
                other => (other as char, 2), // \" \\ \/
            };
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            n
        }))
    }

    fn is(&self, key: &[u8]) -> bool {
        if self.escaped {
            &*self.decode() == key
        } else {
            self.raw == key
        }
    }
}

fn hex4(s: &[u8]) -> Option<u32> {
    if s.len() != 4 {
        return None;
    }
    s.iter().try_fold(0u32, |acc, &b| Some(acc * 16 + (b as char).to_digit(16)?))
}

/// A parsed JSON value (only what the key search needs).
#[derive(Debug)]
pub enum Json<'a> {
    Obj(Vec<(JStr<'a>, Json<'a>)>),
    Arr(Vec<Json<'a>>),
    Str(JStr<'a>),
    Other,
}

/// `json.loads(s)`, or None when Python would raise.
pub fn parse_json(s: &[u8]) -> Option<Json<'_>> {
    let mut p = JsonParser { s, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    (p.i == s.len()).then_some(v)
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> JsonParser<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: u32) -> Option<Json<'a>> {
        if depth > 900 {
            return None; // Python would hit its recursion limit
        }
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b"}") {
                    return Some(Json::Obj(items));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return None;
                    }
                    let k = self.string()?;
                    self.ws();
                    if !self.eat(b":") {
                        return None;
                    }
                    self.ws();
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    self.ws();
                    if self.eat(b"}") {
                        return Some(Json::Obj(items));
                    }
                    if !self.eat(b",") {
                        return None;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b"]") {
                    return Some(Json::Arr(items));
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(b"]") {
                        return Some(Json::Arr(items));
                    }
                    if !self.eat(b",") {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Json::Str),
            _ => {
                for lit in [&b"null"[..], b"true", b"false", b"NaN", b"Infinity", b"-Infinity"] {
                    if self.eat(lit) {
                        return Some(Json::Other);
                    }
                }
                self.number().then_some(Json::Other)
            }
        }
    }

    /// `-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`
    fn number(&mut self) -> bool {
        let s = self.s;
        let digits = |i: &mut usize| {
            let st = *i;
            while *i < s.len() && s[*i].is_ascii_digit() {
                *i += 1;
            }
            *i > st
        };
        let mut i = self.i;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                digits(&mut i);
            }
            _ => return false,
        }
        if s.get(i) == Some(&b'.') && s.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            digits(&mut i);
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            let mut k = i + 1;
            if matches!(s.get(k), Some(b'+' | b'-')) {
                k += 1;
            }
            if digits(&mut k) {
                i = k;
            }
        }
        self.i = i;
        true
    }

    /// At '"': the string (strict: no control characters, only JSON escapes).
    fn string(&mut self) -> Option<JStr<'a>> {
        let s = self.s;
        let start = self.i + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            let p = memchr::memchr2(b'"', b'\\', &s[i..])?;
            if s[i..i + p].iter().any(|&b| b < 0x20) {
                return None;
            }
            i += p;
            if s[i] == b'"' {
                self.i = i + 1;
                return Some(JStr { raw: &s[start..i], escaped });
            }
            escaped = true;
            match s.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    hex4(s.get(i + 2..i + 6)?)?;
                    i += 6;
                }
                _ => return None,
            }
        }
    }
}

/// Depth-first (printed order) search for the first string value under `key`, with Python
/// dict semantics: a repeated key keeps its first position and its last value.
pub fn find_key<'j, 'a>(v: &'j Json<'a>, key: &[u8]) -> Option<&'j JStr<'a>> {
    match v {
        Json::Obj(items) => {
            if let Some((_, Json::Str(s))) = items.iter().rev().find(|(k, _)| k.is(key)) {
                return Some(s);
            }
            for (n, (k, _)) in items.iter().enumerate() {
                if items[..n].iter().any(|(k2, _)| same_key(k, k2)) {
                    continue;
                }
                let last = items.iter().rev().find(|(k2, _)| same_key(k, k2)).map(|x| &x.1).unwrap();
                if let Some(r) = find_key(last, key) {
                    return Some(r);
                }
            }
            None
        }
        Json::Arr(items) => items.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

fn same_key(a: &JStr, b: &JStr) -> bool {
    if !a.escaped && !b.escaped {
        a.raw == b.raw
    } else {
        a.decode() == b.decode()
    }
}

/// Strict base64 (length % 4 == 0, standard alphabet, '=' only as up to two final pads):
/// (decoded length, starts with the MLIR bytecode magic), or None.
pub fn b64_info(s: &[u8]) -> Option<(usize, bool)> {
    if s.len() % 4 != 0 {
        return None;
    }
    let pads = s.iter().rev().take(2).take_while(|&&b| b == b'=').count();
    if !s[..s.len() - pads].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/') {
        return None;
    }
    let len = s.len() / 4 * 3 - pads;
    let head = B64.decode(&s[..s.len().min(8)]).ok()?;
    Some((len, head.starts_with(MLIR_MAGIC)))
}

fn b64_decode(s: &[u8]) -> Option<Vec<u8>> {
    b64_info(s)?;
    B64.decode(s).ok()
}

/// (body text, parsed JSON object when the config is one).
fn body_text(bc: &[u8]) -> (Cow<'_, [u8]>, Option<Json<'_>>, bool) {
    if bc.is_empty() {
        return (Cow::Borrowed(bc), None, false);
    }
    let obj = if bc.get(skip_ws(bc, 0)) == Some(&b'{') { parse_json(bc) } else { None };
    let obj = obj.filter(|o| matches!(o, Json::Obj(_)));
    if let Some(o) = &obj {
        if let Some(b) = find_key(o, b"body") {
            let body = b.decode();
            return (body, obj, true);
        }
    }
    (Cow::Borrowed(bc), obj, false)
}

/// The decoded custom-call body: base64 of the JSON `"body"` string when the config is a JSON
/// object that has one (searched depth-first), else of the whole config; None when that text is
/// not base64.
pub fn decode_body(backend_config: &[u8]) -> Option<Vec<u8>> {
    b64_decode(&body_text(backend_config).0)
}

/// The `custom_calls` columns that come from `backend_config`.
#[derive(Debug, PartialEq)]
pub struct CustomCallInfo<'a> {
    pub body_length: i64,
    pub decoded_length: Option<i64>,
    pub format: &'static str,
    pub kernel_name: Option<Cow<'a, [u8]>>,
}

pub fn custom_call_info(backend_config: Option<&[u8]>) -> CustomCallInfo<'_> {
    let bc = backend_config.unwrap_or(b"");
    let (body, obj, has_body) = body_text(bc);
    let info = if body.is_empty() { None } else { b64_info(&body) };
    let (decoded_length, format) = if bc.is_empty() {
        (None, "empty")
    } else {
        let fmt = match (info, &obj) {
            (Some((_, true)), _) => "mlir_bytecode",
            (_, Some(_)) if !has_body => "json",
            _ => "text",
        };
        (info.map(|i| i.0 as i64), fmt)
    };
    let kernel_name = obj.as_ref().and_then(|o| find_key(o, b"kernel_name").or_else(|| find_key(o, b"name"))).map(|s| s.decode());
    CustomCallInfo { body_length: body.len() as i64, decoded_length, format, kernel_name }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let i = custom_call_info(None);
        assert_eq!((i.body_length, i.decoded_length, i.format), (0, None, "empty"));
        let i = custom_call_info(Some(br#"{"a": 1, "name": "kern"}"#));
        assert_eq!((i.format, i.kernel_name.as_deref()), ("json", Some(&b"kern"[..])));
        let i = custom_call_info(Some(br#"{"body": "aGVsbG8="}"#));
        assert_eq!((i.body_length, i.decoded_length, i.format), (8, Some(5), "text"));
        assert_eq!(custom_call_info(Some(b"not base64!")).decoded_length, None);
        let i = custom_call_info(Some(b"{index = 0 : ui64}"));
        assert_eq!((i.format, i.body_length, i.decoded_length), ("text", 18, None));
        // nested body, MLIR magic, kernel_name before name
        let body = B64.encode(b"ML\xefR\x01rest of the kernel");
        let cfg = format!(r#"{{"custom_call_config": {{"body": "{body}", "x": 1}}, "name": "n", "kernel_name": "k"}}"#);
        let i = custom_call_info(Some(cfg.as_bytes()));
        assert_eq!(i.format, "mlir_bytecode");
        assert_eq!(i.decoded_length, Some(23));
        assert_eq!(i.kernel_name.as_deref(), Some(&b"k"[..]));
        assert_eq!(decode_body(cfg.as_bytes()).unwrap(), b"ML\xefR\x01rest of the kernel");
        assert_eq!(decode_body(b""), Some(vec![]));
    }

    #[test]
    fn json_like_python() {
        assert!(parse_json(br#" {"a": [1, -2.5e3, NaN, -Infinity, true, null], "b": "\u00e9\/"} "#).is_some());
        assert!(parse_json(br#"{"a": 1,}"#).is_none());
        assert!(parse_json(b"{\"a\": \"x\ty\"}").is_none()); // raw control character
        assert!(parse_json(br#"{"a": 01}"#).is_none());
        assert!(parse_json(br#"{"a": "\q"}"#).is_none());
        assert!(parse_json(br#"{"a": 1.}"#).is_none());
        let j = parse_json(br#"{"name": 1, "x": {"name": "in"}, "name": "last"}"#).unwrap();
        assert_eq!(&*find_key(&j, b"name").unwrap().decode(), b"last");
        let j = parse_json(br#"{"k": {"a": 1}, "k": {"name": "second"}}"#).unwrap();
        assert_eq!(&*find_key(&j, b"name").unwrap().decode(), b"second");
        let s = parse_json(br#"{"b": "a\"b\\c\/d\u00e9\ud83d\ude00"}"#).unwrap();
        assert_eq!(&*find_key(&s, b"b").unwrap().decode(), "a\"b\\c/dé😀".as_bytes());
    }

    #[test]
    fn base64_strict() {
        assert_eq!(b64_info(b"aGVsbG8="), Some((5, false)));
        assert_eq!(b64_info(b"aGVsbA=="), Some((4, false)));
        assert_eq!(b64_info(b""), Some((0, false)));
        assert_eq!(b64_info(b"aGVsbG8"), None);
        assert_eq!(b64_info(b"aG=sbG8="), None);
        assert_eq!(b64_info(b"a==="), None);
        assert_eq!(b64_info(b"aGVsbG9="), Some((5, false))); // non-canonical trailing bits
    }
}
