use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ShmError {
    #[error("invalid shared-memory name {0:?}: use 1–100 characters from A–Z a–z 0–9 . _ -")]
    BadName(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing the shared-memory file {}: {reason} (segments are files of their owner, \
         mode 0600; remove it, or pick another name)",
        path.display()
    )]
    Unsafe { path: PathBuf, reason: String },
    #[error("no shared-memory segment {0} (is its publisher running?)")]
    NotFound(String),
    #[error("{name} is not a compatible framewire segment ({why}){}", in_use(*pid))]
    Incompatible {
        name: String,
        why: String,
        pid: Option<u32>,
    },
    #[error("all {0} receiver places of this segment are taken")]
    NoReceiverPlace(u32),
    #[error("all {0} sender places of this segment are taken")]
    NoSenderPlace(u32),
    #[error("this route already has a live sender (pid {0}); a route has exactly one")]
    RouteHasSender(u32),
    #[error("a message of {len} bytes is larger than this segment carries ({max})")]
    TooLarge { len: usize, max: usize },
    #[error("no room: a receiver is behind and the policy is to fail")]
    Full,
    #[error("timed out")]
    Timeout,
    #[error("segment {0} is corrupt: {1}")]
    Corrupt(String, String),
}

fn in_use(pid: Option<u32>) -> String {
    pid.map(|p| format!("; in use by pid {p}"))
        .unwrap_or_default()
}
