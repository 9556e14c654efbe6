//! The general instruction grammar (FORMATS.md §3.6.1): what XLA's own lexer and parser accept
//! (`xla/hlo/parser/hlo_lexer.cc` `LexToken`, `hlo_parser.cc` `ParseInstruction` /
//! `ParseInstructionRhs` / `ParseAttributes`), for the instructions the one-line fast path of
//! `instruction.rs` leaves alone:
//!
//! * tokens may be separated by any run of blanks (space, tab, CR, LF) and comments (`/* … */`,
//!   `// …` to the end of the line), so an instruction can continue over several lines;
//! * the result shape may be missing (`ROOT r = add(a, b)`: XLA infers it) — the row's `shape`
//!   is then "";
//! * errors say where (a byte position, turned into line and column by the caller) and what
//!   was expected.
//!
//! Every piece is a range of the text (the whole file), so cells stay views into the mapping;
//! a multi-line piece holds the line breaks (and comments) as written. Mirrored line for line by
//! `reference/hlo.py` (`_general_instruction`).

use super::attributes::Attr;
use super::instruction::{finish, Instr, Parts, Scratch};
use super::scan::{is_name_char, is_name_start, key_eq_at, name_end};

/// A position in the text and what was expected there.
pub type GenError = (usize, String);

/// Blanks XLA's lexer skips between tokens.
#[inline]
pub fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Past the blanks and comments at `i` (line breaks included). An unterminated `/*` is an error
/// at its start.
pub fn skip_trivia(f: &[u8], i: usize) -> Result<usize, GenError> {
    skip(f, i, false)
}

/// Like `skip_trivia`, but stops at a line break that is not inside a `/* … */` comment.
pub fn skip_trivia_in_line(f: &[u8], i: usize) -> Result<usize, GenError> {
    skip(f, i, true)
}

fn skip(f: &[u8], mut i: usize, stop_at_line_break: bool) -> Result<usize, GenError> {
    while i < f.len() {
        let b = f[i];
        if stop_at_line_break && b == b'\n' {
            break;
        }
        if is_blank(b) {
            i += 1;
        } else if b == b'/' && f.get(i + 1) == Some(&b'/') {
            i = memchr::memchr(b'\n', &f[i..]).map_or(f.len(), |p| i + p);
        } else if b == b'/' && f.get(i + 1) == Some(&b'*') {
            match memchr::memmem::find(&f[i + 2..], b"*/") {
                Some(p) => i = i + 2 + p + 2,
                None => return Err((i, "unterminated comment: '/*' without '*/'".into())),
            }
        } else {
            break;
        }
    }
    Ok(i)
}

/// A short printable description of the byte at `i` for messages.
pub fn what(f: &[u8], i: usize) -> String {
    match f.get(i) {
        None => "end of file".into(),
        Some(0) => "a NUL byte".into(),
        Some(b'\n') => "end of line".into(),
        Some(&b) if (0x20..0x7f).contains(&b) => format!("'{}'", b as char),
        Some(&b) => format!("byte 0x{b:02x}"),
    }
}

fn expected(f: &[u8], i: usize, what_: &str) -> GenError {
    (i, format!("expected {what_}, found {}", what(f, i)))
}

/// Characters a shape is made of besides brackets and blanks.
#[inline]
fn is_shape_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':' | b'*' | b'<' | b'=' | b'?' | b'#' | b'+' | b'~')
}

