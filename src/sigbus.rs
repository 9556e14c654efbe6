//! Keep a mapped file that shrinks from killing the process.
//!
//! When another process truncates a file we have mapped (XLA re-dumping into the same
//! directory, a user cleaning up), every later read of the lost pages raises SIGBUS, whose
//! default action kills the process — possibly long after `read_arrow` returned, when a table
//! is looked at. Copying every input would avoid that but defeats zero-copy (and RAM limits).
//! Instead, mappings are registered here and a SIGBUS handler, when the faulting address lies in
//! one of them, replaces the lost page with a page of zeros, counts the event, writes a one-time
//! warning to stderr, and returns: the read completes (the text reads as NUL bytes) and the
//! process lives. Faults anywhere else go to the handler that was installed before ours.
//!
//! Handlers installed later (`faulthandler.enable()`, `signal.signal(SIGBUS, …)`) would
//! otherwise see the fault first. Every read (and every table access through `Dump`) puts
//! ours back in front, chaining to the newcomer (`rearm`). If a fault still reaches such a
//! handler first and it re-raises SIGBUS after restoring ours (faulthandler does, after
//! printing its report), our handler, which then cannot know the address, zeroes the lost
//! pages of every mapped file that is now shorter than its mapping (it re-`stat`s them by
//! path): the access that faulted then succeeds.

#[cfg(unix)]
mod imp {
    use std::ffi::CString;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;

    const SLOTS: usize = 4096;
    static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static ENDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    /// The mapped file of each slot (NUL-terminated path, device, inode), to find out which
    /// mappings shrank when the faulting address is not known (see `on_sigbus`).
    static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
    static DEVS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
    static INOS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
    static ZEROED_PAGES: AtomicUsize = AtomicUsize::new(0);
    static WARNED: AtomicBool = AtomicBool::new(false);
    /// Handlers running (a path is freed only when none is).
    static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
    /// Set while the previous handler runs on our behalf (see `chain`).
    static CHAINING: AtomicBool = AtomicBool::new(false);
    /// Serialises installing; `PREVIOUS` is written only under it.
    static INSTALL: Mutex<bool> = Mutex::new(false);
    static mut PREVIOUS: Option<libc::sigaction> = None;

    /// Register `[start, start+len)`, a map of the file `path` (device `dev`, inode `ino`);
    /// returns its slot, or None when the table is full (then the caller reads the file
    /// instead of mapping it).
    pub fn register(start: usize, len: usize, path: &std::path::Path, dev: u64, ino: u64) -> Option<usize> {
        install(true);
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes()).ok();
        for i in 0..SLOTS {
            if STARTS[i].compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                DEVS[i].store(dev, Ordering::Relaxed);
                INOS[i].store(ino, Ordering::Relaxed);
                PATHS[i].store(c.map_or(std::ptr::null_mut(), CString::into_raw), Ordering::Release);
                ENDS[i].store(start + len, Ordering::Release);
                STARTS[i].store(start, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    pub fn unregister(slot: usize) {
        ENDS[slot].store(0, Ordering::Release);
        let path = PATHS[slot].swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !path.is_null() {
            while IN_HANDLER.load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
            // SAFETY: made by `CString::into_raw` in `register`; no handler is reading it.
            drop(unsafe { CString::from_raw(path) });
        }
        STARTS[slot].store(0, Ordering::Release);
    }

    pub fn zeroed_pages() -> usize {
        ZEROED_PAGES.load(Ordering::Relaxed)
    }

    fn ours(addr: usize) -> bool {
        (0..SLOTS).any(|i| {
            let s = STARTS[i].load(Ordering::Acquire);
            s != 0 && s != usize::MAX && s <= addr && addr < ENDS[i].load(Ordering::Acquire)
        })
    }

    /// Make our handler the first to see SIGBUS: install it (`first`: if it never was), or
    /// put it back on top when another handler was installed after it (`faulthandler.enable()`,
    /// `signal.signal`): that one becomes the handler we chain to for faults that are not ours.
    /// Called at every read (and every table access from Python), so the guard is re-armed.
    pub fn install(first: bool) {
        let mut installed = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        if !*installed && !first {
            return; // nothing mapped yet: nothing to guard
        }
        // SAFETY: plain sigaction calls; the action found is kept to chain to it.
        unsafe {
            let mut cur: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut cur) != 0 {
                return;
            }
            if cur.sa_sigaction == on_sigbus as *const () as usize {
                *installed = true;
                return;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            // SA_NODEFER: a handler we chain to may re-raise SIGBUS; it must reach us at once
            // (see `chain`), not after we return.
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut new.sa_mask);
            PREVIOUS = Some(cur);
            if libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut()) == 0 {
                *installed = true;
            }
        }
    }

    const WARNING: &[u8] = b"hlodump: warning: a memory-mapped dump file shrank while its tables were in use; \
the lost bytes read as zeros. Use read_arrow(..., mmap=False) for files that may change.\n";

