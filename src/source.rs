//! The bytes of one input (a memory map or an owned buffer) and how text columns point into them.
//!
//! Every string column we build is a `StringViewArray` whose data buffers *are* the input bytes:
//! a view records (block, offset, length) into one of them, so no string byte is copied. pyarrow
//! reads view offsets as signed 32-bit numbers, so an input larger than 2 GiB is exposed as
//! several overlapping windows (blocks) of less than 2 GiB each: window k starts at k·1 GiB and
//! is up to 2 GiB − 1 long, so any string shorter than 1 GiB lies wholly inside one of them.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_buffer::Buffer;
use memmap2::Mmap;

/// Distance between the starts of two consecutive windows of a large input.
pub const WINDOW_STEP: usize = 1 << 30;
/// Longest window: view offsets must stay below 2^31.
pub const WINDOW_LEN: usize = (1 << 31) - 1;

/// One input's bytes, owned by an Arrow `Buffer` (cheap to clone, shared by every view).
#[derive(Clone, Debug)]
pub struct Source {
    buffer: Buffer,
}

/// Open `path` for reading without ever blocking or following what it must not: with
/// `O_NONBLOCK` (opening a FIFO does not wait for a writer), `O_CLOEXEC`, and `O_NOFOLLOW` when
/// `nofollow` (entries found by walking a directory: a symlink swapped in after the walk is not
/// followed). What was opened is checked with `fstat`: anything but a regular file (a FIFO or
/// device swapped in between `stat` and `open`) is an error, "not a regular file".
pub fn open_regular(path: &Path, nofollow: bool) -> std::io::Result<(File, std::fs::Metadata)> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | if nofollow { libc::O_NOFOLLOW } else { 0 });
    }
    let file = o.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((file, meta))
}

/// Append the rest of `file` (expected to hold about `expect` more bytes) to `buf`, reserving
/// fallibly (`runtime::reserve`: a file too big for memory stops the read, it does not abort).
pub fn read_rest(file: &mut File, buf: &mut Vec<u8>, expect: u64) -> std::io::Result<usize> {
    use std::io::Read;
    const STEP: u64 = 64 << 20;
    let start = buf.len();
    crate::runtime::reserve_exact(buf, usize::try_from(expect).unwrap_or(usize::MAX).saturating_add(1));
    loop {
        // room for the next step (and one byte: `read_to_end` then never grows the buffer itself)
        let left = expect.saturating_sub((buf.len() - start) as u64).clamp(4096, STEP);
        crate::runtime::reserve(buf, left as usize + 1);
        let n = Read::take(&mut *file, left).read_to_end(buf)?;
        if (n as u64) < left {
            return Ok(buf.len() - start);
        }
        crate::runtime::check();
    }
}

/// What a file looked like when it was opened (size, modification and change times, to the
/// nanosecond), with the open file, to tell afterwards whether something wrote to it while we
/// read it: a mapped file rewritten under its map (XLA re-dumping into the same directory)
/// changes the text of rows already made, and can put invalid UTF-8 into them after the UTF-8
/// check; a copy taken while it is rewritten holds half of each version.
///
/// Times alone cannot always tell (issue 50: a file rewritten in place at the same size gave a
/// mix of both versions with no error in 198 of 333 reads copied, 8 of 333 mapped): the kernel
/// stamps a write with a coarse clock (a tick: milliseconds), so a write in the same tick as the
/// one before leaves both times as they were. So a file whose times are that recent
/// (`recent`: within `RECENT` of its opening, or ahead of the clock) has its content checked
/// too: a copy is compared with a second read of the file (`same_as_copy`), a mapped file is
/// hashed before and after parsing (`content_hash`). A file last changed earlier cannot be
/// written to without its change time moving past its old one: the stat is the whole check,
/// at no cost. (The inode needs no check: the file is read through the descriptor opened,
/// which a rename over its path does not change.)
pub struct Stamp {
    file: File,
    len: u64,
    times: (Option<std::time::SystemTime>, i64, i64),
    opened: std::time::SystemTime,
}

