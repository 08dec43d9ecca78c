//! An emulated network link between two Linux network namespaces, for tests and benchmarks:
//! delay, jitter, loss, duplication and reordering from a user-space packet relay with a
//! seeded random generator, rate limits from the kernel's `tbf` (this kernel has no `netem`).
//!
//! ```text
//!   namespace A                                                  namespace B
//!   10.77.0.1/30 ── fwnetem0 (TUN) ══ relay A→B ══> fwnetem0 (TUN) ── 10.77.0.2/30
//!                   [tbf: A→B rate] <══ relay B→A ══ [tbf: B→A rate]
//! ```
//!
//! The relay works on whole IP packets, so TCP, UDP and QUIC all meet the same real losses,
//! duplicates and reordering. A rate limit is a `tbf` qdisc on the sending side's TUN device:
//! packets wait in the sender's own stack, and TCP sees real back-pressure.
//!
//! Run code in a namespace from this process with [`in_namespace`] (sockets opened there stay
//! there and can be used from any thread), or another program with the prefix from
//! [`Link::exec_a`] / [`Link::exec_b`] (`ip netns exec <name> ...`). Needs root;
//! [`available`] says why not when it cannot work.
//!
//! | file             | what it is for                                                    |
//! |------------------|-------------------------------------------------------------------|
//! | `link.rs`        | [`Link`], [`LinkConfig`]: build the link, change it live, tear down |
//! | `impairment.rs`  | [`Impairment`] and the per-packet decision (pure, tested alone)    |
//! | `relay.rs`       | one direction's thread: read, decide, hold until due, deliver      |
//! | `delay_queue.rs` | the bounded priority queue of packets waiting for their due time   |
//! | `rng.rs`         | splitmix64, so a seed replays a run exactly                        |
//! | `counters.rs`    | [`DirectionCounters`]: where every packet went                     |
//! | `shaper.rs`      | rate limits: the `tbf` command and its burst and latency choices   |
//! | `tun.rs`         | a TUN device: create, read a packet, write a packet                |
//! | `device.rs`      | the TUN devices' own drops, before the relay read them             |
//! | `namespace.rs`   | `ip netns add`/`del`, and [`in_namespace`]                         |
//! | `cmd.rs`         | running `ip`/`tc` with exit codes and stderr checked               |
//! | `available.rs`   | [`available`]: can a link be built here, and if not, why          |
//! | `error.rs`       | [`NetemError`]                                                     |
//!
//! Every queue is bounded and every drop is counted: the delay queue (10 000 packets or
//! 16 MiB per direction, `queue_full`), the tbf queue (100 ms at the rate; the kernel counts
//! its drops in `tc -s qdisc`), and the TUN device's own queue (its txqueuelen,
//! [`TXQUEUELEN`]: 10 000 packets; its drops in [`Link::device_drops`]).

mod available;
mod cmd;
mod counters;
mod delay_queue;
mod device;
mod error;
mod impairment;
mod link;
mod namespace;
mod relay;
mod rng;
mod shaper;
mod tun;

pub use available::available;
pub use counters::DirectionCounters;
pub use delay_queue::{MAX_BYTES as QUEUE_MAX_BYTES, MAX_PACKETS as QUEUE_MAX_PACKETS};
pub use error::NetemError;
pub use impairment::Impairment;
pub use link::{Link, LinkConfig, MTU, TUN_NAME, TXQUEUELEN};
pub use namespace::in_namespace;
pub use shaper::{
    burst_bytes as tbf_burst_bytes, LATENCY_MS as TBF_LATENCY_MS,
    MIN_BURST_BYTES as TBF_MIN_BURST_BYTES,
};
