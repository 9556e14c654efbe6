//! An instruction line to its rows (the emission half of the module parser): the field tape
//! first (`tape.rs`), the line parser for what it cannot decide, the general grammar for
//! instructions over several lines or with comments; then `emit` writes the rows.


use std::borrow::Cow;

use super::{Line, Mode, Parser, Result};
use crate::hlo::custom_call::custom_call_info;
use crate::hlo::instruction::{name_list, Piece, Scratch, CALLED_KEYS};
use crate::hlo::rules;
use crate::hlo::general::{general_instruction, skip_trivia, skip_trivia_in_line};
use crate::hlo::instruction::{needs_continuation, parens_open_after, parse_instruction, Instr};
use crate::hlo::line_forms::*;
use crate::hlo::tape;

impl<'t, 'c> Parser<'t, 'c> {
    pub(super) fn instruction(&mut self, line: &Line<'c>) -> Result<()> {
        if self.taped_instruction(line)? {
            return Ok(());
        }
        // Only a `constant(` line can continue, and only if its parentheses do not balance:
        // parse first, and look at continuation only when that fails or the opcode is constant
        // (a string could hold a '(' that the reference's plain count sees).
        let first = parse_instruction(line.text, &mut self.sc);
        let continued = match &first {
            None => needs_continuation(line.text),
            // the opcode is the one `needs_continuation` finds (same scans): count from its '('
            Some(i) if i.opcode == b"constant" => {
                let paren = i.opcode.as_ptr() as usize - line.text.as_ptr() as usize + i.opcode.len();
                parens_open_after(line.text, paren)
            }
            Some(_) => false,
        };
        if continued {
            let text = match self.join(line, |t| !needs_continuation(t)) {
                Some(t) => t,
                None => return self.err(line, 1, "constant literal not closed before end of file"),
            };
            // The join always adds a line, so the joined text is new: parse it.
            let Some(ins) = parse_instruction(&text, &mut self.sc) else {
                return self.err(line, 1, "cannot parse instruction");
            };
            return self.emit(line, &text, 0, &ins);
        }
        match first {
            // trailing blanks or a ',' continue into the general grammar (a next line may
            // start with ',': XLA reads line breaks as blanks)
            // (a line ending in ',' continues: `custom_call_target="x",` then `backend_config=…`
            // on a line of its own, as XLA's test inputs write)
            Some(ins) if !matches!(line.text.last(), Some(b' ' | b'\t' | b',')) && !self.next_starts_with_comma(line) => {
                self.emit(line, line.text, 0, &ins)
            }
            _ => match self.leading_trivia(line)? {
                None => Ok(()),
                Some(rest) if rest.start != line.start => {
                    self.pending = Some(rest);
                    Ok(())
                }
                Some(rest) => match blanks(rest.text) {
                    b if rest.text.get(b) == Some(&b'}') => self.close_computation(&trim_start(&rest, b)),
                    _ => self.general(&rest),
                },
            },
        }
    }

    /// An instruction line through its field tape (`tape.rs`): stage 1, then the decoders of
    /// the columns this read builds, then its rows. False (nothing done) when the tape cannot
    /// decide the line, or the line is one `instruction` gives to more than the line parser (a
    /// `constant(` whose parentheses stay open, a continuation on the next line): the caller
    /// then reads it as before.
    #[inline]
    fn taped_instruction(&mut self, line: &Line<'c>) -> Result<bool> {
        let text = line.text;
        if matches!(text.last(), Some(b' ' | b'\t' | b',')) || tape::build(text, &mut self.tape, &mut self.sc.commas).is_err() {
            return Ok(false);
        }
        let (oa, ob) = self.tape.opcode;
        if &text[oa..ob] == b"constant" && parens_open_after(text, ob) {
            return Ok(false);
        }
        if self.next_starts_with_comma(line) {
            return Ok(false);
        }
        let Some(ins) = tape::decode(text, &self.tape, &mut self.sc, self.want) else { return Ok(false) };
        // emit's checks read the attributes from `sc.attrs` (where the full parse leaves them)
        std::mem::swap(&mut self.tape.attrs, &mut self.sc.attrs);
        let r = self.emit(line, text, 0, &ins);
        std::mem::swap(&mut self.tape.attrs, &mut self.sc.attrs);
        r?;
        Ok(true)
    }

