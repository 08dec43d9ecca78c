//! What the mirror is asked to do: the source, its size and pace, the codec, how viewers are
//! paced, and the display's starting settings.

use std::path::PathBuf;

use framewire_capture::{Resolution, Scene};
use framewire_codec::BlockCodec;
use framewire_flow::InflightLimit;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    Synthetic(Scene),
    /// BGRA frames a local process publishes on this shared-memory route.
    Shm(String),
    /// An X11 screen (`None`: `$DISPLAY`), or a region of it, with or without the cursor.
    X11 {
        display: Option<String>,
        region: Option<framewire_x11::Region>,
        cursor: bool,
    },
    /// A recording (`framewire record`), replayed from the start again when it ends.
    File {
        path: PathBuf,
        pace: framewire_record::Pace,
    },
}

#[derive(Debug, Clone)]
pub struct MirrorConfig {
    pub source: SourceSpec,
    pub resolution: Resolution,
    pub fps: u32,
    pub codec: BlockCodec,
    /// Daylight viewers get a keyframe after this many deltas (0 = never). They cannot verify
    /// pictures; framewire v1 viewers check every checksum and ask when they need one.
    pub keyframe_interval: u32,
    /// Send framewire v1 viewers row deltas (shift + changed rows) instead of full-frame XOR.
    pub row_deltas: bool,
    /// With row deltas on: moved-rectangle deltas instead (viewers that do not declare them
    /// get full-frame deltas).
    pub moved_rects: bool,
    /// Moved-rectangle deltas may carry predicted rectangles (viewers that do not declare them
    /// get a full-frame delta for such a frame).
    pub predicted_rects: bool,
    /// With `codec` LZ4: moved-rectangle deltas with predicted rectangles go in zstd to the
    /// viewers that declared it (see `framewire_codec::rects::Codecs`).
    pub dense_zstd: bool,
    pub limit: InflightLimit,
    pub ack_timeout_us: u64,
    /// Appends `protocol viewer wire_seq checksum` for every frame sent.
    pub trace_frames: Option<PathBuf>,
    pub brightness: u8,
    /// Display tuning applied to every picture (changeable live through the control socket).
    pub tuning: framewire_codec::tune::Tuning,
}

impl Default for MirrorConfig {
    fn default() -> Self {
        MirrorConfig {
            source: SourceSpec::Synthetic(Scene::Mixed),
            resolution: Resolution::SHARP,
            fps: 60,
            codec: BlockCodec::Lz4,
            keyframe_interval: 60,
            row_deltas: true,
            moved_rects: true,
            predicted_rects: true,
            dense_zstd: true,
            limit: InflightLimit::default(),
            ack_timeout_us: 2_000_000,
            trace_frames: None,
            brightness: 128,
            tuning: Default::default(),
        }
    }
}

impl MirrorConfig {
    /// The codec of the shared deltas that carry predicted rectangles.
    pub fn dense_codec(&self) -> BlockCodec {
        match self.dense_zstd {
            true => framewire_codec::rects::Codecs::served(self.codec).dense,
            false => self.codec,
        }
    }
}
