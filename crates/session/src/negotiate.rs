//! Capability negotiation: a viewer gets only the codec and features it declared in its Hello.
//! The host's configured codec when the viewer takes it; else LZ4 when it takes that; else raw
//! bytes, which every viewer can read. The Welcome carries what both sides have.

use framewire_codec::rects::Codecs;
use framewire_proto::v1::{caps, Codec};

use crate::wire_v1::{codec_from_wire, codec_to_wire};

/// What one viewer gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// The block codec of every frame sent to this viewer, except `dense` ones.
    pub codec: Codec,
    /// The codec of moved-rectangle deltas with predicted rectangles: zstd when `codec` is LZ4
    /// and the viewer declared zstd (an entropy coder is what their residuals need), else
    /// `codec`.
    pub dense: Codec,
    /// The capabilities both sides have (the Welcome's).
    pub caps: u32,
    /// The viewer understands Unchanged packets; without them an unchanged frame sends nothing.
    pub unchanged: bool,
    /// The viewer applies moved-rectangle deltas; without them it gets full-frame deltas when
    /// the shared payload is one.
    pub rects: bool,
    /// The viewer applies predicted rectangles in moved-rectangle deltas; without them it gets
    /// a full-frame delta when the shared payload has some.
    pub predicted: bool,
    /// The viewer asked for colour (and the host has it): its stream is the colour one.
    pub colour: bool,
    /// Its deltas name their base: it keeps its picture when a frame is lost, and gets a
    /// delta against a picture it holds instead of a keyframe.
    pub named_bases: bool,
}

/// The capability bit a codec needs (raw needs none).
fn codec_cap(c: Codec) -> u32 {
    match c {
        Codec::Raw => 0,
        Codec::Lz4 => caps::LZ4,
        Codec::Zstd => caps::ZSTD,
    }
}

/// Decides what a viewer that declared `viewer_caps` gets from a host that encodes with
/// `preferred` and supports `host_caps`.
pub fn negotiate(preferred: Codec, host_caps: u32, viewer_caps: u32) -> Negotiated {
    let both = host_caps & viewer_caps;
    let codec = [preferred, Codec::Lz4]
        .into_iter()
        .find(|&c| codec_cap(c) & both == codec_cap(c))
        .unwrap_or(Codec::Raw);
    // The codec crate's rule for what a host sends dense deltas in, when the viewer reads it.
    let served = codec_to_wire(Codecs::served(codec_from_wire(codec)).dense);
    let dense = match codec_cap(served) & both == codec_cap(served) {
        true => served,
        false => codec,
    };
    Negotiated {
        codec,
        dense,
        caps: both,
        unchanged: both & caps::UNCHANGED != 0,
        rects: both & caps::MOVED_RECTS != 0,
        predicted: both & caps::PREDICTED_RECTS != 0,
        colour: both & caps::COLOUR != 0,
        named_bases: both & caps::NAMED_BASES != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BROWSER: u32 = caps::LZ4 | caps::UNCHANGED | caps::CHECKSUM_XXH3;

    #[test]
    fn a_viewer_gets_only_what_it_declared() {
        // The browser page declares no zstd: a zstd host sends it LZ4.
        let n = negotiate(Codec::Zstd, caps::ALL, BROWSER);
        assert_eq!(n.codec, Codec::Lz4);
        assert_eq!(n.caps, BROWSER);
        assert!(n.unchanged);
        assert_eq!(
            negotiate(Codec::Zstd, caps::ALL, caps::ALL).codec,
            Codec::Zstd
        );
        assert_eq!(
            negotiate(Codec::Lz4, caps::ALL, caps::ZSTD).codec,
            Codec::Raw
        );
        assert_eq!(
            negotiate(Codec::Raw, caps::ALL, caps::ALL).codec,
            Codec::Raw
        );
        // A viewer without Unchanged is never sent one.
        assert!(!negotiate(Codec::Lz4, caps::ALL, caps::LZ4).unchanged);
        // A host without zstd does not send it even to a viewer that has it.
        assert_eq!(
            negotiate(Codec::Zstd, caps::LZ4, caps::ALL).codec,
            Codec::Lz4
        );
    }

    #[test]
    fn dense_deltas_are_zstd_only_beside_lz4_and_only_for_viewers_with_zstd() {
        let dense = |p, h, v| negotiate(p, h, v).dense;
        assert_eq!(dense(Codec::Lz4, caps::ALL, caps::ALL), Codec::Zstd);
        assert_eq!(dense(Codec::Lz4, caps::ALL, BROWSER), Codec::Lz4);
        assert_eq!(dense(Codec::Lz4, caps::LZ4, caps::ALL), Codec::Lz4);
        assert_eq!(dense(Codec::Zstd, caps::ALL, caps::ALL), Codec::Zstd);
        // A host configured for raw sends raw, dense or not.
        assert_eq!(dense(Codec::Raw, caps::ALL, caps::ALL), Codec::Raw);
    }

    proptest! {
        /// Whatever both sides declare, the codec chosen is one both have (raw needs nothing),
        /// and the Welcome never claims a capability either side lacks.
        #[test]
        fn never_beyond_what_both_declared(host in any::<u32>(), viewer in any::<u32>(), p in 0u8..3) {
            let preferred = [Codec::Raw, Codec::Lz4, Codec::Zstd][p as usize];
            let n = negotiate(preferred, host, viewer);
            prop_assert_eq!(codec_cap(n.codec) & !(host & viewer), 0);
            prop_assert_eq!(codec_cap(n.dense) & !(host & viewer), 0);
            prop_assert_eq!(n.caps & !(host & viewer), 0);
            if codec_cap(preferred) & host & viewer == codec_cap(preferred) {
                prop_assert_eq!(n.codec, preferred);
            }
        }
    }
}
