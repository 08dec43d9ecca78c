//! The one error type of this crate: what failed, and what a user can do about it.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum NetemError {
    #[error("could not run `{cmd}`: {source} (is iproute2 installed and on PATH?)")]
    Spawn { cmd: String, source: std::io::Error },
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Command {
        cmd: String,
        status: String,
        stderr: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("invalid link configuration: {0}")]
    Config(String),
    #[error("`{cmd}` printed no {what}: {output:?}")]
    Output {
        cmd: String,
        what: &'static str,
        output: String,
    },
}

impl NetemError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> NetemError {
        NetemError::Io {
            what: what.into(),
            source,
        }
    }

    /// The error of the last failed libc call, with what was being done.
    pub(crate) fn last_os(what: impl Into<String>) -> NetemError {
        NetemError::io(what, std::io::Error::last_os_error())
    }
}
