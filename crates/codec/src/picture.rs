//! The viewer's picture: applies keyframes and deltas and verifies checksums.

use thiserror::Error;

use crate::block::{BlockCodec, CodecError};
use crate::checksum::picture_checksum;
use crate::delta::xor_in_place;

#[derive(Debug, Error)]
pub enum ApplyError {
    #[error("delta received before any keyframe")]
    NoReference,
    #[error(transparent)]
    Codec(#[from] CodecError),
}

/// A grey picture plus the scratch space to decode a delta into. Decoding and applying are two
/// calls so a caller can time each stage.
pub struct Picture {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
    scratch: Vec<u8>,
    valid: bool,
    pending: Pending,
}

enum Pending {
    Nothing,
    Delta,
    Rows(crate::rows::RowPlan, usize),
}

impl Picture {
    pub fn new(width: u32, height: u32) -> Self {
        let n = width as usize * height as usize;
        Picture {
            width,
            height,
            pixels: vec![0; n],
            scratch: vec![0; n],
            valid: false,
            pending: Pending::Nothing,
        }
    }

    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn height(&self) -> u32 {
        self.height
    }
    pub fn len(&self) -> usize {
        self.pixels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pixels.is_empty()
    }
    /// True once a keyframe has been applied and nothing has failed since.
    pub fn is_valid(&self) -> bool {
        self.valid
    }
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    /// Reallocates for a new size; the picture is invalid until the next keyframe.
    pub fn resize(&mut self, width: u32, height: u32) {
        *self = Picture::new(width, height);
    }

    /// Decompresses a payload. A keyframe lands straight in the picture (no extra copy); a delta
    /// lands in scratch until [`Picture::apply`]. On error the picture is marked invalid, so
    /// no later delta is applied to a wrong base.
    pub fn decode(
        &mut self,
        keyframe: bool,
        codec: BlockCodec,
        payload: &[u8],
    ) -> Result<(), ApplyError> {
        self.pending = Pending::Nothing;
        if keyframe {
            let r = codec.decompress(payload, &mut self.pixels);
            self.valid = r.is_ok();
            r?;
        } else {
            if !self.valid {
                return Err(ApplyError::NoReference);
            }
            if let Err(e) = codec.decompress(payload, &mut self.scratch) {
                // The picture itself is untouched, but the stream now lacks this delta.
                self.valid = false;
                return Err(e.into());
            }
            self.pending = Pending::Delta;
        }
        Ok(())
    }

    /// Decompresses a row delta (see [`crate::rows`]); [`Picture::apply`] shifts and XORs.
    pub fn decode_rows(&mut self, codec: BlockCodec, payload: &[u8]) -> Result<(), ApplyError> {
        self.pending = Pending::Nothing;
        if !self.valid {
            return Err(ApplyError::NoReference);
        }
        let w = self.width as usize;
        let r = crate::rows::parse_header(payload, self.height as usize).and_then(|h| {
            let n = h.plan.rows() * w;
            codec
                .decompress(&payload[h.data_offset..], &mut self.scratch[..n])
                .map(|()| (h.plan, n))
        });
        match r {
            Ok((plan, n)) => {
                self.pending = Pending::Rows(plan, n);
                Ok(())
            }
            Err(e) => {
                self.valid = false;
                Err(e.into())
            }
        }
    }

    /// Applies the delta decoded by the last [`Picture::decode`] (nothing for a keyframe).
    pub fn apply(&mut self) {
        match std::mem::replace(&mut self.pending, Pending::Nothing) {
            Pending::Nothing => {}
            Pending::Delta => xor_in_place(&mut self.pixels, &self.scratch),
            Pending::Rows(plan, n) => crate::rows::apply(
                &mut self.pixels,
                self.width as usize,
                &plan,
                &self.scratch[..n],
            ),
        }
    }

    pub fn checksum(&self) -> u64 {
        picture_checksum(&self.pixels)
    }

    /// Forgets the picture, e.g. after a checksum mismatch: only a keyframe is accepted next.
    pub fn invalidate(&mut self) {
        self.valid = false;
    }
}
