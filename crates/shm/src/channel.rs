//! Senders, receivers and the ring protocol between them (see the crate docs and
//! [`crate::layout`]).
//!
//! Invariants the code relies on:
//! - A receiver's *floor* is `min(cursor, holding)`: it may still read any record at or after
//!   it. A sender overwrites ring units, or reuses a pool block, only below every receiver's
//!   floor.
//! - A record becomes visible when its stamp is stored (`p + 1`), after everything else in it.
//! - A sender announces `reserving` before it moves the head, and clears it after the stamp:
//!   a reservation whose owner died can be found and turned into a tombstone.
//! - Sleepers increment a waiters word before their last check; wakers check it after their
//!   store. Both are sequentially consistent, so either the sleeper sees the store or the waker
//!   sees the sleeper (no lost wake-ups), and with nobody asleep no syscall is made.

use std::cell::Cell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::ShmError;
use crate::futex;
use crate::layout::*;
use crate::liveness;
use crate::segment::{alive_at, claim_entry, topic_hash, Segment, Spec};
use crate::{Policy, Shape};

/// How a segment is made when it does not exist yet.
#[derive(Debug, Clone)]
pub struct Options {
    pub shape: Shape,
    pub policy: Policy,
    /// Ring size in bytes (inline messages); rounded up to 64-byte units.
    pub ring_bytes: usize,
    pub max_receivers: u32,
    /// Ignored for a route (it has one).
    pub max_senders: u32,
    /// Pool blocks for messages too large to go inline.
    pub pool_blocks: u32,
    /// The largest message (the pool block size).
    pub max_message: usize,
    /// What the segment carries; a process opening it with another topic is refused.
    pub topic: String,
}

impl Options {
    /// One sender, N receivers. Defaults: 1 MiB ring, 256 receivers, 4 blocks of 8 MiB
    /// (memory is only used as it is touched), blocking policy.
    pub fn route() -> Options {
        Options {
            shape: Shape::Route,
            policy: Policy::Block,
            ring_bytes: 1 << 20,
            max_receivers: 256,
            max_senders: 1,
            pool_blocks: 4,
            max_message: 8 << 20,
            topic: String::new(),
        }
    }

    /// N senders, N receivers; defaults as for [`Options::route`], with 64 senders.
    pub fn channel() -> Options {
        Options {
            shape: Shape::Channel,
            max_senders: 64,
            ..Options::route()
        }
    }

    pub fn policy(mut self, p: Policy) -> Self {
        self.policy = p;
        self
    }
    pub fn topic(mut self, t: impl Into<String>) -> Self {
        self.topic = t.into();
        self
    }
    pub fn ring_bytes(mut self, n: usize) -> Self {
        self.ring_bytes = n;
        self
    }
    pub fn max_receivers(mut self, n: u32) -> Self {
        self.max_receivers = n;
        self
    }
    pub fn max_senders(mut self, n: u32) -> Self {
        self.max_senders = n;
        self
    }
    pub fn pool(mut self, blocks: u32, max_message: usize) -> Self {
        self.pool_blocks = blocks;
        self.max_message = max_message;
        self
    }

    fn spec(&self) -> Spec {
        let max_senders = match self.shape {
            Shape::Route => 1,
            Shape::Channel => self.max_senders,
        };
        Spec {
            shape: self.shape,
            policy: self.policy,
            sizes: Sizes {
                ring_units: self.ring_bytes.div_ceil(UNIT) as u64,
                max_receivers: self.max_receivers,
                max_senders,
                max_members: self
                    .max_receivers
                    .saturating_add(max_senders)
                    .saturating_add(16),
                pool_blocks: self.pool_blocks,
                pool_block_bytes: self.max_message.div_ceil(4096) as u64 * 4096,
            },
            topic: topic_hash(&self.topic),
        }
    }
}

/// A handle on an open segment; makes senders and receivers. The segment's file is removed
/// when the last handle of the last live process is dropped.
#[derive(Clone)]
pub struct Channel {
    seg: Arc<Segment>,
}

/// Segment-wide figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Ring units reserved so far.
    pub head: u64,
    pub receivers: u32,
    pub senders: u32,
    pub reaped_receivers: u64,
    pub reaped_senders: u64,
    /// Records a dead sender left half-written, turned into tombstones.
    pub repaired_records: u64,
}

