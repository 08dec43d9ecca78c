//! Figures of a process from `/proc`, in one place: its `stat` fields, CPU time, resident
//! memory and start time. (The one part of this crate that reads anything: Linux's own
//! counters, on demand.)

/// Clock ticks per second, the unit of `stat`'s times.
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// The fields of `/proc/<pid>/stat` after the command name (which is in parentheses and may
/// contain anything): index 0 is the state (field 3 of proc(5)), index `n - 3` field `n`.
/// `pid` is a number or `self`.
pub fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_ascii_whitespace().map(str::to_string).collect())
}

/// CPU seconds (user + system) a process has used.
pub fn cpu_seconds(pid: &str) -> Option<f64> {
    let f = stat_fields(pid)?;
    // utime and stime are fields 14 and 15.
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / clock_ticks())
}

/// Resident memory of a process, MB.
pub fn rss_mb(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// The start time (clock ticks since boot, field 22) of a live process: `None` for a zombie
/// or a process that is gone.
pub fn start_ticks(pid: &str) -> Option<u64> {
    let f = stat_fields(pid)?;
    if matches!(f.first().map(String::as_str), Some("Z" | "X")) {
        return None;
    }
    f.get(19)?.parse().ok()
}

/// Seconds since this process started.
pub fn age_of_self() -> Option<f64> {
    let start = start_ticks("self")? as f64 / clock_ticks();
    let up: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(up - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_seen() {
        let me = std::process::id().to_string();
        assert_eq!(
            stat_fields("thread-self").unwrap()[0],
            "R",
            "this thread is running"
        );
        assert!(rss_mb(&me).unwrap() > 0.5);
        assert!(cpu_seconds("self").unwrap() >= 0.0);
        assert_eq!(start_ticks(&me), start_ticks("self"));
        let age = age_of_self().unwrap();
        assert!((0.0..3600.0).contains(&age), "{age}");
        assert_eq!(start_ticks("999999999"), None);
    }
}
