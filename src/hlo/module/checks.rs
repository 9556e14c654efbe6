//! What no single line of HLO text shows (FORMATS.md §2.10): a module cut short can be a valid
//! prefix line by line. Gathered while parsing, reported at the end of a file that has no error
//! (a file with errors is known to be incomplete: no second report of the same cut):
//!
//! * a module with no computation at all (its header, then nothing);
//! * in a file XLA named (`FileCtx::xla_named`), a module with no `ENTRY` computation: XLA
//!   prints every module with its entry computation last, so a dump file without one was cut
//!   short. XLA's parser itself takes a module without `ENTRY` (its last computation is the
//!   entry), as hand-written and test inputs have it: those are not judged.
//!
//! A file read in chunks (`hlo/split.rs`) holds one module, opened in its prefix; the chunks
//! count its computations (`ChunkCounts`) and the split joins them (`ModuleChecks::judge`).
//! The reference is `reference/hlo/module.py` (`_ModuleParser.module_problem`).

/// The open module's counts and the problems of the modules already ended.
#[derive(Default)]
pub struct ModuleChecks {
    /// The open module: the line of its header (or first computation) and its name (empty for
    /// a module without header: it is named when it ends) — None before any module.
    open: Option<(u64, Vec<u8>)>,
    /// Computations (and `ENTRY` ones) of the open module so far.
    pub computations: i32,
    pub entries: i32,
    /// (line, message) of the modules ended so far, in file order.
    problems: Vec<(u64, String)>,
}

impl ModuleChecks {
    /// A module starts at `line` (its `HloModule` header, or its first computation).
    pub fn begin(&mut self, line: u64, name: &[u8]) {
        self.open = Some((line, name.to_vec()));
        self.computations = 0;
        self.entries = 0;
    }

    /// A computation of the open module was read whole.
    #[inline]
    pub fn computation(&mut self, is_entry: bool) {
        self.computations += 1;
        self.entries += i32::from(is_entry);
    }

    /// The open module ends here; `headerless_name`: its name when it had no header (as its
    /// `modules` row names it).
    pub fn end(&mut self, headerless_name: Option<&[u8]>, xla_named: bool) {
        let Some((line, name)) = self.open.take() else { return };
        let name = headerless_name.unwrap_or(&name);
        if let Some(message) = judge(name, self.computations, self.entries, xla_named) {
            self.problems.push((line, message));
        }
    }

    /// The open module's line and name (the prefix of a file read in chunks hands it on).
    pub fn open_module(&self) -> Option<(u64, &[u8])> {
        self.open.as_ref().map(|(line, name)| (*line, name.as_slice()))
    }

    /// The problems, in the order they are reported.
    pub fn problems(&self) -> &[(u64, String)] {
        &self.problems
    }
}

/// What is wrong with a module of `computations` computations, `entries` of them `ENTRY`
/// (None: nothing).
pub fn judge(name: &[u8], computations: i32, entries: i32, xla_named: bool) -> Option<String> {
    let name = String::from_utf8_lossy(name);
    if computations == 0 {
        Some(format!("module {name} has no computation (the file is cut short?)"))
    } else if entries == 0 && xla_named {
        Some(format!("module {name} has no ENTRY computation (XLA prints it last: the file is cut short?)"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_module_is_judged_when_it_ends() {
        let mut c = ModuleChecks::default();
        c.end(None, true); // no module open: nothing
        c.begin(1, b"empty");
        c.end(None, false);
        c.begin(3, b"no_entry");
        c.computation(false);
        c.end(None, true);
        c.begin(9, b"");
        c.computation(false);
        c.end(Some(b"module_hand_written"), false); // not named by XLA: its last computation is the entry
        c.begin(12, b"");
        c.computation(false);
        c.end(Some(b"module_cut"), true);
        c.begin(14, b"whole");
        c.computation(true);
        c.end(None, true);
        assert_eq!(
            c.problems(),
            [
                (1, "module empty has no computation (the file is cut short?)".to_string()),
                (3, "module no_entry has no ENTRY computation (XLA prints it last: the file is cut short?)".to_string()),
                (12, "module module_cut has no ENTRY computation (XLA prints it last: the file is cut short?)".to_string()),
            ]
        );
    }
}