/// How recent a file's last change may be for its times alone to show a write during the read.
pub const RECENT: std::time::Duration = std::time::Duration::from_secs(10);

/// A file changed less than this before its read ended may be in the middle of a rewrite whose
/// writer paused (descheduled, waiting for a lock) for the whole read: its bytes were stable,
/// but half of each version. Such a read waits until the file is this old and checks it again
/// (at most this long once per such file; files of a finished dump are never that new).
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

fn change_times(m: &std::fs::Metadata) -> (Option<std::time::SystemTime>, i64, i64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (m.modified().ok(), m.ctime(), m.ctime_nsec())
    }
    #[cfg(not(unix))]
    {
        (m.modified().ok(), 0, 0)
    }
}

/// The change time (ctime) as a `SystemTime` (None: before 1970 or not known).
fn ctime_of(times: &(Option<std::time::SystemTime>, i64, i64)) -> Option<std::time::SystemTime> {
    let (secs, nanos) = (u64::try_from(times.1).ok()?, u32::try_from(times.2).ok()?);
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos.min(999_999_999)))
}

fn changed(what: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "the file changed while it was read ({what}): its rows are dropped; read it again once \
         the program writing it is done"
    ))
}

impl Stamp {
    pub fn new(file: File, meta: &std::fs::Metadata) -> Stamp {
        Stamp { file, len: meta.len(), times: change_times(meta), opened: std::time::SystemTime::now() }
    }

    /// `Err` ("the file changed while it was read …") if the open file's size or times differ
    /// from when it was opened.
    pub fn check(&self) -> std::io::Result<()> {
        let now = self.file.metadata()?;
        if now.len() != self.len {
            return Err(changed(&format!("its size went from {} to {} bytes", self.len, now.len())));
        }
        if change_times(&now) != self.times {
            return Err(changed("it was written to"));
        }
        Ok(())
    }

    /// Whether the file changed so shortly before it was opened (or its times are ahead of the
    /// clock, or unknown) that a write while it is read could leave its times as they were:
    /// then its content is checked too.
    pub fn recent(&self) -> bool {
        let newest = [self.times.0, ctime_of(&self.times)];
        newest.iter().any(|t| match t {
            Some(t) => self.opened.duration_since(*t).map_or(true, |age| age < RECENT),
            None => true,
        })
    }

    /// The file's newest time (modification or change) when it was opened.
    fn newest(&self) -> Option<std::time::SystemTime> {
        match (self.times.0, ctime_of(&self.times)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// If the file changed less than `SETTLE` ago, wait until it is that old and say so (true):
    /// the caller then checks it again (`Stamp::check` and its content).
    fn settle(&self) -> bool {
        let Some(newest) = self.newest() else { return false };
        let age = std::time::SystemTime::now().duration_since(newest).unwrap_or_default();
        if age >= SETTLE {
            return false;
        }
        std::thread::sleep(SETTLE - age);
        true
    }

    /// The whole check of a file copied into memory (`copy`, from its start): its times, and
    /// for a recent file its content against a second read, once more after it settled.
    pub fn verify_copy(&self, copy: &[u8]) -> std::io::Result<()> {
        self.check()?;
        if self.recent() {
            self.same_as_copy(copy)?;
            if self.settle() {
                self.check()?;
                self.same_as_copy(copy)?;
            }
        }
        Ok(())
    }

    /// The whole check of a mapped file after parsing: its times, and for a recent file the
    /// hash of its bytes against `hashed` (taken before parsing), once more after it settled.
    pub fn verify_map(&self, data: &[u8], hashed: Option<u64>) -> Option<std::io::Error> {
        if let Err(e) = self.check() {
            return Some(e);
        }
        let h = hashed?;
        let differs = || {
            (content_hash(data) != h).then(|| changed("its content differs before and after parsing"))
        };
        if let Some(e) = differs() {
            return Some(e);
        }
        if self.settle() {
            if let Err(e) = self.check() {
                return Some(e);
            }
            return differs();
        }
        None
    }

    /// `Err` unless the file holds exactly `copy` now (read again from its start, 1 MiB at a
    /// time): a copy taken while the file was rewritten holds parts of both versions.
    pub fn same_as_copy(&self, copy: &[u8]) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            const STEP: usize = 1 << 20;
            let mut buf: Vec<u8> = Vec::new();
            crate::runtime::reserve_exact(&mut buf, STEP.min(copy.len()) + 1);
            buf.resize(STEP.min(copy.len()) + 1, 0);
            let mut at = 0usize;
            loop {
                let want = (copy.len() - at).min(STEP);
                // one byte more at the end: a file that grew is no copy either
                let n = self.file.read_at(&mut buf[..want.max(1)], at as u64)?;
                if n == 0 {
                    break;
                }
                if at + n > copy.len() || buf[..n] != copy[at..at + n] {
                    return Err(changed("its content differs from a second read"));
                }
                at += n;
                if at % (64 << 20) == 0 {
                    crate::runtime::check();
                }
            }
            if at != copy.len() {
                return Err(changed("its content differs from a second read"));
            }
        }
        Ok(())
    }
}

