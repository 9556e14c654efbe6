//! The format registry: every file format hlodump parses, and all the reader, the chunk
//! splitter, `tables=` and the Python edge need to know about each — also how each is
//! recognised (`FormatSpec::sniff`; `sniff.rs` finds the lines those rules are tried on).
//!
//! A format is recognised by its content, produces a fixed set of tables, is parsed by one
//! function, may size its tables once for a group of small files, and may know how to cut a
//! big file into chunks. File *names* are classified separately (`files`); a name never
//! decides which parser runs.
//!
//! Adding a format (the reference parser has the same registry in
//! `python/hlodump/reference/formats.py`; `tests/test_files.py` holds the two equal):
//! 1. write its module (`src/<format>/mod.rs`) with `pub fn parse(data, ctx, tables)`;
//! 2. add a variant to `Format`, its `FormatSpec` in `Format::spec` (content rules included)
//!    and its content kinds to `ContentKind` — the compiler then points at every `match` that
//!    must learn about it;
//! 3. add its tables to `tables.rs`/`schema.py`/`docs/API.md`.

pub mod sniff;

pub use sniff::{sniff, sniff_is_final, text_start, ContentKind, Sniff, BOM};

use crate::error::{FileCtx, Result};
use crate::tables::Tables;

/// A parsed file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// HLO module text (FORMATS.md §3).
    HloModule,
    /// HLO protos, `*.hlo.pb` (docs/protos.md).
    HloProto,
    /// Buffer assignment, its values file and the live-range file (§2.1–§2.7).
    BufferAssignment,
    /// The memory-usage report in all its layouts (§2.8).
    MemoryReport,
    /// The memory-usage report as a proto, `*-memory-usage-report.pb` (docs/protos.md).
    MemoryReportProto,
    /// A GPU thunk sequence (`*.thunk_sequence.txt`, §2.11).
    ThunkSequence,
    /// XLA's out-of-memory report, alone or inside a log (§2.9).
    OomReport,
    /// How a module was compiled: `*.debug_options`, `compile_options.textproto` (§2.12).
    Options,
}

/// Parse a whole file into the table set.
pub type ParseFn = for<'c> fn(&'c [u8], FileCtx<'c>, &mut Tables) -> Result<()>;

/// Parse a big file in chunks on the thread pool (defined with the format-independent part of
/// chunking, which calls it).
pub use crate::split::SplitFn;

/// Size a group's tables once for all of this format's files in it (their bytes; the reader
/// sniffs them only as the hook draws on the iterator): called for a group of small files
/// sharing one table set; each file's parse is then told (`FileCtx::presized`) not to size
/// them again. False: nothing was sized.
pub type PresizeFn = fn(&mut Tables, &mut dyn Iterator<Item = &[u8]>) -> bool;

/// What the reader needs to know of a format.
pub struct FormatSpec {
    /// The registry name (`format` in the reference's `FORMATS`; the `known formats` of the
    /// error for a file that is none of them).
    pub name: &'static str,
    /// The content kinds (`files.content_kind`) this format reads.
    pub contents: &'static [ContentKind],
    /// How those contents are recognised.
    pub sniff: Sniff,
    /// The tables it can fill (besides `files` and `errors`).
    pub tables: &'static [&'static str],
    pub parse: ParseFn,
    /// Size the tables once for a group of small files, if that saves regrowing them per file.
    pub presize: Option<PresizeFn>,
    /// How to cut a big file into chunks, if the format can be.
    pub split: Option<SplitFn>,
}

impl Format {
    /// Every format, in registry order.
    pub const ALL: [Format; 8] = [Format::HloModule, Format::HloProto, Format::BufferAssignment, Format::MemoryReport, Format::MemoryReportProto, Format::ThunkSequence, Format::OomReport, Format::Options];

