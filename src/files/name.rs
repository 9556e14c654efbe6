//! File-name classification (FORMATS.md §1.2–§1.4). A name never decides which parser runs:
//! the content does (`formats::sniff`).
//!
//! Plain string code, no regex. The pure-Python reference (`python/hlodump/reference/files.py`)
//! implements the same rules independently; `tests/test_files.py` checks that the two agree.
//!
//! A file name is `[prefix "."] "module_" ID ["." NAME] [".cl_" N] "." SUFFIX`. It is split from
//! the right: the suffix first, then the *stage* in front of it; what is left (the "head") is
//! `[prefix "."] module_ID [.NAME] [.cl_N]`.
//!
//! * module token: the first `module_` that starts the head or follows a `.`, followed by at
//!   least 4 ASCII digits that fit an i32, followed by `.` or the end. module_name = the rest of
//!   the head after `module_ID.`, minus a trailing `.cl_<digits>` (`module_ID.cl_<digits>` alone
//!   has no name); `None` when empty.
//! * suffix families, in this order:
//!   1. execution files `….execution_<4+ digits><ext>`, ext one of `.hlo_snapshot.pb`,
//!      `.hlo_unoptimized_snapshot.pb`, `.hlo_unoptimized_snapshot.txt`, `.pb`, `.txt`: kind
//!      other, head before `.execution_`; `module_<name>.execution_…` (no module token) gives
//!      module_name `<name>`.
//!   2. no-stage suffixes: `.debug_options` (DebugOptions), `.config.pbtxt`,
//!      `.metadata.textproto`, `.thunk_sequence_after_thunk_passes.txt`, `.thunk_sequence.txt`,
//!      `._fusion.html`, `._fusion.pyz`, `.mlir` (Other). A per-kernel MLIR head
//!      `module_ID.NAME.KERNEL-{pre-optimization,post-optimization,post-lowering}` has module
//!      name NAME (KERNEL may contain dots; `kernel_mlir_module`).
//!   2b. a compile's side files (`options::NAMED_FILES`: `.execution_options.txt`, `.flagfile`,
//!      `.autotune_results.pbtxt`, …): Other, module id and name, no stage.
//!   3. stage suffixes: `-buffer-assignment-values.txt`, `-buffer-assignment.txt`,
//!      `-live-range.txt`, `-memory-usage-report.txt` (their kinds), `-memory-usage-report.pb.gz`,
//!      `-memory-usage-report.pb`, `.hlo.pb.gz`, `.hlo.pb`, `.top_level.html`, `.html`, `.dot`,
//!      `.url`, `.riegeli`, `.fdo_profile` (Other), `.txt` (HloModule). If the text before the
//!      suffix (the "core") has no stage, `.txt` becomes Other, the rest keep their kind, and
//!      only module_id is filled.
//!   4. anything else: Other, module_id only.
//! * stage of a core, in this order:
//!   - (a) per-pass form 1: a `.`-separated segment of 4+ digits (fitting i32) after the
//!     module token, then `.PIPELINE.after_AFTER.before_BEFORE` (first workable `.after_`,
//!     last workable `.before_`, all non-empty); step candidates tried from the right.
//!   - (b) `.before_optimizations` at the end, or `.STAGE` of `NAMED_STAGES`
//!     (`after_codegen`, `after_spmd_partitioner`, …): stage = STAGE.
//!   - (c) `.after_optimizations` (backend None) or `<BACKEND>_after_optimizations` at the end;
//!     BACKEND = last `.` segment, joined with the previous one if that is `sm_<digits>` and
//!     BACKEND starts with a digit (`sm_8.0_gpu`); empty BACKEND is None.
//!   - (d) per-pass form 2: as (a) with `.PASS.SUBSTEP` (PASS up to the first `.`, both
//!     non-empty).

/// What a file is, judged by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    HloModule,
    BufferAssignment,
    BufferAssignmentValues,
    LiveRange,
    MemoryUsageReport,
    DebugOptions,
    Other,
}

impl FileKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::HloModule => "hlo_module",
            FileKind::BufferAssignment => "buffer_assignment",
            FileKind::BufferAssignmentValues => "buffer_assignment_values",
            FileKind::LiveRange => "live_range",
            FileKind::MemoryUsageReport => "memory_usage_report",
            FileKind::DebugOptions => "debug_options",
            FileKind::Other => "other",
        }
    }
}

/// The parts of a dump file name (the name columns of the `files` table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileName {
    pub kind: FileKind,
    pub module_id: Option<i32>,
    pub module_name: Option<String>,
    /// "before_optimizations" | "after_optimizations" | "pass"
    pub stage: Option<&'static str>,
    pub backend: Option<String>,
    pub pass_index: Option<i32>,
    pub pipeline: Option<String>,
    pub after_pass: Option<String>,
    pub before_pass: Option<String>,
    pub substep: Option<String>,
}

impl FileName {
    fn new(kind: FileKind) -> FileName {
        FileName {
            kind,
            module_id: None,
            module_name: None,
            stage: None,
            backend: None,
            pass_index: None,
            pipeline: None,
            after_pass: None,
            before_pass: None,
            substep: None,
        }
    }

