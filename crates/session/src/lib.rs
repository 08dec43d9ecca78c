//! framewire's session core, without I/O: what a host decides about one viewer, from what the
//! viewer sent and the time it is given, and nothing else: no sockets, threads, async runtime or clock
//! of its own (the shape of `quinn-proto`). The runtime (`framewire-mirror`, `framewire-client`) moves the bytes,
//! reads the clock and applies the decisions; tests drive whole conversations in memory.
//!
//! | file | what it decides |
//! |---|---|
//! | `handshake.rs` | the host's side before a session: the Hello (or a refusal, a timeout), and whether it is welcome, and if not the Goodbye that says why |
//! | `negotiate.rs` | the codec and features a viewer gets, from the capabilities it declared |
//! | `host.rs` | one viewer after its Hello: what to send for each frame, pings, ACKs, goodbye |
//! | `viewer.rs` | the viewer's side of v1: Hello, decode, apply, verify, ACK, pings |
//! | `viewer_daylight.rs` | a viewer of the Daylight protocol, as the app behaves: decode, apply, ACK |
//! | `outrun.rs` | whether the content outruns the path while large frames cross as datagrams |
//! | `frame.rs` | a captured frame as every viewer shares it (payloads made once per codec) |
//! | `wire.rs` | the trait that turns a session's decisions into one protocol's bytes |
//! | `wire_v1.rs`, `wire_daylight.rs` | framewire v1 and the Daylight app's wire format |
//! | `protocol.rs` | which of the two a connection speaks |

pub mod frame;
pub mod handshake;
pub mod host;
pub mod negotiate;
pub mod outrun;
mod protocol;
pub mod viewer;
pub mod viewer_daylight;
pub mod wire;
pub mod wire_daylight;
pub mod wire_v1;

pub use frame::{DeltaForm, FrameMeta, Payload, SourceFrame};
pub use handshake::{
    check_hello, token_matches, Handshake, Hello, HelloRules, Refusal, PRE_HELLO_BUFFER,
};
pub use host::{Event, HostConfig, HostCount, HostSession, Repair, Transmit, ViewerReader};
pub use negotiate::{negotiate, Negotiated};
pub use protocol::Protocol;
pub use viewer::{Shown, ViewerEvent, ViewerHello, ViewerSession};
pub use viewer_daylight::{DaylightShown, DaylightViewerEvent, DaylightViewerSession};
pub use wire::{ViewerCommand, Wire, Work};
pub use wire_daylight::DaylightWire;
pub use wire_v1::{codec_from_wire, codec_to_wire, V1Wire};
