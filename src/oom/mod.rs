//! XLA's out-of-memory report (FORMATS.md §2.9), alone or inside a log: placeholder until the
//! parser lands (see `formats.rs`).

use crate::error::{FileCtx, Result};
use crate::tables::Tables;

/// Parse the out-of-memory reports found in one file.
pub fn parse<'c>(_data: &'c [u8], _ctx: FileCtx<'c>, _t: &mut Tables) -> Result<()> {
    Ok(())
}
