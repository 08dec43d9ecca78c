//! Typed protocol errors. Each variant has a stable short name used as a counter label.

use thiserror::Error;

/// Why a byte stream was rejected. After any of these the stream's framing cannot be trusted,
/// so the connection should be closed (with a goodbye, where the protocol has one).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtoError {
    #[error("bad magic byte 0x{found:02x} (expected 0x{expected:02x})")]
    BadMagic { expected: u8, found: u8 },
    #[error("unknown packet type 0x{0:02x}")]
    UnknownType(u8),
    #[error("{kind} packet length {len} exceeds the limit of {max} bytes")]
    TooLong {
        kind: &'static str,
        len: u64,
        max: u64,
    },
    #[error("{kind} packet body is {len} bytes, expected {expected}")]
    BadLength {
        kind: &'static str,
        len: usize,
        expected: usize,
    },
    #[error("{kind} packet is truncated")]
    Truncated { kind: &'static str },
    #[error("invalid field {field}: {why}")]
    InvalidField {
        field: &'static str,
        why: &'static str,
    },
}

impl ProtoError {
    /// A short stable name for counters and logs (`rejected_packets{reason="bad_magic"}`).
    pub fn reason(&self) -> &'static str {
        match self {
            ProtoError::BadMagic { .. } => "bad_magic",
            ProtoError::UnknownType(_) => "unknown_type",
            ProtoError::TooLong { .. } => "too_long",
            ProtoError::BadLength { .. } => "bad_length",
            ProtoError::Truncated { .. } => "truncated",
            ProtoError::InvalidField { .. } => "invalid_field",
        }
    }
}