    fn set_head(&mut self, head: &str) {
        let (id, name) = parse_head(head);
        self.module_id = id;
        self.module_name = name;
    }
}

const EXEC_EXTS: [&str; 5] = [
    ".hlo_snapshot.pb",
    ".hlo_unoptimized_snapshot.pb",
    ".hlo_unoptimized_snapshot.txt",
    ".pb",
    ".txt",
];

const HEAD_SUFFIXES: [(&str, FileKind); 8] = [
    (".debug_options", FileKind::DebugOptions),
    (".config.pbtxt", FileKind::Other),
    (".metadata.textproto", FileKind::Other),
    (".thunk_sequence_after_thunk_passes.txt", FileKind::Other),
    (".thunk_sequence.txt", FileKind::Other),
    ("._fusion.html", FileKind::Other),
    ("._fusion.pyz", FileKind::Other),
    (".mlir", FileKind::Other),
];

/// The side files of a compile that are named like a module's but carry no stage (libtpu's and
/// the GPU compiler's protobuf text, libtpu's flag file: `crate::options::NAMED_FILES`), and
/// the ones read nowhere (kind other): without them their `.txt` would be taken for a stage,
/// and the module name lost (a phantom `module_NNNN` beside `module_NNNN.NAME`).
fn side_file_suffix(name: &str) -> Option<&'static str> {
    crate::options::NAMED_FILES.iter().map(|f| f.0).find(|s| s.starts_with('.') && name.ends_with(s))
}

/// HLO module text stages besides before/after optimizations (FORMATS.md §1.3): libtpu's
/// around buffer assignment and after code generation, the GPU compiler's before config
/// assignment and after SPMD partitioning, libtpu's module printed on running out of memory.
/// The `stage` column holds the name as written; only `after_optimizations` is the module's
/// canonical compiled text (what the analyses read), so none of these doubles a figure.
const NAMED_STAGES: [&str; 6] = [
    "after_optimizations_before_buffer_assignment",
    "after_optimizations_after_buffer_assignment",
    "after_codegen",
    "before_config_assignment",
    "after_spmd_partitioner",
    "oom_intermediate_module",
];

const STAGE_SUFFIXES: [(&str, FileKind); 15] = [
    (
        "-buffer-assignment-values.txt",
        FileKind::BufferAssignmentValues,
    ),
    ("-buffer-assignment.txt", FileKind::BufferAssignment),
    ("-live-range.txt", FileKind::LiveRange),
    ("-memory-usage-report.txt", FileKind::MemoryUsageReport),
    ("-memory-usage-report.pb.gz", FileKind::Other),
    ("-memory-usage-report.pb", FileKind::Other),
    (".hlo.pb.gz", FileKind::Other),
    (".hlo.pb", FileKind::Other),
    (".top_level.html", FileKind::Other),
    (".html", FileKind::Other),
    (".dot", FileKind::Other),
    (".url", FileKind::Other),
    (".riegeli", FileKind::Other),
    (".fdo_profile", FileKind::Other),
    (".txt", FileKind::HloModule),
];

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// An all-ASCII-digit string as i32 (None if not digits or too large).
fn to_i32(s: &str) -> Option<i32> {
    if !all_digits(s) {
        return None;
    }
    s.parse::<i32>().ok()
}

/// (start, end, id) of the first `module_<4+ digits>` at the start of `s` or after a '.',
/// followed by '.' or the end.
fn module_token(s: &str) -> Option<(usize, usize, i32)> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(off) = s[from..].find("module_") {
        let i = from + off;
        if i == 0 || b[i - 1] == b'.' {
            let j = i + 7;
            let mut k = j;
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            if k - j >= 4 && (k == b.len() || b[k] == b'.') {
                if let Some(v) = to_i32(&s[j..k]) {
                    return Some((i, k, v));
                }
            }
        }
        from = i + 1;
    }
    None
}

fn strip_cl(rest: &str) -> &str {
    if let Some(d) = rest.strip_prefix("cl_") {
        if all_digits(d) {
            return "";
        }
    }
    if let Some(d) = rest.rfind(".cl_") {
        if all_digits(&rest[d + 4..]) {
            return &rest[..d];
        }
    }
    rest
}

fn parse_head(head: &str) -> (Option<i32>, Option<String>) {
    match module_token(head) {
        None => (None, None),
        Some((_, end, id)) => {
            let rest = if end < head.len() {
                strip_cl(&head[end + 1..])
            } else {
                ""
            };
            (
                Some(id),
                if rest.is_empty() {
                    None
                } else {
                    Some(rest.to_string())
                },
            )
        }
    }
}

/// `PIPELINE.after_AFTER.before_BEFORE`, with the semantics of `^(.+?)\.after_(.+)\.before_(.+)$`.
fn form1(rem: &str) -> Option<(&str, &str, &str)> {
    const A: &str = ".after_";
    const B: &str = ".before_";
    let mut from = 0;
    while let Some(off) = rem[from..].find(A) {
        let i = from + off;
        if i >= 1 {
            let rest = &rem[i + A.len()..];
            let mut upto = rest.len();
            while let Some(j) = rest[..upto].rfind(B) {
                if j >= 1 && j + B.len() < rest.len() {
                    return Some((&rem[..i], &rest[..j], &rest[j + B.len()..]));
                }
                if j == 0 {
                    break;
                }
                // the next candidate lies wholly before this one
                upto = j;
            }
        }
        from = i + 1;
    }
    None
}

