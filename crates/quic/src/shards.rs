//! Frames as QUIC datagrams: a unit (one v1 frame, as it would go on a stream) split into
//! equal shards plus Reed-Solomon recovery shards, and put back together from any `originals`
//! of them.
//!
//! A datagram that is lost stays lost: QUIC does not retransmit it. That is the point: a
//! retransmission arrives a round trip late, when a newer frame may already have made this one
//! stale. Instead each unit carries [`recovery_for`] extra shards (as many as the sender's
//! [`Repair`] asks), and the receiver rebuilds it from any `originals` shards of the
//! `originals + recovery` sent, whichever they are. A unit that lost more than that is given
//! up once [`MAX_PENDING`] newer units have started.
//!
//! No checksum: QUIC authenticates every datagram (AEAD), so a shard that arrives arrived as it
//! was sent, and loss is the only damage left, which is what erasure coding repairs.
//!
//! Each datagram is a [`HEADER_LEN`]-byte header, all little-endian, then the shard:
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..4 | `frame: u32` | the sender's count of units on this connection, wrapping; an opaque id here |
//! | 4..8 | `unit_len: u32` | bytes of the unit |
//! | 8..10 | `index: u16` | `0..originals` an original shard, `originals..originals + recovery` a recovery shard |
//! | 10..12 | `originals: u16` | `ceil(unit_len / shard_len)` |
//! | 12..14 | `recovery: u16` | recovery shards sent for this unit |
//! | 14..16 | `shard_len: u16` | bytes of every shard of this unit, even (the codec works on 16-bit words) |
//!
//! Original shard `i` holds unit bytes `[i * shard_len, (i + 1) * shard_len)`, the last one
//! zero-padded to `shard_len`. Every datagram of a unit is `HEADER_LEN + shard_len` bytes.
//!
//! [`split`] is the sender's half; [`Reassembler`] the receiver's. Neither does I/O or reads a
//! clock: the transport feeds them.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};
use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};
use thiserror::Error;

/// Bytes of the header before each shard.
pub const HEADER_LEN: usize = 16;

/// Recovery shards per original shard, as a share: a unit gets `ceil(originals /
/// REPAIR_DIVISOR)` recovery shards and one more. One in ten repairs a loss rate of a few
/// percent spread across a frame; the one more lets a frame of a few shards survive two
/// losses, which at 1 % loss makes a frame of ten shards a twenty-fifth as likely to be lost as
/// with one recovery shard (2.2 in 10 000 against 5.5 in 1000), for one datagram more.
pub const REPAIR_DIVISOR: usize = 10;

/// The largest unit a viewer that declares frames in datagrams, but not large ones, takes: a
/// framewire host sends it frames over 128 KiB on a stream, and this leaves room for what
/// precedes a frame on its stream.
pub const MAX_UNIT: usize = 256 * 1024;

/// The largest unit a framewire viewer that declares `caps::LARGE_FRAME_DATAGRAMS` takes:
/// frames of up to 2 MiB, and room for what precedes a frame on its stream. At most
/// [`MAX_PENDING`] units are put together at once, so a viewer holds at most 8 of these.
pub const MAX_LARGE_UNIT: usize = 2 * 1024 * 1024 + 64 * 1024;

/// Units being put together at once. A unit still incomplete when `MAX_PENDING` newer units
/// have started arriving is abandoned: by then it is stale, and keeping it would let a peer
/// that never completes anything hold memory.
pub const MAX_PENDING: usize = 8;

/// Frame numbers remembered after their unit was put together or abandoned, so their
/// remaining shards (the recovery shards of a unit whose originals all came, most often) are
/// counted late and dropped instead of starting the unit anew.
const FINISHED_MEMORY: usize = 256;

/// The largest shard the header's `shard_len: u16` can announce that is also even.
const MAX_SHARD_LEN: usize = u16::MAX as usize & !1;

/// Whether unit number `a` comes after `b` (numbers wrap: within half the range).
fn newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Why a unit could not be split, or a datagram was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ShardError {
    #[error("empty unit: there is nothing to send")]
    Empty,
    #[error("unit of {len} bytes is larger than the {max} allowed")]
    TooLarge { len: usize, max: usize },
    #[error("datagram of {len} bytes is shorter than the {min} needed")]
    DatagramTooSmall { len: usize, min: usize },
    #[error("malformed shard: {0}")]
    Malformed(&'static str),
    /// The Reed-Solomon codec refused what the checks before it let through; not expected.
    #[error("Reed-Solomon codec: {0}")]
    Codec(String),
}

fn codec(e: reed_solomon_simd::Error) -> ShardError {
    ShardError::Codec(e.to_string())
}

/// How much repair a unit carries: the sender's choice per unit (the header counts the
/// recovery shards sent, so the receiver needs nothing more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// The path lost packets lately (and its round trip showed no queue that lasted, see
    /// [`Repair::Share`]): [`REPAIR_DIVISOR`]'s share and one more.
    Full,
    /// The path lost nothing lately (the host's `LossWatch` counts it clean: no loss among
    /// the last thousand packets nor in two seconds): one recovery shard, which makes good
    /// one loss in the unit. The share of a lossy path would be bytes for nothing there, and
    /// on a link the content nearly fills they are what tips it over: grey glxgears at 10
    /// Mbit/s (frames of about 12 original shards and 3 of recovery) took 14.7 MB over QUIC
    /// against TCP's 12.3–12.7, so its frames queued: p99 89 ms against 23, and 31 with one
    /// recovery shard
    /// (BENCHMARKS.md, "Segmentation offload, and recovery shards for the loss seen"). The
    /// first loss makes the path lossy, and the units after it carry the full share again (or
    /// [`Repair::Share`], where a queue lasted).
    One,
    /// The path lost packets lately, and its round trip showed a queue that lasted: the share
    /// of [`REPAIR_DIVISOR`] without the one more, so one recovery shard for a unit of up to
    /// ten originals. On a small frame the one more is many bytes: as many again as a frame
    /// of one original, half as many again as one of two; and where the path limits the rate
    /// those bytes queue every frame behind them: the synthetic scroll (frames of one or two
    /// originals) on a 2 Mbit/s link at 20 ms, with 0 or 1 % loss, went over QUIC with a p99 of
    /// 75–92 ms and about 1.85 MB a cell, against TCP's 0.85 MB; with this share, 14.8–19.9 ms
    /// and 1.53 MB (BENCHMARKS.md, "A link slower than the scroll: recovery shards within the
    /// path's room").
    Share,
}