impl Channel {
    /// Opens `name`, creating it as `opts` says if needed (see [`crate::segment`] for stale and
    /// incompatible segments).
    pub fn open(name: &str, opts: &Options) -> Result<Channel, ShmError> {
        let spec = opts.spec();
        if opts.ring_bytes < 64 * UNIT {
            return Err(ShmError::Incompatible {
                name: name.into(),
                why: format!("ring of {} bytes; at least {}", opts.ring_bytes, 64 * UNIT),
                pid: None,
            });
        }
        let seg = Segment::open(name, Some(&spec), spec.topic)?;
        Ok(Channel { seg: Arc::new(seg) })
    }

    /// Attaches to an existing segment `name` carrying `topic`, whatever its sizes.
    pub fn attach(name: &str, topic: &str) -> Result<Channel, ShmError> {
        let seg = Segment::open(name, None, topic_hash(topic))?;
        Ok(Channel { seg: Arc::new(seg) })
    }

    pub fn shape(&self) -> Shape {
        self.seg.shape
    }
    pub fn policy(&self) -> Policy {
        self.seg.policy
    }
    pub fn name(&self) -> &str {
        &self.seg.name
    }
    /// The segment's file.
    pub fn path(&self) -> &std::path::Path {
        self.seg.path()
    }
    /// The largest message this segment carries.
    pub fn max_message(&self) -> usize {
        self.seg.layout.max_message()
    }
    /// The largest message stored inline in the ring.
    pub fn inline_max(&self) -> usize {
        self.seg.layout.inline_max()
    }

    pub fn sender(&self) -> Result<Sender, ShmError> {
        Sender::new(self.seg.clone())
    }

    pub fn receiver(&self) -> Result<Receiver, ShmError> {
        Receiver::new(self.seg.clone())
    }

    pub fn stats(&self) -> Stats {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let count = |base: usize, n: u32| {
            (0..n)
                .filter(|&i| m.u32_at(base + i as usize * ENTRY + E_STATE).load(SeqCst) == ACTIVE)
                .count() as u32
        };
        Stats {
            head: m.u64_at(H_HEAD).load(SeqCst),
            receivers: count(l.receivers, l.sizes.max_receivers),
            senders: count(l.senders, l.sizes.max_senders),
            reaped_receivers: m.u64_at(H_REAPED_RECEIVERS).load(SeqCst),
            reaped_senders: m.u64_at(H_REAPED_SENDERS).load(SeqCst),
            repaired_records: m.u64_at(H_REPAIRED_RECORDS).load(SeqCst),
        }
    }

