//! XLA's `OpMetadataToString` list as an OOM report's `Operator:` line prints it
//! (`op_type="…" op_name="…" source_file="…" source_line=N …`): reading it into its fields, and
//! telling whether a wrapped line continues one (FORMATS.md §2.9.1).

use std::borrow::Cow;

/// Whether `s` is the start of an `OpMetadataToString` list: whole items separated by single
/// spaces, the last one possibly cut (a key, `KEY=`, an open quoted string or group, a bare
/// value). Decides whether a wrapped line continues an `Operator:` line.
pub(super) fn op_metadata_prefix(s: &[u8]) -> bool {
    let n = s.len();
    let mut i = 0;
    loop {
        let k = i + s[i..].iter().take_while(|b| b.is_ascii_lowercase() || **b == b'_').count();
        if k == i {
            return false;
        }
        if k == n {
            return true;
        }
        if s[k] != b'=' {
            return false;
        }
        i = k + 1;
        if i == n {
            return true;
        }
        match s[i] {
            b'"' => {
                let mut j = i + 1;
                while j < n && s[j] != b'"' {
                    j += if s[j] == b'\\' { 2 } else { 1 };
                }
                if j >= n {
                    return true;
                }
                i = j + 1;
            }
            b'{' => match memchr::memchr(b'}', &s[i..]) {
                None => return true,
                Some(p) => i += p + 1,
            },
            _ => {
                let j = i + s[i..].iter().take_while(|&&b| b != b' ').count();
                if j == i {
                    return false;
                }
                i = j;
            }
        }
        if i == n {
            return true;
        }
        if s[i] != b' ' {
            return false;
        }
        i += 1;
    }
}

/// The fields of `OpMetadataToString` we keep (FORMATS.md §2.9.2).
#[derive(Default, Debug, PartialEq)]
pub struct OpMetadata<'c> {
    pub op_type: Option<Cow<'c, [u8]>>,
    pub op_name: Option<Cow<'c, [u8]>>,
    pub source_file: Option<Cow<'c, [u8]>>,
    pub source_line: Option<i32>,
}

impl OpMetadata<'_> {
    pub(super) fn into_owned(self) -> OpMetadata<'static> {
        let own = |c: Option<Cow<'_, [u8]>>| c.map(|c| Cow::Owned(c.into_owned()));
        OpMetadata { op_type: own(self.op_type), op_name: own(self.op_name), source_file: own(self.source_file), source_line: self.source_line }
    }
}

/// `KEY=VALUE` items separated by single spaces, VALUE a `"`-quoted C-escaped string, a `{…}`
/// group or a bare token; None if the text is not such a list (the raw text stays in
/// `operator`). String escapes `\"` `\\` `\'` `\n` `\t` `\r` are decoded, any other backslash
/// is kept as printed. A key printed twice keeps its first value.
pub fn op_metadata(s: &[u8]) -> Option<OpMetadata<'_>> {
    let mut m = OpMetadata::default();
    let mut i = 0;
    loop {
        let k = s[i..].iter().take_while(|b| b.is_ascii_lowercase() || **b == b'_').count();
        if k == 0 || s.get(i + k) != Some(&b'=') {
            return None;
        }
        let key = &s[i..i + k];
        i += k + 1;
        let (value, end): (Cow<'_, [u8]>, usize) = match s.get(i) {
            Some(b'"') => {
                let mut j = i + 1;
                let mut escaped = false;
                while j < s.len() && s[j] != b'"' {
                    if s[j] == b'\\' {
                        escaped = true;
                        j += 1;
                    }
                    j += 1;
                }
                if j >= s.len() {
                    return None;
                }
                let body = &s[i + 1..j];
                (if escaped { Cow::Owned(unescape(body)) } else { Cow::Borrowed(body) }, j + 1)
            }
            Some(b'{') => {
                let j = i + memchr::memchr(b'}', &s[i..])?;
                (Cow::Borrowed(&s[i..=j]), j + 1)
            }
            _ => {
                let j = i + s[i..].iter().take_while(|&&b| b != b' ').count();
                if j == i {
                    return None;
                }
                (Cow::Borrowed(&s[i..j]), j)
            }
        };
        let slot = match key {
            b"op_type" => Some(&mut m.op_type),
            b"op_name" => Some(&mut m.op_name),
            b"source_file" => Some(&mut m.source_file),
            _ => None,
        };
        if let Some(slot) = slot {
            if slot.is_none() {
                *slot = Some(value);
            }
        } else if key == b"source_line" && m.source_line.is_none() {
            if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return None;
            }
            // an int32 column: a larger number makes the text no metadata list (as one past
            // int64 did before)
            m.source_line = Some(crate::lex::to_int(&value, crate::lex::I32_MAX)? as i32);
        }
        i = end;
        if i == s.len() {
            return Some(m);
        }
        if s[i] != b' ' {
            return None;
        }
        i += 1;
    }
}

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            let d = match s[i + 1] {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'\'' => Some(b'\''),
                b'n' => Some(b'\n'),
                b't' => Some(b'\t'),
                b'r' => Some(b'\r'),
                _ => None,
            };
            if let Some(d) = d {
                out.push(d);
                i += 2;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

