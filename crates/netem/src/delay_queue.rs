//! The packets of one direction waiting for their delivery time: a priority queue by due time,
//! bounded in packets and in bytes. A packet that would exceed either bound is refused, and
//! the caller counts it (`queue_full`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// At most this many packets wait in one direction...
pub const MAX_PACKETS: usize = 10_000;
/// ...and at most this many bytes (a second of 100 Mbit/s, far beyond any test's need).
pub const MAX_BYTES: usize = 16 << 20;

#[derive(Debug)]
struct Entry {
    due: Instant,
    /// Arrival order, so packets due at the same instant leave in the order they came.
    seq: u64,
    data: Vec<u8>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// The packet did not fit (and was dropped).
#[derive(Debug, PartialEq, Eq)]
pub struct Full;

#[derive(Debug)]
pub struct DelayQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    bytes: usize,
    next_seq: u64,
    max_packets: usize,
    max_bytes: usize,
}

impl Default for DelayQueue {
    fn default() -> DelayQueue {
        DelayQueue::with_bounds(MAX_PACKETS, MAX_BYTES)
    }
}

impl DelayQueue {
    pub fn with_bounds(max_packets: usize, max_bytes: usize) -> DelayQueue {
        DelayQueue {
            heap: BinaryHeap::new(),
            bytes: 0,
            next_seq: 0,
            max_packets,
            max_bytes,
        }
    }

    pub fn push(&mut self, due: Instant, data: Vec<u8>) -> Result<(), Full> {
        if self.heap.len() >= self.max_packets || self.bytes + data.len() > self.max_bytes {
            return Err(Full);
        }
        self.bytes += data.len();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { due, seq, data }));
        Ok(())
    }

    /// The earliest due time, if anything waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.due)
    }

    /// The earliest packet, if it is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_due()? > now {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.bytes -= e.data.len();
        Some(e.data)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn leaves_in_due_order_then_arrival_order() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut q = DelayQueue::default();
        q.push(t + ms(30), vec![3]).unwrap();
        q.push(t + ms(10), vec![1]).unwrap();
        q.push(t + ms(20), vec![2]).unwrap();
        q.push(t + ms(20), vec![22]).unwrap();
        assert_eq!(q.pop_due(t), None);
        assert_eq!(q.next_due(), Some(t + ms(10)));
        let out: Vec<_> = std::iter::from_fn(|| q.pop_due(t + ms(25))).collect();
        assert_eq!(out, vec![vec![1], vec![2], vec![22]]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_due(t + ms(30)), Some(vec![3]));
        assert_eq!(q.next_due(), None);
    }

    #[test]
    fn refuses_beyond_either_bound() {
        let t = Instant::now();
        let mut q = DelayQueue::with_bounds(2, 10);
        q.push(t, vec![0; 4]).unwrap();
        assert_eq!(q.push(t, vec![0; 7]), Err(Full));
        q.push(t, vec![0; 6]).unwrap();
        assert!(q.push(t, vec![]).is_err());
        q.pop_due(t).unwrap();
        q.push(t, vec![0; 4]).unwrap();
        assert_eq!(q.len(), 2);
    }
}