    fn page() -> usize {
        // SAFETY: sysconf is async-signal-safe.
        unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
    }

    /// Map zero pages over `[at, at+len)` of one of our mappings.
    fn zero(at: usize, len: usize) -> bool {
        // SAFETY: `at` is page-aligned and inside one of our own read-only mappings; MAP_FIXED
        // replaces exactly those pages with anonymous zero pages.
        let r = unsafe {
            libc::mmap(at as *mut libc::c_void, len, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0)
        };
        if r == libc::MAP_FAILED {
            return false;
        }
        ZEROED_PAGES.fetch_add(len.div_ceil(page()), Ordering::Relaxed);
        if !WARNED.swap(true, Ordering::Relaxed) {
            // SAFETY: write(2) is async-signal-safe.
            unsafe { libc::write(2, WARNING.as_ptr() as *const libc::c_void, WARNING.len()) };
        }
        true
    }

    /// Zero the lost tail of every mapping whose file (same device and inode) is now shorter
    /// than the mapping. Returns whether anything was zeroed. Only stat(2) and mmap(2).
    fn zero_shrunk() -> bool {
        let page = page();
        let mut any = false;
        for i in 0..SLOTS {
            let s = STARTS[i].load(Ordering::Acquire);
            let path = PATHS[i].load(Ordering::Acquire);
            if s == 0 || s == usize::MAX || path.is_null() {
                continue;
            }
            let end = ENDS[i].load(Ordering::Acquire);
            // SAFETY: stat(2) is async-signal-safe; `path` stays valid while IN_HANDLER > 0.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::stat(path, &mut st) } != 0 {
                continue;
            }
            if st.st_dev as u64 != DEVS[i].load(Ordering::Relaxed) || st.st_ino as u64 != INOS[i].load(Ordering::Relaxed) {
                continue; // replaced by another file: ours was unlinked, and keeps its pages
            }
            let keep = (st.st_size.max(0) as usize).div_ceil(page) * page;
            if s + keep < end && zero(s + keep, end - (s + keep)) {
                any = true;
            }
        }
        any
    }

    /// Only async-signal-safe calls here: atomics, stat, mmap, write, sigaction.
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        IN_HANDLER.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        let handled = if code > 0 {
            // a fault: in one of our mappings, replace the lost page
            ours(addr) && zero(addr & !(page() - 1), page())
        } else {
            // sent, not a fault: a handler installed after ours (faulthandler does this) saw a
            // fault, restored us and re-raised. The address is unknown: zero whatever shrank.
            zero_shrunk()
        };
        IN_HANDLER.fetch_sub(1, Ordering::AcqRel);
        if !handled {
            chain(sig, info, ctx);
        }
    }

    /// A fault that is not ours: give it to the handler that was there before ours. If that
    /// handler re-raises SIGBUS while it runs (we see it here again, nested), the default
    /// action is restored, so the faulting access, run again, kills the process as it would
    /// have without us.
    fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: sigaction/signal are async-signal-safe; `PREVIOUS` was set before we were
        // installed; calling the previous handler the way it asked to be called.
        unsafe {
            if CHAINING.swap(true, Ordering::AcqRel) {
                libc::signal(sig, libc::SIG_DFL);
                return;
            }
            #[allow(static_mut_refs)]
            let prev = PREVIOUS;
            match prev {
                Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                    if old.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(old.sa_sigaction);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                        f(sig);
                    }
                }
                _ => {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            CHAINING.store(false, Ordering::Release);
        }
    }
}

#[cfg(not(unix))]
mod imp {
    pub fn register(_start: usize, _len: usize, _path: &std::path::Path, _dev: u64, _ino: u64) -> Option<usize> {
        None
    }
    pub fn install(_first: bool) {}
    pub fn unregister(_slot: usize) {}
    pub fn zeroed_pages() -> usize {
        0
    }
}

pub use imp::zeroed_pages;

/// Put the guard back in front of a SIGBUS handler installed after it (no-op if nothing was
/// ever mapped). Every read calls it; so does every table access from Python.
pub fn rearm() {
    imp::install(false)
}

/// A memory map whose lost pages (file truncated behind our back) read as zeros instead of
/// raising SIGBUS. Unregisters itself when the last Arrow buffer using it is dropped.
pub struct GuardedMap {
    map: memmap2::Mmap,
    slot: usize,
}

impl GuardedMap {
    /// Guard `map` of the file `path` (`meta`: its metadata); gives it back when no guard
    /// slot is free.
    pub fn new(map: memmap2::Mmap, path: &std::path::Path, meta: &std::fs::Metadata) -> Result<GuardedMap, memmap2::Mmap> {
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        let _ = meta;
        match imp::register(map.as_ptr() as usize, map.len(), path, dev, ino) {
            Some(slot) => Ok(GuardedMap { map, slot }),
            None => Err(map),
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        imp::unregister(self.slot);
    }
}