fn form2(rem: &str) -> Option<(&str, &str)> {
    let i = rem.find('.')?;
    if i >= 1 && i + 1 < rem.len() {
        Some((&rem[..i], &rem[i + 1..]))
    } else {
        None
    }
}

/// (segment start, segment end, step) of every all-digit segment (4+ digits, i32) after the
/// module token that is followed by '.', rightmost first.
fn step_candidates(core: &str, token_end: usize) -> Vec<(usize, usize, i32)> {
    let mut out = Vec::new();
    let mut p = token_end; // core[p] is '.' (or p == len)
    while p < core.len() {
        let q = match core[p + 1..].find('.') {
            Some(off) => p + 1 + off,
            None => break,
        };
        let seg = &core[p + 1..q];
        if seg.len() >= 4 {
            if let Some(v) = to_i32(seg) {
                out.push((p + 1, q, v));
            }
        }
        p = q;
    }
    out.reverse();
    out
}

fn is_sm_segment(s: &str) -> bool {
    s.strip_prefix("sm_").is_some_and(all_digits)
}

/// Fill stage, backend, pass fields and module parts from a core; false if it has no stage.
fn parse_stage(core: &str, out: &mut FileName) -> bool {
    let cands = match module_token(core) {
        Some((_, end, _)) => step_candidates(core, end),
        None => Vec::new(),
    };
    // (a) per-pass form 1
    for &(start, end, step) in &cands {
        if let Some((pipeline, after, before)) = form1(&core[end + 1..]) {
            out.stage = Some("pass");
            out.pass_index = Some(step);
            out.pipeline = Some(pipeline.to_string());
            out.after_pass = Some(after.to_string());
            out.before_pass = Some(before.to_string());
            out.set_head(&core[..start - 1]);
            return true;
        }
    }
    // (b) before optimizations, and the other named stages
    if let Some(head) = core.strip_suffix(".before_optimizations") {
        out.stage = Some("before_optimizations");
        out.set_head(head);
        return true;
    }
    for stage in NAMED_STAGES {
        if let Some(head) = core.strip_suffix(stage).and_then(|h| h.strip_suffix('.')) {
            out.stage = Some(stage);
            out.set_head(head);
            return true;
        }
    }
    // (c) after optimizations, with or without a backend tag
    if let Some(pre) = core.strip_suffix("after_optimizations") {
        let mut parts: Option<(&str, Option<String>)> = None;
        if let Some(head) = pre.strip_suffix('.') {
            parts = Some((head, None));
        } else if let Some(b) = pre.strip_suffix('_') {
            let (mut head, mut backend) = match b.rfind('.') {
                Some(d) => (&b[..d], b[d + 1..].to_string()),
                None => ("", b.to_string()),
            };
            if backend
                .as_bytes()
                .first()
                .is_some_and(|c| c.is_ascii_digit())
            {
                let (before_last, last) = match head.rfind('.') {
                    Some(e) => (&head[..e], &head[e + 1..]),
                    None => ("", head),
                };
                if is_sm_segment(last) {
                    backend = format!("{last}.{backend}");
                    head = before_last;
                }
            }
            parts = Some((
                head,
                if backend.is_empty() {
                    None
                } else {
                    Some(backend)
                },
            ));
        }
        if let Some((head, backend)) = parts {
            out.stage = Some("after_optimizations");
            out.backend = backend;
            out.set_head(head);
            return true;
        }
    }
    // (d) per-pass form 2
    for &(start, end, step) in &cands {
        if let Some((pass, substep)) = form2(&core[end + 1..]) {
            out.stage = Some("pass");
            out.pass_index = Some(step);
            out.after_pass = Some(pass.to_string());
            out.substep = Some(substep.to_string());
            out.set_head(&core[..start - 1]);
            return true;
        }
    }
    false
}

/// Stages of XLA:CPU's per-kernel MLIR dumps (FORMATS.md §1.3).
const KERNEL_MLIR_STAGES: [&str; 3] = ["-pre-optimization", "-post-optimization", "-post-lowering"];

/// The module name of a per-kernel MLIR dump head `module_ID.NAME.KERNEL-STAGE` (jax 0.6–0.9,
/// XLA:CPU fusion emitters: `DumpToFileInDirOrStdout(module, "", KERNEL + "-STAGE.mlir")`):
/// NAME, the segment after the module token up to the next `.`. KERNEL may itself hold dots
/// (`fusion.265`, a disambiguator) and hyphens (`wrapped_reduce-window_kernel_module`), so only
/// the first segment is the module's. None for any other head.
fn kernel_mlir_module(head: &str) -> Option<&str> {
    let head = KERNEL_MLIR_STAGES.iter().find_map(|stage| head.strip_suffix(stage))?;
    let (_, end, _) = module_token(head)?;
    let rest = head.get(end + 1..)?;
    let (name, kernel) = rest.split_once('.')?;
    (!name.is_empty() && !kernel.is_empty()).then_some(name)
}

