//! The TPU printer of out-of-memory reports (FORMATS.md §2.9): its summary line, its section
//! headers and the entries under them.

use super::*;
use crate::lex::{bad, human_value, tpu_size_match, Cur, Stop, R};

/// The TPU runtime's and compiler's one-line out-of-memory messages (XLA's error codes E0100,
/// E0101, E1000): `Attempting to allocate X. That was not possible. There are Y free.`,
/// `Attempting to reserve X at the bottom of memory. That was not possible. There are Y free,
/// Z reserved, and W reservable.`, `Aborting compilation early because it's unlikely to have
/// enough memory. Requires X, has Y available.`
pub(super) const TPU_ONE_LINERS: [&[u8]; 3] =
    [b"Attempting to allocate ", b"Attempting to reserve ", b"unlikely to have enough memory. Requires "];

/// Where a one-line TPU message starts in `c`, if it holds one.
pub(super) fn tpu_one_liner_at(c: &[u8]) -> Option<usize> {
    TPU_ONE_LINERS.iter().filter_map(|m| memchr::memmem::find(c, m)).min()
}

/// A TPU size at `p` of `c`: (its end, its bytes: None beyond int64).
fn size_at(c: &[u8], p: usize) -> Option<(usize, Option<i64>)> {
    let (end, neg, whole, frac, power) = tpu_size_match(c, p)?;
    Some((end, human_value(neg, whole, frac, power)))
}

/// `Total NAME usage …:`, `Program NAME requirement …:` or `Largest program allocations in NAME:`:
/// the memory space NAME.
pub(super) fn tpu_header_space(c: &[u8]) -> Option<&[u8]> {
    if !c.ends_with(b":") {
        return None;
    }
    if let Some(r) = c.strip_prefix(b"Total ") {
        memchr::memmem::find(c, b" usage ")?;
        return Some(word(r));
    }
    if let Some(r) = c.strip_prefix(b"Program ") {
        memchr::memmem::find(c, b" requirement ")?;
        return Some(word(r));
    }
    c.strip_prefix(b"Largest program allocations in ").map(|r| &r[..r.len() - 1])
}

pub(super) fn word(r: &[u8]) -> &[u8] {
    &r[..r.iter().take_while(|&&b| b != b' ').count()]
}

pub(super) fn is_tpu_header(c: &[u8]) -> bool {
    tpu_header_space(c).is_some()
}

/// A TPU size token at `p` of `c` that ends the line or is followed by a space: its end.
pub(super) fn tpu_token(c: &[u8], p: usize) -> Option<usize> {
    let (end, ..) = tpu_size_match(c, p)?;
    (end == c.len() || c[end] == b' ').then_some(end)
}

impl<'t, 'c> Parser<'t, 'c> {
    /// The figures of a one-line TPU message (`c` from its marker on, `TPU_ONE_LINERS`):
    /// `requested` and `free` (`reserved`, `reservable`), or `required` and `available`. What
    /// does not read as such is left out (no error: the words are the runtime's, not a format).
    pub(super) fn tpu_one_liner(&mut self, no: u64, c: &'c [u8]) {
        let after = |c: &[u8], p: usize, w: &[u8]| c[p..].starts_with(w).then_some(p + w.len());
        let alloc = after(c, 0, b"Attempting to allocate ").or_else(|| after(c, 0, b"Attempting to reserve "));
        if let Some(p) = alloc {
            let Some((end, v)) = size_at(c, p) else { return };
            self.figure("summary", "requested", v, &c[p..end], no);
            let Some(at) = memchr::memmem::find(&c[end..], b"There are ") else { return };
            let p = end + at + b"There are ".len();
            let Some((e, v)) = size_at(c, p).filter(|&(e, _)| c[e..].starts_with(b" free")) else { return };
            self.figure("summary", "free", v, &c[p..e], no);
            let Some(p) = after(c, e + b" free".len(), b", ") else { return };
            let Some((e, v)) = size_at(c, p).filter(|&(e, _)| c[e..].starts_with(b" reserved")) else { return };
            self.figure("summary", "reserved", v, &c[p..e], no);
            let Some(p) = after(c, e + b" reserved".len(), b", and ") else { return };
            let Some((e, v)) = size_at(c, p).filter(|&(e, _)| c[e..].starts_with(b" reservable")) else { return };
            self.figure("summary", "reservable", v, &c[p..e], no);
            return;
        }
        let Some(at) = memchr::memmem::find(c, b"Requires ") else { return };
        let p = at + b"Requires ".len();
        let Some((e, v)) = size_at(c, p) else { return };
        self.figure("summary", "required", v, &c[p..e], no);
        let Some(p) = after(c, e, b", has ") else { return };
        let Some((e, v)) = size_at(c, p).filter(|&(e, _)| c[e..].starts_with(b" available")) else { return };
        self.figure("summary", "available", v, &c[p..e], no);
    }

