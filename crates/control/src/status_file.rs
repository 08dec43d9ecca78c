//! The status file: the Daylight status keys, rewritten atomically every 2 s, and once more
//! with `status=stopped` when the server stops cleanly.
//!
//! Each write goes to a new file of a unique name beside it (created exclusively, never through
//! a symlink, mode 0600), renamed over the status file: a name someone placed in a shared
//! directory is never written through.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;

use crate::Target;

/// Replaces the file at `path` with `body`: written to a fresh file beside it, then renamed.
pub fn write_atomically(path: &Path, body: &[u8]) -> std::io::Result<()> {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = path.with_file_name(tmp_name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let r = f.write_all(body).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn body(target: &Target, stopped: bool) -> String {
    target
        .mirror
        .status_lines()
        .into_iter()
        .map(|(k, v)| match k {
            "status" if stopped => "status=stopped\n".to_string(),
            _ => format!("{k}={v}\n"),
        })
        .collect()
}

/// Writes the status file every 2 s until `stop` turns true, then once more with
/// `status=stopped`, and returns.
pub async fn run(path: PathBuf, target: Arc<Target>, mut stop: watch::Receiver<bool>) {
    let mut warned = false;
    loop {
        let stopped = *stop.borrow_and_update();
        let text = body(&target, stopped);
        let p = path.clone();
        let r = tokio::task::spawn_blocking(move || write_atomically(&p, text.as_bytes()))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        if let Err(e) = r {
            target.counters.status_file_errors.inc();
            if !warned {
                warn!(path = %path.display(), error = %e, "cannot write the status file");
                warned = true;
            }
        }
        if stopped {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            r = stop.changed() => {
                if r.is_err() {
                    // The handle is gone without a shutdown: keep writing.
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_symlink_at_the_old_temporary_name_is_not_written_through() {
        let dir = crate::test_dir("symlink");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"root only\n").unwrap();
        let status = dir.join("status");
        // Where the status file used to be written before its rename.
        std::os::unix::fs::symlink(&victim, dir.join("status.tmp")).unwrap();
        write_atomically(&status, b"status=running\n").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"root only\n");
        assert_eq!(std::fs::read(&status).unwrap(), b"status=running\n");
        assert_eq!(std::fs::metadata(&status).unwrap().mode() & 0o777, 0o600);
        // Nothing left behind but the status file, the victim and the link.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_symlink_at_the_status_path_is_replaced_not_followed() {
        let dir = crate::test_dir("target");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"root only\n").unwrap();
        let status = dir.join("status");
        std::os::unix::fs::symlink(&victim, &status).unwrap();
        write_atomically(&status, b"status=idle\n").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"root only\n");
        let m = std::fs::symlink_metadata(&status).unwrap();
        assert!(m.file_type().is_file());
        assert_eq!(std::fs::read(&status).unwrap(), b"status=idle\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
