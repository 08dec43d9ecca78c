//! A moved-rectangle delta of one picture against another: the moves are found
//! ([`crate::motion`]) in the first plane and made the same in every plane (a colour picture
//! stacks three, see [`crate::colour`]); what still differs goes as patches ([`crate::rects`]).
//! Used for the delta every viewer shares and for the deltas made for one viewer against a
//! picture it acknowledged.

use crate::block::{BlockCodec, CodecError};
use crate::motion::Finder;
use crate::rects::{self, Codecs, RectPlan};

/// The finder's buffers and anchors, and the encoder's scratch, kept from delta to delta.
#[derive(Default)]
pub struct RectDeltaMaker {
    finder: Finder,
    scratch: rects::Scratch,
    /// Large patches may go as predicted rectangles ([`crate::predict`]).
    predicted: bool,
}

impl RectDeltaMaker {
    /// A maker whose deltas may carry predicted rectangles (for viewers that declared them).
    pub fn with_predicted(mut self, on: bool) -> Self {
        self.predicted = on;
        self
    }
}

/// Two pictures of one size (`planes` planes stacked, `width` wide) with the hash of each of
/// their rows.
pub struct Pair<'a> {
    pub prev: &'a [u8],
    pub cur: &'a [u8],
    pub width: usize,
    pub planes: usize,
    pub prev_rows: &'a [u64],
    pub cur_rows: &'a [u64],
}

impl RectDeltaMaker {
    /// Writes `p.cur` as a moved-rectangle delta against `p.prev` into `out`; returns its plan
    /// and the codec of its block (see [`Codecs`]).
    pub fn make(
        &mut self,
        p: Pair<'_>,
        codecs: Codecs,
        out: &mut Vec<u8>,
    ) -> Result<(RectPlan, BlockCodec), CodecError> {
        let (w, planes) = (p.width, p.planes.max(1));
        debug_assert!(
            p.prev.len() == p.cur.len()
                && p.prev_rows.len() == p.cur_rows.len()
                && p.cur_rows.len() * w == p.cur.len(),
            "two pictures of one size, with a hash per row"
        );
        let ph = p.cur_rows.len() / planes;
        let found = self.finder.find(
            &p.prev[..w * ph],
            &p.cur[..w * ph],
            w,
            &p.prev_rows[..ph],
            &p.cur_rows[..ph],
        );
        let moves = (0..planes as u32)
            .flat_map(|k| {
                found.iter().map(move |m| {
                    let mut m = *m;
                    m.to.y += k * ph as u32;
                    m
                })
            })
            .collect();
        rects::encode(
            p.prev,
            p.cur,
            w,
            p.prev_rows,
            p.cur_rows,
            moves,
            Some(self.finder.compared()),
            codecs,
            if self.predicted { planes } else { 0 },
            &mut self.scratch,
            out,
        )
    }
}
