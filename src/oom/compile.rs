//! The TPU compiler's one-line compile-time out-of-memory errors (FORMATS.md §2.9.5), which
//! libtpu prints instead of the detailed report since 2026 (XLA error codes E1000, E1001):
//!
//! * `Ran out of memory on HBM, the total memory required for HLO temporaries (354.34G) exceeds
//!   available HBM (15.75G). HLO module: jit_step.` — what the program needs, what the device
//!   has, and the module (its last sentence may stand on the next line);
//! * `Allocation (size=N) would exceed memory (size=M) :: #allocationK [shape = '…', space=vmem,
//!   …] :: NAME` — one scoped allocation (Mosaic kernels, VMEM) larger than the space.
//!
//! Both come after jax's exception name and the status (`jax.errors.JaxRuntimeError:
//! RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: `): the error code and its name are read from
//! there, for every TPU message (`error_code`).

use super::*;
use crate::lex::{bad, Cur, R};

/// The short E1000 message (`Ran out of memory on SPACE, …`; the detailed report's marker is
/// `… in memory space …`, which this does not match).
pub(super) const HBM_MARKER: &[u8] = b"Ran out of memory on ";
/// The E1001 message: `Allocation (size=N) would exceed memory (size=M)`.
pub(super) const ALLOC_MARKER: &[u8] = b"Allocation (size=";
const ALLOC_MIDDLE: &[u8] = b") would exceed memory (size=";

/// Where a compile-time message starts in `c`, if it holds one. `Ran out of memory on WORD`
/// opens only when the word ends the line or is followed by `,` (so `… on device 0 …` of other
/// programs is not taken); `Allocation (size=N` only when `) would exceed memory` follows.
pub(super) fn opener_at(c: &[u8]) -> Option<usize> {
    if let Some(at) = memchr::memmem::find(c, HBM_MARKER) {
        let rest = &c[at + HBM_MARKER.len()..];
        let n = rest.iter().take_while(|&&b| b != b' ' && b != b',').count();
        if n > 0 && (n == rest.len() || rest[n] == b',') {
            return Some(at);
        }
    }
    let at = memchr::memmem::find(c, ALLOC_MARKER)?;
    let rest = &c[at + ALLOC_MARKER.len()..];
    let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    (n > 0 && rest[n..].starts_with(ALLOC_MIDDLE)).then_some(at)
}

/// `E` DDDD `: ` NAME `:` in the text before a TPU message: (code, name).
fn error_code(before: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'E', &before[from..]).map(|i| from + i) {
        from = i + 1;
        let code = &before[i..(i + 5).min(before.len())];
        let word_start = i == 0 || before[i - 1] == b' ';
        if !word_start
            || code.len() < 5
            || !code[1..].iter().all(u8::is_ascii_digit)
            || !before[i + 5..].starts_with(b": ")
        {
            continue;
        }
        let rest = &before[i + 7..];
        let n = rest
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        if n > 0 && rest[n..].starts_with(b":") {
            return Some((code, &rest[..n]));
        }
    }
    None
}

impl<'t, 'c> Parser<'t, 'c> {
    /// The error code and name stated before a TPU message (`error` rows `code`, `name`).
    pub(super) fn error_code(&mut self, no: u64, before: &'c [u8]) {
        if let Some((code, name)) = error_code(before) {
            self.figure("error", "code", None, code, no);
            self.figure("error", "name", None, name, no);
        }
    }

    /// The message at `pos..stop` of `text` (from its marker on). A line that ends before the
    /// figures are complete is cut off (a `missing` row; a note, an error when strict); text
    /// that is not the grammar is an error.
    pub(super) fn compile_message(
        &mut self,
        no: u64,
        text: &'c [u8],
        pos: usize,
        stop: usize,
    ) -> R<()> {
        let mut cur = Cur { t: text, pos, stop };
        let hbm = cur.accept(std::str::from_utf8(HBM_MARKER).expect("ASCII"));
        let done = if hbm {
            self.hbm_message(no, &mut cur)?
        } else {
            self.alloc_message(no, &mut cur)?
        };
        if let Some(what) = done {
            let column = (self.off + stop) as u64 + 1;
            let full = self.full;
            self.rep().cuts.push((
                no,
                column,
                format!("out-of-memory report cut off: expected {what}"),
                full,
            ));
        }
        Ok(())
    }