fn id_only(kind: FileKind, name: &str) -> FileName {
    let mut out = FileName::new(kind);
    out.module_id = module_token(name).map(|t| t.2);
    out
}

/// Split an XLA dump file name (a base name, no directory) into its kind and parts.
/// Never fails: an unrecognised name is `Other` with every part `None`.
pub fn classify(basename: &str) -> FileName {
    // a compressed file is the file it holds (`….txt.gz`; XLA's `….pb.gz` keep the suffix)
    let name = without_compression(basename);
    // 1. per-execution files (snapshots)
    for ext in EXEC_EXTS {
        if let Some(core) = name.strip_suffix(ext) {
            let (head, seg) = match core.rfind('.') {
                Some(d) => (&core[..d], &core[d + 1..]),
                None => ("", core),
            };
            if let Some(n) = seg.strip_prefix("execution_") {
                if n.len() >= 4 && all_digits(n) {
                    let mut out = FileName::new(FileKind::Other);
                    out.set_head(head);
                    if out.module_id.is_none() {
                        if let Some(mn) = head.strip_prefix("module_") {
                            if !mn.is_empty() {
                                out.module_name = Some(mn.to_string());
                            }
                        }
                    }
                    return out;
                }
            }
        }
    }
    // 2. suffixes with no stage in front
    for (suffix, kind) in HEAD_SUFFIXES {
        if let Some(head) = name.strip_suffix(suffix) {
            let mut out = FileName::new(kind);
            out.set_head(head);
            if suffix == ".mlir" {
                if let Some(module) = kernel_mlir_module(head) {
                    out.module_name = Some(module.to_string());
                }
            }
            return out;
        }
    }
    // 2b. a compile's side files (protobuf text, flags): module id and name only
    if let Some(suffix) = side_file_suffix(name) {
        let mut out = FileName::new(FileKind::Other);
        out.set_head(&name[..name.len() - suffix.len()]);
        return out;
    }
    // 3. suffixes with a stage in front
    for (suffix, kind) in STAGE_SUFFIXES {
        if let Some(core) = name.strip_suffix(suffix) {
            let mut out = FileName::new(kind);
            if parse_stage(core, &mut out) {
                return out;
            }
            let kind = if suffix == ".txt" {
                FileKind::Other
            } else {
                kind
            };
            return id_only(kind, name);
        }
    }
    // 4. anything else
    id_only(FileKind::Other, name)
}

/// Path separators of a shown path: `/` (shown paths are POSIX), and `\\` on Windows too.
fn is_separator(c: char) -> bool {
    c == '/' || (cfg!(windows) && c == '\\')
}