/// How many recovery shards a unit of `originals` original shards gets.
pub fn recovery_for(originals: usize, repair: Repair) -> usize {
    match repair {
        Repair::Full => originals.div_ceil(REPAIR_DIVISOR) + 1,
        Repair::Share => originals.div_ceil(REPAIR_DIVISOR),
        Repair::One => 1,
    }
}

/// The shard length that spreads `len` bytes evenly over the fewest shards of at most `room`
/// bytes (`room` even, at least 2): at most `room`, even, and `ceil(len / shard_len)` is that
/// fewest count. `len` at least 1.
fn even_share(len: usize, room: usize) -> usize {
    let fewest = len.div_ceil(room);
    // len / fewest <= room, so its ceiling, and that rounded up to even, are too (room is even).
    len.div_ceil(fewest).next_multiple_of(2)
}

/// The most original shards a unit can have: the header counts them in a `u16`, and the codec
/// takes a count only while, with its recovery count, `min(pow2(originals), pow2(recovery)) +
/// max(originals, recovery) <= 65536` (pow2: the next power of two). With [`REPAIR_DIVISOR`]
/// at 10 that is 57344.
fn max_originals() -> usize {
    // Both terms of the codec's rule grow with `originals`, so the supported counts are one
    // range from 1: find its end.
    let (mut lo, mut hi) = (1usize, u16::MAX as usize);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ReedSolomonEncoder::supports(mid, recovery_for(mid, Repair::Full)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Splits `unit` (frame number `frame`) into datagrams of at most `max_datagram` bytes each
/// (header included), originals then `repair`'s recovery shards, appended to `out`. Returns
/// how many of them are recovery shards.
///
/// The unit takes as few shards as fit `max_datagram - HEADER_LEN` (and the header's `u16`),
/// and `shard_len` spreads it evenly over them: the unit's length divided by that count,
/// rounded up to even. Only the last shard is padded, by less than two bytes a shard, so a
/// frame a little over one datagram is two half datagrams, not two whole ones. With every
/// shard as large as a datagram allows, the last one was padded by half a datagram on
/// average, and each recovery shard, as long as the others, was a whole datagram: a
/// 2,900-byte unit with 1,184 bytes of room went as three shards and one recovery shard of
/// 1,184 bytes (4,736), and goes as four of 968 (3,872).
///
/// Errors, with `out` left as it was: an empty unit; `max_datagram` below `HEADER_LEN + 2`; a
/// unit needing more shards than the header or the codec can count at this datagram size.
pub fn split(
    frame: u32,
    unit: &[u8],
    max_datagram: usize,
    repair: Repair,
    out: &mut Vec<Bytes>,
) -> Result<usize, ShardError> {
    if unit.is_empty() {
        return Err(ShardError::Empty);
    }
    if max_datagram < HEADER_LEN + 2 {
        return Err(ShardError::DatagramTooSmall {
            len: max_datagram,
            min: HEADER_LEN + 2,
        });
    }
    let room = (max_datagram - HEADER_LEN).min(MAX_SHARD_LEN) & !1;
    let shard_len = even_share(unit.len(), room);
    let originals = unit.len().div_ceil(shard_len);
    let recovery = recovery_for(originals, repair);
    // Checked with the full share whatever `repair` is, so a unit splits or not alike on a
    // clean path and a lossy one (the codec takes fewer recovery shards wherever it takes more).
    let fits = u32::try_from(unit.len()).is_ok()
        && originals <= u16::MAX as usize
        && ReedSolomonEncoder::supports(originals, recovery_for(originals, Repair::Full));
    if !fits {
        return Err(ShardError::TooLarge {
            len: unit.len(),
            max: (max_originals() * room).min(u32::MAX as usize),
        });
    }
    // All of these fit their fields: checked just above (and shard_len <= MAX_SHARD_LEN).
    let mut header = Header {
        frame,
        unit_len: unit.len() as u32,
        index: 0,
        originals: originals as u16,
        recovery: recovery as u16,
        shard_len: shard_len as u16,
    };

    let start = out.len();
    for (i, chunk) in unit.chunks(shard_len).enumerate() {
        header.index = i as u16;
        let mut d = BytesMut::with_capacity(HEADER_LEN + shard_len);
        header.write(&mut d);
        d.put_slice(chunk);
        d.resize(HEADER_LEN + shard_len, 0);
        out.push(d.freeze());
    }
    // The original datagrams already hold the padded shards: encode from them, no copy.
    let encoded = ReedSolomonEncoder::new(originals, recovery, shard_len).and_then(|mut enc| {
        for d in &out[start..] {
            enc.add_original_shard(&d[HEADER_LEN..])?;
        }
        let result = enc.encode()?;
        Ok(result
            .recovery_iter()
            .enumerate()
            .map(|(j, shard)| {
                header.index = (originals + j) as u16;
                let mut d = BytesMut::with_capacity(HEADER_LEN + shard_len);
                header.write(&mut d);
                d.put_slice(shard);
                d.freeze()
            })
            .collect::<Vec<_>>())
    });
    match encoded {
        Ok(recovery_datagrams) => {
            out.extend(recovery_datagrams);
            Ok(recovery)
        }
        Err(e) => {
            out.truncate(start);
            Err(codec(e))
        }
    }
}

/// One datagram's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    frame: u32,
    unit_len: u32,
    index: u16,
    originals: u16,
    recovery: u16,
    shard_len: u16,
}

/// What every shard of one unit must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    unit_len: u32,
    originals: u16,
    recovery: u16,
    shard_len: u16,
}

impl Header {
    fn write(&self, out: &mut BytesMut) {
        out.put_u32_le(self.frame);
        out.put_u32_le(self.unit_len);
        out.put_u16_le(self.index);
        out.put_u16_le(self.originals);
        out.put_u16_le(self.recovery);
        out.put_u16_le(self.shard_len);
    }

