//! What the server's whole-system tests share.

use framewire_capture::{Scene, SyntheticSource};
use framewire_codec::grey::{to_grey_scalar, PixelOrder};

/// The grey picture of frame `seq` of a scene, computed independently of the server.
pub fn expected(scene: Scene, w: u32, h: u32, seq: u64) -> Vec<u8> {
    let mut src = SyntheticSource::new(scene, w, h);
    let mut g = vec![0u8; (w * h) as usize];
    to_grey_scalar(src.render(seq), PixelOrder::Bgra, &mut g);
    g
}
