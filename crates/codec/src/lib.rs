//! framewire's frame codec: BGRA/RGBA → 8-bit grey, XOR delta, LZ4 (C liblz4) or zstd blocks,
//! "unchanged" detection, keyframe scheduling and frame checksums.
//!
//! Host side: [`HostEncoder`] turns each grey frame into a keyframe, a delta (full-frame XOR,
//! row delta, or moved rectangles: [`rects`], found by [`motion`]) or "unchanged".
//! Viewer side: [`Picture`] applies what arrives and verifies the checksum.
//! Nothing here does I/O or reads a clock.

pub mod block;
pub mod checksum;
pub mod colour;
pub mod compare;
pub mod delta;
mod encoder;
pub mod grey;
pub mod ingest;
pub mod motion;
mod picture;
pub mod predict;
pub mod rect_delta;
pub mod rects;
pub mod rows;
pub mod tune;

pub use block::{BlockCodec, CodecError};
pub use encoder::{Encoded, EncodedKind, HostEncoder, KeyframeReason, SharedPicture};
pub use picture::{ApplyError, Picture, Saved};