/// A 64-bit hash of `data` (four independent multiply-xor lanes over 8-byte words: memory
/// speed), to tell whether a mapped file's bytes changed between two moments.
pub fn content_hash(data: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [1u64, 2, 3, 4];
    let mut blocks = data.chunks_exact(32);
    for (k, b) in blocks.by_ref().enumerate() {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            *lane = (*lane ^ w).wrapping_mul(K).rotate_left(29);
        }
        if k % (1 << 21) == (1 << 21) - 1 {
            crate::runtime::check(); // every 64 MiB
        }
    }
    let mut h = data.len() as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K).rotate_left(31);
    }
    for &c in blocks.remainder() {
        h = (h ^ u64::from(c)).wrapping_mul(K).rotate_left(7);
    }
    h ^ (h >> 32)
}

impl Source {
    /// `map`, and the file's `Stamp` (to check after parsing that nothing wrote to it).
    pub fn map_stamped(path: &Path, nofollow: bool) -> std::io::Result<(Source, Option<Stamp>)> {
        let (file, meta) = open_regular(path, nofollow)?;
        let stamp = Stamp::new(file.try_clone()?, &meta);
        Ok((Source::map_open(file, meta, path)?, Some(stamp)))
    }

    /// Memory-map `path` (a zero-length file becomes an empty buffer: it cannot be mapped),
    /// opened with `open_regular`.
    pub fn map(path: &Path, nofollow: bool) -> std::io::Result<Source> {
        let (file, meta) = open_regular(path, nofollow)?;
        Source::map_open(file, meta, path)
    }

    fn map_open(mut file: File, meta: std::fs::Metadata, path: &Path) -> std::io::Result<Source> {
        let len = meta.len();
        if len == 0 {
            return Ok(Source::from_vec(Vec::new()));
        }
        // SAFETY: the mapping is read-only. If another process truncates the file while it is
        // mapped, reading the lost pages would raise SIGBUS: `sigbus::GuardedMap` turns them
        // into zero pages instead (and when no guard slot is free we read the file instead).
        let map = unsafe { Mmap::map(&file)? };
        match crate::sigbus::GuardedMap::new(map, path, &meta) {
            Ok(guarded) => Ok(Source::from_guarded(guarded)),
            Err(_unguarded) => {
                let mut v = Vec::new();
                read_rest(&mut file, &mut v, len)?;
                Ok(Source::from_vec(v))
            }
        }
    }

    /// Read `path` into memory (no mapping).
    pub fn read(path: &Path) -> std::io::Result<Source> {
        let (mut file, meta) = open_regular(path, false)?;
        let mut v = Vec::new();
        read_rest(&mut file, &mut v, meta.len())?;
        Ok(Source::from_vec(v))
    }

