//! A framewire server: the subsystems started from one [`ServerConfig`] and joined together.
//! The work is in the subsystem crates; this crate binds the listeners, runs the v1 front
//! door, and wires.
//!
//! | crate | what |
//! |---|---|
//! | `framewire-mirror` | capture loop, viewer connections (sans-IO sessions), display, shm export, input |
//! | `framewire-sensors` | sensor line listener, devices, stream hub, subscribers |
//! | `framewire-control` | control socket verbs and status file |
//! | `framewire-http` | pages, WebSocket, `/api/webtransport`, `/api/stats`, `/metrics` |
//!
//! | file | what |
//! |---|---|
//! | `cert.rs` | the host's certificate while it runs: shown by QUIC, WebTransport and HTTPS, renewed before it runs out |
//! | `config.rs` | the server's configuration, with safe defaults, and its exposure check |
//! | `server.rs` | starting each subsystem, the handle, shutdown |
//! | `door.rs` | the v1 front door: Hello, its rules, then a viewer or a subscriber |
//! | `listen.rs` | binding listeners, accepting without spinning |
//! | `conn.rs` | what a v1 connection runs on: TCP, a WebSocket's pipe, or a QUIC control stream |
//! | `quic.rs` | framewire v1 over QUIC: accepting connections, the control stream, one stream per frame |
//! | `webtransport.rs` | a browser's WebTransport session (HTTP/3 on the QUIC port) into a v1 session |

mod cert;
pub mod config;
mod conn;
mod door;
mod quic;
mod server;
mod webtransport;

pub use config::{ConnLimits, HttpTls, ServerConfig};
pub use door::DoorCounters;
pub use framewire_mirror::input::InputConfig;
pub use framewire_mirror::{
    open_source, DisplayHandle, Protocol, Settings, SourceFrame, SourceSpec, ViewerCommand,
};
pub use server::{Server, ServerHandle};
