//! The files that say how a module was compiled (FORMATS.md §2.12): `*.debug_options` (the
//! `DebugOptions` fields that differ from their defaults, one `field: value` line each) and the
//! per-module folder's `compile_options.textproto` (the whole `CompileOptionsProto` as protobuf
//! text, jax ≥ 0.10). One `options` row per field: nested messages flattened into dotted keys
//! (`executable_build_options.debug_options.xla_backend_optimization_level`), a repeated field
//! a row per element, the value as printed (a string without its quotes; XLA does not escape
//! them in `*.debug_options`, so nothing is unescaped). Reference: `reference/options.py`.

use crate::driver::{checked_lines, feed, LineGrammar};
use crate::error::{FileCtx, Result};
use crate::lex::{bad, R};
use crate::tables::Tables;

/// `[A-Za-z_][A-Za-z0-9_]*`: a protobuf field name.
fn field_name(text: &[u8]) -> usize {
    match text.first() {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => text.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count(),
        _ => 0,
    }
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    source: &'static str,
    /// The names of the open messages, outermost first (`a { b {` → ["a", "b"]).
    open: Vec<&'c [u8]>,
    /// Their key prefix, `a.b.` (rebuilt on open/close: messages are few).
    prefix: Vec<u8>,
}

/// Parse one options file (`FormatSpec::parse`): which of the two it is, its first line says
/// (as `formats::sniff` decided).
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let first = lines.clone().map(|l| l.text).find(|l| !l.iter().all(u8::is_ascii_whitespace)).unwrap_or(b"");
    let source = if is_compile_options_line(first) { "compile_options" } else { "debug_options" };
    let mut p = Parser { ctx, t, source, open: Vec::new(), prefix: Vec::new() };
    let last = feed(&mut p, lines)?;
    if !p.open.is_empty() {
        let msg = format!("the file ends inside message '{}' (a '}}' is missing: cut short?)", String::from_utf8_lossy(&p.prefix[..p.prefix.len() - 1]));
        p.ctx.error_at(&mut p.t.errors, last.max(1), 1, msg, b"")?;
    }
    Ok(())
}

impl<'t, 'c> Parser<'t, 'c> {
    fn rebuild_prefix(&mut self) {
        self.prefix.clear();
        for name in &self.open {
            self.prefix.extend_from_slice(name);
            self.prefix.push(b'.');
        }
    }

    fn row(&mut self, no: u64, name: &[u8], value: &'c [u8]) {
        let src = self.ctx.src;
        let o = &mut self.t.options;
        let mut key = self.prefix.clone();
        key.extend_from_slice(name);
        o.file_id.push(self.ctx.file_id);
        o.source.push(self.source);
        o.key.push(String::from_utf8_lossy(&key).into_owned());
        o.value.push(&src, value);
        o.line.push(no as i32);
    }
}

impl<'t, 'c> LineGrammar<'c> for Parser<'t, 'c> {
    /// `NAME: VALUE`, `NAME {` (also `NAME: {`, as `*.debug_options` prints a message field),
    /// `}`, blank lines; indentation is not significant.
    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let start = text.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
        let body = &text[start..];
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.is_empty() || body.starts_with(b"#") {
            return Ok(());
        }
        if body == b"}" {
            if self.open.pop().is_none() {
                return bad(start, "'}' closes no message");
            }
            self.rebuild_prefix();
            return Ok(());
        }
        let n = field_name(body);
        if n == 0 {
            return bad(start, "expected a field name ('NAME: VALUE', 'NAME {' or '}')");
        }
        let name = &body[..n];
        let rest = &body[n..];
        if rest == b" {" || rest == b": {" || rest == b"{" {
            self.open.push(name);
            self.rebuild_prefix();
            return Ok(());
        }
        let Some(value) = rest.strip_prefix(b": ").or_else(|| rest.strip_prefix(b":")) else {
            return bad(start + n, "expected ': VALUE' or ' {' after the field name");
        };
        let value = match value {
            [b'"', inner @ .., b'"'] => inner,
            v => v,
        };
        self.row(no, name, value);
        Ok(())
    }

    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()> {
        self.ctx.error_at(&mut self.t.errors, line, column, msg, text)
    }

    fn tables(&mut self) -> &mut Tables {
        self.t
    }
}

/// The first line of a `compile_options.textproto`: `CompileOptionsProto` prints its fields in
/// field order, and every file XLA writes holds `executable_build_options` (field 3); the
/// fields before it (`argument_layouts`, `parameter_is_tupled_arguments`) start it when set.
pub fn is_compile_options_line(line: &[u8]) -> bool {
    [&b"executable_build_options {"[..], b"argument_layouts {", b"parameter_is_tupled_arguments: "]
        .iter()
        .any(|p| line.starts_with(p))
}
