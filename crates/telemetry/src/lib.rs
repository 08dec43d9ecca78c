//! framewire telemetry: named drop/event counters, rolling sample windows for per-stage
//! timings and RTT, and the report formats read by `framewire latency`, the control socket and
//! the status file. No I/O and no clock: callers pass durations in.

mod counters;
mod report;
mod window;

pub use counters::{Counter, Counters};
pub use report::{format_daylight_latency, LatencyReport, StageSummary};
pub use window::SampleWindow;
