//! The input back-channel without I/O or clocks: bytes and events in, injector actions out.
//!
//! | file | what |
//! |---|---|
//! | `action.rs` | what an injector does: move, button, wheel step, key |
//! | `touch.rs` | the Daylight touch packet stream (port 8892), parsed as a stream |
//! | `gesture.rs` | touches → tap (a click) or drag (press, moves, release); scroll with acceleration |

pub mod action;
pub mod gesture;
pub mod touch;

pub use action::Action;
pub use gesture::{GestureConfig, Gestures};
pub use touch::{TouchKind, TouchPacket, TouchParser};
