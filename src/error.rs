//! Errors of the core, and the per-file context a parser reads with.

use std::fmt;

use crate::source::SourceRef;

/// A problem with the input at a known place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// 1-based byte column within the line.
    pub column: u64,
    pub message: String,
    /// The offending line (lossily decoded).
    pub text: String,
}

#[derive(Debug)]
pub enum Error {
    Io { path: String, source: std::io::Error },
    Parse(ParseError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Parse(e) => write!(f, "{}:{}:{}: {}", e.path, e.line, e.column, e.message),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// What one format parser needs while it reads one file. Its reporting methods (`error`,
/// `error_at`: an `Err`, or an `errors` row) are the line driver's (`driver.rs`): this module
/// sits below the tables.
#[derive(Clone, Copy)]
pub struct FileCtx<'a> {
    pub file_id: i32,
    pub path: &'a str,
    /// `on_error="collect"`: record problems in `errors` and go on, instead of failing.
    pub collect: bool,
    /// Where the file's bytes sit among the table set's blocks.
    pub src: SourceRef,
    /// The read's projection (`Options::projection`): fresh table sets (chunks of a split
    /// file) are made in it too.
    pub proj: Option<&'a [Option<u64>]>,
    /// The reader has sized the table set for this file already, with its format's
    /// `FormatSpec::presize` (for a whole group of small files): the parser need not.
    pub presized: bool,
    /// `strict=True`: a `notes` row (something a newer XLA prints) is an error instead.
    pub strict: bool,
    /// The file's name gives its module number (`files.module_id`: `module_NNNN.…`, or a
    /// module's folder): XLA wrote it, so what XLA always prints must be there (an HLO module's
    /// `ENTRY` computation: `hlo/module/checks.rs`). Hand-written files need not have it.
    pub xla_named: bool,
}

#[cfg(test)]
impl FileCtx<'static> {
    /// The context of unit tests: file 0 named "t", from no source, collecting or strict.
    pub fn for_test(collect: bool) -> FileCtx<'static> {
        FileCtx { file_id: 0, path: "t", collect, src: SourceRef::none(), proj: None, presized: false, strict: false, xla_named: false }
    }
}

/// The most bytes of the offending line an error keeps (`ParseError.text`, `errors.text`): a
/// line is context, not data, and lines can be gigabytes (a 100 MB bad line, 25 times, made
/// 2.5 GB of error text). Same rule in the reference (`reader.error_text`).
pub const MAX_ERROR_TEXT: usize = 1 << 16;

/// `text` (lossily decoded) for an error: at most `MAX_ERROR_TEXT` bytes of it, then
/// "… (N bytes)" with the whole line's length.
pub fn error_text(text: &[u8]) -> String {
    if text.len() <= MAX_ERROR_TEXT {
        return String::from_utf8_lossy(text).into_owned();
    }
    format!("{}… ({} bytes)", String::from_utf8_lossy(&text[..MAX_ERROR_TEXT]), text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_is_bounded() {
        assert_eq!(error_text(b"abc\xff"), "abc\u{fffd}");
        let long = vec![b'x'; MAX_ERROR_TEXT + 10];
        let t = error_text(&long);
        assert!(t.starts_with(&"x".repeat(MAX_ERROR_TEXT)));
        assert!(t.ends_with(&format!("… ({} bytes)", MAX_ERROR_TEXT + 10)));
        assert_eq!(error_text(&long[..MAX_ERROR_TEXT]).len(), MAX_ERROR_TEXT);
    }
}