    fn read(d: &[u8; HEADER_LEN]) -> Header {
        let u32_at = |i: usize| u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
        let u16_at = |i: usize| u16::from_le_bytes([d[i], d[i + 1]]);
        Header {
            frame: u32_at(0),
            unit_len: u32_at(4),
            index: u16_at(8),
            originals: u16_at(10),
            recovery: u16_at(12),
            shard_len: u16_at(14),
        }
    }

    fn shape(&self) -> Shape {
        Shape {
            unit_len: self.unit_len,
            originals: self.originals,
            recovery: self.recovery,
            shard_len: self.shard_len,
        }
    }
}

/// What [`Reassembler`] did with the datagrams it was given, for telemetry.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ShardCounters {
    /// Datagrams that passed the checks, whatever became of them: used, duplicate or late.
    pub datagrams: u64,
    /// Units put back together.
    pub units: u64,
    /// Of those, units that needed recovery shards: an original was missing when the unit
    /// became complete (lost, or not yet arrived when enough recovery shards had).
    pub recovered: u64,
    /// Units dropped incomplete: [`MAX_PENDING`] newer ones had started (or, not expected,
    /// the codec refused to decode it; `push` then returns the error).
    pub abandoned: u64,
    /// Units of which no datagram came: a newer number arrived, and in [`MAX_PENDING`] more
    /// units none of theirs (a sender numbers units one by one); one that comes later still
    /// is taken as it comes. A jump over more numbers than twice [`MAX_PENDING`] counts as
    /// twice [`MAX_PENDING`].
    pub vanished: u64,
    /// Shards of a unit already put together or abandoned. Without loss these are the
    /// recovery shards that arrive after their unit's originals: expected, not a fault.
    pub late: u64,
    /// Datagrams refused.
    pub malformed: u64,
}

/// A unit being put together.
struct Pending {
    frame: u32,
    shape: Shape,
    /// The reassembler's count of units started when this one started: its age.
    started: u64,
    /// Shards by index, kept as they arrived; originals then recovery.
    slots: Vec<Option<Box<[u8]>>>,
    originals_held: usize,
    recovery_held: usize,
}

impl Pending {
    fn complete(&self) -> bool {
        // Whole either way: every original, or as many shards as originals for the decoder.
        self.originals_held + self.recovery_held >= self.shape.originals as usize
    }

    /// The unit, and whether recovery shards were needed for it.
    fn assemble(self) -> Result<(Vec<u8>, bool), ShardError> {
        let originals = self.shape.originals as usize;
        let recovery = self.shape.recovery as usize;
        let shard_len = self.shape.shard_len as usize;
        let unit_len = self.shape.unit_len as usize;
        let mut unit = Vec::with_capacity(unit_len);
        let mut take = |shard: &[u8]| {
            let n = shard.len().min(unit_len - unit.len());
            unit.extend_from_slice(&shard[..n]);
        };
        if self.originals_held == originals {
            for shard in self.slots[..originals].iter().flatten() {
                take(shard);
            }
            return Ok((unit, false));
        }
        let mut decoder = ReedSolomonDecoder::new(originals, recovery, shard_len).map_err(codec)?;
        for (i, slot) in self.slots.iter().enumerate() {
            if let Some(shard) = slot {
                if i < originals {
                    decoder.add_original_shard(i, shard).map_err(codec)?;
                } else {
                    decoder
                        .add_recovery_shard(i - originals, shard)
                        .map_err(codec)?;
                }
            }
        }
        let restored = decoder.decode().map_err(codec)?;
        for (i, slot) in self.slots[..originals].iter().enumerate() {
            match slot {
                Some(shard) => take(shard),
                None => take(restored.restored_original(i).ok_or_else(|| {
                    ShardError::Codec(format!("original shard {i} not restored"))
                })?),
            }
        }
        Ok((unit, true))
    }
}

/// The receiver's half: takes datagrams in any order, with any lost, duplicated or late, and
/// gives back each unit once, as soon as enough of its shards have arrived.
pub struct Reassembler {
    max_unit: usize,
    /// Oldest first: units start in this order, so age is position.
    pending: VecDeque<Pending>,
    /// Frame numbers put together or abandoned, the last [`FINISHED_MEMORY`] of them.
    finished: VecDeque<u32>,
    started: u64,
    /// The age (`started`) and number of the unit put together last.
    last_whole: Option<(u64, u32)>,
    /// The newest unit number started.
    highest: Option<u32>,
    /// Numbers passed over (no datagram of theirs came before a newer number's), with the
    /// count of units started when that was seen; forgotten (counted `vanished`) after
    /// [`MAX_PENDING`] more, or when one of theirs comes after all.
    skipped: VecDeque<(u32, u64)>,
    counters: ShardCounters,
}

impl Reassembler {
    /// Units up to `max_unit` bytes are accepted; a header announcing more is refused before
    /// anything is allocated for it.
    pub fn new(max_unit: usize) -> Self {
        Reassembler {
            max_unit,
            pending: VecDeque::with_capacity(MAX_PENDING),
            finished: VecDeque::with_capacity(FINISHED_MEMORY),
            started: 0,
            last_whole: None,
            highest: None,
            skipped: VecDeque::with_capacity(MAX_PENDING),
            counters: ShardCounters::default(),
        }
    }