    pub fn spec(self) -> &'static FormatSpec {
        match self {
            Format::HloModule => &FormatSpec {
                name: "hlo_module",
                contents: &[ContentKind::HloModule],
                sniff: Sniff {
                    prefixes: &[(b"HloModule ", ContentKind::HloModule)],
                    // `  HloModule m`, or a module without header (XLA's parser takes both)
                    fallback: Some((crate::hlo::is_module_start, ContentKind::HloModule)),
                    ..Sniff::NONE
                },
                tables: &["modules", "computations", "instructions", "stack_frames", "custom_calls"],
                parse: crate::hlo::parse,
                presize: Some(crate::hlo::presize),
                split: Some(crate::hlo::split::parse),
            },
            Format::HloProto => &FormatSpec {
                name: "hlo_proto",
                contents: &[ContentKind::HloProto],
                sniff: Sniff { binary: Some((crate::hlo_proto::is_hlo_proto, ContentKind::HloProto)), ..Sniff::NONE },
                tables: &["modules", "computations", "instructions", "stack_frames", "custom_calls", "allocations", "assignments", "heap_trace"],
                parse: crate::hlo_proto::parse,
                presize: None,
                split: None,
            },
            Format::BufferAssignment => &FormatSpec {
                name: "buffer_assignment",
                contents: &[ContentKind::BufferAssignment, ContentKind::BufferAssignmentValues, ContentKind::LiveRange],
                sniff: Sniff {
                    prefixes: &[
                        (b"BufferAssignment:", ContentKind::BufferAssignment),
                        (b"Total bytes used: ", ContentKind::BufferAssignmentValues),
                        (b"HloLiveRange (max ", ContentKind::LiveRange),
                        (b"HloLiveRange not available", ContentKind::LiveRange),
                    ],
                    ..Sniff::NONE
                },
                tables: &["allocations", "assignments", "values", "schedule", "live_ranges", "peak", "peak_breakdown", "totals"],
                parse: crate::buffer_assignment::parse,
                presize: None,
                split: Some(crate::buffer_assignment::split::parse),
            },
            Format::MemoryReport => &FormatSpec {
                name: "memory_report",
                contents: &[ContentKind::MemoryUsageReport],
                sniff: Sniff {
                    // the memory-usage report of jax 0.4.35–0.9 starts as the values file does
                    second_line: &[(b"Total bytes used: ", b"Allocations sorted by size:", ContentKind::MemoryUsageReport)],
                    prefixes: &[(b"Memory Space: ", ContentKind::MemoryUsageReport), (b"memory_space_allocation_entries", ContentKind::MemoryUsageReport)],
                    ..Sniff::NONE
                },
                tables: &["memory_report", "totals"],
                parse: crate::memory_report::parse,
                presize: None,
                split: None,
            },
            Format::MemoryReportProto => &FormatSpec {
                name: "memory_report_proto",
                contents: &[ContentKind::MemoryUsageReportProto],
                sniff: Sniff { binary: Some((crate::hlo_proto::memory_report::is_memory_report_proto, ContentKind::MemoryUsageReportProto)), ..Sniff::NONE },
                tables: &["memory_report", "totals"],
                parse: crate::hlo_proto::memory_report::parse,
                presize: None,
                split: None,
            },
            Format::ThunkSequence => &FormatSpec {
                name: "thunk_sequence",
                contents: &[ContentKind::ThunkSequence],
                sniff: Sniff {
                    prefixes: &[(b"No thunks.", ContentKind::ThunkSequence)],
                    line: Some((crate::thunks::is_first_line, ContentKind::ThunkSequence)),
                    ..Sniff::NONE
                },
                tables: &["thunks"],
                parse: crate::thunks::parse,
                presize: None,
                split: None,
            },
            Format::OomReport => &FormatSpec {
                name: "oom_report",
                contents: &[ContentKind::OomReport],
                // found anywhere in a log
                sniff: Sniff { anywhere: &crate::oom::MARKERS, anywhere_kind: ContentKind::OomReport, ..Sniff::NONE },
                tables: &["oom_reports", "oom_buffers"],
                parse: crate::oom::parse,
                presize: None,
                split: None,
            },
            Format::Options => &FormatSpec {
                name: "options",
                contents: &[ContentKind::DebugOptions, ContentKind::CompileOptions, ContentKind::ProtoText, ContentKind::Flagfile],
                sniff: Sniff {
                    prefixes: &[
                        (crate::options::COMPILE_OPTIONS_STARTS[0], ContentKind::CompileOptions),
                        (crate::options::COMPILE_OPTIONS_STARTS[1], ContentKind::CompileOptions),
                        (crate::options::COMPILE_OPTIONS_STARTS[2], ContentKind::CompileOptions),
                        (b"--xla_", ContentKind::Flagfile),
                    ],
                    line: Some((is_debug_options_line, ContentKind::DebugOptions)),
                    // any other protobuf text, after every format's prefixes and lines (a
                    // thunk line `001: kKernel …` is also a numbered field)
                    fallback: Some((crate::options::is_proto_text_start, ContentKind::ProtoText)),
                    ..Sniff::NONE
                },
                tables: &["options", "thunk_metadata"],
                parse: crate::options::parse,
                presize: None,
                split: None,
            },
        }
    }

    /// The format that reads files of this content kind, if any.
    pub fn of(content: ContentKind) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.spec().contents.contains(&content))
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    fn bit(self) -> u8 {
        1 << Format::ALL.iter().position(|&f| f == self).expect("in ALL")
    }
}

