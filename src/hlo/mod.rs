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
pub mod instruction;
pub mod module;
pub mod scan;
pub mod stack_frames;
pub mod tape;

use crate::error::{FileCtx, Result};
use crate::tables::Tables;

pub use custom_call::decode_body;
pub use instruction::{instruction_defining, instruction_summary, instruction_summary_full, parse_instruction, Defining, Instr, Scratch};

/// Parse one HLO module text file.
pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    module::parse(data, ctx, t)
}
pub mod split;
