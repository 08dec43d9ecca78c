//! framewire wire formats, with no I/O and no clock of their own.
//!
//! Two protocols live here:
//! - [`v1`]: framewire's own protocol (handshake, stream description, frames with capture
//!   timestamps and checksums, explicit "unchanged" frames, rich ACKs, ping/pong, commands,
//!   goodbye). Specified in `spec/PROTOCOL.md`.
//! - [`daylight`]: the Daylight Mirror wire format, byte for byte, so the existing Android app
//!   can use a framewire host. Includes the touch packets of its input port.
//!
//! Every decoder is incremental (feed it whatever a socket read returned, in any split) and
//! checks every length field against a declared bound *before* allocating or waiting for the
//! body, so a hostile peer cannot make us buffer more than one maximum-size packet.

pub mod daylight;
mod error;
mod reader;
pub mod sensor_line;
pub mod shm_frame;
pub mod v1;

pub use error::ProtoError;
