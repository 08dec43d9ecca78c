//! The Unix control socket, compatible with the Daylight host's: one newline-terminated
//! command (≤ 255 bytes) per connection, verb case-insensitive, reply `OK …` or `ERR …` and a
//! newline (multi-line replies: `OK`, then `key=value` lines), then the socket closes.
//! framewire adds `REPORT` (the full latency report as JSON after `OK`). The verbs themselves
//! are in `verbs.rs`.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tracing::{info, warn};

use crate::runtime_dir::{euid, runtime_dir, user_label};
use crate::verbs::execute;
use crate::Target;

pub const MAX_LINE: usize = 255;

/// The default control socket path: `control.sock` in the runtime directory
/// (`$XDG_RUNTIME_DIR/framewire/`, else `/tmp/framewire-$UID/`), which is created (0700) and
/// checked.
pub fn default_socket_path() -> anyhow::Result<PathBuf> {
    Ok(runtime_dir()?.join("control.sock"))
}

/// The default status file path: `status`, beside the socket.
pub fn default_status_path() -> anyhow::Result<PathBuf> {
    Ok(runtime_dir()?.join("status"))
}

/// What is at a path, in words.
fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a device"
    }
}

/// The socket file a server bound, removed at shutdown only if it is still that very file.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket, unless something else has taken its name since.
    pub fn remove(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if m.file_type().is_socket() && m.dev() == self.dev && m.ino() == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Makes way for a new socket at `path`: nothing there, or a stale socket of ours (no server
/// answers), which is removed. Anything else is left alone and refused.
fn clear_stale(path: &Path) -> anyhow::Result<()> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("looking at {}", path.display())),
    };
    if !m.file_type().is_socket() {
        anyhow::bail!(
            "{} exists and is {}, not a socket; framewire removes only a stale socket of its \
             own: move it away or pass another --control-socket",
            path.display(),
            kind(m.file_type())
        );
    }
    if m.uid() != euid() {
        anyhow::bail!(
            "{} is a socket of {}, not yours; framewire will not remove it: pass another \
             --control-socket",
            path.display(),
            user_label(m.uid())
        );
    }
    // A socket file left by a dead server: remove it, but never steal a live one.
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        anyhow::bail!(
            "another framewire server is answering on {}; stop it or pass --control-socket",
            path.display()
        );
    }
    std::fs::remove_file(path).with_context(|| format!("removing stale socket {}", path.display()))
}

/// Binds the control socket at `path`, mode 0600 whatever the umask.
///
/// The socket is bound inside a fresh 0700 directory beside `path`, given mode 0600 there, and
/// only then linked to `path` (which fails rather than replace anything that appeared there
/// meanwhile): nobody can connect while its mode is still the umask's.
pub fn bind(path: &Path) -> anyhow::Result<(UnixListener, SocketFile)> {
    clear_stale(path)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    static N: AtomicU32 = AtomicU32::new(0);
    let staging = loop {
        let d = parent.join(format!(
            ".fw{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => break d,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("binding the control socket {}", path.display()))
            }
        }
    };
    let inner = staging.join("s");
    let r = (|| {
        let l = UnixListener::bind(&inner)?;
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o600))?;
        std::fs::hard_link(&inner, path)?;
        Ok::<_, std::io::Error>(l)
    })();
    let _ = std::fs::remove_file(&inner);
    let _ = std::fs::remove_dir(&staging);
    let l = r.with_context(|| format!("binding the control socket {}", path.display()))?;
    let m = std::fs::symlink_metadata(path)
        .with_context(|| format!("binding the control socket {}", path.display()))?;
    Ok((
        l,
        SocketFile {
            path: path.to_path_buf(),
            dev: m.dev(),
            ino: m.ino(),
        },
    ))
}

pub async fn serve(l: UnixListener, target: Arc<Target>, path: PathBuf) {
    info!(path = %path.display(), "control socket ready");
    loop {
        let Ok((s, _)) = l.accept().await else {
            target.counters.control_accept_errors.inc();
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let target = target.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(s, &target).await {
                target.counters.control_errors.inc();
                warn!(error = %e, "control request failed");
            }
        });
    }
}

async fn handle(s: UnixStream, target: &Target) -> anyhow::Result<()> {
    let (rd, mut wr) = s.into_split();
    let mut line = String::new();
    let mut rd = BufReader::new(rd.take(MAX_LINE as u64 + 1));
    let read = tokio::time::timeout(Duration::from_secs(2), rd.read_line(&mut line)).await;
    let reply = match read {
        Err(_) => "ERR timeout waiting for a command\n".to_string(),
        Ok(Err(e)) => format!("ERR {e}\n"),
        Ok(Ok(_)) if line.len() > MAX_LINE => "ERR command longer than 255 bytes\n".to_string(),
        Ok(Ok(_)) => execute(line.trim(), target),
    };
    wr.write_all(reply.as_bytes()).await?;
    wr.shutdown().await?;
    Ok(())
}