    /// `NAME. [Used X of Y NAME.] [Exceeded NAME capacity by Z[.]]` after the TPU marker;
    /// whatever follows is not read.
    pub(super) fn tpu_summary(&mut self, no: u64, text: &'c [u8], pos: usize, stop: usize) -> R<()> {
        let mut cur = Cur { t: text, pos, stop };
        let n = cur.view().iter().take_while(|&&b| b != b'.' && b != b' ').count();
        if n == 0 {
            return bad(cur.pos, "expected the memory space name");
        }
        self.rep().memory_space = Some(&text[cur.pos..cur.pos + n]);
        cur.pos += n;
        if cur.view().starts_with(b" while ") {
            // `… in memory space vmem while allocating on stack for %x = …`: no figures
            return Ok(());
        }
        cur.expect(".", "after the memory space name")?;
        cur.spaces();
        if cur.accept("Used ") {
            let at = cur.pos;
            let used = cur.tpu_size("the memory used")?;
            self.figure("summary", "used", Some(used), &text[at..cur.pos], no);
            cur.expect(" of ", "")?;
            let at = cur.pos;
            let capacity = cur.tpu_size("the capacity")?;
            self.figure("summary", "capacity", Some(capacity), &text[at..cur.pos], no);
            let n = cur.view().iter().take_while(|&&b| b != b'.').count();
            cur.pos += n;
            cur.accept(".");
            cur.spaces();
        }
        if cur.view().starts_with(b"Exceeded ") {
            self.exceeded(no, &mut cur)?;
        }
        Ok(())
    }

    /// `Exceeded NAME capacity by Z[.]`
    pub(super) fn exceeded(&mut self, no: u64, cur: &mut Cur<'c>) -> R<()> {
        cur.expect("Exceeded ", "")?;
        let Some(by) = memchr::memmem::find(cur.view(), b" capacity by ") else {
            return bad(cur.pos, "expected 'Exceeded NAME capacity by SIZE'");
        };
        cur.pos += by + b" capacity by ".len();
        let at = cur.pos;
        let v = cur.tpu_size("the excess")?;
        self.figure("summary", "exceeded", Some(v), &cur.t[at..cur.pos], no);
        Ok(())
    }

