//! Reading many inputs: plan groups, load them (map big files, pack small ones into shared
//! arenas), parse groups in parallel, and return each table as record batches in file order.
//!
//! Why groups: a directory can hold 100,000 small files. One memory map per file would exhaust
//! the process's map limit (65,530 on Linux) and one record batch per file would make tables of
//! 100,000 chunks. Small files are therefore read into arenas of up to `ARENA_BYTES` that become
//! one Arrow buffer each, and all files of a group share one set of table builders.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::error::{Error, FileCtx, ParseError, Result};
use crate::files::{self, classify_path, is_side_output, FileKind, Outcome};
use crate::formats::{sniff, sniff_is_final, text_start, ContentKind, Format, FormatSet};
use crate::source::Source;
use crate::split::Finished;
use crate::tables::{Tables, TABLE_NAMES};

/// Files at least this large get a group (and a buffer) of their own; smaller ones share arenas.
pub const MAP_THRESHOLD: u64 = 4 << 20;
/// Target size of an arena of small files.
pub const ARENA_BYTES: u64 = 64 << 20;

/// One input file.
#[derive(Clone, Debug)]
pub struct Input {
    pub path: PathBuf,
    /// The path shown in `files.path` and in errors.
    pub shown: String,
    /// Named by the caller (not found by walking a directory): an I/O error is an `Err`, not a
    /// `files.error` row. Entries found by walking are opened with `O_NOFOLLOW`.
    pub explicit: bool,
    /// Not to be read: the `files.error` text to show instead (the walk decided it: a symlink
    /// leaving the dump, a second path to a file already read, a name that is not UTF-8 …).
    pub error: Option<String>,
    /// The dump the file belongs to (`files.dump`): the directory `--xla_dump_to` wrote, or the
    /// path a single file was named by. Planned by the caller (`python/hlodump/io/paths.py`).
    pub dump: String,
    /// The file's bytes, already in memory (a buffer the caller passed, an object fetched from
    /// a store): read from here, not from `path`, and shared, not copied (views point into it).
    pub data: Option<Source>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapPolicy {
    /// The default: map files of `MAP_THRESHOLD` bytes and more (zero-copy, file-backed pages:
    /// a dump larger than RAM works), read smaller ones into shared arenas. A mapped file that
    /// shrinks while its tables are alive reads as zeros past its new end (see `sigbus.rs`).
    Auto,
    /// Map every file (`read_arrow(mmap=True)`).
    Always,
    /// Read every file into memory (`read_arrow(mmap=False)`): tables are independent of the
    /// files afterwards, at the cost of a copy.
    Never,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// `on_error="collect"`.
    pub collect: bool,
    /// Worker threads (0: all cores).
    pub threads: usize,
    pub map: MapPolicy,
    /// The formats parsed (`read_arrow(tables=...)` parses only those that can produce a
    /// requested table; see `FormatSet::for_tables`).
    pub formats: FormatSet,
    /// Per table (`TABLE_NAMES` order) the projected columns as a bit mask (None: all); a
    /// column outside it is not built where that saves work (`Column::set_built`).
    pub projection: Option<Vec<Option<u64>>>,
    /// Cut big files into chunks parsed in parallel (`split.rs`); a streaming read does not.
    pub split: bool,
    /// `strict=True`: what a newer XLA prints (a `notes` row otherwise) is an error.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { collect: false, threads: 0, map: MapPolicy::Auto, formats: FormatSet::ALL, projection: None, split: true, strict: false }
    }
}

impl Options {
    /// What a read builds, from what its caller hands out (`read_arrow(tables=, columns=)`,
    /// `scan(table, columns=)`): the one place this policy is written.
    /// - `tables` (None: all): parse only the formats that can produce one of them (a file whose
    ///   format produces none is not parsed: `files.parsed` false, no `errors` rows; naming
    ///   `errors` parses every format, `files` none), and build no column of a table that is
    ///   neither asked for nor in `always` (the caller drops it);
    /// - `columns` (per table in `TABLE_NAMES` order a bit mask of its columns, None: all):
    ///   build only those columns where that saves work (`Column::set_built`).
    pub fn for_tables<S: AsRef<str>>(mut self, tables: Option<&[S]>, columns: Option<Vec<Option<u64>>>, always: &[&str]) -> Options {
        let mut masks = columns;
        if let Some(wanted) = tables {
            self.formats = FormatSet::for_tables(wanted);
            let m = masks.get_or_insert_with(|| vec![None; TABLE_NAMES.len()]);
            for (i, name) in TABLE_NAMES.iter().enumerate() {
                if !always.contains(name) && !wanted.iter().any(|w| w.as_ref() == *name) {
                    m[i] = Some(0);
                }
            }
        }
        self.projection = masks;
        self
    }

