//! The stream hub: named streams, publishers and subscribers, with no I/O and no clock of its
//! own (times are passed in), so the delivery rules are tested directly.
//!
//! | file | what |
//! |---|---|
//! | `item.rs` | what streams carry: samples (timestamped key=value readings) and thermal grids |
//! | `filter.rs` | which streams a subscriber wants: one name, a prefix (`sensor/`), or all |
//! | `subscriber.rs` | one subscriber's bounded queue and its policy per kind |
//! | `hub.rs` | the registry: publish once, deliver to every matching subscriber |
//!
//! Policies: samples are never dropped silently. Each subscriber's sample queue is bounded;
//! when it overflows, the subscriber gets a `Missed(n)` notice in the place of the samples it
//! lost, and the counters say so. Thermal grids (like video) are newest-wins per stream: a
//! subscriber that is behind gets the latest grid, and the grids it never saw are counted.
//!
//! Memory is bounded (`Limits`): each queue in samples and in bytes, all queues together in
//! bytes (beyond it the subscriber holding the most is cut off, told why and what it lost),
//! and the number of live streams (idle ones expire; a new one beyond the limit is refused
//! and counted).

mod filter;
mod hub;
mod item;
mod subscriber;

pub use filter::Filter;
pub use hub::{Hub, HubCounters, Limits, StreamStats, SubscriberId, CUT_OFF_BUDGET};
pub use item::{Item, Sample, Thermal, Value};
pub use subscriber::{item_cost, Delivery, QueueLimit, Subscriber};
