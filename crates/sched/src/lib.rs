//! How the kernel schedules framewire's latency-critical threads.
//!
//! | file | concern |
//! |---|---|
//! | `realtime.rs` | realtime priority (SCHED_FIFO) for a server's or a viewer's threads, `--realtime` |
//! | `slice.rs` | a short EEVDF slice for a thread that stays under the normal policy (the sensor hub) |

mod realtime;
mod slice;

pub use realtime::{follow, follow_once, priority, realtime, PRIORITIES};
pub use slice::short_slice;
