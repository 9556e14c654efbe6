//! The line driver, above the tables: it feeds a file's lines to a format's grammar
//! (`LineGrammar`, `feed`), offers the table set a flush between lines (a streaming read), and
//! turns problems into `ParseError`s or `errors` rows (`FileCtx::error`, `checked_lines`). The
//! grammars below it (`lex`) only say where a line went wrong.

use crate::error::{error_text, Error, FileCtx, ParseError, Result, MAX_ERROR_TEXT};
use crate::lex::{Stop, R};
use crate::lines::{Line, Lines};
use crate::tables::{Errors, Tables};

impl<'a> FileCtx<'a> {
    /// Report a problem at `column` (1-based) of `line`: an `Err` in strict mode, an `errors`
    /// row in collect mode (then the caller skips the line and goes on).
    pub fn error(&self, errors: &mut Errors, line: &Line, column: u64, message: impl Into<String>) -> Result<()> {
        self.error_at(errors, line.no, column, message.into(), line.text)
    }

    pub fn error_at(&self, errors: &mut Errors, line: u64, column: u64, message: String, text: &[u8]) -> Result<()> {
        let text = error_text(text);
        let message = if message.len() > MAX_ERROR_TEXT { error_text(message.as_bytes()) } else { message };
        if !self.collect {
            return Err(Error::Parse(ParseError { path: self.path.to_string(), line, column, message, text }));
        }
        errors.file_id.push(self.file_id);
        // int32 columns: every line number fits (`lines::check_line_count`); a column past the
        // end of a line of 2^31 - 1 bytes (the longest read) is shown as 2^31 - 1
        errors.line.push(i32::try_from(line).unwrap_or(i32::MAX));
        errors.column.push(i32::try_from(column).unwrap_or(i32::MAX));
        errors.message.push(message);
        errors.text.push(text);
        Ok(())
    }

    /// Report what only the whole file shows (each format's `checks.rs`: a module without
    /// `ENTRY`, a table cut between its rows …), as (line, message) at column 1 — unless the
    /// file has an error since `errors_before` (the `errors` rows before it was parsed): a file
    /// with errors is known to be incomplete, and the same cut is not reported twice.
    pub fn report_whole_file(&self, errors: &mut Errors, errors_before: usize, problems: &[(u64, String)]) -> Result<()> {
        if errors.len() != errors_before {
            return Ok(());
        }
        for (line, message) in problems {
            self.error_at(errors, *line, 1, message.clone(), b"")?;
        }
        Ok(())
    }
}

/// What a `notes` row says (`FileCtx::note`).
pub struct Note<'x> {
    /// `unknown_flag`, `unknown_attribute`, `unknown_section`, `unknown_line`, …
    pub kind: &'static str,
    /// What the note is deduplicated by in a file: the flag's word, the attribute's key, ….
    pub token: &'x [u8],
    /// The unknown text as printed.
    pub text: &'x [u8],
    /// What it is and what was kept where.
    pub message: String,
}

impl<'a> FileCtx<'a> {
    /// Something this version does not know, in a line whose structure it does (a newer XLA):
    /// one `notes` row per file, kind and token (the first occurrence), or, in strict mode, an
    /// error at `column` (1-based) of line `no` like any other (`error_at`).
    pub fn note(&self, t: &mut Tables, no: u64, line_text: &[u8], column: u64, note: Note<'_>) -> Result<()> {
        if self.strict {
            let msg = format!("{} (strict: unknown text is an error)", note.message);
            return self.error_at(&mut t.errors, no, column, msg, line_text);
        }
        if !t.notes_seen.insert((self.file_id, note.kind, note.token.to_vec())) {
            return Ok(());
        }
        let n = &mut t.notes;
        n.file_id.push(self.file_id);
        n.line.push(i32::try_from(no).unwrap_or(i32::MAX));
        n.column.push(i32::try_from(column).unwrap_or(i32::MAX));
        n.kind.push(note.kind);
        n.token.push(error_text(note.token));
        n.text.push(error_text(note.text));
        n.message.push(note.message);
        Ok(())
    }
}

/// A line-oriented grammar: one call per line; a `Stop::Bad` is reported at that line.
pub trait LineGrammar<'c> {
    fn line(&mut self, no: u64, text: &'c [u8]) -> R<()>;
    /// Report a problem (an `Err` in strict mode, an `errors` row in collect mode).
    fn report(&mut self, line: u64, column: u64, msg: String, text: &[u8]) -> Result<()>;
    /// The table set being filled (the driver offers it a flush between lines).
    fn tables(&mut self) -> &mut Tables;
}

/// Feed every decodable line to `g` (lines that are not UTF-8 were reported up front by
/// `checked_lines` and are skipped); returns the number of the last line read.
pub fn feed<'c, G: LineGrammar<'c>>(g: &mut G, lines: Lines<'c>) -> Result<u64> {
    let mut last = 0;
    for line in lines {
        if line.bad.is_some() {
            continue;
        }
        g.tables().line_end()?; // a streaming read hands out a batch here when one is full
        last = line.no;
        match g.line(line.no, line.text) {
            Ok(()) => {}
            Err(Stop::Bad(pos, msg)) => g.report(line.no, pos as u64 + 1, msg, line.text)?,
            Err(Stop::Fatal(e)) => return Err(e),
        }
    }
    Ok(last)
}

/// The lines of `data`, for a line grammar (`feed`), after every line that is not valid UTF-8
/// has been reported at its first bad byte, before any other problem (as the reference does: it
/// decodes the whole file before parsing). `Lines` checks the input once, for both.
pub fn checked_lines<'c>(data: &'c [u8], ctx: &FileCtx<'_>, errors: &mut Errors) -> Result<Lines<'c>> {
    let lines = Lines::new(data);
    // also lone CRs (lines.rs): every line that is not valid UTF-8 or holds a lone CR
    if lines.has_bad_lines() {
        for line in lines.clone() {
            if let Some(bad) = line.bad {
                ctx.error_at(errors, line.no, bad.col, bad.message().to_string(), line.text)?;
            }
        }
    }
    Ok(lines)
}


/// Unit tests of the formats: `parse` of every case, collecting and strict, returns (an error
/// or not) and its tables finish, without a panic.
#[cfg(test)]
pub(crate) fn assert_never_panics(cases: &[&[u8]], parse: for<'c> fn(&'c [u8], FileCtx<'c>, &mut Tables) -> Result<()>) {
    for data in cases {
        for collect in [true, false] {
            let mut t = Tables::default();
            let _ = parse(data, FileCtx::for_test(collect), &mut t);
            let _ = t.finish();
        }
    }
}
