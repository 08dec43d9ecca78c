//! Named network namespaces (`ip netns add` / `del`), and running code inside one from this
//! process.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use crate::cmd;
use crate::error::NetemError;

/// `ip netns add` sets up /var/run/netns as a shared mount the first time it runs; two doing so at
/// once (tests run in parallel) can stack mounts. One at a time within this process.
static ADD_LOCK: Mutex<()> = Mutex::new(());

/// A named network namespace this process created; deleted on drop.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// Creates the namespace `name` (an error if it already exists: another run's namespace
    /// is never taken over, nor deleted).
    pub fn create(name: &str) -> Result<Namespace, NetemError> {
        check_name(name)?;
        let _guard = ADD_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        cmd::run("ip", &["netns", "add", name])?;
        Ok(Namespace {
            name: name.to_string(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // The kernel frees the namespace itself once the last socket or device in it is gone.
        if let Err(e) = cmd::run("ip", &["netns", "del", &self.name]) {
            tracing::warn!(
                "netem: could not delete network namespace {}: {e}",
                self.name
            );
        }
    }
}

/// Names become paths under /var/run/netns, so keep them to one plain path component.
pub(crate) fn check_name(name: &str) -> Result<(), NetemError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(NetemError::Config(format!(
            "namespace name {name:?}: use 1–200 characters from A–Z a–z 0–9 - _ ."
        )))
    }
}

/// Runs `f` on a new thread that has first entered the network namespace `name`, and returns
/// what `f` returns. A panic in `f` is passed on to the caller.
///
/// Sockets (and TUN devices) created by `f` belong to that namespace for their whole life, and
/// may be returned and used from any thread. Threads that `f` starts — a tokio runtime's
/// workers, say — start in the namespace too.
///
/// With tokio, a socket belongs to the namespace of the thread that creates it: run the
/// runtime's `block_on` inside `f`, or spawn onto a runtime built inside `f` (its workers are
/// in the namespace), or create std sockets here and hand them to tokio with `from_std`. A
/// `block_on` called outside, on a runtime built inside, creates sockets outside.
pub fn in_namespace<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T, NetemError> {
    check_name(name)?;
    let path = format!("/var/run/netns/{name}");
    let ns = File::open(&path)
        .map_err(|e| NetemError::io(format!("opening {path} (does the namespace exist?)"), e))?;
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name(format!("netns-{name}"))
            .spawn_scoped(s, move || {
                // setns with CLONE_NEWNET changes only the calling thread, and this thread
                // ends with `f`, so no thread of the caller's ever leaves its namespace.
                // SAFETY: `ns` is an open namespace file, valid for the call.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(NetemError::last_os(format!("setns into {path}")));
                }
                Ok(f())
            })
            .map_err(|e| NetemError::io("starting a thread", e))?;
        match worker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_component() {
        assert!(check_name("fw-a-123_4.x").is_ok());
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(201)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