/// Sends one command to a control socket and returns the whole reply.
///
/// Only to a socket of this user's or root's, served by a process of this user's or root's: a
/// socket another user placed at the path would otherwise get the command (and make up the
/// reply).
pub async fn request(path: &Path, line: &str) -> anyhow::Result<String> {
    let me = euid();
    let trusted = |uid: u32| uid == me || uid == 0;
    // The name itself (a symlink someone else placed) and what it leads to.
    for m in [std::fs::symlink_metadata(path), std::fs::metadata(path)]
        .into_iter()
        .flatten()
    {
        if !trusted(m.uid()) {
            anyhow::bail!(
                "{} belongs to {}, not to you ({}) or root: refusing to send it commands \
                 (another user may have put it there); pass --control-socket with your \
                 server's socket",
                path.display(),
                user_label(m.uid()),
                user_label(me)
            );
        }
    }
    let mut s = UnixStream::connect(path)
        .await
        .with_context(|| format!("no framewire server answers on {} (start one with `framewire serve` or `framewire demo`, or pass --control-socket)", path.display()))?;
    // The process at the other end, whatever happened to the path since.
    let peer = s.peer_cred().context("reading the control socket's peer")?;
    if !trusted(peer.uid()) {
        anyhow::bail!(
            "the server on {} runs as {}, not as you ({}) or root: refusing to send it commands",
            path.display(),
            user_label(peer.uid()),
            user_label(me)
        );
    }
    s.write_all(format!("{line}\n").as_bytes()).await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .context("the server did not reply within 5 s")??;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A socket at `path` that answers every command `OK` from a thread, as a squatter would.
    fn answering_socket(path: &Path) {
        let l = std::os::unix::net::UnixListener::bind(path).unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                let mut b = [0u8; 256];
                let _ = s.read(&mut b);
                let _ = s.write_all(b"OK\n");
            }
        });
    }

    #[tokio::test]
    async fn a_file_at_the_socket_path_is_neither_deleted_nor_bound_over() {
        let dir = crate::test_dir("file");
        let path = dir.join("ctl.sock");
        std::fs::write(&path, b"precious").unwrap();
        let e = bind(&path).unwrap_err().to_string();
        assert!(e.contains("is a regular file, not a socket"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"precious");
        // Nor a symlink (to a file or to a socket), nor a directory.
        let link = dir.join("link.sock");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = bind(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(link.symlink_metadata().is_ok());
        let e = bind(&dir).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"precious");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_stale_socket_of_ours_is_replaced_and_the_new_one_is_0600() {
        let dir = crate::test_dir("stale");
        let path = dir.join("ctl.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let (l, file) = bind(&path).unwrap();
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert!(m.file_type().is_socket());
        assert_eq!(m.mode() & 0o7777, 0o600, "mode {:o}", m.mode());
        // The new socket answers at the path, and nothing else was left in the directory.
        let _c = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let _ = l.accept().await.unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A live socket is never taken over.
        let e = bind(&path).unwrap_err().to_string();
        assert!(e.contains("another framewire server is answering"), "{e}");
        drop(l);
        file.remove();
        assert!(path.symlink_metadata().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_socket_of_another_user_is_not_removed() {
        let dir = crate::test_dir("theirs");
        let path = dir.join("ctl.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let e = bind(&path).unwrap_err().to_string();
        assert!(e.contains("socket of uid 65534"), "{e}");
        assert!(path.symlink_metadata().unwrap().file_type().is_socket());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn removing_at_shutdown_spares_whatever_took_the_name_since() {
        let dir = crate::test_dir("spare");
        let path = dir.join("ctl.sock");
        let (l, file) = bind(&path).unwrap();
        drop(l);
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"someone else's").unwrap();
        file.remove();
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_client_refuses_a_socket_of_another_user_naming_the_owner() {
        let dir = crate::test_dir("squat");
        let path = dir.join("ctl.sock");
        answering_socket(&path);
        // Ours: it answers.
        assert_eq!(request(&path, "STOP").await.unwrap(), "OK\n");
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let e = request(&path, "STOP").await.unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534"), "{e}");
        // Nor through a symlink of ours to it.
        let link = dir.join("link.sock");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = request(&link, "STOP").await.unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
