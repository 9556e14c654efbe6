//! How one read runs: on a thread pool of its own, stoppable, and without aborting the process
//! when memory runs out.
//!
//! * **Fork safety.** rayon's global pool does not survive `fork()`: in the child its worker
//!   threads are gone but the pool still hands them work, so a read in a forked child (Python's
//!   `multiprocessing` forks by default on Linux) waited forever. Every read therefore builds
//!   its own pool (`pool`) and drops it when done; nothing of a read outlives it.
//! * **Stopping.** A read has an `Abort` flag. The pool's threads see it through a
//!   thread-local (`check`), called between files and every few thousand lines; when it is
//!   set, `check` unwinds with a `Stop` payload (`resume_unwind`: no panic message), every
//!   worker lets go of its half-built tables, and the read returns `Stop`. The Python edge sets
//!   it on Ctrl-C (`python.rs`).
//! * **Memory.** Rust aborts the process when an allocation fails. The buffers that grow with
//!   the input (column builders, arenas, file reads) reserve fallibly instead and call
//!   `out_of_memory`, which stops the read like a cancel; the read then returns
//!   `Stop::OutOfMemory` (Python: `MemoryError`). Small allocations are not guarded.

use std::cell::RefCell;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Most worker threads a read may use (`threads=` above this is an error).
pub const MAX_THREADS: usize = 1024;

/// Why a read stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `Abort::cancel` (Ctrl-C).
    Cancelled,
    /// A fallible reservation of this many bytes failed.
    OutOfMemory(usize),
}

/// The stop flag of one read, shared by its threads.
#[derive(Debug, Default)]
pub struct Abort {
    /// 0 running, 1 cancelled, 2 out of memory (the first reason wins).
    state: AtomicU8,
    bytes: AtomicUsize,
}

impl Abort {
    pub fn new() -> Arc<Abort> {
        Arc::new(Abort::default())
    }

    /// Ask the read to stop (its threads notice within a few thousand lines).
    pub fn cancel(&self) {
        let _ = self.state.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed);
    }

    fn out_of_memory(&self, bytes: usize) {
        self.bytes.store(bytes, Ordering::Relaxed);
        let _ = self.state.compare_exchange(0, 2, Ordering::AcqRel, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> Option<Stop> {
        match self.state.load(Ordering::Acquire) {
            0 => None,
            1 => Some(Stop::Cancelled),
            _ => Some(Stop::OutOfMemory(self.bytes.load(Ordering::Relaxed))),
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Abort>>> = const { RefCell::new(None) };
}

/// Make `abort` the flag that `check` looks at on this thread (None: no flag).
pub fn set_current(abort: Option<Arc<Abort>>) {
    CURRENT.with(|c| *c.borrow_mut() = abort);
}

/// The flag of the read running on this thread, if any.
pub fn current() -> Option<Arc<Abort>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Stop here (unwind) if this thread's read was asked to stop.
#[inline]
pub fn check() {
    let stop = CURRENT.with(|c| c.borrow().as_ref().and_then(|a| a.stopped()));
    if let Some(s) = stop {
        resume_unwind(Box::new(s));
    }
}

/// A fallible reservation of `bytes` failed: stop this read (the other threads stop at their
/// next `check`) and unwind.
#[cold]
#[inline(never)]
pub fn out_of_memory(bytes: usize) -> ! {
    CURRENT.with(|c| {
        if let Some(a) = c.borrow().as_ref() {
            a.out_of_memory(bytes)
        }
    });
    resume_unwind(Box::new(Stop::OutOfMemory(bytes)))
}

/// `v.try_reserve(additional)`, or stop the read (`out_of_memory`).
#[inline]
pub fn reserve<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() < additional && v.try_reserve(additional).is_err() {
        out_of_memory(additional.saturating_mul(std::mem::size_of::<T>()))
    }
}

/// `v.try_reserve_exact(additional)`, or stop the read (`out_of_memory`).
pub fn reserve_exact<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() < additional && v.try_reserve_exact(additional).is_err() {
        out_of_memory(additional.saturating_mul(std::mem::size_of::<T>()))
    }
}

/// Plain numbers whose all-zero bytes are the value 0 (what `zeros` may make).
pub trait Zeroable: Copy {}
impl Zeroable for i8 {}
impl Zeroable for i16 {}
impl Zeroable for i32 {}
impl Zeroable for i64 {}
impl Zeroable for u8 {}
impl Zeroable for u16 {}
impl Zeroable for u32 {}
impl Zeroable for u64 {}
impl Zeroable for u128 {}
impl Zeroable for f32 {}
impl Zeroable for f64 {}

/// `vec![0; n]` without the infallible (aborting) allocation: zeroed by the allocator (`calloc`:
/// pages never touched stay unallocated), or stop the read (`out_of_memory`).
pub fn zeros<T: Zeroable>(n: usize) -> Vec<T> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<T>(n) else { out_of_memory(usize::MAX) };
    // SAFETY: the layout has a non-zero size; the pointer, if not null, is an allocation of the
    // global allocator of exactly `layout` (n values of T, all zero bytes: the value 0 for a
    // `Zeroable` T), which `Vec::from_raw_parts` takes over with length and capacity n.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut T;
        if p.is_null() {
            out_of_memory(layout.size());
        }
        Vec::from_raw_parts(p, n, n)
    }
}

