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
    /// What may have changed since the previous capture. The pipeline converts and diffs only
    /// damaged rows, and does nothing at all for an undamaged picture.
    pub damage: Damage,
}

/// Rows that may differ from the previous capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// Unknown or everything (the first capture, a size change, a source without damage).
    All,
    /// Half-open row ranges `(y0, y1)`; possibly overlapping; empty means nothing changed.
    Rows(Vec<(u32, u32)>),
}

impl Damage {
    /// The damaged rows as sorted, merged, clipped ranges; `None` for `All`.
    pub fn merged(&self, height: u32) -> Option<Vec<(u32, u32)>> {
        let Damage::Rows(r) = self else { return None };
        let mut v: Vec<(u32, u32)> = r
            .iter()
            .map(|&(a, b)| (a.min(height), b.min(height)))
            .filter(|(a, b)| a < b)
            .collect();
        v.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Some(out)
    }
}

/// A source of pictures: a synthetic scene, an X11 screen, a camera.
pub trait FrameSource: Send {
    /// Short name for logs and stats ("synthetic:mixed", "x11:0").
    fn name(&self) -> String;
    fn size(&self) -> (u32, u32);
    /// Captures the next picture. Pacing is the caller's job.
    fn capture(&mut self) -> Result<Captured<'_>, CaptureError>;
    /// The source's own counters (cumulative), copied into the server's named counters.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
