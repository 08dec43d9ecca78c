//! framewire telemetry: named drop/event counters, rolling sample windows for per-stage
//! timings and RTT, and the report formats read by `framewire latency`, the control socket and
//! the status file. No clock: callers pass durations in; the only reads are a process's own
//! figures from `/proc` (`process`).

mod counters;
pub mod process;
mod report;
pub mod stats;
mod window;

pub use counters::{Counter, Counters};
pub use report::{format_daylight_latency, LatencyReport, StageSummary};
pub use window::SampleWindow;
