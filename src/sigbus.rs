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

#[cfg(unix)]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Once;

    const SLOTS: usize = 4096;
    static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static ENDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static ZEROED_PAGES: AtomicUsize = AtomicUsize::new(0);
    static WARNED: AtomicBool = AtomicBool::new(false);
    static INSTALL: Once = Once::new();
    static mut PREVIOUS: Option<libc::sigaction> = None;

    /// Register `[start, start+len)`; returns its slot, or None when the table is full (then
    /// the caller reads the file instead of mapping it).
    pub fn register(start: usize, len: usize) -> Option<usize> {
        INSTALL.call_once(install);
        for i in 0..SLOTS {
            if STARTS[i].compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                ENDS[i].store(start + len, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    pub fn unregister(slot: usize) {
        ENDS[slot].store(0, Ordering::Release);
        STARTS[slot].store(0, Ordering::Release);
    }

    pub fn zeroed_pages() -> usize {
        ZEROED_PAGES.load(Ordering::Relaxed)
    }

    fn ours(addr: usize) -> bool {
        (0..SLOTS).any(|i| {
            let s = STARTS[i].load(Ordering::Acquire);
            s != 0 && s <= addr && addr < ENDS[i].load(Ordering::Acquire)
        })
    }

    fn install() {
        // SAFETY: plain sigaction calls; the previous action is kept to chain to it.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &new, &mut old) == 0 {
                PREVIOUS = Some(old);
            }
        }
    }

    const WARNING: &[u8] = b"hlodump: warning: a memory-mapped dump file shrank while its tables were in use; \
the lost bytes read as zeros. Use read_arrow(..., mmap=False) for files that may change.\n";

    /// Only async-signal-safe calls here: atomics, mmap, write, sigaction.
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        if ours(addr) {
            // SAFETY: maps one anonymous zero page over the lost page of our own read-only
            // mapping (MAP_FIXED replaces exactly that page); the faulting read then succeeds.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
            let at = addr & !(page - 1);
            let r = unsafe {
                libc::mmap(at as *mut libc::c_void, page, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0)
            };
            if r != libc::MAP_FAILED {
                ZEROED_PAGES.fetch_add(1, Ordering::Relaxed);
                if !WARNED.swap(true, Ordering::Relaxed) {
                    unsafe { libc::write(2, WARNING.as_ptr() as *const libc::c_void, WARNING.len()) };
                }
                return;
            }
        }
        // Not ours (or no page could be mapped): put the previous action back and return; the
        // faulting instruction runs again and faults into it (the default action kills).
        // SAFETY: restoring the action saved at install time.
        unsafe {
            #[allow(static_mut_refs)]
            match PREVIOUS.as_ref() {
                Some(old) => libc::sigaction(sig, old, std::ptr::null_mut()),
                None => libc::signal(sig, libc::SIG_DFL) as libc::c_int,
            };
        }
    }
}

#[cfg(not(unix))]
mod imp {
    pub fn register(_start: usize, _len: usize) -> Option<usize> {
        None
    }
    pub fn unregister(_slot: usize) {}
    pub fn zeroed_pages() -> usize {
        0
    }
}

pub use imp::zeroed_pages;

/// A memory map whose lost pages (file truncated behind our back) read as zeros instead of
/// raising SIGBUS. Unregisters itself when the last Arrow buffer using it is dropped.
pub struct GuardedMap {
    map: memmap2::Mmap,
    slot: usize,
}

impl GuardedMap {
    /// Guard `map`; gives it back when no guard slot is free.
    pub fn new(map: memmap2::Mmap) -> Result<GuardedMap, memmap2::Mmap> {
        match imp::register(map.as_ptr() as usize, map.len()) {
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