/// Push without the infallible (aborting) growth of `Vec::push`: grow by doubling, fallibly.
#[inline(always)]
pub fn push<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        grow(v);
    }
    v.push(x);
}

#[cold]
#[inline(never)]
fn grow<T>(v: &mut Vec<T>) {
    let add = v.capacity().max(64);
    if v.try_reserve(add).is_err() {
        out_of_memory(add.saturating_mul(std::mem::size_of::<T>()))
    }
}

/// What a read with `threads` = 0 uses: the cores this process may run on.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS)
}

/// Check a `threads=` value: 0 (all cores) or 1 … `MAX_THREADS`.
pub fn validate_threads(threads: usize) -> Result<usize, String> {
    match threads {
        0 => Ok(default_threads()),
        1..=MAX_THREADS => Ok(threads),
        _ => Err(format!("threads must be between 1 and {MAX_THREADS} (got {threads})")),
    }
}

/// A fresh pool of `threads` workers (0: all cores) whose threads `check` `abort`. Built per
/// read, so that a forked child never inherits a pool whose threads it does not have.
pub fn pool(threads: usize, abort: &Arc<Abort>) -> std::io::Result<rayon::ThreadPool> {
    let n = validate_threads(threads).map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidInput, m))?;
    let a = abort.clone();
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("hlodump-{i}"))
        .start_handler(move |_| set_current(Some(a.clone())))
        .exit_handler(|_| set_current(None))
        .build()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, format!("cannot start {n} worker threads: {e}")))
}

/// Run `f` on a new thread that `check`s `abort`; the receiver gets its result (or the payload
/// it unwound with). The caller may stop waiting at any time: the thread owns all it uses.
pub fn spawn<T: Send + 'static>(
    abort: Arc<Abort>,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::sync::mpsc::Receiver<std::thread::Result<T>>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new().name("hlodump-read".into()).spawn(move || {
        set_current(Some(abort));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    })?;
    Ok(rx)
}

/// The message of a panic payload (a bug: shown as an internal error).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// What an unwind payload of a read means: `Some(stop)` for a stop (the flag's reason wins
/// over the payload: another thread may have unwound with `Cancelled` because of it).
pub fn stop_of(payload: &(dyn std::any::Any + Send), abort: Option<&Abort>) -> Option<Stop> {
    let own = payload.downcast_ref::<Stop>().copied()?;
    Some(abort.and_then(|a| a.stopped()).unwrap_or(own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_are_zero() {
        assert_eq!(zeros::<i64>(3), vec![0i64; 3]);
        assert_eq!(zeros::<u128>(0), Vec::<u128>::new());
        assert_eq!(zeros::<f64>(2), vec![0.0; 2]);
    }

    #[test]
    fn threads_are_validated() {
        assert!(validate_threads(0).unwrap() >= 1);
        assert_eq!(validate_threads(3), Ok(3));
        assert!(validate_threads(MAX_THREADS + 1).is_err());
        assert!(validate_threads(100_000).unwrap_err().contains("between 1 and"));
    }

    #[test]
    fn cancel_stops_workers_at_their_next_check() {
        let abort = Abort::new();
        let pool = pool(2, &abort).unwrap();
        abort.cancel();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                check();
                1
            })
        }));
        let payload = r.unwrap_err();
        assert_eq!(stop_of(&*payload, Some(&abort)), Some(Stop::Cancelled));
    }

    #[test]
    fn a_failed_reservation_stops_the_read() {
        let abort = Abort::new();
        let rx = spawn(abort.clone(), || {
            // more than any allocation may be (a capacity overflow, so the optimiser cannot
            // elide an allocation nobody uses and call it a success)
            let mut v: Vec<u8> = std::hint::black_box(Vec::new());
            reserve(&mut v, usize::MAX);
            std::hint::black_box(&v);
        })
        .unwrap();
        let payload = rx.recv().unwrap().unwrap_err();
        assert!(matches!(stop_of(&*payload, Some(&abort)), Some(Stop::OutOfMemory(_))));
        assert!(matches!(abort.stopped(), Some(Stop::OutOfMemory(_))));
    }

    #[test]
    fn a_fresh_pool_per_read_works_after_fork() {
        // the global pool's threads do not exist in a forked child; a pool made there does
        let abort = Abort::new();
        let sum: u64 = pool(2, &abort).unwrap().install(|| {
            use rayon::prelude::*;
            (0..1000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 499500);
        // SAFETY: the child only builds a pool, sums and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let abort = Abort::new();
            let ok = pool(2, &abort).map(|p| {
                p.install(|| {
                    use rayon::prelude::*;
                    (0..1000u64).into_par_iter().sum::<u64>()
                })
            });
            unsafe { libc::_exit(if matches!(ok, Ok(499500)) { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}