    /// `SPACE, the total memory required for WHAT (S) exceeds available SPACE (S)[.] [HLO
    /// module: NAME[.]]`: `required`, `required for`, `available`, the module. Returns what was
    /// expected when the line ends early.
    fn hbm_message(&mut self, no: u64, cur: &mut Cur<'c>) -> R<Option<&'static str>> {
        let t = cur.t;
        let n = cur.view().iter().take_while(|&&b| b != b',').count();
        self.rep().memory_space = Some(&t[cur.pos..cur.pos + n]);
        cur.pos += n;
        const REQUIRED: &str = ", the total memory required for ";
        if REQUIRED.as_bytes().starts_with(cur.view()) {
            return Ok(Some(
                "', the total memory required for WHAT (SIZE) exceeds available SPACE (SIZE)'",
            ));
        }
        cur.expect(REQUIRED, "after the memory space")?;
        // WHAT is free text: the figure is the last ` (S)` before `) exceeds available `
        const EXCEEDS: &[u8] = b") exceeds available ";
        let Some(close) = memchr::memmem::find(cur.view(), EXCEEDS).map(|i| cur.pos + i) else {
            return Ok(Some("' (SIZE) exceeds available SPACE (SIZE)'"));
        };
        let Some(open) = memchr::memmem::rfind(&t[cur.pos..close], b" (").map(|i| cur.pos + i)
        else {
            return bad(close, "expected 'WHAT (SIZE)' before ') exceeds available'");
        };
        self.figure("summary", "required for", None, &t[cur.pos..open], no);
        cur.pos = open + 2;
        let at = cur.pos;
        let v = cur.tpu_size("the memory required")?;
        self.figure("summary", "required", Some(v), &t[at..cur.pos], no);
        if cur.pos != close {
            return bad(cur.pos, "expected ') exceeds available' after the size");
        }
        cur.pos = close + EXCEEDS.len();
        let n = cur.view().iter().take_while(|&&b| b != b' ').count();
        cur.pos += n;
        if n == 0 || cur.at_end() || b" (".starts_with(cur.view()) {
            return Ok(Some("'SPACE (SIZE)' after 'exceeds available'"));
        }
        cur.expect(" (", "after the memory space")?;
        let at = cur.pos;
        if tpu_prefix(cur.view()) {
            return Ok(Some("the available memory (SIZE) and ')'"));
        }
        let v = cur.tpu_size("the available memory")?;
        self.figure("summary", "available", Some(v), &t[at..cur.pos], no);
        if cur.at_end() {
            return Ok(Some("')' after the available memory"));
        }
        cur.expect(")", "after the available memory")?;
        cur.accept(".");
        cur.spaces();
        if !cur.at_end() {
            self.module_sentence(
                no,
                Cur {
                    t,
                    pos: cur.pos,
                    stop: cur.stop,
                },
            )?;
        }
        Ok(None)
    }

    /// `HLO module: NAME[.]` (the end of the E1000 message, or a line of its own after it).
    pub(super) fn module_sentence(&mut self, no: u64, mut cur: Cur<'c>) -> R<()> {
        cur.expect("HLO module: ", "")?;
        let v = cur.view();
        let n = v.iter().take_while(|&&b| b != b' ').count();
        let name = v[..n].strip_suffix(b".").unwrap_or(&v[..n]);
        if name.is_empty() {
            return bad(cur.pos, "expected the module name");
        }
        self.figure("error", "module", None, name, no);
        Ok(())
    }

    /// Whether the open report is a compile-time message still without its module.
    pub(super) fn wants_module(&mut self) -> bool {
        let r = self.rep();
        !r.detailed
            && r.figures.iter().any(|f| f.key == "available")
            && !r.figures.iter().any(|f| f.key == "module")
    }

    /// `N) would exceed memory (size=M)[ :: #allocationK [… space=SPACE, …] :: NAME]`:
    /// `requested`, `capacity`, the memory space, the allocation and the instruction (the
    /// bracketed details are the compiler's free text: only `space=` is read from them).
    fn alloc_message(&mut self, no: u64, cur: &mut Cur<'c>) -> R<Option<&'static str>> {
        let t = cur.t;
        cur.expect(std::str::from_utf8(ALLOC_MARKER).expect("ASCII"), "")?;
        let at = cur.pos;
        let v = cur.uint("the allocation size", crate::lex::I64_MAX)?;
        self.figure("summary", "requested", Some(v as i64), &t[at..cur.pos], no);
        cur.expect(std::str::from_utf8(ALLOC_MIDDLE).expect("ASCII"), "")?;
        let at = cur.pos;
        if cur.view().iter().all(u8::is_ascii_digit) {
            return Ok(Some("the memory size and ')'"));
        }
        let v = cur.uint("the memory size", crate::lex::I64_MAX)?;
        self.figure("summary", "capacity", Some(v as i64), &t[at..cur.pos], no);
        cur.expect(")", "after the memory size")?;
        let rest = cur.view();
        if let Some(p) = memchr::memmem::find(rest, b" :: #") {
            let a = &rest[p + 4..];
            let name = &a[..a.iter().take_while(|&&b| b != b' ').count()];
            self.figure("error", "allocation", None, name, no);
        }
        if let Some(p) = memchr::memmem::find(rest, b"space=") {
            let s = &rest[p + 6..];
            let n = s
                .iter()
                .take_while(|&&b| b != b',' && b != b']' && b != b' ')
                .count();
            if n > 0 {
                self.rep().memory_space = Some(&s[..n]);
            }
        }
        if let Some(p) = memchr::memmem::rfind(rest, b"] :: ") {
            let name = &rest[p + 5..];
            if !name.is_empty() && !name.contains(&b' ') {
                self.figure("error", "instruction", None, name, no);
            }
        }
        Ok(None)
    }
}

/// Whether `v` is a TPU size cut short (digits, a point, no unit yet) or nothing.
fn tpu_prefix(v: &[u8]) -> bool {
    v.iter()
        .all(|&b| b.is_ascii_digit() || b == b'.' || b == b'-')
}
