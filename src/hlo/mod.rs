//! HLO module text (FORMATS.md §3). Placeholder until the HLO parser lands.

use crate::error::{FileCtx, Result};
use crate::tables::Tables;

/// Opcode and `op_name` of one instruction text (as printed after `from instruction:`).
pub fn instruction_summary(_text: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    None
}

/// Parse one HLO module text file.
pub fn parse<'c>(_data: &'c [u8], _ctx: FileCtx<'c>, _t: &mut Tables) -> Result<()> {
    Ok(())
}
