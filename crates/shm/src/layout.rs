//! Where everything lives in a segment. One header page, then tables of 64-byte entries (one
//! cache line each, so no two processes write the same line by accident), then the ring, then
//! the pool of large-message blocks.
//!
//! ```text
//! 0      header (4 KB): magic, version, shape, policy, sizes, topic hash, hot words on own lines
//! 4096   receivers[max_receivers]   state, pid, start, cursor, holding, missed, received
//!        senders[max_senders]       state, pid, start, reserving, reserving_units, sent
//!        members[max_members]       state, pid, start   (every open handle)
//!        blocks[pool_blocks]        state, position, len, writer pid, writer start
//!        ring (4 KB aligned)        ring_units × 64 B: records
//!        pool (4 KB aligned)        pool_blocks × pool_block_bytes
//! ```
//!
//! A record at unit position `p` (monotonic; stored at `p % ring_units`) starts with a 16-byte
//! header: `stamp: u64` (= p + 1 once committed), `len: u32`, `kind: u32`, then the payload.

use std::sync::atomic::{AtomicU32, AtomicU64};

pub const MAGIC: [u8; 8] = *b"FWSHM\0\0\x01";
pub const VERSION: u32 = 1;
pub const UNIT: usize = 64;
pub const HEADER_BYTES: usize = 4096;
pub const ENTRY: usize = 64;
pub const RECORD_HEADER: usize = 16;
pub const NONE: u64 = u64::MAX;

// Header fields (byte offsets).
pub const H_MAGIC: usize = 0;
pub const H_VERSION: usize = 8;
pub const H_SHAPE: usize = 12;
pub const H_POLICY: usize = 16;
pub const H_MAX_RECEIVERS: usize = 20;
pub const H_MAX_SENDERS: usize = 24;
pub const H_POOL_BLOCKS: usize = 28;
pub const H_RING_UNITS: usize = 32;
pub const H_POOL_BLOCK_BYTES: usize = 40;
pub const H_TOPIC: usize = 48;
pub const H_TOTAL: usize = 56;
pub const H_MAX_MEMBERS: usize = 64;
/// 0 while being initialised, then READY.
pub const H_STATE: usize = 68;
pub const READY: u32 = 0x5EAD_0001;
// Hot words, each on its own cache line.
pub const H_HEAD: usize = 128;
pub const H_DATA_FUTEX: usize = 192;
/// 1 while a receiver may be asleep on `H_DATA_FUTEX`; the waker clears it.
pub const H_DATA_SLEEPING: usize = 196;
pub const H_SPACE_FUTEX: usize = 256;
/// 1 while a sender may be asleep on `H_SPACE_FUTEX`; the waker clears it.
pub const H_SPACE_SLEEPING: usize = 260;
/// The floor a sleeping sender waits for: receivers wake it when they pass it.
pub const H_SPACE_TARGET: usize = 264;
pub const H_RECEIVERS_HW: usize = 320;
pub const H_SENDERS_HW: usize = 324;
pub const H_REAPED_RECEIVERS: usize = 384;
pub const H_REAPED_SENDERS: usize = 392;
pub const H_REPAIRED_RECORDS: usize = 400;

// Entry fields (receivers, senders, members, blocks).
pub const E_STATE: usize = 0;
pub const E_PID: usize = 4;
pub const E_START: usize = 8;
pub const R_CURSOR: usize = 16;
pub const R_HOLDING: usize = 24;
pub const R_MISSED: usize = 32;
pub const R_RECEIVED: usize = 40;
pub const S_RESERVING: usize = 16;
pub const S_RESERVING_UNITS: usize = 24;
pub const S_SENT: usize = 32;
pub const B_POSITION: usize = 16;
pub const B_LEN: usize = 24;

// Entry states.
pub const FREE: u32 = 0;
pub const CLAIMED: u32 = 1;
pub const ACTIVE: u32 = 2;
pub const REAPING: u32 = 3;
// Pool block states.
pub const B_WRITING: u32 = 1;
pub const B_PUBLISHED: u32 = 2;

// Record kinds.
pub const K_INLINE: u32 = 1;
pub const K_POOL: u32 = 2;
/// Skips to the end of the ring; `len` is the unit count.
pub const K_PAD: u32 = 3;
/// A dead sender's reservation, filled in by whoever found it; `len` is the unit count.
pub const K_TOMBSTONE: u32 = 4;

