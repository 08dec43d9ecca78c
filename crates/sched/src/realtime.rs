//! Realtime priority (SCHED_FIFO) for the stream's threads.
//!
//! On a machine whose cores are busy with other programs (a browser scrolling on the same two
//! cores as the server mirroring it), a thread under the normal policy that wakes with work
//! waits for a time slice: the server's capture and encode thread, and the task that writes a
//! frame to its viewer. Under SCHED_FIFO it runs as soon as it is runnable. Measured live
//! beside Chromium (BENCHMARKS.md, "Realtime priority for the stream's threads; buffers made
//! ahead"), three runs each, the capture → applied p99 in colour went from 6.17 to 4.50 ms by
//! the medians (runs 5.25–6.72 against 4.49–4.94 ms), and the host's send stage's p99 from
//! 0.85 to 0.08 ms.
//!
//! Which threads take it: the one that asked ([`realtime`]: a server's or a viewer's main
//! thread), and those that [`follow`] it: the capture thread, the runtime's workers (the
//! viewers' sessions and sends, and every other task they run: HTTP, the control socket, the
//! sensor listener), the shared-memory export and a shared-memory viewer's reader. Not the
//! blocking pool's jobs (a viewer's keyframe, the metrics page, the status file), the input
//! and sensor hub threads, nor the programs framewire starts (`adb`, `Xvfb`): the priority is
//! set per thread with SCHED_RESET_ON_FORK, which no thread or process inherits.
//!
//! It is opt-in (`--realtime`): a thread under SCHED_FIFO that had endless work would take
//! its core from every normal program but for the kernel's own limit (`sched_rt_runtime_us`,
//! 95 % by default). The capture loop, late twice in a row under realtime priority, rests a
//! quarter of a frame interval after each frame (`mirror/src/pipeline.rs`), time its core has
//! for other programs.

use std::io;
use std::sync::atomic::{AtomicU8, Ordering};

/// The priorities SCHED_FIFO has on Linux.
pub const PRIORITIES: std::ops::RangeInclusive<u8> = 1..=99;

/// The priority the stream's threads take, once [`realtime`] succeeded (0: none).
static PRIORITY: AtomicU8 = AtomicU8::new(0);

thread_local! {
    /// Whether this thread has asked to [`follow`] the stream's priority.
    static FOLLOWED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`follow`], the first time a thread calls it. For a hook that runs again and again on the
/// threads that should follow (tokio's `on_thread_park`, which its workers run and its
/// blocking pool does not).
pub fn follow_once() {
    if !FOLLOWED.with(|f| f.get()) {
        follow();
    }
}

/// Puts the calling thread under SCHED_FIFO at `priority`, and remembers it so the stream's
/// threads started later take it too ([`follow`]). Refused without the privilege: root,
/// CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least `priority` (`ulimit -r`, or `rtprio` in
/// limits.conf), and in a cgroup that allows realtime runtime; the error says so.
pub fn realtime(priority: u8) -> io::Result<()> {
    if !PRIORITIES.contains(&priority) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("realtime priority {priority} is outside 1-99"),
        ));
    }
    set_fifo(priority).map_err(|e| {
        let why = if e.kind() == io::ErrorKind::PermissionDenied {
            ": run as root, give the binary CAP_SYS_NICE (setcap cap_sys_nice+ep), or allow it \
             with an RLIMIT_RTPRIO of the priority or more (ulimit -r; rtprio in \
             /etc/security/limits.conf); in a container or a cgroup, the cgroup may also need \
             realtime runtime (cpu.rt_runtime_us)"
        } else {
            ""
        };
        io::Error::new(
            e.kind(),
            format!("realtime priority {priority} refused ({e}){why}"),
        )
    })?;
    PRIORITY.store(priority, Ordering::Relaxed);
    Ok(())
}

/// The stream's realtime priority, where [`realtime`] took one.
#[must_use]
pub fn priority() -> Option<u8> {
    match PRIORITY.load(Ordering::Relaxed) {
        0 => None,
        p => Some(p),
    }
}

/// Puts the calling thread under the stream's realtime priority, where [`realtime`] took one
/// (a thread does not inherit it: SCHED_RESET_ON_FORK). Returns whether it did; a refusal
/// (the privilege dropped since) is logged, and the thread goes on at normal priority.
pub fn follow() -> bool {
    FOLLOWED.with(|f| f.set(true));
    let Some(p) = priority() else { return false };
    match set_fifo(p) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(
                "a thread of the stream could not take realtime priority {p} ({e}); it runs at \
                 normal priority"
            );
            false
        }
    }
}

fn set_fifo(priority: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
    let r = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's policy (with SCHED_RESET_ON_FORK, if set) and priority.
    fn policy() -> (i32, i32) {
        // SAFETY: pid 0 is the calling thread; both calls only read.
        let policy = unsafe { libc::sched_getscheduler(0) };
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above; param is writable.
        assert_eq!(unsafe { libc::sched_getparam(0, &mut param) }, 0);
        (policy, param.sched_priority)
    }

    #[test]
    fn a_priority_out_of_range_is_refused_before_the_kernel() {
        for p in [0, 100] {
            let e = realtime(p).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{p}: {e}");
        }
    }

    /// Taken, the priority holds for the thread that asked and for threads that follow it,
    /// and no other thread inherits it. Refused (not root, no CAP_SYS_NICE, no
    /// RLIMIT_RTPRIO), the error names the ways to allow it, and nothing changed.
    #[test]
    fn the_priority_is_taken_by_the_threads_that_ask_and_by_no_other() {
        std::thread::spawn(|| {
            let fifo = libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK;
            match realtime(7) {
                Ok(()) => {
                    assert_eq!(policy(), (fifo, 7));
                    assert_eq!(priority(), Some(7));
                    let inherited = std::thread::spawn(policy).join().unwrap();
                    assert_eq!(
                        inherited,
                        (libc::SCHED_OTHER, 0),
                        "a thread that did not ask"
                    );
                    let followed = std::thread::spawn(|| (follow(), policy())).join().unwrap();
                    assert_eq!(followed, (true, (fifo, 7)));
                }
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
                    let text = e.to_string();
                    assert!(
                        text.contains("CAP_SYS_NICE") && text.contains("ulimit -r"),
                        "{text}"
                    );
                    assert_eq!(policy(), (libc::SCHED_OTHER, 0));
                    assert_eq!(priority(), None);
                    assert!(!follow());
                }
            }
        })
        .join()
        .unwrap();
    }
}