    /// Removes the segment file `name` now, whoever uses it (their mappings stay valid).
    pub fn remove(name: &str) -> Result<(), ShmError> {
        let path = crate::segment::path_for(name)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(ShmError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }
}

#[derive(Clone, Copy)]
enum Wait {
    No,
    Until(Instant),
    Forever,
}

impl Wait {
    fn from_timeout(t: Option<Duration>) -> Wait {
        match t {
            None => Wait::Forever,
            Some(d) if d.is_zero() => Wait::No,
            Some(d) => Wait::Until(Instant::now() + d),
        }
    }
    fn expired(self) -> bool {
        match self {
            Wait::No => true,
            Wait::Until(d) => Instant::now() >= d,
            Wait::Forever => false,
        }
    }
    /// How long one sleep may last: until the deadline, and never more than `cap`, so the
    /// sleeper looks for dead peers now and then.
    fn slice(self, cap: Duration) -> Duration {
        match self {
            Wait::Until(d) => d.saturating_duration_since(Instant::now()).min(cap),
            _ => cap,
        }
    }
}

/// How long a sleeper sleeps at most before it checks whether the peer it waits for died.
const LIVENESS_SLICE: Duration = Duration::from_millis(20);

/// Wakes the sleepers on `word` if any said they might sleep. The flag is cleared by the
/// waker, so a burst of messages to sleeping receivers costs one wake, not one per message.
fn wake(seg: &Segment, flag: usize, word: usize) {
    let m = &seg.map;
    let f = m.u32_at(flag);
    if f.load(SeqCst) != 0 && f.swap(0, SeqCst) != 0 {
        m.u32_at(word).fetch_add(1, SeqCst);
        futex::wake_all(m.u32_at(word));
    }
}

/// Sleeps on `word` unless `ready()` turns true after raising the sleeping flag. Either the
/// waker sees the flag, or this check sees what the waker published.
fn sleep_on(seg: &Segment, flag: usize, word: usize, t: Duration, ready: impl Fn() -> bool) {
    let m = &seg.map;
    m.u32_at(flag).store(1, SeqCst);
    let seen = m.u32_at(word).load(SeqCst);
    if !ready() {
        futex::wait(m.u32_at(word), seen, Some(t));
    }
}

/// Units of the committed record at `rec`, and whether it carries a message.
fn record_units(seg: &Segment, rec: usize) -> Option<(u64, bool)> {
    let m = &seg.map;
    let len = m.u32_at(rec + 8).load(SeqCst);
    match m.u32_at(rec + 12).load(SeqCst) {
        K_PAD | K_TOMBSTONE if len > 0 => Some((len as u64, false)),
        K_INLINE => Some((units_for(len as usize), true)),
        K_POOL => Some((units_for(8), true)),
        _ => None,
    }
}

/// Reclaims the places of receivers whose process died; returns how many.
fn reap_dead_receivers(seg: &Segment) -> u32 {
    let (m, l) = (&seg.map, &seg.layout);
    let hw = m
        .u32_at(H_RECEIVERS_HW)
        .load(SeqCst)
        .min(l.sizes.max_receivers);
    let mut n = 0;
    for i in 0..hw {
        let off = l.receiver(i);
        let st = m.u32_at(off + E_STATE);
        if st.load(SeqCst) == ACTIVE
            && !alive_at(m, off)
            && st.compare_exchange(ACTIVE, REAPING, SeqCst, SeqCst).is_ok()
        {
            release_receiver(seg, off);
            m.u64_at(H_REAPED_RECEIVERS).fetch_add(1, SeqCst);
            n += 1;
        }
    }
    if n > 0 {
        wake(seg, H_SPACE_SLEEPING, H_SPACE_FUTEX);
    }
    n
}

fn release_receiver(seg: &Segment, off: usize) {
    let m = &seg.map;
    m.u64_at(off + R_CURSOR).store(NONE, SeqCst);
    m.u64_at(off + R_HOLDING).store(NONE, SeqCst);
    m.u32_at(off + E_STATE).store(FREE, SeqCst);
}

/// Turns reservations left by dead senders into tombstones and frees their places; returns
/// how many senders were reaped.
fn repair_dead_senders(seg: &Segment) -> u32 {
    let (m, l) = (&seg.map, &seg.layout);
    let hw = m.u32_at(H_SENDERS_HW).load(SeqCst).min(l.sizes.max_senders);
    let mut n = 0;
    for i in 0..hw {
        let off = l.sender(i);
        let st = m.u32_at(off + E_STATE);
        let cur = st.load(SeqCst);
        if (cur != ACTIVE && cur != CLAIMED) || alive_at(m, off) {
            continue;
        }
        if st.compare_exchange(cur, REAPING, SeqCst, SeqCst).is_err() {
            continue;
        }
        let start = m.u64_at(off + S_RESERVING).load(SeqCst);
        let units = m.u64_at(off + S_RESERVING_UNITS).load(SeqCst);
        if start != NONE {
            let head = m.u64_at(H_HEAD).load(SeqCst);
            let end = (start + units).min(head);
            let mut p = start;
            while p < end {
                let rec = l.record(p);
                if m.u64_at(rec).load(SeqCst) == p + 1 {
                    match record_units(seg, rec) {
                        Some((u, _)) => p += u,
                        None => break,
                    }
                    continue;
                }
                if live_sender_covers(seg, p, i) {
                    break; // not the dead sender's: someone live is writing it
                }
                m.u32_at(rec + 8).store((end - p) as u32, SeqCst);
                m.u32_at(rec + 12).store(K_TOMBSTONE, SeqCst);
                clear_stamp(seg, end);
                m.u64_at(rec).store(p + 1, SeqCst);
                m.u64_at(H_REPAIRED_RECORDS).fetch_add(1, SeqCst);
                break;
            }
        }
        m.u64_at(off + S_RESERVING).store(NONE, SeqCst);
        st.store(FREE, SeqCst);
        m.u64_at(H_REAPED_SENDERS).fetch_add(1, SeqCst);
        n += 1;
    }
    if n > 0 {
        wake(seg, H_DATA_SLEEPING, H_DATA_FUTEX);
    }
    n
}

fn live_sender_covers(seg: &Segment, p: u64, except: u32) -> bool {
    let (m, l) = (&seg.map, &seg.layout);
    let hw = m.u32_at(H_SENDERS_HW).load(SeqCst).min(l.sizes.max_senders);
    (0..hw).filter(|&i| i != except).any(|i| {
        let off = l.sender(i);
        let start = m.u64_at(off + S_RESERVING).load(SeqCst);
        let units = m.u64_at(off + S_RESERVING_UNITS).load(SeqCst);
        start != NONE && (start..start + units).contains(&p) && alive_at(m, off)
    })
}

/// Clears the stamp word at record position `pos` before the record in front of it is
/// published (unless `pos`'s own record is already there): the unit holds bytes of an older
/// lap, which a reader arriving at `pos` must not take for a committed record.
fn clear_stamp(seg: &Segment, pos: u64) {
    let w = seg.map.u64_at(seg.layout.record(pos));
    if seg.shape == Shape::Route {
        // The only sender writes that unit next itself: no race to guard against. (Ordered
        // before the commit that follows by that store's release.)
        w.store(0, Relaxed);
        return;
    }
    loop {
        let old = w.load(SeqCst);
        if old == pos + 1 || old == 0 || w.compare_exchange(old, 0, SeqCst, SeqCst).is_ok() {
            return;
        }
    }
}

fn bump_hw(seg: &Segment, word: usize, i: u32) {
    seg.map.u32_at(word).fetch_max(i + 1, SeqCst);
}

/// Sends into a segment. One per thread; make several for several threads.
pub struct Sender {
    seg: Arc<Segment>,
    off: usize,
    /// The lowest receiver floor seen last time; recomputed only when the ring looks full.
    cached_floor: Cell<u64>,
    last_reap: Cell<Instant>,
}

impl Sender {
    fn new(seg: Arc<Segment>) -> Result<Sender, ShmError> {
        let (m, l) = (&seg.map, &seg.layout);
        let me = liveness::me();
        let i = match claim_entry(m, l.senders, l.sizes.max_senders, me, false) {
            Some(i) => i,
            None => {
                repair_dead_senders(&seg);
                match claim_entry(m, l.senders, l.sizes.max_senders, me, false) {
                    Some(i) => i,
                    None if seg.shape == Shape::Route => {
                        let pid = m.u32_at(l.sender(0) + E_PID).load(SeqCst);
                        return Err(ShmError::RouteHasSender(pid));
                    }
                    None => return Err(ShmError::NoSenderPlace(l.sizes.max_senders)),
                }
            }
        };
        let off = l.sender(i);
        m.u64_at(off + S_RESERVING).store(NONE, SeqCst);
        m.u64_at(off + S_SENT).store(0, SeqCst);
        bump_hw(&seg, H_SENDERS_HW, i);
        m.u32_at(off + E_STATE).store(ACTIVE, SeqCst);
        Ok(Sender {
            seg,
            off,
            cached_floor: Cell::new(0),
            last_reap: Cell::new(Instant::now()),
        })
    }