    /// A fresh table set in this read's projection.
    pub fn tables(&self) -> Tables {
        let mut t = Tables::default();
        if let Some(p) = &self.projection {
            t.project(p);
        }
        t
    }

    /// The format that parses a file with this content, if this read parses it.
    pub fn parser_for(&self, content: ContentKind) -> Option<Format> {
        Format::of(content).filter(|&f| self.formats.contains(f))
    }
}

/// Each table's record batches, in canonical table order.
pub type Batches = Vec<(&'static str, Vec<RecordBatch>)>;

/// A planned unit of work: consecutive files parsed by one thread into one `Tables`.
pub(crate) struct Group {
    first: usize,
    count: usize,
    /// Pack into an arena (small files) rather than load one by one.
    arena: bool,
}

/// Read and parse `inputs`; `progress(files, bytes)` is called as groups finish.
pub fn read(inputs: &[Input], opts: &Options, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<Batches> {
    let sizes = input_sizes(inputs);
    let run = || -> Vec<Result<Vec<Finished>>> {
        let groups = plan(&sizes, opts.map, rayon::current_num_threads());
        groups
            .par_iter()
            .map(|g| {
                let t = read_group(inputs, &sizes, g, opts, opts.tables());
                let bytes: u64 = sizes[g.first..g.first + g.count].iter().map(|s| s.unwrap_or(0)).sum();
                progress(g.count as u64, bytes);
                t
            })
            .collect()
    };
    let results = run_on_own_pool(opts.threads, run)?;
    let mut out: Batches = TABLE_NAMES.iter().map(|&n| (n, Vec::new())).collect();
    for r in results {
        for set in r? {
            for (i, (_, batch)) in set.into_iter().enumerate() {
                if batch.num_rows() > 0 {
                    out[i].1.push(batch);
                }
            }
        }
    }
    Ok(out)
}

/// Run `run` on a pool of its own (`runtime::pool`: fork-safe, stoppable; the read's stop
/// flag is the caller's, if it has one), with the SIGBUS guard re-armed.
fn run_on_own_pool<T: Send>(threads: usize, run: impl FnOnce() -> T + Send) -> Result<T> {
    crate::sigbus::rearm();
    let abort = crate::runtime::current().unwrap_or_else(crate::runtime::Abort::new);
    let pool = crate::runtime::pool(threads, &abort).map_err(|source| Error::Io { path: String::new(), source })?;
    Ok(pool.install(run))
}

/// Each input's size: its in-memory bytes, or its file's (`regular_file_size`); None for an
/// input not to be read (`Input::error`) or not a regular file.
pub(crate) fn input_sizes(inputs: &[Input]) -> Vec<Option<u64>> {
    inputs
        .iter()
        .map(|i| match (&i.error, &i.data) {
            (Some(_), _) => None,
            (None, Some(d)) => Some(d.len() as u64),
            (None, None) => regular_file_size(&i.path),
        })
        .collect()
}

/// Size of a regular file, or None (missing, not a regular file: FIFOs and sockets are never
/// opened, since opening a FIFO blocks).
pub(crate) fn regular_file_size(p: &std::path::Path) -> Option<u64> {
    std::fs::metadata(p).ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// Smallest arena target: below this, per-group overhead outweighs the gain in parallelism.
const MIN_ARENA_BYTES: u64 = 1 << 20;

/// Split `sizes` into groups. Small files go into arenas of up to `ARENA_BYTES`, but smaller
/// (down to `MIN_ARENA_BYTES`) when that is needed to give each of `workers` threads about four
/// groups: a 10 MB directory of small files must not be parsed by one thread.
pub(crate) fn plan(sizes: &[Option<u64>], map: MapPolicy, workers: usize) -> Vec<Group> {
    let small = |s: u64| match map {
        MapPolicy::Always => false,
        MapPolicy::Never | MapPolicy::Auto => s < MAP_THRESHOLD,
    };
    let small_total: u64 = sizes.iter().map(|s| s.unwrap_or(0)).filter(|&s| small(s)).sum();
    let arena_target = (small_total / (4 * workers.max(1) as u64)).clamp(MIN_ARENA_BYTES, ARENA_BYTES);
    let mut groups: Vec<Group> = Vec::new();
    let mut arena_bytes = 0u64;
    for (i, s) in sizes.iter().enumerate() {
        let s = s.unwrap_or(0);
        if !small(s) {
            groups.push(Group { first: i, count: 1, arena: false });
            continue;
        }
        match groups.last_mut() {
            Some(g) if g.arena && g.first + g.count == i && arena_bytes + s <= arena_target => {
                g.count += 1;
                arena_bytes += s;
            }
            _ => {
                groups.push(Group { first: i, count: 1, arena: true });
                arena_bytes = s;
            }
        }
    }
    groups
}

/// Size the tables once for all files of an arena group, for each format that can
/// (`FormatSpec::presize`); returns the formats it sized for (their parsers then do not size
/// per file: `FileCtx::presized`). Not for a streaming read, whose batches are smaller than a
/// group.
fn presize_group<'a>(t: &mut Tables, files: impl Iterator<Item = &'a [u8]>, opts: &Options) -> FormatSet {
    let mut presized = FormatSet::NONE;
    if t.is_streaming() {
        return presized;
    }
    let files: Vec<&[u8]> = files.collect();
    for format in Format::ALL.into_iter().filter(|&f| opts.formats.contains(f)) {
        let Some(presize) = format.spec().presize else { continue };
        // sniffed only if the hook wants the files (not, say, when its tables are not wanted)
        let mut of_format = files.iter().copied().filter(|bytes| opts.parser_for(sniff(bytes)) == Some(format));
        if presize(t, &mut of_format) {
            presized.insert(format);
        }
    }
    presized
}

/// The group's table sets, finished, in order: one, or more when a big file was parsed in
/// chunks (`split.rs`; the files after it then start a new set).
/// `t` is the table set the group starts with (a streaming read's carries its `Stream`).
pub(crate) fn read_group(inputs: &[Input], sizes: &[Option<u64>], g: &Group, opts: &Options, mut t: Tables) -> Result<Vec<Finished>> {
    let mut done: Vec<Finished> = Vec::new();
    let range = g.first..g.first + g.count;
    if g.arena {
        // Read every file of the group into one buffer; remember where each landed.
        let total: u64 = sizes[range.clone()].iter().map(|s| s.unwrap_or(0)).sum();
        let mut arena = Vec::new();
        crate::runtime::reserve_exact(&mut arena, total as usize);
        let mut spans = Vec::with_capacity(g.count);
        for i in range.clone() {
            crate::runtime::check();
            let start = arena.len();
            let r = match sizes[i] {
                Some(s) if inputs[i].data.is_some() => Ok(s), // in memory already: not copied
                Some(_) => append_file(&inputs[i], &mut arena, opts),
                None => Err(not_regular(&inputs[i])),
            };
            spans.push((start, arena.len(), r));
        }
        if arena.len() < arena.capacity() / 2 {
            arena.shrink_to_fit(); // files that are not parsed were read only in part
        }
        let source = Source::from_vec(arena);
        let files = range.clone().zip(&spans).filter_map(|(i, (a, b, r))| match (&inputs[i].data, r) {
            (Some(data), Ok(_)) => Some(data.bytes()),
            (None, Ok(_)) => Some(&source.bytes()[*a..*b]),
            (_, Err(_)) => None,
        });
        let mut presized = presize_group(&mut t, files, opts);
        // a group of in-memory inputs only has no arena block
        let add_arena = |t: &mut Tables| if source.is_empty() { crate::source::SourceRef::none() } else { t.add_source(&source) };
        let mut src = add_arena(&mut t);
        for (i, (start, end, r)) in range.zip(spans) {
            let chunks = match (&inputs[i].data, r) {
                (Some(data), Ok(size)) => {
                    let own = t.add_source(data);
                    file(&mut t, i, &inputs[i], Ok((data.bytes(), size, data)), own, presized, opts)
                }
                (_, r) => {
                    let bytes = &source.bytes()[start..end];
                    file(&mut t, i, &inputs[i], r.map(|size| (bytes, size, &source)), src, presized, opts)
                }
            }
            .inspect_err(|_| t.end_stream_on_error())?;
            if !chunks.is_empty() {
                done.push(std::mem::replace(&mut t, opts.tables()).finish());
                done.extend(chunks);
                src = add_arena(&mut t);
                presized = FormatSet::NONE; // a fresh table set, sized by nobody
            }
        }
    } else {
        let i = g.first;
        crate::runtime::check();
        let mut stamped = None;
        let loaded = match sizes[i] {
            None => Err(not_regular(&inputs[i])),
            Some(size) if inputs[i].data.is_some() => Ok((inputs[i].data.clone().expect("checked"), size)),
            Some(_) if opts.map == MapPolicy::Never => {
                let mut v = Vec::new();
                append_file(&inputs[i], &mut v, opts).map(|size| (Source::from_vec(v), size))
            }
            Some(_) => Source::map_stamped(&inputs[i].path, !inputs[i].explicit).map(|(s, stamp)| {
                let size = s.len() as u64;
                stamped = stamp;
                (s, size)
            }),
        };
        match loaded {
            Ok((source, size)) => {
                // a mapped file changed a moment before: its times cannot show a write during
                // the parse, its content can (`Stamp`)
                let hashed = stamped.as_ref().filter(|s| s.recent()).map(|_| crate::source::content_hash(source.bytes()));
                let src = t.add_source(&source);
                let parsed = file(&mut t, i, &inputs[i], Ok((source.bytes(), size, &source)), src, FormatSet::NONE, opts);
                let changed = stamped.as_ref().and_then(|s| s.verify_map(source.bytes(), hashed));
                let (mut chunks, changed) = match (parsed, changed) {
                    // a strict parse that failed on a file written to meanwhile: that is the error
                    (Err(Error::Parse(_)), Some(changed)) => {
                        t.end_stream_on_error();
                        return Err(Error::Io { path: inputs[i].shown.clone(), source: changed });
                    }
                    (parsed, changed) => (parsed.inspect_err(|_| t.end_stream_on_error())?, changed),
                };
                if let Some(changed) = changed {
                    // the rows hold text of two versions of the file (maybe invalid UTF-8): they
                    // go, and the file is reported as unreadable (this group holds it alone)
                    if t.is_streaming() {
                        return Err(Error::Io { path: inputs[i].shown.clone(), source: changed }); // rows already handed out
                    }
                    chunks.clear();
                    t = opts.tables();
                    file(&mut t, i, &inputs[i], Err(changed), crate::source::SourceRef::none(), FormatSet::NONE, opts)?;
                }
                if !chunks.is_empty() {
                    done.push(std::mem::replace(&mut t, opts.tables()).finish());
                    done.extend(chunks);
                }
            }
            Err(e) => {
                file(&mut t, i, &inputs[i], Err(e), crate::source::SourceRef::none(), FormatSet::NONE, opts).inspect_err(|_| t.end_stream_on_error())?;
            }
        }
    }
    t.end_stream()?;
    if done.is_empty() || t.files.len() > 0 {
        done.push(t.finish());
    }
    Ok(done)
}

/// Files are first read this far (and further, doubling, until `sniff` is decided by a complete
/// non-blank line); the rest is read only when the file is parsed.
const SNIFF_STEP: u64 = 4 << 10;

/// Append file `p` to `arena` and return its size. A file that `opts` parses is appended whole;
/// of any other file only its start is kept (enough for `sniff`), and its size is then the one
/// `fstat` gives (or the bytes read, if the read reached the end of the file).
fn append_file(input: &Input, arena: &mut Vec<u8>, opts: &Options) -> std::io::Result<u64> {
    use std::io::Read;
    let start = arena.len();
    let r = (|| {
        // O_NONBLOCK, fstat: a FIFO swapped in since `regular_file_size` is an error, not a hang
        let (mut f, meta) = crate::source::open_regular(&input.path, !input.explicit)?;
        let mut step = SNIFF_STEP;
        loop {
            crate::runtime::reserve(arena, step as usize + 1);
            let n = (&mut f).take(step).read_to_end(arena)?;
            if (n as u64) < step {
                return Ok((arena.len() - start) as u64); // the end: all of it was read
            }
            let head = &arena[start..];
            if sniff_is_final(head) {
                if opts.parser_for(sniff(head)).is_some() {
                    let rest = meta.len().saturating_sub(head.len() as u64);
                    crate::source::read_rest(&mut f, arena, rest)?;
                    // a write while we copied it could have torn it (half old, half new): its
                    // times say so, or, when they cannot (it changed a moment before), a
                    // second read (`Stamp`)
                    crate::source::Stamp::new(f, &meta).verify_copy(&arena[start..])?;
                    return Ok((arena.len() - start) as u64);
                }
                return Ok(f.metadata()?.len().max(head.len() as u64));
            }
            step = head.len() as u64; // doubling: a long first line is read in O(its length)
        }
    })();
    if r.is_err() {
        arena.truncate(start);
    }
    r
}

fn not_regular(input: &Input) -> std::io::Error {
    if let Some(text) = &input.error {
        return std::io::Error::other(Preset(text.clone()));
    }
    match std::fs::metadata(&input.path) {
        Err(e) => e,
        Ok(_) => std::io::Error::other("not a regular file"),
    }
}

/// One file: its `files` row, then its tables if its content is a format we parse: into `t`,
/// or, for a big file parsed in chunks, as the finished table sets returned (to follow `t`).
/// `bytes` is the file's bytes and its size: all of them, or only its start (enough for `sniff`)
/// when no format is parsed (`append_file`). `presized`: the formats `t` was sized for
/// (`presize_group`).
fn file(t: &mut Tables, file_id: usize, input: &Input, bytes: std::io::Result<(&[u8], u64, &Source)>, src: crate::source::SourceRef, presized: FormatSet, opts: &Options) -> Result<Vec<Finished>> {
    let name = classify_path(&input.shown);
    let side_output = is_side_output(&input.shown, &name);
    let name_kind = name.kind;
    let xla_named = name.module_id.is_some();
    let (bytes, size, source) = match bytes {
        Ok(b) => b,
        Err(e) => {
            if input.explicit && input.error.is_none() {
                return Err(Error::Io { path: input.shown.clone(), source: e });
            }
            files::row(&mut t.files, file_id as i32, &input.shown, &input.dump, name, Outcome::Unreadable(io_message(&e)));
            return Ok(Vec::new());
        }
    };
    let content = sniff(bytes);
    // a file whose format produces no requested table is not parsed (`Options::for_tables`)
    let parser = opts.parser_for(content);
    debug_assert!(parser.is_none() || size == bytes.len() as u64, "a parsed file is read whole");
    files::row(&mut t.files, file_id as i32, &input.shown, &input.dump, name, Outcome::Read { content, size, parsed: parser.is_some() });
    let presized = parser.is_some_and(|f| presized.contains(f));
    let ctx = FileCtx { file_id: file_id as i32, path: &input.shown, collect: opts.collect, src, proj: opts.projection.as_deref(), presized, strict: opts.strict, xla_named };
    if let Some(message) = not_the_proto_named(&input.shown, content, bytes) {
        ctx.error_at(&mut t.errors, 1, 1, message, b"")?;
        return Ok(Vec::new());
    }
    if content == ContentKind::Unknown && (input.explicit || name_kind != FileKind::Other) && !side_output {
        // Never zero rows in silence: a file the user named, or whose name says it is a dump,
        // that is none of our formats.
        not_a_dump(bytes, input, name_kind, ctx, &mut t.errors)?;
        return Ok(Vec::new());
    }
    if size == 0 && name_kind != FileKind::Other {
        // XLA writes no empty dump file: one whose name says it is a dump was cut short (or is
        // still being written)
        let msg = format!("empty file (0 bytes), though its name says {}: XLA writes no empty dump files (cut short, or still being written?)", name_kind.as_str());
        ctx.error_at(&mut t.errors, 1, 1, msg, b"")?;
        return Ok(Vec::new());
    }
    let Some(format) = parser else {
        return Ok(Vec::new());
    };
    // XLA never writes a byte-order mark; an editor may have added one.
    let bytes = &bytes[text_start(bytes)..];
    if let Some(line) = crate::lines::check_line_count(bytes) {
        // line numbers are int32 columns: a file they cannot number is refused whole, in both
        // error modes (no `errors` row could hold its line either)
        let message = crate::lines::too_many_lines(crate::lines::max_lines());
        return Err(Error::Parse(ParseError { path: input.shown.clone(), line, column: 1, message, text: String::new() }));
    }
    if opts.split {
        if let Some(chunks) = crate::split::parse(format.spec().split, bytes, source, ctx)? {
            return Ok(chunks);
        }
    }
    (format.spec().parse)(bytes, ctx, t)?;
    Ok(Vec::new())
}

/// A `files.error` text decided before reading (`Input::error`), shown as it is.
#[derive(Debug)]
struct Preset(String);

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Preset {}

/// The protos XLA names by what they hold (`*.hlo.pb`, `*-memory-usage-report.pb`, gzip'd or
/// not): (name ending, the content it must have, what that content starts with).
const NAMED_PROTOS: [(&str, ContentKind, &str); 4] = [
    (".hlo.pb", ContentKind::HloProto, "an HloProto or HloModuleProto: 0a <len> [0a <len>] NAME [12 <len> NAME] 1a <len> 0a <len> NAME"),
    (".hlo.pb.gz", ContentKind::HloProto, "an HloProto or HloModuleProto: 0a <len> [0a <len>] NAME [12 <len> NAME] 1a <len> 0a <len> NAME"),
    ("-memory-usage-report.pb", ContentKind::MemoryUsageReportProto, "a memory-usage report: 0a <len> 08 <varint> (10|1a)"),
    ("-memory-usage-report.pb.gz", ContentKind::MemoryUsageReportProto, "a memory-usage report: 0a <len> 08 <varint> (10|1a)"),
];

/// A proto whose name says what it holds and whose first bytes are not that (empty, damaged,
/// another protobuf): an error, never a file of kind 'other' in silence.
fn not_the_proto_named(shown: &str, content: ContentKind, bytes: &[u8]) -> Option<String> {
    let &(ending, kind, expected) = NAMED_PROTOS.iter().find(|(ending, _, _)| shown.ends_with(ending))?;
    if content == kind {
        return None;
    }
    let first: Vec<String> = bytes.iter().take(16).map(|b| format!("{b:02x}")).collect();
    let first = if first.is_empty() { "none (an empty file)".to_string() } else { first.join(" ") };
    Some(format!("not a {} file, though its name ends with {ending}: expected {expected}; the first bytes are {first}", kind.as_str()))
}

/// The error for a file that is none of our formats: what its first line looked like and
/// which formats we know (an `errors` row at line 1 in collect mode).
fn not_a_dump(bytes: &[u8], input: &Input, name_kind: FileKind, ctx: FileCtx<'_>, errors: &mut crate::tables::Errors) -> Result<()> {
    let start = text_start(bytes);
    let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i).min(start + 200);
    let first = &bytes[start..end];
    let looks = if first.contains(&0) || std::str::from_utf8(first).is_err() {
        "binary or non-UTF-8 data".to_string()
    } else if first.contains(&b'\r') {
        "text with CR-only line ends".to_string()
    } else {
        format!("{:?}", String::from_utf8_lossy(first))
    };
    let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    let why = if input.explicit { "named explicitly".to_string() } else { format!("its name says {}", name_kind.as_str()) };
    let msg = format!("not an XLA dump file ({why}): the first line is {looks}; known formats: {}", known.join(", "));
    ctx.error_at(errors, 1, 1, msg, first)
}

/// `PermissionError: Permission denied`-style text, as the reference writes it.
fn io_message(e: &std::io::Error) -> String {
    if let Some(p) = e.get_ref().and_then(|x| x.downcast_ref::<Preset>()) {
        return p.0.clone();
    }
    use std::io::ErrorKind::*;
    let kind = match e.kind() {
        NotFound => "FileNotFoundError",
        PermissionDenied => "PermissionError",
        _ => "OSError",
    };
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    format!("{kind}: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(o: &Options, table: &str) -> Option<u64> {
        o.projection.as_ref().expect("projected")[TABLE_NAMES.iter().position(|n| *n == table).expect("a table")]
    }

    #[test]
    fn for_tables_builds_what_is_handed_out() {
        // read_arrow(tables=["instructions"]): its formats only; files and errors always built
        let o = Options::default().for_tables(Some(&["instructions"]), None, &["files", "errors"]);
        assert!(o.formats.contains(Format::HloModule) && !o.formats.contains(Format::OomReport));
        for t in TABLE_NAMES {
            let want = if ["instructions", "files", "errors"].contains(&t) { None } else { Some(0) };
            assert_eq!(mask(&o, t), want, "{t}");
        }
        // no tables=: every format, every column (or the columns asked for)
        let o = Options::default().for_tables(None::<&[&str]>, None, &["files", "errors"]);
        assert!(o.projection.is_none() && o.formats == FormatSet::ALL);
        let mut columns = vec![None; TABLE_NAMES.len()];
        columns[TABLE_NAMES.iter().position(|n| *n == "thunks").unwrap()] = Some(0b10);
        let o = Options::default().for_tables(None::<&[&str]>, Some(columns.clone()), &["files", "errors"]);
        assert_eq!((mask(&o, "thunks"), mask(&o, "instructions")), (Some(0b10), None));
        // scan("thunks", columns=…): that table in its columns, errors whole, files not at all
        let o = Options::default().for_tables(Some(&["thunks"]), Some(columns), &["errors"]);
        assert_eq!((mask(&o, "thunks"), mask(&o, "errors"), mask(&o, "files")), (Some(0b10), None, Some(0)));
        assert!(o.formats.contains(Format::ThunkSequence) && !o.formats.contains(Format::HloModule));
    }

    fn shape(groups: &[Group]) -> Vec<(usize, usize, bool)> {
        groups.iter().map(|g| (g.first, g.count, g.arena)).collect()
    }

    #[test]
    fn plan_keeps_file_order_and_isolates_big_files() {
        let mb = 1u64 << 20;
        let sizes = vec![Some(10), Some(20), Some(100 * mb), None, Some(30), Some(5 * mb), Some(1)];
        let g = plan(&sizes, MapPolicy::Auto, 1);
        assert_eq!(shape(&g), vec![(0, 2, true), (2, 1, false), (3, 2, true), (5, 1, false), (6, 1, true)]);
        // every file in exactly one group, in order
        let covered: Vec<usize> = g.iter().flat_map(|g| g.first..g.first + g.count).collect();
        assert_eq!(covered, (0..sizes.len()).collect::<Vec<_>>());
        // mmap=True: every file on its own
        assert!(plan(&sizes, MapPolicy::Always, 1).iter().all(|g| g.count == 1 && !g.arena));
    }

    #[test]
    fn in_memory_inputs_are_parsed_in_place() {
        use arrow_array::cast::AsArray;
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/corpus/jax-0.10.2/control_flow/module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt");
        let input = |data: Option<Source>| Input {
            path: if data.is_some() { PathBuf::new() } else { path.clone() },
            shown: "module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt".into(),
            explicit: true,
            error: None,
            dump: "d".into(),
            data,
        };
        let data = Source::from_vec(std::fs::read(&path).unwrap());
        let rows = |b: &Batches| -> Vec<(&str, usize)> {
            b.iter().map(|(n, v)| (*n, v.iter().map(|x| x.num_rows()).sum())).collect()
        };
        let opts = Options { threads: 1, ..Options::default() };
        let from_file = read(&[input(None)], &opts, &|_, _| {}).unwrap();
        // alone (a group of its own) and with a file in the same arena group
        let alone = read(&[input(Some(data.clone()))], &opts, &|_, _| {}).unwrap();
        assert_eq!(rows(&alone), rows(&from_file));
        let mixed = read(&[input(None), input(Some(data.clone()))], &opts, &|_, _| {}).unwrap();
        let alloc = |b: &Batches| rows(b).into_iter().find(|(n, _)| *n == "allocations").unwrap().1;
        assert_eq!(alloc(&mixed), 2 * alloc(&from_file));
        // the text columns point into the caller's bytes: no copy
        let (_, batches) = alone.iter().find(|(n, _)| *n == "assignments").unwrap();
        let col = batches[0].column_by_name("instruction").unwrap().as_string_view();
        let base = data.bytes().as_ptr();
        assert!(col.data_buffers().iter().any(|b| b.as_ptr() == base && b.len() == data.len()));
    }

    #[test]
    fn plan_splits_small_files_for_parallelism_and_caps_arenas() {
        let kb = 1u64 << 10;
        // 40 MiB of 4 KiB files, 4 workers: arenas of ~2.5 MiB, 16 groups
        let sizes = vec![Some(4 * kb); 10240];
        let g = plan(&sizes, MapPolicy::Auto, 4);
        assert_eq!(g.len(), 16);
        // a tiny directory stays one group (arenas are at least MIN_ARENA_BYTES)
        assert_eq!(plan(&vec![Some(kb); 100], MapPolicy::Auto, 64).len(), 1);
        // 1 GiB of small files on one worker: capped at ARENA_BYTES
        let g = plan(&vec![Some(1u64 << 20); 1024], MapPolicy::Auto, 1);
        assert_eq!(g.len(), 16);
    }
}