    /// Takes one datagram; returns a unit when this datagram completes it (exactly once per
    /// unit).
    ///
    /// A malformed datagram returns `Err` and is counted; the reassembler stays usable and the
    /// unit it claimed to belong to is untouched. A duplicate of a shard already held is
    /// ignored: `Ok(None)`, counted in `datagrams` only. A shard of a unit already put together
    /// or abandoned is `Ok(None)` and counted `late`.
    ///
    /// Memory: a new unit costs a slot of 16 bytes per shard it announces (at most 65536: 1 MiB,
    /// even for a unit of which one datagram came), plus each shard as it arrives (together at
    /// most about twice `max_unit`). Putting it together costs the unit, and the decoder's work
    /// space only once as many shards as originals are held. With [`MAX_PENDING`] units at
    /// once, that bounds what a peer can make this hold.
    pub fn push(&mut self, datagram: &[u8]) -> Result<Option<Vec<u8>>, ShardError> {
        let (header, at) = match self.check(datagram) {
            Ok(checked) => checked,
            Err(e) => {
                self.counters.malformed += 1;
                return Err(e);
            }
        };
        self.counters.datagrams += 1;
        let shard = &datagram[HEADER_LEN..];
        let at = match at {
            Some(at) => at,
            None if self.finished.contains(&header.frame) => {
                self.counters.late += 1;
                return Ok(None);
            }
            None => self.start(header),
        };

        let p = &mut self.pending[at];
        let index = header.index as usize;
        if p.slots[index].is_some() {
            return Ok(None);
        }
        p.slots[index] = Some(shard.into());
        if index < p.shape.originals as usize {
            p.originals_held += 1;
        } else {
            p.recovery_held += 1;
        }
        if !p.complete() {
            return Ok(None);
        }

        let Some(p) = self.pending.remove(at) else {
            return Ok(None);
        };
        self.last_whole = Some((p.started, p.frame));
        self.finish(p.frame);
        match p.assemble() {
            Ok((unit, recovered)) => {
                self.counters.units += 1;
                self.counters.recovered += u64::from(recovered);
                Ok(Some(unit))
            }
            Err(e) => {
                self.counters.abandoned += 1;
                Err(e)
            }
        }
    }

    /// Whether a unit before the one put together last is missing: one numbered and started
    /// before it and still incomplete, or a number before its own of which no datagram came. A
    /// sender numbers units one by one and sends a unit's shards together, before the next
    /// unit's (but for the recovery shards of a one-datagram unit, 2 and 4 ms behind it, or
    /// 2 ms where it has one),
    /// so that unit has most likely lost more shards than its recovery shards make good, or
    /// all of them. A viewer takes it that a frame naming a base it does not hold names that
    /// lost one, and says so at once instead of waiting for the base
    /// (`ViewerSession::handle_unit_after_loss`).
    pub fn older_incomplete(&self) -> bool {
        let Some((age, frame)) = self.last_whole else {
            return false;
        };
        self.pending
            .iter()
            .any(|p| p.started < age && newer(frame, p.frame))
            || self.skipped.iter().any(|&(f, _)| newer(frame, f))
    }

    /// What was done with the datagrams so far.
    pub fn counters(&self) -> ShardCounters {
        self.counters
    }

    /// The header, if the datagram is well formed and agrees with its unit's first shard, and
    /// where that unit is among the pending ones.
    fn check(&self, datagram: &[u8]) -> Result<(Header, Option<usize>), ShardError> {
        let Some(fixed) = datagram.first_chunk::<HEADER_LEN>() else {
            return Err(ShardError::DatagramTooSmall {
                len: datagram.len(),
                min: HEADER_LEN,
            });
        };
        let h = Header::read(fixed);
        let shard_len = h.shard_len as usize;
        let unit_len = h.unit_len as usize;
        let originals = h.originals as usize;
        let recovery = h.recovery as usize;
        if shard_len == 0 || !shard_len.is_multiple_of(2) {
            return Err(ShardError::Malformed("shard length is zero or odd"));
        }
        if datagram.len() != HEADER_LEN + shard_len {
            return Err(ShardError::Malformed(
                "datagram length is not header + shard",
            ));
        }
        if unit_len == 0 {
            return Err(ShardError::Malformed("empty unit"));
        }
        if unit_len > self.max_unit {
            return Err(ShardError::TooLarge {
                len: unit_len,
                max: self.max_unit,
            });
        }
        if originals != unit_len.div_ceil(shard_len) {
            return Err(ShardError::Malformed(
                "original count does not match unit and shard length",
            ));
        }
        // Any recovery count the codec takes, up to one per original and one more: the
        // sender's policy may change without the receiver's.
        if recovery == 0
            || recovery > originals + 1
            || !ReedSolomonDecoder::supports(originals, recovery)
        {
            return Err(ShardError::Malformed("recovery count out of range"));
        }
        if h.index as usize >= originals + recovery {
            return Err(ShardError::Malformed(
                "shard index beyond the unit's shards",
            ));
        }
        let at = self.pending.iter().position(|p| p.frame == h.frame);
        if let Some(at) = at {
            if self.pending[at].shape != h.shape() {
                return Err(ShardError::Malformed(
                    "header disagrees with the unit's first shard",
                ));
            }
        }
        Ok((h, at))
    }

    /// Starts a unit for `header`, abandoning those it makes too old; returns its position.
    fn start(&mut self, header: Header) -> usize {
        let now = self.started;
        self.started += 1;
        self.note_number(header.frame, now);
        while let Some(oldest) = self.pending.front() {
            if oldest.started + MAX_PENDING as u64 > now {
                break;
            }
            let frame = oldest.frame;
            self.pending.pop_front();
            self.counters.abandoned += 1;
            self.finish(frame);
        }
        let shards = header.originals as usize + header.recovery as usize;
        self.pending.push_back(Pending {
            frame: header.frame,
            shape: header.shape(),
            started: now,
            slots: vec![None; shards],
            originals_held: 0,
            recovery_held: 0,
        });
        self.pending.len() - 1
    }

    /// Keeps track of the numbers passed over as unit `frame` starts, `now` units in.
    fn note_number(&mut self, frame: u32, now: u64) {
        while let Some(&(_, seen)) = self.skipped.front() {
            if seen + MAX_PENDING as u64 > now {
                break;
            }
            self.skipped.pop_front();
            self.counters.vanished += 1;
        }
        match self.highest {
            Some(h) if newer(frame, h) => {
                // Only the last MAX_PENDING numbers passed over are kept: older ones would be
                // forgotten before the next unit anyway.
                let gap = frame.wrapping_sub(h) - 1;
                let kept = gap.min(MAX_PENDING as u32);
                // A jump of millions is a peer's fault, not that many frames lost: counted
                // as at most MAX_PENDING more.
                self.counters.vanished += u64::from((gap - kept).min(MAX_PENDING as u32));
                for k in gap - kept..gap {
                    if self.skipped.len() == MAX_PENDING {
                        self.skipped.pop_front();
                        self.counters.vanished += 1;
                    }
                    self.skipped.push_back((h.wrapping_add(1 + k), now));
                }
                self.highest = Some(frame);
            }
            Some(_) => self.skipped.retain(|&(f, _)| f != frame),
            None => self.highest = Some(frame),
        }
    }

