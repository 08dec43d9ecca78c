//! framewire's benchmark programs and load generator (`framewire bench …`, `framewire
//! loadgen`). Each prints a table (or `--json`); results go in BENCHMARKS.md with the machine.
//!
//! | file | what it measures |
//! |---|---|
//! | `args.rs` | their command-line arguments |
//! | `codec.rs` | per-stage codec cost for every scene at every preset |
//! | `codec_input.rs` | the same on recordings of real programs (`--input`) |
//! | `e2e.rs` | loopback end-to-end latency (capture → applied) with several viewers |
//! | `net.rs` | across emulated networks (namespaces, relay, tbf): QUIC beside TCP, cell by cell |
//! | `link.rs` | one emulated link held open for another program (the browser benchmark) |
//! | `ipc.rs` | shared-memory transport between processes |
//! | `x11.rs` | X11 capture on Xvfb, and a server's CPU on an unchanged screen |
//! | `loadgen.rs` | the sensor listener under load, end to end through a subscriber |

pub mod args;
pub mod codec;
mod codec_input;
pub mod e2e;
pub mod ipc;
pub mod link;
pub mod loadgen;
pub mod net;
pub mod x11;