/// Content kinds the `files` table names but no format parses: a capture of XLA's dump to
/// stdout (tried after every format's rules).
pub const UNPARSED: Sniff = Sniff {
    prefixes: &[(b"*** Begin ", ContentKind::StdoutCapture)],
    ..Sniff::NONE
};

/// `xla_<letters, digits, _>: …`, a line of a `*.debug_options` file.
fn is_debug_options_line(line: &[u8]) -> bool {
    line.strip_prefix(b"xla_").is_some_and(|rest| {
        let n = rest.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
        rest[n..].starts_with(b": ")
    })
}

/// A set of formats (which ones a read parses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatSet(u8);

impl FormatSet {
    pub const ALL: FormatSet = FormatSet(u8::MAX);
    pub const NONE: FormatSet = FormatSet(0);

    pub fn contains(self, f: Format) -> bool {
        self.0 & f.bit() != 0
    }

    pub fn insert(&mut self, f: Format) {
        self.0 |= f.bit();
    }

    /// The formats that can produce one of `tables` (`read_arrow(tables=...)`): naming
    /// `errors` parses every format, `files` alone none.
    pub fn for_tables<S: AsRef<str>>(tables: &[S]) -> FormatSet {
        let mut set = FormatSet::NONE;
        for f in Format::ALL {
            if tables.iter().any(|t| matches!(t.as_ref(), "errors" | "notes") || f.spec().tables.contains(&t.as_ref())) {
                set.insert(f);
            }
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parsed_content_kind_has_exactly_one_format() {
        for f in Format::ALL {
            for &c in f.spec().contents {
                assert_eq!(Format::of(c), Some(f), "{c:?}");
            }
        }
        let names: std::collections::HashSet<_> = Format::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), Format::ALL.len());
    }

    #[test]
    fn every_table_a_format_names_exists() {
        for f in Format::ALL {
            for t in f.spec().tables {
                assert!(crate::tables::TABLE_NAMES.contains(t), "{t}");
            }
        }
    }

    #[test]
    fn table_selection() {
        let s = FormatSet::for_tables(&["instructions"]);
        assert!(s.contains(Format::HloModule) && !s.contains(Format::BufferAssignment));
        let s = FormatSet::for_tables(&["totals"]);
        assert!(s.contains(Format::BufferAssignment) && s.contains(Format::MemoryReport));
        assert_eq!(FormatSet::for_tables(&["files"]), FormatSet::NONE);
        assert_eq!(FormatSet::for_tables(&["errors"]).0.count_ones() as usize, Format::ALL.len());
    }
}

#[cfg(test)]
mod level_tests {
    use super::*;
    use crate::lex::classify::{with_level, Level};

    /// Every file under tests/data parsed by its format at every SIMD level this CPU runs gives
    /// the portable level's tables, row for row (the classifier, the structural index, the
    /// field tape and the searches behind them: issue 26's "every SIMD level == portable").
    #[test]
    fn every_level_parses_like_the_portable_one() {
        let ctx = || FileCtx { file_id: 0, path: "t", collect: true, src: crate::source::SourceRef::none(), proj: None, presized: false, strict: false, xla_named: false };
        let parse = |f: Format, data: &[u8], level: Level| {
            with_level(level, || {
                let mut t = Tables::default();
                (f.spec().parse)(data, ctx(), &mut t).expect("collect mode never fails");
                t.finish()
            })
        };
        let mut files = 0;
        for path in crate::hlo::damaged::test_data_files() {
            let data = std::fs::read(&path).unwrap();
            let Some(f) = Format::of(sniff(&data)) else { continue };
            let want = parse(f, &data, Level::Portable);
            for level in Level::ALL.into_iter().filter(|l| *l != Level::Portable && l.supported()) {
                let got = parse(f, &data, level);
                assert_eq!(got.len(), want.len());
                for ((name, a), (_, b)) in want.iter().zip(&got) {
                    assert!(a == b, "{} at {level:?}: table {name} differs", path.display());
                }
            }
            files += 1;
        }
        assert!(files > 500, "{files} files parsed");
    }
}