    /// True when the next token after `line` (blanks, line breaks and comments skipped) is a
    /// ',' on a later line: the instruction continues there. Cheap: normally a few bytes.
    #[inline]
    fn next_starts_with_comma(&self, line: &Line<'c>) -> bool {
        let e = line.start + line.text.len();
        // The usual next line starts with an instruction or '}' after at most two blanks: no
        // comment or ',' can come first (the full skip below costs ~60 instructions a line).
        if let Some(&[b'\n', a, b, c]) = self.data.get(e..e + 4) {
            let first = if a != b' ' { a } else if b != b' ' { b } else { c };
            if first.is_ascii_alphanumeric() || first == b'%' || first == b'}' {
                return false;
            }
        }
        match skip_trivia(self.data, e) {
            Ok(i) => self.data.get(i) == Some(&b',') && memchr::memchr(b'\n', &self.data[e..i]).is_some(),
            Err(_) => false,
        }
    }

    /// Skip blanks and comments at the start of `line` (a `/* … */` comment may end on a later
    /// line). None: nothing else is on the line(s). Some: the line, or the rest of the line
    /// where the comment ended.
    pub(super) fn leading_trivia(&mut self, line: &Line<'c>) -> Result<Option<Line<'c>>> {
        let s = line.text;
        let i = blanks(s);
        if i < s.len() && s[i] != b'/' {
            return Ok(Some(*line));
        }
        if self.mode.bail() {
            return Ok(None);
        }
        match skip_trivia_in_line(self.data, line.start + i) {
            Err((at, msg)) => {
                self.error_pos(at, msg)?;
                // the rest of the file is inside the comment
                while self.next_line().is_some() {}
                Ok(None)
            }
            Ok(pos) => Ok(self.resume(line, pos)),
        }
    }

    /// Lines up to the one holding `pos` are consumed; the rest of that line from `pos`, unless
    /// it is empty.
    pub(super) fn resume(&mut self, line: &Line<'c>, pos: usize) -> Option<Line<'c>> {
        let mut cur = *line;
        while pos > cur.start + cur.text.len() {
            match self.next_line() {
                Some(l) => cur = l,
                None => return None,
            }
        }
        let end = cur.start + cur.text.len();
        let pos = pos.max(cur.start);
        (pos < end).then(|| Line { no: cur.no, start: pos, text: &self.data[pos..end], bad: cur.bad })
    }

    /// An error at byte `pos` of the file: its line and column.
    #[cold]
    fn error_pos(&mut self, pos: usize, msg: String) -> Result<()> {
        if self.starts.is_empty() {
            self.starts.push(0);
            self.starts.extend(memchr::memchr_iter(b'\n', self.data).map(|p| p + 1));
        }
        let k = self.starts.partition_point(|&s| s <= pos) - 1;
        let start = self.starts[k];
        let end = memchr::memchr(b'\n', &self.data[start..]).map_or(self.data.len(), |p| start + p);
        let text = &self.data[start..end];
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = if std::str::from_utf8(text).is_ok() { text } else { b"" };
        self.ctx.error_at(&mut self.t.errors, k as u64 + 1, (pos - start) as u64 + 1, msg, text)
    }

    /// An instruction read with the general grammar (`general.rs`), starting at `line` and
    /// possibly continuing over the following lines.
    #[cold]
    pub(super) fn general(&mut self, line: &Line<'c>) -> Result<()> {
        if self.mode.bail() {
            return Ok(()); // positions and later lines are the serial parse's business
        }
        let data = self.data;
        let mut sc = std::mem::take(&mut self.sc);
        let res = general_instruction(data, line.start, &mut sc);
        let out = match res {
            Err((at, msg)) => {
                self.error_pos(at, msg)?;
                // go on after the line of the error
                let mut cur = *line;
                while at > cur.start + cur.text.len() {
                    match self.next_line() {
                        Some(l) => cur = l,
                        None => break,
                    }
                }
                Ok(())
            }
            Ok((ins, end)) => {
                // the lines it spans must all be valid
                let mut cur = *line;
                let mut bad = false;
                while end > cur.start + cur.text.len() {
                    match self.next_line() {
                        Some(l) => {
                            bad |= l.bad.is_some();
                            cur = l;
                        }
                        None => break,
                    }
                }
                let r = if bad {
                    self.err(line, 1, "instruction runs into a line that is not valid (see its error)")
                } else {
                    std::mem::swap(&mut self.sc, &mut sc);
                    let r = self.emit(line, data, line.start, &ins);
                    std::mem::swap(&mut self.sc, &mut sc);
                    r
                };
                let e = cur.start + cur.text.len();
                if end < e {
                    self.pending = Some(Line { no: cur.no, start: end, text: &data[end..e], bad: None });
                }
                r
            }
        };
        self.sc = sc;
        out
    }

    /// A metadata number out of range at byte `at` of the instruction `text` (which may span
    /// lines, joined with "\n"): an error at its line and column, and no row.
    #[cold]
    fn number_error(&mut self, line: &Line<'c>, text: &[u8], base: usize, at: usize) -> Result<()> {
        let msg = format!("metadata number is out of range (at most {})", i32::MAX);
        let nl = memchr::memrchr(b'\n', &text[base..at]).map(|p| p + base);
        let Some(nl) = nl else {
            return self.err(line, (at - base) as u64 + 1, msg);
        };
        let no = line.no + memchr::memchr_iter(b'\n', &text[base..at]).count() as u64;
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |e| at + e);
        let lt = &text[nl + 1..end];
        let lt = lt.strip_suffix(b"\r").unwrap_or(lt);
        self.ctx.error_at(&mut self.t.errors, no, (at - nl) as u64, msg, lt)
    }

    /// Line number, column and text of the line of byte `at` of `text` (which may span lines,
    /// joined with "\n", from `base`: `line` is the line of `base`).
    fn place<'a>(line: &Line<'a>, text: &'a [u8], base: usize, at: usize) -> (u64, u64, &'a [u8]) {
        match memchr::memrchr(b'\n', &text[base..at]).map(|p| p + base) {
            None => (line.no, (at - base) as u64 + 1, line.text),
            Some(nl) => {
                let no = line.no + memchr::memchr_iter(b'\n', &text[base..at]).count() as u64;
                let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |e| at + e);
                let lt = &text[nl + 1..end];
                (no, (at - nl) as u64, lt.strip_suffix(b"\r").unwrap_or(lt))
            }
        }
    }

    /// An error at byte `at` of the instruction `text` (see `place`): its line and column.
    #[cold]
    fn error_in(&mut self, line: &Line<'_>, text: &[u8], base: usize, at: usize, msg: String) -> Result<()> {
        let (no, col, lt) = Self::place(line, text, base, at);
        self.ctx.error_at(&mut self.t.errors, no, col, msg, lt)
    }

    /// A `notes` row at byte `at` of the instruction `text` (see `place`).
    #[cold]
    fn note_in(&mut self, line: &Line<'_>, text: &[u8], base: usize, at: usize, note: crate::driver::Note<'_>) -> Result<()> {
        let (no, col, lt) = Self::place(line, text, base, at);
        self.ctx.note(self.t, no, lt, col, note)
    }

    /// A `notes` row per attribute key no XLA we know prints (`Scratch::unknown_attrs`), at its
    /// line and column (`text` may span lines, joined with "\n", from `base`).
    #[cold]
    fn unknown_attributes(&mut self, line: &Line<'_>, text: &[u8], base: usize) -> Result<()> {
        for k in 0..self.sc.unknown_attrs.len() {
            let (ks, ke, ve) = self.sc.unknown_attrs[k];
            let key = &text[ks..ke];
            let message = format!("unknown attribute '{}' (newer XLA?); kept raw in attributes", String::from_utf8_lossy(key));
            let note = crate::driver::Note { kind: "unknown_attribute", token: key, text: &text[ks..ve], message };
            self.note_in(line, text, base, ks, note)?;
        }
        Ok(())
    }

    /// The `notes` of a row that XLA's parser would refuse but a newer XLA may print
    /// (`rules.rs`): an unknown element type or opcode, an empty operand, an unknown metadata key.
    #[cold]
    fn rule_notes(&mut self, line: &Line<'_>, text: &[u8], base: usize, ins: &Instr<'_>, unknown_type: rules::UnknownType) -> Result<()> {
        let at = |s: &[u8]| s.as_ptr() as usize - text.as_ptr() as usize;
        if let Some((a, b)) = unknown_type {
            let (a, b) = (at(ins.shape) + a, at(ins.shape) + b);
            let t = &text[a..b];
            let message = format!("unknown element type '{}' (newer XLA?); the row is kept, its shape as written", String::from_utf8_lossy(t));
            self.note_in(line, text, base, a, crate::driver::Note { kind: "unknown_element_type", token: t, text: ins.shape, message })?;
        }
        if !rules::known_opcode(ins.opcode) {
            let message = format!(
                "unknown opcode '{}' (newer XLA?); the row is kept, and the cost analysis counts it as unknown",
                String::from_utf8_lossy(ins.opcode)
            );
            let note = crate::driver::Note { kind: "unknown_opcode", token: ins.opcode, text: ins.opcode, message };
            self.note_in(line, text, base, at(ins.opcode), note)?;
        }
        if self.sc.empty_operand {
            let message = "an empty operand (', ,' or a ',' before ')'): skipped, as XLA's parser does".to_string();
            let note = crate::driver::Note { kind: "empty_operand", token: b"", text: ins.operand_text, message };
            self.note_in(line, text, base, at(ins.operand_text), note)?;
        }
        for k in 0..self.sc.unknown_md.len() {
            let (ks, ke, ve) = self.sc.unknown_md[k];
            let key = &text[ks..ke];
            let message = format!("unknown metadata key '{}' (newer XLA?); kept raw in attributes", String::from_utf8_lossy(key));
            let note = crate::driver::Note { kind: "unknown_metadata_key", token: key, text: &text[ks..ve], message };
            self.note_in(line, text, base, ks, note)?;
        }
        Ok(())
    }

    /// `s` as a key of the name maps: a slice of the input when it lies in it (always, but for
    /// text joined from several lines), else a copy.
    #[inline]
    pub(super) fn name_key(&self, s: &[u8]) -> Cow<'c, [u8]> {
        let (d, p) = (self.data.as_ptr() as usize, s.as_ptr() as usize);
        if p >= d && p + s.len() <= d + self.data.len() {
            Cow::Borrowed(&self.data[p - d..p - d + s.len()])
        } else {
            Cow::Owned(s.to_vec())
        }
    }

    /// XLA's rules no single field shows (`rules.rs`), before the row is written: Ok(false)
    /// when one was broken (its error reported: no row). The instruction's name is defined
    /// from here on in its computation (also when it breaks a later rule, so that its uses do
    /// not each report it again), unless it was defined already.
    #[inline]
    fn rules(&mut self, line: &Line<'c>, text: &[u8], base: usize, ins: &Instr<'_>) -> Result<Option<rules::UnknownType>> {
        let at = |s: &[u8]| s.as_ptr() as usize - text.as_ptr() as usize;
        // (after an error in the computation a name may be missing: uses are not judged)
        self.damaged |= self.t.errors.len() > self.comp_errors;
        self.module_damaged |= self.damaged || self.t.errors.len() > self.module_errors;
        // the operands against the names before this instruction (its own is not one yet)
        let dangling = if self.damaged {
            None
        } else {
            self.sc.operands.iter().position(|&p| !self.defined.contains(self.sc.piece(text, p)))
        };
        let key = self.name_key(ins.name);
        match self.defined.define(key, line.no) {
            Ok(()) => {}
            Err(first) => {
                let msg = format!(
                    "instruction '{}' is already defined in this computation (line {first}): XLA's parser refuses a second",
                    String::from_utf8_lossy(ins.name)
                );
                self.error_in(line, text, base, at(ins.name), msg)?;
                return Ok(None);
            }
        }
        if let Some(at) = ins.number_error {
            self.number_error(line, text, base, at)?;
            return Ok(None);
        }
        let attrs = &self.sc.attrs;
        let key_of = |k: usize| &text[attrs[k].key.0..attrs[k].key.1];
        if let Some(k) = (1..attrs.len()).find(|&k| (0..k).any(|j| key_of(j) == key_of(k))) {
            let (ks, key) = (attrs[k].key.0, String::from_utf8_lossy(key_of(k)).into_owned());
            let msg = format!("attribute '{key}' is given twice: XLA's parser refuses a repeated attribute");
            self.error_in(line, text, base, ks, msg)?;
            return Ok(None);
        }
        let unknown_type = if ins.shape.is_empty() || self.good_shapes.contains(ins.shape) {
            None
        } else {
            match rules::check_shape(ins.shape) {
                Ok(None) => {
                    if let Cow::Borrowed(shape) = self.name_key(ins.shape) {
                        self.good_shapes.insert(shape);
                    }
                    None
                }
                Ok(u) => u,
                Err((p, msg)) => {
                    self.error_in(line, text, base, at(ins.shape) + p, msg)?;
                    return Ok(None);
                }
            }
        };
        if let Some(k) = dangling {
            let p = self.sc.operands[k];
            let name = String::from_utf8_lossy(self.sc.piece(text, p)).into_owned();
            // at the operand; at the operand list when comments are in it (the reference's
            // names are read with the comments removed)
            let pos = match p {
                Piece::Text(a, _) if memchr::memmem::find(ins.operand_text, b"/*").is_none() => a,
                _ => at(ins.operand_text),
            };
            let msg = format!("operand '{name}' is not defined before this instruction in its computation (XLA's parser needs it earlier)");
            self.error_in(line, text, base, pos, msg)?;
            return Ok(None);
        }
        let called = if self.module_damaged { 0 } else { self.sc.called.len() };
        for k in 0..called {
            let c = self.sc.piece(text, self.sc.called[k]);
            if self.computations.contains_key(&rules::NameRef::new(c)) {
                continue;
            }
            if self.mode == Mode::Chunk {
                // it may be a computation of a chunk before: the split checks it (else the file
                // is parsed serially, which reports it)
                let (d, p) = (self.data.as_ptr() as usize, c.as_ptr() as usize);
                if p >= d && p + c.len() <= d + self.data.len() {
                    self.deferred.push((p - d, p - d + c.len()));
                    continue;
                }
                self.mode = Mode::Bailed;
                return Ok(None);
            }
            let name = String::from_utf8_lossy(c).into_owned();
            let pos = self.called_at(text, c).unwrap_or(at(ins.operand_text));
            let msg = format!("computation '{name}' is not defined before this instruction (XLA's parser needs it earlier in the module)");
            self.error_in(line, text, base, pos, msg)?;
            return Ok(None);
        }
        Ok(Some(unknown_type))
    }

    /// Where the value of the first called-computation attribute naming `name` starts.
    #[cold]
    fn called_at(&self, text: &[u8], name: &[u8]) -> Option<usize> {
        let mut tmp = Scratch::default();
        self.sc.attrs.iter().find_map(|a| {
            if !CALLED_KEYS.contains(&&text[a.key.0..a.key.1]) {
                return None;
            }
            tmp.called.clear();
            name_list(text, a.value, &mut tmp);
            tmp.called.iter().any(|&p| tmp.piece(text, p) == name).then_some(a.value.0)
        })
    }

    /// The rows of one parsed instruction (`text` is what was parsed: operand pieces point
    /// into it); passed by reference, so the (large) `Instr` is never moved.
    #[inline]
    fn emit(&mut self, line: &Line<'c>, text: &[u8], base: usize, ins: &Instr<'_>) -> Result<()> {
        let Some(unknown_type) = self.rules(line, text, base, ins)? else { return Ok(()) };
        if self.mode == Mode::Bailed {
            return Ok(());
        }
        let comp = self.comp.as_mut().expect("a computation is open");
        let comp_id = comp.id;
        if ins.is_root {
            let second = comp.has_root;
            comp.has_root = true;
            if second {
                self.ctx.error(&mut self.t.errors, line, 3, "second ROOT in computation")?;
            }
        }
        let (src, sc, r) = (self.ctx.src, &self.sc, &mut self.t.instructions);
        let id = self.instruction_id;
        self.instruction_id += 1;
        r.file_id.push(self.ctx.file_id);
        r.computation_id.push(comp_id);
        r.instruction_id.push(id);
        r.name.push(&src, ins.name);
        r.is_root.push(ins.is_root);
        r.opcode.push(&src, ins.opcode);
        r.shape.push(&src, ins.shape);
        for (k, &p) in sc.operands.iter().enumerate() {
            r.operands.items.push(&src, sc.piece(text, p));
            r.operand_index.push_path(sc.operand_path(k));
        }
        r.operands.end_row();
        r.operand_index.end_row();
        r.operand_text.push(&src, ins.operand_text);
        for &p in &sc.called {
            r.called_computations.items.push(&src, sc.piece(text, p));
        }
        r.called_computations.end_row();
        r.attributes.push(&src, ins.attributes);
        r.op_name.push_opt(&src, ins.op_name.as_deref());
        r.op_type.push_opt(&src, ins.op_type.as_deref());
        // Stack-frame tables win over metadata when they know the frame (schema decision). The
        // lookup reports nothing, so it is skipped when no source column is wanted.
        let want_source = r.source_file.is_built() || r.source_line.is_built() || r.source_function.is_built();
        match ins.stack_frame_id.filter(|_| want_source).and_then(|f| self.frames.resolve(f)) {
            Some((file, function, source_line)) => {
                r.source_file.push_opt(&src, file);
                r.source_line.push(Some(source_line));
                r.source_function.push_opt(&src, function);
            }
            None => {
                r.source_file.push_opt(&src, ins.source_file.as_deref());
                r.source_line.push(ins.source_line);
                r.source_function.push_null();
            }
        }
        r.stack_frame_id.push(ins.stack_frame_id);
        r.custom_call_target.push_opt(&src, ins.custom_call_target.as_deref());
        r.backend_config.push_opt(&src, ins.backend_config.as_deref());
        r.fusion_kind.push_opt(&src, ins.fusion_kind);
        r.sharding.push_opt(&src, ins.sharding);
        r.line.push(line.no as i32);
        r.offset.push(line.start as i64);
        if !self.sc.unknown_attrs.is_empty() {
            self.unknown_attributes(line, text, base)?;
        }
        if unknown_type.is_some() || self.sc.empty_operand || !self.sc.unknown_md.is_empty() || !rules::known_opcode(ins.opcode) {
            self.rule_notes(line, text, base, ins, unknown_type)?;
        }

        // (the body's base64 check costs a pass over what can be megabytes: only when wanted)
        if ins.opcode == b"custom-call" && self.t.custom_calls.is_wanted() {
            let info = custom_call_info(ins.backend_config.as_deref());
            let c = &mut self.t.custom_calls;
            c.file_id.push(self.ctx.file_id);
            c.instruction_id.push(id);
            c.name.push(&src, ins.name);
            c.target.push(&src, ins.custom_call_target.as_deref().unwrap_or(b""));
            c.body_length.push(info.body_length);
            c.decoded_length.push(info.decoded_length);
            c.format.push(info.format);
            c.kernel_name.push_opt(&src, info.kernel_name.as_deref());
        }
        Ok(())
    }
}
