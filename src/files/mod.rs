//! The `files` table: what each input file is by its name (`name.rs`, FORMATS.md §1.2–§1.4),
//! and the one row the reader writes for it (`row`). What a file is by its *content* is the
//! format registry's question (`formats::sniff`).

pub mod name;

pub use name::*;

use crate::formats::{ContentKind, Format};
use crate::tables::Files;

/// What the reader made of a file.
pub enum Outcome {
    /// It could not be read: the `files.error` text.
    Unreadable(String),
    /// Its content (`formats::sniff`), its size, and whether a format parses it in this read.
    Read { content: ContentKind, size: u64, parsed: bool },
}

/// The `files` row of file `file_id`: its path, its dump, its name's parts, and what was read.
/// Its `kind` is its name's, or its content's when the name says nothing (`other`) and the
/// content is a kind we know (a format of ours, or debug options).
pub fn row(f: &mut Files, file_id: i32, path: &str, dump: &str, name: FileName, outcome: Outcome) {
    f.file_id.push(file_id);
    f.path.push(path.to_string());
    f.dump.push(dump.to_string());
    f.module_id.push(name.module_id);
    f.module_name.push_opt(name.module_name);
    f.stage.push_opt(name.stage);
    f.backend.push_opt(name.backend);
    f.pass_index.push(name.pass_index);
    f.pipeline.push_opt(name.pipeline);
    f.after_pass.push_opt(name.after_pass);
    f.before_pass.push_opt(name.before_pass);
    f.substep.push_opt(name.substep);
    match outcome {
        Outcome::Unreadable(error) => {
            f.kind.push(name.kind.as_str());
            f.content_kind.push_opt(None::<String>);
            f.size_bytes.push(0);
            f.parsed.push(false);
            f.error.push_opt(Some(error));
        }
        Outcome::Read { content, size, parsed } => {
            let known = Format::of(content).is_some() || content == ContentKind::DebugOptions;
            f.kind.push(if name.kind == FileKind::Other && known { content.as_str() } else { name.kind.as_str() });
            f.content_kind.push_opt(Some(content.as_str()));
            f.size_bytes.push(size as i64);
            f.parsed.push(parsed);
            f.error.push_opt(None::<String>);
        }
    }
}
