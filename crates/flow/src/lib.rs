//! framewire flow control, fully deterministic: every function takes the current time in
//! microseconds from the caller and returns decisions. No sockets, threads or clocks here, so
//! tests drive whole conversations with a fake clock and never sleep.
//!
//! - [`ViewerFlow`]: one viewer's in-flight window, RTT, skip accounting and the choice of
//!   keyframe / shared delta / unchanged for the next frame it is given.
//! - [`InflightLimit`]: the adaptive in-flight limit (Daylight's formula by default).
//! - [`ClockOffset`]: the offset between two peers' clocks from ping/pong exchanges.
//! - [`PingSchedule`]: when to send those pings.
//! - [`DeliveryRate`]: the bytes a viewer may have in flight, from the rate its ACKs show.
//! - [`LossWatch`]: whether the path has lost packets lately, from the transport's counters.
//! - [`RebaseCost`]: what a delta made for one viewer alone costs to make, and whether that is
//!   too much to make one for every frame on a lossy path.

mod clock_offset;
mod limit;
mod loss;
mod ping;
mod rate;
mod rebase_cost;
mod viewer;

pub use clock_offset::ClockOffset;
pub use limit::InflightLimit;
pub use loss::LossWatch;
pub use ping::PingSchedule;
pub use rate::{DeliveryRate, LinkEstimate, TransportRtt, RATE_WINDOW_US};
pub use rebase_cost::{RebaseCost, COSTLY_US};
pub use viewer::{AckOutcome, Bases, FrameInfo, Plan, ViewerFlow, ViewerFlowStats};