    pub(super) fn tpu_line(&mut self, no: u64, part: Part, mut cur: Cur<'c>, c: &'c [u8]) -> R<bool> {
        // `N. Size: X` starts an allocation (in the list, or after an unclosed one).
        if matches!(part, Part::Allocs | Part::Buffer) {
            let n = c.iter().take_while(|b| b.is_ascii_digit()).count();
            if n > 0 && c[n..].starts_with(b". Size:") {
                let rank = cur.uint("the allocation number", I32_MAX);
                self.open_buffer(no, cur.t, rank.as_ref().map_or(0, |&v| v as i32))?;
                rank?;
                cur.expect(". Size:", "")?;
                cur.spaces();
                let at = cur.pos;
                let v = match cur.tpu_size("the size") {
                    Ok(v) => v,
                    Err(Stop::Bad(pos, msg)) if cut_short_size(&cur.t[at..cur.stop]) => {
                        // the paste may end on this line (issue 51): decided at the next line
                        self.size_cut_short(no, pos, msg);
                        return Ok(true);
                    }
                    Err(e) => return Err(e),
                };
                cur.end("the size")?;
                self.rep().buf.as_mut().expect("opened").size = Some((&cur.t[at..cur.pos], v));
                return Ok(true);
            }
            if part == Part::Allocs {
                return Ok(false);
            }
            return self.buffer_line(no, cur, c);
        }
        if c.starts_with(b"HLO module: ") && part == Part::Head && self.wants_module() {
            // the E1000 message's last sentence, wrapped onto a line of its own
            self.module_sentence(no, cur)?;
            return Ok(true);
        }
        if c.starts_with(b"Exceeded ") && part == Part::Head && !self.rep().detailed {
            self.exceeded(no, &mut cur)?;
            return Ok(true);
        }
        if let Some(space) = tpu_header_space(c) {
            let r = self.rep();
            if r.memory_space.is_none() {
                r.memory_space = Some(space);
            }
        }
        if c.starts_with(b"Total ") && memchr::memmem::find(c, b" usage ").is_some() && c.ends_with(b":") {
            let r = self.rep();
            r.part = Part::Usage;
            r.detailed = true;
            let at = memchr::memmem::find(c, b" usage ").unwrap() + b" usage ".len();
            cur.pos += at;
            let v_at = cur.pos;
            cur.accept(">= ");
            cur.stop -= 1;
            let v = cur.tpu_size("the total usage")?;
            cur.end("the total usage")?;
            self.figure("total_usage", "total", Some(v), &cur.t[v_at..cur.stop], no);
            return Ok(true);
        }
        if c.starts_with(b"Program ") && memchr::memmem::find(c, b" requirement ").is_some() && c.ends_with(b":") {
            let r = self.rep();
            r.part = Part::Program;
            r.detailed = true;
            cur.pos += memchr::memmem::find(c, b" requirement ").unwrap() + b" requirement ".len();
            cur.stop -= 1;
            let at = cur.pos;
            let v = cur.tpu_size("the program requirement")?;
            cur.end("the program requirement")?;
            self.figure("program_requirement", "total", Some(v), &cur.t[at..cur.stop], no);
            return Ok(true);
        }
        if c.starts_with(b"Largest program allocations in ") && c.ends_with(b":") {
            let r = self.rep();
            r.part = Part::Allocs;
            r.detailed = true;
            return Ok(true);
        }
        if let Some(rest) = c.strip_prefix(b"Output size ") {
            let r = self.rep();
            r.part = Part::Head;
            r.detailed = true;
            cur.pos += b"Output size ".len();
            if rest.starts_with(b"unknown") {
                self.figure("output", "output size", None, &cur.t[cur.pos..cur.pos + 7], no);
                cur.pos += 7;
                cur.accept(".");
                cur.end("the output size")?;
                return Ok(true);
            }
            let at = cur.pos;
            let v = cur.tpu_size("the output size")?;
            self.figure("output", "output size", Some(v), &cur.t[at..cur.pos], no);
            cur.expect("; shares ", "")?;
            let at = cur.pos;
            let v = cur.tpu_size("the bytes shared with arguments")?;
            self.figure("output", "shared with arguments", Some(v), &cur.t[at..cur.pos], no);
            cur.expect(" with arguments", "")?;
            cur.accept(".");
            cur.end("the output size")?;
            return Ok(true);
        }
        if matches!(part, Part::Usage | Part::Program) {
            return self.tpu_entry(no, part, cur, c);
        }
        Ok(false)
    }

    /// `NAME SIZE [REST]` or `NAME unknown size` in a TPU section; `HLO temp` entries carry
    /// `Unpadded (X)`, `Padded (X)` and `fragmentation (X)` figures in REST.
    pub(super) fn tpu_entry(&mut self, no: u64, part: Part, mut cur: Cur<'c>, c: &'c [u8]) -> R<bool> {
        let mut p = 1;
        let found = loop {
            if p >= c.len() {
                break None;
            }
            if c[p - 1] == b' ' && c[p] != b' ' {
                if let Some(end) = tpu_token(c, p) {
                    break Some((p, Some(end)));
                }
                if c[p..].starts_with(b"unknown size") {
                    break Some((p, None));
                }
            }
            p += 1;
        };
        let Some((p, end)) = found else { return Ok(false) };
        if !c[0].is_ascii_alphabetic() {
            return Ok(false);
        }
        let key = std::str::from_utf8(trim_end(&c[..p])).expect("UTF-8 line").to_string();
        let section = if part == Part::Usage { "total_usage" } else { "program_requirement" };
        let Some(end) = end else {
            self.figure(section, key, None, &c[p..], no);
            return Ok(true);
        };
        cur.pos += p;
        let v = cur.tpu_size("the size")?;
        self.figure(section, key.clone(), Some(v), &c[p..], no);
        let base = cur.pos - end;
        for (word, suffix) in [(&b"Unpadded ("[..], "unpadded"), (b"Padded (", "padded"), (b"fragmentation (", "fragmentation")] {
            if let Some(at) = memchr::memmem::find(&c[end..], word) {
                cur.pos = base + end + at + word.len();
                let s = cur.pos;
                let v = cur.tpu_size("the size")?;
                cur.expect(")", "")?;
                self.figure(section, format!("{key} {suffix}"), Some(v), &cur.t[s..cur.pos - 1], no);
            }
        }
        Ok(true)
    }
}