fn align(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Sizes of a segment, as chosen by its creator and recorded in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub ring_units: u64,
    pub max_receivers: u32,
    pub max_senders: u32,
    pub max_members: u32,
    pub pool_blocks: u32,
    pub pool_block_bytes: u64,
}

/// Byte offsets of each region, derived from [`Sizes`].
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub sizes: Sizes,
    pub receivers: usize,
    pub senders: usize,
    pub members: usize,
    pub blocks: usize,
    pub ring: usize,
    pub pool: usize,
    pub total: usize,
}

impl Layout {
    pub fn new(s: Sizes) -> Layout {
        let receivers = HEADER_BYTES;
        let senders = receivers + s.max_receivers as usize * ENTRY;
        let members = senders + s.max_senders as usize * ENTRY;
        let blocks = members + s.max_members as usize * ENTRY;
        let ring = align(blocks + s.pool_blocks as usize * ENTRY, 4096);
        let pool = align(ring + s.ring_units as usize * UNIT, 4096);
        let total = pool + s.pool_blocks as usize * s.pool_block_bytes as usize;
        Layout {
            sizes: s,
            receivers,
            senders,
            members,
            blocks,
            ring,
            pool,
            total,
        }
    }

    /// The largest message stored inline in the ring; larger ones go to the pool.
    pub fn inline_max(&self) -> usize {
        let ring_bytes = self.sizes.ring_units as usize * UNIT;
        (ring_bytes / 8).min(64 * 1024) - RECORD_HEADER
    }

    pub fn max_message(&self) -> usize {
        if self.sizes.pool_blocks > 0 {
            (self.sizes.pool_block_bytes as usize).max(self.inline_max())
        } else {
            self.inline_max()
        }
    }

    pub fn receiver(&self, i: u32) -> usize {
        self.receivers + i as usize * ENTRY
    }
    pub fn sender(&self, i: u32) -> usize {
        self.senders + i as usize * ENTRY
    }
    pub fn member(&self, i: u32) -> usize {
        self.members + i as usize * ENTRY
    }
    pub fn block(&self, i: u32) -> usize {
        self.blocks + i as usize * ENTRY
    }
    /// Byte offset of the record at unit position `p`.
    pub fn record(&self, p: u64) -> usize {
        self.ring + (p % self.sizes.ring_units) as usize * UNIT
    }
    pub fn block_data(&self, i: u32) -> usize {
        self.pool + i as usize * self.sizes.pool_block_bytes as usize
    }
}

/// Units a record with `payload` bytes occupies.
pub fn units_for(payload: usize) -> u64 {
    (RECORD_HEADER + payload).div_ceil(UNIT) as u64
}

/// Typed access to the atomics and bytes of a mapping.
pub trait Words {
    fn base(&self) -> *mut u8;

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4));
        // SAFETY: offsets come from `Layout`, inside the mapping and 4-aligned (the mapping is
        // page-aligned); the mapping outlives `self`. Other processes access these words only
        // atomically.
        unsafe { &*(self.base().add(off) as *const AtomicU32) }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8));
        // SAFETY: as for `u32_at`, 8-aligned.
        unsafe { &*(self.base().add(off) as *const AtomicU64) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_do_not_overlap_and_are_aligned() {
        let l = Layout::new(Sizes {
            ring_units: 1000,
            max_receivers: 300,
            max_senders: 7,
            max_members: 20,
            pool_blocks: 3,
            pool_block_bytes: 8192,
        });
        assert!(l.receivers >= HEADER_BYTES);
        assert_eq!(l.senders, l.receivers + 300 * 64);
        assert_eq!(l.members, l.senders + 7 * 64);
        assert_eq!(l.blocks, l.members + 20 * 64);
        assert!(l.ring >= l.blocks + 3 * 64 && l.ring.is_multiple_of(4096));
        assert!(l.pool >= l.ring + 64_000 && l.pool.is_multiple_of(4096));
        assert_eq!(l.total, l.pool + 3 * 8192);
        assert_eq!(l.record(1000), l.ring);
        assert_eq!(l.record(1001), l.ring + 64);
        assert_eq!(units_for(0), 1);
        assert_eq!(units_for(48), 1);
        assert_eq!(units_for(49), 2);
    }
}
