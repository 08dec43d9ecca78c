//! Frame sources for framewire: the [`FrameSource`] trait every capture backend implements, and
//! the deterministic synthetic scenes used by the demo, the tests and the benchmarks.

pub mod huge_pages;
mod resolution;
pub mod shm_source;
mod source;
pub mod synthetic;
mod text;

pub use resolution::{Resolution, ResolutionError, PRESETS};
pub use shm_source::{ShmPublisher, ShmSource};
pub use source::{CaptureError, Captured, Damage, FrameSource};
pub use synthetic::{Scene, SyntheticSource};
