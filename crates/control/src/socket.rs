//! The Unix control socket, compatible with the Daylight host's: one newline-terminated
//! command (≤ 255 bytes) per connection, verb case-insensitive, reply `OK …` or `ERR …` and a
//! newline (multi-line replies: `OK`, then `key=value` lines), then the socket closes.
//! framewire adds `REPORT` (the full latency report as JSON after `OK`). The verbs themselves
//! are in `verbs.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tracing::{info, warn};

use crate::verbs::execute;
use crate::Target;

pub const MAX_LINE: usize = 255;

/// The default control socket path: `$XDG_RUNTIME_DIR/framewire.sock`, else
/// `/tmp/framewire-$UID.sock`.
pub fn default_socket_path() -> PathBuf {
    runtime_dir().join(format!("framewire{}.sock", uid_suffix()))
}

/// The default status file path, beside the socket.
pub fn default_status_path() -> PathBuf {
    runtime_dir().join(format!("framewire{}.status", uid_suffix()))
}

fn runtime_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn uid_suffix() -> String {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        String::new()
    } else {
        // SAFETY: getuid has no preconditions and cannot fail.
        format!("-{}", unsafe { libc::getuid() })
    }
}

pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    if path.exists() {
        // A socket file left by a dead server: remove it, but never steal a live one.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            anyhow::bail!(
                "another framewire server is answering on {}; stop it or pass --control-socket",
                path.display()
            );
        }
        std::fs::remove_file(path)
            .with_context(|| format!("removing stale socket {}", path.display()))?;
    }
    UnixListener::bind(path)
        .with_context(|| format!("binding the control socket {}", path.display()))
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
pub async fn request(path: &Path, line: &str) -> anyhow::Result<String> {
    let mut s = UnixStream::connect(path)
        .await
        .with_context(|| format!("no framewire server answers on {} (start one with `framewire serve` or `framewire demo`, or pass --control-socket)", path.display()))?;
    s.write_all(format!("{line}\n").as_bytes()).await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .context("the server did not reply within 5 s")??;
    Ok(out)
}
