//! Recognising a file by its content (FORMATS.md §1.5): the rules are the registry's (each
//! format's `FormatSpec::sniff`, and `UNNAMED`'s for kinds the `files` table names but no
//! format parses); this module only finds the lines they are tried on.
//!
//! The reference (`python/hlodump/reference/files.py`, `sniff`) implements the same rules
//! independently; `tests/test_files.py` checks the two agree on the corpus.

use super::{Format, UNPARSED};

/// What a file is, judged by its first non-blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContentKind {
    HloModule,
    HloProto,
    BufferAssignment,
    BufferAssignmentValues,
    LiveRange,
    MemoryUsageReport,
    MemoryUsageReportProto,
    DebugOptions,
    CompileOptions,
    /// Other protobuf text (a compiler's side files: `options::NAMED_FILES`).
    ProtoText,
    /// libtpu's `flagfile`: `--name=value` lines.
    Flagfile,
    StdoutCapture,
    ThunkSequence,
    OomReport,
    Unknown,
    Empty,
}

impl ContentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ContentKind::HloModule => "hlo_module",
            ContentKind::HloProto => "hlo_proto",
            ContentKind::BufferAssignment => "buffer_assignment",
            ContentKind::BufferAssignmentValues => "buffer_assignment_values",
            ContentKind::LiveRange => "live_range",
            ContentKind::MemoryUsageReport => "memory_usage_report",
            ContentKind::MemoryUsageReportProto => "memory_usage_report_proto",
            ContentKind::DebugOptions => "debug_options",
            ContentKind::CompileOptions => "compile_options",
            ContentKind::ProtoText => "proto_text",
            ContentKind::Flagfile => "flagfile",
            ContentKind::StdoutCapture => "stdout_capture",
            ContentKind::ThunkSequence => "thunk_sequence",
            ContentKind::OomReport => "oom_report",
            ContentKind::Unknown => "unknown",
            ContentKind::Empty => "empty",
        }
    }
}

/// How content of a kind is recognised: by its first deciding line (`deciding_lines`: after a
/// byte-order mark, blank lines and leading HLO comments), or by text anywhere in a file whose
/// first line is none of ours.
pub struct Sniff {
    /// (first-line prefix, exact second line, kind): where two kinds share a first line, the
    /// second decides. Tried before any prefix.
    pub second_line: &'static [(&'static [u8], &'static [u8], ContentKind)],
    /// A first line that starts with one of these is of that kind.
    pub prefixes: &'static [(&'static [u8], ContentKind)],
    /// A first line this accepts is of that kind (tried after every prefix of every format).
    pub line: Option<(fn(&[u8]) -> bool, ContentKind)>,
    /// (first line, the line after it) this accepts are of that kind: tried when no prefix or
    /// line test knows the first line, before the markers.
    pub fallback: Option<(fn(&[u8], Option<&[u8]>) -> bool, ContentKind)>,
    /// Text that marks the kind anywhere in a file whose first line is none of ours (a log).
    pub anywhere: &'static [&'static [u8]],
    /// The kind `anywhere` gives.
    pub anywhere_kind: ContentKind,
    /// (test of the file's first bytes, kind): a binary format, tried before any line rule.
    pub binary: Option<(fn(&[u8]) -> bool, ContentKind)>,
}

impl Sniff {
    /// Recognises nothing (a field default for `FormatSpec`s).
    pub const NONE: Sniff = Sniff { second_line: &[], prefixes: &[], line: None, fallback: None, anywhere: &[], anywhere_kind: ContentKind::Unknown, binary: None };
}

/// Every content rule: the formats' in registry order, then those of the kinds no format parses.
fn rules() -> impl Iterator<Item = &'static Sniff> {
    Format::ALL.into_iter().map(|f| &f.spec().sniff).chain(std::iter::once(&UNPARSED))
}

fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|&c| matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c))
}

/// The UTF-8 byte-order mark some editors put first; XLA never writes one, we skip it.
pub const BOM: &[u8] = b"\xef\xbb\xbf";

/// Where a file's text starts: after a UTF-8 byte-order mark, if any.
pub fn text_start(data: &[u8]) -> usize {
    if data.starts_with(BOM) {
        BOM.len()
    } else {
        0
    }
}

fn sniff_line(line: &[u8]) -> ContentKind {
    rules()
        .flat_map(|r| r.prefixes)
        .find(|(p, _)| line.starts_with(p))
        .map(|&(_, k)| k)
        .or_else(|| rules().filter_map(|r| r.line).find(|(accepts, _)| accepts(line)).map(|(_, k)| k))
        .unwrap_or(ContentKind::Unknown)
}

/// A first line whose kind its second line decides (`Sniff::second_line`).
fn decided_by_second_line(line: &[u8]) -> bool {
    rules().flat_map(|r| r.second_line).any(|(p, _, _)| line.starts_with(p))
}

