//! The files that say how a module was compiled (FORMATS.md §1.6, §1.6.1): `*.debug_options`
//! (the `DebugOptions` fields that differ from their defaults, one `field: value` line each),
//! the per-module folder's `compile_options.textproto` (the whole `CompileOptionsProto`, jax ≥
//! 0.10), the other protobuf text a compiler writes beside a module (libtpu's
//! `execution_options.txt`, `hlo_module_config.txt`, `tpu_comp_env.txt`, …, the GPU compiler's
//! `*.pbtxt`, `topology.textproto`: `NAMED_FILES`) and libtpu's `flagfile` (`--name=value`
//! lines). One `options` row per field: nested messages flattened into dotted keys
//! (`executable_build_options.debug_options.xla_backend_optimization_level`), a field printed
//! by number (`555: 0`, a field this protobuf schema does not know) keyed by its number, a
//! repeated field (or a `[a, b]` list) a row per element, the value as printed (a string
//! without its quotes, not unescaped: XLA does not escape them in `*.debug_options`, and a view
//! of the file costs nothing). `source` names the file (`NAMED_FILES`), else what its first line
//! says. Reference: `reference/options.py`.

use crate::driver::{checked_lines, feed, LineGrammar};
use crate::error::{FileCtx, Result};
use crate::lex::{bad, R};
use crate::tables::Tables;

/// The side files of a compile that are protobuf text (or flags), by the end of their name (a
/// leading `.`) or their whole base name, and the `options.source` of their rows. `files`
/// classifies these names too (`files::name`): module id and name, no stage.
pub const NAMED_FILES: [(&str, &str); 17] = [
    (".execution_options.txt", "execution_options"),
    (".hlo_module_config.txt", "hlo_module_config"),
    (".target_arguments.txt", "target_arguments"),
    (".tpu_comp_env.txt", "tpu_comp_env"),
    (".basic_compiler_metadata.txt", "basic_compiler_metadata"),
    (".transfer_stats.txt", "transfer_stats"),
    (".sparse_core_specific_metadata.txt", "sparse_core_specific_metadata"),
    (".host_transfers.txt", "host_transfers"),
    (".thunk_metadata.txt", "thunk_metadata"),
    (".priority_fusion_dump.txt", "priority_fusion_dump"),
    (".autotune_results.pbtxt", "autotune_results"),
    (".gpu_target_config.pbtxt", "gpu_target_config"),
    (".config.pbtxt", "hlo_module_config"),
    (".metadata.textproto", "module_metadata"),
    (".flagfile", "flagfile"),
    ("topology.textproto", "topology"),
    ("compile_options.textproto", "compile_options"),
];

/// The `source` a file's name gives (`NAMED_FILES`), if any.
pub fn source_of_name(path: &str) -> Option<&'static str> {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    NAMED_FILES.iter().find(|(s, _)| if s.starts_with('.') { base.ends_with(s) } else { base == *s }).map(|f| f.1)
}

/// The field of a line: `[A-Za-z_][A-Za-z0-9_]*`, a field number `[0-9]+` (protobuf's text
/// printer writes a field its schema lacks by number), or an extension / `Any` name in
/// brackets (`[type.googleapis.com/x.Y]`). Its length, 0 if none.
fn field_name(text: &[u8]) -> usize {
    match text.first() {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => text.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count(),
        Some(c) if c.is_ascii_digit() => text.iter().take_while(|c| c.is_ascii_digit()).count(),
        Some(b'[') => text.iter().position(|&c| c == b']').map_or(0, |i| i + 1),
        _ => 0,
    }
}

/// How a line opens a message: `NAME {` / `NAME <` (also `NAME: {`, as `*.debug_options`
/// prints a message field), giving the closer to expect.
fn opener(rest: &[u8]) -> Option<u8> {
    let rest = rest.strip_prefix(b":").unwrap_or(rest);
    match rest.strip_prefix(b" ").unwrap_or(rest) {
        b"{" => Some(b'}'),
        b"<" => Some(b'>'),
        _ => None,
    }
}

/// Where a `#` comment starts in what follows a field (outside quotes, a `\` escaping the next
/// byte), or its length. A value (after `:` and blanks) that is one whole quoted string has none: `*.debug_options`
/// does not escape its strings, so a quote inside one must not start a string.
fn comment_start(v: &[u8]) -> usize {
    let lead = v.iter().take_while(|c| matches!(c, b':' | b' ' | b'\t')).count();
    let w = &v[lead..];
    if w.len() >= 2 && matches!(w[0], b'"' | b'\'') && w[w.len() - 1] == w[0] {
        return v.len();
    }
    find_unquoted(v, 0, b'#').unwrap_or(v.len())
}