    /// Messages sent by this sender.
    pub fn sent(&self) -> u64 {
        self.seg.map.u64_at(self.off + S_SENT).load(Relaxed)
    }

    /// Sends `msg` without waiting: [`ShmError::Full`] if there is no room now.
    pub fn try_send(&mut self, msg: &[u8]) -> Result<(), ShmError> {
        self.send_with(msg.len(), Some(Duration::ZERO), |b| b.copy_from_slice(msg))
    }

    /// Sends `msg`, waiting for room as long as the policy says.
    pub fn send(&mut self, msg: &[u8]) -> Result<(), ShmError> {
        self.send_with(msg.len(), None, |b| b.copy_from_slice(msg))
    }

    /// Sends `msg`, waiting for room at most `timeout`.
    pub fn send_timeout(&mut self, msg: &[u8], timeout: Duration) -> Result<(), ShmError> {
        self.send_with(msg.len(), Some(timeout), |b| b.copy_from_slice(msg))
    }

    /// Sends a message of `len` bytes that `fill` writes in place (no copy through a buffer of
    /// the caller's). `timeout`: `None` waits as long as needed, zero does not wait.
    pub fn send_with(
        &mut self,
        len: usize,
        timeout: Option<Duration>,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), ShmError> {
        let wait = Wait::from_timeout(timeout);
        let l = self.seg.layout;
        if len > l.max_message() || len > u32::MAX as usize {
            return Err(ShmError::TooLarge {
                len,
                max: l.max_message(),
            });
        }
        let mut fill = Some(fill);
        let block = if len > l.inline_max() {
            let b = self.alloc_block(wait)?;
            // SAFETY: block `b` is ours (state WRITING) until we publish it.
            let dst = unsafe { self.seg.map.bytes_mut(l.block_data(b), len) };
            (fill.take().expect("fill once"))(dst);
            Some(b)
        } else {
            None
        };
        let units = units_for(if block.is_some() { 8 } else { len });
        let (pos, pad) = match self.reserve(units, wait) {
            Ok(r) => r,
            Err(e) => {
                if let Some(b) = block {
                    self.seg
                        .map
                        .u32_at(l.block(b) + E_STATE)
                        .store(FREE, SeqCst);
                }
                return Err(e);
            }
        };
        let m = &self.seg.map;
        if pad > 0 {
            let rec = l.record(pos);
            m.u32_at(rec + 8).store(pad as u32, Relaxed);
            m.u32_at(rec + 12).store(K_PAD, Relaxed);
            clear_stamp(&self.seg, pos + pad);
            m.u64_at(rec).store(pos + 1, SeqCst);
        }
        let p = pos + pad;
        let rec = l.record(p);
        m.u32_at(rec + 8).store(len as u32, Relaxed);
        match block {
            None => {
                m.u32_at(rec + 12).store(K_INLINE, Relaxed);
                // SAFETY: units [p, p + units) are reserved by us and below no receiver's
                // floor (checked in `reserve`), so nobody reads them until the stamp.
                let dst = unsafe { m.bytes_mut(rec + RECORD_HEADER, len) };
                (fill.take().expect("fill once"))(dst);
            }
            Some(b) => {
                m.u32_at(rec + 12).store(K_POOL, Relaxed);
                m.u32_at(rec + RECORD_HEADER).store(b, Relaxed);
                let boff = l.block(b);
                m.u64_at(boff + B_POSITION).store(p, SeqCst);
                m.u64_at(boff + B_LEN).store(len as u64, SeqCst);
                m.u32_at(boff + E_STATE).store(B_PUBLISHED, SeqCst);
            }
        }
        // The unit after this record is where readers look next. It holds bytes of an older lap
        // (possibly the middle of an old message); clear its stamp word before we publish, so
        // no reader can mistake old bytes for a committed record. `reserve` kept that old
        // position below every floor, and a stamp already there is the next record's own.
        clear_stamp(&self.seg, p + units);
        m.u64_at(rec).store(p + 1, SeqCst);
        m.u64_at(self.off + S_RESERVING).store(NONE, Release);
        let sent = m.u64_at(self.off + S_SENT);
        sent.store(sent.load(Relaxed) + 1, Relaxed); // only this sender writes it
        wake(&self.seg, H_DATA_SLEEPING, H_DATA_FUTEX);
        Ok(())
    }

