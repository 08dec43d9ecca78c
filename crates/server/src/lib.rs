//! The framewire runtime: tokio listeners for framewire v1 and Daylight-compatible viewers fed
//! by one capture loop, the control socket and status file, and the headless viewer.
//!
//! The protocol and session logic lives in `framewire-proto`, `framewire-flow` and
//! `framewire-session`; this crate owns the sockets, threads and clock.
//!
//! | file | stage |
//! |---|---|
//! | `pipeline.rs` | capture → grey → delta/compress, on its own thread, newest frame published |
//! | `session.rs` | one viewer connection: one task driving its sans-IO `HostSession` (`framewire-session`) |
//! | `server.rs` | listeners, bind safety, handshake, shutdown |
//! | `control.rs`, `status_file.rs` | the Unix control socket (Daylight verbs) and status file |
//! | `report.rs` | the latency report assembled from shared state |
//! | `viewer.rs` | the headless viewer: decode, apply, verify, ACK, stats |
//! | `streams.rs` | the stream hub at run time: publishers → hub task → subscribers, with back-pressure |
//! | `http.rs` | the HTTP port: the browser viewer and dashboard pages, `/ws`, `/api/stats`, `/metrics` |
//! | `input.rs` | viewers' input and the Daylight touch port → XTest, on its own thread |
//! | `latency.rs` | per-stage latency histograms for `/metrics` |
//! | `websocket.rs` | a browser's WebSocket carried into an ordinary v1 session |
//! | `web_assets.rs` | the pages built from `web/` and embedded at build time |
//! | `conn.rs` | what a session runs on: TCP, or the WebSocket's pipe |
//! | `devices.rs` | the sensor devices connected now, and commands to them |
//! | `sensor.rs` | the EmberEye-compatible sensor line listener (port 9001) |
//! | `shm_export.rs` | every frame to a shared-memory route, for local consumers |
//! | `shm_viewer.rs` | a local viewer of such a route: verify, measure |

pub mod clock;
pub mod config;
mod conn;
pub mod control;
pub mod devices;
pub mod display;
pub mod http;
pub mod input;
mod latency;
mod pipeline;
pub mod report;
mod sched;
pub mod sensor;
mod server;
mod session;
pub mod shm_export;
pub mod shm_viewer;
mod state;
mod status_file;
pub mod streams;
mod subscriber;
pub mod viewer;
mod web_assets;
mod websocket;

pub use config::{Protocol, ServerConfig, SourceSpec};
pub use display::DisplayHandle;
pub use framewire_session::SourceFrame;
pub use server::{Server, ServerHandle};
pub use state::{Settings, ViewerCommand};
