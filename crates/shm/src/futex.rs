//! Futex wait and wake on words in shared memory.
//!
//! The words live in a mapping shared between processes, so these are the shared futex
//! operations (no `FUTEX_PRIVATE_FLAG`, which only works within one process). Every syscall is
//! counted, so the benchmark and the tests can show that none happen while receivers are awake.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

static WAITS: AtomicU64 = AtomicU64::new(0);
static WAKES: AtomicU64 = AtomicU64::new(0);

/// Futex syscalls made by this process: (waits, wakes).
pub fn syscalls() -> (u64, u64) {
    (WAITS.load(Ordering::Relaxed), WAKES.load(Ordering::Relaxed))
}

/// Sleeps while `word` holds `expected`, at most `timeout`. Returns early on a wake, a signal,
/// or when the word already differs; callers re-check their condition either way.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    WAITS.fetch_add(1, Ordering::Relaxed);
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call; FUTEX_WAIT only
    // reads it. The timeout pointer is null or points at `ts`, alive until the call returns.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            tsp,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every process sleeping on `word`.
pub fn wake_all(word: &AtomicU32) {
    WAKES.fetch_add(1, Ordering::Relaxed);
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE does not access it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