    /// The lowest floor of all receivers (or the head when there are none).
    fn floor(&self) -> u64 {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let head = m.u64_at(H_HEAD).load(SeqCst);
        let hw = m
            .u32_at(H_RECEIVERS_HW)
            .load(SeqCst)
            .min(l.sizes.max_receivers);
        let mut min = head;
        for i in 0..hw {
            let off = l.receiver(i);
            let st = m.u32_at(off + E_STATE).load(SeqCst);
            if st == ACTIVE || st == CLAIMED || st == REAPING {
                min = min
                    .min(m.u64_at(off + R_CURSOR).load(SeqCst))
                    .min(m.u64_at(off + R_HOLDING).load(SeqCst));
            }
        }
        min
    }

    /// Reserves `units` (plus padding to the ring's end if they would not fit before it);
    /// returns the position and the padding.
    fn reserve(&self, units: u64, wait: Wait) -> Result<(u64, u64), ShmError> {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let ring = l.sizes.ring_units;
        loop {
            let h = m.u64_at(H_HEAD).load(SeqCst);
            let off = h % ring;
            let pad = if off + units > ring { ring - off } else { 0 };
            let end = h + pad + units;
            // One unit more than the record stays free: the unit after it (see `send_with`).
            if end >= self.cached_floor.get() + ring {
                self.cached_floor.set(self.floor());
                if end >= self.cached_floor.get() + ring {
                    let target = end + 1 - ring;
                    let resume = (target + ring / 4).min(h);
                    self.make_room(target, resume, wait, |s| end >= s.floor() + ring)?;
                    continue;
                }
            }
            // Announced before the head moves (the head's release publishes them).
            m.u64_at(self.off + S_RESERVING_UNITS)
                .store(pad + units, Relaxed);
            m.u64_at(self.off + S_RESERVING).store(h, Relaxed);
            if self.seg.shape == Shape::Route {
                // One sender: nobody else moves the head.
                m.u64_at(H_HEAD).store(end, SeqCst);
                return Ok((h, pad));
            }
            if m.u64_at(H_HEAD)
                .compare_exchange(h, end, SeqCst, SeqCst)
                .is_ok()
            {
                return Ok((h, pad));
            }
        }
    }

