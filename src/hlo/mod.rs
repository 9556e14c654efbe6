//! HLO module text (FORMATS.md §3): `modules`, `computations`, `instructions`,
//! `stack_frames` and `custom_calls` rows, cell for cell equal to `reference/hlo.py`.
//!
//! Lines are slices of the (memory-mapped) input and every text column is a view into it;
//! the only copies are C-unescaped strings and the rare text joined from several lines
//! (multi-line constants, an `origin_recovery_table` header) when CRs sit between them.
//!
//! * `scan` — bracket / string / comment-aware skipping, Python whitespace and ints, unescaping
//! * `attributes` — the generic `KEY=VALUE` splitter (§3.8.1) and `metadata={…}` (§3.9)
//! * `instruction` — one instruction (module lines and `from instruction:` texts)
//! * `general` — the general grammar (blanks, comments, line breaks between tokens; no shape)
//! * `stack_frames` — the four tables of §3.4
//! * `tape` — an instruction line in two stages: the spans of its fields, then decoders per column
//! * `custom_call` — body detection / base64 / kernel name
//! * `module` — the file structure

pub mod attributes;
pub mod custom_call;
pub mod general;
pub mod rules;
pub mod instruction;
mod line_forms;
#[cfg(test)]
pub(crate) mod damaged;
pub mod module;
pub mod scan;
pub mod stack_frames;
pub mod summary;
pub mod tape;

use crate::error::{FileCtx, Result};
use crate::tables::Tables;

pub use custom_call::decode_body;
pub use instruction::{parse_instruction, Instr, Scratch};
pub use summary::{instruction_defining, instruction_summary, instruction_summary_full, Defining};

/// Parse one HLO module text file.
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    module::parse(data, ctx, t)
}

/// The first deciding line of a file (and the one after it) that make it HLO text although it
/// does not start with `HloModule ` (`FormatSpec::sniff`): `HloModule` after blanks (XLA's
/// lexer skips them), or a module without `HloModule` header, as XLA's parser takes it (its
/// test inputs are written so): a computation header `[ENTRY ]%?name[ (…) -> …] {` followed by
/// an instruction line `[ROOT ]%?name = …`.
pub fn is_module_start(first: &[u8], second: Option<&[u8]>) -> bool {
    if skip_blanks(first).starts_with(b"HloModule ") {
        return true;
    }
    let Some(second) = second else { return false };
    // either reading of a leading `ENTRY ` / `ROOT ` (it may also be the name itself)
    let header = |s: &[u8]| {
        let rest = skip_blanks(&s[hlo_name_end(s)..]);
        hlo_name_end(s) > 0 && (rest.trim_ascii_end() == b"{" || (rest.starts_with(b"(") && memchr::memmem::find(rest, b"->").is_some() && rest.trim_ascii_end().ends_with(b"{")))
    };
    let instruction = |s: &[u8]| hlo_name_end(s) > 0 && skip_blanks(&s[hlo_name_end(s)..]).starts_with(b"=");
    let body = skip_blanks(second);
    (header(first) || first.strip_prefix(b"ENTRY ").is_some_and(header)) && (instruction(body) || body.strip_prefix(b"ROOT ").is_some_and(instruction))
}

/// `s` without its leading spaces and tabs.
fn skip_blanks(s: &[u8]) -> &[u8] {
    &s[s.iter().take_while(|&&b| b == b' ' || b == b'\t').count()..]
}

/// End of a leading `%?[A-Za-z_][A-Za-z0-9_.-]*` (0: none).
fn hlo_name_end(s: &[u8]) -> usize {
    let skip = usize::from(s.first() == Some(&b'%'));
    if !s.get(skip).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
        return 0;
    }
    skip + s[skip..].iter().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')).count()
}

/// Size the instruction columns once for every HLO file of an arena group
/// (`FormatSpec::presize`). Why: sized file by file, the columns of a group of hundreds of
/// per-pass files regrow log2(files) times, each time copied whole (~6% of a per-pass
/// directory's read).
pub fn presize(t: &mut Tables, files: &mut dyn Iterator<Item = &[u8]>) -> bool {
    if !t.instructions.is_wanted() {
        return false;
    }
    t.instructions.reserve(files.map(module::count_indented_lines).sum());
    true
}
pub mod split;
