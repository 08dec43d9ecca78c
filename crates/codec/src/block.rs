//! Block compression of a keyframe or delta: LZ4 through the C library (the `lz4` crate; its
//! decoder is several times faster than pure-Rust ones on long zero runs, see anchors.md), zstd
//! for links where bytes matter more than CPU, or raw.

use std::cell::RefCell;

use thiserror::Error;

thread_local! {
    /// zstd's compression context, kept per thread with its level. `zstd::bulk`'s one-shot
    /// functions make a context for every call: on a colour browser page that was an
    /// allocation of fresh pages, which the kernel zeroes, for every dense delta sent. Each
    /// thread that compresses keeps one until it exits (the capture loop's, and tokio's
    /// blocking threads making deltas for one viewer, which exit when idle).
    static ZSTD_COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
    /// The same for decompression, on the viewer's side.
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Compresses `src` into `out` (empty, its capacity reserved) with this thread's context.
fn zstd_compress(level: i32, src: &[u8], out: &mut Vec<u8>) -> std::io::Result<usize> {
    ZSTD_COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().map(|(l, _)| *l) != Some(level) {
            *c = Some((level, zstd::bulk::Compressor::new(level)?));
        }
        let (_, z) = c.as_mut().expect("made above");
        // Into `out`'s spare capacity: nothing is zeroed first.
        z.compress_to_buffer(src, out)
    })
}

/// Decompresses `src` into `dst` with this thread's context.
fn zstd_decompress(src: &[u8], dst: &mut [u8]) -> std::io::Result<usize> {
    ZSTD_DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(zstd::bulk::Decompressor::new()?);
        }
        d.as_mut()
            .expect("made above")
            .decompress_to_buffer(src, dst)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockCodec {
    Raw,
    Lz4,
    /// zstd at the given level (1 is the fast default).
    Zstd(i32),
}

#[derive(Debug, Error)]
pub enum CodecError {
    #[error("compression failed: {0}")]
    Compress(String),
    #[error("payload is corrupt: {0}")]
    Corrupt(String),
    #[error("payload decodes to {got} bytes, expected {expected}")]
    WrongSize { got: usize, expected: usize },
}

impl BlockCodec {
    pub fn name(self) -> &'static str {
        match self {
            BlockCodec::Raw => "raw",
            BlockCodec::Lz4 => "lz4",
            BlockCodec::Zstd(_) => "zstd",
        }
    }

    /// Compresses `src` into `out` (cleared first; its capacity is reused across frames).
    pub fn compress(self, src: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.clear();
        match self {
            BlockCodec::Raw => out.extend_from_slice(src),
            BlockCodec::Lz4 => {
                let bound = lz4::block::compress_bound(src.len())
                    .map_err(|e| CodecError::Compress(e.to_string()))?;
                out.resize(bound, 0);
                let n = lz4::block::compress_to_buffer(
                    src,
                    Some(lz4::block::CompressionMode::DEFAULT),
                    false,
                    out,
                )
                .map_err(|e| CodecError::Compress(e.to_string()))?;
                out.truncate(n);
            }
            BlockCodec::Zstd(level) => {
                out.reserve(zstd::zstd_safe::compress_bound(src.len()));
                let n = zstd_compress(level, src, out)
                    .map_err(|e| CodecError::Compress(e.to_string()))?;
                debug_assert_eq!(out.len(), n);
            }
        }
        Ok(())
    }

    /// Decompresses `src` into exactly `dst.len()` bytes; any other size is an error.
    pub fn decompress(self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let got = match self {
            BlockCodec::Raw => {
                if src.len() == dst.len() {
                    dst.copy_from_slice(src);
                }
                src.len()
            }
            BlockCodec::Lz4 => {
                let expected = i32::try_from(dst.len())
                    .map_err(|_| CodecError::Corrupt("frame too large".into()))?;
                lz4::block::decompress_to_buffer(src, Some(expected), dst)
                    .map_err(|e| CodecError::Corrupt(e.to_string()))?
            }
            BlockCodec::Zstd(_) => {
                zstd_decompress(src, dst).map_err(|e| CodecError::Corrupt(e.to_string()))?
            }
        };
        if got != dst.len() {
            return Err(CodecError::WrongSize {
                got,
                expected: dst.len(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip_every_codec(data in proptest::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 0..5000)) {
            for c in [BlockCodec::Raw, BlockCodec::Lz4, BlockCodec::Zstd(1)] {
                let mut z = Vec::new();
                c.compress(&data, &mut z).unwrap();
                let mut back = vec![0xAAu8; data.len()];
                c.decompress(&z, &mut back).unwrap();
                prop_assert_eq!(&back, &data);
            }
        }

        #[test]
        fn garbage_payload_is_an_error_not_a_panic(junk in proptest::collection::vec(any::<u8>(), 0..300), n in 0usize..1000) {
            let mut dst = vec![0u8; n];
            for c in [BlockCodec::Raw, BlockCodec::Lz4, BlockCodec::Zstd(1)] {
                let _ = c.decompress(&junk, &mut dst);
            }
        }
    }

    /// The thread's kept zstd contexts give what fresh ones give: after a decompression that
    /// failed (a truncated payload, a buffer of the wrong size) and across levels, each frame
    /// compresses to the bytes a fresh context makes and decodes alone.
    #[test]
    fn zstd_kept_contexts_give_what_fresh_ones_give() {
        let a: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let b: Vec<u8> = (0..20_000u32).map(|i| (i / 9) as u8).collect();
        let mut z = Vec::new();
        for level in [1, 3, 1] {
            for data in [&a, &b] {
                BlockCodec::Zstd(level).compress(data, &mut z).unwrap();
                let fresh = zstd::bulk::compress(data, level).unwrap();
                assert_eq!(z, fresh, "level {level}");
                let mut dst = vec![0u8; data.len() - 1];
                assert!(BlockCodec::Zstd(level).decompress(&z, &mut dst).is_err());
                assert!(BlockCodec::Zstd(level)
                    .decompress(&z[..z.len() / 2], &mut dst)
                    .is_err());
                let mut back = vec![0u8; data.len()];
                BlockCodec::Zstd(level).decompress(&z, &mut back).unwrap();
                assert_eq!(&back, data);
            }
        }
    }

    #[test]
    fn short_output_is_rejected() {
        let mut z = Vec::new();
        BlockCodec::Lz4.compress(&[7u8; 100], &mut z).unwrap();
        let mut dst = vec![0u8; 200];
        assert!(BlockCodec::Lz4.decompress(&z, &mut dst).is_err());
    }
}