    /// Applies the policy when the ring or the pool is full: every receiver's floor must reach
    /// `target`. Returns when it is worth trying again.
    /// `resume`: the floor to sleep for (at or above `target`), so that a sender of a full
    /// ring sleeps until a good part of it is free rather than waking for every message.
    fn make_room(
        &self,
        target: u64,
        resume: u64,
        wait: Wait,
        still_full: impl Fn(&Sender) -> bool,
    ) -> Result<(), ShmError> {
        match self.seg.policy {
            Policy::Fail => return Err(ShmError::Full),
            Policy::DropOldest => {
                self.drop_oldest(target);
                if !still_full(self) {
                    return Ok(());
                }
                // Left: a receiver holding a message it is reading, or a record still being
                // written. Both clear soon, or their process is dead.
            }
            Policy::Block => {}
        }
        if wait.expired() {
            return Err(match wait {
                Wait::No => ShmError::Full,
                _ => ShmError::Timeout,
            });
        }
        if self.last_reap.get().elapsed() >= LIVENESS_SLICE {
            self.last_reap.set(Instant::now());
            reap_dead_receivers(&self.seg);
            repair_dead_senders(&self.seg);
        }
        self.seg
            .map
            .u64_at(H_SPACE_TARGET)
            .store(resume.max(target), SeqCst);
        sleep_on(
            &self.seg,
            H_SPACE_SLEEPING,
            H_SPACE_FUTEX,
            wait.slice(LIVENESS_SLICE),
            || !still_full(self),
        );
        Ok(())
    }

    /// Moves every receiver whose cursor is below `target` forward over whole committed
    /// records, counting the messages it misses.
    fn drop_oldest(&self, target: u64) {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let hw = m
            .u32_at(H_RECEIVERS_HW)
            .load(SeqCst)
            .min(l.sizes.max_receivers);
        for i in 0..hw {
            let off = l.receiver(i);
            if m.u32_at(off + E_STATE).load(SeqCst) != ACTIVE {
                continue;
            }
            loop {
                let c = m.u64_at(off + R_CURSOR).load(SeqCst);
                if c == NONE || c >= target {
                    break;
                }
                let (mut p, mut skipped) = (c, 0u64);
                while p < target && m.u64_at(l.record(p)).load(SeqCst) == p + 1 {
                    match record_units(&self.seg, l.record(p)) {
                        Some((u, msg)) => {
                            p += u;
                            skipped += msg as u64;
                        }
                        None => break,
                    }
                }
                if p == c {
                    break;
                }
                if m.u64_at(off + R_CURSOR)
                    .compare_exchange(c, p, SeqCst, SeqCst)
                    .is_ok()
                {
                    // A receiver reading record `c` right now gets it: not missed.
                    let held = m.u64_at(off + R_HOLDING).load(SeqCst) == c;
                    let missed = skipped.saturating_sub(held as u64);
                    m.u64_at(off + R_MISSED).fetch_add(missed, SeqCst);
                    break;
                }
            }
        }
    }

    /// Claims a pool block for a large message.
    fn alloc_block(&self, wait: Wait) -> Result<u32, ShmError> {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let me = liveness::me();
        loop {
            let floor = self.floor();
            let mut oldest = NONE;
            for b in 0..l.sizes.pool_blocks {
                let off = l.block(b);
                let st = m.u32_at(off + E_STATE).load(SeqCst);
                let pos = m.u64_at(off + B_POSITION).load(SeqCst);
                let free = match st {
                    FREE => true,
                    B_PUBLISHED => pos < floor,
                    B_WRITING => !alive_at(m, off),
                    _ => false,
                };
                if st == B_PUBLISHED {
                    oldest = oldest.min(pos);
                }
                if free
                    && m.u32_at(off + E_STATE)
                        .compare_exchange(st, B_WRITING, SeqCst, SeqCst)
                        .is_ok()
                {
                    m.u32_at(off + E_PID).store(me.pid, SeqCst);
                    m.u64_at(off + E_START).store(me.start, SeqCst);
                    return Ok(b);
                }
            }
            let target = if oldest == NONE { floor } else { oldest + 1 };
            self.make_room(target, target, wait, |s| s.no_free_block())?;
        }
    }