/// The module of a per-module folder (jax ≥ 0.10: `module_0024.jit_model/module.mlir`): a
/// folder name that is exactly `module_<4+ digits>` or `module_<4+ digits>.<NAME>` (digits
/// fitting i32, NAME non-empty) gives (id, NAME minus a trailing `.cl_<digits>`, as in a file
/// name head); anything else gives None.
fn folder_module(folder: &str) -> Option<(i32, Option<String>)> {
    match module_token(folder) {
        Some((0, end, _)) if end == folder.len() || end + 1 < folder.len() => {
            match parse_head(folder) {
                (Some(id), name) => Some((id, name)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Classify a file by its path (as shown in `files.path`): its base name as `classify` does,
/// and, when the base name names no module (module_id and module_name both None), module_id
/// and module_name from the nearest parent folder whose name is exactly `module_NNNN[.NAME]`
/// (`folder_module`). Kind, stage and the other parts come from the base name alone. A bare
/// base name classifies exactly as `classify`.
pub fn classify_path(path: &str) -> FileName {
    let mut parts = path.rsplit(is_separator);
    let mut out = classify(parts.next().unwrap_or(""));
    if out.module_id.is_none() && out.module_name.is_none() {
        if let Some((id, name)) = parts.find_map(folder_module) {
            out.module_id = Some(id);
            out.module_name = name;
        }
    }
    out
}

/// Suffixes of compressed files read transparently (`hlodump.io.stores.decompressed`).
pub const COMPRESSION_SUFFIXES: [&str; 4] = [".gz", ".bz2", ".xz", ".zst"];

/// A base name without its compression suffix (`module_0001.x.txt.gz` is classified as
/// `module_0001.x.txt`), except XLA's own compressed protobufs (`….pb.gz`), which keep it.
pub fn without_compression(name: &str) -> &str {
    for s in COMPRESSION_SUFFIXES {
        if let Some(rest) = name.strip_suffix(s) {
            if !rest.ends_with(".pb") && !rest.is_empty() {
                return rest;
            }
        }
    }
    name
}

/// Suffixes of what XLA writes beside its text dumps (object code, LLVM IR, MLIR, protobufs,
/// PTX/cubin, HTML/dot graphs, …): none is a format of ours (`is_side_output`).
pub const SIDE_OUTPUT_SUFFIXES: [&str; 20] = [
    ".o", ".ll", ".mlir", ".pb", ".pb.gz", ".ptx", ".cubin", ".hsaco", ".html", ".dot", ".url", ".pyz",
    ".riegeli", ".pbtxt", ".textproto", ".fdo_profile", ".json", ".ttir", ".ttgir", ".llir",
];

/// A file XLA wrote beside its text dumps, by its name: a module token (`module_0003.…`, also
/// from its per-module folder) and a suffix of `SIDE_OUTPUT_SUFFIXES`. Such a file is an
/// `other` row, named explicitly or not (a shell glob over a dump matches them).
pub fn is_side_output(path: &str, name: &FileName) -> bool {
    name.kind == FileKind::Other && name.module_id.is_some() && SIDE_OUTPUT_SUFFIXES.iter().any(|s| path.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, kind, module_id, module_name, stage, backend, pass_index, pipeline, after, before,
    /// substep) — the same table as CASES in tests/test_files.py.
    type Case = (
        &'static str,
        &'static str,
        Option<i32>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<i32>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    );

    #[rustfmt::skip]
    // CASES-BEGIN (kept identical to tests/test_files.py; generated from one list)
    const CASES: &[Case] = &[
        ("module_0000.jit_rnn.before_optimizations.txt", "hlo_module", Some(0), Some("jit_rnn"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0000.jit_rnn.cpu_after_optimizations.txt", "hlo_module", Some(0), Some("jit_rnn"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment.txt", "buffer_assignment", Some(0), Some("jit_rnn"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment-values.txt", "buffer_assignment_values", Some(0), Some("jit_rnn"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0000.jit_rnn.cpu_after_optimizations-live-range.txt", "live_range", Some(0), Some("jit_rnn"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0000.jit_rnn.cpu_after_optimizations-memory-usage-report.txt", "memory_usage_report", Some(0), Some("jit_rnn"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0000.jit_rnn.debug_options", "debug_options", Some(0), Some("jit_rnn"), None, None, None, None, None, None, None),
        ("module_0032.jit__lambda.cpu_after_optimizations.txt", "hlo_module", Some(32), Some("jit__lambda"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0006.jit_sm_collectives.cpu_after_optimizations-live-range.txt", "live_range", Some(6), Some("jit_sm_collectives"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0008.pmap__lambda_.before_optimizations.txt", "hlo_module", Some(8), Some("pmap__lambda_"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0011.jit__lambda_.cpu_after_optimizations-buffer-assignment.txt", "buffer_assignment", Some(11), Some("jit__lambda_"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0000.jit_train_step.0000.async-collective.after_pipeline-start.before_async-collective-replacer.txt", "hlo_module", Some(0), Some("jit_train_step"), Some("pass"), None, Some(0), Some("async-collective"), Some("pipeline-start"), Some("async-collective-replacer"), None),
        ("module_0000.jit_train_step.0005.HLO_passes_through_layout_assignment.after_batched_gather_scatter_normalizer.before_result_caster.txt", "hlo_module", Some(0), Some("jit_train_step"), Some("pass"), None, Some(5), Some("HLO_passes_through_layout_assignment"), Some("batched_gather_scatter_normalizer"), Some("result_caster"), None),
        ("module_0000.jit_train_step.0040.HLO_passes_after_layout_assignment.after_pipeline-start.before_after_layout_assignment.txt", "hlo_module", Some(0), Some("jit_train_step"), Some("pass"), None, Some(40), Some("HLO_passes_after_layout_assignment"), Some("pipeline-start"), Some("after_layout_assignment"), None),
        ("module_0000.jit_train_step.0045.simplification_after_layout_assignment.after_cse.before_pipeline-end.txt", "hlo_module", Some(0), Some("jit_train_step"), Some("pass"), None, Some(45), Some("simplification_after_layout_assignment"), Some("cse"), Some("pipeline-end"), None),
        ("module_0000.jit_train_step.0050.HLO_passes_after_layout_assignment.after_simplification_after_layout_assignment.before_cpu-parallel-task-assigner.txt", "hlo_module", Some(0), Some("jit_train_step"), Some("pass"), None, Some(50), Some("HLO_passes_after_layout_assignment"), Some("simplification_after_layout_assignment"), Some("cpu-parallel-task-assigner"), None),
        ("module_0002.jit_forward.0045.HLO_passes_after_scheduling.after_pipeline-start.before_apply-xla-transforms.txt", "hlo_module", Some(2), Some("jit_forward"), Some("pass"), None, Some(45), Some("HLO_passes_after_scheduling"), Some("pipeline-start"), Some("apply-xla-transforms"), None),
        ("module_0000.jit_train_step.0045.copy-insertion.after_adding_copies_to_resolve_interference.txt", "hlo_module", Some(0), Some("jit_train_step"), Some("pass"), None, Some(45), None, Some("copy-insertion"), None, Some("after_adding_copies_to_resolve_interference")),
        ("module_0001.jit_forward.0039.HLO_passes_after_layout_assignment.after_copy-insertion.before_dce.txt", "hlo_module", Some(1), Some("jit_forward"), Some("pass"), None, Some(39), Some("HLO_passes_after_layout_assignment"), Some("copy-insertion"), Some("dce"), None),
        ("module.mlir", "other", None, None, None, None, None, None, None, None, None),
        ("compile_options.textproto", "other", None, None, None, None, None, None, None, None, None),
        ("topology.textproto", "other", None, None, None, None, None, None, None, None, None),
        ("000_d4ec204070c56195.txt", "other", None, None, None, None, None, None, None, None, None),
        ("002_257473ac4bd6642c.txt", "other", None, None, None, None, None, None, None, None, None),
        ("README.md", "other", None, None, None, None, None, None, None, None, None),
        ("module_0002.jit__threefry_seed.bitcast_concatenate_fusion_kernel_module.ir-no-opt.ll", "other", Some(2), None, None, None, None, None, None, None, None),
        ("module_0002.jit__threefry_seed.obj-file.bitcast_concatenate_fusion_kernel_module.o", "other", Some(2), None, None, None, None, None, None, None, None),
        ("module_0024.jit_model.__compute_module_add_bitcast_fusion.5.ir-with-opt.ll", "other", Some(24), None, None, None, None, None, None, None, None),
        ("module_0000.jit_stage.0005.simplification.after_pipeline-start.before_algsimp.txt", "hlo_module", Some(0), Some("jit_stage"), Some("pass"), None, Some(5), Some("simplification"), Some("pipeline-start"), Some("algsimp"), None),
        ("module_0000.jit_stage.0007.HLO_passes_through_layout_assignment.after_layout-assignment.before_sub-byte-size-setter.txt", "hlo_module", Some(0), Some("jit_stage"), Some("pass"), None, Some(7), Some("HLO_passes_through_layout_assignment"), Some("layout-assignment"), Some("sub-byte-size-setter"), None),
        ("module_0000.jit_stage.0011.after_layout_assignment.after_pipeline-start.before_pipeline-end.txt", "hlo_module", Some(0), Some("jit_stage"), Some("pass"), None, Some(11), Some("after_layout_assignment"), Some("pipeline-start"), Some("pipeline-end"), None),
        ("module_0000.jit_stage.0013.copy-insertion.after_adding_copies_to_resolve_interference.txt", "hlo_module", Some(0), Some("jit_stage"), Some("pass"), None, Some(13), None, Some("copy-insertion"), None, Some("after_adding_copies_to_resolve_interference")),
        ("module_0001.jit_f.sm_8.0_gpu_after_optimizations.txt", "hlo_module", Some(1), Some("jit_f"), Some("after_optimizations"), Some("sm_8.0_gpu"), None, None, None, None, None),
        ("module_0001.jit_f.sm_8.0_gpu_after_optimizations-buffer-assignment.txt", "buffer_assignment", Some(1), Some("jit_f"), Some("after_optimizations"), Some("sm_8.0_gpu"), None, None, None, None, None),
        ("module_0001.jit_f.sm_9.0a_gpu_after_optimizations-memory-usage-report.txt", "memory_usage_report", Some(1), Some("jit_f"), Some("after_optimizations"), Some("sm_9.0a_gpu"), None, None, None, None, None),
        ("module_0001.sm_8.0_gpu_after_optimizations.txt", "hlo_module", Some(1), None, Some("after_optimizations"), Some("sm_8.0_gpu"), None, None, None, None, None),
        ("module_0001.jit_f.gpu_after_optimizations.txt", "hlo_module", Some(1), Some("jit_f"), Some("after_optimizations"), Some("gpu"), None, None, None, None, None),
        ("module_0001.jit_f.gfx90a_gpu_after_optimizations.txt", "hlo_module", Some(1), Some("jit_f"), Some("after_optimizations"), Some("gfx90a_gpu"), None, None, None, None, None),
        ("module_0001.jit_f.after_optimizations.txt", "hlo_module", Some(1), Some("jit_f"), Some("after_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.after_optimizations-buffer-assignment.txt", "buffer_assignment", Some(1), Some("jit_f"), Some("after_optimizations"), None, None, None, None, None, None),
        ("module_0001.cpu_after_optimizations-buffer-assignment.txt", "buffer_assignment", Some(1), None, Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("1712345678901234.module_0001.jit_f.before_optimizations.txt", "hlo_module", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("1712345678901234.module_0001.jit_f.cpu_after_optimizations-live-range.txt", "live_range", Some(1), Some("jit_f"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("1712345678901234.module_0003.jit_f.0012.simplification.after_dce.before_cse.txt", "hlo_module", Some(3), Some("jit_f"), Some("pass"), None, Some(12), Some("simplification"), Some("dce"), Some("cse"), None),
        ("fused_computation.1.module_0001.jit_f._fusion.html", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("main.5.module_0001.jit_f._fusion.pyz", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("lmhlo.module_0001.jit_f.mlir", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.jit_rnn.add_tanh_fusion_kernel_module-pre-optimization.mlir", "other", Some(1), Some("jit_rnn"), None, None, None, None, None, None, None),
        ("module_0000.jit__f_scan.__compute_module_add_bitcast_fusion.265-post-lowering.mlir", "other", Some(0), Some("jit__f_scan"), None, None, None, None, None, None, None),
        ("module_0002.jit_scatter.wrapped_reduce-window_kernel_module-post-optimization.mlir", "other", Some(2), Some("jit_scatter"), None, None, None, None, None, None, None),
        ("module_0002.jit_f-pre-optimization.mlir", "other", Some(2), Some("jit_f-pre-optimization"), None, None, None, None, None, None, None),
        ("x.module_0003.jit_g.k-post-lowering.mlir", "other", Some(3), Some("jit_g"), None, None, None, None, None, None, None),
        ("module_0001.a.module_0002.b.k-pre-optimization.mlir", "other", Some(1), Some("a"), None, None, None, None, None, None, None),
        ("module_0001.jit_f.cl_123.before_optimizations.txt", "hlo_module", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.cl_123.tpu_after_optimizations-buffer-assignment.txt", "buffer_assignment", Some(1), Some("jit_f"), Some("after_optimizations"), Some("tpu"), None, None, None, None, None),
        ("module_0001.cl_123.before_optimizations.txt", "hlo_module", Some(1), None, Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.cl_123.debug_options", "debug_options", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.jit_f.cl_123.0003.p.after_a.before_b.txt", "hlo_module", Some(1), Some("jit_f"), Some("pass"), None, Some(3), Some("p"), Some("a"), Some("b"), None),
        ("module_12345.jit_f.before_optimizations.txt", "hlo_module", Some(12345), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_12345.jit_f.0004.p.after_a.before_b.txt", "hlo_module", Some(12345), Some("jit_f"), Some("pass"), None, Some(4), Some("p"), Some("a"), Some("b"), None),
        ("module_0042.my.model.v2.before_optimizations.txt", "hlo_module", Some(42), Some("my.model.v2"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0042.my.model.v2.cpu_after_optimizations.txt", "hlo_module", Some(42), Some("my.model.v2"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0042.my.model.v2.0007.simplification.after_algsimp.before_dce.txt", "hlo_module", Some(42), Some("my.model.v2"), Some("pass"), None, Some(7), Some("simplification"), Some("algsimp"), Some("dce"), None),
        ("module_0042.foo-bar_baz.cpu_after_optimizations-buffer-assignment-values.txt", "buffer_assignment_values", Some(42), Some("foo-bar_baz"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0042.jit(f)_(x,y)=z.before_optimizations.txt", "hlo_module", Some(42), Some("jit(f)_(x,y)=z"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0042.foo.1.debug_options", "debug_options", Some(42), Some("foo.1"), None, None, None, None, None, None, None),
        ("module_0042.foo.1234.before_optimizations.txt", "hlo_module", Some(42), Some("foo.1234"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0042.foo.1234.0005.p.after_a.before_b.txt", "hlo_module", Some(42), Some("foo.1234"), Some("pass"), None, Some(5), Some("p"), Some("a"), Some("b"), None),
        ("module_0042.foo.1234.0013.copy-insertion.after_removing_unnecessary_copies.txt", "hlo_module", Some(42), Some("foo.1234"), Some("pass"), None, Some(13), None, Some("copy-insertion"), None, Some("after_removing_unnecessary_copies")),
        ("module_0042.module_0007.before_optimizations.txt", "hlo_module", Some(42), Some("module_0007"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0042.0005.p.after_a.before_b.txt", "hlo_module", Some(42), None, Some("pass"), None, Some(5), Some("p"), Some("a"), Some("b"), None),
        ("module_0042.before_optimizations.txt", "hlo_module", Some(42), None, Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.f.0002.pipe.x.after_a.b.before_c.d.txt", "hlo_module", Some(1), Some("f"), Some("pass"), None, Some(2), Some("pipe.x"), Some("a.b"), Some("c.d"), None),
        ("module_0001.f.0002.p.after_x.before_y.before_z.txt", "hlo_module", Some(1), Some("f"), Some("pass"), None, Some(2), Some("p"), Some("x.before_y"), Some("z"), None),
        ("module_0001.f.0002.p.after_x.before_.txt", "hlo_module", Some(1), Some("f"), Some("pass"), None, Some(2), None, Some("p"), None, Some("after_x.before_")),
        ("module_0001.jit_f.before_optimizations.hlo.pb", "other", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.cpu_after_optimizations.hlo.pb.gz", "other", Some(1), Some("jit_f"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0001.jit_f.sm_8.0_gpu_after_optimizations-memory-usage-report.pb", "other", Some(1), Some("jit_f"), Some("after_optimizations"), Some("sm_8.0_gpu"), None, None, None, None, None),
        ("module_0001.jit_f.cpu_after_optimizations-memory-usage-report.pb.gz", "other", Some(1), Some("jit_f"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0001.jit_f.before_optimizations.riegeli", "other", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.before_optimizations.dot", "other", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.cpu_after_optimizations.html", "other", Some(1), Some("jit_f"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0001.jit_f.cpu_after_optimizations.top_level.html", "other", Some(1), Some("jit_f"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("module_0001.jit_f.before_optimizations.url", "other", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.before_optimizations.fdo_profile", "other", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.0003.p.after_a.before_b.dot", "other", Some(1), Some("jit_f"), Some("pass"), None, Some(3), Some("p"), Some("a"), Some("b"), None),
        ("module_0001.jit_f.config.pbtxt", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.metadata.textproto", "other", Some(1), None, None, None, None, None, None, None, None),
        ("module_0001.jit_f.thunk_sequence.txt", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.jit_f.thunk_sequence_after_thunk_passes.txt", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.jit_f.ptx", "other", Some(1), None, None, None, None, None, None, None, None),
        ("module_0001.jit_f.gpu_target_config.txt", "other", Some(1), None, None, None, None, None, None, None, None),
        ("module_0001.jit_f.before_optimizations.txt.gz", "hlo_module", Some(1), Some("jit_f"), Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt.xz", "buffer_assignment", Some(1), Some("jit_f"), Some("after_optimizations"), Some("cpu"), None, None, None, None, None),
        ("1712345678901234.module_0001.jit_f.execution_0000.hlo_snapshot.pb", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_jit_f.execution_0003.hlo_snapshot.pb", "other", None, Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.jit_f.execution_0000.hlo_unoptimized_snapshot.pb", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("module_0001.jit_f.execution_0000.hlo_unoptimized_snapshot.txt", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("some_proto.module_0001.jit_f.execution_0002.txt", "other", Some(1), Some("jit_f"), None, None, None, None, None, None, None),
        ("before_optimizations.txt", "other", None, None, None, None, None, None, None, None, None),
        ("x.before_optimizations.txt", "hlo_module", None, None, Some("before_optimizations"), None, None, None, None, None, None),
        ("foo-buffer-assignment.txt", "buffer_assignment", None, None, None, None, None, None, None, None, None),
        ("module_001.jit_f.before_optimizations.txt", "hlo_module", None, None, Some("before_optimizations"), None, None, None, None, None, None),
        ("module_99999999999.jit_f.before_optimizations.txt", "hlo_module", None, None, Some("before_optimizations"), None, None, None, None, None, None),
        ("xmodule_0001.jit_f.before_optimizations.txt", "hlo_module", None, None, Some("before_optimizations"), None, None, None, None, None, None),
        ("log.txt", "other", None, None, None, None, None, None, None, None, None),
        ("", "other", None, None, None, None, None, None, None, None, None),
        ("módulo_0001.ñ.before_optimizations.txt", "hlo_module", None, None, Some("before_optimizations"), None, None, None, None, None, None),
        ("module_0001.ñame.before_optimizations.txt", "hlo_module", Some(1), Some("ñame"), Some("before_optimizations"), None, None, None, None, None, None),
    ];
    // CASES-END

    fn check(c: &Case) {
        let f = classify(c.0);
        let got = (
            f.kind.as_str(),
            f.module_id,
            f.module_name.as_deref(),
            f.stage,
            f.backend.as_deref(),
            f.pass_index,
            f.pipeline.as_deref(),
            f.after_pass.as_deref(),
            f.before_pass.as_deref(),
            f.substep.as_deref(),
        );
        let want = (c.1, c.2, c.3, c.4, c.5, c.6, c.7, c.8, c.9, c.10);
        assert_eq!(got, want, "classify({:?})", c.0);
    }

    #[test]
    fn cases() {
        assert!(!CASES.is_empty());
        for c in CASES {
            check(c);
        }
    }

    #[test]
    fn classify_path_takes_the_module_of_a_module_folder() {
        let m = |p: &str| {
            let f = classify_path(p);
            (f.kind.as_str(), f.module_id, f.module_name, f.stage)
        };
        let other =
            |id: Option<i32>, name: Option<&str>| ("other", id, name.map(str::to_string), None);
        assert_eq!(
            m("module_0024.jit_model/module.mlir"),
            other(Some(24), Some("jit_model"))
        );
        assert_eq!(
            m("a/b/module_0024.jit_model/topology.textproto"),
            other(Some(24), Some("jit_model"))
        );
        assert_eq!(
            m("module_0024/compile_options.textproto"),
            other(Some(24), None)
        );
        assert_eq!(
            m("module_0024.jit_f.cl_7/module.mlir"),
            other(Some(24), Some("jit_f"))
        );
        // the nearest module folder wins, also through plain folders
        assert_eq!(
            m("module_0001.a/module_0002.b/x/module.mlir"),
            other(Some(2), Some("b"))
        );
        // not exactly module_NNNN[.name]: no module
        for p in [
            "x.module_0024.jit_f/module.mlir",
            "module_024.jit_f/module.mlir",
            "module_0024./module.mlir",
            "module_0024x/module.mlir",
            "module_jit_f/module.mlir",
            "jit_f/module.mlir",
            "module.mlir",
            "",
        ] {
            assert_eq!(m(p), other(None, None), "{p}");
        }
        // the base name's own module wins; the rest of the name parts come from it alone
        assert_eq!(
            m("module_0024.jit_model/module_0001.jit_f.before_optimizations.txt"),
            (
                "hlo_module",
                Some(1),
                Some("jit_f".to_string()),
                Some("before_optimizations")
            )
        );
        assert_eq!(
            m("module_0024.jit_model/foo-buffer-assignment.txt"),
            (
                "buffer_assignment",
                Some(24),
                Some("jit_model".to_string()),
                None
            )
        );
        // a bare base name: exactly `classify`
        for c in CASES {
            assert_eq!(classify_path(c.0), classify(c.0), "{}", c.0);
        }
    }

    #[test]
    fn kind_strings() {
        assert_eq!(
            FileKind::BufferAssignmentValues.as_str(),
            "buffer_assignment_values"
        );
    }
}