    fn from_guarded(map: crate::sigbus::GuardedMap) -> Source {
        let ptr = std::ptr::NonNull::new(map.as_slice().as_ptr() as *mut u8).expect("mmap pointer is never null");
        let len = map.as_slice().len();
        // SAFETY: `ptr`/`len` describe the mapping, which the Arc keeps alive as long as any
        // Buffer (and so any Arrow array exported to Python) refers to it.
        let buffer = unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(map)) };
        Source { buffer }
    }

    /// Bytes that are in memory already (a caller's buffer imported through the Arrow C data
    /// interface, which keeps its owner alive): shared, not copied.
    pub fn from_buffer(buffer: Buffer) -> Source {
        Source { buffer }
    }

    pub fn from_vec(v: Vec<u8>) -> Source {
        Source { buffer: Buffer::from_vec(v) }
    }

    pub fn bytes(&self) -> &[u8] {
        self.buffer.as_slice()
    }

    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// The windows of this input, as Arrow buffers sharing its memory.
    pub fn windows(&self) -> Vec<Buffer> {
        let len = self.buffer.len();
        if len <= WINDOW_LEN {
            return vec![self.buffer.clone()];
        }
        window_spans(len).into_iter().map(|(start, n)| self.buffer.slice_with_length(start, n)).collect()
    }
}

/// (start, length) of the windows of an input of `len` bytes: one every GiB, each up to
/// `WINDOW_LEN` long, the last one running to the end of the input (none starts after it).
pub fn window_spans(len: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    while start < len {
        spans.push((start, WINDOW_LEN.min(len - start)));
        if start + WINDOW_LEN >= len {
            break;
        }
        start += WINDOW_STEP;
    }
    spans
}

/// Where the current input's windows sit in a table set's block list, so that a slice of the
/// input can be turned into (block, offset) by pointer arithmetic.
#[derive(Clone, Copy, Debug)]
pub struct SourceRef {
    base: usize,
    len: usize,
    first_block: u32,
    windows: u32,
}

impl SourceRef {
    pub fn new(bytes: &[u8], first_block: u32, windows: u32) -> SourceRef {
        SourceRef { base: bytes.as_ptr() as usize, len: bytes.len(), first_block, windows }
    }

    /// A reference that owns nothing: every slice pushed with it is copied.
    pub fn none() -> SourceRef {
        SourceRef { base: 0, len: 0, first_block: 0, windows: 0 }
    }

    /// Whether `s` lies inside this input.
    #[inline]
    pub fn contains(&self, s: &[u8]) -> bool {
        let p = s.as_ptr() as usize;
        self.len > 0 && p >= self.base && p + s.len() <= self.base + self.len
    }

