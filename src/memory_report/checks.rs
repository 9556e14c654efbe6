//! What no single line of a memory-usage report shows (FORMATS.md §2.8): a table cut between
//! its rows. XLA prints every row of a table until its rows add up to the whole (100%, or no
//! bytes left), or says what it left out (`The rest N values …` / `The rest N allocations …`
//! right after the last row). A table whose last row falls short with no such line was cut.
//! Gathered while parsing, reported at the end of a file with no error (a file with errors is
//! known to be incomplete: no second report of the same cut). The reference is
//! `reference/memory_report.py` (`_TableEnds`).

/// The last row of the table (and of the allocation list) being read, and the problems of the
/// tables already ended.
#[derive(Default)]
pub struct TableEnds {
    /// (line, percent) of the last row of the offset table being read.
    table: Option<(u64, Option<i32>)>,
    /// (line, bytes remaining) of the last row of the allocation list being read.
    list: Option<(u64, Option<i64>)>,
    /// (line, message), in file order.
    problems: Vec<(u64, String)>,
}

impl TableEnds {
    /// A row of an offset table.
    pub fn table_row(&mut self, line: u64, percent: Option<i32>) {
        self.table = Some((line, percent));
    }

    /// A row of the allocation list.
    pub fn list_row(&mut self, line: u64, remaining: Option<i64>) {
        self.list = Some((line, remaining));
    }

    /// `The rest N values|allocations …`: the table (or list) above was cut on purpose.
    pub fn rest(&mut self) {
        self.table = None;
        self.list = None;
    }

    /// The table being read (and the list) ended here: judge its last row.
    pub fn end(&mut self) {
        if let Some((line, Some(percent))) = self.table.take() {
            if percent < 100 {
                self.problems.push((line, format!("this table's rows stop at {percent}% of its total, with no 'The rest N values …' line: the file is cut short")));
            }
        }
        if let Some((line, Some(remaining))) = self.list.take() {
            if remaining > 0 {
                self.problems.push((line, format!("the allocation list stops with {} bytes not listed and no 'The rest N allocations …' line: the file is cut short", with_commas(remaining))));
            }
        }
    }

    /// The problems, in file order (call `end` first).
    pub fn problems(&self) -> &[(u64, String)] {
        &self.problems
    }
}

/// `n` with a comma every three digits (Python's `f"{n:,}"`).
fn with_commas(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_that_falls_short_without_a_rest_line_is_cut() {
        let mut e = TableEnds::default();
        e.table_row(3, Some(40));
        e.table_row(4, Some(100));
        e.end(); // complete
        e.table_row(7, Some(60));
        e.rest(); // `The rest …`
        e.end();
        e.table_row(9, None); // nan: a table of 0 bytes
        e.end();
        e.table_row(11, Some(97));
        e.end(); // cut
        e.list_row(13, Some(1_234_567));
        e.end(); // cut
        e.list_row(15, Some(0));
        e.end();
        assert_eq!(
            e.problems(),
            [
                (11, "this table's rows stop at 97% of its total, with no 'The rest N values …' line: the file is cut short".to_string()),
                (13, "the allocation list stops with 1,234,567 bytes not listed and no 'The rest N allocations …' line: the file is cut short".to_string()),
            ]
        );
        assert_eq!((with_commas(0), with_commas(999), with_commas(1000), with_commas(-12345)), ("0".into(), "999".into(), "1,000".into(), "-12,345".into()));
    }
}
