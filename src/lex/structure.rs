//! The structural bytes of an instruction line as the field tape (`hlo::tape`) reads them:
//! the byte-class tables of its walks, and the one walk over a string or a `/*…*/` comment
//! that both of its bracket walks (operands, attribute values) and its metadata reader take.
//!
//! These walks are the certain ones: they answer only where the full parse
//! (`hlo::scan::step`, which reads escapes and every comment) would find the same end, and
//! say `Unsure` otherwise (a '\\' where the tape does not read escapes, a '/' that opens no
//! comment, a comment with a '"' in it, text that does not end); the caller then leaves the
//! line to the full parse.

/// "Not certain": the caller runs the full parse.
#[derive(Debug, PartialEq, Eq)]
pub struct Unsure;

/// Classes of `CLASS`: a byte that is not structural, an open bracket, a close bracket, '"',
/// ',', and '/' or '\\' (a comment may open; an escape).
pub const PLAIN: u8 = 0;
pub const OPEN: u8 = 1;
pub const CLOSE: u8 = 2;
pub const QUOTE: u8 = 3;
pub const COMMA: u8 = 4;
pub const SLASH: u8 = 5;

/// The class of every byte: non-zero exactly for the bytes `hlo::scan::find_struct` stops at
/// (`()[]{}"/,\\`; a test in `hlo::tape` holds the two sets together).
pub const CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    t[b'(' as usize] = OPEN;
    t[b'[' as usize] = OPEN;
    t[b'{' as usize] = OPEN;
    t[b')' as usize] = CLOSE;
    t[b']' as usize] = CLOSE;
    t[b'}' as usize] = CLOSE;
    t[b'"' as usize] = QUOTE;
    t[b',' as usize] = COMMA;
    t[b'/' as usize] = SLASH;
    t[b'\\' as usize] = SLASH;
    t
};

/// Byte classes of a shape (`hlo::tape::shape_end`): 0 a shape byte
/// (`[A-Za-z0-9_,:*<=?#+~]`), 1 open bracket, 2 close bracket, 3 ' ', 4 '/', 5 anything else.
pub const SHAPE_CLASS: [u8; 256] = {
    let mut t = [5u8; 256];
    let shape = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_,:*<=?#+~";
    let mut k = 0;
    while k < shape.len() {
        t[shape[k] as usize] = 0;
        k += 1;
    }
    t[b'(' as usize] = 1;
    t[b'[' as usize] = 1;
    t[b'{' as usize] = 1;
    t[b')' as usize] = 2;
    t[b']' as usize] = 2;
    t[b'}' as usize] = 2;
    t[b' ' as usize] = 3;
    t[b'/' as usize] = 4;
    t
};

/// What a structural byte is, with the end of the string or comment it opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Struct {
    Open,
    Close,
    Comma,
    /// A string (`"…"` without '\\'): the index just past its closing '"'.
    String(usize),
    /// A `/*…*/` comment without '"': the index just past its `*/`.
    Comment(usize),
}

/// The structural byte at `k` (one `find_struct` found), strings and comments walked over.
#[inline(always)]
pub fn at(text: &[u8], k: usize) -> Result<Struct, Unsure> {
    Ok(match CLASS[text[k] as usize] {
        OPEN => Struct::Open,
        CLOSE => Struct::Close,
        COMMA => Struct::Comma,
        QUOTE => Struct::String(string_end(text, k)?),
        SLASH => Struct::Comment(comment_end(text, k)?),
        _ => return Err(Unsure), // (not a structural byte: `find_struct` never gives one)
    })
}

/// Index just past the `/*…*/` comment at `i` (e.g. `/*index=5*/`); Unsure for a '\\', a '/'
/// that opens no comment, a comment that does not end or has a '"' in it.
#[inline]
pub fn comment_end(text: &[u8], i: usize) -> Result<usize, Unsure> {
    if text[i] != b'/' || text.get(i + 1) != Some(&b'*') {
        return Err(Unsure);
    }
    let e = memchr::memmem::find(&text[i + 2..], b"*/").ok_or(Unsure)? + i + 2;
    if memchr::memchr(b'"', &text[i..e]).is_some() {
        return Err(Unsure);
    }
    Ok(e + 2)
}

/// Index just past the string whose '"' is at `i`; Unsure if it has a '\\' or does not end.
#[inline]
pub fn string_end(text: &[u8], i: usize) -> Result<usize, Unsure> {
    let e = crate::lex::classify::find2(b'"', b'\\', &text[i + 1..]).ok_or(Unsure)? + i + 1;
    if text[e] != b'"' {
        return Err(Unsure);
    }
    Ok(e + 1)
}

/// Index just past the string whose '"' is at `i`, and whether it holds a '\\' (which escapes
/// the byte after it, as `hlo::scan::skip_string_esc` reads it). Unsure if it does not end.
/// (`string_end` is this walk stopped at the first '\\'.)
#[inline(always)]
pub fn string_end_escaped(text: &[u8], i: usize) -> Result<(usize, bool), Unsure> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        let e = crate::lex::classify::find2(b'"', b'\\', &text[j..]).ok_or(Unsure)? + j;
        if text[e] == b'"' {
            return Ok((e + 1, escaped));
        }
        if e + 1 >= text.len() {
            return Err(Unsure);
        }
        escaped = true;
        j = e + 2;
    }
}
