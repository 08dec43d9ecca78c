//! The input back-channel without I/O or clocks: bytes and events in, injector actions out.
//!
//! | file | what |
//! |---|---|
//! | `action.rs` | what an injector does: move, button, wheel step, key |
//! | `gesture.rs` | touches → tap (a click) or drag (press, moves, release); scroll with acceleration |
//!
//! The Daylight touch stream itself (port 8892, 23-byte packets, parsed as a stream with
//! resynchronisation) is `framewire_proto::daylight::TouchDecoder`.

pub mod action;
pub mod gesture;

pub use action::Action;
pub use gesture::{GestureConfig, Gestures};