    /// (block, offset within block) of `s`, or None when `s` is not inside this input or is too
    /// long to fit one window (then the caller copies it).
    #[inline]
    pub fn locate(&self, s: &[u8]) -> Option<(u32, u32)> {
        let p = s.as_ptr() as usize;
        if p < self.base || p + s.len() > self.base + self.len {
            return None;
        }
        let off = p - self.base;
        if self.len <= WINDOW_LEN {
            return Some((self.first_block, off as u32));
        }
        // Window k starts at k GiB; the last one also holds everything after its first GiB (it
        // runs to the end of the input), so offsets past it belong to it, not to a window k+1
        // that was never made (see `Source::windows`).
        let k = (off / WINDOW_STEP).min(self.windows.saturating_sub(1) as usize);
        let local = off - k * WINDOW_STEP;
        if (k as u32) < self.windows && local + s.len() <= WINDOW_LEN {
            Some((self.first_block + k as u32, local as u32))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake 5 GiB input (no memory behind it: only addresses are computed).
    fn big() -> SourceRef {
        SourceRef { base: 1 << 40, len: 5 << 30, first_block: 7, windows: 5 }
    }

    fn slice_at(src: &SourceRef, off: usize, len: usize) -> &'static [u8] {
        // SAFETY: never dereferenced; `locate` only looks at the pointer and length.
        unsafe { std::slice::from_raw_parts((src.base + off) as *const u8, len) }
    }

    #[test]
    fn opening_a_fifo_is_an_error_not_a_hang() {
        // what a FIFO swapped in between `stat` and `open` meets: O_NONBLOCK, then fstat
        let dir = std::env::temp_dir().join(format!("hlodump-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&fifo, true).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file");
        assert!(Source::map(&fifo, false).is_err());
        // O_NOFOLLOW: a symlink swapped in for a walked entry is not followed
        let link = dir.join("l");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert_eq!(open_regular(&link, true).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn small_inputs_are_one_window() {
        let data = vec![0u8; 100];
        let src = SourceRef::new(&data, 3, 1);
        assert_eq!(src.locate(&data[10..20]), Some((3, 10)));
        assert_eq!(src.locate(b"elsewhere"), None);
    }

    /// A big input of `len` bytes with as many windows as `Source::windows` makes for it.
    fn big_of(len: usize) -> SourceRef {
        let windows = window_spans(len).len() as u32;
        SourceRef { base: 1 << 40, len, first_block: 7, windows }
    }

    #[test]
    fn every_short_string_of_a_large_input_is_in_a_window() {
        // Lengths that are no multiple of a GiB: the last window starts at the last GiB mark
        // it needs and runs to the end, so the input's tail lies in it (a 4.3 GiB dump once
        // made every string past 4 GiB a block of its own).
        for len in [(2usize << 30) + 12345, (4usize << 30) + (300 << 20), (5usize << 30) + 17, 5usize << 30] {
            let src = big_of(len);
            let windows = window_spans(len);
            for off in [0, (1 << 30) - 1, 2 << 30, (3 << 30) + 7, 4 << 30, (4 << 30) + 1000, len - 100, len - 1] {
                if off >= len {
                    continue;
                }
                let n = 100.min(len - off);
                let (b, local) = src.locate(slice_at(&src, off, n)).unwrap_or_else(|| panic!("len {len} off {off}"));
                let (start, wlen) = windows[(b - 7) as usize];
                assert_eq!(start + local as usize, off, "len {len} off {off}");
                assert!(local as usize + n <= wlen, "len {len} off {off}: inside its window");
            }
        }
    }

    #[test]
    fn large_inputs_use_the_window_of_the_string_start() {
        let src = big();
        // Window k covers [k GiB, k GiB + 2 GiB - 1): offsets stay below 2^31.
        assert_eq!(src.locate(slice_at(&src, 100, 10)), Some((7, 100)));
        assert_eq!(src.locate(slice_at(&src, (1 << 30) + 5, 10)), Some((8, 5)));
        let (b, off) = src.locate(slice_at(&src, (3 << 30) - 1, 1 << 29)).unwrap();
        assert_eq!((b, off), (9, (1 << 30) - 1));
        assert!((off as usize) + (1 << 29) <= WINDOW_LEN);
        // A string longer than a window's slack cannot be a view: the caller copies it.
        assert_eq!(src.locate(slice_at(&src, (1 << 30) + 5, WINDOW_LEN)), None);
    }

    #[test]
    fn windows_overlap_and_cover_the_input() {
        let s = Source::from_vec(vec![1u8; 10]);
        assert_eq!(s.windows().len(), 1);
        // The window arithmetic for big inputs, without allocating them.
        let len = (5usize << 30) + 17;
        let starts = window_spans(len);
        assert_eq!(starts.len(), 5); // starts at 0, 1, 2, 3 and 4 GiB
        assert!(starts.iter().all(|&(_, l)| l <= WINDOW_LEN));
        assert_eq!(starts.last().map(|&(s, l)| s + l), Some(len));
    }
}
