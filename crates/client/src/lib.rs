//! framewire's clients, for `framewire view`, the benches, the tests and any program that
//! embeds one: the headless screen viewer (framewire v1 through the sans-IO `ViewerSession`,
//! the Daylight app's protocol through `DaylightViewerSession`) and the shared-memory frame
//! viewer.
//!
//! | file | what |
//! |---|---|
//! | `viewer.rs` | connect, decode, apply, verify, ACK; per-frame events and latency figures |
//! | `link.rs` | what a v1 viewer reads: a TCP stream, or QUIC (a control stream and one stream per frame) |
//! | `shm_viewer.rs` | read each frame of a shared-memory route in place, verify, measure |

pub mod link;
pub mod shm_viewer;
pub mod viewer;

pub use framewire_session::Protocol;
pub use viewer::{run_viewer, FrameEvent, ViewerOptions, ViewerStats};
