//! framewire's session core, without I/O: what a host decides about one viewer, from what the
//! viewer sent and nothing else: no sockets, threads, tokio or clock of its own (the shape of
//! `quinn-proto`). The runtime (`framewire-server`) moves the bytes and applies the decisions.
//!
//! | file | decision |
//! |---|---|
//! | `handshake.rs` | whether a Hello is welcome, and if not the Goodbye that says why |
//! | `negotiate.rs` | the codec and features a viewer gets, from the capabilities it declared |

pub mod handshake;
pub mod negotiate;

pub use handshake::{check_hello, token_matches, HelloRules, Refusal};
pub use negotiate::{negotiate, Negotiated};
