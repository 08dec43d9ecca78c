//! Per-direction counters, updated by the relay and readable while it runs. Every packet that
//! enters a direction leaves it through exactly one named door: delivered, lost, queue full,
//! or write error — or is still queued.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of one direction's counters.
///
/// Once the link is idle (`queued == 0`):
/// `packets_in + duplicated == packets_out + lost + queue_full + write_errors`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectionCounters {
    /// Packets read from the sending side's TUN device.
    pub packets_in: u64,
    pub bytes_in: u64,
    /// Packet copies written to the receiving side's TUN device.
    pub packets_out: u64,
    pub bytes_out: u64,
    /// Packets dropped by the `loss` draw.
    pub lost: u64,
    /// Packets sent twice by the `duplicate` draw (each counts one extra copy).
    pub duplicated: u64,
    /// Packet copies dropped because the delay queue was at its bound.
    pub queue_full: u64,
    /// Packet copies the receiving TUN device refused (the kernel's reason is logged).
    pub write_errors: u64,
    /// Packet copies waiting for their delivery time now (a gauge, not a counter).
    pub queued: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub packets_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub packets_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub lost: AtomicU64,
    pub duplicated: AtomicU64,
    pub queue_full: AtomicU64,
    pub write_errors: AtomicU64,
    pub queued: AtomicU64,
}

impl Counters {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    pub fn snapshot(&self) -> DirectionCounters {
        DirectionCounters {
            packets_in: self.packets_in.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            packets_out: self.packets_out.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            lost: self.lost.load(Relaxed),
            duplicated: self.duplicated.load(Relaxed),
            queue_full: self.queue_full.load(Relaxed),
            write_errors: self.write_errors.load(Relaxed),
            queued: self.queued.load(Relaxed),
        }
    }
}