/// The first `want` at or after `from` that is outside quoted strings (`"…"`, `'…'`; a `\`
/// inside one escapes the next byte), `from` itself being outside one.
fn find_unquoted(v: &[u8], from: usize, want: u8) -> Option<usize> {
    let mut quote = 0u8;
    let mut i = from;
    while i < v.len() {
        let c = v[i];
        if quote != 0 {
            if c == b'\\' {
                i += 1;
            } else if c == quote {
                quote = 0;
            }
        } else if c == b'"' || c == b'\'' {
            quote = c;
        } else if c == want {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn trim_end(v: &[u8]) -> &[u8] {
    let n = v.iter().rposition(|c| !matches!(c, b' ' | b'\t')).map_or(0, |i| i + 1);
    &v[..n]
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v.iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
    trim_end(&v[s..])
}

/// A value without the quotes of a quoted string (`"…"` or `'…'`), as printed otherwise.
fn unquoted(v: &[u8]) -> &[u8] {
    match v {
        [q @ (b'"' | b'\''), inner @ .., e] if q == e => inner,
        v => v,
    }
}

/// The elements of a `[a, b, "c,d"]` list's inside: split at commas outside quotes.
fn list_items(inner: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(comma) = find_unquoted(inner, from, b',') {
        out.push(trim(&inner[from..comma]));
        from = comma + 1;
    }
    let last = trim(&inner[from.min(inner.len())..]);
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

struct Parser<'t, 'c> {
    ctx: FileCtx<'c>,
    t: &'t mut Tables,
    source: &'static str,
    /// libtpu's flag file: `--name=value` lines, no messages.
    flags: bool,
    /// The names of the open messages, outermost first (`a { b {` → ["a", "b"]), each with
    /// the byte that closes it (`}` or `>`).
    open: Vec<(&'c [u8], u8)>,
    /// Their key prefix, `a.b.` (rebuilt on open/close: messages are few).
    prefix: Vec<u8>,
    /// The `thunk_metadata { … }` message open in a `*.thunk_metadata.txt`, if any.
    thunk: Option<ThunkMeta<'c>>,
    /// Rows pushed so far: a message that closes with none since it opened is set and empty.
    rows: usize,
    /// Per open message: the row count and the line where it opened.
    opened_at: Vec<(usize, u64)>,
}

/// The fields of one `thunk_metadata { … }` message (a GPU `*.thunk_metadata.txt`), pushed as
/// its `thunk_metadata` row when it closes: the options rows alone cannot say which fields
/// belong together, because protobuf's printer omits a field at its default (no `thunk_id`
/// for id 0, no `profile_annotation` when empty).
#[derive(Default)]
struct ThunkMeta<'c> {
    line: u64,
    thunk_id: Option<i64>,
    instruction: Option<&'c [u8]>,
    kind: Option<&'c [u8]>,
}

impl<'c> ThunkMeta<'c> {
    /// Take a field of the message (`key` the dotted name below `thunk_metadata.`).
    fn field(&mut self, key: &[u8], value: &'c [u8]) {
        match key {
            b"thunk_info.thunk_id" => self.thunk_id = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()),
            b"thunk_info.profile_annotation" => self.instruction = Some(value),
            b"thunk_kind" => self.kind = Some(value),
            _ => {}
        }
    }

    fn push(self, ctx: &FileCtx<'c>, t: &mut Tables) {
        let src = ctx.src;
        let m = &mut t.thunk_metadata;
        m.file_id.push(ctx.file_id);
        m.thunk_id.push(self.thunk_id);
        m.instruction.push_opt(&src, self.instruction);
        m.kind.push_opt(&src, self.kind);
        m.line.push(self.line as i32);
    }
}

/// What a file's first line says it is (as `formats::sniff` decided): its `source` when its
/// name says nothing, and whether it is a flag file.
fn source_of_content(first: &[u8]) -> (&'static str, bool) {
    if first.starts_with(b"--") {
        ("flagfile", true)
    } else if is_compile_options_line(first) {
        ("compile_options", false)
    } else if first.starts_with(b"xla_") {
        ("debug_options", false)
    } else {
        ("proto_text", false)
    }
}

/// Parse one options file (`FormatSpec::parse`).
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let lines = checked_lines(data, &ctx, &mut t.errors)?;
    let first = lines.clone().map(|l| l.text).find(|l| !l.iter().all(u8::is_ascii_whitespace)).unwrap_or(b"");
    let (by_content, flags) = source_of_content(first);
    let source = source_of_name(ctx.path).unwrap_or(by_content);
    let mut p = Parser { ctx, t, source, flags, open: Vec::new(), prefix: Vec::new(), thunk: None, rows: 0, opened_at: Vec::new() };
    let last = feed(&mut p, lines)?;
    if !p.open.is_empty() {
        let msg = format!("the file ends inside message '{}' (a '{}' is missing: cut short?)", String::from_utf8_lossy(&p.prefix[..p.prefix.len() - 1]), p.open[p.open.len() - 1].1 as char);
        p.ctx.error_at(&mut p.t.errors, last.max(1), 1, msg, b"")?;
    }
    Ok(())
}

impl<'t, 'c> Parser<'t, 'c> {
    fn rebuild_prefix(&mut self) {
        self.prefix.clear();
        for (name, _) in &self.open {
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
        self.rows += 1;
        if let (Some(m), Some(k)) = (self.thunk.as_mut(), key.strip_prefix(b"thunk_metadata.")) {
            m.field(k, value);
        }
    }

    /// A message opens; a top-level `thunk_metadata {` of a `*.thunk_metadata.txt` starts a
    /// `thunk_metadata` row.
    fn open(&mut self, no: u64, name: &'c [u8], closer: u8) {
        self.opened_at.push((self.rows, no));
        self.open.push((name, closer));
        self.rebuild_prefix();
        if self.source == "thunk_metadata" && self.open.len() == 1 && name == b"thunk_metadata" {
            self.thunk = Some(ThunkMeta { line: no, ..ThunkMeta::default() });
        }
    }

    /// `--name=value` (a flag without `=`: value empty, as printed).
    fn flag(&mut self, no: u64, start: usize, body: &'c [u8]) -> R<()> {
        let Some(flag) = body.strip_prefix(b"--") else {
            return bad(start, "expected a flag ('--name=value')");
        };
        let n = field_name(flag);
        if n == 0 || !(flag.len() == n || flag[n] == b'=') {
            return bad(start + 2, "expected a flag name ('--name=value')");
        }
        self.row(no, &flag[..n], flag.get(n + 1..).unwrap_or(b""));
        Ok(())
    }

    /// `}` or `>`: closes the innermost message, with the byte it opened with.
    fn close(&mut self, start: usize, closer: u8) -> R<()> {
        match self.open.last() {
            Some(&(name, want)) if want == closer => {
                self.open.pop();
                self.rebuild_prefix();
                // a message set and empty (`host_dma_sizes { }`) is a row with the value `{}`:
                // a file of empty messages (libtpu's transfer_stats.txt) is not silent
                let (rows_before, line) = self.opened_at.pop().unwrap_or((self.rows, 0));
                if self.rows == rows_before {
                    self.row(line, name, b"{}");
                }
                if self.open.is_empty() {
                    if let Some(m) = self.thunk.take() {
                        m.push(&self.ctx, self.t);
                    }
                }
                Ok(())
            }
            Some(&(_, want)) => bad(start, format!("'{}' where '{}' closes the open message", closer as char, want as char)),
            None => bad(start, format!("'{}' closes no message", closer as char)),
        }
    }

    /// `NAME: [a, b]`: a row per element (`[]` none); a list of messages is not read.
    fn list(&mut self, no: u64, at: usize, name: &[u8], value: &'c [u8]) -> R<()> {
        let Some(inner) = value.strip_prefix(b"[").and_then(|v| v.strip_suffix(b"]")) else {
            return bad(at, "a list ('[…]') must close on its line");
        };
        for item in list_items(inner) {
            if item.is_empty() || matches!(item[0], b'{' | b'<') {
                return bad(at, "expected a scalar in the list (messages in a list are not read)");
            }
            self.row(no, name, unquoted(item));
        }
        Ok(())
    }
}

impl<'t, 'c> LineGrammar<'c> for Parser<'t, 'c> {
    /// `NAME: VALUE`, `NAME {` / `NAME <`, `}` / `>`, `NAME: [a, b]`, blank lines and `#`
    /// comments (also after a value); indentation is not significant. A flag file: `--NAME=VALUE`.
    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()> {
        let start = text.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
        let body = &text[start..];
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.is_empty() || body.starts_with(b"#") {
            return Ok(());
        }
        if self.flags {
            return self.flag(no, start, trim_end(body));
        }
        if let [c @ (b'}' | b'>')] = trim_end(body) {
            return self.close(start, *c);
        }
        let n = field_name(body);
        if n == 0 {
            return bad(start, "expected a field name or number ('NAME: VALUE', 'NAME {', '}' or '>')");
        }
        let name = &body[..n];
        let rest = &body[n..];
        let rest = trim_end(&rest[..comment_start(rest)]);
        if let Some(closer) = opener(rest) {
            self.open(no, name, closer);
            return Ok(());
        }
        let Some(value) = rest.strip_prefix(b": ").or_else(|| rest.strip_prefix(b":")) else {
            return bad(start + n, "expected ': VALUE', ' {' or ' <' after the field name");
        };
        if value.starts_with(b"[") {
            return self.list(no, start + n, name, value);
        }
        self.row(no, name, unquoted(value));
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
pub const COMPILE_OPTIONS_STARTS: [&[u8]; 3] = [b"executable_build_options {", b"argument_layouts {", b"parameter_is_tupled_arguments: "];

pub fn is_compile_options_line(line: &[u8]) -> bool {
    COMPILE_OPTIONS_STARTS.iter().any(|p| line.starts_with(p))
}

/// A line of protobuf text, as the content rule sees it: a field (name, number or `[…]`),
/// then `: ` and a value, or a message opener; or a closer. The value must be one token (a
/// number, a name, `true`, a quoted string) or a list, so that prose (`Note: the …`) and
/// most YAML is not taken for it.
fn is_proto_text_line(line: &[u8]) -> bool {
    let body = trim(line.strip_suffix(b"\r").unwrap_or(line));
    if matches!(body, b"}" | b">") {
        return true;
    }
    let n = field_name(body);
    if n == 0 {
        return false;
    }
    let rest = &body[n..];
    let rest = trim_end(&rest[..comment_start(rest)]);
    if opener(rest).is_some() {
        return true;
    }
    let Some(v) = rest.strip_prefix(b": ") else {
        return false;
    };
    let quoted = v.len() >= 2 && matches!(v[0], b'"' | b'\'') && v[v.len() - 1] == v[0];
    let list = v.starts_with(b"[") && v.ends_with(b"]");
    let token = !v.is_empty() && v.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'.'));
    quoted || list || token
}

/// `NAME {` / `NAME <` alone on a line.
fn is_opener_line(line: &[u8]) -> bool {
    let t = trim(line.strip_suffix(b"\r").unwrap_or(line));
    let n = field_name(t);
    n > 0 && opener(&t[n..]).is_some()
}

/// The first two lines of protobuf text (a content rule, tried after every format's prefixes
/// and lines): both protobuf-text lines (`is_proto_text_line`), or a one-line file.
pub fn is_proto_text_start(first: &[u8], second: Option<&[u8]>) -> bool {
    match second {
        // `module {` then `}` is an empty MLIR module as much as an empty message: a first
        // message must hold a field
        Some(second) => is_proto_text_line(first) && is_proto_text_line(second) && !(is_opener_line(first) && matches!(trim(second.strip_suffix(b"\r").unwrap_or(second)), b"}" | b">")),
        // a lone `NAME {` is no more protobuf than an HLO computation header cut short
        None => is_proto_text_line(first) && !is_opener_line(first) && !matches!(trim(first), b"}" | b">"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (rows, errors) of a text read as a `compile_options.textproto` (the values themselves
    /// are compared with the reference's in tests/test_accel_files.py).
    fn rows(text: &str) -> (usize, usize) {
        let mut t = Tables::default();
        let mut ctx = FileCtx::for_test(true);
        ctx.path = "module_0000.jit_f.cl_1/compile_options.textproto";
        parse(text.as_bytes(), ctx, &mut t).unwrap();
        (t.options.len(), t.errors.file_id.0.len())
    }

    #[test]
    fn numbered_fields_lists_angles_comments() {
        let text = "executable_build_options {\n  debug_options {\n    xla_x: 1\n    555: 0 # a comment\n  }\n  v: [1, \"a,b\", 'c']\n  m <\n    s: \"q\\\"# r\"\n  >\n  [ext.y] {\n    z: E\n  }\n}\n";
        assert_eq!(rows(text), (7, 0));
        assert_eq!(source_of_name("a/module_0000.jit_f.cl_1/compile_options.textproto"), Some("compile_options"));
        assert_eq!(source_of_name("module_0000.jit_f.cl_1.execution_options.txt"), Some("execution_options"));
        assert_eq!(source_of_name("x.debug_options"), None);
    }

    #[test]
    fn closers_must_match() {
        assert_eq!(rows("a <\n}\n"), (0, 2)); // the wrong closer, then cut short
        assert_eq!(rows("--x=1\n--y\n"), (2, 0)); // a flag file, by its first line
    }

    #[test]
    fn proto_text_rule() {
        assert!(is_proto_text_start(b"num_replicas: 1", Some(b"device_assignment {")));
        assert!(is_proto_text_start(b"version: 3", None));
        assert!(is_proto_text_start(b"platform_name: \"tpu\"", Some(b"}")));
        assert!(!is_proto_text_start(b"Note: the file is", None));
        assert!(!is_proto_text_start(b"a: 1", Some(b"- item")));
        assert!(!is_proto_text_start(b"module {", Some(b"}"))); // an empty MLIR module
        assert!(!is_proto_text_start(b"fusion {", None));
    }
}
