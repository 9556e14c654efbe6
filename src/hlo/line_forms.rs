//! The line forms of HLO module text that are not instructions (FORMATS.md §3.2): computation
//! headers and closers, the module header, `// -----` split markers, line comments, and the
//! test for a column-0 line that belongs to the module. Pure functions of a line's bytes, used
//! by the module driver (`module/mod.rs`); the reference reads the same forms in
//! `reference/hlo/module.py`.

use super::general::skip_trivia_in_line;
use super::scan::*;
use super::stack_frames::Table;
use crate::lines::Line;

/// `[ENTRY ]%name (sig) -> result {` or the short form `[ENTRY ]name {`:
/// (name, is_entry, signature, result_shape).
pub(super) fn comp_header(s: &[u8]) -> Option<(&[u8], bool, &[u8], &[u8])> {
    if let Some(rest) = entry_after_comments(s) {
        // `ENTRY /* … */ name …` (XLA's parser tests): the header after the comments
        let (name, is_entry, signature, result) = comp_header(rest)?;
        return (!is_entry).then_some((name, true, signature, result));
    }
    // `(ENTRY )?%?(NAME) ` with the regex's backtracking: "ENTRY" itself may be the name.
    let start = |i: usize| -> Option<((usize, usize), usize)> {
        let j = if s.get(i) == Some(&b'%') { i + 1 } else { i };
        let e = name_end(s, j)?;
        // the name ends at a blank or, as XLA's lexer allows, at the signature's '('
        match s.get(e) {
            Some(b' ') => Some(((j, e), e + 1)),
            Some(b'(') => Some(((j, e), e)),
            _ => None,
        }
    };
    let (is_entry, (na, nb), rest_at) = match s.starts_with(b"ENTRY ").then(|| start(6)).flatten() {
        Some((n, r)) => (true, n, r),
        None => {
            let (n, r) = start(0)?;
            (false, n, r)
        }
    };
    let rest = &s[rest_at..];
    if rest == b"{" {
        return Some((&s[na..nb], is_entry, b"", b""));
    }
    if rest.first() != Some(&b'(') {
        return None;
    }
    let close = match_close(&plain(rest), 0).ok()?;
    let tail = &rest[close..];
    if !(tail.starts_with(b" -> ") && tail.ends_with(b" {")) {
        return None;
    }
    let result = if tail.len() >= 6 { &tail[4..tail.len() - 2] } else { b"" };
    Some((&s[na..nb], is_entry, &rest[..close], result))
}

/// `ENTRY` followed by blanks and at least one `/* … */` comment: the text after them.
pub(super) fn entry_after_comments(s: &[u8]) -> Option<&[u8]> {
    let rest = s.strip_prefix(b"ENTRY")?;
    let mut i = 0;
    let mut comments = 0;
    loop {
        i += blanks(&rest[i..]);
        if !rest[i..].starts_with(b"/*") {
            break;
        }
        i += 2 + memchr::memmem::find(&rest[i + 2..], b"*/")? + 2;
        comments += 1;
    }
    (comments > 0).then_some(&rest[i..])
}

/// `}[, execution_thread="T"][ // name]`: Some(thread) when the line closes a computation.
pub(super) fn comp_close(s: &[u8]) -> Option<Option<&[u8]>> {
    let rest = s.strip_prefix(b"}")?;
    // blanks and comments may follow (XLA's lexer skips them)
    let tail_ok = |t: &[u8]| t.is_empty() || skip_trivia_in_line(t, 0).is_ok_and(|e| e == t.len());
    if let Some(r) = rest.strip_prefix(b", execution_thread=\"") {
        if let Some(q) = memchr::memchr(b'"', r) {
            if tail_ok(&r[q + 1..]) {
                return Some(Some(&r[..q]));
            }
        }
    }
    tail_ok(rest).then_some(None)
}

/// `s` is `}`, blanks or comments, then more text that is not `,`: where that starts (a
/// computation closed and the next statement on the same line).
pub(super) fn next_on_line(s: &[u8]) -> Option<usize> {
    let p = skip_trivia_in_line(s, 1).ok()?;
    (p < s.len() && s[p] != b',').then_some(p)
}

/// Number of blanks (space, tab) at the start of `s`.
pub(super) fn blanks(s: &[u8]) -> usize {
    s.iter().take_while(|&&b| b == b' ' || b == b'\t').count()
}

/// `line` without its first `n` bytes.
pub(super) fn trim_start<'c>(line: &Line<'c>, n: usize) -> Line<'c> {
    Line { no: line.no, start: line.start + n, text: &line.text[n..], bad: line.bad }
}

/// A column-0 line that belongs to the module, not to a computation: a computation header, the
/// module header, a stack-frame table name or row. Inside a computation it means a missing '}'.
pub(super) fn starts_module_item(s: &[u8]) -> bool {
    s.starts_with(b"HloModule ") || s[0].is_ascii_digit() || Table::from_line(s).is_some() || comp_header(s).is_some() || comp_header(strip_line_comment(s)).is_some()
}

/// `s` without a trailing `// …` comment and the blanks before it (computation headers only:
/// they hold no strings).
pub(super) fn strip_line_comment(s: &[u8]) -> &[u8] {
    match memchr::memmem::find(s, b"//") {
        Some(p) => {
            let mut e = p;
            while e > 0 && matches!(s[e - 1], b' ' | b'\t') {
                e -= 1;
            }
            &s[..e]
        }
        None => s,
    }
}

/// `// -----` (blanks after it allowed): where FileCheck's `--split-input-file` cuts a test
/// input into modules; it ends the module before it.
pub(super) fn is_split_marker(s: &[u8]) -> bool {
    s.strip_prefix(b"// -----").is_some_and(|r| r.iter().all(|&b| b == b' ' || b == b'\t'))
}

/// `HloModule NAME` and a comment (`HloModule m // …`, as XLA's lexer takes it): (name, None).
pub(super) fn name_then_comment(text: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let s = text.strip_prefix(b"HloModule ")?;
    let e = s.iter().position(|b| b.is_ascii_whitespace()).unwrap_or(s.len());
    let rest = &s[e..];
    (e > 0 && skip_trivia_in_line(rest, 0).is_ok_and(|p| p == rest.len())).then_some((&s[..e], None))
}

/// `HloModule (\S+?)(?:, (.*))?$`: (name, attributes text).
pub(super) fn module_header(text: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let s = text.strip_prefix(b"HloModule ")?;
    let mut i = 0;
    while i < s.len() {
        if i > 0 && s[i..].starts_with(b", ") {
            return Some((&s[..i], Some(&s[i + 2..])));
        }
        if ws_len(s, i) > 0 {
            // `$` also matches before a final "\n"
            return (i > 0 && i + 1 == s.len() && s[i] == b'\n').then_some((&s[..i], None));
        }
        i += 1;
    }
    (i > 0).then_some((s, None))
}
