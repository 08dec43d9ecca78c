//! framewire telemetry: typed counter sets, rolling sample windows for per-stage timings and
//! RTT, per-stage Prometheus histograms, the runtime's clock, and the report formats read by
//! `framewire latency`, the control socket and the status file.

pub mod clock;
mod counters;
mod log_limit;
pub mod process;
mod report;
pub mod stages;
pub mod stats;
mod window;

pub use counters::{Counter, CounterRegistry, CounterSet, Family, Visit};
pub use log_limit::{LogLimit, SharedLogLimit};
pub use report::{format_daylight_latency, LatencyReport, StageSummary, ViewerPath};
pub use stages::{observe_us, StageHistograms};
pub use window::SampleWindow;

/// Locks a mutex, recovering the data if a panicking thread poisoned it: the structures the
/// runtime keeps behind its locks stay consistent between statements, and a report or a
/// viewer's figures must never take the server down. The one copy every runtime crate uses.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
