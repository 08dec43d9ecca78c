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
pub use log_limit::LogLimit;
pub use report::{format_daylight_latency, LatencyReport, StageSummary};
pub use stages::{observe_us, StageHistograms};
pub use window::SampleWindow;
