//! Is a process that registered in a segment still alive? A pid alone is not enough (pids are
//! reused), so each registration also records the process's start time from `/proc`, and a
//! zombie (killed but not yet reaped by its parent) counts as dead.

use std::sync::OnceLock;

/// A process, as registered in a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start: u64,
}

/// This process.
pub fn me() -> Process {
    static ME: OnceLock<Process> = OnceLock::new();
    // A pid changes across fork, so the cache is keyed by it.
    let pid = std::process::id();
    let p = *ME.get_or_init(|| Process {
        pid,
        start: start_time(pid).unwrap_or(0),
    });
    if p.pid == pid {
        p
    } else {
        Process {
            pid,
            start: start_time(pid).unwrap_or(0),
        }
    }
}

/// The start time of a live (not zombie) process, or `None`.
pub fn start_time(pid: u32) -> Option<u64> {
    framewire_telemetry::process::start_ticks(&pid.to_string())
}

pub fn alive(p: Process) -> bool {
    p.pid != 0 && start_time(p.pid) == Some(p.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not() {
        let m = me();
        assert!(alive(m));
        assert!(!alive(Process {
            pid: m.pid,
            start: m.start + 1
        }));
        assert!(!alive(Process { pid: 0, start: 0 }));
    }

    #[test]
    fn a_killed_child_is_dead_even_before_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let p = Process {
            pid: child.id(),
            start: start_time(child.id()).unwrap(),
        };
        assert!(alive(p));
        child.kill().unwrap();
        // Not waited for yet: a zombie.
        let t = std::time::Instant::now();
        while alive(p) && t.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!alive(p));
        child.wait().unwrap();
    }
}
