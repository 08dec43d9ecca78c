//! The contract between a capture backend and the pipeline.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CaptureError {
    #[error("capture source is not available: {0}")]
    Unavailable(String),
    #[error("capture failed: {0}")]
    Failed(String),
}

/// One captured picture, borrowed from the source until the next call.
pub struct Captured<'a> {
    pub width: u32,
    pub height: u32,
    /// 4 bytes per pixel, B G R A, rows packed (stride = width × 4).
    pub bgra: &'a [u8],
    /// False when the source knows nothing changed since the last capture (e.g. no damage),
    /// so the pipeline may skip converting and diffing it.
    pub changed: bool,
}

/// A source of pictures: a synthetic scene, an X11 screen, a camera.
pub trait FrameSource: Send {
    /// Short name for logs and stats ("synthetic:mixed", "x11:0").
    fn name(&self) -> String;
    fn size(&self) -> (u32, u32);
    /// Captures the next picture. Pacing is the caller's job.
    fn capture(&mut self) -> Result<Captured<'_>, CaptureError>;
}