    fn finish(&mut self, frame: u32) {
        if self.finished.len() == FINISHED_MEMORY {
            self.finished.pop_front();
        }
        self.finished.push_back(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A cheap pseudo-random stream (xorshift64): proptest's byte vectors are too slow for
    /// units of hundreds of kilobytes.
    struct XorShift(u64);

    impl XorShift {
        fn new(seed: u64) -> Self {
            XorShift(seed | 1)
        }

        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn shuffle<T>(&mut self, v: &mut [T]) {
            for i in (1..v.len()).rev() {
                v.swap(i, self.below(i + 1));
            }
        }
    }

    fn make_unit(seed: u64, len: usize) -> Vec<u8> {
        let mut rng = XorShift::new(seed);
        let mut unit = Vec::with_capacity(len + 8);
        while unit.len() < len {
            unit.extend_from_slice(&rng.next().to_le_bytes());
        }
        unit.truncate(len);
        unit
    }

    fn header_of(d: &[u8]) -> Header {
        Header::read(d.first_chunk().unwrap())
    }

    fn datagram(h: Header, payload: &[u8]) -> Vec<u8> {
        let mut d = BytesMut::new();
        h.write(&mut d);
        d.put_slice(payload);
        d.to_vec()
    }

    fn split_vec(frame: u32, unit: &[u8], max_datagram: usize) -> Vec<Bytes> {
        let mut out = Vec::new();
        split(frame, unit, max_datagram, Repair::Full, &mut out).unwrap();
        out
    }

    /// Pushes every datagram; returns the units that came back.
    fn push_all<'a>(
        r: &mut Reassembler,
        datagrams: impl IntoIterator<Item = &'a Bytes>,
    ) -> Vec<Vec<u8>> {
        datagrams
            .into_iter()
            .filter_map(|d| r.push(d).unwrap())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn unit_comes_back_once_through_shuffling_and_recoverable_loss(
            seed in any::<u64>(),
            len in 1usize..=300_000,
            max_datagram in 64usize..=1500,
            order_seed in any::<u64>(),
            loss_seed in any::<u64>(),
            loss_pick in any::<usize>(),
            full in any::<bool>(),
        ) {
            let unit = make_unit(seed, len);
            let repair = if full { Repair::Full } else { Repair::One };
            let mut sent = Vec::new();
            split(42, &unit, max_datagram, repair, &mut sent).unwrap();
            let h = header_of(&sent[0]);
            let originals = h.originals as usize;
            let recovery = h.recovery as usize;
            prop_assert_eq!(sent.len(), originals + recovery);
            prop_assert_eq!(recovery, recovery_for(originals, repair));

            // Lose as many as can be repaired a quarter of the time, fewer otherwise.
            let lose = if loss_pick % 4 == 0 { recovery } else { loss_pick % (recovery + 1) };
            let mut indices: Vec<usize> = (0..sent.len()).collect();
            XorShift::new(loss_seed).shuffle(&mut indices);
            let lost = &indices[..lose];
            let mut order: Vec<usize> = indices[lose..].to_vec();
            XorShift::new(order_seed).shuffle(&mut order);

            let mut r = Reassembler::new(300_000);
            let mut back = Vec::new();
            for &i in &order {
                if let Some(u) = r.push(&sent[i]).unwrap() {
                    back.push(u);
                }
            }
            prop_assert_eq!(back.len(), 1);
            prop_assert!(back[0] == unit, "unit differs");

            // The unit is complete at the `originals`-th shard that arrives; it needed
            // recovery iff those were not all originals. Losing an original forces that.
            let needed = order[..originals].iter().any(|&i| i >= originals);
            let lost_original = lost.iter().any(|&i| i < originals);
            let c = r.counters();
            prop_assert_eq!(c.units, 1);
            prop_assert_eq!(c.recovered, u64::from(needed));
            if lost_original {
                prop_assert_eq!(c.recovered, 1);
            }
            prop_assert_eq!(c.datagrams, order.len() as u64);
            prop_assert_eq!(c.late, (order.len() - originals) as u64);
            prop_assert_eq!(c.malformed, 0);
            prop_assert_eq!(c.abandoned, 0);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(
            datagrams in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 1..40),
        ) {
            let mut r = Reassembler::new(1 << 20);
            for d in &datagrams {
                let _ = r.push(d);
            }
            let c = r.counters();
            prop_assert_eq!(c.datagrams + c.malformed, datagrams.len() as u64);
        }

        /// Headers near valid ones, so the checks pass often enough to reach assembly and the
        /// decoder with shards that do not belong together.
        #[test]
        fn plausible_headers_never_panic(seed in any::<u64>(), count in 1usize..300) {
            let mut rng = XorShift::new(seed);
            let mut r = Reassembler::new(64);
            for _ in 0..count {
                let shard_len = 2 * (1 + rng.below(4)) as u16 - u16::from(rng.below(20) == 0);
                let most = if rng.below(20) == 0 { 100 } else { 40 };
                let unit_len = 1 + rng.below(most) as u32;
                let mut originals = (unit_len as usize).div_ceil(shard_len.max(1) as usize) as u16;
                if rng.below(10) == 0 {
                    originals = rng.below(30) as u16;
                }
                let recovery = rng.below(originals as usize + 2) as u16;
                let index = rng.below(originals as usize + recovery as usize + 1) as u16;
                let h = Header { frame: rng.below(3) as u32, unit_len, index, originals, recovery, shard_len };
                let mut payload_len = shard_len as usize;
                if rng.below(20) == 0 {
                    payload_len = rng.below(20);
                }
                let payload: Vec<u8> = (0..payload_len).map(|_| rng.next() as u8).collect();
                if let Ok(Some(u)) = r.push(&datagram(h, &payload)) {
                    prop_assert_eq!(u.len(), unit_len as usize);
                }
            }
            let c = r.counters();
            prop_assert_eq!(c.datagrams + c.malformed, count as u64);
            prop_assert!(r.pending.len() <= MAX_PENDING);
        }
    }

    #[test]
    fn oversized_unit_is_refused_before_anything_is_allocated() {
        let mut r = Reassembler::new(1000);
        let h = Header {
            frame: 1,
            unit_len: u32::MAX,
            index: 0,
            originals: u16::MAX,
            recovery: 1,
            shard_len: 2,
        };
        assert_eq!(
            r.push(&datagram(h, &[0, 0])),
            Err(ShardError::TooLarge {
                len: u32::MAX as usize,
                max: 1000
            })
        );
        assert!(r.pending.is_empty());
        assert_eq!(r.counters().malformed, 1);
        assert_eq!(r.counters().datagrams, 0);
    }

    #[test]
    fn each_bad_header_field_is_refused() {
        let unit = make_unit(3, 5000);
        let sent = split_vec(9, &unit, 1200);
        let good = header_of(&sent[0]);
        let payload = &sent[0][HEADER_LEN..];
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("short", sent[0][..HEADER_LEN - 1].to_vec()),
            (
                "odd shard",
                datagram(
                    Header {
                        shard_len: good.shard_len - 1,
                        ..good
                    },
                    &payload[..good.shard_len as usize - 1],
                ),
            ),
            (
                "zero shard",
                datagram(
                    Header {
                        shard_len: 0,
                        ..good
                    },
                    &[],
                ),
            ),
            ("length", datagram(good, &payload[..100])),
            (
                "empty unit",
                datagram(
                    Header {
                        unit_len: 0,
                        ..good
                    },
                    payload,
                ),
            ),
            (
                "originals",
                datagram(
                    Header {
                        originals: 4,
                        ..good
                    },
                    payload,
                ),
            ),
            (
                "no recovery",
                datagram(
                    Header {
                        recovery: 0,
                        ..good
                    },
                    payload,
                ),
            ),
            (
                "recovery > originals + 1",
                datagram(
                    Header {
                        recovery: good.originals + 2,
                        ..good
                    },
                    payload,
                ),
            ),
            (
                "index",
                datagram(
                    Header {
                        index: good.originals + good.recovery,
                        ..good
                    },
                    payload,
                ),
            ),
        ];
        let mut r = Reassembler::new(1 << 20);
        for (i, (what, d)) in cases.iter().enumerate() {
            assert!(r.push(d).is_err(), "{what} was accepted");
            assert_eq!(r.counters().malformed, i as u64 + 1);
        }
        assert!(r.pending.is_empty());
        // Still usable, and as many recovery shards as originals are taken.
        assert_eq!(push_all(&mut r, &sent), vec![unit]);
        let d = datagram(
            Header {
                frame: 10,
                recovery: 5,
                ..good
            },
            payload,
        );
        assert_eq!(r.push(&d), Ok(None));
    }

