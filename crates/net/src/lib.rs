//! Listeners: every TCP port framewire opens is bound and accepted here, so each has the same
//! bounds. A listener holds at most its declared number of connections (a connection beyond it
//! is closed at once and counted), the limits together stay within the process's descriptor
//! budget (so one flooded port cannot starve the others), and a listener may admit only the
//! addresses of an allowlist.
//!
//! | file | what |
//! |---|---|
//! | `listen.rs` | binding with a deep backlog; accepting without spinning when accept fails |
//! | `gate.rs` | one listener's connection limit, its permits and its refusals |
//! | `budget.rs` | the descriptor budget: the open-file limit shared between the listeners |
//! | `allow.rs` | the address allowlist (`--sensor-allow 10.0.0.0/24,…`) |

mod allow;
mod budget;
mod gate;
mod listen;

pub use allow::AllowList;
pub use budget::{raise_nofile_limit, share_descriptors, Budget, RESERVED_DESCRIPTORS};
pub use gate::{Admitted, Gate, NetCounters, Permit};
pub use listen::{accept, listen, LISTEN_BACKLOG};
