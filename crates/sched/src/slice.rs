//! A short scheduling slice for a thread under the normal policy.

use std::time::Duration;

/// Asks the kernel for a short scheduling slice for the calling thread (EEVDF, Linux 6.12 and
/// later: the `sched_runtime` of a SCHED_OTHER thread is its slice). A thread with a short
/// slice runs soon after it wakes instead of waiting for the running thread's slice to end,
/// which on a busy 2-core machine was milliseconds. Only the slice changes: the thread's
/// policy and nice value are read first and kept, and a thread under another policy (say
/// SCHED_FIFO, given by `chrt`) is left alone. Older kernels ignore the slice. Returns whether
/// the kernel took the request.
///
/// By hand because neither libc nor a maintained crate wraps `sched_getattr`/`sched_setattr`.
pub fn short_slice(slice: Duration) -> bool {
    // SAFETY: sched_attr is plain data; zeroed is a valid value for every field.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as u32;
    // SAFETY: pid 0 is the calling thread; attr is a writable sched_attr of `size` bytes.
    let got = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut libc::sched_attr,
            size,
            0,
        )
    };
    if got != 0 || attr.sched_policy != libc::SCHED_OTHER as u32 {
        return false;
    }
    attr.size = size;
    attr.sched_runtime = slice.as_nanos().min(u64::MAX as u128) as u64;
    // SAFETY: as above; attr is a valid sched_attr of the size it declares.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0,
            &attr as *const libc::sched_attr,
            0,
        )
    };
    r == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slice this thread has, where the kernel shows it (CONFIG_SCHED_DEBUG).
    fn slice_ns() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = s.lines().find(|l| l.starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    fn nice() -> i32 {
        // SAFETY: getpriority only reads.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn a_short_slice_is_taken_and_the_nice_value_kept() {
        std::thread::spawn(|| {
            // SAFETY: raising this thread's own nice value needs no privilege.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 5) };
            assert_eq!(nice(), 5);
            if short_slice(Duration::from_micros(200)) {
                if let Some(ns) = slice_ns() {
                    assert_eq!(ns, 200_000);
                }
            }
            assert_eq!(nice(), 5, "the thread's nice value changed");
        })
        .join()
        .unwrap();
    }
}