    #[test]
    fn header_disagreeing_with_the_first_shard_is_refused() {
        let a = make_unit(1, 5000);
        let b = make_unit(2, 6000);
        let sent_a = split_vec(7, &a, 1200);
        let sent_b = split_vec(7, &b, 1200);
        let mut r = Reassembler::new(1 << 20);
        assert_eq!(r.push(&sent_a[0]), Ok(None));
        assert!(matches!(r.push(&sent_b[1]), Err(ShardError::Malformed(_))));
        let mut smaller_shards = Vec::new();
        split(7, &a, 600, Repair::Full, &mut smaller_shards).unwrap();
        assert!(r.push(&smaller_shards[1]).is_err());
        assert_eq!(r.counters().malformed, 2);
        assert_eq!(push_all(&mut r, &sent_a[1..]), vec![a]);
    }

    #[test]
    fn too_many_losses_leave_no_unit_and_it_is_abandoned_after_newer_ones() {
        let unit = make_unit(5, 10_000);
        let sent = split_vec(0, &unit, 1200);
        let originals = header_of(&sent[0]).originals as usize;
        assert_eq!((originals, sent.len()), (9, 11));
        let mut r = Reassembler::new(1 << 20);
        // Original 0 and both recovery shards lost: one more than can be repaired.
        assert!(push_all(&mut r, &sent[1..originals]).is_empty());
        assert_eq!(r.counters().units, 0);
        assert!(!r.older_incomplete(), "nothing whole yet to be older than");

        for frame in 1..=MAX_PENDING as u32 {
            let newer = make_unit(u64::from(frame), 3000);
            assert_eq!(
                push_all(&mut r, &split_vec(frame, &newer, 1200)),
                vec![newer]
            );
            let expect = u64::from(frame == MAX_PENDING as u32);
            assert_eq!(r.counters().abandoned, expect, "after {frame} newer units");
            // Until it is abandoned, the unit that lost too much is older than each newer one
            // put together.
            assert_eq!(
                r.older_incomplete(),
                expect == 0,
                "after {frame} newer units"
            );
        }
        // What still comes for it is late, and does not start it again.
        assert_eq!(r.push(&sent[0]), Ok(None));
        assert_eq!(r.push(&sent[originals]), Ok(None));
        assert!(r.pending.iter().all(|p| p.frame != 0));
        let c = r.counters();
        assert_eq!(c.late, 2 + 2 * MAX_PENDING as u64); // plus each newer unit's recovery shards
        assert_eq!(c.units, MAX_PENDING as u64);
    }

    /// A unit that only started before the last one put together, and is still coming (its
    /// shards overtaken), counts as incomplete too; one that started after does not.
    #[test]
    fn only_units_older_than_the_last_whole_one_count_as_incomplete() {
        let mut r = Reassembler::new(1 << 20);
        let (a, b, c) = (make_unit(1, 5000), make_unit(2, 5000), make_unit(3, 5000));
        let (sa, sb, sc) = (
            split_vec(1, &a, 1200),
            split_vec(2, &b, 1200),
            split_vec(3, &c, 1200),
        );
        assert_eq!(r.push(&sa[0]), Ok(None));
        assert_eq!(push_all(&mut r, &sb), vec![b]);
        assert!(r.older_incomplete());
        assert_eq!(push_all(&mut r, &sa[1..]), vec![a]);
        assert!(!r.older_incomplete());
        assert_eq!(r.push(&sc[0]), Ok(None));
        assert!(
            !r.older_incomplete(),
            "a newer unit still coming is not a loss"
        );
    }

