//! The memory-usage report as a proto (`*-memory-usage-report.pb`, `--xla_dump_hlo_as_proto`;
//! the reference is `python/hlodump/reference/memory_report_proto.py`). Each allocation entry
//! carries the offset table XLA prints for it, so the report is printed back as its text twin
//! (`Memory Space: …`, `Total bytes: …`, the tables) and read by the memory-report parser: the
//! same `memory_report` and `totals` rows as the text. The text is at most a few dozen bytes per
//! byte of proto (each line printed is paid for by the entry or space it comes from).

use super::schema;
use super::wire::{self, Value};
use crate::error::{FileCtx, Result};
use crate::source::Source;
use crate::tables::Tables;

use super::varint_at;

/// Content rule: `0a <len> 08 <total_bytes> (10|1a)` and, within the first 64 KiB, an entry's
/// printed table header.
pub fn is_memory_report_proto(data: &[u8]) -> bool {
    if data.first() != Some(&0x0a) {
        return false;
    }
    let Some((n, j)) = varint_at(data, 1) else { return false };
    if n == 0 || data.get(j) != Some(&0x08) {
        return false;
    }
    let Some((_, k)) = varint_at(data, j.saturating_add(1)) else { return false };
    if !matches!(data.get(k), Some(0x10 | 0x1a)) {
        return false;
    }
    memchr::memmem::find(&data[..data.len().min(1 << 16)], b"cumulative_size;").is_some()
}

/// `tsl::strings::HumanReadableNumBytes`: `512B`, `61.0KiB`, `1.14MiB`.
pub fn human_bytes(n: i64) -> String {
    if n < 0 {
        return if n == i64::MIN { "-8.00EiB".into() } else { format!("-{}", human_bytes(-n)) };
    }
    if n < 1024 {
        return format!("{n}B");
    }
    let units = b"KMGTPE";
    let mut u = 0;
    let mut v = n as f64;
    while v >= 1024.0 * 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if units[u] == b'K' {
        format!("{:.1}{}iB", v / 1024.0, units[u] as char)
    } else {
        format!("{:.2}{}iB", v / 1024.0, units[u] as char)
    }
}

/// The report as XLA's text prints it.
pub fn render(m: &wire::Msg) -> String {
    let mut out = String::new();
    for sp in m.msgs("memory_space_allocation_entries") {
        let color = sp.int("memory_space_color");
        // XLA names color 0 "default"; other colors are printed by number (no sample names them)
        let name = if color == 0 { "default".to_string() } else { color.to_string() };
        let total = sp.int("total_bytes");
        out.push_str(&format!("Memory Space: {name} (color={color})\nTotal bytes: {total} ({})\n", human_bytes(total)));
        for e in sp.msgs("allocation_entries") {
            if let Some(Value::Str(t)) = e.get("table") {
                out.push_str(t);
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

pub fn parse<'c>(data: &'c [u8], ctx: FileCtx<'c>, t: &mut Tables) -> Result<()> {
    let (m, unknown) = match wire::decode_listing(data, schema::MEMORYUSAGEREPORT) {
        Ok(x) => x,
        Err(e) => return ctx.error_at(&mut t.errors, 1, e.offset as u64 + 1, format!("not a valid memory-usage report proto: {e}"), b""),
    };
    let source = Source::from_vec(render(&m).into_bytes());
    let src = t.add_source(&source);
    let text_ctx = FileCtx { file_id: ctx.file_id, path: ctx.path, collect: ctx.collect, src, proj: ctx.proj, presized: false, strict: ctx.strict, xla_named: false };
    crate::memory_report::parse(source.bytes(), text_ctx, t)?;
    super::unknown_note(&unknown, &ctx, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_readable_bytes() {
        assert_eq!(human_bytes(512), "512B");
        assert_eq!(human_bytes(62464), "61.0KiB");
        assert_eq!(human_bytes(1192160), "1.14MiB");
    }
}