    fn no_free_block(&self) -> bool {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let floor = self.floor();
        (0..l.sizes.pool_blocks).all(|b| {
            let off = l.block(b);
            match m.u32_at(off + E_STATE).load(SeqCst) {
                FREE => false,
                B_PUBLISHED => m.u64_at(off + B_POSITION).load(SeqCst) >= floor,
                _ => true,
            }
        })
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let m = &self.seg.map;
        m.u64_at(self.off + S_RESERVING).store(NONE, SeqCst);
        m.u32_at(self.off + E_STATE).store(FREE, SeqCst);
    }
}

/// A record found by a receiver, not yet released.
#[derive(Clone, Copy)]
struct Found {
    pos: u64,
    next: u64,
    off: usize,
    len: usize,
}

/// Receives every message sent after it was made, in order.
pub struct Receiver {
    seg: Arc<Segment>,
    off: usize,
    spin: u32,
    resyncs: u64,
    /// Senders may move this receiver's cursor (drop-oldest): reads announce `holding` and
    /// releases compare-and-swap. Otherwise only this receiver moves its cursor, and the
    /// cursor alone is its floor.
    moved_by_senders: bool,
}

impl Receiver {
    fn new(seg: Arc<Segment>) -> Result<Receiver, ShmError> {
        let (m, l) = (&seg.map, &seg.layout);
        let me = liveness::me();
        let i = claim_entry(m, l.receivers, l.sizes.max_receivers, me, true)
            .ok_or(ShmError::NoReceiverPlace(l.sizes.max_receivers))?;
        let off = l.receiver(i);
        m.u64_at(off + R_HOLDING).store(NONE, SeqCst);
        m.u64_at(off + R_MISSED).store(0, SeqCst);
        m.u64_at(off + R_RECEIVED).store(0, SeqCst);
        bump_hw(&seg, H_RECEIVERS_HW, i);
        m.u64_at(off + R_CURSOR)
            .store(m.u64_at(H_HEAD).load(SeqCst), SeqCst);
        m.u32_at(off + E_STATE).store(ACTIVE, SeqCst);
        // Made free by a dead process's place? Whoever waited on it can go on.
        wake(&seg, H_SPACE_SLEEPING, H_SPACE_FUTEX);
        let moved_by_senders = seg.policy == Policy::DropOldest;
        Ok(Receiver {
            seg,
            off,
            spin: 2000,
            resyncs: 0,
            moved_by_senders,
        })
    }

    /// Spin iterations before sleeping (default 2000, a few µs); 0 sleeps at once.
    pub fn set_spin(&mut self, n: u32) {
        self.spin = n;
    }

    /// Messages this receiver missed because it was behind (drop-oldest policy).
    pub fn missed(&self) -> u64 {
        self.seg.map.u64_at(self.off + R_MISSED).load(SeqCst)
    }

    /// Messages received.
    pub fn received(&self) -> u64 {
        self.seg.map.u64_at(self.off + R_RECEIVED).load(Relaxed)
    }

    /// Times this receiver found itself overtaken without being moved (it restarts at the
    /// newest message; can only happen while it was joining).
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }

    /// The next message, if one is there.
    pub fn try_recv(&mut self) -> Result<Option<Msg<'_>>, ShmError> {
        Ok(self.poll()?.map(|f| Msg { rx: self, f }))
    }

    /// The next message, waiting as long as needed.
    pub fn recv(&mut self) -> Result<Msg<'_>, ShmError> {
        let f = self.wait_found(Wait::Forever)?;
        Ok(Msg { rx: self, f })
    }

    /// The next message, waiting at most `timeout` ([`ShmError::Timeout`] after).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Msg<'_>, ShmError> {
        let f = self.wait_found(Wait::from_timeout(Some(timeout)))?;
        Ok(Msg { rx: self, f })
    }

    fn corrupt(&self, why: String) -> ShmError {
        ShmError::Corrupt(self.seg.name.clone(), why)
    }

    fn poll(&mut self) -> Result<Option<Found>, ShmError> {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let (cursor, holding) = (self.off + R_CURSOR, self.off + R_HOLDING);
        loop {
            let c = m.u64_at(cursor).load(Acquire);
            if self.moved_by_senders {
                m.u64_at(holding).store(c, SeqCst);
                if m.u64_at(cursor).load(SeqCst) != c {
                    continue; // a sender moved us on just now
                }
            }
            let rec = l.record(c);
            let stamp = m.u64_at(rec).load(Acquire);
            if stamp != c + 1 {
                m.u64_at(holding).store(NONE, SeqCst);
                let h = m.u64_at(H_HEAD).load(SeqCst);
                if h > c + l.sizes.ring_units {
                    // Overtaken without being moved (only possible while joining): restart
                    // at the newest message.
                    if m.u64_at(cursor)
                        .compare_exchange(c, h, SeqCst, SeqCst)
                        .is_ok()
                    {
                        m.u64_at(self.off + R_MISSED).fetch_add(1, SeqCst);
                        self.resyncs += 1;
                    }
                    continue;
                }
                return Ok(None);
            }
            let len = m.u32_at(rec + 8).load(SeqCst) as usize;
            match m.u32_at(rec + 12).load(SeqCst) {
                K_PAD | K_TOMBSTONE if len > 0 => {
                    self.release(c, c + len as u64);
                }
                K_INLINE if len <= l.inline_max() => {
                    return Ok(Some(Found {
                        pos: c,
                        next: c + units_for(len),
                        off: rec + RECORD_HEADER,
                        len,
                    }));
                }
                K_POOL => {
                    let b = m.u32_at(rec + RECORD_HEADER).load(SeqCst);
                    if b >= l.sizes.pool_blocks || len as u64 > l.sizes.pool_block_bytes {
                        m.u64_at(holding).store(NONE, SeqCst);
                        return Err(
                            self.corrupt(format!("record {c}: pool block {b}, {len} bytes"))
                        );
                    }
                    return Ok(Some(Found {
                        pos: c,
                        next: c + units_for(8),
                        off: l.block_data(b),
                        len,
                    }));
                }
                k => {
                    m.u64_at(holding).store(NONE, SeqCst);
                    return Err(self.corrupt(format!("record {c}: kind {k}, {len} bytes")));
                }
            }
        }
    }

    fn release(&self, pos: u64, next: u64) {
        let m = &self.seg.map;
        if self.moved_by_senders {
            // Cursor first, then holding: the floor never drops below what we still read.
            let _ = m
                .u64_at(self.off + R_CURSOR)
                .compare_exchange(pos, next, SeqCst, SeqCst);
            m.u64_at(self.off + R_HOLDING).store(NONE, SeqCst);
        } else {
            // Sequentially consistent: ordered before the sleeping-sender check below.
            m.u64_at(self.off + R_CURSOR).store(next, SeqCst);
        }
        // A sender asleep on a full ring waits for the floor to pass its target; only a
        // receiver at or past it may be the one that lifts the floor there.
        if m.u32_at(H_SPACE_SLEEPING).load(SeqCst) != 0
            && m.u64_at(self.off + R_CURSOR).load(SeqCst) >= m.u64_at(H_SPACE_TARGET).load(SeqCst)
        {
            wake(&self.seg, H_SPACE_SLEEPING, H_SPACE_FUTEX);
        }
    }

    /// Whether the record at the cursor is committed (without taking it).
    fn ready(&self) -> bool {
        let (m, l) = (&self.seg.map, &self.seg.layout);
        let c = m.u64_at(self.off + R_CURSOR).load(SeqCst);
        m.u64_at(l.record(c)).load(SeqCst) == c + 1
    }

    fn wait_found(&mut self, wait: Wait) -> Result<Found, ShmError> {
        for _ in 0..self.spin {
            if let Some(f) = self.poll()? {
                return Ok(f);
            }
            std::hint::spin_loop();
        }
        let mut stuck: Option<(u64, Instant)> = None;
        loop {
            if let Some(f) = self.poll()? {
                return Ok(f);
            }
            if wait.expired() {
                return Err(ShmError::Timeout);
            }
            // Reserved but not committed for a while: its sender may have died mid-message.
            let m = &self.seg.map;
            let c = m.u64_at(self.off + R_CURSOR).load(SeqCst);
            if m.u64_at(H_HEAD).load(SeqCst) > c {
                match stuck {
                    Some((p, t)) if p == c => {
                        if t.elapsed() >= LIVENESS_SLICE {
                            repair_dead_senders(&self.seg);
                            stuck = Some((c, Instant::now()));
                        }
                    }
                    _ => stuck = Some((c, Instant::now())),
                }
            }
            let seg = self.seg.clone();
            sleep_on(
                &seg,
                H_DATA_SLEEPING,
                H_DATA_FUTEX,
                wait.slice(LIVENESS_SLICE),
                || self.ready(),
            );
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        release_receiver(&self.seg, self.off);
        wake(&self.seg, H_SPACE_SLEEPING, H_SPACE_FUTEX);
    }
}

/// A received message, read in place. Dropping it lets senders reuse its space.
pub struct Msg<'a> {
    rx: &'a Receiver,
    f: Found,
}

impl Msg<'_> {
    /// The message's position in the segment's sequence of ring units.
    pub fn position(&self) -> u64 {
        self.f.pos
    }
}

impl std::ops::Deref for Msg<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the record (or its pool block) is at or above our floor (`holding`), so no
        // sender writes it until we release it in `drop`; `poll` bounds-checked off/len.
        unsafe { self.rx.seg.map.bytes(self.f.off, self.f.len) }
    }
}

impl Drop for Msg<'_> {
    fn drop(&mut self) {
        let n = self.rx.seg.map.u64_at(self.rx.off + R_RECEIVED);
        n.store(n.load(Relaxed) + 1, Relaxed); // only this receiver writes it
        self.rx.release(self.f.pos, self.f.next);
    }
}
