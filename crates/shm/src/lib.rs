//! framewire's shared-memory transport: messages between processes on one machine without
//! sockets, from 1 byte to whole frames, with zero-copy reads.
//!
//! Two shapes over one design: a **route** has one sender and N receivers; a **channel** has N
//! senders and N receivers. Either way every receiver sees every message, in one order.
//!
//! - A segment is a file in `/dev/shm` (mode 0600) holding a header (magic, version, layout,
//!   topic hash: checked on attach, so unrelated processes cannot attach by accident), tables
//!   of receivers, senders and members (one cache line each), a ring of variable-length records
//!   (64-byte units) and a pool of large blocks ([`layout`]).
//! - `/dev/shm` is shared, so a segment is opened without following a symlink and used only if
//!   it is a regular file of the opener's (or, to attach, root's) that no other user can write
//!   (nor, to create, read): [`ShmError::Unsafe`] otherwise.
//! - Small messages are written inline in the ring; large ones into a pool block, with a ring
//!   record pointing at it. A receiver reads either in place ([`Msg`] derefs to the bytes) and
//!   releases it when the `Msg` is dropped.
//! - Senders reserve ring space with one compare-and-swap on the head and publish by storing
//!   the record's stamp; receivers keep their own cursor. Nothing takes a lock per message.
//! - A receiver that finds nothing spins briefly, then sleeps on a futex in the segment (a
//!   shared, not private, futex). Senders make the wake syscall only when a receiver has said it
//!   is sleeping, so a busy stream costs no syscalls ([`futex::syscalls`] counts them).
//! - When a receiver is behind, the channel's [`Policy`] decides: block the sender (with a
//!   timeout), drop the oldest messages for that receiver (it can read how many it missed), or
//!   fail the send.
//! - Every participant registers its pid and process start time. A process killed mid-message
//!   is found when someone waits on it: a dead receiver's place is reclaimed, a dead sender's
//!   half-written record becomes a tombstone that receivers skip, and a segment whose users all
//!   died is re-created fresh by the next one to open it.

mod channel;
pub mod error;
pub mod futex;
pub mod layout;
pub mod liveness;
mod segment;

pub use channel::{Channel, Msg, Options, Receiver, Sender, Stats};
pub use error::ShmError;
pub use segment::path_for;

/// Who sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Shape {
    /// One sender, N receivers.
    Route = 1,
    /// N senders, N receivers.
    Channel = 2,
}

impl Shape {
    fn from_u32(v: u32) -> Option<Shape> {
        match v {
            1 => Some(Shape::Route),
            2 => Some(Shape::Channel),
            _ => None,
        }
    }
}

/// What a send does when a receiver is too far behind for the message to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Policy {
    /// Wait until the slowest receiver makes room (or the send's timeout passes).
    Block = 1,
    /// Skip the oldest messages for the receivers that are behind; each counts what it missed.
    DropOldest = 2,
    /// Return [`ShmError::Full`] at once.
    Fail = 3,
}

impl Policy {
    fn from_u32(v: u32) -> Option<Policy> {
        match v {
            1 => Some(Policy::Block),
            2 => Some(Policy::DropOldest),
            3 => Some(Policy::Fail),
            _ => None,
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "block" => Ok(Policy::Block),
            "drop-oldest" => Ok(Policy::DropOldest),
            "fail" => Ok(Policy::Fail),
            _ => Err(format!(
                "unknown policy {s:?}: use block, drop-oldest or fail"
            )),
        }
    }
}