/// `f[i]` is an opening bracket: past its matching close. Kinds must match; strings (not in
/// shapes) and comments are skipped; in a shape only shape characters may appear; a NUL byte
/// is an error everywhere.
pub fn group_end(f: &[u8], i: usize, shape: bool) -> Result<usize, GenError> {
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut k = i;
    loop {
        let Some(&b) = f.get(k) else {
            let (open, at) = *stack.last().expect("an open bracket");
            return Err((at, format!("'{}' is not closed before the end of the file", open as char)));
        };
        match b {
            b'(' | b'[' | b'{' => {
                stack.push((b, k));
                k += 1;
            }
            b')' | b']' | b'}' => {
                let (open, _) = stack.pop().expect("an open bracket");
                let want = match open {
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                if b != want {
                    return Err(expected(f, k, &format!("'{}'", want as char)));
                }
                k += 1;
                if stack.is_empty() {
                    return Ok(k);
                }
            }
            b'/' if f.get(k + 1) == Some(&b'*') || f.get(k + 1) == Some(&b'/') => k = skip_trivia(f, k)?,
            b'"' if !shape => k = string_end(f, k)?,
            0 => return Err((k, "unexpected NUL byte".into())),
            _ if shape && !(is_shape_char(b) || is_blank(b)) => {
                return Err((k, format!("unexpected {} in a shape", what(f, k))));
            }
            _ => k += 1,
        }
    }
}

/// `f[i]` is '"': past the closing quote (`\` escapes any byte but a line break). A NUL is an
/// error; so is a line break before the closing quote: XLA prints every string on one line
/// (escaped fields have no raw line break, FORMATS.md §3.1.4), so a string open at the end of its
/// line lost its closing quote there, and is reported at its opening quote — not at the next
/// quote of a later line, which would swallow the instructions between.
fn string_end(f: &[u8], i: usize) -> Result<usize, GenError> {
    const UNTERMINATED: &str = "unterminated string: no closing '\"' on its line";
    let mut k = i + 1;
    loop {
        let rest = f.get(k..).unwrap_or(b"");
        let stop = memchr::memchr3(b'"', b'\\', b'\n', rest);
        // a NUL before the stop (or before the end) is reported first, as before
        if let Some(z) = memchr::memchr(0, &rest[..stop.unwrap_or(rest.len())]) {
            return Err((k + z, "unexpected NUL byte".into()));
        }
        let Some(p) = stop else {
            return Err((i, UNTERMINATED.into()));
        };
        let at = k + p;
        match f[at] {
            b'"' => return Ok(at + 1),
            b'\n' => return Err((i, UNTERMINATED.into())),
            _ => {
                if at + 1 >= f.len() || f[at + 1] == b'\n' {
                    return Err((i, UNTERMINATED.into()));
                }
                k = at + 2;
            }
        }
    }
}

/// End of the shape at `i` (`f[i]` is not a blank): a tuple `( … )`, a buffer `b( … )`, or
/// `TYPE[ … ]` with an optional layout `{ … }`.
fn shape_end(f: &[u8], i: usize) -> Result<usize, GenError> {
    if f[i] == b'(' {
        return group_end(f, i, true);
    }
    let e = i + f[i..].iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    if &f[i..e] == b"b" && f.get(e) == Some(&b'(') {
        return group_end(f, e, true);
    }
    let p = skip_trivia(f, e)?;
    if f.get(p) != Some(&b'[') {
        return Err(expected(f, p, "'[' after the element type"));
    }
    let j = group_end(f, p, true)?;
    let q = skip_trivia(f, j)?;
    if f.get(q) == Some(&b'{') {
        return group_end(f, q, true);
    }
    Ok(j)
}

/// True when a shape starts at `i`: `(`, or a lower-case word followed by `[` (blanks allowed)
/// or `b(`. Otherwise the word is the opcode of a shapeless instruction.
fn starts_shape(f: &[u8], i: usize) -> Result<bool, GenError> {
    match f.get(i) {
        Some(b'(') => return Ok(true),
        Some(b) if b.is_ascii_lowercase() => {}
        _ => return Ok(false),
    }
    let e = i + f[i..].iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    if &f[i..e] == b"b" && f.get(e) == Some(&b'(') {
        return Ok(true);
    }
    let p = skip_trivia(f, e)?;
    Ok(f.get(p) == Some(&b'['))
}

/// `[a-z][a-z0-9-]*` at `i`: its end.
fn opcode_end(f: &[u8], i: usize) -> Option<usize> {
    if !f.get(i).is_some_and(|b| b.is_ascii_lowercase()) {
        return None;
    }
    Some(i + f[i..].iter().take_while(|&&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-').count())
}

/// One instruction starting at `start` (a blank or comment may come first). Ok: the
/// instruction and the position just past its last token.
pub fn general_instruction<'a>(f: &'a [u8], start: usize, sc: &mut Scratch) -> Result<(Instr<'a>, usize), GenError> {
    let mut p = skip_trivia(f, start)?;
    // [ROOT]
    let mut is_root = false;
    if f[p..].starts_with(b"ROOT") && !f.get(p + 4).is_some_and(|&b| is_name_char(b)) {
        let q = skip_trivia(f, p + 4)?;
        if f.get(q) != Some(&b'=') {
            is_root = true;
            p = q;
        }
    }
    // name
    let percent = f.get(p) == Some(&b'%');
    let na = p + percent as usize;
    let Some(nb) = name_end(f, na).filter(|_| f.get(na).is_some_and(|&b| is_name_start(b))) else {
        return Err(expected(f, na, "an instruction name"));
    };
    if !percent && f.get(nb) == Some(&b'=') {
        // XLA's lexer reads `name=` as an attribute name, never as an instruction name
        return Err(expected(f, nb, "a blank between the instruction name and '='"));
    }
    p = skip_trivia(f, nb)?;
    if f.get(p) != Some(&b'=') {
        return Err(expected(f, p, "'=' after the instruction name"));
    }
    p = skip_trivia(f, p + 1)?;
    // [shape]
    let shape = if starts_shape(f, p)? {
        let e = shape_end(f, p)?;
        let s = (p, e);
        p = skip_trivia(f, e)?;
        s
    } else {
        (p, p)
    };
    // opcode(operands)
    let Some(oe) = opcode_end(f, p) else {
        return Err(expected(f, p, if shape.0 == shape.1 { "a shape or an opcode" } else { "an opcode after the shape" }));
    };
    let opcode = (p, oe);
    p = skip_trivia(f, oe)?;
    if f.get(p) != Some(&b'(') {
        return Err(expected(f, p, "'(' after the opcode"));
    }
    let close = group_end(f, p, false)?;
    let operands = (p + 1, close - 1);
    // {, KEY=VALUE}
    let mut end = close;
    let mut attrs: Vec<Attr> = std::mem::take(&mut sc.attrs);
    attrs.clear();
    let res = attributes(f, &mut end, &mut attrs);
    let attributes = match (attrs.first(), attrs.last()) {
        (Some(a), Some(b)) => (a.key.0, b.value.1),
        _ => (end, end),
    };
    sc.attrs = attrs;
    res?;
    let parts = Parts { is_root, name: (na, nb), shape, opcode, operands, plain_operands: false, attributes };
    match finish(f, sc, parts) {
        Ok(Some(ins)) => Ok((ins, end)),
        Ok(None) => Err((start, "cannot parse instruction".into())),
        Err(e) => Err((attributes.0, format!("bad attribute value: {}", e.message(b"")))),
    }
}

/// The attribute list after the operands (`*end` is just past the ')'): `, KEY=VALUE` items,
/// blanks and comments allowed around every token. A value runs to the next ',' at depth 0
/// that is followed by `KEY=` (a ',' followed by anything else stays in the value, like the
/// printer's `calls=%a, %b`), to a line break at depth 0 after which no ',' follows, or to a
/// closing bracket at depth 0 (which closes the computation). `*end` ends past the last token.
fn attributes(f: &[u8], end: &mut usize, out: &mut Vec<Attr>) -> Result<(), GenError> {
    let mut q = skip_trivia(f, *end)?;
    while f.get(q) == Some(&b',') {
        let k = skip_trivia(f, q + 1)?;
        let Some(eq) = key_eq_at(f, k) else {
            return Err(expected(f, k, "an attribute name (KEY=) after ','"));
        };
        let v = skip_trivia(f, eq + 1)?;
        let (vend, next) = value_end(f, v)?;
        if vend == v {
            return Err(expected(f, v, &format!("a value after '{}='", String::from_utf8_lossy(&f[k..eq]))));
        }
        out.push(Attr { key: (k, eq), value: (v, vend) });
        *end = vend;
        match next {
            Some(c) => q = c,
            None => return Ok(()),
        }
    }
    Ok(())
}

/// The value starting at `v`: (just past its last token, Some(position of the ',' that starts
/// the next attribute) or None when the instruction ends).
fn value_end(f: &[u8], v: usize) -> Result<(usize, Option<usize>), GenError> {
    let mut last = v;
    let mut k = v;
    loop {
        let Some(&b) = f.get(k) else { return Ok((last, None)) };
        match b {
            b' ' | b'\t' | b'\r' => k += 1,
            b'/' if f.get(k + 1) == Some(&b'*') || f.get(k + 1) == Some(&b'/') => k = skip_trivia_in_line(f, k)?,
            b'\n' => {
                let q = skip_trivia(f, k)?;
                if f.get(q) != Some(&b',') {
                    return Ok((last, None));
                }
                k = q;
            }
            b',' => {
                let q = skip_trivia(f, k + 1)?;
                if key_eq_at(f, q).is_some() {
                    return Ok((last, Some(k)));
                }
                match f.get(q) {
                    None | Some(b')' | b']' | b'}' | b',') => {
                        return Err(expected(f, q, "an attribute name (KEY=) after ','"));
                    }
                    _ => {}
                }
                k += 1;
                last = k;
            }
            b'(' | b'[' | b'{' => {
                k = group_end(f, k, false)?;
                last = k;
            }
            b')' | b']' | b'}' => return Ok((last, None)),
            b'"' => {
                k = string_end(f, k)?;
                last = k;
            }
            0 => return Err((k, "unexpected NUL byte".into())),
            _ => {
                k += 1;
                last = k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<(String, String, String, String, String, usize), (usize, String)> {
        let mut sc = Scratch::default();
        general_instruction(t.as_bytes(), 0, &mut sc).map(|(i, e)| {
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            (s(i.name), s(i.shape), s(i.opcode), s(i.operand_text), s(i.attributes), e)
        })
    }

    #[test]
    fn canonical_and_irregular_forms() {
        let t = "  %a = f32[2]{0} add(%b, %c), metadata={op_name=\"x\"}\n  next";
        let r = parse(t).unwrap();
        assert_eq!((r.0.as_str(), r.1.as_str(), r.2.as_str(), r.4.as_str()), ("a", "f32[2]{0}", "add", "metadata={op_name=\"x\"}"));
        assert_eq!(r.5, t.find("\n  next").unwrap());
        let t = "d = f32[70,70,70] dot(a, b),\n    lhs_batch_dims={0}, // c\n    rhs_batch_dims={0} /* x */\n}";
        let r = parse(t).unwrap();
        assert_eq!(r.4, "lhs_batch_dims={0}, // c\n    rhs_batch_dims={0}");
        assert_eq!(&t[r.5..r.5 + 1], " ");
        let r = parse("ROOT out = add(p0, p1)").unwrap();
        assert_eq!((r.0.as_str(), r.1.as_str(), r.2.as_str()), ("out", "", "add"));
        let r = parse("  ROOT  %o  =\tf32 [2] {0}   negate( %a )  ,  k=v ,k2=  \"w\"").unwrap();
        assert_eq!((r.1.as_str(), r.3.as_str(), r.4.as_str()), ("f32 [2] {0}", " %a ", "k=v ,k2=  \"w\""));
        let r = parse("x = f32[] call(a), calls=%f, %g").unwrap();
        assert_eq!(r.4, "calls=%f, %g");
        let r = parse("x = f32[] negate(a)\n  , k=1").unwrap();
        assert_eq!(r.4, "k=1");
    }

    #[test]
    fn errors() {
        let e = |t: &str| parse(t).unwrap_err();
        assert_eq!(e("x = f3\x002[] negate(a)").0, 6);
        assert!(e("x = f32[] negate(a), sharding={").1.contains("not closed"));
        assert!(e("x = f32[] negate(a), \n}").1.contains("attribute name"));
        assert!(e("x = f32[] negate(a), k=\n}").1.contains("a value after 'k='"));
        assert!(e("x = f32[] negate(a), k=1, ").1.contains("attribute name"));
        assert!(e("x=f32[] negate(a)").1.contains("blank"));
        assert!(e("x = f32[] negate(a]").1.contains("expected ')'"));
        assert!(e("x = f32\"[] negate(a)").1.contains("'(' after the opcode"));
        assert!(e("x = f32[\"] negate(a)").1.contains("in a shape"));
        assert!(e("x = f32[] negate(a) /* open").1.contains("unterminated comment"));
        assert!(e("x = f32[] negate").1.contains("'('"));
        assert!(e("x = [] negate(a)").1.contains("shape or an opcode"));
    }
}

/// Byte ranges of a computation header read by `comp_header_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenHeader {
    pub name: (usize, usize),
    pub is_entry: bool,
    /// `( … )` with its parentheses; empty (start == end) in the short form `name {`.
    pub signature: (usize, usize),
    pub result_shape: (usize, usize),
    /// Just past the `{` that opens the body.
    pub end: usize,
}

/// A computation header written with other blanks, comments or line breaks than the printer's
/// (XLA's lexer takes them all; its test inputs write `ENTRY main` ⏎ `{`, a signature over
/// several lines, `()->f32[]{`): `[ENTRY] [%]NAME [ "(" … ")" "->" SHAPE ] "{"` from `start`
/// (T between tokens). None when the text is not one. A `{ … }` right after the result shape is
/// its layout only when the body's `{` follows it.
pub fn comp_header_at(f: &[u8], start: usize) -> Option<GenHeader> {
    let mut i = skip_trivia(f, start).ok()?;
    let mut is_entry = false;
    if f[i..].starts_with(b"ENTRY") && !f.get(i + 5).is_some_and(|&b| is_name_char(b)) {
        let j = skip_trivia(f, i + 5).ok()?;
        let k = if f.get(j) == Some(&b'%') { j + 1 } else { j };
        if j > i + 5 && name_end(f, k).is_some() {
            is_entry = true;
            i = j;
        }
    }
    let a = if f.get(i) == Some(&b'%') { i + 1 } else { i };
    let b = name_end(f, a)?;
    let p = skip_trivia(f, b).ok()?;
    match f.get(p) {
        Some(b'{') => Some(GenHeader { name: (a, b), is_entry, signature: (p, p), result_shape: (p, p), end: p + 1 }),
        Some(b'(') => {
            let close = group_end(f, p, false).ok()?;
            let q = skip_trivia(f, close).ok()?;
            if !f[q..].starts_with(b"->") {
                return None;
            }
            let r = skip_trivia(f, q + 2).ok()?;
            let e = result_shape_end(f, r)?;
            let body = skip_trivia(f, e).ok()?;
            (f.get(body) == Some(&b'{')).then_some(GenHeader { name: (a, b), is_entry, signature: (p, close), result_shape: (r, e), end: body + 1 })
        }
        _ => None,
    }
}

/// End of the result shape at `i` of a computation header: a tuple, or `TYPE[ … ]` and a layout
/// `{ … }` when another `{` (the body's) follows it.
fn result_shape_end(f: &[u8], i: usize) -> Option<usize> {
    match f.get(i)? {
        b'(' => group_end(f, i, true).ok(),
        c if c.is_ascii_alphanumeric() => {
            let w = i + f[i..].iter().take_while(|b| b.is_ascii_alphanumeric()).count();
            let p = skip_trivia(f, w).ok()?;
            if f.get(p) != Some(&b'[') {
                return None;
            }
            let dims = group_end(f, p, true).ok()?;
            let q = skip_trivia(f, dims).ok()?;
            if f.get(q) == Some(&b'{') {
                if let Ok(layout) = group_end(f, q, true) {
                    if skip_trivia(f, layout).ok().and_then(|r| f.get(r)) == Some(&b'{') {
                        return Some(layout);
                    }
                }
            }
            Some(dims)
        }
        _ => None,
    }
}