    /// A number passed over, none of whose datagrams came, is a missing unit older than the
    /// next one put together, until one of its datagrams comes after all, or MAX_PENDING more
    /// units have started (then it is counted as vanished).
    #[test]
    fn a_unit_none_of_whose_datagrams_came_is_missing() {
        let mut r = Reassembler::new(1 << 20);
        let units: Vec<Vec<u8>> = (0..4).map(|i| make_unit(i, 3000)).collect();
        let sent: Vec<Vec<Bytes>> = (0..4)
            .map(|i| split_vec(i as u32, &units[i], 1200))
            .collect();
        assert_eq!(push_all(&mut r, &sent[0]), vec![units[0].clone()]);
        assert_eq!(push_all(&mut r, &sent[2]), vec![units[2].clone()]);
        assert!(r.older_incomplete(), "unit 1 never came");
        assert_eq!(push_all(&mut r, &sent[1]), vec![units[1].clone()]);
        assert!(!r.older_incomplete(), "it came late");
        assert_eq!(push_all(&mut r, &sent[3]), vec![units[3].clone()]);
        assert!(!r.older_incomplete());
        for frame in 5..5 + MAX_PENDING as u32 {
            let u = make_unit(u64::from(frame), 3000);
            assert_eq!(push_all(&mut r, &split_vec(frame, &u, 1200)), vec![u]);
            assert!(r.older_incomplete(), "unit 4 never came (at {frame})");
        }
        assert_eq!(r.counters().vanished, 0);
        let u = make_unit(99, 3000);
        let n = 5 + MAX_PENDING as u32;
        assert_eq!(push_all(&mut r, &split_vec(n, &u, 1200)), vec![u]);
        assert!(!r.older_incomplete(), "forgotten after MAX_PENDING units");
        assert_eq!(r.counters().vanished, 1);
        // A jump far ahead: only the last MAX_PENDING numbers are kept, and the count is bounded.
        let mut r = Reassembler::new(1 << 20);
        for frame in [0, 1_000_000] {
            let u = make_unit(u64::from(frame), 3000);
            assert_eq!(push_all(&mut r, &split_vec(frame, &u, 1200)), vec![u]);
        }
        assert_eq!(r.skipped.len(), MAX_PENDING);
        assert_eq!(r.counters().vanished, MAX_PENDING as u64);
        assert!(r.older_incomplete());
        // Numbers wrap.
        let mut r = Reassembler::new(1 << 20);
        for frame in [u32::MAX - 1, 1] {
            let u = make_unit(u64::from(frame), 3000);
            assert_eq!(push_all(&mut r, &split_vec(frame, &u, 1200)), vec![u]);
        }
        assert!(r.older_incomplete(), "u32::MAX and 0 never came");
        assert_eq!(r.skipped.len(), 2);
    }

    #[test]
    fn pending_units_are_bounded() {
        let mut r = Reassembler::new(1 << 20);
        for frame in 0..3 * MAX_PENDING as u32 {
            let sent = split_vec(frame, &make_unit(u64::from(frame), 5000), 1200);
            assert_eq!(r.push(&sent[0]), Ok(None));
            assert!(r.pending.len() <= MAX_PENDING);
        }
        assert_eq!(r.counters().abandoned, 2 * MAX_PENDING as u64);
    }

    #[test]
    fn duplicates_and_late_shards_give_no_second_unit() {
        let unit = make_unit(8, 20_000);
        let sent = split_vec(3, &unit, 1400);
        let h = header_of(&sent[0]);
        let (originals, recovery) = (h.originals as u64, h.recovery as u64);
        let mut r = Reassembler::new(1 << 20);
        assert_eq!(r.push(&sent[0]), Ok(None));
        assert_eq!(r.push(&sent[0]), Ok(None));
        assert_eq!(push_all(&mut r, &sent), vec![unit]);
        assert!(push_all(&mut r, &sent).is_empty());
        let c = r.counters();
        assert_eq!(c.units, 1);
        assert_eq!(c.recovered, 0);
        // Shard 0 a third time while pending is a duplicate; then the recovery shards of the
        // first full pass and all of the second are late.
        assert_eq!(c.late, recovery + originals + recovery);
        assert_eq!(c.datagrams, 2 + 2 * (originals + recovery));
        assert_eq!(c.malformed, 0);
    }