fn by_two_lines(line: &[u8], second: &[u8]) -> Option<ContentKind> {
    rules().flat_map(|r| r.second_line).find(|(p, s, _)| line.starts_with(p) && second == *s).map(|&(_, _, k)| k)
}

/// A binary format's content rule (`Sniff::binary`), tried first.
fn by_binary(data: &[u8]) -> Option<ContentKind> {
    rules().filter_map(|r| r.binary).find(|(accepts, _)| accepts(data)).map(|(_, k)| k)
}

fn by_marker(data: &[u8]) -> Option<ContentKind> {
    rules().find(|r| r.anywhere.iter().any(|m| memchr::memmem::find(data, m).is_some())).map(|r| r.anywhere_kind)
}

/// The deciding lines of a file: its first non-blank line that is not an HLO comment
/// (`// …` lines and `/* … */` blocks may precede `HloModule`), and the next non-blank line
/// after it. Each is (text, complete: ended by '\n').
fn deciding_lines(data: &[u8]) -> [Option<(&[u8], bool)>; 2] {
    let mut out = [None, None];
    let mut pos = text_start(data);
    let mut in_block_comment = false;
    let mut k = 0;
    while pos < data.len() && k < 2 {
        let (end, complete) = match memchr::memchr(b'\n', &data[pos..]) {
            Some(o) => (pos + o, true),
            None => (data.len(), false),
        };
        let line = &data[pos..end];
        pos = end + 1;
        let trimmed = &line[line.iter().take_while(|&&b| b == b' ' || b == b'\t').count()..];
        if k == 0 && in_block_comment {
            if let Some(i) = memchr::memmem::find(line, b"*/") {
                in_block_comment = false;
                if !is_blank(&line[i + 2..]) {
                    return out; // code after a block comment on one line: not a plain header
                }
            }
            continue;
        }
        if is_blank(line) {
            continue;
        }
        if k == 0 && trimmed.starts_with(b"//") {
            continue;
        }
        if k == 0 && trimmed.starts_with(b"/*") {
            match memchr::memmem::find(&trimmed[2..], b"*/") {
                Some(i) if is_blank(&trimmed[2 + i + 2..]) => continue,
                Some(_) => {}
                None => {
                    in_block_comment = true;
                    continue;
                }
            }
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        out[k] = Some((line, complete));
        k += 1;
    }
    out
}

/// The content kind of a file from its first deciding line (after a byte-order mark, blank
/// lines and leading comments; blank: only spaces, tabs, CR, VT, FF), the line after it where
/// that is needed (`Total bytes used:` starts both the values file and the memory-usage report
/// of jax 0.4.35–0.9), and — for text that is none of our formats — an out-of-memory report
/// anywhere in `data` (a log).
pub fn sniff(data: &[u8]) -> ContentKind {
    if let Some(k) = by_binary(data) {
        return k;
    }
    let [first, second] = deciding_lines(data);
    let Some((line, _)) = first else {
        return by_marker(data).unwrap_or(ContentKind::Empty);
    };
    if let Some(k) = second.and_then(|(s, _)| by_two_lines(line, s)) {
        return k;
    }
    match sniff_line(line) {
        ContentKind::Unknown => rules()
            .filter_map(|r| r.fallback)
            .find(|(accepts, _)| accepts(line, second.map(|(l, _)| l)))
            .map(|(_, k)| k)
            .or_else(|| by_marker(data))
            .unwrap_or(ContentKind::Unknown),
        k => k,
    }
}

/// True when `prefix`, the start of a file, already decides `sniff`: `sniff(prefix) ==
/// sniff(whole file)`. A file that looks like none of our formats is never decided by a
/// prefix (an out-of-memory report may come later in a log).
pub fn sniff_is_final(prefix: &[u8]) -> bool {
    if by_binary(prefix).is_some() {
        return true; // the test reads the first bytes only: a longer file passes it too
    }
    let [first, second] = deciding_lines(prefix);
    let Some((line, true)) = first else { return false };
    if decided_by_second_line(line) {
        return second.is_some_and(|(_, complete)| complete);
    }
    sniff_line(line) != ContentKind::Unknown
}

#[cfg(test)]
mod tests {
    // (Runs of `assert_eq!(s(…), "kind")` look alike to a copy finder: each is its own case.)
    use super::*;

    #[test]
    fn sniff_kinds() {
        let s = |d: &[u8]| sniff(d).as_str();
        assert_eq!(s(b""), "empty");
        assert_eq!(s(b"\n \n\t\r\n"), "empty");
        assert_eq!(s(b"HloModule jit_f, is_scheduled=true\n"), "hlo_module");
        assert_eq!(s(b"\r\n\nHloModule m"), "hlo_module");
        assert_eq!(s(b"HloModule"), "unknown");
        // header-less modules (XLA's test inputs): a computation header, then an instruction
        assert_eq!(s(b"// RUN: x\nfusion {\n  %p0 = f32[] parameter(0)\n"), "hlo_module");
        assert_eq!(s(b"ENTRY %main (a: f32[]) -> f32[] {\n  ROOT a = f32[] parameter(0)\n}\n"), "hlo_module");
        assert_eq!(s(b"ENTRY {\n  ROOT = f32[] parameter(0)\n"), "hlo_module"); // ENTRY / ROOT as names
        assert_eq!(s(b"module {\n  func.func @main() {\n"), "unknown"); // MLIR
        assert_eq!(s(b"fusion {\n"), "unknown"); // no instruction after it
        assert_eq!(s(b"BufferAssignment:\nallocation 0"), "buffer_assignment");
        assert_eq!(
            s(b"\nTotal bytes used: 160 (160B)\n"),
            "buffer_assignment_values"
        );
        assert_eq!(s(b"HloLiveRange (max 4):\n"), "live_range");
        assert_eq!(
            s(b"HloLiveRange not available (finalized or constructed from proto)"),
            "live_range"
        );
        assert_eq!(
            s(b"Memory Space: default (color=0)\n"),
            "memory_usage_report"
        );
        assert_eq!(
            s(b"memory_space_allocation_entries {\n"),
            "memory_usage_report"
        );
        assert_eq!(
            s(b"*** Begin module_0000.jit_f.before_optimizations.txt ***\n"),
            "stdout_capture"
        );
        assert_eq!(s(b"xla_cpu_enable_fast_min_max: false\n"), "debug_options");
        assert_eq!(s(b"xla_dump_to: \"/tmp/x\"\n"), "debug_options");
        assert_eq!(s(b"xla_gpu_foo: {\n  a: 1\n}\n"), "debug_options");
        assert_eq!(s(b"xla_dump_to:\"x\"\n"), "unknown");
        assert_eq!(s(b"xla-dump: 1\n"), "unknown");
        assert_eq!(s(b"platform_id: 179101572333\n"), "proto_text"); // topology.textproto
        assert_eq!(s(b"num_replicas: 1\ndevice_assignment {\n"), "proto_text");
        assert_eq!(s(b"host_dma_sizes {\n  non_loop_buckets {\n"), "proto_text");
        assert_eq!(s(b"Note: see below\n"), "unknown"); // prose is not a value
        assert_eq!(s(b"--xla_foo=1\n--xla_bar='x'\n"), "flagfile");
        assert_eq!(s(b"executable_build_options {\n"), "compile_options");
        assert_eq!(s(b"argument_layouts {\n"), "compile_options");
        assert_eq!(s(b"#loc1 = loc(\"a\")\n"), "unknown");
        assert_eq!(s(b" HloModule m\n"), "hlo_module"); // XLA's lexer skips the blanks
        assert_eq!(s(b"\x00\x01\x02binary"), "unknown");
        // only the first non-blank line counts
        assert_eq!(s(b"junk\nHloModule m\n"), "unknown");
    }

    #[test]
    fn sniff_is_final_only_with_a_complete_non_blank_line() {
        assert!(!sniff_is_final(b""));
        assert!(!sniff_is_final(b"\n \n\t\r\n"));
        assert!(!sniff_is_final(b"HloModule"));
        assert!(!sniff_is_final(b"\n\nHloModule m, x"));
        assert!(sniff_is_final(b"HloModule m\n"));
        assert!(!sniff_is_final(b"\r\n junk\nmore")); // unknown text: an OOM report may follow
    }

    #[test]
    fn sniff_long_first_line() {
        let mut v = b"HloModule m, ".to_vec();
        v.extend(std::iter::repeat_n(b'x', 5 << 20));
        assert_eq!(sniff(&v), ContentKind::HloModule);
    }

    /// Every content kind but `unknown` and `empty` has a rule, every format's content kinds
    /// are the ones its rules give, and a first line no rule knows is `unknown`.
    #[test]
    fn the_rules_name_every_kind() {
        let given = |r: &Sniff| -> Vec<ContentKind> {
            let mut k: Vec<ContentKind> = r.prefixes.iter().map(|p| p.1).chain(r.second_line.iter().map(|s| s.2)).chain(r.line.map(|l| l.1)).chain(r.fallback.map(|f| f.1)).chain(r.binary.map(|b| b.1)).collect();
            if !r.anywhere.is_empty() {
                k.push(r.anywhere_kind);
            }
            k
        };
        for f in Format::ALL {
            let mut got = given(&f.spec().sniff);
            got.sort_by_key(|k| k.as_str());
            got.dedup();
            let mut want = f.spec().contents.to_vec();
            want.sort_by_key(|k| k.as_str());
            assert_eq!(got, want, "{}", f.name());
        }
        let mut unparsed = given(&UNPARSED);
        unparsed.sort_by_key(|k| k.as_str());
        assert_eq!(unparsed, [ContentKind::StdoutCapture]);
        assert_eq!(sniff_line(b"none of ours"), ContentKind::Unknown);
    }

    #[test]
    fn kind_strings() {
        assert_eq!(ContentKind::StdoutCapture.as_str(), "stdout_capture");
    }
}
