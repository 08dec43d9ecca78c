//! The control side of a running server: the Unix control socket (the Daylight host's verbs,
//! answered in its words, and framewire's own) and the status file.
//!
//! | file | what |
//! |---|---|
//! | `runtime_dir.rs` | the private 0700 directory the socket and status file live in by default |
//! | `socket.rs` | default paths, binding (never over anything but a stale socket of ours), one command per connection, the client's `request` (only to our own or root's socket) |
//! | `verbs.rs` | each verb: parse the argument, change or read the mirror, word the reply |
//! | `status_file.rs` | the Daylight status keys, rewritten atomically every 2 s, `stopped` at the end |

mod runtime_dir;
mod socket;
mod status_file;
mod verbs;

/// A fresh directory for one test (unique per process and call: tests run in parallel).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "fw-control-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

use std::sync::Arc;

use framewire_mirror::Mirror;
use framewire_sensors::Sensors;
use framewire_telemetry::{counter_set, Counter, CounterRegistry};

pub use runtime_dir::{ensure_private_dir, runtime_dir, runtime_dir_for, user_label};
pub use socket::{
    bind, default_socket_path, default_status_path, request, serve, SocketFile, MAX_LINE,
};
pub use status_file::{run as run_status_file, write_atomically};
pub use verbs::execute;

counter_set! {
    /// What the control side counts.
    pub struct ControlCounters {
        control_accept_errors: Counter,
        control_errors: Counter,
        status_file_errors: Counter,
    }
}

/// What the verbs act on: the mirror and, when the sensor listener is on, the devices.
pub struct Target {
    pub mirror: Arc<Mirror>,
    pub sensors: Option<Sensors>,
    pub counters: Arc<ControlCounters>,
}

impl Target {
    /// The control side's target; its counters join `registry`.
    pub fn new(mirror: Arc<Mirror>, sensors: Option<Sensors>, registry: &CounterRegistry) -> Self {
        let counters = Arc::new(ControlCounters::default());
        registry.register(counters.clone());
        Target {
            mirror,
            sensors,
            counters,
        }
    }
}