    #[test]
    fn split_lays_out_the_unit_as_documented() {
        let unit = make_unit(4, 3001);
        let sent = split_vec(0xdead_beef, &unit, 1000);
        // 984 bytes of room a shard: four shards at the least, and 3001 over four is 750.25,
        // so 752 each (even), the last padded by 7.
        let shard_len = 752;
        let originals = 4;
        assert_eq!(sent.len(), originals + 2);
        for (i, d) in sent.iter().enumerate() {
            assert_eq!(d.len(), HEADER_LEN + shard_len);
            let h = header_of(d);
            assert_eq!(
                h,
                Header {
                    frame: 0xdead_beef,
                    unit_len: 3001,
                    index: i as u16,
                    originals: originals as u16,
                    recovery: 2,
                    shard_len: shard_len as u16,
                }
            );
            if i < originals {
                let from = i * shard_len;
                let to = (from + shard_len).min(unit.len());
                assert_eq!(&d[HEADER_LEN..HEADER_LEN + to - from], &unit[from..to]);
                assert!(d[HEADER_LEN + to - from..].iter().all(|&b| b == 0));
            }
        }
        // It says how many of them are recovery shards.
        let mut out = Vec::new();
        assert_eq!(
            split(1, &make_unit(5, 30_000), 1000, Repair::Full, &mut out),
            Ok(5)
        );
        assert_eq!(out.len(), 31 + 5);
        // Where the path lost nothing lately, one.
        out.clear();
        assert_eq!(
            split(1, &make_unit(5, 30_000), 1000, Repair::One, &mut out),
            Ok(1)
        );
        assert_eq!(out.len(), 31 + 1);
        assert_eq!(header_of(&out[31]).recovery, 1);
        // Where it lost packets but queues, the share without the one more.
        out.clear();
        assert_eq!(
            split(1, &make_unit(5, 30_000), 1000, Repair::Share, &mut out),
            Ok(4)
        );
        assert_eq!(out.len(), 31 + 4);
        // On a small frame that is one recovery shard, where the full share is two.
        for (repair, recovery) in [(Repair::Full, 2), (Repair::Share, 1), (Repair::One, 1)] {
            out.clear();
            assert_eq!(
                split(1, &make_unit(6, 1_900), 1200, repair, &mut out),
                Ok(recovery),
                "{repair:?}"
            );
            assert_eq!(out.len(), 2 + recovery, "{repair:?}");
        }
        // A unit smaller than a shard is not padded to one; odd lengths round up to even.
        let small = split_vec(1, b"hello", 1500);
        assert_eq!(small.len(), 3);
        assert!(small.iter().all(|d| d.len() == HEADER_LEN + 6));
        // An odd room rounds down to even: 985 bytes of room are 984, so 1970 bytes take three
        // shards of 658 (two of 985, rounded up to even, would make datagrams of 1002).
        let odd = split_vec(1, &make_unit(6, 1970), 1001);
        assert_eq!(header_of(&odd[0]).originals, 3);
        assert_eq!(header_of(&odd[0]).shard_len, 658);
        assert!(odd.iter().all(|d| d.len() <= 1001));
        // A unit a byte over one shard's room is two half shards, not two whole ones.
        let over = split_vec(1, &make_unit(7, 985), 1000);
        assert_eq!(header_of(&over[0]).originals, 2);
        assert!(over.iter().all(|d| d.len() == HEADER_LEN + 494));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever the unit's length and the datagram size: no datagram is over the size, the
        /// unit takes the fewest shards that fit it, and the padding is under two bytes a
        /// shard.
        #[test]
        fn shards_are_as_few_as_fit_and_padded_by_under_two_bytes_each(
            len in 1usize..200_000,
            max in (HEADER_LEN + 2)..9000usize,
        ) {
            let unit = make_unit(len as u64, len);
            let mut out = Vec::new();
            prop_assume!(split(3, &unit, max, Repair::One, &mut out).is_ok());
            let h = header_of(&out[0]);
            let room = (max - HEADER_LEN) & !1;
            let originals = h.originals as usize;
            // Fewest: one shard fewer, each as large as the room allows, would not hold it.
            prop_assert!((originals - 1) * room < len && len <= originals * room);
            prop_assert!(h.shard_len.is_multiple_of(2) && h.shard_len as usize <= room);
            prop_assert!(out.iter().all(|d| d.len() <= max));
            let padding = originals * h.shard_len as usize - len;
            prop_assert!(padding < 2 * originals, "{} bytes of padding in {} shards", padding, originals);
        }
    }

    /// The recovery count is each unit's own (its header's): units with the full share, the
    /// share without the one more, and one come back through the same reassembler, each rebuilt from what its own
    /// recovery shards make good, and no further.
    #[test]
    fn units_with_either_share_of_recovery_come_back_through_one_reassembler() {
        let mut r = Reassembler::new(300_000);
        // 20,000 bytes with 1,184 of room: 17 originals of 1,178, 3, 2 or 1 recovery shards.
        let repairs = [
            (Repair::Full, 3),
            (Repair::One, 1),
            (Repair::Share, 2),
            (Repair::Full, 3),
        ];
        for (i, (repair, recovery)) in repairs.into_iter().enumerate() {
            let unit = make_unit(11 + 2 * i as u64, 20_000);
            let mut sent = Vec::new();
            assert_eq!(
                split(i as u32, &unit, 1200, repair, &mut sent),
                Ok(recovery)
            );
            // The first original is lost; a recovery shard makes it good.
            assert_eq!(
                push_all(&mut r, sent.iter().skip(1)),
                vec![unit],
                "{repair:?}"
            );
        }
        // Each was rebuilt once; what came after it was late.
        assert_eq!(r.counters().recovered, 4);
        assert_eq!(r.counters().late, 2 + 1 + 2);
        // One recovery shard does not make good two losses.
        let unit = make_unit(21, 20_000);
        let mut sent = Vec::new();
        split(4, &unit, 1200, Repair::One, &mut sent).unwrap();
        assert!(push_all(&mut r, sent.iter().skip(2)).is_empty());
    }

    #[test]
    fn split_refuses_what_it_cannot_send() {
        let mut out = vec![Bytes::from_static(b"kept")];
        assert_eq!(
            split(0, &[], 1500, Repair::Full, &mut out),
            Err(ShardError::Empty)
        );
        assert_eq!(
            split(0, &[1, 2, 3], HEADER_LEN + 1, Repair::Full, &mut out),
            Err(ShardError::DatagramTooSmall {
                len: HEADER_LEN + 1,
                min: HEADER_LEN + 2
            })
        );
        assert_eq!(out.len(), 1);
        assert!(split(0, &[1, 2, 3], HEADER_LEN + 2, Repair::One, &mut out).is_ok());
    }

    #[test]
    fn codec_limits_bound_the_unit() {
        // The codec's rule at 1 recovery shard per 10 originals and one more, worked by hand:
        // 57344 originals take 5736 recovery shards, and 8192 + 57344 = 65536 just fits.
        assert_eq!(max_originals(), 57344);
        assert!(ReedSolomonEncoder::supports(
            57344,
            recovery_for(57344, Repair::Full)
        ));
        assert!(!ReedSolomonEncoder::supports(
            57345,
            recovery_for(57345, Repair::Full)
        ));

        let max = 57344 * 2;
        let mut out = Vec::new();
        assert_eq!(
            split(0, &vec![7; max + 1], HEADER_LEN + 2, Repair::One, &mut out),
            Err(ShardError::TooLarge { len: max + 1, max })
        );
        assert!(out.is_empty());
        let unit = make_unit(6, max);
        split(0, &unit, HEADER_LEN + 3, Repair::Full, &mut out).unwrap();
        assert_eq!(out.len(), 57344 + 5736);
        // Lose the first 5736 originals, as many as there are recovery shards.
        let mut r = Reassembler::new(max);
        assert_eq!(push_all(&mut r, &out[5736..]), vec![unit]);
        assert_eq!(r.counters().recovered, 1);
    }
}
