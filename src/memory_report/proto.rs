//! The protobuf-text form of the memory-usage report (FORMATS.md §2.8.3): a small lexer for
//! proto text (`ident`, numbers, C-escaped strings, `{`, `}`, `:`) and a reader of the two
//! message levels (`memory_space_allocation_entries { allocation_entries { … } }`).
//!
//! The lexer works line by line (tokens carry their line and byte position, so errors point at
//! them); the mod.rs driver collects one top-level message's tokens, then reads it here.

use crate::lex::{bad, is_name_start, to_int, I32_MAX, I64_MAX, R};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Ident,
    Number,
    Str,
    LBrace,
    RBrace,
    Colon,
}

pub(super) struct Token<'a> {
    pub(super) kind: Kind,
    /// The token's text (ident, number, punctuation) or, for strings, the C-unescaped bytes
    /// decoded as UTF-8 with U+FFFD for invalid sequences.
    pub(super) value: std::borrow::Cow<'a, [u8]>,
    pub(super) line: u64,
    pub(super) text: &'a [u8],
    pub(super) pos: usize,
}


// ---- protobuf text ---------------------------------------------------------------------------

pub(super) fn utf8_width(b: u8) -> usize {
    match b {
        0..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

pub(super) fn proto_tokens(no: u64, text: &[u8]) -> R<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let ws = crate::lex::space::skip_ws(text, pos) - pos;
        if pos + ws == text.len() {
            break;
        }
        let start = pos + ws;
        let rest = &text[start..];
        let c = rest[0];
        let (kind, end) = if c == b'#' {
            break;
        } else if is_name_start(c) {
            (
                Kind::Ident,
                start
                    + 1
                    + rest[1..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                        .count(),
            )
        } else if let Some(n) = proto_number_len(rest) {
            (Kind::Number, start + n)
        } else if c == b'"' || c == b'\'' {
            match proto_string_len(rest) {
                Some(n) => (Kind::Str, start + n),
                None => return proto_token_error(text, pos),
            }
        } else if matches!(c, b'{' | b'}' | b':') {
            (
                match c {
                    b'{' => Kind::LBrace,
                    b'}' => Kind::RBrace,
                    _ => Kind::Colon,
                },
                start + 1,
            )
        } else {
            return proto_token_error(text, pos);
        };
        let raw = &text[start..end];
        let value = if kind == Kind::Str {
            let s = c_unescape(&raw[1..raw.len() - 1]);
            std::borrow::Cow::Owned(String::from_utf8_lossy(&s).into_owned().into_bytes())
        } else {
            std::borrow::Cow::Borrowed(raw)
        };
        out.push(Token {
            kind,
            value,
            line: no,
            text,
            pos: start,
        });
        pos = end;
    }
    Ok(out)
}

pub(super) fn proto_token_error<T>(text: &[u8], mut pos: usize) -> R<T> {
    while pos < text.len() && matches!(text[pos], b' ' | b'\t') {
        pos += 1;
    }
    bad(
        pos,
        "expected a protobuf-text token (name, number, string, '{', '}', ':')",
    )
}

/// `[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[fF]?`
pub(super) fn proto_number_len(s: &[u8]) -> Option<usize> {
    let digits = |i: usize| {
        s[i.min(s.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut i = 0;
    if matches!(s.first(), Some(b'-' | b'+')) {
        i = 1;
    }
    let d = digits(i);
    if d > 0 {
        i += d;
        if s.get(i) == Some(&b'.') {
            i += 1 + digits(i + 1);
        }
    } else if s.get(i) == Some(&b'.') && digits(i + 1) > 0 {
        i += 1 + digits(i + 1);
    } else {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let e = digits(j);
        if e > 0 {
            i = j + e;
        }
    }
    if matches!(s.get(i), Some(b'f' | b'F')) {
        i += 1;
    }
    Some(i)
}

/// A quoted string `"(?:[^"\\]|\\.)*"` (or with single quotes): its length with the quotes.
pub(super) fn proto_string_len(s: &[u8]) -> Option<usize> {
    let q = s[0];
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b if b == q => return Some(i + 1),
            b'\\' => {
                if i + 1 >= s.len() {
                    return None;
                }
                i += 1 + utf8_width(s[i + 1]);
            }
            _ => i += 1,
        }
    }
    None
}

/// Protobuf text strings are C-escaped bytes (octal for non-ASCII). Protobuf's escape set
/// (`\?`, `\x` with one or two hex digits, a lone trailing backslash kept) is not XLA's HLO
/// string escaping, which `hlo::scan::c_unescape` implements; the two are kept apart on purpose.
pub(super) fn c_unescape(s: &[u8]) -> Vec<u8> {
    crate::lex::unescape(s, |r, out| {
        let Some(&nxt) = r.get(1) else {
            out.push(b'\\'); // a lone trailing backslash is kept
            return 1;
        };
        let simple = match nxt {
            b'n' => Some(10),
            b't' => Some(9),
            b'r' => Some(13),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' => Some(92),
            b'\'' => Some(39),
            b'"' => Some(34),
            b'?' => Some(63),
            _ => None,
        };
        if let Some(v) = simple {
            out.push(v);
            2
        } else if (b'0'..=b'7').contains(&nxt) {
            let mut j = 1;
            let mut v: u32 = 0;
            while j < r.len() && j < 4 && (b'0'..=b'7').contains(&r[j]) {
                v = v * 8 + (r[j] - b'0') as u32;
                j += 1;
            }
            out.push((v & 0xff) as u8);
            j
        } else if nxt == b'x' {
            let mut j = 2;
            let mut v: u32 = 0;
            while j < r.len() && j < 4 && r[j].is_ascii_hexdigit() {
                v = v * 16 + (r[j] as char).to_digit(16).unwrap_or(0);
                j += 1;
            }
            out.push(v as u8);
            j
        } else {
            let w = utf8_width(nxt).min(r.len() - 1);
            out.extend_from_slice(&r[1..1 + w]);
            1 + w
        }
    })
}

pub(super) struct ProtoBad(pub usize, pub String);

#[derive(Default)]
pub(super) struct SpaceFields {
    pub(super) total_bytes: Vec<(i64, u64)>,
    pub(super) color: Vec<i64>,
    pub(super) entries: Vec<(EntryFields, u64)>,
}

#[derive(Default)]
pub(super) struct EntryFields {
    pub(super) index: Option<i64>,
    pub(super) size: Option<i64>,
    pub(super) cumulative: Option<i64>,
    pub(super) positions: Vec<Vec<u8>>,
}

/// Reads the tokens of one whole, balanced top-level message (two fixed levels: no recursion).
pub(super) struct ProtoReader<'r, 'a> {
    pub(super) tokens: &'r [Token<'a>],
    pub(super) i: usize,
}

impl<'r, 'a> ProtoReader<'r, 'a> {
    pub(super) fn next(&mut self) -> std::result::Result<&'r Token<'a>, ProtoBad> {
        match self.tokens.get(self.i) {
            Some(t) => {
                self.i += 1;
                Ok(t)
            }
            None => Err(ProtoBad(
                self.tokens.len() - 1,
                "unexpected end of the message".into(),
            )),
        }
    }

    pub(super) fn done(&self) -> std::result::Result<(), ProtoBad> {
        if self.i != self.tokens.len() {
            return Err(ProtoBad(self.i, "unexpected text after the message".into()));
        }
        Ok(())
    }

    /// `[:] {`
    pub(super) fn open(&mut self) -> std::result::Result<(), ProtoBad> {
        let mut tok = self.next()?;
        if tok.kind == Kind::Colon {
            tok = self.next()?;
        }
        if tok.kind != Kind::LBrace {
            return Err(ProtoBad(self.i - 1, "expected '{'".into()));
        }
        Ok(())
    }

    /// The next field name, or None at the closing `}`.
    pub(super) fn field(
        &mut self,
        known: &[&str],
    ) -> std::result::Result<Option<(&'r Token<'a>, usize)>, ProtoBad> {
        let tok = self.next()?;
        if tok.kind == Kind::RBrace {
            return Ok(None);
        }
        if tok.kind != Kind::Ident {
            return Err(ProtoBad(self.i - 1, "expected a field name or '}'".into()));
        }
        match known.iter().position(|k| k.as_bytes() == &*tok.value) {
            Some(k) => Ok(Some((tok, k))),
            None => Err(ProtoBad(
                self.i - 1,
                format!(
                    "unknown field '{}' (expected one of {})",
                    String::from_utf8_lossy(&tok.value),
                    known.join(", ")
                ),
            )),
        }
    }

    pub(super) fn space_message(&mut self) -> std::result::Result<SpaceFields, ProtoBad> {
        self.open()?;
        let mut f = SpaceFields::default();
        while let Some((tok, k)) =
            self.field(&["total_bytes", "memory_space_color", "allocation_entries"])?
        {
            match k {
                0 => f.total_bytes.push((self.int(false)?, tok.line)),
                1 => f.color.push(self.int(true)?),
                _ => {
                    let e = self.entry_message()?;
                    f.entries.push((e, tok.line));
                }
            }
        }
        Ok(f)
    }

    pub(super) fn entry_message(&mut self) -> std::result::Result<EntryFields, ProtoBad> {
        self.open()?;
        let mut e = EntryFields::default();
        while let Some((_, k)) = self.field(&[
            "index",
            "size",
            "cumulative_size",
            "cumulative_percentage",
            "defining_positions",
        ])? {
            match k {
                0 => e.index = Some(self.int(false)?),
                1 => e.size = Some(self.int(false)?),
                2 => e.cumulative = Some(self.int(false)?),
                3 => {
                    self.scalar_token(Kind::Number, "expected a number (float)")?;
                }
                _ => {
                    let t = self.scalar_token(Kind::Str, "expected a quoted string")?;
                    e.positions.push(t.value.to_vec());
                }
            }
        }
        Ok(e)
    }

    pub(super) fn scalar_token(
        &mut self,
        kind: Kind,
        msg: &str,
    ) -> std::result::Result<&'r Token<'a>, ProtoBad> {
        let colon = self.next()?;
        if colon.kind != Kind::Colon {
            return Err(ProtoBad(
                self.i - 1,
                "expected ':' after the field name".into(),
            ));
        }
        let tok = self.next()?;
        if tok.kind != kind {
            return Err(ProtoBad(self.i - 1, msg.into()));
        }
        Ok(tok)
    }

    pub(super) fn int(&mut self, int32: bool) -> std::result::Result<i64, ProtoBad> {
        let what = if int32 { "int32" } else { "int" };
        let tok = self.scalar_token(Kind::Number, &format!("expected a number ({what})"))?;
        let v = &*tok.value;
        let (neg, digits) = match v.first() {
            Some(b'-') => (true, &v[1..]),
            Some(b'+') => (false, &v[1..]),
            _ => (false, v),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(ProtoBad(self.i - 1, "expected an integer".into()));
        }
        let limit = if int32 { I32_MAX } else { I64_MAX };
        match to_int(digits, limit + 1) {
            Some(n) if n <= limit || neg => Ok(if neg {
                (n as i128).wrapping_neg() as i64
            } else {
                n as i64
            }),
            _ => Err(ProtoBad(
                self.i - 1,
                format!("integer out of range ({what})"),
            )),
        }
    }
}


